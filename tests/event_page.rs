//! The guests' page as the organiser shapes it, on both backends: the welcome text, the cover
//! (chosen, served without credentials, gone with its photo), the guest downloads switch and
//! the upload window, and a keyed change replayed.

mod common;

use chrono::{Duration as Span, SecondsFormat, Utc};
use common::images;
use common::{Backend, Event, TestApp, assert_problem, settled, upload_ok};
use reqwest::StatusCode;
use serde_json::{Value, json};
use uuid::Uuid;

async fn patch(app: &TestApp, event: &Event, token: &str, body: Value) -> reqwest::Response {
    app.client
        .patch(app.url(&format!("/api/v1/events/{}", event.slug)))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .expect("PATCH event")
}

async fn patched(app: &TestApp, event: &Event, token: &str, body: Value) -> Value {
    let response = patch(app, event, token, body).await;
    assert_eq!(response.status(), StatusCode::OK);
    response.json().await.expect("event json")
}

/// The event as anyone sees it before joining: no credentials.
async fn public(app: &TestApp, event: &Event) -> Value {
    let response = app.client.get(app.url(&format!("/api/v1/events/{}", event.slug))).send().await.expect("GET");
    assert_eq!(response.status(), StatusCode::OK);
    response.json().await.expect("public event")
}

fn at(offset: Span) -> String {
    (Utc::now() + offset).to_rfc3339_opts(SecondsFormat::Millis, true)
}

async fn welcome_text_is_set_cleared_and_bounded(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let organiser = app.organiser_login(&event).await;
    assert_eq!(public(&app, &event).await["welcome_text"], Value::Null, "a new event has none");

    // Cleaned like a caption: line breaks kept (as \n), format characters gone, markup kept as text.
    let set =
        patched(&app, &event, &organiser, json!({"welcome_text": "  Hallo\r\nihr <b>Lieben</b>\u{202E}!  "})).await;
    assert_eq!(set["welcome_text"], "Hallo\nihr <b>Lieben</b>!");
    assert_eq!(public(&app, &event).await["welcome_text"], "Hallo\nihr <b>Lieben</b>!", "guests see it before joining");

    // Absent: unchanged.
    let renamed = patched(&app, &event, &organiser, json!({"name": "Anna & Ben 2026"})).await;
    assert_eq!(renamed["welcome_text"], "Hallo\nihr <b>Lieben</b>!");

    // 1000 characters fit, 1001 do not; a refusal changes nothing.
    let longest = "ä".repeat(1000);
    assert_eq!(patched(&app, &event, &organiser, json!({"welcome_text": longest})).await["welcome_text"], longest);
    let response = patch(&app, &event, &organiser, json!({"welcome_text": "x".repeat(1001), "name": "Other"})).await;
    let problem = assert_problem(response, StatusCode::UNPROCESSABLE_ENTITY, "invalid_welcome_text").await;
    assert!(problem["detail"].as_str().unwrap_or("").contains("1001"), "{problem}");
    let now = public(&app, &event).await;
    assert_eq!(now["welcome_text"], longest, "nothing half-stored");
    assert_eq!(now["name"], "Anna & Ben 2026", "nothing half-stored");

    // null clears; so does text that is empty once cleaned.
    assert_eq!(patched(&app, &event, &organiser, json!({"welcome_text": null})).await["welcome_text"], Value::Null);
    patched(&app, &event, &organiser, json!({"welcome_text": "Hi"})).await;
    assert_eq!(
        patched(&app, &event, &organiser, json!({"welcome_text": " \u{200B} "})).await["welcome_text"],
        Value::Null
    );

    // Only the organiser sets it.
    let guest = app.join(&event, "Anna").await;
    let response = patch(&app, &event, &guest.token, json!({"welcome_text": "mine"})).await;
    assert_problem(response, StatusCode::FORBIDDEN, "forbidden").await;
}

async fn get(app: &TestApp, path: &str, token: Option<&str>) -> reqwest::Response {
    let mut request = app.client.get(app.url(path));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.expect("GET")
}

async fn hide(app: &TestApp, token: &str, id: &str, hidden: bool) {
    let response = app
        .client
        .patch(app.url(&format!("/api/v1/uploads/{id}")))
        .bearer_auth(token)
        .json(&json!({"hidden": hidden}))
        .send()
        .await
        .expect("hide");
    assert_eq!(response.status(), StatusCode::OK);
}

async fn cover_is_a_ready_photo_of_the_event_served_to_anyone(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let organiser = app.organiser_login(&event).await;
    let anna = app.join(&event, "Anna").await;
    let cover = upload_ok(&app, &anna, &images::jpeg(640, 480)).await;
    let cover_id = cover["id"].as_str().expect("id").to_owned();
    let other = upload_ok(&app, &anna, &images::jpeg(320, 240)).await;
    let other_id = other["id"].as_str().expect("id").to_owned();
    settled(&app, &anna.token, &cover_id).await;
    settled(&app, &anna.token, &other_id).await;
    let cover_path = format!("/api/v1/events/{}/cover", event.slug);
    assert_problem(get(&app, &cover_path, None).await, StatusCode::NOT_FOUND, "not_found").await;

    let set = patched(&app, &event, &organiser, json!({"cover_upload_id": cover_id})).await;
    assert_eq!(set["cover_upload_id"], cover_id.as_str());
    assert_eq!(set["cover_url"], cover_path.as_str());
    assert_eq!(public(&app, &event).await["cover_url"], cover_path.as_str(), "the join page shows it");

    // Served without credentials: the cover's preview, revalidated rather than kept for a year.
    let response = get(&app, &cover_path, None).await;
    assert_eq!(response.status(), StatusCode::OK);
    let headers = response.headers().clone();
    assert_eq!(headers["content-type"], "image/jpeg");
    assert_eq!(headers["cache-control"], "public, no-cache");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    let etag = headers["etag"].to_str().expect("etag").to_owned();
    assert_eq!(etag, format!("\"{cover_id}-preview\""));
    let bytes = response.bytes().await.expect("cover bytes");
    let preview = get(&app, &format!("/api/v1/uploads/{cover_id}/preview"), Some(&anna.token)).await;
    assert_eq!(bytes, preview.bytes().await.expect("preview"), "the cover is the preview");
    let again = app.client.get(app.url(&cover_path)).header("If-None-Match", &etag).send().await.expect("GET");
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);

    // Not a photo that can be a cover: 422, and the cover stays.
    let elsewhere = app.create_event().await;
    let ben = app.join(&elsewhere, "Ben").await;
    let foreign = upload_ok(&app, &ben, &images::jpeg(64, 64)).await;
    settled(&app, &ben.token, foreign["id"].as_str().expect("id")).await;
    hide(&app, &organiser, &other_id, true).await;
    for (what, value) in [
        ("another event's upload", json!(foreign["id"])),
        ("a hidden upload", json!(other_id)),
        ("an unknown id", json!(Uuid::now_v7())),
        ("not an id", json!("cover.jpg")),
    ] {
        let response = patch(&app, &event, &organiser, json!({"cover_upload_id": value})).await;
        let problem = assert_problem(response, StatusCode::UNPROCESSABLE_ENTITY, "invalid_cover").await;
        assert!(problem["detail"].is_string(), "{what}: {problem}");
        assert_eq!(public(&app, &event).await["cover_url"], cover_path.as_str(), "{what}: the cover stays");
    }

    // Hidden: gone from the page while hidden; shown again: back.
    hide(&app, &organiser, &cover_id, true).await;
    assert_eq!(public(&app, &event).await["cover_url"], Value::Null);
    assert_problem(get(&app, &cover_path, None).await, StatusCode::NOT_FOUND, "not_found").await;
    hide(&app, &organiser, &cover_id, false).await;
    assert_eq!(public(&app, &event).await["cover_url"], cover_path.as_str());

    // Deleted: gone for good, no broken image.
    let deleted = app
        .client
        .delete(app.url(&format!("/api/v1/uploads/{cover_id}")))
        .bearer_auth(&anna.token)
        .send()
        .await
        .expect("delete");
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    let now = public(&app, &event).await;
    assert_eq!(now["cover_url"], Value::Null, "{now}");
    assert_problem(get(&app, &cover_path, None).await, StatusCode::NOT_FOUND, "not_found").await;
    let (_, whole) = app.get_json(&format!("/api/v1/events/{}", event.slug), &organiser).await;
    assert_eq!(whole["cover_upload_id"], Value::Null);

    // Removing the cover: null.
    hide(&app, &organiser, &other_id, false).await;
    patched(&app, &event, &organiser, json!({"cover_upload_id": other_id})).await;
    let removed = patched(&app, &event, &organiser, json!({"cover_upload_id": null})).await;
    assert_eq!(removed["cover_upload_id"], Value::Null);
    assert_eq!(removed["cover_url"], Value::Null);
    assert_problem(get(&app, &cover_path, None).await, StatusCode::NOT_FOUND, "not_found").await;
}

async fn guest_downloads_off_keeps_other_guests_originals_from_guests(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let organiser = app.organiser_login(&event).await;
    let anna = app.join(&event, "Anna").await;
    let ben = app.join(&event, "Ben").await;
    let annas = upload_ok(&app, &anna, &images::jpeg(320, 240)).await["id"].as_str().expect("id").to_owned();
    let bens = upload_ok(&app, &ben, &images::jpeg(320, 240)).await["id"].as_str().expect("id").to_owned();
    settled(&app, &anna.token, &annas).await;
    assert_eq!(public(&app, &event).await["guest_downloads"], true, "on by default");
    let original = |id: &str| format!("/api/v1/uploads/{id}/original");
    assert_eq!(get(&app, &original(&annas), Some(&ben.token)).await.status(), StatusCode::OK);

    let off = patched(&app, &event, &organiser, json!({"guest_downloads": false})).await;
    assert_eq!(off["guest_downloads"], false);
    assert_eq!(public(&app, &event).await["guest_downloads"], false, "the page knows before joining");

    let response = get(&app, &original(&annas), Some(&ben.token)).await;
    assert_problem(response, StatusCode::FORBIDDEN, "downloads_disabled").await;
    let ranged = app
        .client
        .get(app.url(&original(&annas)))
        .bearer_auth(&ben.token)
        .header("Range", "bytes=0-9")
        .send()
        .await
        .expect("GET");
    assert_problem(ranged, StatusCode::FORBIDDEN, "downloads_disabled").await;
    assert_eq!(get(&app, &original(&bens), Some(&ben.token)).await.status(), StatusCode::OK, "own original");
    assert_eq!(get(&app, &original(&annas), Some(&organiser)).await.status(), StatusCode::OK, "organiser");
    for size in ["thumb", "preview"] {
        let response = get(&app, &format!("/api/v1/uploads/{annas}/{size}"), Some(&ben.token)).await;
        assert_eq!(response.status(), StatusCode::OK, "{size} still loads");
    }

    patched(&app, &event, &organiser, json!({"guest_downloads": true})).await;
    assert_eq!(get(&app, &original(&annas), Some(&ben.token)).await.status(), StatusCode::OK, "on again");
}

async fn upload_window_refuses_new_uploads_outside_it(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let organiser = app.organiser_login(&event).await;
    let guest = app.join(&event, "Anna").await;
    let photo = images::jpeg(64, 64);

    // Before it opens: refused, saying when it opens; nothing stored.
    let opens = at(Span::hours(1));
    let set = patched(&app, &event, &organiser, json!({"uploads_open_from": opens})).await;
    assert_eq!(set["uploads_open_from"], opens.as_str());
    assert_eq!(set["uploads_open_until"], Value::Null);
    assert_eq!(set["uploads_open"], true, "the switch stays as it was");
    let seen = public(&app, &event).await;
    assert_eq!(seen["uploads_open_from"], opens.as_str(), "{seen}");
    let response = app.upload(&guest, &photo, Some(Uuid::new_v4())).await;
    let problem = assert_problem(response, StatusCode::FORBIDDEN, "uploads_closed").await;
    assert!(problem["detail"].as_str().unwrap_or("").contains(&opens), "{problem}");
    app.assert_nothing_stored(&guest).await;

    // Inside it: accepted.
    let key = Uuid::new_v4();
    patched(
        &app,
        &event,
        &organiser,
        json!({"uploads_open_from": at(-Span::hours(1)), "uploads_open_until": at(Span::hours(1))}),
    )
    .await;
    let response = app.upload(&guest, &photo, Some(key)).await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let stored: Value = response.json().await.expect("upload");

    // After it closed: new uploads refused, saying it closed; the replay of one made inside still answers.
    let closed = at(-Span::seconds(1));
    patched(&app, &event, &organiser, json!({"uploads_open_from": at(-Span::hours(2)), "uploads_open_until": closed}))
        .await;
    let response = app.upload(&guest, &photo, Some(Uuid::new_v4())).await;
    let problem = assert_problem(response, StatusCode::FORBIDDEN, "uploads_closed").await;
    assert!(problem["detail"].as_str().unwrap_or("").contains(&closed), "{problem}");
    let replay = app.upload(&guest, &photo, Some(key)).await;
    assert_eq!(replay.status(), StatusCode::OK, "a replay is a replay");
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    assert_eq!(replay.json::<Value>().await.expect("upload")["id"], stored["id"]);
    assert_eq!(app.upload_rows().await, 1);

    // The window and the switch must both allow: a window that is open does not reopen a closed switch.
    patched(&app, &event, &organiser, json!({"uploads_open_until": null, "uploads_open": false})).await;
    let response = app.upload(&guest, &photo, Some(Uuid::new_v4())).await;
    assert_problem(response, StatusCode::FORBIDDEN, "uploads_closed").await;
    patched(&app, &event, &organiser, json!({"uploads_open": true})).await;
    assert_eq!(app.upload(&guest, &photo, Some(Uuid::new_v4())).await.status(), StatusCode::CREATED);
}

async fn upload_window_must_have_its_ends_in_order(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let organiser = app.organiser_login(&event).await;
    let (from, until) = (at(Span::hours(1)), at(Span::hours(5)));
    patched(&app, &event, &organiser, json!({"uploads_open_from": from, "uploads_open_until": until})).await;

    for (what, body) in [
        ("equal ends", json!({"uploads_open_from": until, "uploads_open_until": until})),
        (
            "the end before the start",
            json!({"uploads_open_from": at(Span::hours(6)), "uploads_open_until": at(Span::hours(2))}),
        ),
        ("only the end, before the stored start", json!({"uploads_open_until": at(Span::minutes(30))})),
        ("only the start, after the stored end", json!({"uploads_open_from": at(Span::hours(6))})),
        ("not a time", json!({"uploads_open_from": "tomorrow"})),
        ("no offset", json!({"uploads_open_until": "2026-06-14T14:00:00"})),
    ] {
        let response = patch(&app, &event, &organiser, body).await;
        let problem = assert_problem(response, StatusCode::UNPROCESSABLE_ENTITY, "invalid_upload_window").await;
        assert!(problem["detail"].is_string(), "{what}");
        let now = public(&app, &event).await;
        assert_eq!(
            (now["uploads_open_from"].as_str(), now["uploads_open_until"].as_str()),
            (Some(&*from), Some(&*until)),
            "{what}: unchanged"
        );
    }

    // Any offset is read as the moment it names; times come back in UTC.
    let changed = patched(&app, &event, &organiser, json!({"uploads_open_until": "2099-06-15T02:00:00+02:00"})).await;
    assert_eq!(changed["uploads_open_until"], "2099-06-15T00:00:00.000Z");
    // null clears one end; the other stays.
    let cleared = patched(&app, &event, &organiser, json!({"uploads_open_from": null})).await;
    assert_eq!(cleared["uploads_open_from"], Value::Null);
    assert_eq!(cleared["uploads_open_until"], "2099-06-15T00:00:00.000Z");
}

async fn a_keyed_change_is_replayed(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let organiser = app.organiser_login(&event).await;
    let body =
        json!({"welcome_text": "Willkommen!", "guest_downloads": false, "uploads_open_until": "2099-01-01T00:00:00Z"});
    let send = |body: Value| {
        app.client
            .patch(app.url(&format!("/api/v1/events/{}", event.slug)))
            .bearer_auth(&organiser)
            .header("Idempotency-Key", "page-1")
            .json(&body)
            .send()
    };
    let first = send(body.clone()).await.expect("PATCH");
    assert_eq!(first.status(), StatusCode::OK);
    assert!(first.headers().get("idempotent-replayed").is_none());
    let first: Value = first.json().await.expect("json");
    assert_eq!(first["welcome_text"], "Willkommen!");

    patched(&app, &event, &organiser, json!({"welcome_text": "Später", "guest_downloads": true})).await;
    let replay = send(body).await.expect("PATCH");
    assert_eq!(replay.status(), StatusCode::OK);
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    assert_eq!(replay.json::<Value>().await.expect("json"), first, "the recorded answer");
    let now = public(&app, &event).await;
    assert_eq!(now["welcome_text"], "Später", "the replay changed nothing");
    assert_eq!(now["guest_downloads"], true);

    let reused = send(json!({"welcome_text": "Anders"})).await.expect("PATCH");
    assert_problem(reused, StatusCode::UNPROCESSABLE_ENTITY, "idempotency_key_reused").await;
}

both_backends!(
    welcome_text_is_set_cleared_and_bounded,
    cover_is_a_ready_photo_of_the_event_served_to_anyone,
    guest_downloads_off_keeps_other_guests_originals_from_guests,
    upload_window_refuses_new_uploads_outside_it,
    upload_window_must_have_its_ends_in_order,
    a_keyed_change_is_replayed,
);
