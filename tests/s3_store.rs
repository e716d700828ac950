//! An S3-compatible photo store as an operator meets it: a bucket that does not exist or a
//! secret it refuses stops the start with a clear message, and `/readyz` tells a load balancer
//! when the store stops answering and when it is back. Against a real S3-protocol server.

mod common;

use std::time::{Duration, Instant};

use common::s3::{self, S3Server};
use common::{ADMIN_TOKEN, Backend, TestApp, assert_problem, fresh_postgres_database};
use confetti::app::AppState;
use confetti::blobs::BlobStore;
use confetti::settings::Settings;
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use reqwest::StatusCode;

/// What the start says with this store, or `None` when it starts.
async fn start_error(blobs: BlobStore) -> Option<String> {
    let data_dir = tempfile::tempdir().expect("temp dir");
    let database = fresh_postgres_database().await;
    let settings =
        Settings { database_url: Some(database.to_string()), ..Settings::new(data_dir.path(), "http://127.0.0.1:9") };
    match AppState::open_with(settings, ADMIN_TOKEN.to_owned(), blobs).await {
        Ok(state) => {
            state.db.close().await;
            None
        }
        Err(e) => Some(format!("{e:#}")),
    }
}

fn settings_for(server: &S3Server) -> AmazonS3Builder {
    server.env().into_iter().fold(AmazonS3Builder::new(), |settings, (key, value)| {
        match key.to_ascii_lowercase().parse::<AmazonS3ConfigKey>() {
            Ok(key) => settings.with_config(key, value),
            Err(_) => settings,
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_bucket_that_does_not_exist_stops_the_start_with_a_clear_message() {
    let server = S3Server::start();
    let blobs = BlobStore::s3("s3://no-such-bucket/photos", settings_for(&server)).expect("store");
    let error = start_error(blobs).await.expect("the start fails");
    assert!(error.contains("the photo store does not answer"), "{error}");
    assert!(error.contains("--storage"), "the message names the setting to check: {error}");

    let blobs = BlobStore::s3(&format!("s3://{}/photos", s3::BUCKET), settings_for(&server)).expect("store");
    assert_eq!(start_error(blobs).await, None, "the same server with its bucket starts");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_secret_the_store_refuses_stops_the_start() {
    let server = S3Server::start();
    let wrong = settings_for(&server).with_secret_access_key("not-the-secret");
    let blobs = BlobStore::s3(&server.storage_url(), wrong).expect("store");
    let error = start_error(blobs).await.expect("the start fails");
    assert!(error.contains("the photo store does not answer"), "{error}");
}

/// Polls `/readyz` until it answers `want`, for at most `within`; returns the last body.
async fn readiness_becomes(app: &TestApp, want: StatusCode, within: Duration) -> reqwest::Response {
    let deadline = Instant::now() + within;
    loop {
        let response = app.client.get(app.url("/readyz")).send().await.expect("readyz");
        if response.status() == want {
            return response;
        }
        assert!(Instant::now() < deadline, "/readyz still answers {} after {within:?}", response.status());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn readiness_fails_while_the_bucket_is_gone_and_names_the_store() {
    let app = TestApp::spawn(Backend::S3).await;
    readiness_becomes(&app, StatusCode::OK, Duration::from_secs(1)).await;

    // The bucket disappears (an operator's mistake, a lifecycle gone wrong): the instance stops
    // being ready within the few seconds its last answer is reused.
    let bucket = app.blob_dir();
    let parked = bucket.with_extension("parked");
    std::fs::rename(&bucket, &parked).expect("park the bucket");
    let started = Instant::now();
    let not_ready = readiness_becomes(&app, StatusCode::SERVICE_UNAVAILABLE, Duration::from_secs(8)).await;
    let body = assert_problem(not_ready, StatusCode::SERVICE_UNAVAILABLE, "not_ready").await;
    let detail = body["detail"].as_str().expect("detail");
    assert_eq!(detail, "the photo store does not answer", "it names the part, not the cause");
    assert!(started.elapsed() < Duration::from_secs(7), "noticed in {:?}", started.elapsed());

    std::fs::rename(&parked, &bucket).expect("bring the bucket back");
    readiness_becomes(&app, StatusCode::OK, Duration::from_secs(8)).await;
    app.stop().await;
}

/// A TLS endpoint in front of the S3 server: haproxy terminating TLS with a self-signed
/// certificate. Killed when dropped.
struct TlsFront {
    process: std::process::Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl TlsFront {
    fn start(plain_endpoint: &str) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let pem = common::tls::self_signed_pem(dir.path());
        let port = std::net::TcpListener::bind("127.0.0.1:0").expect("port").local_addr().expect("addr").port();
        let backend = plain_endpoint.trim_start_matches("http://");
        let config = dir.path().join("tls.cfg");
        std::fs::write(
            &config,
            format!(
                "defaults\n  mode tcp\n  timeout connect 5s\n  timeout client 30s\n  timeout server 30s\n\
                 frontend tls\n  bind 127.0.0.1:{port} ssl crt {}\n  default_backend s3\n\
                 backend s3\n  server s3 {backend}\n",
                pem.display()
            ),
        )
        .expect("haproxy config");
        let process = std::process::Command::new("haproxy")
            .arg("-db")
            .arg("-f")
            .arg(&config)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("haproxy is installed (scripts/test.sh installs it)");
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(started.elapsed() < Duration::from_secs(10), "haproxy did not listen within 10 s");
            std::thread::sleep(Duration::from_millis(20));
        }
        Self { process, port, _dir: dir }
    }
}

impl Drop for TlsFront {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

/// Confetti reaches S3 over TLS with rustls on ring (`blobs::tls`): a store behind TLS answers
/// when its certificate is accepted, and a certificate nobody vouches for stops the start.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_bucket_behind_tls_is_reached_and_its_certificate_is_checked() {
    let server = S3Server::start();
    let plain = server.env().into_iter().find(|(k, _)| *k == "AWS_ENDPOINT").expect("endpoint").1;
    let front = TlsFront::start(&plain);
    let over_tls = || settings_for(&server).with_endpoint(format!("https://localhost:{}", front.port));

    let trusting =
        over_tls().with_client_options(object_store::ClientOptions::new().with_allow_invalid_certificates(true));
    let blobs = BlobStore::s3(&server.storage_url(), trusting).expect("store");
    assert_eq!(start_error(blobs).await, None, "the bucket answers through TLS");

    let blobs = BlobStore::s3(&server.storage_url(), over_tls()).expect("store");
    let error = start_error(blobs).await.expect("a self-signed certificate is refused");
    assert!(error.contains("the photo store does not answer"), "{error}");
}
