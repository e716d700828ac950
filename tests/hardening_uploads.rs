//! What one guest's upload request can cost the server: a multipart body whose boundary or
//! part header never comes is refused once the reader's small bounds are passed (not held
//! whole in memory), a body over the upload limit is refused at once, an empty file is a 415
//! that leaves nothing behind, and a stored photo is answered 201 even when reading it back
//! fails. Uploads cut at awkward places still arrive whole.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use common::{Backend, Guest, Options, TestApp, assert_problem, images};
use confetti::db::Db;
use futures_util::Stream;
use reqwest::StatusCode;
use serde_json::Value;
use sha2::{Digest, Sha256};
use uuid::Uuid;

both_backends!(
    a_body_without_a_boundary_is_refused_long_before_it_is_read,
    a_part_header_that_never_ends_is_refused_long_before_the_body_is_read,
    a_preamble_longer_than_four_kib_is_refused,
    a_body_over_the_upload_limit_and_its_overhead_is_refused_at_once,
    an_empty_file_part_is_refused_and_leaves_nothing_behind,
    an_upload_cut_at_awkward_places_is_stored_whole,
    a_stored_photo_is_answered_even_when_reading_it_back_fails,
);

const BOUNDARY: &str = "confetti-hardening-boundary";
/// Junk a client streams before it stalls: far more than any bound, little enough that an
/// old server which buffers it all survives the test.
const JUNK_BYTES: u64 = 64 * 1024 * 1024;
/// What the server may have been sent when it answers: its reads, the kernel's socket buffers
/// on both sides of a loopback connection (a few MiB each), hyper's buffers.
const ANSWERED_WITHIN_BYTES: u64 = 16 * 1024 * 1024;

/// `prefix`, then `filler` bytes in 64 KiB chunks up to `JUNK_BYTES`, then nothing ever
/// again (the body neither ends nor progresses); `asked` counts what the client was asked for.
fn junk_body(first: Bytes, filler: u8, asked: Arc<AtomicU64>) -> impl Stream<Item = Result<Bytes, std::io::Error>> {
    let chunk = Bytes::from(vec![filler; 64 * 1024]);
    futures_util::stream::unfold(0u64, move |sent| {
        let (chunk, first, asked) = (chunk.clone(), first.clone(), asked.clone());
        async move {
            if sent >= JUNK_BYTES {
                std::future::pending::<()>().await;
            }
            let piece = if sent == 0 && !first.is_empty() { first } else { chunk };
            asked.fetch_add(piece.len() as u64, Ordering::SeqCst);
            Some((Ok(piece.clone()), sent + piece.len() as u64))
        }
    })
}

fn uploads_url(app: &TestApp, guest: &Guest) -> String {
    app.url(&format!("/api/v1/events/{}/uploads", guest.slug))
}

fn fresh_client() -> reqwest::Client {
    reqwest::Client::builder().pool_max_idle_per_host(0).build().expect("client")
}

/// Streams a junk body and returns the answer and how much of the body had been asked for.
async fn send_junk(app: &TestApp, guest: &Guest, prefix: &[u8], filler: u8) -> (reqwest::Response, u64) {
    let asked = Arc::new(AtomicU64::new(0));
    let request = fresh_client()
        .post(uploads_url(app, guest))
        .bearer_auth(&guest.token)
        .header("content-type", format!("multipart/form-data; boundary={BOUNDARY}"))
        .body(reqwest::Body::wrap_stream(junk_body(Bytes::copy_from_slice(prefix), filler, asked.clone())));
    let response = tokio::time::timeout(Duration::from_secs(30), request.send())
        .await
        .expect("an answer while the body is still arriving")
        .expect("the answer reaches the client");
    (response, asked.load(Ordering::SeqCst))
}

async fn assert_refused_early(response: reqwest::Response, asked: u64, status: StatusCode, code: &str) -> Value {
    assert_eq!(response.headers().get("connection").and_then(|v| v.to_str().ok()), Some("close"));
    let problem = assert_problem(response, status, code).await;
    assert!(asked < ANSWERED_WITHIN_BYTES, "the client had been asked for {asked} bytes before the answer");
    problem
}

fn part(name: &str, file_name: Option<&str>, data: &[u8]) -> Vec<u8> {
    let file = file_name.map(|f| format!("; filename=\"{f}\"\r\nContent-Type: image/jpeg")).unwrap_or_default();
    [format!("--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{name}\"{file}\r\n\r\n").as_bytes(), data, b"\r\n"]
        .concat()
}

fn closing() -> Vec<u8> {
    format!("--{BOUNDARY}--\r\n").into_bytes()
}

async fn send_body(app: &TestApp, guest: &Guest, pieces: Vec<Vec<u8>>) -> reqwest::Response {
    let stream = futures_util::stream::iter(pieces.into_iter().map(|p| Ok::<_, std::io::Error>(Bytes::from(p))));
    fresh_client()
        .post(uploads_url(app, guest))
        .bearer_auth(&guest.token)
        .header("content-type", format!("multipart/form-data; boundary={BOUNDARY}"))
        .body(reqwest::Body::wrap_stream(stream))
        .send()
        .await
        .expect("upload request")
}

async fn a_body_without_a_boundary_is_refused_long_before_it_is_read(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Mallory").await;
    let (response, asked) = send_junk(&app, &guest, b"", b'x').await;
    let problem = assert_refused_early(response, asked, StatusCode::BAD_REQUEST, "invalid_multipart").await;
    assert!(problem["detail"].as_str().unwrap_or_default().contains("no boundary"), "{problem}");
    app.assert_nothing_stored(&guest).await;
    // The server is still there for everyone else.
    assert_eq!(app.upload(&guest, &images::jpeg(16, 16), None).await.status(), StatusCode::CREATED);
}

async fn a_part_header_that_never_ends_is_refused_long_before_the_body_is_read(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Mallory").await;
    let prefix = format!("--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"");
    let (response, asked) = send_junk(&app, &guest, prefix.as_bytes(), b'a').await;
    let problem = assert_refused_early(response, asked, StatusCode::BAD_REQUEST, "invalid_multipart").await;
    assert!(problem["detail"].as_str().unwrap_or_default().contains("headers are longer"), "{problem}");
    app.assert_nothing_stored(&guest).await;
}

async fn a_preamble_longer_than_four_kib_is_refused(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Mallory").await;
    let photo = images::jpeg(16, 16);
    let preamble = [vec![b'p'; 8 * 1024], b"\r\n".to_vec()].concat();
    let body = vec![preamble, part("file", Some("a.jpg"), &photo), closing()];
    assert_problem(send_body(&app, &guest, body).await, StatusCode::BAD_REQUEST, "invalid_multipart").await;
    app.assert_nothing_stored(&guest).await;

    // A short preamble is allowed, as RFC 2046 says.
    let body = vec![b"hello\r\n".to_vec(), part("file", Some("a.jpg"), &photo), closing()];
    assert_eq!(send_body(&app, &guest, body).await.status(), StatusCode::CREATED);
}

/// The file alone is within `max_upload_bytes`, but other parts make the body larger than the
/// limit plus 64 KiB: refused as soon as that many bytes arrived, nothing kept. (The body's
/// limit is the larger of the photo and video limits: both are set here.)
async fn a_body_over_the_upload_limit_and_its_overhead_is_refused_at_once(backend: Backend) {
    let options = Options { max_upload_bytes: 256 * 1024, max_video_bytes: 256 * 1024, ..Options::default() };
    let app = TestApp::spawn_with(backend, options).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Mallory").await;
    let photo = images::jpeg_of_about(200 * 1024);
    assert!(photo.len() < 256 * 1024);
    let body = vec![part("padding", None, &vec![b'z'; 200 * 1024]), part("file", Some("a.jpg"), &photo), closing()];
    let response = send_body(&app, &guest, body).await;
    assert_eq!(response.headers().get("connection").and_then(|v| v.to_str().ok()), Some("close"));
    let problem = assert_problem(response, StatusCode::PAYLOAD_TOO_LARGE, "file_too_large").await;
    assert_eq!(problem["limit_bytes"], 256 * 1024);
    app.assert_nothing_stored(&guest).await;
}

async fn an_empty_file_part_is_refused_and_leaves_nothing_behind(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Mallory").await;
    for key in [None, Some(Uuid::new_v4())] {
        let response = app.upload(&guest, b"", key).await;
        let problem = assert_problem(response, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type").await;
        assert_eq!(problem["detail"], "the file is empty");
        // `blob_files` lists every file under the blob directory: temporary blobs and
        // half-written staging files included.
        app.assert_nothing_stored(&guest).await;
    }
    // The refused key is still free for the real photo.
    let key = Uuid::new_v4();
    assert_problem(
        app.upload(&guest, b"", Some(key)).await,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
    )
    .await;
    assert_eq!(app.upload(&guest, &images::jpeg(16, 16), Some(key)).await.status(), StatusCode::CREATED);
}

/// Chunks of 1 to 13 bytes put every boundary, every CRLF and every header across chunk edges.
async fn an_upload_cut_at_awkward_places_is_stored_whole(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let photo = images::jpeg_of_about(20 * 1024);
    let key = Uuid::new_v4();
    let body = [
        part("client_upload_id", None, key.to_string().as_bytes()),
        part("caption", None, "at the \r\n--altar".as_bytes()),
        part("file", Some("ring.jpg"), &photo),
        closing(),
    ]
    .concat();
    let mut pieces = Vec::new();
    let mut rest = &body[..];
    for size in [1usize, 2, 3, 5, 7, 11, 13].into_iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let n = size.min(rest.len());
        pieces.push(rest[..n].to_vec());
        rest = &rest[n..];
    }
    let response = send_body(&app, &guest, pieces).await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let upload: Value = response.json().await.expect("json");
    assert_eq!(upload["client_upload_id"], key.to_string());
    // Captions keep their line break, normalised to `\n`.
    assert_eq!(upload["caption"], "at the \n--altar");
    assert_eq!(upload["filename"], "ring.jpg");
    assert_eq!(upload["bytes"], photo.len());
    assert_eq!(upload["sha256"], hex::encode(Sha256::digest(&photo)));
    let original = app.blob_dir().join(format!("originals/{}/{}", event.id, upload["id"].as_str().expect("id")));
    assert_eq!(std::fs::read(&original).expect("the stored original"), photo);
}

/// Once the row is committed the photo is stored: a read-back that fails (here: the comments
/// table it counts is gone) is retried, then answered from the row just written.
async fn a_stored_photo_is_answered_even_when_reading_it_back_fails(backend: Backend) {
    let app = TestApp::spawn_with(backend, Options { derivative_workers: Some(0), ..Options::default() }).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let sql = "ALTER TABLE comments RENAME TO comments_elsewhere";
    match &app.db {
        Db::Sqlite(pool) => sqlx::query(sql).execute(pool).await.map(|_| ()),
        Db::Postgres(pool) => sqlx::query(sql).execute(pool).await.map(|_| ()),
    }
    .expect("rename the comments table");
    let photo = images::jpeg(64, 48);
    let response = app.upload(&guest, &photo, None).await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let location = response.headers()["location"].to_str().expect("location").to_owned();
    let upload: Value = response.json().await.expect("json");
    assert_eq!(location, format!("/api/v1/uploads/{}", upload["id"].as_str().expect("id")));
    assert_eq!(upload["status"], "processing");
    assert_eq!(upload["bytes"], photo.len());
    assert_eq!(upload["width"], 64);
    assert_eq!(upload["guest"]["display_name"], "Anna");
    assert_eq!(upload["likes"], 0);
    assert_eq!(upload["comments"], 0);
    assert_eq!(app.upload_rows().await, 1);
    assert_eq!(app.used_bytes(&guest).await, photo.len() as i64);
}
