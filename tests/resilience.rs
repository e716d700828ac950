//! How Confetti behaves when things go wrong the way they do in real life: a response lost
//! after the server committed, two instances racing on one database, a stop while an upload
//! is still arriving, a crash that left temporary blobs behind. Also what a browser relies on
//! when it shows a photo (ETag, Range, caching, cookie auth) and the admin token file.

mod common;

use std::future::Future;
use std::io::ErrorKind;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::fault_proxy::FaultProxy;
use common::{Backend, Guest, TestApp, all_files, assert_problem, images, settled, upload_form};
use confetti::jobs::orphans::sweep;
use futures_util::StreamExt;
use futures_util::future::join_all;
use reqwest::StatusCode;
use reqwest::multipart::Form;
use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use uuid::Uuid;

every_store!(
    a_retry_after_a_lost_response_replays_the_upload_the_server_stored,
    a_response_lost_after_100_continue_is_replayed_from_the_key_alone,
    a_graceful_stop_finishes_the_upload_in_flight_and_refuses_new_connections,
    the_sweep_deletes_a_temporary_blob_that_has_no_upload,
    the_sweep_moves_a_committed_upload_left_in_temporary_storage_to_its_final_key,
    the_sweep_deletes_a_temporary_blob_of_a_deleted_upload,
    the_sweep_leaves_temporary_blobs_younger_than_the_minimum_age_alone,
    the_original_is_served_with_etag_range_long_caching_and_cookie_auth,
);

// ---- helpers ------------------------------------------------------------------------

/// Every test is bounded: a hang fails it instead of stalling the suite.
async fn bounded<F: Future>(test: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(120), test).await.expect("the test did not finish within 2 minutes")
}

/// A client that never reuses a connection: each attempt is a new TCP connection, as a
/// retry after a reset is.
fn fresh_client() -> reqwest::Client {
    reqwest::Client::builder().pool_max_idle_per_host(0).timeout(Duration::from_secs(30)).build().expect("client")
}

async fn upload_through(
    client: &reqwest::Client,
    base: &str,
    guest: &Guest,
    form: Form,
) -> reqwest::Result<reqwest::Response> {
    client
        .post(format!("{base}/api/v1/events/{}/uploads", guest.slug))
        .bearer_auth(&guest.token)
        .multipart(form)
        .send()
        .await
}

async fn json(response: reqwest::Response) -> Value {
    response.json().await.expect("json body")
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// True when an `io::Error` of kind `ConnectionReset` is somewhere in the error's chain.
fn is_connection_reset(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(error);
    while let Some(e) = current {
        if e.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == ErrorKind::ConnectionReset) {
            return true;
        }
        current = e.source();
    }
    false
}

fn original_path(app: &TestApp, event_id: Uuid, upload_id: &str) -> PathBuf {
    app.blob_dir().join("originals").join(event_id.to_string()).join(upload_id)
}

/// Exactly one blob is stored: this upload's original, at its final key, byte for byte.
fn assert_only_original(app: &TestApp, event_id: Uuid, upload_id: &str, photo: &[u8]) {
    let original = original_path(app, event_id, upload_id);
    assert_eq!(app.blob_files(), vec![original.clone()], "one blob, at its final key");
    assert_eq!(std::fs::read(&original).expect("original"), photo);
}

fn temp_path(app: &TestApp, id: Uuid) -> PathBuf {
    app.blob_dir().join("tmp").join(id.to_string())
}

fn write_file(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("create dir");
    std::fs::write(path, bytes).expect("write blob");
}

/// A multipart body by hand (for raw and streamed requests): what comes before the file's
/// bytes and what comes after them.
fn multipart_around_file(boundary: &str, key: Option<Uuid>, filename: &str) -> (Vec<u8>, Vec<u8>) {
    let mut before = String::new();
    if let Some(key) = key {
        before.push_str(&format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"client_upload_id\"\r\n\r\n{key}\r\n"
        ));
    }
    before.push_str(&format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\n\
         Content-Type: image/jpeg\r\n\r\n"
    ));
    (before.into_bytes(), format!("\r\n--{boundary}--\r\n").into_bytes())
}

/// Reads from a raw connection until a whole response head has arrived.
async fn read_head(stream: &mut TcpStream) -> String {
    let mut received = Vec::new();
    let mut chunk = [0u8; 4096];
    while !received.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut chunk))
            .await
            .expect("a response head within 10 s")
            .expect("read a response head");
        assert!(n > 0, "the connection closed before a response head: {received:?}");
        received.extend_from_slice(&chunk[..n]);
    }
    String::from_utf8_lossy(&received).into_owned()
}

/// Upload rows with this id, through a NEW connection to the database (the app's pool is
/// closed by `stop`).
async fn rows_with_id_in_a_fresh_connection(
    backend: Backend,
    data_dir: &Path,
    database_url: Option<&str>,
    id: Uuid,
) -> i64 {
    const SQL: &str = "SELECT COUNT(*) FROM uploads WHERE id = $1";
    match backend {
        Backend::Sqlite => {
            let options = sqlx::sqlite::SqliteConnectOptions::new().filename(data_dir.join("confetti.db"));
            let pool = sqlx::SqlitePool::connect_with(options).await.expect("open the SQLite file");
            let count = sqlx::query_scalar(SQL).bind(id).fetch_one(&pool).await.expect("count");
            pool.close().await;
            count
        }
        Backend::Postgres | Backend::S3 => {
            let pool = sqlx::PgPool::connect(database_url.expect("database url")).await.expect("connect to PostgreSQL");
            let count = sqlx::query_scalar(SQL).bind(id).fetch_one(&pool).await.expect("count");
            pool.close().await;
            count
        }
    }
}

// ---- a lost response --------------------------------------------------------------------

/// The server stores the photo and answers; the answer never reaches the phone (the proxy
/// resets the connection at the first byte of the response). The retry with the same key
/// is told about the stored upload, and nothing is stored or charged twice.
async fn a_retry_after_a_lost_response_replays_the_upload_the_server_stored(backend: Backend) {
    bounded(async {
        let app = TestApp::spawn(backend).await;
        let event = app.create_event().await;
        let guest = app.join(&event, "Anna").await;
        let proxy = FaultProxy::start(app.addr, 1).await;
        let photo = images::jpeg_of_about(200_000);
        let key = Uuid::new_v4();
        let form = || upload_form(&photo, Some(key), "IMG_0001.jpg", Some("Tanz"));

        let lost = upload_through(&fresh_client(), &proxy.base, &guest, form()).await;
        let error = lost.expect_err("the first answer is lost on the way");
        assert!(!error.is_timeout(), "{error:?}");
        assert!(is_connection_reset(&error), "the client sees a reset connection: {error:?}");
        assert_eq!(proxy.responses_dropped(), 1);
        assert_eq!(app.upload_rows().await, 1, "the server stored it all the same");

        let retry = upload_through(&fresh_client(), &proxy.base, &guest, form()).await.expect("the retry gets through");
        assert_eq!(retry.status(), StatusCode::OK);
        assert_eq!(retry.headers()["idempotent-replayed"], "true");
        let retry = json(retry).await;
        assert_eq!(proxy.connections(), 2, "the retry used a new connection");
        assert_eq!(proxy.responses_dropped(), 1);
        assert_eq!(retry["client_upload_id"], key.to_string());
        assert_eq!(retry["bytes"], photo.len());
        assert_eq!(retry["sha256"], sha256_hex(&photo));
        let id = retry["id"].as_str().expect("id").to_owned();

        let (status, upload) = app.get_json(&format!("/api/v1/uploads/{id}"), &guest.token).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(upload["id"], id.as_str());
        assert_eq!(upload["filename"], "IMG_0001.jpg");
        let (status, listing) = app.get_json(&format!("/api/v1/events/{}/uploads", event.slug), &guest.token).await;
        assert_eq!(status, StatusCode::OK);
        let items = listing["items"].as_array().expect("items");
        assert_eq!(items.len(), 1, "{listing}");
        assert_eq!(items[0]["id"], id.as_str());

        assert_eq!(app.upload_rows().await, 1);
        assert_eq!(app.used_bytes(&guest).await, photo.len() as i64, "charged once");
        assert_only_original(&app, event.id, &id, &photo);

        proxy.close().await;
        app.stop().await;
    })
    .await
}

/// `curl` sends `Expect: 100-continue` for large bodies. The interim `100 Continue` reaches
/// the client, the body follows, the final answer is lost; the retry carries the key in its
/// header and is answered from it before any body is sent.
async fn a_response_lost_after_100_continue_is_replayed_from_the_key_alone(backend: Backend) {
    bounded(async {
        let app = TestApp::spawn(backend).await;
        let event = app.create_event().await;
        let guest = app.join(&event, "Anna").await;
        let proxy = FaultProxy::start(app.addr, 1).await;
        let photo = images::jpeg_of_about(100_000);
        let key = Uuid::new_v4();
        let boundary = "confetti-test-boundary";
        let (before, after) = multipart_around_file(boundary, None, "photo.jpg");
        let body = [before, photo.clone(), after].concat();
        let head = format!(
            "POST /api/v1/events/{}/uploads HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n\
             Idempotency-Key: {key}\r\nContent-Type: multipart/form-data; boundary={boundary}\r\n\
             Content-Length: {}\r\nExpect: 100-continue\r\n\r\n",
            guest.slug,
            app.addr,
            guest.token,
            body.len()
        );

        let mut first = TcpStream::connect(proxy.addr).await.expect("connect");
        first.write_all(head.as_bytes()).await.expect("write head");
        let interim = read_head(&mut first).await;
        assert!(interim.starts_with("HTTP/1.1 100"), "the interim answer passes the proxy: {interim}");
        first.write_all(&body).await.expect("write body");
        let mut buf = [0u8; 1024];
        let outcome = tokio::time::timeout(Duration::from_secs(10), first.read(&mut buf))
            .await
            .expect("an answer or a reset within 10 s");
        match outcome {
            Err(e) if e.kind() == ErrorKind::ConnectionReset => {}
            other => panic!("expected a reset connection, got {other:?}"),
        }
        drop(first);
        assert_eq!(proxy.responses_dropped(), 1);
        assert_eq!(app.upload_rows().await, 1, "the server stored it");

        let mut retry = TcpStream::connect(proxy.addr).await.expect("connect");
        retry.write_all(head.as_bytes()).await.expect("write head");
        let answer = read_head(&mut retry).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "answered from the key, without the body: {answer}");
        assert!(!answer.contains("100 Continue"), "{answer}");
        assert!(answer.to_ascii_lowercase().contains("idempotent-replayed: true"), "{answer}");
        drop(retry);

        let (status, upload) =
            app.get_json(&format!("/api/v1/events/{}/uploads/by-client-id/{key}", event.slug), &guest.token).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(upload["sha256"], sha256_hex(&photo));
        assert_eq!(app.upload_rows().await, 1);
        assert_eq!(app.used_bytes(&guest).await, photo.len() as i64);
        assert_eq!(app.blob_files().len(), 1);

        proxy.close().await;
        app.stop().await;
    })
    .await
}

// ---- two instances, one database -----------------------------------------------------------

/// The dedup lives in the database: two instances behind a load balancer, sixteen attempts of
/// one key spread over both, and still one photo, one charge, one blob.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_instances_on_one_database_store_one_photo_for_sixteen_concurrent_attempts() {
    bounded(async {
        let first = TestApp::spawn(Backend::Postgres).await;
        let second = TestApp::spawn_sharing(&first).await;
        let event = first.create_event().await;
        let guest = first.join(&event, "Anna").await;
        let photo = images::jpeg_of_about(400_000);
        let key = Uuid::new_v4();

        let attempts = (0..16).map(|i| {
            let app = if i % 2 == 0 { &first } else { &second };
            let (guest, photo) = (&guest, &photo);
            async move {
                let response = app.upload(guest, photo, Some(key)).await;
                let status = response.status();
                let replayed =
                    response.headers().get("idempotent-replayed").map(|v| v.to_str().unwrap_or("").to_owned());
                (i % 2, status, replayed, json(response).await)
            }
        });
        let answers = join_all(attempts).await;

        let created: Vec<_> = answers.iter().filter(|(_, status, _, _)| *status == StatusCode::CREATED).collect();
        assert_eq!(created.len(), 1, "exactly one attempt stores the photo");
        let id = created[0].3["id"].as_str().expect("id").to_owned();
        for (instance, status, replayed, body) in &answers {
            assert_eq!(body["id"], id.as_str(), "instance {instance}: {body}");
            if *status != StatusCode::CREATED {
                assert_eq!(*status, StatusCode::OK, "instance {instance}: {body}");
                assert_eq!(replayed.as_deref(), Some("true"));
            }
        }
        assert_eq!(answers.iter().filter(|a| a.0 == 1).count(), 8);

        for app in [&first, &second] {
            let (status, upload) = app.get_json(&format!("/api/v1/uploads/{id}"), &guest.token).await;
            assert_eq!(status, StatusCode::OK);
            assert_eq!(upload["sha256"], sha256_hex(&photo));
        }
        assert_eq!(first.upload_rows().await, 1);
        assert_eq!(second.used_bytes(&guest).await, photo.len() as i64);
        assert_only_original(&first, event.id, &id, &photo);

        second.stop().await;
        first.stop().await;
    })
    .await
}

// ---- graceful shutdown ----------------------------------------------------------------

/// A stop lets the upload still arriving finish (201, row committed), while a new
/// connection made after the stop began is refused.
async fn a_graceful_stop_finishes_the_upload_in_flight_and_refuses_new_connections(backend: Backend) {
    bounded(async {
        let app = TestApp::spawn(backend).await;
        let event = app.create_event().await;
        let guest = app.join(&event, "Anna").await;
        let photo = images::jpeg_of_about(1_000_000);
        let boundary = "confetti-slow-boundary";
        let (before, after) = multipart_around_file(boundary, Some(Uuid::new_v4()), "slow.jpg");

        // About 1.6 s on the wire: the head and the first two pieces at once, then about 20
        // pieces 80 ms apart. The stream tells when the fifth piece is asked for (160 ms in),
        // by which time the server is reading the body.
        let mut pieces = vec![Bytes::from(before)];
        pieces.extend(photo.chunks(photo.len().div_ceil(20)).map(Bytes::copy_from_slice));
        pieces.push(Bytes::from(after));
        let (started_tx, started_rx) = tokio::sync::oneshot::channel::<()>();
        let mut started_tx = Some(started_tx);
        let body = futures_util::stream::iter(pieces.into_iter().enumerate()).then(move |(i, piece)| {
            if i == 4
                && let Some(tx) = started_tx.take()
            {
                let _ = tx.send(());
            }
            async move {
                if i > 1 {
                    tokio::time::sleep(Duration::from_millis(80)).await;
                }
                Ok::<Bytes, std::io::Error>(piece)
            }
        });
        let request = fresh_client()
            .post(app.url(&format!("/api/v1/events/{}/uploads", guest.slug)))
            .bearer_auth(&guest.token)
            .header("content-type", format!("multipart/form-data; boundary={boundary}"))
            .body(reqwest::Body::wrap_stream(body));
        let started = Instant::now();
        let upload = tokio::spawn(async move {
            let response = request.send().await.expect("the upload in flight is answered");
            let status = response.status();
            (status, response.json::<Value>().await.expect("json"))
        });
        started_rx.await.expect("the body is being sent");

        let (addr, backend) = (app.addr, app.backend);
        let (data_dir, database_url) = (app.data_dir.clone(), app.database_url.clone());
        let (blob_dir, _s3) = (app.blob_dir(), app.s3.clone());
        let stop = tokio::spawn(app.stop());

        // The listener closes as soon as the stop signal is seen; poll until a connect is
        // refused (a connect racing the signal may still land in the backlog).
        loop {
            match TcpStream::connect(addr).await {
                Err(e) if e.kind() == ErrorKind::ConnectionRefused => break,
                // A connect caught in the listener's closing (queued, then reset): poll again.
                Err(e) if e.kind() == ErrorKind::ConnectionReset => {}
                Err(e) => panic!("unexpected connect error {e}"),
                Ok(_) => {}
            }
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "new connections were still accepted 5 s after the stop began"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(
            !upload.is_finished(),
            "new connections were refused while the upload was still arriving ({:?} in)",
            started.elapsed()
        );
        let refused = fresh_client()
            .get(format!("http://{addr}/healthz"))
            .send()
            .await
            .expect_err("a new request after the stop began");
        assert!(refused.is_connect(), "{refused:?}");

        let (status, body) = upload.await.expect("upload task");
        assert_eq!(status, StatusCode::CREATED, "{body}");
        assert!(started.elapsed() > Duration::from_millis(1200), "the body really was slow: {:?}", started.elapsed());
        tokio::time::timeout(Duration::from_secs(15), stop)
            .await
            .expect("the server stops once the upload is done")
            .expect("stop task");

        let id: Uuid = body["id"].as_str().expect("id").parse().expect("uuid");
        assert_eq!(body["bytes"], photo.len());
        assert_eq!(
            rows_with_id_in_a_fresh_connection(backend, data_dir.path(), database_url.as_deref(), id).await,
            1,
            "the row committed"
        );
        let original = blob_dir.join("originals").join(event.id.to_string()).join(id.to_string());
        assert_eq!(std::fs::read(original).expect("the original"), photo);
    })
    .await
}

// ---- the orphan sweep ---------------------------------------------------------------------

async fn the_sweep_deletes_a_temporary_blob_that_has_no_upload(backend: Backend) {
    bounded(async {
        let app = TestApp::spawn(backend).await;
        let crashed = temp_path(&app, Uuid::now_v7());
        write_file(&crashed, &images::jpeg(32, 32));

        let (finalized, deleted) = sweep(&app.db, &app.state.blobs, Duration::ZERO).await.expect("sweep");
        assert_eq!((finalized, deleted), (0, 1));
        assert!(!crashed.exists(), "the orphan is deleted");
        assert_eq!(app.blob_files(), Vec::<PathBuf>::new());
        assert_eq!(app.upload_rows().await, 0);
        app.stop().await;
    })
    .await
}

/// The process died between the commit and the move to the final key: the sweep finishes
/// the move, and the photo is served byte for byte.
async fn the_sweep_moves_a_committed_upload_left_in_temporary_storage_to_its_final_key(backend: Backend) {
    bounded(async {
        let app = TestApp::spawn(backend).await;
        let event = app.create_event().await;
        let guest = app.join(&event, "Anna").await;
        let photo = images::jpeg_of_about(50_000);
        let response = app.upload(&guest, &photo, Some(Uuid::new_v4())).await;
        assert_eq!(response.status(), StatusCode::CREATED);
        let upload = json(response).await;
        let id: Uuid = upload["id"].as_str().expect("id").parse().expect("uuid");
        let original = original_path(&app, event.id, &id.to_string());
        let temp = temp_path(&app, id);
        std::fs::create_dir_all(temp.parent().expect("parent")).expect("tmp dir");
        std::fs::rename(&original, &temp).expect("put the blob back in tmp/");

        let (finalized, deleted) = sweep(&app.db, &app.state.blobs, Duration::ZERO).await.expect("sweep");
        assert_eq!((finalized, deleted), (1, 0));
        assert!(!temp.exists(), "no longer temporary");
        assert_eq!(app.blob_files(), vec![original.clone()]);
        assert_eq!(std::fs::read(&original).expect("final key"), photo);

        let served = app
            .client
            .get(app.url(upload["urls"]["original"].as_str().expect("url")))
            .bearer_auth(&guest.token)
            .send()
            .await
            .expect("GET original");
        assert_eq!(served.status(), StatusCode::OK);
        assert_eq!(served.bytes().await.expect("bytes").as_ref(), photo.as_slice());
        assert_eq!(app.upload_rows().await, 1);
        assert_eq!(app.used_bytes(&guest).await, photo.len() as i64);
        app.stop().await;
    })
    .await
}

/// A deleted upload is not brought back by a stray temporary blob with its id.
async fn the_sweep_deletes_a_temporary_blob_of_a_deleted_upload(backend: Backend) {
    bounded(async {
        let app = TestApp::spawn(backend).await;
        let event = app.create_event().await;
        let guest = app.join(&event, "Anna").await;
        let photo = images::jpeg(64, 48);
        let upload = json(app.upload(&guest, &photo, Some(Uuid::new_v4())).await).await;
        let id: Uuid = upload["id"].as_str().expect("id").parse().expect("uuid");
        // Derived first: a derivative job still running at the delete writes its files after
        // the delete's blob job and removes them when it ends, which would race the count below.
        assert_eq!(settled(&app, &guest.token, &id.to_string()).await["status"], "ready");
        let deleted = app
            .client
            .delete(app.url(&format!("/api/v1/uploads/{id}")))
            .bearer_auth(&guest.token)
            .send()
            .await
            .expect("DELETE");
        assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
        // The delete's blob job removes the original and its derivatives after the answer;
        // the sweep is measured once that has happened, so it finds only the temporary blob.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while !all_files(&app.blob_dir()).is_empty() {
            assert!(tokio::time::Instant::now() < deadline, "the delete's blob job did not run within 10 s");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let temp = temp_path(&app, id);
        write_file(&temp, &photo);

        let (moved, deleted) = sweep(&app.db, &app.state.blobs, Duration::ZERO).await.expect("sweep");
        assert_eq!(moved, 0, "a deleted upload is not moved to a final key");
        assert!(deleted >= 1, "the temporary blob is deleted (derivatives a late worker wrote may go with it)");
        assert!(!temp.exists(), "the temporary blob is gone");
        assert_eq!(all_files(&app.blob_dir()), Vec::<PathBuf>::new(), "nothing resurrected");
        app.stop().await;
    })
    .await
}

/// Another instance sharing the store may still be receiving a young temporary blob: the
/// sweep leaves it, and the same blobs are handled once they are old enough.
async fn the_sweep_leaves_temporary_blobs_younger_than_the_minimum_age_alone(backend: Backend) {
    bounded(async {
        let app = TestApp::spawn(backend).await;
        let event = app.create_event().await;
        let guest = app.join(&event, "Anna").await;
        let photo = images::jpeg(64, 48);
        let upload = json(app.upload(&guest, &photo, Some(Uuid::new_v4())).await).await;
        let id: Uuid = upload["id"].as_str().expect("id").parse().expect("uuid");
        let original = original_path(&app, event.id, &id.to_string());
        let committed = temp_path(&app, id);
        std::fs::create_dir_all(committed.parent().expect("parent")).expect("tmp dir");
        std::fs::rename(&original, &committed).expect("put the blob back in tmp/");
        let arriving = temp_path(&app, Uuid::now_v7());
        write_file(&arriving, &images::jpeg(32, 32));

        let young = sweep(&app.db, &app.state.blobs, Duration::from_secs(3600)).await.expect("sweep");
        assert_eq!(young, (0, 0), "nothing is old enough");
        assert!(committed.exists() && arriving.exists());
        assert!(!original.exists());

        let old = sweep(&app.db, &app.state.blobs, Duration::ZERO).await.expect("sweep");
        assert_eq!(old, (1, 1), "both were only waiting for their age");
        assert_eq!(app.blob_files(), vec![original]);
        app.stop().await;
    })
    .await
}

// ---- serving the original ------------------------------------------------------------------

/// What an `<img>` and a browser cache rely on: exact bytes, the SHA-256 as ETag, 304 on
/// revalidation, 206 for a range, a year of caching, and the guest cookie alone as credential.
async fn the_original_is_served_with_etag_range_long_caching_and_cookie_auth(backend: Backend) {
    bounded(async {
        let app = TestApp::spawn(backend).await;
        let event = app.create_event().await;
        let guest = app.join(&event, "Anna").await;
        let photo = images::jpeg_of_about(60_000);
        let upload = json(app.upload(&guest, &photo, Some(Uuid::new_v4())).await).await;
        let url = app.url(upload["urls"]["original"].as_str().expect("original url"));
        let etag = format!("\"{}\"", upload["sha256"].as_str().expect("sha256"));
        assert_eq!(upload["sha256"], sha256_hex(&photo));

        let whole = app.client.get(&url).bearer_auth(&guest.token).send().await.expect("GET");
        assert_eq!(whole.status(), StatusCode::OK);
        assert_eq!(whole.headers()["etag"], etag.as_str());
        assert_eq!(whole.headers()["content-type"], "image/jpeg");
        assert_eq!(whole.headers()["accept-ranges"], "bytes");
        let cache = whole.headers()["cache-control"].to_str().expect("cache-control").to_owned();
        let max_age: u64 = cache
            .split(',')
            .find_map(|d| d.trim().strip_prefix("max-age="))
            .unwrap_or_else(|| panic!("no max-age in {cache:?}"))
            .parse()
            .expect("max-age seconds");
        assert!(max_age >= 365 * 24 * 3600, "cached for a year: {cache}");
        assert_eq!(whole.bytes().await.expect("bytes").as_ref(), photo.as_slice());

        let revalidated =
            app.client.get(&url).bearer_auth(&guest.token).header("if-none-match", &etag).send().await.expect("GET");
        assert_eq!(revalidated.status(), StatusCode::NOT_MODIFIED);
        assert_eq!(revalidated.headers()["etag"], etag.as_str());
        assert!(revalidated.bytes().await.expect("body").is_empty());

        let stale = app
            .client
            .get(&url)
            .bearer_auth(&guest.token)
            .header("if-none-match", "\"something-else\"")
            .send()
            .await
            .expect("GET");
        assert_eq!(stale.status(), StatusCode::OK, "another ETag is not a match");

        let partial =
            app.client.get(&url).bearer_auth(&guest.token).header("range", "bytes=0-9").send().await.expect("GET");
        assert_eq!(partial.status(), StatusCode::PARTIAL_CONTENT);
        assert_eq!(partial.headers()["content-range"], format!("bytes 0-9/{}", photo.len()).as_str());
        assert_eq!(partial.bytes().await.expect("bytes").as_ref(), &photo[..10]);

        // As an <img> asks: the cookie, no Authorization header.
        let by_cookie =
            app.client.get(&url).header("cookie", format!("confetti_guest={}", guest.token)).send().await.expect("GET");
        assert_eq!(by_cookie.status(), StatusCode::OK);
        assert_eq!(by_cookie.bytes().await.expect("bytes").as_ref(), photo.as_slice());

        let nobody = app.client.get(&url).send().await.expect("GET");
        assert_problem(nobody, StatusCode::UNAUTHORIZED, "unauthenticated").await;

        let other_event = app.create_event().await;
        let stranger = app.join(&other_event, "Mallory").await;
        let by_bearer = app.client.get(&url).bearer_auth(&stranger.token).send().await.expect("GET");
        assert_problem(by_bearer, StatusCode::NOT_FOUND, "not_found").await;
        let by_cookie = app
            .client
            .get(&url)
            .header("cookie", format!("confetti_guest={}", stranger.token))
            .send()
            .await
            .expect("GET");
        assert_problem(by_cookie, StatusCode::NOT_FOUND, "not_found").await;
        app.stop().await;
    })
    .await
}

// ---- the admin token -----------------------------------------------------------------------

#[test]
fn a_generated_admin_token_is_stored_private_and_reused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data_dir = dir.path().join("data");
    let token = confetti::bootstrap::admin_token(None, &data_dir).expect("admin token");
    assert!(token.len() >= 20, "a long random token: {token}");
    let path = data_dir.join("admin_token");
    let mode = std::fs::metadata(&path).expect("admin_token file").permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "only its owner may read it: {mode:o}");
    assert_eq!(std::fs::read_to_string(&path).expect("read").trim(), token);

    let again = confetti::bootstrap::admin_token(None, &data_dir).expect("admin token");
    assert_eq!(again, token, "the stored token is used on the next start");
    assert_eq!(std::fs::metadata(&path).expect("file").permissions().mode() & 0o777, 0o600);
}

#[test]
fn an_admin_token_from_the_environment_is_used_and_nothing_is_written() {
    let dir = tempfile::tempdir().expect("temp dir");
    let token = confetti::bootstrap::admin_token(Some("from-the-env".into()), dir.path()).expect("admin token");
    assert_eq!(token, "from-the-env");
    assert!(!dir.path().join("admin_token").exists());
    assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 0, "nothing written");
}
