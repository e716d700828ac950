//! The instance admin without the command line: listing events with their counts, opening and
//! closing uploads, a new organiser password that ends every session, the join QR code, and
//! deleting an event — gone at once for its guests and organisers, every photo and derivative
//! of it removed from the store by its blob jobs, other events untouched.

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::{ADMIN_TOKEN, Backend, Event, TestApp, all_files, assert_problem, images, settled, upload_ok};
use reqwest::StatusCode;
use serde_json::{Value, json};

both_backends!(
    the_admin_lists_events_newest_first_with_their_counts,
    admin_routes_refuse_guests_organisers_and_strangers,
    a_new_organiser_password_ends_every_session_and_only_it_logs_in,
    the_admin_opens_and_closes_uploads_of_any_event,
    the_admin_gets_the_join_qr_code_of_any_event_and_nobody_else_does,
    the_demo_event_asks_for_a_name_until_one_is_set_and_keeps_its_slug,
);
every_store!(deleting_an_event_removes_it_for_everyone_and_every_photo_of_it_from_the_store);

async fn list(app: &TestApp) -> Value {
    let (status, body) = app.get_json("/api/v1/events", ADMIN_TOKEN).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

fn listed<'a>(list: &'a Value, event: &Event) -> Option<&'a Value> {
    list["items"].as_array().expect("items").iter().find(|e| e["slug"] == event.slug.as_str())
}

async fn the_admin_lists_events_newest_first_with_their_counts(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let older = app.create_event().await;
    let newer = app.create_event().await;
    let anna = app.join(&older, "Anna").await;
    app.join(&older, "Ben").await;
    let kept = upload_ok(&app, &anna, &images::jpeg(300, 200)).await;
    let gone = upload_ok(&app, &anna, &images::jpeg(320, 240)).await;
    let delete = app
        .client
        .delete(app.url(&format!("/api/v1/uploads/{}", gone["id"].as_str().expect("id"))))
        .bearer_auth(&anna.token)
        .send()
        .await
        .expect("delete");
    assert_eq!(delete.status(), StatusCode::NO_CONTENT);

    let body = list(&app).await;
    assert_eq!(body["truncated"], false);
    let slugs: Vec<&str> = body["items"].as_array().expect("items").iter().filter_map(|e| e["slug"].as_str()).collect();
    assert_eq!(slugs, vec![newer.slug.as_str(), older.slug.as_str()], "newest first");
    let item = listed(&body, &older).expect("older event listed");
    assert_eq!(item["name"], "Anna & Ben");
    assert_eq!(item["guest_count"], 2, "{item}");
    assert_eq!(item["upload_count"], 1, "a deleted photo does not count: {item}");
    assert_eq!(item["used_bytes"], kept["bytes"], "storage: the one photo kept: {item}");
    assert_eq!(item["uploads_open"], true);
    assert_eq!(item["join_url"], format!("{}/e/{}?join={}", app.base, older.slug, older.join_token));
    assert!(item["created_at"].as_str().is_some_and(|t| t.ends_with('Z')), "{item}");
    let empty = listed(&body, &newer).expect("newer event listed");
    assert_eq!((empty["guest_count"].as_i64(), empty["upload_count"].as_i64()), (Some(0), Some(0)));
}

async fn admin_routes_refuse_guests_organisers_and_strangers(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let organiser = app.organiser_login(&event).await;
    let slug = &event.slug;
    for (who, token) in
        [("guest", Some(guest.token.as_str())), ("organiser", Some(organiser.as_str())), ("nobody", None)]
    {
        let requests = [
            app.client.get(app.url("/api/v1/events")),
            app.client
                .post(app.url(&format!("/api/v1/events/{slug}/organiser-password")))
                .json(&json!({"password": "a new password"})),
            app.client.delete(app.url(&format!("/api/v1/events/{slug}"))),
            app.client.delete(app.url(&format!("/api/v1/events/{slug}"))).header("Idempotency-Key", "k-1"),
        ];
        for request in requests {
            let request = match token {
                Some(token) => request.bearer_auth(token),
                None => request,
            };
            let response = request.send().await.expect("request");
            match who {
                "nobody" => assert_problem(response, StatusCode::UNAUTHORIZED, "unauthenticated").await,
                _ => assert_problem(response, StatusCode::FORBIDDEN, "forbidden").await,
            };
        }
    }
    // Nothing happened: the event is there and its password still logs in.
    assert!(listed(&list(&app).await, &event).is_some());
    app.organiser_login(&event).await;
}

async fn set_password(app: &TestApp, slug: &str, password: &str) -> reqwest::Response {
    app.client
        .post(app.url(&format!("/api/v1/events/{slug}/organiser-password")))
        .bearer_auth(ADMIN_TOKEN)
        .header("Idempotency-Key", format!("password-{password}"))
        .json(&json!({"password": password}))
        .send()
        .await
        .expect("set password")
}

async fn login(app: &TestApp, slug: &str, password: &str) -> reqwest::Response {
    app.client
        .post(app.url(&format!("/api/v1/events/{slug}/organiser-sessions")))
        .json(&json!({"password": password}))
        .send()
        .await
        .expect("login")
}

async fn a_new_organiser_password_ends_every_session_and_only_it_logs_in(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let other = app.create_event().await;
    let sessions = [app.organiser_login(&event).await, app.organiser_login(&event).await];
    let other_session = app.organiser_login(&other).await;
    let gallery = format!("/api/v1/events/{}/uploads", event.slug);
    assert_eq!(app.get_json(&gallery, &sessions[0]).await.0, StatusCode::OK);

    let weak = set_password(&app, &event.slug, "short").await;
    assert_problem(weak, StatusCode::UNPROCESSABLE_ENTITY, "weak_password").await;
    assert_eq!(app.get_json(&gallery, &sessions[0]).await.0, StatusCode::OK, "a refused password ends nothing");
    let unknown = set_password(&app, "no-such-event", "a new password").await;
    assert_problem(unknown, StatusCode::NOT_FOUND, "event_not_found").await;

    let set = set_password(&app, &event.slug, "a new password").await;
    assert_eq!(set.status(), StatusCode::NO_CONTENT);
    for token in &sessions {
        let (status, body) = app.get_json(&gallery, token).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "every session of the event ended: {body}");
        assert_eq!(body["code"], "unauthenticated");
    }
    let (status, _) = app.get_json(&format!("/api/v1/events/{}/uploads", other.slug), &other_session).await;
    assert_eq!(status, StatusCode::OK, "another event's organiser stays logged in");

    assert_problem(login(&app, &event.slug, &event.password).await, StatusCode::UNAUTHORIZED, "invalid_credentials")
        .await;
    let fresh = login(&app, &event.slug, "a new password").await;
    assert_eq!(fresh.status(), StatusCode::CREATED);
    let token = fresh.json::<Value>().await.expect("json")["token"].as_str().expect("token").to_owned();

    // The same key again is the same answer, and does not end the session made since.
    let replay = set_password(&app, &event.slug, "a new password").await;
    assert_eq!(replay.status(), StatusCode::NO_CONTENT);
    assert_eq!(replay.headers().get("idempotent-replayed").map(|v| v.as_bytes()), Some(&b"true"[..]));
    assert_eq!(app.get_json(&gallery, &token).await.0, StatusCode::OK, "a replay ends nothing");
}

async fn patch_event(app: &TestApp, slug: &str, body: Value) -> reqwest::Response {
    app.client
        .patch(app.url(&format!("/api/v1/events/{slug}")))
        .bearer_auth(ADMIN_TOKEN)
        .json(&body)
        .send()
        .await
        .expect("patch")
}

async fn the_admin_opens_and_closes_uploads_of_any_event(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;

    let closed = patch_event(&app, &event.slug, json!({"uploads_open": false})).await;
    assert_eq!(closed.status(), StatusCode::OK);
    let body: Value = closed.json().await.expect("json");
    assert_eq!(body["uploads_open"], false, "{body}");
    let refused = app.upload(&guest, &images::jpeg(300, 200), Some(uuid::Uuid::new_v4())).await;
    assert_problem(refused, StatusCode::FORBIDDEN, "uploads_closed").await;
    assert_eq!(listed(&list(&app).await, &event).expect("listed")["uploads_open"], false);

    let opened = patch_event(&app, &event.slug, json!({"uploads_open": true})).await;
    assert_eq!(opened.status(), StatusCode::OK);
    upload_ok(&app, &guest, &images::jpeg(300, 200)).await;

    let unknown = patch_event(&app, "no-such-event", json!({"uploads_open": false})).await;
    assert_problem(unknown, StatusCode::NOT_FOUND, "event_not_found").await;
}

async fn the_demo_event_asks_for_a_name_until_one_is_set_and_keeps_its_slug(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    confetti::bootstrap::ensure_demo_event(&app.db, &app.state.blocking, &app.state.settings)
        .await
        .expect("demo event");
    let demo = list(&app).await["items"][0].clone();
    assert_eq!(demo["name"], "Demo event");
    assert_eq!(demo["name_chosen"], false, "the server made the name up: {demo}");
    let slug = demo["slug"].as_str().expect("slug").to_owned();

    // Other changes leave it asking; an empty name is refused and changes nothing.
    let opened = patch_event(&app, &slug, json!({"uploads_open": true})).await;
    assert_eq!(opened.json::<Value>().await.expect("json")["name_chosen"], false);
    assert_problem(patch_event(&app, &slug, json!({"name": "   "})).await, StatusCode::BAD_REQUEST, "invalid_request")
        .await;
    assert_eq!(list(&app).await["items"][0]["name_chosen"], false);

    let named = patch_event(&app, &slug, json!({"name": "Sommerfest am See"})).await;
    assert_eq!(named.status(), StatusCode::OK);
    let named: Value = named.json().await.expect("json");
    assert_eq!((named["name"].as_str(), named["name_chosen"].as_bool()), (Some("Sommerfest am See"), Some(true)));
    assert_eq!(named["slug"], slug.as_str(), "links already shared keep working");
    let public = app.client.get(app.url(&format!("/api/v1/events/{slug}"))).send().await.expect("show");
    assert_eq!(public.json::<Value>().await.expect("json")["name"], "Sommerfest am See");

    // An event created with a name never asks.
    let event = app.create_event().await;
    assert_eq!(listed(&list(&app).await, &event).expect("listed")["name_chosen"], true);
}

async fn the_admin_gets_the_join_qr_code_of_any_event_and_nobody_else_does(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let qr = format!("/e/{}/qr.svg", event.slug);

    let response = app.client.get(app.url(&qr)).bearer_auth(ADMIN_TOKEN).send().await.expect("qr");
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers().get("content-type").map(|v| v.as_bytes()), Some(&b"image/svg+xml"[..]));
    assert!(response.text().await.expect("svg").contains("<svg"));

    let stranger = app.client.get(app.url(&qr)).send().await.expect("qr");
    assert_problem(stranger, StatusCode::UNAUTHORIZED, "unauthenticated").await;
    let as_guest = app.client.get(app.url(&qr)).bearer_auth(&guest.token).send().await.expect("qr");
    assert_problem(as_guest, StatusCode::FORBIDDEN, "forbidden").await;
    let unknown = app.client.get(app.url("/e/no-such-event/qr.svg")).bearer_auth(ADMIN_TOKEN).send().await.expect("qr");
    assert_problem(unknown, StatusCode::NOT_FOUND, "event_not_found").await;
}

/// Every file of the store whose key names the event (originals and derivatives are kept
/// under the event's id).
fn files_of(app: &TestApp, event: &Event) -> Vec<PathBuf> {
    let id = event.id.to_string();
    let mut files: Vec<PathBuf> =
        all_files(&app.blob_dir()).into_iter().filter(|f| f.to_string_lossy().contains(&id)).collect();
    files.sort();
    files
}

async fn delete_event(app: &TestApp, slug: &str, key: Option<&str>) -> reqwest::Response {
    let mut request = app.client.delete(app.url(&format!("/api/v1/events/{slug}"))).bearer_auth(ADMIN_TOKEN);
    if let Some(key) = key {
        request = request.header("Idempotency-Key", key);
    }
    request.send().await.expect("delete event")
}

async fn deleting_an_event_removes_it_for_everyone_and_every_photo_of_it_from_the_store(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let doomed = app.create_event().await;
    let kept = app.create_event().await;
    let guest = app.join(&doomed, "Anna").await;
    let other_guest = app.join(&kept, "Ben").await;
    let organiser = app.organiser_login(&doomed).await;
    for photo in [images::jpeg(300, 200), images::jpeg(240, 320)] {
        let upload = upload_ok(&app, &guest, &photo).await;
        settled(&app, &guest.token, upload["id"].as_str().expect("id")).await;
    }
    let other = upload_ok(&app, &other_guest, &images::jpeg(320, 240)).await;
    let other_id = other["id"].as_str().expect("id").to_owned();
    settled(&app, &other_guest.token, &other_id).await;
    // Two originals, two thumbs, two previews, two AVIF thumbs.
    assert_eq!(files_of(&app, &doomed).len(), 8, "{:?}", files_of(&app, &doomed));
    let kept_files = files_of(&app, &kept);
    assert_eq!(kept_files.len(), 4, "{kept_files:?}");

    let deleted = delete_event(&app, &doomed.slug, Some("delete-once")).await;
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);

    // Gone for everyone, at once.
    let shown = app.client.get(app.url(&format!("/api/v1/events/{}", doomed.slug))).send().await.expect("show");
    assert_problem(shown, StatusCode::NOT_FOUND, "event_not_found").await;
    let (status, body) = app.get_json("/api/v1/me", &guest.token).await;
    assert_eq!((status, &body["code"]), (StatusCode::UNAUTHORIZED, &json!("unauthenticated")), "{body}");
    let (status, body) = app.get_json(&format!("/api/v1/events/{}/uploads", doomed.slug), &organiser).await;
    assert_eq!((status, &body["code"]), (StatusCode::UNAUTHORIZED, &json!("unauthenticated")), "{body}");
    let join = app
        .client
        .post(app.url(&format!("/api/v1/events/{}/guests", doomed.slug)))
        .json(&json!({"join_token": doomed.join_token, "display_name": "Cleo"}))
        .send()
        .await
        .expect("join");
    assert_problem(join, StatusCode::NOT_FOUND, "event_not_found").await;
    assert_problem(login(&app, &doomed.slug, &doomed.password).await, StatusCode::NOT_FOUND, "event_not_found").await;
    let listing = list(&app).await;
    assert!(listed(&listing, &doomed).is_none(), "not listed: {listing}");
    assert!(listed(&listing, &kept).is_some());

    // A retry with the key is the same answer; without it, the event is not found.
    let replay = delete_event(&app, &doomed.slug, Some("delete-once")).await;
    assert_eq!(replay.status(), StatusCode::NO_CONTENT);
    assert_eq!(replay.headers().get("idempotent-replayed").map(|v| v.as_bytes()), Some(&b"true"[..]));
    assert_problem(delete_event(&app, &doomed.slug, None).await, StatusCode::NOT_FOUND, "event_not_found").await;

    // Every original and derivative of it leaves the store once its blob jobs ran.
    let started = Instant::now();
    loop {
        let left = files_of(&app, &doomed);
        let pending = app.db.pending_blob_jobs().await.expect("pending blob jobs");
        if left.is_empty() && pending == 0 {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "still there after 30 s: {left:?}, {pending} jobs");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        app.scalar("SELECT COUNT(*) FROM uploads WHERE deleted_at IS NULL").await,
        1,
        "only the other event's photo is live"
    );

    // The other event is untouched.
    assert_eq!(files_of(&app, &kept), kept_files);
    let original = app
        .client
        .get(app.url(&format!("/api/v1/uploads/{other_id}/original")))
        .bearer_auth(&other_guest.token)
        .send()
        .await
        .expect("original");
    assert_eq!(original.status(), StatusCode::OK);
    upload_ok(&app, &other_guest, &images::jpeg(200, 200)).await;
}
