//! Completing a resumable upload, on every store, with a 1 s lease: a completion slower than its
//! lease keeps it (renewed) and commits once, while `HEAD` says to ask again and a retry is told
//! `upload_busy` (SQLite, whose one writer queues the retry behind the commit: the stored
//! upload); a cancellation during it is refused, never 204 while the photo ends up stored; a
//! commit that fails inside keeps the bytes and the resource open, and a retry stores the photo
//! once, charged once; and one that stopped between assembling the file and recording it is
//! finished by the retry from the assembled bytes. The database is made slow or failing by
//! triggers.

mod common;

use std::time::{Duration, Instant};

use base64::Engine;
use bytes::Bytes;
use common::{Backend, Options, TestApp, assert_problem, images};
use confetti::db::Db;
use reqwest::StatusCode;
use serde_json::Value;
use uuid::Uuid;

/// Over one S3 part, so that the last request completes a multipart upload and, on S3, the
/// file is read back whole before the commit.
const FILE_BYTES: usize = 6 * 1024 * 1024 + 4321;
/// The bytes sent before the last request.
const FIRST_PIECE: usize = 3 * 1024 * 1024;

/// A real JPEG followed by noise up to `FILE_BYTES`.
fn photo() -> Vec<u8> {
    images::jpeg_padded(FILE_BYTES)
}

async fn execute(db: &Db, sql: &'static str) {
    match db {
        Db::Sqlite(p) => sqlx::raw_sql(sql).execute(p).await.map(|_| ()),
        Db::Postgres(p) => sqlx::raw_sql(sql).execute(p).await.map(|_| ()),
    }
    .expect(sql)
}

/// Installs the switches: `slow` makes each upload's insert take seconds (PostgreSQL sleeps
/// 3 s; SQLite counts a cross join for about two seconds, holding its one write lock), `fail`
/// makes it fail, `fail_mark` makes recording a resource's assembled bytes fail.
async fn install_faults(app: &TestApp) {
    if app.backend.is_postgres() {
        for sql in [
            "CREATE TABLE faults (slow BOOLEAN NOT NULL, fail BOOLEAN NOT NULL, fail_mark BOOLEAN NOT NULL)",
            "INSERT INTO faults VALUES (FALSE, FALSE, FALSE)",
            "CREATE FUNCTION faulty_upload() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN
                 IF (SELECT slow FROM faults) THEN PERFORM pg_sleep(3); END IF;
                 IF (SELECT fail FROM faults) THEN RAISE EXCEPTION 'the database hiccups'; END IF;
                 RETURN NEW;
             END $$",
            "CREATE TRIGGER faulty BEFORE INSERT ON uploads FOR EACH ROW EXECUTE FUNCTION faulty_upload()",
            "CREATE FUNCTION faulty_mark() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN
                 IF NEW.assembled AND NOT OLD.assembled AND (SELECT fail_mark FROM faults) THEN
                     RAISE EXCEPTION 'the database hiccups';
                 END IF;
                 RETURN NEW;
             END $$",
            "CREATE TRIGGER faulty_mark BEFORE UPDATE ON resumable_uploads FOR EACH ROW EXECUTE FUNCTION faulty_mark()",
        ] {
            execute(&app.db, sql).await;
        }
        return;
    }
    for sql in [
        "CREATE TABLE faults (slow BOOLEAN NOT NULL, fail BOOLEAN NOT NULL, fail_mark BOOLEAN NOT NULL)",
        "INSERT INTO faults VALUES (0, 0, 0)",
        "CREATE TABLE spin (x INTEGER NOT NULL)",
        "INSERT INTO spin WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 350) SELECT x FROM c",
        "CREATE TRIGGER faulty_slow BEFORE INSERT ON uploads WHEN (SELECT slow FROM faults)
         BEGIN SELECT COUNT(*) FROM spin a, spin b, spin c WHERE a.x * b.x + c.x > 0; END",
        "CREATE TRIGGER faulty_fail BEFORE INSERT ON uploads WHEN (SELECT fail FROM faults)
         BEGIN SELECT RAISE(ABORT, 'the database hiccups'); END",
        "CREATE TRIGGER faulty_mark BEFORE UPDATE OF assembled ON resumable_uploads
         WHEN NEW.assembled AND NOT OLD.assembled AND (SELECT fail_mark FROM faults)
         BEGIN SELECT RAISE(ABORT, 'the database hiccups'); END",
    ] {
        execute(&app.db, sql).await;
    }
}

struct Resource<'a> {
    app: &'a TestApp,
    token: String,
    location: String,
}

impl<'a> Resource<'a> {
    /// A resource for `photo()` with its first piece kept.
    async fn started(app: &'a TestApp, guest: &common::Guest, file: &[u8]) -> Self {
        let b64 = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
        let response = app
            .client
            .post(app.url(&format!("/api/v1/events/{}/uploads/resumable", guest.slug)))
            .bearer_auth(&guest.token)
            .header("Upload-Complete", "?0")
            .header("Upload-Length", file.len().to_string())
            .header(
                "Upload-Metadata",
                format!("client_upload_id {},filename {}", b64(&Uuid::new_v4().to_string()), b64("party.jpg")),
            )
            .send()
            .await
            .expect("create");
        assert_eq!(response.status(), StatusCode::CREATED);
        let location = header(&response, "location");
        let resource = Resource { app, token: guest.token.clone(), location };
        let response = resource.patch(0, false, file[..FIRST_PIECE].to_vec()).await;
        assert_eq!(response.status(), StatusCode::NO_CONTENT);
        resource
    }

    async fn patch(&self, offset: usize, complete: bool, body: Vec<u8>) -> reqwest::Response {
        self.app
            .client
            .patch(self.app.url(&self.location))
            .bearer_auth(&self.token)
            .header("Content-Type", "application/partial-upload")
            .header("Upload-Offset", offset.to_string())
            .header("Upload-Complete", if complete { "?1" } else { "?0" })
            .body(body)
            .send()
            .await
            .expect("append")
    }

    async fn head(&self) -> reqwest::Response {
        self.app.client.head(self.app.url(&self.location)).bearer_auth(&self.token).send().await.expect("head")
    }

    async fn delete(&self) -> reqwest::Response {
        self.app.client.delete(self.app.url(&self.location)).bearer_auth(&self.token).send().await.expect("delete")
    }
}

fn header(response: &reqwest::Response, name: &str) -> String {
    response.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned()
}

/// Waits until a request has assembled the file and is storing it.
async fn assembled(app: &TestApp) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while app.scalar("SELECT COUNT(*) FROM resumable_uploads WHERE assembled AND state = 'open'").await == 0 {
        assert!(Instant::now() < deadline, "the last piece was never assembled");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
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

/// An instance with a 1 s lease and the fault switches, a guest, and the file.
async fn with_faults(backend: Backend) -> (TestApp, common::Guest, Vec<u8>) {
    let app = TestApp::spawn_with(backend, Options { resumable_lease_s: 1, ..Options::default() }).await;
    install_faults(&app).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Ada").await;
    (app, guest, photo())
}

/// The last piece, sent while the switch `on` makes the database fail: 500, nothing stored.
async fn last_piece_fails(resource: &Resource<'_>, file: &[u8], on: &'static str) {
    execute(&resource.app.db, on).await;
    let response = resource.patch(FIRST_PIECE, true, file[FIRST_PIECE..].to_vec()).await;
    assert_problem(response, StatusCode::INTERNAL_SERVER_ERROR, "internal").await;
    assert_eq!(resource.app.upload_rows().await, 0);
}

/// `response` stored the file: byte for byte, once, charged once, and only the original left
/// (no partial file, no tail object, no assembled copy).
async fn stored_once(app: &TestApp, guest: &common::Guest, file: &[u8], response: reqwest::Response) {
    assert_eq!(response.status(), StatusCode::CREATED);
    assert_eq!(header(&response, "upload-complete"), "?1");
    let stored: Value = response.json().await.expect("json");
    let id = stored["id"].as_str().expect("id").to_owned();
    assert_eq!(stored["bytes"].as_u64(), Some(file.len() as u64));
    assert_eq!(original(app, &guest.token, &id).await, Bytes::copy_from_slice(file), "byte for byte");
    assert_eq!(app.upload_rows().await, 1, "stored once");
    assert_eq!(app.used_bytes(guest).await, file.len() as i64, "charged once");
    let left: Vec<_> = app.blob_files().into_iter().filter(|p| !p.to_string_lossy().contains("originals")).collect();
    assert!(left.is_empty(), "{left:?}");
}

async fn a_completion_slower_than_its_lease_commits_once_while_a_retry_is_told_to_wait(backend: Backend) {
    let (app, guest, file) = with_faults(backend).await;
    let resource = Resource::started(&app, &guest, &file).await;

    execute(&app.db, "UPDATE faults SET slow = TRUE").await;
    let rest = file[FIRST_PIECE..].to_vec();
    let started = Instant::now();
    let (last, _) = tokio::join!(resource.patch(FIRST_PIECE, true, rest), async {
        assembled(&app).await;
        if backend.is_postgres() {
            // Past the 1 s lease: renewed, so HEAD still says the photo is being stored.
            tokio::time::sleep(Duration::from_millis(1500)).await;
            let head = resource.head().await;
            assert_eq!(head.status(), StatusCode::NO_CONTENT);
            assert_eq!(header(&head, "upload-complete"), "?0");
            assert_eq!(header(&head, "upload-offset"), file.len().to_string());
            assert_eq!(header(&head, "retry-after"), "1", "{:?}", head.headers());
            // The page's retry (its stall watchdog): told to wait, not taking over.
            let retry = resource.patch(file.len(), true, Vec::new()).await;
            assert_eq!(header(&retry, "upload-offset"), file.len().to_string());
            assert_problem(retry, StatusCode::CONFLICT, "upload_busy").await;
            return;
        }
        // SQLite: the commit holds the one write lock; the retry queues behind it and is
        // answered with the stored upload, or told to wait when it came first.
        let head = resource.head().await;
        assert_eq!((head.status(), header(&head, "upload-complete")), (StatusCode::NO_CONTENT, "?0".to_owned()));
        assert_eq!(header(&head, "upload-offset"), file.len().to_string());
        let retry = resource.patch(file.len(), true, Vec::new()).await;
        assert!(matches!(retry.status(), StatusCode::OK | StatusCode::CONFLICT), "{}", retry.status());
    });
    assert!(started.elapsed() > Duration::from_secs(1), "the completion outlasted its lease");
    // The request that stored it says so (or, when its renewal saw the commit first, replays it).
    assert!(matches!(last.status(), StatusCode::CREATED | StatusCode::OK), "{}", last.status());
    assert_eq!(header(&last, "upload-complete"), "?1");
    let stored: Value = last.json().await.expect("json");
    let id = stored["id"].as_str().expect("id").to_owned();

    let retry = resource.patch(file.len(), true, Vec::new()).await;
    assert_eq!(retry.status(), StatusCode::OK);
    assert_eq!(header(&retry, "idempotent-replayed"), "true");
    let replayed: Value = retry.json().await.expect("json");
    assert_eq!(replayed["id"], id.as_str());
    assert_eq!(header(&resource.head().await, "upload-complete"), "?1");
    assert_eq!(app.upload_rows().await, 1, "stored once");
    assert_eq!(app.used_bytes(&guest).await, file.len() as i64, "charged once");
    assert_eq!(original(&app, &guest.token, &id).await, Bytes::from(file), "byte for byte");
}

async fn a_cancel_during_completion_never_says_cancelled_while_the_photo_is_stored(backend: Backend) {
    let (app, guest, file) = with_faults(backend).await;
    let resource = Resource::started(&app, &guest, &file).await;

    execute(&app.db, "UPDATE faults SET slow = TRUE").await;
    let rest = file[FIRST_PIECE..].to_vec();
    let (last, cancel) = tokio::join!(resource.patch(FIRST_PIECE, true, rest), async {
        assembled(&app).await;
        let response = resource.delete().await;
        let status = response.status();
        let problem = (status != StatusCode::NO_CONTENT).then_some(response);
        (status, problem)
    });
    let (cancel_status, problem) = cancel;
    let rows = app.upload_rows().await;
    if cancel_status == StatusCode::NO_CONTENT {
        // Cancelled before anything was stored: no photo, no charge, the resource gone.
        assert_eq!(rows, 0, "a 204 while the photo was stored");
        assert_eq!(app.used_bytes(&guest).await, 0);
        assert_eq!(resource.head().await.status(), StatusCode::NOT_FOUND);
        assert!(!matches!(last.status(), StatusCode::CREATED | StatusCode::OK), "{}", last.status());
    } else {
        assert_problem(problem.expect("a refusal"), StatusCode::CONFLICT, "upload_busy").await;
        assert!(matches!(last.status(), StatusCode::CREATED | StatusCode::OK), "{}", last.status());
        assert_eq!(rows, 1, "stored once");
        assert_eq!(app.used_bytes(&guest).await, file.len() as i64);
        assert_eq!(header(&resource.head().await, "upload-complete"), "?1");
    }
    // Both ways are possible on SQLite; PostgreSQL renews the lease during the slow insert,
    // so the cancel always finds the completion at work.
    if backend.is_postgres() {
        assert_eq!(cancel_status, StatusCode::CONFLICT);
    }
}

async fn a_commit_that_fails_keeps_the_bytes_and_a_retry_stores_the_photo_once(backend: Backend) {
    let (app, guest, file) = with_faults(backend).await;
    let resource = Resource::started(&app, &guest, &file).await;

    last_piece_fails(&resource, &file, "UPDATE faults SET fail = TRUE").await;
    // Nothing stored or charged, the resource open with every byte, for a retry.
    assert_eq!(app.used_bytes(&guest).await, 0);
    let head = resource.head().await;
    assert_eq!(head.status(), StatusCode::NO_CONTENT);
    assert_eq!(header(&head, "upload-complete"), "?0");
    assert_eq!(header(&head, "upload-offset"), file.len().to_string());
    assert!(!app.blob_files().is_empty(), "the bytes are kept");

    // A retry while the database still fails: the same, and still nothing thrown away.
    let response = resource.patch(file.len(), true, Vec::new()).await;
    assert_problem(response, StatusCode::INTERNAL_SERVER_ERROR, "internal").await;
    assert_eq!(header(&resource.head().await, "upload-offset"), file.len().to_string());

    execute(&app.db, "UPDATE faults SET fail = FALSE").await;
    stored_once(&app, &guest, &file, resource.patch(file.len(), true, Vec::new()).await).await;
    let response = resource.patch(file.len(), true, Vec::new()).await;
    assert_eq!(response.status(), StatusCode::OK, "a replay");
    assert_eq!(app.upload_rows().await, 1, "stored once");
}

async fn a_completion_stopped_before_recording_its_assembled_bytes_is_finished_by_the_retry(backend: Backend) {
    let (app, guest, file) = with_faults(backend).await;
    let resource = Resource::started(&app, &guest, &file).await;

    // The file is assembled (renamed on disk, the multipart upload completed and its tail
    // deleted on S3), then the database fails before the row says so.
    last_piece_fails(&resource, &file, "UPDATE faults SET fail_mark = TRUE").await;
    execute(&app.db, "UPDATE faults SET fail_mark = FALSE").await;

    // The client goes on from the offset the row has: the file is stored from the assembled
    // bytes, once, rather than the resource being given up for lost.
    let head = resource.head().await;
    assert_eq!(head.status(), StatusCode::NO_CONTENT);
    let offset: usize = header(&head, "upload-offset").parse().expect("offset");
    assert!(offset < file.len(), "{offset}");
    stored_once(&app, &guest, &file, resource.patch(offset, true, file[offset..].to_vec()).await).await;
}

every_store!(
    a_completion_slower_than_its_lease_commits_once_while_a_retry_is_told_to_wait,
    a_cancel_during_completion_never_says_cancelled_while_the_photo_is_stored,
    a_commit_that_fails_keeps_the_bytes_and_a_retry_stores_the_photo_once,
    a_completion_stopped_before_recording_its_assembled_bytes_is_finished_by_the_retry,
);
