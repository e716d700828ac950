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
