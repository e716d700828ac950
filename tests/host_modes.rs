//! The host modes on both backends: the review gate (pending uploads seen only by their
//! uploader and the organiser until approved), the private "drop box" gallery and the gallery
//! that opens at a set time — in the listing, by id, in the media, on the live stream and in
//! the export.

mod common;

use chrono::{Duration as Span, Utc};
use common::images;
use common::reading::{next_sse, unzip};
use common::{Backend, Event, Guest, TestApp, assert_problem, settled, upload_form, upload_ok};
use reqwest::StatusCode;
use serde_json::{Value, json};
use uuid::Uuid;

async fn patch_event(app: &TestApp, event: &Event, organiser: &str, body: Value) -> reqwest::Response {
    let url = app.url(&format!("/api/v1/events/{}", event.slug));
    app.client.patch(url).bearer_auth(organiser).json(&body).send().await.expect("PATCH event")
}

/// The organiser changes the event; returns the Event as answered.
async fn set_modes(app: &TestApp, event: &Event, organiser: &str, body: Value) -> Value {
    let response = patch_event(app, event, organiser, body).await;
    assert_eq!(response.status(), StatusCode::OK, "changing the host modes");
    response.json().await.expect("event json")
}

/// The ids in a listing of the event, as `token` sees it (`query` after `?`).
async fn listed(app: &TestApp, event: &Event, token: &str, query: &str) -> Vec<String> {
    let (status, page) = app.get_json(&format!("/api/v1/events/{}/uploads?{query}", event.slug), token).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    page["items"].as_array().expect("items").iter().map(|u| u["id"].as_str().expect("id").to_owned()).collect()
}

async fn status_of(app: &TestApp, path: &str, token: &str) -> StatusCode {
    app.client.get(app.url(path)).bearer_auth(token).send().await.expect("GET").status()
}

/// Asserts `guest` cannot tell the upload exists: by id, comments and every media URL are 404.
async fn assert_unseen(app: &TestApp, guest: &Guest, id: &str) {
    for path in ["", "/original", "/thumb", "/preview", "/comments"] {
        let path = format!("/api/v1/uploads/{id}{path}");
        assert_eq!(status_of(app, &path, &guest.token).await, StatusCode::NOT_FOUND, "{path}");
    }
}

async fn live(app: &TestApp, event: &Event, token: &str) -> reqwest::Response {
    let stream = app
        .client
        .get(app.url(&format!("/api/v1/events/{}/live", event.slug)))
        .bearer_auth(token)
        .send()
        .await
        .expect("live");
    assert_eq!(stream.status(), StatusCode::OK);
    stream
}

async fn change_upload(app: &TestApp, id: &str, token: &str, key: &str, body: Value) -> reqwest::Response {
    let request = app.client.patch(app.url(&format!("/api/v1/uploads/{id}"))).bearer_auth(token);
    request.header("Idempotency-Key", key).json(&body).send().await.expect("PATCH upload")
}

async fn approve(app: &TestApp, id: &str, token: &str, key: &str) -> reqwest::Response {
    change_upload(app, id, token, key, json!({"approved": true})).await
}

/// A fresh event on `backend`, its organiser's token and two guests, Anna and Ben.
async fn party(backend: Backend) -> (TestApp, Event, String, Guest, Guest) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let organiser = app.organiser_login(&event).await;
    let anna = app.join(&event, "Anna").await;
    let ben = app.join(&event, "Ben").await;
    (app, event, organiser, anna, ben)
}

async fn pending_uploads_are_seen_only_by_their_uploader_and_the_organiser(backend: Backend) {
    let (app, event, organiser, anna, ben) = party(backend).await;
    let before = upload_ok(&app, &anna, &images::jpeg(320, 240)).await;
    assert_eq!(before["review"], "approved");

    let changed = set_modes(&app, &event, &organiser, json!({"review_uploads": true})).await;
    assert_eq!(changed["review_uploads"], true);
    assert_eq!(changed["gallery"], "everyone", "the other modes stay");
    let (_, public) = app.get_json(&format!("/api/v1/events/{}", event.slug), &ben.token).await;
    assert_eq!(public["review_uploads"], true, "the guest page learns of the gate: {public}");
    assert_eq!(public.get("join_token"), None);

    let pending = upload_ok(&app, &anna, &images::jpeg(640, 480)).await;
    assert_eq!(pending["review"], "pending");
    let id = pending["id"].as_str().expect("id").to_owned();
    let mine = settled(&app, &anna.token, &id).await;
    assert_eq!((mine["review"].as_str(), mine["status"].as_str()), (Some("pending"), Some("ready")));
    let before_id = before["id"].as_str().expect("id").to_owned();

    assert_eq!(listed(&app, &event, &ben.token, "").await, vec![before_id.clone()], "other guests: approved only");
    assert_unseen(&app, &ben, &id).await;
    assert_eq!(listed(&app, &event, &anna.token, "").await, vec![id.clone(), before_id.clone()], "the uploader");
    for path in ["/thumb", "/original"] {
        assert_eq!(status_of(&app, &format!("/api/v1/uploads/{id}{path}"), &anna.token).await, StatusCode::OK);
    }
    assert_eq!(listed(&app, &event, &organiser, "").await, vec![id.clone(), before_id.clone()], "the organiser");
    assert_eq!(listed(&app, &event, &organiser, "review=pending").await, vec![id.clone()], "the review list");
    assert_eq!(listed(&app, &event, &organiser, "review=approved").await, vec![before_id]);
    let response = app.client.get(app.url(&format!("/api/v1/events/{}/uploads?review=maybe", event.slug)));
    assert_problem(
        response.bearer_auth(&organiser).send().await.expect("GET"),
        StatusCode::BAD_REQUEST,
        "invalid_request",
    )
    .await;

    // Another guest can neither delete nor like what they cannot see.
    let response = app.client.delete(app.url(&format!("/api/v1/uploads/{id}"))).bearer_auth(&ben.token).send().await;
    assert_problem(response.expect("DELETE"), StatusCode::NOT_FOUND, "not_found").await;
    let response = app.client.put(app.url(&format!("/api/v1/uploads/{id}/like"))).bearer_auth(&ben.token).send().await;
    assert_problem(response.expect("PUT"), StatusCode::NOT_FOUND, "not_found").await;

    // Switching the gate off approves nothing.
    let changed = set_modes(&app, &event, &organiser, json!({"review_uploads": false})).await;
    assert_eq!(changed["review_uploads"], false);
    assert_unseen(&app, &ben, &id).await;
    assert_eq!(upload_ok(&app, &anna, &images::jpeg(200, 150)).await["review"], "approved", "new ones go public");
}

async fn approval_shows_the_photo_to_everyone_and_on_the_live_stream(backend: Backend) {
    let (app, event, organiser, anna, ben) = party(backend).await;
    set_modes(&app, &event, &organiser, json!({"review_uploads": true})).await;
    let mut bens_stream = live(&app, &event, &ben.token).await;
    let mut annas_stream = live(&app, &event, &anna.token).await;

    let pending = upload_ok(&app, &anna, &images::jpeg(640, 480)).await;
    let id = pending["id"].as_str().expect("id").to_owned();
    let (kind, data) = next_sse(&mut annas_stream).await;
    assert_eq!(
        (kind.as_str(), data["id"].as_str(), data["review"].as_str()),
        ("upload", Some(id.as_str()), Some("pending"))
    );
    assert_eq!(data["status"], "ready", "the uploader hears of their own photo once it is ready");

    // A guest may not approve, whatever the body.
    let response = approve(&app, &id, &anna.token, "guest-try").await;
    assert_problem(response, StatusCode::FORBIDDEN, "forbidden").await;
    let response = change_upload(&app, &id, &organiser, "no-going-back", json!({"approved": false})).await;
    assert_problem(response, StatusCode::BAD_REQUEST, "invalid_request").await;
    assert_unseen(&app, &ben, &id).await;
    // Nor is it the event's cover, which anyone can load, until it is approved.
    let response = patch_event(&app, &event, &organiser, json!({"cover_upload_id": id})).await;
    let problem = assert_problem(response, StatusCode::UNPROCESSABLE_ENTITY, "invalid_cover").await;
    assert!(problem["detail"].as_str().is_some_and(|d| d.contains("approval")), "{problem}");

    let key = Uuid::new_v4().to_string();
    let response = approve(&app, &id, &organiser, &key).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers().get("idempotent-replayed"), None);
    let approved: Value = response.json().await.expect("json");
    assert_eq!((approved["review"].as_str(), approved["status"].as_str()), (Some("approved"), Some("ready")));

    // Ben heard of nothing while it was pending: his first news is the approval.
    let (kind, data) = next_sse(&mut bens_stream).await;
    assert_eq!(
        (kind.as_str(), data["id"].as_str(), data["review"].as_str()),
        ("upload", Some(id.as_str()), Some("approved"))
    );
    assert!(data["urls"]["thumb"].is_string());
    assert_eq!(listed(&app, &event, &ben.token, "").await, vec![id.clone()]);
    assert_eq!(status_of(&app, &format!("/api/v1/uploads/{id}/thumb"), &ben.token).await, StatusCode::OK);
    assert_eq!(listed(&app, &event, &organiser, "review=pending").await, Vec::<String>::new());
    let changed = set_modes(&app, &event, &organiser, json!({"cover_upload_id": id})).await;
    assert_eq!(changed["cover_upload_id"].as_str(), Some(id.as_str()), "approved, it may be the cover");

    // The same key again: the recorded answer, nothing announced again.
    let response = approve(&app, &id, &organiser, &key).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["idempotent-replayed"], "true");
    assert_eq!(response.json::<Value>().await.expect("json")["review"], "approved");
    // Approving again with a new key changes nothing and still answers 200.
    let response = approve(&app, &id, &organiser, "another-key").await;
    assert_eq!(response.status(), StatusCode::OK);
    let feed = app.scalar("SELECT COUNT(*) FROM live_feed WHERE kind = 'upload'").await;
    assert_eq!(feed, 2, "one announcement when ready, one at the approval");
}

async fn the_export_holds_pending_photos_only_on_request(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let organiser = app.organiser_login(&event).await;
    let anna = app.join(&event, "Anna").await;
    let send = |name: &'static str| {
        let form = upload_form(&images::jpeg(120, 90), Some(Uuid::new_v4()), name, None);
        app.upload_form(&anna, form, None)
    };
    assert_eq!(send("public.jpg").await.status(), StatusCode::CREATED);
    set_modes(&app, &event, &organiser, json!({"review_uploads": true})).await;
    assert_eq!(send("waiting.jpg").await.status(), StatusCode::CREATED);

    let export = |query: &str| {
        app.client.get(app.url(&format!("/api/v1/events/{}/export.zip{query}", event.slug))).bearer_auth(&organiser)
    };
    for (query, expected) in [
        ("", vec!["Anna - public.jpg"]),
        ("?include_pending=false", vec!["Anna - public.jpg"]),
        ("?include_pending=true", vec!["Anna - public.jpg", "Anna - waiting.jpg"]),
        ("?include_pending=true&include_hidden=true", vec!["Anna - public.jpg", "Anna - waiting.jpg"]),
    ] {
        let response = export(query).send().await.expect("export");
        assert_eq!(response.status(), StatusCode::OK, "{query}");
        let mut names: Vec<String> = unzip(response.bytes().await.expect("zip").to_vec()).await.into_keys().collect();
        names.sort();
        assert_eq!(names, expected, "{query:?}");
    }
    let response = export("?include_pending=yes").send().await.expect("export");
    assert_problem(response, StatusCode::BAD_REQUEST, "invalid_request").await;
}

async fn a_drop_box_shows_each_guest_their_own_photos_only(backend: Backend) {
    let (app, event, organiser, anna, ben) = party(backend).await;
    let annas_old = upload_ok(&app, &anna, &images::jpeg(320, 240)).await["id"].as_str().expect("id").to_owned();
    let changed = set_modes(&app, &event, &organiser, json!({"gallery": "own_uploads"})).await;
    assert_eq!(changed["gallery"], "own_uploads");
    assert_eq!(changed["gallery_open"], false);
    let (_, public) = app.get_json(&format!("/api/v1/events/{}", event.slug), "").await;
    assert_eq!((public["gallery"].as_str(), public["gallery_open"].as_bool()), (Some("own_uploads"), Some(false)));

    let mut bens_stream = live(&app, &event, &ben.token).await;
    let annas = upload_ok(&app, &anna, &images::jpeg(640, 480)).await["id"].as_str().expect("id").to_owned();
    settled(&app, &anna.token, &annas).await;
    let bens = upload_ok(&app, &ben, &images::jpeg(480, 640)).await["id"].as_str().expect("id").to_owned();
    let (kind, data) = next_sse(&mut bens_stream).await;
    assert_eq!(
        (kind.as_str(), data["id"].as_str()),
        ("upload", Some(bens.as_str())),
        "Anna's photo is not news to Ben"
    );

    assert_eq!(listed(&app, &event, &ben.token, "").await, vec![bens.clone()]);
    assert_eq!(listed(&app, &event, &anna.token, "").await, vec![annas.clone(), annas_old.clone()]);
    assert_unseen(&app, &ben, &annas).await;
    assert_unseen(&app, &ben, &annas_old).await;
    assert_eq!(listed(&app, &event, &organiser, "").await, vec![bens.clone(), annas.clone(), annas_old.clone()]);
    assert_eq!(upload_ok(&app, &anna, &images::jpeg(100, 80)).await["review"], "approved", "no review gate implied");

    let response = patch_event(&app, &event, &organiser, json!({"gallery": "nobody"})).await;
    assert_problem(response, StatusCode::BAD_REQUEST, "invalid_request").await;
    set_modes(&app, &event, &organiser, json!({"gallery": "everyone"})).await;
    assert_eq!(listed(&app, &event, &ben.token, "").await.len(), 4, "shared again");
}

async fn a_gallery_opens_at_its_time(backend: Backend) {
    let (app, event, organiser, anna, ben) = party(backend).await;
    let opens = (Utc::now() + Span::hours(2)).to_rfc3339();
    let changed = set_modes(&app, &event, &organiser, json!({"gallery_opens_at": opens})).await;
    assert!(changed["gallery_opens_at"].is_string(), "{changed}");
    assert_eq!((changed["gallery"].as_str(), changed["gallery_open"].as_bool()), (Some("everyone"), Some(false)));
    let (_, public) = app.get_json(&format!("/api/v1/events/{}", event.slug), &ben.token).await;
    assert_eq!(public["gallery_opens_at"], changed["gallery_opens_at"]);

    let annas = upload_ok(&app, &anna, &images::jpeg(640, 480)).await["id"].as_str().expect("id").to_owned();
    settled(&app, &anna.token, &annas).await;
    assert_eq!(listed(&app, &event, &ben.token, "").await, Vec::<String>::new(), "not yet");
    assert_unseen(&app, &ben, &annas).await;
    assert_eq!(listed(&app, &event, &anna.token, "").await, vec![annas.clone()], "one's own photos meanwhile");

    // Absent leaves the time as it is; an offset is kept as the same instant, in UTC.
    let changed = set_modes(&app, &event, &organiser, json!({"uploads_open": true})).await;
    assert_eq!(changed["gallery_opens_at"], public["gallery_opens_at"]);
    let changed = set_modes(&app, &event, &organiser, json!({"gallery_opens_at": "2020-06-14T22:00:00+02:00"})).await;
    assert_eq!(changed["gallery_opens_at"], "2020-06-14T20:00:00.000Z");
    assert_eq!(changed["gallery_open"], true);
    assert_eq!(listed(&app, &event, &ben.token, "").await, vec![annas.clone()], "open once its time has come");
    assert_eq!(status_of(&app, &format!("/api/v1/uploads/{annas}/thumb"), &ben.token).await, StatusCode::OK);

    // Null clears it; a time that is not one is refused.
    let future = (Utc::now() + Span::days(1)).to_rfc3339();
    set_modes(&app, &event, &organiser, json!({"gallery_opens_at": future})).await;
    assert_eq!(listed(&app, &event, &ben.token, "").await, Vec::<String>::new());
    let changed = set_modes(&app, &event, &organiser, json!({"gallery_opens_at": null})).await;
    assert_eq!((changed["gallery_opens_at"].clone(), changed["gallery_open"].clone()), (Value::Null, json!(true)));
    assert_eq!(listed(&app, &event, &ben.token, "").await, vec![annas]);
    let response = patch_event(&app, &event, &organiser, json!({"gallery_opens_at": "tonight"})).await;
    assert_problem(response, StatusCode::BAD_REQUEST, "invalid_request").await;
}

/// One read of a shown photo serves every listener of an instance, but each hears of their own
/// like: a photo shown again after Ben liked it is announced liked to Ben only.
async fn each_listener_hears_of_their_own_like(backend: Backend) {
    let (app, event, organiser, anna, ben) = party(backend).await;
    let mut annas_stream = live(&app, &event, &anna.token).await;
    let mut bens_stream = live(&app, &event, &ben.token).await;
    let id = upload_ok(&app, &anna, &images::jpeg(640, 480)).await["id"].as_str().expect("id").to_owned();
    for stream in [&mut annas_stream, &mut bens_stream] {
        let (kind, data) = next_sse(stream).await;
        assert_eq!(
            (kind.as_str(), data["id"].as_str(), &data["liked_by_me"]),
            ("upload", Some(id.as_str()), &json!(false))
        );
    }
    let like = app.client.put(app.url(&format!("/api/v1/uploads/{id}/like"))).bearer_auth(&ben.token).send().await;
    assert!(like.expect("PUT like").status().is_success());

    let response = change_upload(&app, &id, &organiser, "hide", json!({"hidden": true})).await;
    assert_eq!(response.status(), StatusCode::OK);
    let response = change_upload(&app, &id, &organiser, "show", json!({"hidden": false})).await;
    assert_eq!(response.status(), StatusCode::OK);
    for (stream, liked) in [(&mut annas_stream, false), (&mut bens_stream, true)] {
        assert_eq!(next_sse(stream).await, ("removed".to_owned(), json!({"id": id})));
        let (kind, data) = next_sse(stream).await;
        assert_eq!((kind.as_str(), data["id"].as_str()), ("upload", Some(id.as_str())), "shown again");
        assert_eq!((&data["likes"], &data["liked_by_me"]), (&json!(1), &json!(liked)), "{data}");
    }
}

both_backends!(
    pending_uploads_are_seen_only_by_their_uploader_and_the_organiser,
    approval_shows_the_photo_to_everyone_and_on_the_live_stream,
    the_export_holds_pending_photos_only_on_request,
    a_drop_box_shows_each_guest_their_own_photos_only,
    a_gallery_opens_at_its_time,
    each_listener_hears_of_their_own_like,
);
