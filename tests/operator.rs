//! What an operator relies on: `/metrics` kept private, files readable by the server's user
//! only, an event's total storage capped whatever the number of guests, uploads refused
//! before the disk fills, and credentials checked before a body is read.

mod common;

use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::{ADMIN_TOKEN, Backend, Event, Options, TestApp, assert_problem, images, upload_form};
use confetti::app::{self, AppState};
use confetti::db::Db;
use confetti::settings::Settings;
use futures_util::future::join_all;
use reqwest::StatusCode;
use serde_json::{Value, json};
use uuid::Uuid;

both_backends!(
    the_data_directory_database_and_photos_are_readable_by_the_server_user_only,
    another_guest_cannot_upload_past_the_events_storage_cap,
    parallel_uploads_never_pass_the_events_storage_cap,
    a_replay_is_answered_even_when_the_event_is_full,
    deleting_a_photo_gives_its_bytes_back_to_the_event,
    the_storage_cap_is_chosen_when_creating_and_changing_an_event,
    uploads_are_refused_before_the_disk_fills_but_replays_still_answer,
    an_organiser_of_another_event_is_forbidden_whatever_the_body,
);

// ---- private metrics --------------------------------------------------------------------

/// A server like the harness's, with the metrics settings the harness has no option for.
struct MetricsServer {
    base: String,
    stop: tokio::sync::oneshot::Sender<()>,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
    _data_dir: tempfile::TempDir,
}

async fn spawn_metrics_server(metrics_bind: Option<SocketAddr>, token: Option<&str>) -> MetricsServer {
    let data_dir = tempfile::tempdir().expect("temp dir");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let settings =
        Settings { min_free_bytes: 0, metrics_bind, ..Settings::new(data_dir.path(), &format!("http://{addr}")) };
    let mut state = AppState::open(settings, ADMIN_TOKEN.to_owned()).await.expect("open app state");
    // The token comes from the environment in production; set here, not for the whole process.
    state.settings = Arc::new(app::Settings { metrics_token: token.map(str::to_owned), ..(*state.settings).clone() });
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(app::serve(listener, state, async {
        let _ = stopped.await;
    }));
    MetricsServer { base: format!("http://{addr}"), stop, server, _data_dir: data_dir }
}

fn free_port() -> SocketAddr {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a probe");
    probe.local_addr().expect("probe addr")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_on_their_own_address_are_not_served_on_the_public_port() {
    let metrics_addr = free_port();
    let server = spawn_metrics_server(Some(metrics_addr), None).await;
    let client = reqwest::Client::new();

    let public = client.get(format!("{}/metrics", server.base)).send().await.expect("public /metrics");
    assert_problem(public, StatusCode::NOT_FOUND, "not_found").await;

    let private = client.get(format!("http://{metrics_addr}/metrics")).send().await.expect("private /metrics");
    assert_eq!(private.status(), StatusCode::OK);
    let text = private.text().await.expect("metrics text");
    assert!(text.contains("confetti_idempotency_executions_total"), "{text}");
    let other = client.get(format!("http://{metrics_addr}/healthz")).send().await.expect("private /healthz");
    assert_eq!(other.status(), StatusCode::NOT_FOUND, "the metrics address serves metrics only");

    // The metrics listener ends with the server.
    let _ = server.stop.send(());
    let _ = tokio::time::timeout(Duration::from_secs(10), server.server).await.expect("server stops");
    let mut refused = false;
    for _ in 0..50 {
        if tokio::net::TcpStream::connect(metrics_addr).await.is_err() {
            refused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(refused, "the metrics address still accepts connections after shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_with_a_token_need_that_token() {
    let server = spawn_metrics_server(None, Some("m3tr1cs-secret")).await;
    let client = reqwest::Client::new();
    let url = format!("{}/metrics", server.base);

    let anonymous = client.get(&url).send().await.expect("no token");
    assert_problem(anonymous, StatusCode::UNAUTHORIZED, "unauthenticated").await;
    let wrong = client.get(&url).bearer_auth("m3tr1cs-secreT").send().await.expect("wrong token");
    assert_problem(wrong, StatusCode::UNAUTHORIZED, "unauthenticated").await;
    let admin = client.get(&url).bearer_auth(ADMIN_TOKEN).send().await.expect("admin token");
    assert_problem(admin, StatusCode::UNAUTHORIZED, "unauthenticated").await;

    let right = client.get(&url).bearer_auth("m3tr1cs-secret").send().await.expect("right token");
    assert_eq!(right.status(), StatusCode::OK);
    assert!(right.text().await.expect("text").contains("confetti_derivatives_made_total"));
    let _ = server.stop.send(());
}

// ---- file modes --------------------------------------------------------------------------

fn assert_private(path: &Path) {
    let mode = std::fs::metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())).permissions().mode();
    assert_eq!(mode & 0o077, 0, "{} has mode {:o}", path.display(), mode & 0o777);
}

/// Waits until the upload's derivatives are decided; returns its status.
async fn settled(app: &TestApp, token: &str, id: &str) -> String {
    for _ in 0..200 {
        let (status, body) = app.get_json(&format!("/api/v1/uploads/{id}"), token).await;
        assert_eq!(status, StatusCode::OK);
        if body["status"] != "processing" {
            return body["status"].as_str().unwrap_or_default().to_owned();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("upload {id} still processing");
}

async fn the_data_directory_database_and_photos_are_readable_by_the_server_user_only(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let response = app.upload(&guest, &images::jpeg(800, 600), Some(Uuid::new_v4())).await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let upload: Value = response.json().await.expect("upload json");
    let id = upload["id"].as_str().expect("id");
    assert_eq!(settled(&app, &guest.token, id).await, "ready");

    let data = app.data_dir.path().to_path_buf();
    assert_private(&data);
    if backend == Backend::Sqlite {
        for file in ["confetti.db", "confetti.db-wal", "confetti.db-shm"] {
            assert_private(&data.join(file));
        }
    }
    let originals = app.blob_files();
    assert_eq!(originals.len(), 1, "{originals:?}");
    let thumbs: Vec<_> = app.derivative_files().into_iter().filter(|p| p.ends_with("thumb.jpg")).collect();
    assert_eq!(thumbs.len(), 1);
    for path in [&originals[0], &thumbs[0]] {
        assert_private(path);
        let mut dir = path.parent();
        while let Some(d) = dir.filter(|d| d.starts_with(&data)) {
            assert_private(d);
            dir = d.parent();
        }
    }

    // A data directory and database made before this rule, open to everyone, are narrowed
    // at start.
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let db_file = data.join("confetti.db");
    if backend == Backend::Sqlite {
        std::fs::set_permissions(&db_file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    }
    let app = app.restart().await;
    assert_private(app.data_dir.path());
    if backend == Backend::Sqlite {
        assert_private(&db_file);
    }
    app.stop().await;
}

// ---- the event's storage cap ---------------------------------------------------------------

async fn create_event_with_cap(app: &TestApp, cap: i64) -> Event {
    let response = app
        .client
        .post(app.url("/api/v1/events"))
        .bearer_auth(ADMIN_TOKEN)
        .json(&json!({"name": "Sommerfest", "organiser_password": "correct horse", "storage_cap_bytes": cap}))
        .send()
        .await
        .expect("create event");
    assert_eq!(response.status(), StatusCode::CREATED, "creating an event");
    let body: Value = response.json().await.expect("event json");
    assert_eq!(body["storage_cap_bytes"], cap);
    assert_eq!(body["used_bytes"], 0);
    Event {
        id: body["id"].as_str().expect("id").parse().expect("uuid"),
        slug: body["slug"].as_str().expect("slug").to_owned(),
        join_token: body["join_token"].as_str().expect("join_token").to_owned(),
        password: "correct horse".to_owned(),
    }
}

/// The event's `used_bytes` and the sum of its guests', as stored.
async fn event_usage(app: &TestApp, event: &Event) -> (i64, i64) {
    const EVENT: &str = "SELECT used_bytes FROM events WHERE id = $1";
    const GUESTS: &str = "SELECT CAST(COALESCE(SUM(used_bytes), 0) AS BIGINT) FROM guests WHERE event_id = $1";
    match &app.db {
        Db::Sqlite(p) => (
            sqlx::query_scalar(EVENT).bind(event.id).fetch_one(p).await.expect("event used"),
            sqlx::query_scalar(GUESTS).bind(event.id).fetch_one(p).await.expect("guests used"),
        ),
        Db::Postgres(p) => (
            sqlx::query_scalar(EVENT).bind(event.id).fetch_one(p).await.expect("event used"),
            sqlx::query_scalar(GUESTS).bind(event.id).fetch_one(p).await.expect("guests used"),
        ),
    }
}

async fn another_guest_cannot_upload_past_the_events_storage_cap(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let photo = images::jpeg(640, 480);
    let len = photo.len() as i64;
    let event = create_event_with_cap(&app, len + 1000).await;
    let anna = app.join(&event, "Anna").await;
    assert_eq!(app.upload(&anna, &photo, Some(Uuid::new_v4())).await.status(), StatusCode::CREATED);

    // Joining again mints a new guest quota, not new room in the event.
    let mallory = app.join(&event, "Mallory").await;
    let refused = app.upload(&mallory, &images::jpeg(640, 481), Some(Uuid::new_v4())).await;
    let problem = assert_problem(refused, StatusCode::PAYLOAD_TOO_LARGE, "event_storage_full").await;
    assert_eq!(problem["cap_bytes"], len + 1000);
    assert_eq!(problem["remaining_bytes"], 1000);

    assert_eq!(app.upload_rows().await, 1, "no row for the refused upload");
    assert_eq!(app.blob_files().len(), 1, "no blob for the refused upload: {:?}", app.blob_files());
    assert_eq!(app.used_bytes(&mallory).await, 0, "no quota charged");
    assert_eq!(event_usage(&app, &event).await, (len, len));
    app.stop().await;
}

async fn parallel_uploads_never_pass_the_events_storage_cap(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let photo = images::jpeg(640, 480);
    let len = photo.len() as i64;
    let event = create_event_with_cap(&app, 3 * len + len / 2).await;
    let mut guests = Vec::new();
    for i in 0..8 {
        guests.push(app.join(&event, &format!("Guest {i}")).await);
    }
    let answers = join_all(guests.iter().map(|g| app.upload(g, &photo, Some(Uuid::new_v4())))).await;
    let mut created = 0;
    for answer in answers {
        if answer.status() == StatusCode::CREATED {
            created += 1;
        } else {
            assert_problem(answer, StatusCode::PAYLOAD_TOO_LARGE, "event_storage_full").await;
        }
    }
    assert_eq!(created, 3, "exactly the uploads that fit are stored");
    let (event_used, guests_used) = event_usage(&app, &event).await;
    assert_eq!(event_used, 3 * len);
    assert_eq!(guests_used, event_used, "the event's counter is the sum of its guests'");
    assert_eq!(app.upload_rows().await, 3);
    assert_eq!(app.blob_files().len(), 3, "{:?}", app.blob_files());
    app.stop().await;
}

async fn a_replay_is_answered_even_when_the_event_is_full(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let photo = images::jpeg(640, 480);
    let key = Uuid::new_v4();
    assert_eq!(app.upload(&guest, &photo, Some(key)).await.status(), StatusCode::CREATED);

    let organiser = app.organiser_login(&event).await;
    app.change_event(&event, &organiser, json!({"storage_cap_bytes": 0})).await;

    let replay = app.upload(&guest, &photo, Some(key)).await;
    assert_eq!(replay.status(), StatusCode::OK, "a replay is a replay, never a refusal");
    let header_key = key.to_string();
    let header_replay = app.upload_form(&guest, upload_form(&photo, None, "photo.jpg", None), Some(&header_key));
    assert_eq!(header_replay.await.status(), StatusCode::OK);
    let new = app.upload(&guest, &images::jpeg(64, 64), Some(Uuid::new_v4())).await;
    let problem = assert_problem(new, StatusCode::PAYLOAD_TOO_LARGE, "event_storage_full").await;
    assert_eq!(problem["cap_bytes"], 0);
    assert_eq!(problem["remaining_bytes"], 0);
    assert_eq!(app.upload_rows().await, 1);
    assert_eq!(app.used_bytes(&guest).await, photo.len() as i64, "charged once");
    app.stop().await;
}

async fn deleting_a_photo_gives_its_bytes_back_to_the_event(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let photo = images::jpeg(640, 480);
    let event = create_event_with_cap(&app, photo.len() as i64).await;
    let guest = app.join(&event, "Anna").await;
    let created = app.upload(&guest, &photo, Some(Uuid::new_v4())).await;
    assert_eq!(created.status(), StatusCode::CREATED);
    let id = created.json::<Value>().await.expect("json")["id"].as_str().expect("id").to_owned();

    let organiser = app.organiser_login(&event).await;
    let (_, shown) = app.get_json(&format!("/api/v1/events/{}", event.slug), &organiser).await;
    assert_eq!(shown["used_bytes"], photo.len() as i64);
    assert_eq!(shown["storage_cap_bytes"], photo.len() as i64);

    let deleted = app.client.delete(app.url(&format!("/api/v1/uploads/{id}"))).bearer_auth(&guest.token).send();
    assert_eq!(deleted.await.expect("delete").status(), StatusCode::NO_CONTENT);
    assert_eq!(event_usage(&app, &event).await, (0, 0));
    let (_, shown) = app.get_json(&format!("/api/v1/events/{}", event.slug), &organiser).await;
    assert_eq!(shown["used_bytes"], 0);

    // The room is there again, for any guest.
    let other = app.join(&event, "Ben").await;
    assert_eq!(app.upload(&other, &photo, Some(Uuid::new_v4())).await.status(), StatusCode::CREATED);
    app.stop().await;
}

async fn the_storage_cap_is_chosen_when_creating_and_changing_an_event(backend: Backend) {
    let app =
        TestApp::spawn_with(backend, Options { event_storage_cap_bytes: 123_456_789, ..Options::default() }).await;
    let event = app.create_event().await;
    let organiser = app.organiser_login(&event).await;
    let path = format!("/api/v1/events/{}", event.slug);
    let (_, shown) = app.get_json(&path, &organiser).await;
    assert_eq!(shown["storage_cap_bytes"], 123_456_789, "the default is --event-storage-cap-bytes");
    assert_eq!(shown["used_bytes"], 0);
    let (_, public) = app.get_json(&path, "").await;
    assert!(public.get("storage_cap_bytes").is_none(), "only the organiser sees the storage: {public}");

    let chosen = create_event_with_cap(&app, 5_000).await;
    let organiser_of_chosen = app.organiser_login(&chosen).await;
    let (_, shown) = app.get_json(&format!("/api/v1/events/{}", chosen.slug), &organiser_of_chosen).await;
    assert_eq!(shown["storage_cap_bytes"], 5_000);

    let patch = |body: Value| app.client.patch(app.url(&path)).bearer_auth(&organiser).json(&body).send();
    let changed = patch(json!({"storage_cap_bytes": 42})).await.expect("patch");
    assert_eq!(changed.status(), StatusCode::OK);
    assert_eq!(changed.json::<Value>().await.expect("json")["storage_cap_bytes"], 42);
    let negative = patch(json!({"storage_cap_bytes": -1})).await.expect("patch");
    assert_problem(negative, StatusCode::BAD_REQUEST, "invalid_request").await;
    let negative = app
        .client
        .post(app.url("/api/v1/events"))
        .bearer_auth(ADMIN_TOKEN)
        .json(&json!({"name": "Nope", "organiser_password": "correct horse", "storage_cap_bytes": -1}))
        .send()
        .await
        .expect("create");
    assert_problem(negative, StatusCode::BAD_REQUEST, "invalid_request").await;
    let (_, shown) = app.get_json(&path, &organiser).await;
    assert_eq!(shown["storage_cap_bytes"], 42, "a refused change changes nothing");
    app.stop().await;
}

// ---- the free-space floor --------------------------------------------------------------

async fn uploads_are_refused_before_the_disk_fills_but_replays_still_answer(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let photo = images::jpeg(640, 480);
    let key = Uuid::new_v4();
    assert_eq!(app.upload(&guest, &photo, Some(key)).await.status(), StatusCode::CREATED);
    let blobs_before = app.blob_files();

    // No test machine has this much free: the floor is always under water.
    let app = app.restart_with(Options { min_free_bytes: u64::MAX, ..Options::default() }).await;
    let refused = app.upload(&guest, &images::jpeg(64, 64), Some(Uuid::new_v4())).await;
    let problem = assert_problem(refused, StatusCode::INSUFFICIENT_STORAGE, "insufficient_storage").await;
    assert!(problem["detail"].as_str().is_some_and(|d| d.contains("disk")), "{problem}");
    assert_eq!(app.upload_rows().await, 1, "no row for the refused upload");
    assert_eq!(app.blob_files(), blobs_before, "no blob for the refused upload");
    assert_eq!(app.used_bytes(&guest).await, photo.len() as i64, "no quota charged");

    let replay = app.upload(&guest, &photo, Some(key)).await;
    assert_eq!(replay.status(), StatusCode::OK, "a replay stores nothing, so it is answered");
    // A key sent after the file still turns the request into a replay.
    let form = reqwest::multipart::Form::new()
        .part("file", reqwest::multipart::Part::bytes(photo.clone()).file_name("photo.jpg"))
        .text("client_upload_id", key.to_string());
    assert_eq!(app.upload_form(&guest, form, None).await.status(), StatusCode::OK);
    app.stop().await;
}

// ---- credentials before the body -------------------------------------------------------

async fn an_organiser_of_another_event_is_forbidden_whatever_the_body(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let mine = app.create_event().await;
    let theirs = app.create_event().await;
    let organiser = app.organiser_login(&mine).await;
    let patch = |slug: &str, body: &'static str| {
        app.client
            .patch(app.url(&format!("/api/v1/events/{slug}")))
            .bearer_auth(&organiser)
            .header("content-type", "application/json")
            .body(body)
            .send()
    };

    let malformed = patch(&theirs.slug, "{\"name\": ").await.expect("patch");
    assert_problem(malformed, StatusCode::FORBIDDEN, "forbidden").await;
    let wrong_type = patch(&theirs.slug, "{\"uploads_open\": \"yes\"}").await.expect("patch");
    assert_problem(wrong_type, StatusCode::FORBIDDEN, "forbidden").await;
    let well_formed = patch(&theirs.slug, "{\"name\": \"Mine now\"}").await.expect("patch");
    assert_problem(well_formed, StatusCode::FORBIDDEN, "forbidden").await;

    // Their own event's malformed body is still a 400.
    let own = patch(&mine.slug, "{\"name\": ").await.expect("patch");
    assert_problem(own, StatusCode::BAD_REQUEST, "invalid_request").await;
    app.stop().await;
}
