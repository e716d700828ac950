//! Resumable uploads (the IETF draft, current rules and interop 5/6) on every backend: a file
//! sent in pieces is stored once, byte for byte, and charged once; a request cut short keeps
//! what arrived and the client sends only the rest; a lost answer to the last piece is
//! answered with the stored upload; two appends racing end in one offset and one row; offsets
//! that do not match are 409 with the resource's; another guest sees nothing; the quota is
//! checked before any byte with open resources reserved; a wrong format is refused after its
//! first kilobytes; cancelled and expired resources leave nothing on disk or in the bucket.

mod common;

use std::time::{Duration, Instant};

use base64::Engine;
use bytes::Bytes;
use common::{Backend, Options, TestApp, assert_problem, images};
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::Value;
use uuid::Uuid;

const PARTIAL: &str = "application/partial-upload";

fn b64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

/// A real JPEG followed by `extra` bytes of noise (phones leave trailers after the image): a
/// large file whose derivatives are quick.
fn photo_of(extra: usize) -> Vec<u8> {
    let mut bytes = images::jpeg(64, 48);
    let mut state = 0x9e37_79b9_u32;
    bytes.extend((0..extra).map(|_| {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        state as u8
    }));
    bytes
}

struct Client<'a> {
    app: &'a TestApp,
    token: String,
    slug: String,
}

impl<'a> Client<'a> {
    fn new(app: &'a TestApp, guest: &common::Guest) -> Self {
        Self { app, token: guest.token.clone(), slug: guest.slug.clone() }
    }

    async fn create_with(&self, key: Uuid, name: &str, length: usize, interop: Option<&str>) -> reqwest::Response {
        let mut request = self
            .app
            .client
            .post(self.app.url(&format!("/api/v1/events/{}/uploads/resumable", self.slug)))
            .bearer_auth(&self.token)
            .header("Upload-Complete", "?0")
            .header("Upload-Length", length.to_string())
            .header("Upload-Metadata", format!("client_upload_id {},filename {}", b64(&key.to_string()), b64(name)));
        if let Some(version) = interop {
            request = request.header("Upload-Draft-Interop-Version", version);
        }
        request.send().await.expect("create")
    }

    /// Creates a resource; its path.
    async fn create(&self, key: Uuid, length: usize) -> String {
        let response = self.create_with(key, "clip.jpg", length, None).await;
        assert_eq!(response.status(), StatusCode::CREATED);
        assert_eq!(header(response.headers(), "upload-offset"), "0");
        assert_eq!(header(response.headers(), "upload-complete"), "?0");
        assert!(header(response.headers(), "upload-limit").contains("max-age="), "{:?}", response.headers());
        header(response.headers(), "location")
    }

    async fn patch(
        &self,
        location: &str,
        offset: usize,
        complete: bool,
        body: impl Into<reqwest::Body>,
    ) -> reqwest::Response {
        self.app
            .client
            .patch(self.app.url(location))
            .bearer_auth(&self.token)
            .header("Content-Type", PARTIAL)
            .header("Upload-Offset", offset.to_string())
            .header("Upload-Complete", if complete { "?1" } else { "?0" })
            .body(body)
            .send()
            .await
            .expect("append")
    }

    async fn head(&self, location: &str) -> reqwest::Response {
        self.app.client.head(self.app.url(location)).bearer_auth(&self.token).send().await.expect("head")
    }

    async fn offset(&self, location: &str) -> usize {
        let response = self.head(location).await;
        assert_eq!(response.status(), StatusCode::NO_CONTENT);
        header(response.headers(), "upload-offset").parse().expect("offset")
    }
}

fn header(headers: &HeaderMap, name: &str) -> String {
    headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned()
}

async fn original(app: &TestApp, token: &str, id: &str) -> Bytes {
    let response = app
        .client
        .get(app.url(&format!("/api/v1/uploads/{id}/original")))
        .bearer_auth(token)
        .send()
        .await
        .expect("GET");
    assert_eq!(response.status(), StatusCode::OK);
    response.bytes().await.expect("bytes")
}

/// A body that sends `first` and then fails: the connection is cut mid-request.
fn cut_body(first: Vec<u8>) -> reqwest::Body {
    let chunks: Vec<Result<Bytes, std::io::Error>> = first
        .chunks(64 * 1024)
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .chain(std::iter::once(Err(std::io::Error::other("the venue's Wi-Fi dropped"))))
        .collect();
    let stream = futures_util::stream::iter(chunks).then(|chunk| async {
        tokio::time::sleep(Duration::from_millis(2)).await;
        chunk
    });
    reqwest::Body::wrap_stream(stream)
}

/// A body that sends `first`, then nothing for a long while.
fn stalling_body(first: Vec<u8>) -> reqwest::Body {
    let head = futures_util::stream::once(async move { Ok::<_, std::io::Error>(Bytes::from(first)) });
    let stall = futures_util::stream::once(async {
        tokio::time::sleep(Duration::from_secs(30)).await;
        Ok::<_, std::io::Error>(Bytes::from_static(b"late"))
    });
    reqwest::Body::wrap_stream(head.chain(stall))
}

use futures_util::StreamExt;

async fn a_file_sent_in_pieces_is_stored_once_byte_for_byte_and_charged_once(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Ada").await;
    let client = Client::new(&app, &guest);
    let (_, info) = app.get_json("/api/v1/info", &guest.token).await;
    assert!(info["capabilities"].as_array().expect("caps").iter().any(|c| c == "resumable_uploads"), "{info}");
    assert_eq!(info["limits"]["resumable_expiry_s"].as_u64(), Some(86_400), "{info}");

    // Over two S3 parts, sent in pieces that do not end on a part's boundary.
    let file = photo_of(11 * 1024 * 1024 + 12_345);
    let key = Uuid::new_v4();
    let location = client.create(key, file.len()).await;
    let (a, b) = (3 * 1024 * 1024 + 7, 9 * 1024 * 1024 + 11);
    let response = client.patch(&location, 0, false, file[..a].to_vec()).await;
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    assert_eq!(header(response.headers(), "upload-offset"), a.to_string());
    assert_eq!(header(response.headers(), "upload-complete"), "?0");
    // The next piece reaches another instance behind the load balancer.
    let other = TestApp::spawn_sharing(&app).await;
    let response = Client::new(&other, &guest).patch(&location, a, false, file[a..b].to_vec()).await;
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    let head = client.head(&location).await;
    assert_eq!(head.status(), StatusCode::NO_CONTENT);
    assert_eq!(header(head.headers(), "upload-offset"), b.to_string());
    assert_eq!(header(head.headers(), "upload-complete"), "?0");
    assert_eq!(header(head.headers(), "upload-length"), file.len().to_string());
    assert_eq!(header(head.headers(), "cache-control"), "no-store");
    assert_eq!(app.upload_rows().await, 0, "nothing stored before the last byte");
    assert_eq!(app.used_bytes(&guest).await, 0);

    let response = client.patch(&location, b, true, file[b..].to_vec()).await;
    assert_eq!(response.status(), StatusCode::CREATED);
    assert_eq!(header(response.headers(), "upload-complete"), "?1");
    let upload: Value = response.json().await.expect("json");
    let id = upload["id"].as_str().expect("id").to_owned();
    assert_eq!(upload["bytes"].as_u64(), Some(file.len() as u64), "{upload}");
    assert_eq!(upload["client_upload_id"], key.to_string(), "{upload}");
    assert_eq!(upload["filename"], "clip.jpg");
    assert_eq!(original(&app, &guest.token, &id).await, Bytes::from(file.clone()), "byte for byte");

    // The answer to the last piece was lost: the same request again, a HEAD, a new creation
    // with the key — each answers with the same upload, nothing stored or charged again.
    let response = client.patch(&location, b, true, file[b..].to_vec()).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(header(response.headers(), "idempotent-replayed"), "true");
    let again: Value = response.json().await.expect("json");
    assert_eq!(again["id"], id.as_str());
    let head = client.head(&location).await;
    assert_eq!(header(head.headers(), "upload-complete"), "?1");
    assert_eq!(header(head.headers(), "upload-offset"), file.len().to_string());
    let response = client.create_with(key, "clip.jpg", file.len(), None).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(header(response.headers(), "upload-complete"), "?1");
    let again: Value = response.json().await.expect("json");
    assert_eq!(again["id"], id.as_str());

    assert_eq!(app.upload_rows().await, 1);
    assert_eq!(app.used_bytes(&guest).await, file.len() as i64, "charged once");
    // Only the original is left of the pieces: no partial file, no tail object, no open
    // multipart upload.
    let left: Vec<_> = app.blob_files().into_iter().filter(|p| !p.to_string_lossy().contains("originals")).collect();
    assert!(left.is_empty(), "{left:?}");
}

async fn a_request_cut_short_keeps_what_arrived_and_the_rest_completes_the_file(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Ada").await;
    let client = Client::new(&app, &guest);
    let file = photo_of(8 * 1024 * 1024);
    let location = client.create(Uuid::new_v4(), file.len()).await;

    let sent = 6 * 1024 * 1024 + 333;
    let cut = app
        .client
        .patch(app.url(&location))
        .bearer_auth(&guest.token)
        .header("Content-Type", PARTIAL)
        .header("Upload-Offset", "0")
        .header("Upload-Complete", "?1")
        .body(cut_body(file[..sent].to_vec()))
        .send()
        .await;
    assert!(cut.is_err(), "the request was cut: {cut:?}");

    // The server records what arrived once it notices the cut.
    let deadline = Instant::now() + Duration::from_secs(10);
    let offset = loop {
        let response = client.head(&location).await;
        let offset: usize = header(response.headers(), "upload-offset").parse().unwrap_or(0);
        if offset > 0 || Instant::now() > deadline {
            break offset;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(offset > 0 && offset <= sent, "kept {offset} of {sent} sent");
    // On a local disk every byte that arrived is kept; on S3 at least the whole part.
    assert!(offset >= 5 * 1024 * 1024, "kept {offset} of {sent} sent");

    // As a client does: a 409 says where to go on from (the cut request may still be writing
    // its last bytes down when the next one arrives).
    let mut offset = offset;
    let mut resent = 0;
    let mut tries = 0;
    let response = loop {
        resent += file.len() - offset;
        let response = client.patch(&location, offset, true, file[offset..].to_vec()).await;
        tries += 1;
        if response.status() != StatusCode::CONFLICT || tries == 20 {
            break response;
        }
        offset = header(response.headers(), "upload-offset").parse().expect("a 409 says the offset");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(response.status(), StatusCode::CREATED);
    assert!(offset >= 5 * 1024 * 1024, "went on from {offset} of {sent} sent");
    assert!(resent < file.len(), "sent again: {resent} of {}", file.len());
    let upload: Value = response.json().await.expect("json");
    let id = upload["id"].as_str().expect("id");
    assert_eq!(original(&app, &guest.token, id).await, Bytes::from(file.clone()), "byte for byte");
    assert_eq!(app.used_bytes(&guest).await, file.len() as i64);
}

async fn an_offset_that_does_not_match_is_409_with_the_resources_offset(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Ada").await;
    let client = Client::new(&app, &guest);
    let file = photo_of(100_000);
    let location = client.create(Uuid::new_v4(), file.len()).await;
    assert_eq!(client.patch(&location, 0, false, file[..70_000].to_vec()).await.status(), StatusCode::NO_CONTENT);

    let response = client.patch(&location, 50_000, true, file[50_000..].to_vec()).await;
    assert_eq!(header(response.headers(), "upload-offset"), "70000");
    let problem = assert_problem(response, StatusCode::CONFLICT, "upload_offset_mismatch").await;
    assert_eq!(problem["type"], "https://iana.org/assignments/http-problem-types#mismatching-upload-offset");
    assert_eq!(
        (problem["expected-offset"].as_u64(), problem["provided-offset"].as_u64()),
        (Some(70_000), Some(50_000))
    );
    assert_eq!(client.offset(&location).await, 70_000, "nothing appended");

    // More bytes than declared: refused, the resource cancelled.
    let mut longer = file[70_000..].to_vec();
    longer.extend_from_slice(b"one byte too many");
    let response = client.patch(&location, 70_000, true, longer).await;
    assert_problem(response, StatusCode::BAD_REQUEST, "inconsistent_upload_length").await;
    assert_eq!(client.head(&location).await.status(), StatusCode::NOT_FOUND);
    app.assert_nothing_stored(&guest).await;

    // An append without an offset, a creation without a length or a key.
    let location = client.create(Uuid::new_v4(), file.len()).await;
    let response =
        app.client.patch(app.url(&location)).bearer_auth(&guest.token).body("x").send().await.expect("patch");
    assert_problem(response, StatusCode::BAD_REQUEST, "invalid_request").await;
    let url = app.url(&format!("/api/v1/events/{}/uploads/resumable", guest.slug));
    let response = app
        .client
        .post(&url)
        .bearer_auth(&guest.token)
        .header("Upload-Metadata", format!("client_upload_id {}", b64(&Uuid::new_v4().to_string())))
        .send()
        .await
        .expect("post");
    assert_problem(response, StatusCode::BAD_REQUEST, "upload_length_required").await;
    let response =
        app.client.post(&url).bearer_auth(&guest.token).header("Upload-Length", "10").send().await.expect("post");
    assert_problem(response, StatusCode::BAD_REQUEST, "invalid_client_upload_id").await;
}

/// Two whole-file appends at offset 0: the first pauses `pause` before each of its halves, the
/// second starts `after` the first.
async fn racing(
    client: &Client<'_>,
    location: &str,
    file: &[u8],
    pause: Duration,
    after: Duration,
) -> (reqwest::Response, reqwest::Response) {
    let (half, rest) = file.split_at(file.len() / 2);
    let (half, rest) = (Bytes::copy_from_slice(half), Bytes::copy_from_slice(rest));
    let slow = futures_util::stream::iter([Ok::<_, std::io::Error>(half), Ok(rest)]).then(move |chunk| async move {
        tokio::time::sleep(pause).await;
        chunk
    });
    let first = client.patch(location, 0, true, reqwest::Body::wrap_stream(slow));
    let second = async {
        tokio::time::sleep(after).await;
        client.patch(location, 0, true, file.to_vec()).await
    };
    tokio::join!(first, second)
}

async fn two_appends_racing_on_one_resource_end_in_one_offset_and_one_row(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Ada").await;
    let client = Client::new(&app, &guest);
    let file = photo_of(2 * 1024 * 1024);
    let location = client.create(Uuid::new_v4(), file.len()).await;

    // The first attempt pauses halfway; the second arrives meanwhile.
    let (first, second) =
        racing(&client, &location, &file, Duration::from_millis(700), Duration::from_millis(1000)).await;
    assert_eq!(first.status(), StatusCode::CREATED);
    let stored: Value = first.json().await.expect("json");
    // The second waited for the first's lease (up to 2 s), then found the upload stored.
    assert_eq!(second.status(), StatusCode::OK);
    assert_eq!(header(second.headers(), "idempotent-replayed"), "true");
    let replayed: Value = second.json().await.expect("json");
    assert_eq!(replayed["id"], stored["id"]);

    // One that is still appending after two seconds: the other is told so, with its offset.
    let location = client.create(Uuid::new_v4(), file.len()).await;
    let (first, second) =
        racing(&client, &location, &file, Duration::from_millis(1800), Duration::from_millis(300)).await;
    assert_eq!(first.status(), StatusCode::CREATED);
    let offset = header(second.headers(), "upload-offset");
    let problem = assert_problem(second, StatusCode::CONFLICT, "upload_busy").await;
    let offset: usize = offset.parse().expect("the busy answer says the offset");
    assert!(offset < file.len(), "{problem}");

    // Retried after the first finished: a replay of its upload.
    let response = client.patch(&location, 0, true, file.clone()).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(app.upload_rows().await, 2);
    assert_eq!(app.used_bytes(&guest).await, 2 * file.len() as i64, "each charged once");

    // Two creations racing with one key: one resource.
    let key = Uuid::new_v4();
    let (a, b) = tokio::join!(client.create_with(key, "a.jpg", 10, None), client.create_with(key, "a.jpg", 10, None));
    assert_eq!((a.status(), b.status()), (StatusCode::CREATED, StatusCode::CREATED));
    assert_eq!(header(a.headers(), "location"), header(b.headers(), "location"));
    assert_eq!(app.scalar("SELECT COUNT(*) FROM resumable_uploads WHERE state = 'open'").await, 1);
}

async fn a_key_already_stored_is_replayed_and_the_pieces_are_removed(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Ada").await;
    let client = Client::new(&app, &guest);
    let file = photo_of(300_000);

    // The phone sent the photo in one request meanwhile (another tab, an older page).
    let key = Uuid::new_v4();
    let location = client.create(key, file.len()).await;
    assert_eq!(client.patch(&location, 0, false, file[..100_000].to_vec()).await.status(), StatusCode::NO_CONTENT);
    let response = app.upload_form(&guest, common::upload_form(&file, Some(key), "clip.jpg", None), None).await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let stored: Value = response.json().await.expect("json");

    let response = client.patch(&location, 100_000, true, file[100_000..].to_vec()).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(header(response.headers(), "idempotent-replayed"), "true");
    assert_eq!(header(response.headers(), "upload-complete"), "?1");
    let replayed: Value = response.json().await.expect("json");
    assert_eq!(replayed["id"], stored["id"]);
    assert_eq!(app.upload_rows().await, 1);
    assert_eq!(app.used_bytes(&guest).await, file.len() as i64, "charged once");
    let left: Vec<_> = app.blob_files().into_iter().filter(|p| !p.to_string_lossy().contains("originals")).collect();
    assert!(left.is_empty(), "{left:?}");
}

async fn another_guest_finds_nothing_and_cannot_take_the_key(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let ada = app.join(&event, "Ada").await;
    let bob = app.join(&event, "Bob").await;
    let (ada_client, bob_client) = (Client::new(&app, &ada), Client::new(&app, &bob));
    let file = photo_of(50_000);
    let key = Uuid::new_v4();
    let location = ada_client.create(key, file.len()).await;
    assert_eq!(ada_client.patch(&location, 0, false, file[..20_000].to_vec()).await.status(), StatusCode::NO_CONTENT);

    assert_eq!(bob_client.head(&location).await.status(), StatusCode::NOT_FOUND, "a HEAD has no body to say more");
    assert_problem(
        bob_client.patch(&location, 20_000, true, file[20_000..].to_vec()).await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
    let response = app.client.delete(app.url(&location)).bearer_auth(&bob.token).send().await.expect("delete");
    assert_problem(response, StatusCode::NOT_FOUND, "not_found").await;
    let response = bob_client.create_with(key, "clip.jpg", file.len(), None).await;
    let problem = assert_problem(response, StatusCode::CONFLICT, "client_upload_id_conflict").await;
    assert!(!problem.to_string().contains(&location), "{problem}");
    assert_eq!(ada_client.offset(&location).await, 20_000, "untouched");

    // Another event's guest: not even the path's event.
    let other = app.create_event().await;
    let carol = app.join(&other, "Carol").await;
    let response = app.client.head(app.url(&location)).bearer_auth(&carol.token).send().await.expect("head");
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
}

async fn the_quota_is_checked_before_any_byte_with_open_uploads_reserved(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event_with_quota(1_000_000).await;
    let guest = app.join(&event, "Ada").await;
    let client = Client::new(&app, &guest);
    let first = client.create(Uuid::new_v4(), 600_000).await;
    let response = client.create_with(Uuid::new_v4(), "b.jpg", 600_000, None).await;
    let problem = assert_problem(response, StatusCode::PAYLOAD_TOO_LARGE, "quota_exceeded").await;
    assert_eq!(problem["remaining_bytes"].as_i64(), Some(400_000), "{problem}");

    let response = app.client.delete(app.url(&first)).bearer_auth(&guest.token).send().await.expect("delete");
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    assert_eq!(client.head(&first).await.status(), StatusCode::NOT_FOUND);
    client.create(Uuid::new_v4(), 600_000).await;

    // Over every size limit: refused before any byte.
    let response = client.create_with(Uuid::new_v4(), "huge.mp4", 3 * 1024 * 1024 * 1024, None).await;
    assert_problem(response, StatusCode::PAYLOAD_TOO_LARGE, "file_too_large").await;
}

async fn a_wrong_format_is_refused_after_its_first_kilobytes(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Ada").await;
    let client = Client::new(&app, &guest);

    for (name, head) in [
        ("notes.txt", b"Dear guests, ".repeat(6000)),
        // Starts like an MP4, then is not one.
        ("clip.mp4", [b"\0\0\0\x18ftypisom\0\0\x02\0isomiso2".as_slice(), &[0xAB; 80_000]].concat()),
    ] {
        let location = client.create(Uuid::new_v4(), 40 * 1024 * 1024).await;
        let started = Instant::now();
        let response = client.patch(&location, 0, true, stalling_body(head)).await;
        let problem = assert_problem(response, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type").await;
        assert!(started.elapsed() < Duration::from_secs(10), "{name}: answered before the rest was sent");
        assert!(!problem["detail"].as_str().unwrap_or_default().is_empty(), "{problem}");
        assert_eq!(client.head(&location).await.status(), StatusCode::NOT_FOUND, "{name}: cancelled");
    }
    app.assert_nothing_stored(&guest).await;
}

async fn cancelled_and_abandoned_uploads_leave_nothing_behind(backend: Backend) {
    let app = TestApp::spawn_with(backend, Options { resumable_expiry_s: 2, ..Options::default() }).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Ada").await;
    let client = Client::new(&app, &guest);
    // Past one S3 part: a multipart upload and a tail object exist.
    let file = photo_of(6 * 1024 * 1024);

    let cancelled = client.create(Uuid::new_v4(), file.len()).await;
    let abandoned = client.create(Uuid::new_v4(), file.len()).await;
    for location in [&cancelled, &abandoned] {
        let response = client.patch(location, 0, false, file[..5_500_000].to_vec()).await;
        assert_eq!(response.status(), StatusCode::NO_CONTENT);
    }
    assert!(!app.blob_files().is_empty(), "the pieces are kept meanwhile");
    let response = app.client.delete(app.url(&cancelled)).bearer_auth(&guest.token).send().await.expect("delete");
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    assert_eq!(client.head(&cancelled).await.status(), StatusCode::NOT_FOUND);

    // Untouched for longer than the expiry: the sweep removes it.
    let deadline = Instant::now() + Duration::from_secs(15);
    while app.scalar("SELECT COUNT(*) FROM resumable_uploads").await > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(app.scalar("SELECT COUNT(*) FROM resumable_uploads").await, 0, "both removed");
    assert_eq!(client.head(&abandoned).await.status(), StatusCode::NOT_FOUND);
    app.assert_nothing_stored(&guest).await;
    // No multipart upload left open in the bucket either (s3s-fs keeps each as a file).
    assert_eq!(common::all_files(&app.blob_dir()), Vec::<std::path::PathBuf>::new());
}

async fn drafts_03_to_05_complete_when_the_offset_reaches_the_length(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Ada").await;
    let client = Client::new(&app, &guest);
    let file = photo_of(200_000);
    for version in ["5", "6"] {
        let response = client.create_with(Uuid::new_v4(), "clip.jpg", file.len(), Some(version)).await;
        assert_eq!(response.status(), StatusCode::CREATED);
        assert_eq!(header(response.headers(), "upload-draft-interop-version"), version);
        assert!(header(response.headers(), "upload-limit").contains("expires="), "{:?}", response.headers());
        let location = header(response.headers(), "location");
        let patch = |offset: usize, body: Vec<u8>| {
            app.client
                .patch(app.url(&location))
                .bearer_auth(&guest.token)
                .header("Upload-Draft-Interop-Version", version)
                .header("Content-Type", PARTIAL)
                .header("Upload-Offset", offset.to_string())
                .header("Upload-Complete", "?0")
                .body(body)
                .send()
        };
        assert_eq!(patch(0, file[..100_000].to_vec()).await.expect("patch").status(), StatusCode::NO_CONTENT);
        let response = patch(100_000, file[100_000..].to_vec()).await.expect("patch");
        assert_eq!(response.status(), StatusCode::CREATED, "version {version}");
        assert_eq!(header(response.headers(), "upload-offset"), file.len().to_string());
    }
    // The current rules: the length reached without `?1` keeps the resource open.
    let location = client.create(Uuid::new_v4(), file.len()).await;
    assert_eq!(client.patch(&location, 0, false, file.clone()).await.status(), StatusCode::NO_CONTENT);
    let response = client.patch(&location, file.len(), true, Vec::new()).await;
    assert_eq!(response.status(), StatusCode::CREATED, "an empty ?1 append completes it");
    assert_eq!(app.upload_rows().await, 3);
}

every_store!(
    a_file_sent_in_pieces_is_stored_once_byte_for_byte_and_charged_once,
    a_request_cut_short_keeps_what_arrived_and_the_rest_completes_the_file,
    cancelled_and_abandoned_uploads_leave_nothing_behind,
);

both_backends!(
    an_offset_that_does_not_match_is_409_with_the_resources_offset,
    two_appends_racing_on_one_resource_end_in_one_offset_and_one_row,
    a_key_already_stored_is_replayed_and_the_pieces_are_removed,
    another_guest_finds_nothing_and_cannot_take_the_key,
    the_quota_is_checked_before_any_byte_with_open_uploads_reserved,
    a_wrong_format_is_refused_after_its_first_kilobytes,
    drafts_03_to_05_complete_when_the_offset_reaches_the_length,
);
