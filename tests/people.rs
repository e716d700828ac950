//! People around an event, on SQLite and PostgreSQL: co-organisers (added, logged in, doing
//! what the organiser does, revoked), blocked guests (photos hidden, new uploads, likes and
//! comments refused, replays still answered, unblocked), and undoing an organiser's delete
//! within its grace.

mod common;

use std::time::Duration;

use common::{Backend, Event, Options, TestApp, assert_problem, images, settled, upload_ok};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use uuid::Uuid;

both_backends!(
    a_co_organiser_logs_in_moderates_and_is_revoked,
    only_the_events_own_password_manages_co_organisers,
    blocking_a_guest_hides_their_photos_and_stops_their_uploads,
    an_organisers_delete_is_undone_within_the_grace,
    a_delete_whose_bytes_are_gone_cannot_be_undone,
);

/// Sends `method path` with a bearer token, a JSON body and an `Idempotency-Key` where given.
async fn call(
    app: &TestApp,
    method: Method,
    path: impl AsRef<str>,
    token: &str,
    body: Option<Value>,
    key: Option<&str>,
) -> reqwest::Response {
    let mut request = app.client.request(method, app.url(path.as_ref())).bearer_auth(token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    if let Some(key) = key {
        request = request.header("Idempotency-Key", key);
    }
    request.send().await.expect("request")
}

async fn json_of(response: reqwest::Response, status: StatusCode) -> Value {
    assert_eq!(response.status(), status, "status");
    response.json().await.expect("json")
}

/// Logs in with `password`; the token, or the refusal.
async fn login_with(app: &TestApp, event: &Event, password: &str) -> reqwest::Response {
    app.client
        .post(app.url(&format!("/api/v1/events/{}/organiser-sessions", event.slug)))
        .json(&json!({"password": password}))
        .send()
        .await
        .expect("login")
}

async fn token_of(response: reqwest::Response) -> String {
    json_of(response, StatusCode::CREATED).await["token"].as_str().expect("token").to_owned()
}

async fn a_co_organiser_logs_in_moderates_and_is_revoked(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let organiser = app.organiser_login(&event).await;
    let path = format!("/api/v1/events/{}/co-organisers", event.slug);

    let short =
        call(&app, Method::POST, &path, &organiser, Some(json!({"label": "Best man", "password": "short"})), None);
    assert_problem(short.await, StatusCode::UNPROCESSABLE_ENTITY, "weak_password").await;
    let empty =
        call(&app, Method::POST, &path, &organiser, Some(json!({"label": "  ", "password": "long enough"})), None);
    assert_problem(empty.await, StatusCode::BAD_REQUEST, "invalid_request").await;

    let body = json!({"label": " Best man ", "password": "best man's secret"});
    let added = json_of(
        call(&app, Method::POST, &path, &organiser, Some(body.clone()), Some("add-1")).await,
        StatusCode::CREATED,
    )
    .await;
    assert_eq!(added["label"], "Best man", "trimmed");
    let id = added["id"].as_str().expect("id").to_owned();
    let replay = call(&app, Method::POST, &path, &organiser, Some(body), Some("add-1")).await;
    assert_eq!(replay.headers().get("idempotent-replayed").map(|v| v.as_bytes()), Some(&b"true"[..]));
    assert_eq!(json_of(replay, StatusCode::CREATED).await["id"], id.as_str(), "the same co-organiser");
    let listed = json_of(call(&app, Method::GET, &path, &organiser, None, None).await, StatusCode::OK).await;
    assert_eq!(listed["items"].as_array().map(Vec::len), Some(1), "a replay adds nobody: {listed}");
    assert_eq!(listed["items"][0]["label"], "Best man");
    assert!(listed["items"][0].get("password_hash").is_none());

    // The co-organiser logs in with their own password and does what the organiser does.
    let co = token_of(login_with(&app, &event, "best man's secret").await).await;
    let (status, shown) = app.get_json(&format!("/api/v1/events/{}", event.slug), &co).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(shown["join_token"], event.join_token.as_str(), "the whole event, as its organiser sees it");
    let closed = call(
        &app,
        Method::PATCH,
        format!("/api/v1/events/{}", event.slug),
        &co,
        Some(json!({"uploads_open": false})),
        None,
    );
    assert_eq!(json_of(closed.await, StatusCode::OK).await["uploads_open"], false);
    let guest = app.join(&event, "Anna").await;
    call(&app, Method::PATCH, format!("/api/v1/events/{}", event.slug), &co, Some(json!({"uploads_open": true})), None)
        .await;
    let upload = upload_ok(&app, &guest, &images::jpeg(16, 16)).await;
    let upload_path = format!("/api/v1/uploads/{}", upload["id"].as_str().expect("id"));
    let hidden = call(&app, Method::PATCH, &upload_path, &co, Some(json!({"hidden": true})), None).await;
    assert_eq!(json_of(hidden, StatusCode::OK).await["status"], "hidden");

    // Revoked: the session ends at once, and the password no longer logs in.
    let revoke_path = format!("{path}/{id}");
    let revoked = call(&app, Method::DELETE, &revoke_path, &organiser, None, Some("revoke-1")).await;
    assert_eq!(revoked.status(), StatusCode::NO_CONTENT);
    let after = call(&app, Method::PATCH, &upload_path, &co, Some(json!({"hidden": false})), None).await;
    assert_problem(after, StatusCode::UNAUTHORIZED, "unauthenticated").await;
    assert_problem(
        login_with(&app, &event, "best man's secret").await,
        StatusCode::UNAUTHORIZED,
        "invalid_credentials",
    )
    .await;
    let again = call(&app, Method::DELETE, &revoke_path, &organiser, None, Some("revoke-1")).await;
    assert_eq!(again.status(), StatusCode::NO_CONTENT, "a replay answers as the first time");
    assert_eq!(again.headers().get("idempotent-replayed").map(|v| v.as_bytes()), Some(&b"true"[..]));
    let unkeyed = call(&app, Method::DELETE, &revoke_path, &organiser, None, None).await;
    assert_problem(unkeyed, StatusCode::NOT_FOUND, "not_found").await;
    let listed = json_of(call(&app, Method::GET, &path, &organiser, None, None).await, StatusCode::OK).await;
    assert_eq!(listed["items"], json!([]), "revoked ones are not listed");
    // The event's own password still works, and its session was never touched.
    let (status, _) = app.get_json(&path, &organiser).await;
    assert_eq!(status, StatusCode::OK);
}

async fn only_the_events_own_password_manages_co_organisers(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let other = app.create_event().await;
    let organiser = app.organiser_login(&event).await;
    let stranger = app.organiser_login(&other).await;
    let guest = app.join(&event, "Anna").await;
    let path = format!("/api/v1/events/{}/co-organisers", event.slug);
    let first = call(
        &app,
        Method::POST,
        &path,
        &organiser,
        Some(json!({"label": "Maid of honour", "password": "honour 1234"})),
        None,
    );
    let first_id = json_of(first.await, StatusCode::CREATED).await["id"].as_str().expect("id").to_owned();
    let co = token_of(login_with(&app, &event, "honour 1234").await).await;

    for token in [&co, &stranger, &guest.token] {
        let list = call(&app, Method::GET, &path, token, None, None).await;
        assert_problem(list, StatusCode::FORBIDDEN, "forbidden").await;
        let add =
            call(&app, Method::POST, &path, token, Some(json!({"label": "Me too", "password": "me too 1234"})), None);
        assert_problem(add.await, StatusCode::FORBIDDEN, "forbidden").await;
        let revoke = call(&app, Method::DELETE, format!("{path}/{first_id}"), token, None, None).await;
        assert_problem(revoke, StatusCode::FORBIDDEN, "forbidden").await;
    }
    let (status, listed) = app.get_json(&path, &organiser).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(listed["items"].as_array().map(Vec::len), Some(1), "nothing added or revoked by them");

    // Ten at most; the eleventh is refused, and nothing is stored for it.
    for n in 2..=10 {
        let body = json!({"label": format!("Helper {n}"), "password": format!("helper pass {n}")});
        let added = call(&app, Method::POST, &path, &organiser, Some(body), None).await;
        assert_eq!(added.status(), StatusCode::CREATED, "co-organiser {n}");
    }
    let eleventh =
        call(&app, Method::POST, &path, &organiser, Some(json!({"label": "Eleven", "password": "eleven 1234"})), None);
    assert_problem(eleventh.await, StatusCode::CONFLICT, "co_organiser_limit").await;
    let (_, listed) = app.get_json(&path, &organiser).await;
    assert_eq!(listed["items"].as_array().map(Vec::len), Some(10));
    // The last one's password still logs in (the eleventh check), a wrong one does not.
    token_of(login_with(&app, &event, "helper pass 10").await).await;
    assert_problem(login_with(&app, &event, "eleven 1234").await, StatusCode::UNAUTHORIZED, "invalid_credentials")
        .await;
    // A revoked slot is free again.
    let revoked = call(&app, Method::DELETE, format!("{path}/{first_id}"), &organiser, None, None).await;
    assert_eq!(revoked.status(), StatusCode::NO_CONTENT);
    let again =
        call(&app, Method::POST, &path, &organiser, Some(json!({"label": "Eleven", "password": "eleven 1234"})), None);
    assert_eq!(again.await.status(), StatusCode::CREATED);
}

async fn blocking_a_guest_hides_their_photos_and_stops_their_uploads(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let organiser = app.organiser_login(&event).await;
    let anna = app.join(&event, "Anna").await;
    let ben = app.join(&event, "Ben").await;
    let earlier = Uuid::new_v4();
    let photo = images::jpeg(24, 24);
    assert_eq!(app.upload(&anna, &photo, Some(earlier)).await.status(), StatusCode::CREATED);
    upload_ok(&app, &anna, &images::jpeg(20, 20)).await;
    let bens = upload_ok(&app, &ben, &images::jpeg(22, 22)).await;
    let bens_id = bens["id"].as_str().expect("id").to_owned();
    let guest_path = format!("/api/v1/events/{}/guests/{}", event.slug, anna.id);
    let listing = format!("/api/v1/events/{}/uploads", event.slug);

    let (status, standing) = app.get_json(&guest_path, &organiser).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!((standing["display_name"].as_str(), standing["upload_count"].as_i64()), (Some("Anna"), Some(2)));
    assert_eq!(standing["blocked_at"], Value::Null);
    let by_guest = call(&app, Method::POST, format!("{guest_path}/block"), &ben.token, None, None).await;
    assert_problem(by_guest, StatusCode::FORBIDDEN, "forbidden").await;

    let blocked = call(&app, Method::POST, format!("{guest_path}/block"), &organiser, None, Some("block-1")).await;
    let blocked = json_of(blocked, StatusCode::OK).await;
    assert!(blocked["blocked_at"].is_string(), "{blocked}");
    let replay = call(&app, Method::POST, format!("{guest_path}/block"), &organiser, None, Some("block-1")).await;
    assert_eq!(replay.headers().get("idempotent-replayed").map(|v| v.as_bytes()), Some(&b"true"[..]));
    assert_eq!(json_of(replay, StatusCode::OK).await, blocked);

    // Others no longer see Anna's photos; she sees them hidden.
    let (_, seen_by_ben) = app.get_json(&listing, &ben.token).await;
    let ids: Vec<&str> =
        seen_by_ben["items"].as_array().expect("items").iter().filter_map(|u| u["id"].as_str()).collect();
    assert_eq!(ids, vec![bens_id.as_str()]);
    let (_, seen_by_anna) = app.get_json(&listing, &anna.token).await;
    let statuses: Vec<&str> =
        seen_by_anna["items"].as_array().expect("items").iter().filter_map(|u| u["status"].as_str()).collect();
    assert_eq!(statuses.iter().filter(|s| **s == "hidden").count(), 2, "{seen_by_anna}");

    // New uploads, likes and comments are refused; an earlier upload's replay still answers.
    let rows = app.upload_rows().await;
    let refused = app.upload(&anna, &images::jpeg(18, 18), Some(Uuid::new_v4())).await;
    assert_problem(refused, StatusCode::FORBIDDEN, "guest_blocked").await;
    assert_eq!(app.upload_rows().await, rows, "nothing stored");
    let replayed = app.upload(&anna, &photo, Some(earlier)).await;
    assert_eq!(replayed.status(), StatusCode::OK, "a replay of an earlier upload");
    let like = app.client.put(app.url(&format!("/api/v1/uploads/{bens_id}/like"))).bearer_auth(&anna.token).send();
    assert_problem(like.await.expect("like"), StatusCode::FORBIDDEN, "guest_blocked").await;
    let comment = call(
        &app,
        Method::POST,
        format!("/api/v1/uploads/{bens_id}/comments"),
        &anna.token,
        Some(json!({"text": "hi"})),
        None,
    );
    assert_problem(comment.await, StatusCode::FORBIDDEN, "guest_blocked").await;
    let (_, me) = app.get_json("/api/v1/me", &anna.token).await;
    assert_eq!(me["blocked"], true);
    let (_, list) = app.get_json(&format!("/api/v1/events/{}/blocked-guests", event.slug), &organiser).await;
    assert_eq!(list["items"].as_array().map(Vec::len), Some(1));
    assert_eq!(list["items"][0]["id"], anna.id.to_string());
    // Ben is not touched.
    assert_eq!(app.upload(&ben, &images::jpeg(26, 26), Some(Uuid::new_v4())).await.status(), StatusCode::CREATED);

    // Unblocked: new uploads go again; the hidden photos stay hidden.
    let unblocked =
        call(&app, Method::DELETE, format!("{guest_path}/block"), &organiser, None, Some("unblock-1")).await;
    assert_eq!(json_of(unblocked, StatusCode::OK).await["blocked_at"], Value::Null);
    assert_eq!(app.upload(&anna, &images::jpeg(18, 18), Some(Uuid::new_v4())).await.status(), StatusCode::CREATED);
    let (_, seen_by_ben) = app.get_json(&listing, &ben.token).await;
    let names: Vec<&str> = seen_by_ben["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|u| u["guest"]["display_name"].as_str())
        .collect();
    assert_eq!(names.iter().filter(|n| **n == "Anna").count(), 1, "only her new photo: {names:?}");
    let (_, me) = app.get_json("/api/v1/me", &anna.token).await;
    assert_eq!(me["blocked"], false);
    let (_, list) = app.get_json(&format!("/api/v1/events/{}/blocked-guests", event.slug), &organiser).await;
    assert_eq!(list["items"], json!([]));
    let unknown = format!("/api/v1/events/{}/guests/{}/block", event.slug, Uuid::new_v4());
    assert_problem(
        call(&app, Method::POST, &unknown, &organiser, None, None).await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
}

/// Pending blob jobs that delete an upload's blobs.
async fn pending_deletes(app: &TestApp) -> i64 {
    app.scalar("SELECT COUNT(*) FROM blob_jobs WHERE kind = 'delete'").await
}

async fn an_organisers_delete_is_undone_within_the_grace(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let organiser = app.organiser_login(&event).await;
    let anna = app.join(&event, "Anna").await;
    let ben = app.join(&event, "Ben").await;
    let upload = upload_ok(&app, &anna, &images::jpeg(64, 48)).await;
    let id = upload["id"].as_str().expect("id").to_owned();
    settled(&app, &anna.token, &id).await;
    let bytes = upload["bytes"].as_i64().expect("bytes");
    let path = format!("/api/v1/uploads/{id}");
    let restore = format!("{path}/restore");
    let listing = format!("/api/v1/events/{}/uploads", event.slug);

    let deleted = call(&app, Method::DELETE, &path, &organiser, None, None).await;
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    assert_eq!(app.used_bytes(&anna).await, 0, "refunded at once");
    assert_eq!(pending_deletes(&app).await, 1, "the removal waits out the grace");
    assert!(app.blob_files().iter().any(|f| f.to_string_lossy().contains(&id)), "the original is kept meanwhile");
    let (_, seen) = app.get_json(&listing, &ben.token).await;
    assert_eq!(seen["items"], json!([]));
    let by_guest = call(&app, Method::POST, &restore, &anna.token, None, None).await;
    assert_problem(by_guest, StatusCode::FORBIDDEN, "forbidden").await;

    let restored =
        json_of(call(&app, Method::POST, &restore, &organiser, None, Some("undo-1")).await, StatusCode::OK).await;
    assert_eq!((restored["id"].as_str(), restored["status"].as_str()), (Some(id.as_str()), Some("ready")));
    assert_eq!(app.used_bytes(&anna).await, bytes, "charged again");
    assert_eq!(pending_deletes(&app).await, 0, "no delete job left");
    let (_, seen) = app.get_json(&listing, &ben.token).await;
    assert_eq!(seen["items"][0]["id"], id.as_str(), "back in the gallery");
    let thumb = app.client.get(app.url(&format!("{path}/thumb"))).bearer_auth(&ben.token).send().await.expect("thumb");
    assert_eq!(thumb.status(), StatusCode::OK, "with its thumbnail");
    // A removal of its derivatives left to retry from before the restore (the worker made them
    // while it was deleted) finds it restored and keeps them.
    app.scalar(
        "INSERT INTO blob_jobs (upload_id, kind, event_id, attempts, run_after, created_at)
         SELECT id, 'delete_derivatives', event_id, 1, created_at, created_at FROM uploads
         RETURNING CAST(attempts AS BIGINT)",
    )
    .await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while app.scalar("SELECT COUNT(*) FROM blob_jobs WHERE kind = 'delete_derivatives'").await > 0 {
        assert!(std::time::Instant::now() < deadline, "the retried removal ran within 30 s");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let thumb = app.client.get(app.url(&format!("{path}/thumb"))).bearer_auth(&ben.token).send().await.expect("thumb");
    assert_eq!(thumb.status(), StatusCode::OK, "the restored photo keeps its thumbnail");
    let replay = call(&app, Method::POST, &restore, &organiser, None, Some("undo-1")).await;
    assert_eq!(replay.headers().get("idempotent-replayed").map(|v| v.as_bytes()), Some(&b"true"[..]));
    assert_eq!(replay.status(), StatusCode::OK);
    let live = call(&app, Method::POST, &restore, &organiser, None, None).await;
    assert_problem(live, StatusCode::CONFLICT, "upload_not_deleted").await;

    // Restored even past the quota: the photo was there before.
    let quota_zero = call(
        &app,
        Method::PATCH,
        format!("/api/v1/events/{}", event.slug),
        &organiser,
        Some(json!({"guest_quota_bytes": 0})),
        None,
    );
    assert_eq!(quota_zero.await.status(), StatusCode::OK);
    assert_eq!(call(&app, Method::DELETE, &path, &organiser, None, None).await.status(), StatusCode::NO_CONTENT);
    assert_eq!(call(&app, Method::POST, &restore, &organiser, None, None).await.status(), StatusCode::OK);
    assert_eq!(app.used_bytes(&anna).await, bytes, "over a quota of 0");
    assert_eq!(app.scalar("SELECT used_bytes FROM events").await, bytes, "and the event's total");
}

async fn a_delete_whose_bytes_are_gone_cannot_be_undone(backend: Backend) {
    let app = TestApp::spawn_with(backend, Options { undo_grace_s: 1, ..Options::default() }).await;
    let event = app.create_event().await;
    let organiser = app.organiser_login(&event).await;
    let anna = app.join(&event, "Anna").await;
    let upload = upload_ok(&app, &anna, &images::jpeg(32, 32)).await;
    let id = upload["id"].as_str().expect("id").to_owned();
    settled(&app, &anna.token, &id).await;
    assert_eq!(
        call(&app, Method::DELETE, format!("/api/v1/uploads/{id}"), &organiser, None, None).await.status(),
        StatusCode::NO_CONTENT
    );
    // A worker removes the bytes once the grace has passed.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while pending_deletes(&app).await > 0 {
        assert!(tokio::time::Instant::now() < deadline, "the delete job did not run after its grace");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let left: Vec<_> = [app.blob_files(), app.derivative_files()].concat();
    assert!(!left.iter().any(|f| f.to_string_lossy().contains(&id)), "its blobs are gone: {left:?}");
    let late = call(&app, Method::POST, format!("/api/v1/uploads/{id}/restore"), &organiser, None, Some("late"));
    assert_problem(late.await, StatusCode::GONE, "undo_expired").await;
    assert_eq!(app.used_bytes(&anna).await, 0, "nothing charged");

    // A guest's own delete removes the bytes at once: nothing to undo.
    let own = upload_ok(&app, &anna, &images::jpeg(30, 30)).await;
    let own_id = own["id"].as_str().expect("id").to_owned();
    assert_eq!(
        call(&app, Method::DELETE, format!("/api/v1/uploads/{own_id}"), &anna.token, None, None).await.status(),
        StatusCode::NO_CONTENT
    );
    let undo = call(&app, Method::POST, format!("/api/v1/uploads/{own_id}/restore"), &organiser, None, None).await;
    assert_problem(undo, StatusCode::GONE, "undo_expired").await;
    let unknown =
        call(&app, Method::POST, format!("/api/v1/uploads/{}/restore", Uuid::new_v4()), &organiser, None, None);
    assert_problem(unknown.await, StatusCode::NOT_FOUND, "not_found").await;
}
