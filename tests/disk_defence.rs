//! What one join link can make the server hold, on every backend: a resumable append stops at
//! the disk's free-space floor keeping what arrived (and takes nothing while the disk is below
//! it), a one-request upload stops there too leaving nothing, a creation longer than the room
//! above the floor is refused; open resumable uploads
//! count against the event's storage cap from their creation until they are cancelled, expire
//! or are stored (then by their stored bytes, once); joins from one address are budgeted per
//! event, a whole venue's first wave included.
//!
//! The floor tests set `--min-free-bytes` just under the test machine's real free space and
//! then take a large piece of the disk in the middle of an append (`posix_fallocate`, which
//! takes the blocks at once), with margins of hundreds of MiB against whatever else the machine
//! writes meanwhile.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use common::{Backend, Event, Guest, Options, TestApp, assert_problem, images};
use confetti::db::Db;
use futures_util::StreamExt;
use futures_util::future::join_all;
use reqwest::StatusCode;
use serde_json::{Value, json};
use uuid::Uuid;

const MIB: u64 = 1024 * 1024;
/// How far under the machine's free space the floor is set.
const ROOM_ABOVE_FLOOR: u64 = 256 * MIB;
/// How much of the disk the test takes mid-append: well past the room above the floor.
const FILLER: u64 = 512 * MIB;

// ---- the machine's disk -----------------------------------------------------------------

/// What `statvfs` says an unprivileged writer may still use where `path` is.
fn free_bytes(path: &Path) -> u64 {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).expect("path");
    // SAFETY: all zeroes is a valid `statvfs`.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c_path` is NUL-terminated and outlives the call, which writes only into `stat`.
    assert_eq!(unsafe { libc::statvfs(c_path.as_ptr(), &mut stat) }, 0, "statvfs {}", path.display());
    #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
    let free = u64::from(stat.f_bavail) * u64::from(stat.f_frsize);
    free
}

/// Takes `bytes` of the disk at once, as another program filling it would.
fn take_disk(path: &Path, bytes: u64) {
    use std::os::fd::AsRawFd;
    let file = std::fs::File::create(path).expect("filler");
    let len = libc::off_t::try_from(bytes).expect("size");
    // SAFETY: the descriptor is open for writing for the whole call.
    assert_eq!(unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len) }, 0, "posix_fallocate");
}

/// Held by each test that sets the floor from the disk's free space: one such test's filler
/// would otherwise eat another's room.
static DISK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// An instance whose free-space floor is `ROOM_ABOVE_FLOOR` under the disk's free space now.
async fn spawn_near_the_floor(backend: Backend) -> TestApp {
    let floor = free_bytes(&std::env::temp_dir()) - ROOM_ABOVE_FLOOR;
    TestApp::spawn_with(backend, Options { min_free_bytes: floor, ..Options::default() }).await
}

// ---- requests ---------------------------------------------------------------------------

/// A real JPEG of exactly `len` bytes (a phone's trailer of noise after the image).
fn photo(len: usize) -> Vec<u8> {
    images::jpeg_padded(len)
}

async fn create(app: &TestApp, guest: &Guest, length: u64) -> reqwest::Response {
    let key = base64::engine::general_purpose::STANDARD.encode(Uuid::new_v4().to_string());
    app.client
        .post(app.url(&format!("/api/v1/events/{}/uploads/resumable", guest.slug)))
        .bearer_auth(&guest.token)
        .header("Upload-Complete", "?0")
        .header("Upload-Length", length.to_string())
        .header("Upload-Metadata", format!("client_upload_id {key}"))
        .send()
        .await
        .expect("create")
}

/// Creates a resource and expects it made; its path.
async fn created(app: &TestApp, guest: &Guest, length: u64) -> String {
    let response = create(app, guest, length).await;
    assert_eq!(response.status(), StatusCode::CREATED);
    text_header(&response, "location")
}

async fn append(
    app: &TestApp,
    guest: &Guest,
    location: &str,
    offset: u64,
    body: impl Into<reqwest::Body>,
) -> reqwest::Response {
    app.client
        .patch(app.url(location))
        .bearer_auth(&guest.token)
        .header("Content-Type", "application/partial-upload")
        .header("Upload-Offset", offset.to_string())
        .header("Upload-Complete", "?1")
        .body(body)
        .send()
        .await
        .expect("append")
}

/// The resource's offset, as `HEAD` tells it; it must still be open.
async fn offset(app: &TestApp, guest: &Guest, location: &str) -> u64 {
    let response = app.client.head(app.url(location)).bearer_auth(&guest.token).send().await.expect("head");
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    assert_eq!(text_header(&response, "upload-complete"), "?0", "still open");
    text_header(&response, "upload-offset").parse().expect("offset")
}

fn text_header(response: &reqwest::Response, name: &str) -> String {
    response.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned()
}

/// A number the database holds about `id`.
async fn number(db: &Db, sql: &'static str, id: Uuid) -> i64 {
    match db {
        Db::Sqlite(p) => sqlx::query_scalar(sql).bind(id).fetch_one(p).await,
        Db::Postgres(p) => sqlx::query_scalar(sql).bind(id).fetch_one(p).await,
    }
    .expect(sql)
}

async fn event_used(app: &TestApp, event: &Event) -> i64 {
    number(&app.db, "SELECT used_bytes FROM events WHERE id = $1", event.id).await
}

/// What the event's open resources declare, all together.
async fn open_lengths(app: &TestApp, event: &Event) -> i64 {
    let sql =
        "SELECT CAST(COALESCE(SUM(length), 0) AS BIGINT) FROM resumable_uploads WHERE event_id = $1 AND state = 'open'";
    number(&app.db, sql, event.id).await
}

// ---- the free-space floor -----------------------------------------------------------------

async fn an_append_stops_at_the_free_space_floor_keeping_what_arrived(backend: Backend) {
    let _disk = DISK.lock().await;
    let app = spawn_near_the_floor(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Ada").await;
    let file = photo(32 * MIB as usize);
    let length = file.len() as u64;
    let location = created(&app, &guest, length).await;
    let id = location.rsplit('/').next().expect("id").to_owned();
    let partial = app.data_dir.path().join("blobs/partial").join(&id);
    let filler = app.data_dir.path().join("filler");

    // The phone sends the whole file in one append; the disk fills while it does.
    let body = filling_body(&file, vec![partial.clone()], filler.clone());
    let response = append(&app, &guest, &location, 0, body).await;
    let kept: u64 = text_header(&response, "upload-offset").parse().expect("a 507 says what was kept");
    let problem = assert_problem(response, StatusCode::INSUFFICIENT_STORAGE, "insufficient_storage").await;
    assert!(problem["detail"].as_str().is_some_and(|d| d.contains("disk")), "{problem}");
    eprintln!("{backend:?}: the append stopped at the floor with {kept} of {length} bytes kept");
    // Kept: what arrived before the disk crossed the floor, and at most a few MiB after.
    assert!((4 * MIB..=FIRST + 5 * MIB).contains(&kept), "kept {kept} of {length}");
    assert_eq!(offset(&app, &guest, &location).await, kept, "the resource stays open at what was kept");
    assert_eq!(file_len(&partial), kept, "nothing on the disk beyond the recorded offset");
    assert_eq!(app.upload_rows().await, 0);
    assert_eq!((app.used_bytes(&guest).await, event_used(&app, &event).await), (0, 0));

    // Below the floor, the next append takes nothing.
    let response = append(&app, &guest, &location, kept, file[kept as usize..].to_vec()).await;
    assert_eq!(text_header(&response, "upload-offset"), kept.to_string());
    assert_problem(response, StatusCode::INSUFFICIENT_STORAGE, "insufficient_storage").await;
    assert_eq!(offset(&app, &guest, &location).await, kept);
    assert_eq!(file_len(&partial), kept);

    // The operator makes room: the phone resumes from the offset, and the file is whole.
    std::fs::remove_file(&filler).expect("remove filler");
    let response = append(&app, &guest, &location, kept, file[kept as usize..].to_vec()).await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let upload: Value = response.json().await.expect("json");
    let original = app
        .client
        .get(app.url(&format!("/api/v1/uploads/{}/original", upload["id"].as_str().expect("id"))))
        .bearer_auth(&guest.token)
        .send()
        .await
        .expect("original");
    assert_eq!(original.bytes().await.expect("bytes"), Bytes::from(file), "byte for byte");
    assert_eq!((app.used_bytes(&guest).await, event_used(&app, &event).await), (length as i64, length as i64));
}

/// What a body sends before the disk fills.
const FIRST: u64 = 8 * MIB;

/// `file` as a body of 256 KiB chunks. After its first `FIRST` bytes, once the files `watched`
/// hold 4 MiB of them, something else on the server takes `FILLER` of the disk at `filler`;
/// then the rest follows.
fn filling_body(file: &[u8], watched: Vec<PathBuf>, filler: PathBuf) -> reqwest::Body {
    let chunks: Vec<Bytes> = file.chunks(256 * 1024).map(Bytes::copy_from_slice).collect();
    let first_chunks = (FIRST / (256 * 1024)) as usize;
    let body = futures_util::stream::iter(chunks.into_iter().enumerate()).then(move |(i, chunk)| {
        let (watched, filler) = (watched.clone(), filler.clone());
        async move {
            if i == first_chunks {
                wait_for_bytes(&watched, 4 * MIB).await;
                take_disk(&filler, FILLER);
            }
            Ok::<_, std::io::Error>(chunk)
        }
    });
    reqwest::Body::wrap_stream(body)
}

/// Waits until the files under `paths` (files, or directories walked) hold `len` bytes.
async fn wait_for_bytes(paths: &[PathBuf], len: u64) {
    let held = || -> u64 {
        paths
            .iter()
            .flat_map(|p| if p.is_dir() { common::all_files(p) } else { vec![p.clone()] })
            .map(|p| file_len(&p))
            .sum()
    };
    for _ in 0..500 {
        if held() >= len {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{paths:?} never held {len} bytes");
}

fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

async fn a_one_request_upload_stops_at_the_free_space_floor_and_leaves_nothing(backend: Backend) {
    let _disk = DISK.lock().await;
    let app = spawn_near_the_floor(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Ada").await;
    let file = photo(32 * MIB as usize);
    let filler = app.data_dir.path().join("filler");

    let body = filling_body(&file, vec![app.blob_dir()], filler.clone());
    let part = reqwest::multipart::Part::stream_with_length(body, file.len() as u64)
        .file_name("photo.jpg")
        .mime_str("image/jpeg")
        .expect("mime");
    let form = reqwest::multipart::Form::new().text("client_upload_id", Uuid::new_v4().to_string()).part("file", part);
    let response = app.upload_form(&guest, form, None).await;
    assert_problem(response, StatusCode::INSUFFICIENT_STORAGE, "insufficient_storage").await;
    app.assert_nothing_stored(&guest).await;
    assert_eq!(event_used(&app, &event).await, 0);
    std::fs::remove_file(&filler).expect("remove filler");
}

async fn a_creation_longer_than_the_room_above_the_floor_is_refused_and_leaves_no_row(backend: Backend) {
    let _disk = DISK.lock().await;
    let app = spawn_near_the_floor(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Ada").await;

    // A 1 GiB video fits the quota, the event's cap and the size limit, but not the disk.
    let response = create(&app, &guest, 1024 * MIB).await;
    assert_problem(response, StatusCode::INSUFFICIENT_STORAGE, "insufficient_storage").await;
    assert_eq!(app.scalar("SELECT COUNT(*) FROM resumable_uploads").await, 0, "no resource");
    assert_eq!(open_lengths(&app, &event).await, 0, "nothing reserved");

    // What fits above the floor is created.
    created(&app, &guest, 32 * MIB).await;
    assert_eq!(open_lengths(&app, &event).await, 32 * MIB as i64);
}

// ---- the event's storage cap ------------------------------------------------------------------

const CAP: i64 = 5_000_000;

async fn open_resumable_uploads_count_against_the_event_cap_until_cancelled_or_stored(backend: Backend) {
    let app = TestApp::spawn_with(backend, Options { event_storage_cap_bytes: CAP, ..Options::default() }).await;
    let event = app.create_event().await;
    let mut guests = Vec::new();
    for i in 0..6 {
        guests.push(app.join(&event, &format!("Guest {i}")).await);
    }

    // Six guests open 2 MB uploads at once in a 5 MB event: two fit.
    let responses = join_all(guests.iter().map(|guest| create(&app, guest, 2_000_000))).await;
    let mut open = Vec::new();
    let mut refused = Vec::new();
    for (guest, response) in guests.iter().zip(responses) {
        if response.status() == StatusCode::CREATED {
            open.push((guest, text_header(&response, "location")));
        } else {
            let problem = assert_problem(response, StatusCode::PAYLOAD_TOO_LARGE, "event_storage_full").await;
            assert_eq!(
                (problem["cap_bytes"].as_i64(), problem["remaining_bytes"].as_i64()),
                (Some(CAP), Some(1_000_000))
            );
            refused.push(guest);
        }
    }
    assert_eq!((open.len(), refused.len()), (2, 4));
    assert_eq!(app.scalar("SELECT COUNT(*) FROM resumable_uploads").await, 2, "no row for a refused creation");
    assert_eq!(open_lengths(&app, &event).await, 4_000_000);
    assert_eq!(event_used(&app, &event).await, 0, "reserved, not charged");
    for guest in &guests {
        assert_eq!(app.used_bytes(guest).await, 0);
    }

    // A one-request photo larger than what the reservations leave is refused too.
    let response = app.upload(refused[0], &photo(1_500_000), Some(Uuid::new_v4())).await;
    assert_problem(response, StatusCode::PAYLOAD_TOO_LARGE, "event_storage_full").await;
    assert_eq!(app.upload_rows().await, 0);
    assert_eq!(event_used(&app, &event).await, 0);

    // Cancelled: its room is the others' again.
    let (cancelling, location) = &open[0];
    let response = app.client.delete(app.url(location)).bearer_auth(&cancelling.token).send().await.expect("delete");
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    assert_eq!(open_lengths(&app, &event).await, 2_000_000);
    created(&app, refused[0], 2_000_000).await;

    // Stored: charged once, by its bytes, and its reservation gone with the same commit.
    let (storing, location) = &open[1];
    let response = append(&app, storing, location, 0, photo(2_000_000)).await;
    assert_eq!(response.status(), StatusCode::CREATED);
    assert_eq!(event_used(&app, &event).await, 2_000_000);
    assert_eq!(app.used_bytes(storing).await, 2_000_000);
    assert_eq!(open_lengths(&app, &event).await, 2_000_000, "the one still open");

    // Exactly what is left fits, and not a byte more.
    let response = create(&app, refused[1], 1_000_001).await;
    let problem = assert_problem(response, StatusCode::PAYLOAD_TOO_LARGE, "event_storage_full").await;
    assert_eq!(problem["remaining_bytes"].as_i64(), Some(1_000_000), "{problem}");
    created(&app, refused[1], 1_000_000).await;
    assert_eq!(event_used(&app, &event).await + open_lengths(&app, &event).await, CAP);
}

async fn an_expired_resumable_upload_gives_its_room_back(backend: Backend) {
    let options = Options { event_storage_cap_bytes: CAP, resumable_expiry_s: 2, ..Options::default() };
    let app = TestApp::spawn_with(backend, options).await;
    let event = app.create_event().await;
    let (ada, bob) = (app.join(&event, "Ada").await, app.join(&event, "Bob").await);
    created(&app, &ada, 4_000_000).await;
    let response = create(&app, &bob, 2_000_000).await;
    assert_problem(response, StatusCode::PAYLOAD_TOO_LARGE, "event_storage_full").await;

    // Untouched past its expiry, Ada's upload holds nothing, whether or not the sweep has run.
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    created(&app, &bob, 2_000_000).await;
    let response = app.upload(&bob, &photo(2_500_000), Some(Uuid::new_v4())).await;
    assert_eq!(response.status(), StatusCode::CREATED, "a photo fits beside Bob's reservation");
    assert_eq!(event_used(&app, &event).await, 2_500_000);
}

// ---- joining ------------------------------------------------------------------------------

/// Joins as a client at `address` (the test server trusts the loopback proxy's
/// `X-Forwarded-For`).
async fn join_from(app: &TestApp, event: &Event, address: &str) -> reqwest::Response {
    app.client
        .post(app.url(&format!("/api/v1/events/{}/guests", event.slug)))
        .header("x-forwarded-for", address)
        .json(&json!({"join_token": event.join_token, "display_name": "Guest"}))
        .send()
        .await
        .expect("join")
}

async fn guests_of(app: &TestApp, event: &Event) -> i64 {
    number(&app.db, "SELECT COUNT(*) FROM guests WHERE event_id = $1", event.id).await
}

async fn joins_from_one_address_are_budgeted_per_event_and_a_venue_still_gets_in(backend: Backend) {
    let options = Options { trusted_proxy: vec!["127.0.0.1/32".to_owned()], ..Options::default() };
    let app = TestApp::spawn_with(backend, options).await;
    let (wedding, other) = (app.create_event().await, app.create_event().await);
    let venue = "203.0.113.10";

    // The first wave, all behind the venue's one address, within the same second.
    let wave = join_all((0..100).map(|_| join_from(&app, &wedding, venue))).await;
    let statuses: Vec<StatusCode> = wave.iter().map(reqwest::Response::status).collect();
    assert!(statuses.iter().all(|s| *s == StatusCode::CREATED), "{statuses:?}");

    // The next one waits for the budget to refill; no guest is made meanwhile.
    let response = join_from(&app, &wedding, venue).await;
    let retry_after: u64 = text_header(&response, "retry-after").parse().expect("Retry-After");
    let problem = assert_problem(response, StatusCode::TOO_MANY_REQUESTS, "too_many_attempts").await;
    assert!((1..=2).contains(&retry_after), "{retry_after} s");
    assert_eq!(problem["retry_after_s"].as_u64(), Some(retry_after));
    assert_eq!(guests_of(&app, &wedding).await, 100);

    // A phone on mobile data joins, and again after its cookie was cleared; the venue's address
    // joins another event.
    for _ in 0..2 {
        assert_eq!(join_from(&app, &wedding, "198.51.100.7").await.status(), StatusCode::CREATED);
    }
    assert_eq!(join_from(&app, &other, venue).await.status(), StatusCode::CREATED);

    // Once `Retry-After` has passed, the venue's next guest gets in.
    tokio::time::sleep(Duration::from_secs(retry_after)).await;
    assert_eq!(join_from(&app, &wedding, venue).await.status(), StatusCode::CREATED);
    assert_eq!(guests_of(&app, &wedding).await, 103);
}

both_backends!(
    an_append_stops_at_the_free_space_floor_keeping_what_arrived,
    a_one_request_upload_stops_at_the_free_space_floor_and_leaves_nothing,
    a_creation_longer_than_the_room_above_the_floor_is_refused_and_leaves_no_row,
    an_expired_resumable_upload_gives_its_room_back,
    joins_from_one_address_are_budgeted_per_event_and_a_venue_still_gets_in,
);

every_store!(open_resumable_uploads_count_against_the_event_cap_until_cancelled_or_stored);
