//! Events, guests, organisers and reading uploads, per API.md, on SQLite and PostgreSQL.

mod common;

use common::{ADMIN_TOKEN, Backend, TestApp, assert_problem, images};
use reqwest::StatusCode;
use serde_json::{Value, json};
use uuid::Uuid;

both_backends!(
    the_admin_creates_events_with_a_join_link,
    creating_an_event_needs_the_admin_and_a_strong_password,
    a_guest_joins_with_the_join_token_and_a_name,
    joining_refuses_unknown_events_wrong_tokens_and_bad_names,
    the_organiser_logs_in_and_is_throttled_after_repeated_failures,
    organiser_endpoints_refuse_guests_and_strangers,
    cookie_writes_from_another_origin_are_refused,
    the_listing_is_newest_first_with_a_stable_cursor,
    a_guest_reads_uploads_of_their_event_only,
    the_preflight_finds_a_guests_own_upload_by_its_key,
    the_organiser_deletes_any_upload_and_the_uploader_is_refunded,
    health_readiness_and_info_answer,
    anyone_with_the_link_sees_the_events_name_and_its_organiser_sees_all,
    unknown_paths_and_methods_are_problems_too,
);

async fn post_json(app: &TestApp, path: &str, token: Option<&str>, body: Value) -> reqwest::Response {
    let mut request = app.client.post(app.url(path)).json(&body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.expect("POST")
}

async fn the_admin_creates_events_with_a_join_link(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let body = json!({"name": "Hochzeit Anna & Ben", "organiser_password": "correct horse", "guest_quota_bytes": 1234});
    let response = post_json(&app, "/api/v1/events", Some(ADMIN_TOKEN), body).await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let location = response.headers()["location"].to_str().expect("location").to_owned();
    let event: Value = response.json().await.expect("json");
    let slug = event["slug"].as_str().expect("slug");
    assert!(slug.starts_with("hochzeit-anna-ben-"), "{slug}");
    assert_eq!(location, format!("/api/v1/events/{slug}"));
    assert_eq!(event["guest_quota_bytes"], 1234);
    assert_eq!(event["uploads_open"], true);
    let join_url = event["join_url"].as_str().expect("join_url");
    assert!(join_url.starts_with(&app.base) && join_url.contains(slug));
    assert!(join_url.contains(event["join_token"].as_str().expect("token")));
    assert!(event.get("organiser_password").is_none() && !event.to_string().contains("correct horse"));
    let page = app.client.get(join_url).send().await.expect("join page");
    assert_eq!(page.status(), StatusCode::OK);
    assert!(page.text().await.expect("html").contains("<html"));
}

async fn creating_an_event_needs_the_admin_and_a_strong_password(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let body = json!({"name": "Party", "organiser_password": "correct horse"});
    assert_problem(
        post_json(&app, "/api/v1/events", None, body.clone()).await,
        StatusCode::UNAUTHORIZED,
        "unauthenticated",
    )
    .await;
    assert_problem(
        post_json(&app, "/api/v1/events", Some("wrong"), body).await,
        StatusCode::UNAUTHORIZED,
        "unauthenticated",
    )
    .await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let body = json!({"name": "Party", "organiser_password": "correct horse"});
    assert_problem(
        post_json(&app, "/api/v1/events", Some(&guest.token), body).await,
        StatusCode::FORBIDDEN,
        "forbidden",
    )
    .await;
    let weak = json!({"name": "Party", "organiser_password": "1234567"});
    assert_problem(
        post_json(&app, "/api/v1/events", Some(ADMIN_TOKEN), weak).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "weak_password",
    )
    .await;
    let broken = app
        .client
        .post(app.url("/api/v1/events"))
        .bearer_auth(ADMIN_TOKEN)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .expect("send");
    assert_problem(broken, StatusCode::BAD_REQUEST, "invalid_request").await;
}

async fn a_guest_joins_with_the_join_token_and_a_name(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event_with_quota(5_000_000).await;
    let path = format!("/api/v1/events/{}/guests", event.slug);
    let response =
        post_json(&app, &path, None, json!({"join_token": event.join_token, "display_name": "  Tante Erna "})).await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let cookie = response.headers()["set-cookie"].to_str().expect("cookie").to_owned();
    assert!(cookie.starts_with("confetti_guest="), "{cookie}");
    for attribute in ["HttpOnly", "SameSite=Lax", "Path=/"] {
        assert!(cookie.contains(attribute), "{cookie} lacks {attribute}");
    }
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["guest"]["display_name"], "Tante Erna");
    assert_eq!(body["guest"]["quota_bytes"], 5_000_000);
    assert_eq!(body["guest"]["used_bytes"], 0);
    let token = body["token"].as_str().expect("token");

    let (status, me) = app.get_json("/api/v1/me", token).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(me["display_name"], "Tante Erna");
    assert_eq!(me["event"], event.slug);
    assert_eq!(me["upload_count"], 0);
    // The cookie alone identifies the guest, as it does for the web page.
    let cookie_pair = cookie.split(';').next().expect("pair");
    let by_cookie = app.client.get(app.url("/api/v1/me")).header("cookie", cookie_pair).send().await.expect("me");
    assert_eq!(by_cookie.status(), StatusCode::OK);
    let anonymous = app.client.get(app.url("/api/v1/me")).send().await.expect("me");
    assert_problem(anonymous, StatusCode::UNAUTHORIZED, "unauthenticated").await;
}

async fn joining_refuses_unknown_events_wrong_tokens_and_bad_names(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let path = format!("/api/v1/events/{}/guests", event.slug);
    let unknown = post_json(
        &app,
        "/api/v1/events/no-such-event/guests",
        None,
        json!({"join_token": event.join_token, "display_name": "A"}),
    )
    .await;
    assert_problem(unknown, StatusCode::NOT_FOUND, "event_not_found").await;
    let wrong = post_json(&app, &path, None, json!({"join_token": "guess", "display_name": "A"})).await;
    assert_problem(wrong, StatusCode::FORBIDDEN, "invalid_join_token").await;
    for name in ["", "   ", &"x".repeat(61)] {
        let bad = post_json(&app, &path, None, json!({"join_token": event.join_token, "display_name": name})).await;
        assert_problem(bad, StatusCode::UNPROCESSABLE_ENTITY, "invalid_display_name").await;
    }
    let longest =
        post_json(&app, &path, None, json!({"join_token": event.join_token, "display_name": "ü".repeat(60)})).await;
    assert_eq!(longest.status(), StatusCode::CREATED);
}

async fn the_organiser_logs_in_and_is_throttled_after_repeated_failures(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let path = format!("/api/v1/events/{}/organiser-sessions", event.slug);
    let ok = post_json(&app, &path, None, json!({"password": event.password})).await;
    assert_eq!(ok.status(), StatusCode::CREATED);
    assert!(ok.headers()["set-cookie"].to_str().expect("cookie").starts_with("confetti_organiser="));
    for _ in 0..5 {
        let wrong = post_json(&app, &path, None, json!({"password": "not the password"})).await;
        assert_problem(wrong, StatusCode::UNAUTHORIZED, "invalid_credentials").await;
    }
    let throttled = post_json(&app, &path, None, json!({"password": event.password})).await;
    let retry_after: u64 = throttled.headers()["retry-after"].to_str().expect("retry-after").parse().expect("seconds");
    assert!(retry_after >= 1);
    assert_problem(throttled, StatusCode::TOO_MANY_REQUESTS, "too_many_attempts").await;
}

async fn organiser_endpoints_refuse_guests_and_strangers(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let other = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let other_organiser = app.organiser_login(&other).await;
    let path = app.url(&format!("/api/v1/events/{}", event.slug));
    let change = json!({"uploads_open": false});
    let anonymous = app.client.patch(&path).json(&change).send().await.expect("patch");
    assert_problem(anonymous, StatusCode::UNAUTHORIZED, "unauthenticated").await;
    let as_guest = app.client.patch(&path).bearer_auth(&guest.token).json(&change).send().await.expect("patch");
    assert_problem(as_guest, StatusCode::FORBIDDEN, "forbidden").await;
    let as_other = app.client.patch(&path).bearer_auth(&other_organiser).json(&change).send().await.expect("patch");
    assert_problem(as_other, StatusCode::FORBIDDEN, "forbidden").await;
    let organiser = app.organiser_login(&event).await;
    let renamed = app
        .client
        .patch(&path)
        .bearer_auth(&organiser)
        .json(&json!({"name": "Polterabend", "guest_quota_bytes": 10}))
        .send()
        .await
        .expect("patch");
    assert_eq!(renamed.status(), StatusCode::OK);
    let renamed: Value = renamed.json().await.expect("json");
    assert_eq!(
        (renamed["name"].as_str(), renamed["guest_quota_bytes"].as_i64(), renamed["uploads_open"].as_bool()),
        (Some("Polterabend"), Some(10), Some(true))
    );
    let (_, me) = app.get_json("/api/v1/me", &guest.token).await;
    assert_eq!(me["quota_bytes"], 10, "a guest's quota follows the event's");
}

async fn cookie_writes_from_another_origin_are_refused(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let upload: Value =
        app.upload(&guest, &images::jpeg(16, 16), Some(Uuid::new_v4())).await.json().await.expect("json");
    let path = app.url(&format!("/api/v1/uploads/{}", upload["id"].as_str().expect("id")));
    let cookie = format!("confetti_guest={}", guest.token);
    let foreign = app
        .client
        .delete(&path)
        .header("cookie", &cookie)
        .header("origin", "https://evil.example")
        .send()
        .await
        .expect("delete");
    assert_problem(foreign, StatusCode::FORBIDDEN, "cross_origin").await;
    assert_eq!(app.used_bytes(&guest).await, upload["bytes"].as_i64().expect("bytes"), "nothing was deleted");
    let own =
        app.client.delete(&path).header("cookie", &cookie).header("origin", &app.base).send().await.expect("delete");
    assert_eq!(own.status(), StatusCode::NO_CONTENT);
}

async fn the_listing_is_newest_first_with_a_stable_cursor(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let mut ids = Vec::new();
    for _ in 0..5 {
        let upload: Value =
            app.upload(&guest, &images::jpeg(8, 8), Some(Uuid::new_v4())).await.json().await.expect("json");
        ids.push(upload["id"].as_str().expect("id").to_owned());
    }
    ids.reverse();
    let list = |query: String| {
        let app = &app;
        let token = guest.token.clone();
        let slug = event.slug.clone();
        async move { app.get_json(&format!("/api/v1/events/{slug}/uploads?{query}"), &token).await }
    };
    let (status, page1) = list("limit=2".into()).await;
    assert_eq!(status, StatusCode::OK);
    let got: Vec<&str> =
        page1["items"].as_array().expect("items").iter().map(|u| u["id"].as_str().expect("id")).collect();
    assert_eq!(got, ids[..2]);
    let cursor = page1["next_cursor"].as_str().expect("cursor").to_owned();
    // A photo arriving meanwhile does not shift the next page.
    app.upload(&guest, &images::jpeg(8, 8), Some(Uuid::new_v4())).await;
    let (_, page2) = list(format!("limit=2&cursor={cursor}")).await;
    let got: Vec<&str> =
        page2["items"].as_array().expect("items").iter().map(|u| u["id"].as_str().expect("id")).collect();
    assert_eq!(got, ids[2..4]);
    let (_, page3) = list(format!("limit=2&cursor={}", page2["next_cursor"].as_str().expect("cursor"))).await;
    assert_eq!(page3["items"].as_array().expect("items").len(), 1);
    assert_eq!(page3["next_cursor"], Value::Null);
    let (_, all) = list("limit=1000".into()).await;
    assert_eq!(all["items"].as_array().expect("items").len(), 6, "limit is clamped to 100, not refused");
    let (status, bad) = list("cursor=garbage".into()).await;
    assert_eq!((status, bad["code"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_cursor")));
}

async fn a_guest_reads_uploads_of_their_event_only(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let other = app.create_event().await;
    let anna = app.join(&event, "Anna").await;
    let ben = app.join(&event, "Ben").await;
    let stranger = app.join(&other, "Carl").await;
    let upload: Value = app.upload(&anna, &images::jpeg(8, 8), Some(Uuid::new_v4())).await.json().await.expect("json");
    let path = format!("/api/v1/uploads/{}", upload["id"].as_str().expect("id"));
    let (status, seen) = app.get_json(&path, &ben.token).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(seen["guest"]["display_name"], "Anna");
    assert_eq!(seen["id"], upload["id"]);
    let (status, _) = app.get_json(&path, &stranger.token).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, body) = app.get_json(&format!("/api/v1/events/{}/uploads", event.slug), &stranger.token).await;
    assert_eq!((status, body["code"].as_str()), (StatusCode::FORBIDDEN, Some("wrong_event")));
    let organiser = app.organiser_login(&event).await;
    let (status, _) = app.get_json(&path, &organiser).await;
    assert_eq!(status, StatusCode::OK);
}

async fn the_preflight_finds_a_guests_own_upload_by_its_key(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let key = Uuid::new_v4();
    let path = |key: &str| format!("/api/v1/events/{}/uploads/by-client-id/{key}", event.slug);
    let (status, body) = app.get_json(&path(&key.to_string()), &guest.token).await;
    assert_eq!((status, body["code"].as_str()), (StatusCode::NOT_FOUND, Some("not_found")));
    let upload: Value = app.upload(&guest, &images::jpeg(8, 8), Some(key)).await.json().await.expect("json");
    let (status, found) = app.get_json(&path(&key.to_string()), &guest.token).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(found["id"], upload["id"]);
    let (status, body) = app.get_json(&path("not-a-uuid"), &guest.token).await;
    assert_eq!((status, body["code"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_client_upload_id")));
}

async fn the_organiser_deletes_any_upload_and_the_uploader_is_refunded(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let anna = app.join(&event, "Anna").await;
    let ben = app.join(&event, "Ben").await;
    let upload: Value = app.upload(&anna, &images::jpeg(8, 8), Some(Uuid::new_v4())).await.json().await.expect("json");
    let path = app.url(&format!("/api/v1/uploads/{}", upload["id"].as_str().expect("id")));
    let by_ben = app.client.delete(&path).bearer_auth(&ben.token).send().await.expect("delete");
    assert_problem(by_ben, StatusCode::FORBIDDEN, "forbidden").await;
    let organiser = app.organiser_login(&event).await;
    let by_organiser = app.client.delete(&path).bearer_auth(&organiser).send().await.expect("delete");
    assert_eq!(by_organiser.status(), StatusCode::NO_CONTENT);
    assert_eq!(app.used_bytes(&anna).await, 0);
    let (_, list) = app.get_json(&format!("/api/v1/events/{}/uploads", event.slug), &anna.token).await;
    assert_eq!(list["items"].as_array().map(Vec::len), Some(0));
}

async fn health_readiness_and_info_answer(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    assert_eq!(app.client.get(app.url("/healthz")).send().await.expect("healthz").status(), StatusCode::OK);
    assert_eq!(app.client.get(app.url("/readyz")).send().await.expect("readyz").status(), StatusCode::OK);
    let info: Value = app.client.get(app.url("/api/v1/info")).send().await.expect("info").json().await.expect("json");
    assert_eq!(info["name"], "confetti");
    let capabilities = info["capabilities"].as_array().expect("capabilities");
    assert!(capabilities.contains(&json!("client_upload_id")) && capabilities.contains(&json!("upload_preflight")));
    assert_eq!(info["limits"]["max_upload_bytes"], app.options.max_upload_bytes);
    assert_eq!(info["limits"]["max_image_pixels"], app.options.max_image_pixels);
    app.db.close().await;
    let not_ready = app.client.get(app.url("/readyz")).send().await.expect("readyz");
    assert_eq!(not_ready.status(), StatusCode::SERVICE_UNAVAILABLE, "no database, not ready");
}

async fn anyone_with_the_link_sees_the_events_name_and_its_organiser_sees_all(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let public: Value = app
        .client
        .get(app.url(&format!("/api/v1/events/{}", event.slug)))
        .send()
        .await
        .expect("get")
        .json()
        .await
        .expect("json");
    assert_eq!(
        public,
        json!({"slug": event.slug, "name": "Anna & Ben", "uploads_open": true,
               "welcome_text": null, "cover_url": null, "guest_downloads": true,
               "uploads_open_from": null, "uploads_open_until": null, "review_uploads": false,
               "gallery": "everyone", "gallery_opens_at": null, "gallery_open": true}),
        "no join token for strangers"
    );
    let organiser = app.organiser_login(&event).await;
    let (status, full) = app.get_json(&format!("/api/v1/events/{}", event.slug), &organiser).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(full["join_token"], event.join_token);
    let missing = app.client.get(app.url("/api/v1/events/no-such-event")).send().await.expect("get");
    assert_problem(missing, StatusCode::NOT_FOUND, "event_not_found").await;
}

async fn unknown_paths_and_methods_are_problems_too(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let unknown = app.client.get(app.url("/api/v1/nothing-here")).send().await.expect("get");
    assert_problem(unknown, StatusCode::NOT_FOUND, "not_found").await;
    let wrong_method = app.client.put(app.url("/api/v1/me")).send().await.expect("put");
    assert_problem(wrong_method, StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed").await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let upload: Value = app.upload(&guest, &images::jpeg(8, 8), Some(Uuid::new_v4())).await.json().await.expect("json");
    let past_the_end = app
        .client
        .get(app.url(upload["urls"]["original"].as_str().expect("url")))
        .bearer_auth(&guest.token)
        .header("range", "bytes=999999-")
        .send()
        .await
        .expect("get");
    assert_eq!(past_the_end.headers()["content-range"], format!("bytes */{}", upload["bytes"]));
    assert_problem(past_the_end, StatusCode::RANGE_NOT_SATISFIABLE, "range_not_satisfiable").await;
}
