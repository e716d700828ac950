//! A `kill -9` that lands while many uploads are creating their S3 multipart uploads leaves
//! none open in the bucket once another instance has cleaned up after the dead one: an upload
//! the store created but whose id the dead instance never recorded is found by listing what is
//! open at the key its staged record names, and aborted.
//!
//! Real processes: `confetti serve` (the binary) on SQLite and on PostgreSQL, with the photos
//! in the tests' S3 server (`s3s-fs` with ListMultipartUploads, `tests/s3s-fs-uploads`). 24
//! guests send 8 MB photos at once. To land the kill in the window between the store's answer
//! and the record every time, not by luck, the database stalls there: the test holds a lock
//! that the record's write waits for (as a database failing over would), so every creation the
//! instance starts is answered by the store and none is recorded when the kill comes. A second
//! round kills without the stall, as the creations begin. A resumable upload, whose id is
//! recorded with its first part's, is checked the same way.

#[allow(dead_code)]
#[path = "scale_out/cluster.rs"]
mod cluster;
mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use bytes::Bytes;
use cluster::{ADMIN_TOKEN, Instance, InstanceSettings};
use common::s3::S3Server;
use common::{Backend, Options, TestApp, images};
use confetti::db::Db;
use futures_util::StreamExt;
use reqwest::StatusCode;
use reqwest::multipart::{Form, Part};
use serde_json::{Value, json};
use tokio::sync::watch;
use uuid::Uuid;

both_backends!(a_kill_while_uploads_create_their_multipart_uploads_leaves_none_open);

const UPLOADS: usize = 24;
const PHOTO_BYTES: usize = 8 * 1024 * 1024;
/// Sent before the signal: within S3's first part (5 MiB), so nothing is created yet.
const HEAD_BYTES: usize = 512 * 1024;
const CHUNK: usize = 64 * 1024;
/// How long the cleanup after the dead instance may take, from the next instance's start: its
/// first round, or the next once the dead one's lease of the round has ended (20 s).
const CLEANED_WITHIN: Duration = Duration::from_secs(90);

/// How the kill lands.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kill {
    /// The records of the ids wait for the database: every creation answered is unrecorded.
    DatabaseStalled,
    /// As the first creation is answered, with nothing held up.
    AsCreationsBegin,
}

/// The shared database, as the test reads and locks it beside the instances.
enum TestDb {
    Sqlite(sqlx::SqlitePool),
    Postgres(sqlx::PgPool),
}

impl TestDb {
    async fn open(url: &str) -> Self {
        if url.starts_with("sqlite:") {
            Self::Sqlite(sqlx::SqlitePool::connect(url).await.expect("the SQLite file"))
        } else {
            Self::Postgres(sqlx::PgPool::connect(url).await.expect("the PostgreSQL database"))
        }
    }

    async fn count(&self, sql: &'static str) -> i64 {
        match self {
            Self::Sqlite(p) => sqlx::query_scalar(sql).fetch_one(p).await,
            Self::Postgres(p) => sqlx::query_scalar(sql).fetch_one(p).await,
        }
        .expect(sql)
    }

    async fn instance_ids(&self) -> Vec<Uuid> {
        let sql = "SELECT id FROM instances";
        match self {
            Self::Sqlite(p) => sqlx::query_scalar(sql).fetch_all(p).await,
            Self::Postgres(p) => sqlx::query_scalar(sql).fetch_all(p).await,
        }
        .expect(sql)
    }

    /// Not heard from for a minute: dead, for any instance that looks.
    async fn silence(&self, instance: Uuid) {
        let (sql, at) =
            ("UPDATE instances SET heartbeat_at = $1 WHERE id = $2", chrono::Utc::now() - chrono::Duration::minutes(1));
        match self {
            Self::Sqlite(p) => sqlx::query(sql).bind(at).bind(instance).execute(p).await.map(|_| ()),
            Self::Postgres(p) => sqlx::query(sql).bind(at).bind(instance).execute(p).await.map(|_| ()),
        }
        .expect("silence the instance");
    }

    /// Holds what a staged upload's record of its multipart id must wait for (reads go on),
    /// until the returned transaction ends.
    async fn stall_records(&self) -> Stall {
        match self {
            Self::Sqlite(p) => {
                let tx = p.begin_with("BEGIN IMMEDIATE").await.expect("SQLite write lock");
                Stall::Sqlite(tx)
            }
            Self::Postgres(p) => {
                let mut tx = p.begin().await.expect("transaction");
                sqlx::query("LOCK TABLE staged_uploads IN SHARE MODE").execute(&mut *tx).await.expect("lock");
                Stall::Postgres(tx)
            }
        }
    }
}

enum Stall {
    Sqlite(sqlx::Transaction<'static, sqlx::Sqlite>),
    Postgres(sqlx::Transaction<'static, sqlx::Postgres>),
}

impl Stall {
    async fn end(self) {
        match self {
            Stall::Sqlite(tx) => tx.rollback().await,
            Stall::Postgres(tx) => tx.rollback().await,
        }
        .expect("end the stall");
    }
}

/// An upload's body: `HEAD_BYTES` of the photo, then, once `go` says so, the rest.
fn held_form(key: Uuid, photo: Bytes, go: watch::Receiver<bool>) -> Form {
    let len = photo.len() as u64;
    let chunks: Vec<Bytes> =
        (0..photo.len()).step_by(CHUNK).map(|i| photo.slice(i..(i + CHUNK).min(photo.len()))).collect();
    let stream = futures_util::stream::iter(chunks.into_iter().enumerate()).then(move |(i, chunk)| {
        let mut go = go.clone();
        async move {
            if i * CHUNK >= HEAD_BYTES {
                let _ = go.wait_for(|go| *go).await;
            }
            Ok::<Bytes, std::io::Error>(chunk)
        }
    });
    let file = Part::stream_with_length(reqwest::Body::wrap_stream(stream), len)
        .file_name("IMG_0001.jpg")
        .mime_str("image/jpeg")
        .expect("mime");
    Form::new().text("client_upload_id", key.to_string()).part("file", file)
}

/// The event's upload URL and a guest token for each upload.
async fn guests(client: &reqwest::Client, base: &str) -> (String, Vec<String>) {
    let response = client
        .post(format!("{base}/api/v1/events"))
        .bearer_auth(ADMIN_TOKEN)
        .json(&json!({"name": "Anna & Ben", "organiser_password": "correct horse"}))
        .send()
        .await
        .expect("create event");
    assert_eq!(response.status(), StatusCode::CREATED);
    let event: Value = response.json().await.expect("event");
    let (slug, join_token) = (event["slug"].as_str().expect("slug"), event["join_token"].as_str().expect("join token"));
    let mut tokens = Vec::new();
    for i in 0..UPLOADS {
        let response = client
            .post(format!("{base}/api/v1/events/{slug}/guests"))
            .json(&json!({"join_token": join_token, "display_name": format!("Guest {i}")}))
            .send()
            .await
            .expect("join");
        assert_eq!(response.status(), StatusCode::CREATED);
        let joined: Value = response.json().await.expect("guest");
        tokens.push(joined["token"].as_str().expect("token").to_owned());
    }
    (format!("{base}/api/v1/events/{slug}/uploads"), tokens)
}

/// Polls `what` every 50 ms until `done` holds of it, at most `limit`; its last value.
async fn poll_until<T, F: Future<Output = T>>(
    limit: Duration,
    mut what: impl FnMut() -> F,
    done: impl Fn(&T) -> bool,
) -> T {
    let started = Instant::now();
    loop {
        let value = what().await;
        if done(&value) || started.elapsed() >= limit {
            return value;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn a_kill_while_uploads_create_their_multipart_uploads_leaves_none_open(backend: Backend) {
    let s3 = S3Server::start();
    assert!(
        s3.lists_open_uploads().await,
        "this test needs an S3 server that lists open multipart uploads: the tests' s3s-fs-uploads \
         (scripts/test.sh installs it: cargo install --locked --path tests/s3s-fs-uploads), not {}",
        common::s3::s3s_fs_binary().display()
    );
    let dir = tempfile::Builder::new().prefix("confetti-orphans-").tempdir().expect("temp dir");
    let pg;
    let database_url = match backend {
        Backend::Sqlite => format!("sqlite://{}", dir.path().join("shared.db").display()),
        _ => {
            pg = common::fresh_postgres_database().await;
            pg.to_string()
        }
    };
    let photo = Bytes::from(images::jpeg_of_about(PHOTO_BYTES));
    assert!(photo.len() > 5 * 1024 * 1024 + HEAD_BYTES, "larger than one part: {} bytes", photo.len());
    let names: [&'static str; 3] = ["first", "second", "third"];
    let mut instances: Vec<Instance> = names.iter().map(|name| Instance::new(name, dir.path())).collect();
    let settings = |public: &Instance| InstanceSettings {
        database_url: database_url.clone(),
        public_url: format!("http://{}", public.addr()),
        s3_env: s3.env(),
        storage_url: s3.storage_url(),
        extra_env: vec![("CONFETTI_DERIVATIVE_WORKERS".to_owned(), "0".to_owned())],
    };
    let binary = Path::new(env!("CARGO_BIN_EXE_confetti"));
    let client = reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(120)).build().expect("client");

    for (round, kill) in [Kill::DatabaseStalled, Kill::AsCreationsBegin].into_iter().enumerate() {
        let (victim, next) = instances.split_at_mut(round + 1);
        let victim = &mut victim[round];
        if round == 0 {
            victim.start(binary, &settings(victim));
            victim.wait_healthy(Duration::from_secs(60)).await;
        }
        let db = TestDb::open(&database_url).await;
        let base = format!("http://{}", victim.addr());
        let (url, tokens) = guests(&client, &base).await;

        // Every upload begins (its record is written) and stops within its first part.
        let (go, wait) = watch::channel(false);
        let sending: Vec<_> = tokens
            .into_iter()
            .map(|token| {
                let request = client.post(&url).bearer_auth(token).multipart(held_form(
                    Uuid::new_v4(),
                    photo.clone(),
                    wait.clone(),
                ));
                tokio::spawn(async move { request.send().await.map(|r| r.status()) })
            })
            .collect();
        let staged = poll_until(
            Duration::from_secs(30),
            || db.count("SELECT COUNT(*) FROM staged_uploads"),
            |n| *n == UPLOADS as i64,
        )
        .await;
        assert_eq!(staged, UPLOADS as i64, "{kill:?}: every upload is being received");
        assert_eq!(s3.open_multipart_uploads(), 0, "{kill:?}: none has filled a part yet");

        let stall = match kill {
            Kill::DatabaseStalled => Some(db.stall_records().await),
            Kill::AsCreationsBegin => None,
        };
        go.send_replace(true);
        let open_at_kill = match kill {
            // Every creation the instance can start at once (one per database connection):
            // until their number stops growing for half a second.
            Kill::DatabaseStalled => {
                let first = poll_until(Duration::from_secs(15), || async { s3.open_multipart_uploads() }, |n| *n > 0);
                let (mut last, mut since, started) = (first.await, Instant::now(), Instant::now());
                while since.elapsed() < Duration::from_millis(700) && started.elapsed() < Duration::from_secs(8) {
                    let now = s3.open_multipart_uploads();
                    if now != last {
                        (last, since) = (now, Instant::now());
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                last
            }
            Kill::AsCreationsBegin => {
                poll_until(Duration::from_secs(10), || async { s3.open_multipart_uploads() }, |n| *n > 0).await
            }
        };
        let recorded_at_kill = db.count("SELECT COUNT(*) FROM staged_uploads WHERE multipart_id IS NOT NULL").await;
        victim.kill9();
        if let Some(stall) = stall {
            stall.end().await;
        }
        for request in sending {
            let _ = request.await;
        }
        let open_after_kill = s3.open_multipart_uploads();
        let recorded = db.count("SELECT COUNT(*) FROM staged_uploads WHERE multipart_id IS NOT NULL").await;
        eprintln!(
            "{backend:?}, {kill:?}: killed with {open_at_kill} multipart uploads open ({recorded_at_kill} ids recorded); \
             after the kill {open_after_kill} open, {recorded} ids recorded"
        );
        assert!(open_after_kill > 0, "{kill:?}: the kill landed while multipart uploads were being created");
        if kill == Kill::DatabaseStalled {
            assert!(
                open_after_kill as i64 > recorded,
                "{kill:?}: the kill landed between the store's answer and the record: {open_after_kill} open, {recorded} recorded"
            );
        }

        // The dead instance is found by the next one, which cleans up after it.
        let dead = db.instance_ids().await;
        for id in &dead {
            db.silence(*id).await;
        }
        let survivor = &mut next[0];
        survivor.start(binary, &settings(survivor));
        survivor.wait_healthy(Duration::from_secs(60)).await;
        let started = Instant::now();
        let left = poll_until(
            CLEANED_WITHIN,
            || async {
                let staged = db.count("SELECT COUNT(*) FROM staged_uploads").await;
                (
                    s3.open_multipart_uploads(),
                    s3.open_part_files(),
                    staged,
                    common::all_files(&s3.bucket_dir().join("originals")).len(),
                )
            },
            |left| *left == (0, 0, 0, 0),
        )
        .await;
        assert_eq!(
            left,
            (0, 0, 0, 0),
            "{backend:?}, {kill:?}: {CLEANED_WITHIN:?} after the next instance started, left (open multipart uploads, \
             part files, staged records, originals) of {open_after_kill} open after the kill; its log:\n{}",
            cluster::tail(&survivor.log, 30)
        );
        eprintln!(
            "{backend:?}, {kill:?}: clean {:.1} s after the next instance started",
            started.elapsed().as_secs_f64()
        );
    }
    for instance in &mut instances {
        instance.kill9();
    }
}

mod a_resumable_uploads_multipart_upload_left_unrecorded_is_aborted {
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn s3() {
        super::a_resumable_uploads_multipart_upload_left_unrecorded_is_aborted().await
    }
}

/// A resumable upload's request records its multipart upload's id with its first part's: one
/// that dies in between leaves an upload open at the resource's key that its row does not name.
/// The request that sends the first part again aborts it, and so does the resource's removal.
async fn a_resumable_uploads_multipart_upload_left_unrecorded_is_aborted() {
    let app = TestApp::spawn_with(Backend::S3, Options { resumable_expiry_s: 2, ..Options::default() }).await;
    let s3 = app.s3.clone().expect("an S3 server");
    assert!(s3.lists_open_uploads().await, "this test needs the tests' s3s-fs-uploads (scripts/test.sh installs it)");
    let event = app.create_event().await;
    let guest = app.join(&event, "Ada").await;
    // A JPEG's head, then noise: past one S3 part.
    let mut file = images::jpeg(64, 48);
    file.extend((0..6 * 1024 * 1024u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
    for removed in [false, true] {
        let response = app
            .client
            .post(app.url(&format!("/api/v1/events/{}/uploads/resumable", guest.slug)))
            .bearer_auth(&guest.token)
            .header("Upload-Complete", "?0")
            .header("Upload-Length", file.len().to_string())
            .header(
                "Upload-Metadata",
                format!("client_upload_id {},filename {}", b64(&Uuid::new_v4().to_string()), b64("clip.jpg")),
            )
            .send()
            .await
            .expect("create");
        assert_eq!(response.status(), StatusCode::CREATED);
        let location = response.headers()["location"].to_str().expect("location").to_owned();
        let sql = "SELECT event_id, id FROM resumable_uploads WHERE state = 'open'";
        let (event_id, id): (Uuid, Uuid) = match &app.db {
            Db::Sqlite(p) => sqlx::query_as(sql).fetch_one(p).await,
            Db::Postgres(p) => sqlx::query_as(sql).fetch_one(p).await,
        }
        .expect("the resource");
        s3.leave_multipart_upload_open(&format!("originals/{event_id}/{id}")).await;
        assert_eq!(s3.open_multipart_uploads(), 1);

        if removed {
            let response =
                app.client.delete(app.url(&location)).bearer_auth(&guest.token).send().await.expect("cancel");
            assert_eq!(response.status(), StatusCode::NO_CONTENT);
            let gone = poll_until(
                Duration::from_secs(15),
                || app.scalar("SELECT COUNT(*) FROM resumable_uploads"),
                |rows| *rows == 0,
            )
            .await;
            assert_eq!(gone, 0, "the cancelled resource is removed");
        } else {
            let response = app
                .client
                .patch(app.url(&location))
                .bearer_auth(&guest.token)
                .header("Content-Type", "application/partial-upload")
                .header("Upload-Offset", "0")
                .header("Upload-Complete", "?1")
                .body(file.clone())
                .send()
                .await
                .expect("append");
            assert_eq!(response.status(), StatusCode::CREATED, "the file completes");
        }
        assert_eq!(
            s3.open_multipart_uploads(),
            0,
            "the upload no row named is aborted ({})",
            if removed { "by the removal" } else { "by the request that sent the first part" }
        );
        assert_eq!(s3.open_part_files(), 0);
    }
}

fn b64(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text)
}
