//! The test harness: the real server (the same `serve` as production) on a random port,
//! against a fresh SQLite file or a fresh PostgreSQL database, and typed helpers to drive it
//! over HTTP and to look at what it left behind (rows, blobs, quota).
#![allow(dead_code)]

pub mod failing_store;
pub mod fault_proxy;
pub mod generated;
pub mod icc;
pub mod images;
pub mod reading;
pub mod restored;
pub mod s3;
pub mod tls;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use confetti::app::{self, AppState};
use confetti::db::Db;
use confetti::settings::Settings;
use reqwest::StatusCode;
use reqwest::multipart::{Form, Part};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use uuid::Uuid;

pub const ADMIN_TOKEN: &str = "test-admin-token";
const DEFAULT_PG: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// What an instance runs on: its database and where it keeps photos.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// SQLite, photos in a local directory: the default setup.
    Sqlite,
    /// PostgreSQL, photos in a local directory.
    Postgres,
    /// PostgreSQL, photos in a real S3-protocol server (`s3s-fs`): the scale-out setup.
    S3,
}

impl Backend {
    pub fn is_postgres(self) -> bool {
        matches!(self, Backend::Postgres | Backend::S3)
    }
}

/// Runs one async test function once per backend: `both_backends!(name);` makes
/// `name::sqlite` and `name::postgres`.
#[macro_export]
macro_rules! both_backends {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn sqlite() {
                    super::$name($crate::common::Backend::Sqlite).await
                }
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn postgres() {
                    super::$name($crate::common::Backend::Postgres).await
                }
            }
        )*
    };
}

/// `both_backends!` and, for tests of what is stored, a third run with the photos in a real
/// S3-protocol server: `every_store!(name);` makes `name::sqlite`, `name::postgres` and `name::s3`.
#[macro_export]
macro_rules! every_store {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn sqlite() {
                    super::$name($crate::common::Backend::Sqlite).await
                }
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn postgres() {
                    super::$name($crate::common::Backend::Postgres).await
                }
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn s3() {
                    super::$name($crate::common::Backend::S3).await
                }
            }
        )*
    };
}

#[derive(Clone, Debug)]
pub struct Options {
    pub max_upload_bytes: u64,
    pub max_image_pixels: u64,
    pub guest_quota_bytes: i64,
    pub idempotency_lease_s: u64,
    pub idempotency_retention_s: u64,
    /// `Some(0)`: this instance makes no derivatives.
    pub derivative_workers: Option<usize>,
    /// How long a derivative worker holds a job before another may take it over.
    pub derivative_lease_s: u64,
    pub header_timeout_s: u64,
    pub body_idle_timeout_s: u64,
    pub max_connections: Option<usize>,
    pub trusted_proxy: Vec<String>,
    pub organiser_session_s: u64,
    pub event_storage_cap_bytes: i64,
    /// 0 in tests: a test machine's disk may be fuller than a server's.
    pub min_free_bytes: u64,
    /// Another photo store than a directory in `data_dir` (one that fails on demand).
    pub blob_store: Option<confetti::blobs::BlobStore>,
    /// How long an organiser may undo a delete (0: the bytes go at once).
    pub undo_grace_s: u64,
    pub max_video_bytes: u64,
    pub max_video_seconds: u64,
    /// Seconds an untouched resumable upload is kept.
    pub resumable_expiry_s: u64,
    /// The program that makes video posters.
    pub ffmpeg: PathBuf,
    pub resumable_lease_s: u64,
    /// Bytes of small derivatives the instance keeps in memory.
    pub derivative_cache_bytes: u64,
    /// Seconds before the admin's webhook is called for a photo waiting for review, and before a failed call is tried again.
    pub webhook_delay_s: u64,
    pub webhook_retry_s: u64,
}

/// The server's own defaults (`confetti::settings::defaults`), except where a test machine
/// differs from a server: no free-space floor.
impl Default for Options {
    fn default() -> Self {
        use confetti::settings::defaults::*;
        Self {
            max_upload_bytes: MAX_UPLOAD_BYTES,
            max_image_pixels: MAX_IMAGE_PIXELS,
            guest_quota_bytes: GUEST_QUOTA_BYTES,
            idempotency_lease_s: IDEMPOTENCY_LEASE_S,
            idempotency_retention_s: IDEMPOTENCY_RETENTION_S,
            derivative_workers: None,
            derivative_lease_s: DERIVATIVE_LEASE_S,
            header_timeout_s: HEADER_TIMEOUT_S,
            body_idle_timeout_s: BODY_IDLE_TIMEOUT_S,
            max_connections: None,
            trusted_proxy: Vec::new(),
            organiser_session_s: ORGANISER_SESSION_S,
            event_storage_cap_bytes: EVENT_STORAGE_CAP_BYTES,
            min_free_bytes: 0,
            blob_store: None,
            undo_grace_s: UNDO_GRACE_S,
            max_video_bytes: MAX_VIDEO_BYTES,
            max_video_seconds: MAX_VIDEO_SECONDS,
            resumable_expiry_s: RESUMABLE_EXPIRY_S,
            ffmpeg: PathBuf::from(FFMPEG),
            resumable_lease_s: RESUMABLE_LEASE_S,
            derivative_cache_bytes: DERIVATIVE_CACHE_BYTES,
            webhook_delay_s: WEBHOOK_DELAY_S,
            webhook_retry_s: WEBHOOK_RETRY_S,
        }
    }
}

/// One running Confetti instance.
pub struct TestApp {
    pub backend: Backend,
    pub addr: SocketAddr,
    pub base: String,
    pub client: reqwest::Client,
    pub db: Db,
    /// The running instance's state, for tests that call a job directly.
    pub state: AppState,
    pub data_dir: Arc<tempfile::TempDir>,
    pub database_url: Option<TestDatabase>,
    /// The S3 server of `Backend::S3`, shared by the instances of one test.
    pub s3: Option<Arc<s3::S3Server>>,
    pub options: Options,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

/// A fresh PostgreSQL database on the server `TEST_DATABASE_URL` names, dropped again when
/// the last handle to it goes.
pub async fn fresh_postgres_database() -> TestDatabase {
    let server = std::env::var("TEST_DATABASE_URL").unwrap_or_else(|_| DEFAULT_PG.to_owned());
    let name = format!("test_{}", Uuid::new_v4().simple());
    let admin = sqlx::PgPool::connect(&server)
        .await
        .unwrap_or_else(|e| panic!("PostgreSQL at {server} is needed for the tests (set TEST_DATABASE_URL): {e}"));
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&admin)
        .await
        .expect("create test database");
    admin.close().await;
    let base = server.rsplit_once('/').map(|(b, _)| b).unwrap_or(&server);
    let url = format!("{base}/{name}");
    TestDatabase(Arc::new(DatabaseHandle { url, server, name }))
}

/// A test's PostgreSQL database, read as its URL. Instances sharing it or restarting on it, and
/// a test reading it after its server stopped, hold clones; the last one to go drops it.
#[derive(Clone, Debug)]
pub struct TestDatabase(Arc<DatabaseHandle>);

#[derive(Debug)]
struct DatabaseHandle {
    url: String,
    server: String,
    name: String,
}

impl std::ops::Deref for TestDatabase {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0.url
    }
}

impl Drop for DatabaseHandle {
    fn drop(&mut self) {
        let (server, statement) = (self.server.clone(), format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name));
        // Drop runs inside the test's runtime: the statement gets a thread and runtime of its own.
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().ok()?;
            runtime.block_on(async {
                let drop = async {
                    let admin = sqlx::PgPool::connect(&server).await.ok()?;
                    let done = sqlx::query(sqlx::AssertSqlSafe(statement)).execute(&admin).await.ok();
                    admin.close().await;
                    done
                };
                tokio::time::timeout(Duration::from_secs(10), drop).await.ok().flatten()
            })
        })
        .join();
        if !matches!(dropped, Ok(Some(_))) {
            eprintln!("could not drop the test database {}; the next scripts/test.sh drops it", self.name);
        }
    }
}

/// What the instances of one test share: data directory, database, S3 server.
struct Shared {
    data_dir: Arc<tempfile::TempDir>,
    database_url: Option<TestDatabase>,
    s3: Option<Arc<s3::S3Server>>,
}

/// The photo store in `server`'s bucket, reached as an operator's `AWS_*` settings would.
pub fn s3_store(server: &s3::S3Server) -> confetti::blobs::BlobStore {
    // As `confetti serve` reaches a bucket by default: bodies unsigned (see `BlobStore::open`).
    let mut settings = object_store::aws::AmazonS3Builder::new().with_unsigned_payload(true);
    for (key, value) in server.env() {
        if let Ok(key) = key.to_ascii_lowercase().parse() {
            settings = settings.with_config(key, value);
        }
    }
    confetti::blobs::BlobStore::s3(&server.storage_url(), settings).expect("S3 photo store")
}

/// The server's warnings and errors go to the test's captured output, shown when it fails
/// (`RUST_LOG` widens them): a 500 in CI then says why.
fn show_server_logs() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let filter = tracing_subscriber::EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
        let _ = tracing_subscriber::fmt().with_env_filter(filter).with_test_writer().try_init();
    });
}

impl TestApp {
    pub async fn spawn(backend: Backend) -> Self {
        Self::spawn_with(backend, Options::default()).await
    }

    pub async fn spawn_with(backend: Backend, options: Options) -> Self {
        let data_dir = Arc::new(tempfile::tempdir().expect("temp dir"));
        let database_url = match backend {
            Backend::Sqlite => None,
            Backend::Postgres | Backend::S3 => Some(fresh_postgres_database().await),
        };
        let s3 = (backend == Backend::S3).then(|| Arc::new(s3::S3Server::start()));
        Self::start(backend, options, Shared { data_dir, database_url, s3 }).await
    }

    /// A second instance on the same database and the same blob store.
    pub async fn spawn_sharing(other: &TestApp) -> Self {
        Self::start(other.backend, other.options.clone(), other.shared()).await
    }

    fn shared(&self) -> Shared {
        Shared { data_dir: self.data_dir.clone(), database_url: self.database_url.clone(), s3: self.s3.clone() }
    }

    /// This instance again after `stop`: same database, same blobs.
    pub async fn restart(self) -> Self {
        let options = self.options.clone();
        self.restart_with(options).await
    }

    /// This instance again after `stop`, with other options.
    pub async fn restart_with(self, options: Options) -> Self {
        let (backend, shared) = (self.backend, self.shared());
        self.stop().await;
        Self::start(backend, options, shared).await
    }

    async fn start(backend: Backend, options: Options, shared: Shared) -> Self {
        let Shared { data_dir, database_url, s3 } = shared;
        show_server_logs();
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let settings = Settings {
            database_url: database_url.as_deref().map(str::to_owned),
            max_upload_bytes: options.max_upload_bytes,
            max_image_pixels: options.max_image_pixels,
            guest_quota_bytes: options.guest_quota_bytes,
            idempotency_lease_s: options.idempotency_lease_s,
            idempotency_retention_s: options.idempotency_retention_s,
            derivative_workers: options.derivative_workers,
            derivative_lease: Duration::from_secs(options.derivative_lease_s),
            header_timeout: Duration::from_secs(options.header_timeout_s),
            body_idle_timeout: Duration::from_secs(options.body_idle_timeout_s),
            max_connections: options.max_connections,
            trusted_proxies: options.trusted_proxy.clone(),
            organiser_session: Duration::from_secs(options.organiser_session_s),
            event_storage_cap_bytes: options.event_storage_cap_bytes,
            min_free_bytes: options.min_free_bytes,
            derivative_cache_bytes: options.derivative_cache_bytes,
            undo_grace: Duration::from_secs(options.undo_grace_s),
            max_video_bytes: options.max_video_bytes,
            max_video_seconds: options.max_video_seconds,
            resumable_expiry_s: options.resumable_expiry_s,
            ffmpeg: options.ffmpeg.clone(),
            resumable_lease: Duration::from_secs(options.resumable_lease_s),
            webhook_delay: Duration::from_secs(options.webhook_delay_s),
            webhook_retry: Duration::from_secs(options.webhook_retry_s),
            // The test binary is not Confetti: its workers are the built server's.
            media_worker: PathBuf::from(env!("CARGO_BIN_EXE_confetti")),
            ..Settings::new(data_dir.path(), &format!("http://{addr}"))
        };
        let blobs = options.blob_store.clone().or_else(|| s3.as_deref().map(s3_store));
        let state = match blobs {
            Some(blobs) => AppState::open_with(settings, ADMIN_TOKEN.to_owned(), blobs).await,
            None => AppState::open(settings, ADMIN_TOKEN.to_owned()).await,
        }
        .expect("open app state");
        let db = state.db.clone();
        let served_state = state.clone();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(app::serve(listener, served_state, async {
            let _ = rx.await;
        }));
        TestApp {
            backend,
            addr,
            base: format!("http://{addr}"),
            client: reqwest::Client::builder().timeout(Duration::from_secs(60)).build().expect("client"),
            db,
            state,
            data_dir,
            database_url,
            s3,
            options,
            shutdown: Some(tx),
            server: Some(server),
        }
    }

    /// Graceful stop: in-flight requests finish.
    pub async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(server) = self.server.take() {
            let _ = tokio::time::timeout(Duration::from_secs(10), server).await;
        }
        self.db.close().await;
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Where the photo store keeps its blobs as files, each at its key: the local directory,
    /// or the S3 server's bucket.
    pub fn blob_dir(&self) -> PathBuf {
        match &self.s3 {
            Some(s3) => s3.bucket_dir(),
            None => self.data_dir.path().join("blobs"),
        }
    }

    // ---- typed helpers --------------------------------------------------------------

    pub async fn create_event(&self) -> Event {
        self.create_event_with_quota(self.options.guest_quota_bytes).await
    }

    pub async fn create_event_with_quota(&self, quota: i64) -> Event {
        let response = self
            .client
            .post(self.url("/api/v1/events"))
            .bearer_auth(ADMIN_TOKEN)
            .json(&json!({"name": "Anna & Ben", "organiser_password": "correct horse", "guest_quota_bytes": quota}))
            .send()
            .await
            .expect("create event");
        assert_eq!(response.status(), StatusCode::CREATED, "creating an event");
        let body: Value = response.json().await.expect("event json");
        Event {
            id: body["id"].as_str().expect("id").parse().expect("uuid"),
            slug: body["slug"].as_str().expect("slug").to_owned(),
            join_token: body["join_token"].as_str().expect("join_token").to_owned(),
            password: "correct horse".to_owned(),
        }
    }

    pub async fn join(&self, event: &Event, name: &str) -> Guest {
        let response = self
            .client
            .post(self.url(&format!("/api/v1/events/{}/guests", event.slug)))
            .json(&json!({"join_token": event.join_token, "display_name": name}))
            .send()
            .await
            .expect("join");
        assert_eq!(response.status(), StatusCode::CREATED, "joining");
        let body: Value = response.json().await.expect("guest json");
        Guest {
            id: body["guest"]["id"].as_str().expect("id").parse().expect("uuid"),
            token: body["token"].as_str().expect("token").to_owned(),
            slug: event.slug.clone(),
        }
    }

    pub async fn organiser_login(&self, event: &Event) -> String {
        let response = self
            .client
            .post(self.url(&format!("/api/v1/events/{}/organiser-sessions", event.slug)))
            .json(&json!({"password": event.password}))
            .send()
            .await
            .expect("login");
        assert_eq!(response.status(), StatusCode::CREATED, "organiser login");
        let body: Value = response.json().await.expect("json");
        body["token"].as_str().expect("token").to_owned()
    }

    /// Changes the event as its organiser (`PATCH`, which must succeed); returns the Event.
    pub async fn change_event(&self, event: &Event, organiser: &str, changes: Value) -> Value {
        let response = self
            .client
            .patch(self.url(&format!("/api/v1/events/{}", event.slug)))
            .bearer_auth(organiser)
            .json(&changes)
            .send()
            .await
            .expect("PATCH event");
        assert_eq!(response.status(), StatusCode::OK, "PATCH event {changes}");
        response.json().await.expect("event json")
    }

    /// A new event, named `name` by its organiser.
    pub async fn create_event_named(&self, name: &str) -> Event {
        let event = self.create_event().await;
        let organiser = self.organiser_login(&event).await;
        self.change_event(&event, &organiser, json!({"name": name})).await;
        event
    }

    /// Uploads `bytes` as `photo.jpg`, the key (if any) sent as a part before the file.
    pub async fn upload(&self, guest: &Guest, bytes: &[u8], key: Option<Uuid>) -> reqwest::Response {
        self.upload_form(guest, upload_form(bytes, key, "photo.jpg", None), None).await
    }

    pub async fn upload_form(&self, guest: &Guest, form: Form, header_key: Option<&str>) -> reqwest::Response {
        let mut request = self
            .client
            .post(self.url(&format!("/api/v1/events/{}/uploads", guest.slug)))
            .bearer_auth(&guest.token)
            .multipart(form);
        if let Some(key) = header_key {
            request = request.header("Idempotency-Key", key);
        }
        request.send().await.expect("upload request")
    }

    pub async fn get_json(&self, path: &str, token: &str) -> (StatusCode, Value) {
        let response = self.client.get(self.url(path)).bearer_auth(token).send().await.expect("GET");
        let status = response.status();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    // ---- what the server left behind ---------------------------------------------

    /// Upload rows, deleted ones included.
    pub async fn upload_rows(&self) -> i64 {
        self.scalar("SELECT COUNT(*) FROM uploads").await
    }

    pub async fn used_bytes(&self, guest: &Guest) -> i64 {
        match &self.db {
            Db::Sqlite(p) => {
                sqlx::query_scalar("SELECT used_bytes FROM guests WHERE id = $1").bind(guest.id).fetch_one(p).await
            }
            Db::Postgres(p) => {
                sqlx::query_scalar("SELECT used_bytes FROM guests WHERE id = $1").bind(guest.id).fetch_one(p).await
            }
        }
        .expect("used_bytes")
    }

    pub async fn scalar(&self, sql: &'static str) -> i64 {
        match &self.db {
            Db::Sqlite(p) => sqlx::query_scalar(sql).fetch_one(p).await,
            Db::Postgres(p) => sqlx::query_scalar(sql).fetch_one(p).await,
        }
        .expect(sql)
    }

    /// Whether the upload still has a derivative job (its thumb, or its preview and AVIF, are
    /// still to be made).
    pub async fn derivatives_pending(&self, id: &str) -> bool {
        let id = Uuid::parse_str(id).expect("an upload id");
        let sql = "SELECT COUNT(*) FROM derivative_jobs WHERE upload_id = $1";
        let jobs: i64 = match &self.db {
            Db::Sqlite(p) => sqlx::query_scalar(sql).bind(id).fetch_one(p).await,
            Db::Postgres(p) => sqlx::query_scalar(sql).bind(id).fetch_one(p).await,
        }
        .expect(sql);
        jobs > 0
    }

    /// Every file under the blob directory (temporary or final).
    /// The blobs ingest writes: originals and temporary ones. Derivatives, which the worker
    /// adds a moment later, are listed by `derivative_files`.
    pub fn blob_files(&self) -> Vec<PathBuf> {
        let derivatives = self.blob_dir().join("derivatives");
        all_files(&self.blob_dir()).into_iter().filter(|p| !p.starts_with(&derivatives)).collect()
    }

    pub fn derivative_files(&self) -> Vec<PathBuf> {
        all_files(&self.blob_dir().join("derivatives"))
    }

    /// Asserts a refused upload left nothing: no row, no blob, no quota charge.
    /// Temporary blobs are deleted before the answer, so this holds at once.
    pub async fn assert_nothing_stored(&self, guest: &Guest) {
        assert_eq!(self.upload_rows().await, 0, "no upload row");
        assert_eq!(self.blob_files(), Vec::<PathBuf>::new(), "no blob file");
        assert_eq!(self.derivative_files(), Vec::<PathBuf>::new(), "no derivative");
        assert_eq!(self.used_bytes(guest).await, 0, "no quota charged");
    }
}

pub fn all_files(dir: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        if let Ok(entries) = std::fs::read_dir(dir) {
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() { walk(&path, out) } else { out.push(path) }
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, &mut out);
    out
}

pub struct Event {
    pub id: Uuid,
    pub slug: String,
    pub join_token: String,
    pub password: String,
}

pub struct Guest {
    pub id: Uuid,
    pub token: String,
    pub slug: String,
}

pub fn upload_form(bytes: &[u8], key: Option<Uuid>, filename: &str, caption: Option<&str>) -> Form {
    let mut form = Form::new();
    if let Some(key) = key {
        form = form.text("client_upload_id", key.to_string());
    }
    if let Some(caption) = caption {
        form = form.text("caption", caption.to_owned());
    }
    let part = Part::bytes(bytes.to_vec()).file_name(filename.to_owned()).mime_str("image/jpeg").expect("mime");
    form.part("file", part)
}

/// Asserts a problem+json answer with this status and code; returns the body.
pub async fn assert_problem(response: reqwest::Response, status: StatusCode, code: &str) -> Value {
    assert_eq!(response.status(), status, "status for {code}");
    let content_type = response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    assert_eq!(content_type, "application/problem+json", "content type for {code}");
    let body: Value = response.json().await.expect("problem json");
    assert_eq!(body["code"], code, "problem body: {body}");
    assert_eq!(body["status"], status.as_u16());
    body
}

/// Waits until the upload's derivatives are decided (ready or failed) and every one of them is
/// made (thumbs first: a `ready` upload's preview and AVIF follow its thumb), at most 60 s;
/// returns the Upload. Room for a job that meets its wall-clock limit on a busy machine (the
/// test run's other lane starving the worker at its low priority) and is tried again.
pub async fn settled(app: &TestApp, token: &str, id: &str) -> Value {
    settled_within(app, token, id, Duration::from_secs(60)).await
}

/// Waits until the upload's derivatives are decided (ready or failed) and made, at most `limit`.
pub async fn settled_within(app: &TestApp, token: &str, id: &str, limit: Duration) -> Value {
    let started = std::time::Instant::now();
    while started.elapsed() < limit {
        let (status, body) = app.get_json(&format!("/api/v1/uploads/{id}"), token).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        if body["status"] != "processing" && !app.derivatives_pending(id).await {
            return body;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("upload {id} still processing after {limit:?}");
}

/// Waits until the upload is shown (its thumb made: no longer `processing`; its preview and
/// AVIF may follow), at most `limit`.
pub async fn shown_within(app: &TestApp, token: &str, id: &str, limit: Duration) -> Value {
    let started = std::time::Instant::now();
    while started.elapsed() < limit {
        let (status, body) = app.get_json(&format!("/api/v1/uploads/{id}"), token).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        if body["status"] != "processing" {
            return body;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("upload {id} still processing after {limit:?}");
}

/// Uploads a photo under a new key and expects it stored (201); returns the Upload.
pub async fn upload_ok(app: &TestApp, guest: &Guest, bytes: &[u8]) -> Value {
    let response = app.upload(guest, bytes, Some(Uuid::new_v4())).await;
    assert_eq!(response.status(), StatusCode::CREATED);
    response.json().await.expect("upload json")
}
