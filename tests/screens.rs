//! The venue's screen: a link the organiser makes (and revokes) that lets one browser read what
//! the event's guests see — no more (hidden photos, a private gallery), and write nothing. Only
//! the current link opens; replacing or revoking it ends the screens that used it; wrong
//! tokens are throttled like join tokens.

mod common;

use common::{ADMIN_TOKEN, Backend, Event, TestApp, assert_problem, images, settled, upload_ok};
use reqwest::StatusCode;
use serde_json::{Value, json};

both_backends!(
    a_screen_sees_what_guests_see_and_writes_nothing,
    replacing_or_revoking_the_link_ends_its_screens,
    wrong_screen_tokens_are_throttled_like_join_tokens,
);

/// Makes the event's screen link as `token` (organiser or admin); the answer.
async fn make_link(app: &TestApp, event: &Event, token: &str) -> reqwest::Response {
    app.client
        .post(app.url(&format!("/api/v1/events/{}/screen-link", event.slug)))
        .bearer_auth(token)
        .header("Idempotency-Key", uuid::Uuid::new_v4().to_string())
        .send()
        .await
        .expect("make link")
}

/// Opens a screen with the link's token; the cookie's token on success.
async fn open(app: &TestApp, event: &Event, token: &str) -> reqwest::Response {
    app.client
        .post(app.url(&format!("/api/v1/events/{}/screens", event.slug)))
        .json(&json!({ "token": token }))
        .send()
        .await
        .expect("open screen")
}

/// A GET as the screen, by its cookie.
async fn as_screen(app: &TestApp, cookie: &str, path: &str) -> reqwest::Response {
    app.client.get(app.url(path)).header("Cookie", format!("confetti_screen={cookie}")).send().await.expect("GET")
}

async fn new_link(app: &TestApp, event: &Event, organiser: &str) -> String {
    let made = make_link(app, event, organiser).await;
    assert_eq!(made.status(), StatusCode::CREATED);
    let link: Value = made.json().await.expect("json");
    let token = link["token"].as_str().expect("token").to_owned();
    assert!(token.starts_with("s_"), "{link}");
    assert_eq!(link["url"], format!("{}/e/{}/screen#{token}", app.base, event.slug));
    let opened = open(app, event, &token).await;
    assert_eq!(opened.status(), StatusCode::CREATED);
    let cookie = opened.headers().get("set-cookie").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    assert!(cookie.starts_with(&format!("confetti_screen={token};")) && cookie.contains("HttpOnly"), "{cookie}");
    token
}

fn ids(list: &Value) -> Vec<&str> {
    list["items"].as_array().expect("items").iter().filter_map(|u| u["id"].as_str()).collect()
}

async fn a_screen_sees_what_guests_see_and_writes_nothing(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let organiser = app.organiser_login(&event).await;
    let guest = app.join(&event, "Anna").await;
    let shown = upload_ok(&app, &guest, &images::jpeg(320, 240)).await;
    let hidden = upload_ok(&app, &guest, &images::jpeg(300, 200)).await;
    let (shown_id, hidden_id) = (shown["id"].as_str().expect("id"), hidden["id"].as_str().expect("id"));
    settled(&app, &guest.token, shown_id).await;
    let hide = app
        .client
        .patch(app.url(&format!("/api/v1/uploads/{hidden_id}")))
        .bearer_auth(&organiser)
        .json(&json!({"hidden": true}))
        .send()
        .await
        .expect("hide");
    assert_eq!(hide.status(), StatusCode::OK);

    // A guest may not make one; the organiser may, and the event says since when.
    assert_problem(make_link(&app, &event, &guest.token).await, StatusCode::FORBIDDEN, "forbidden").await;
    let screen = new_link(&app, &event, &organiser).await;
    let (_, whole) = app.get_json(&format!("/api/v1/events/{}", event.slug), &organiser).await;
    assert!(whole["screen_link_at"].is_string(), "{whole}");
    let public = app.client.get(app.url(&format!("/api/v1/events/{}", event.slug))).send().await.expect("GET");
    assert!(public.json::<Value>().await.expect("json").get("screen_link_at").is_none(), "not in the public view");

    // What guests see: the shown photo, not the hidden one.
    let list = as_screen(&app, &screen, &format!("/api/v1/events/{}/uploads", event.slug)).await;
    assert_eq!(list.status(), StatusCode::OK);
    assert_eq!(ids(&list.json().await.expect("json")), vec![shown_id]);
    assert_eq!(as_screen(&app, &screen, &format!("/api/v1/uploads/{shown_id}/thumb")).await.status(), StatusCode::OK);
    assert_eq!(as_screen(&app, &screen, &format!("/api/v1/uploads/{hidden_id}")).await.status(), StatusCode::NOT_FOUND);
    assert_eq!(
        as_screen(&app, &screen, &format!("/e/{}/qr.svg", event.slug)).await.status(),
        StatusCode::OK,
        "its slideshow shows the join QR code"
    );

    // Writes: nothing.
    let cookie = format!("confetti_screen={screen}");
    let like = app
        .client
        .put(app.url(&format!("/api/v1/uploads/{shown_id}/like")))
        .header("Cookie", &cookie)
        .send()
        .await
        .expect("like");
    assert_problem(like, StatusCode::FORBIDDEN, "forbidden").await;
    let patch = app
        .client
        .patch(app.url(&format!("/api/v1/events/{}", event.slug)))
        .header("Cookie", &cookie)
        .json(&json!({"name": "Taken over"}))
        .send()
        .await
        .expect("patch");
    assert_problem(patch, StatusCode::FORBIDDEN, "forbidden").await;
    let delete = app
        .client
        .delete(app.url(&format!("/api/v1/uploads/{shown_id}")))
        .header("Cookie", &cookie)
        .send()
        .await
        .expect("delete");
    assert!(matches!(delete.status(), StatusCode::FORBIDDEN | StatusCode::NOT_FOUND), "{}", delete.status());
    let make = app
        .client
        .post(app.url(&format!("/api/v1/events/{}/screen-link", event.slug)))
        .header("Cookie", &cookie)
        .send()
        .await
        .expect("make");
    assert_problem(make, StatusCode::FORBIDDEN, "forbidden").await;
    assert_eq!(
        app.get_json(&format!("/api/v1/uploads/{shown_id}"), &guest.token).await.0,
        StatusCode::OK,
        "nothing was deleted"
    );

    // A private gallery (drop box): the screen sees nothing, as a guest sees no one else's.
    let private = app
        .client
        .patch(app.url(&format!("/api/v1/events/{}", event.slug)))
        .bearer_auth(ADMIN_TOKEN)
        .json(&json!({"gallery": "own_uploads"}))
        .send()
        .await
        .expect("patch");
    assert_eq!(private.status(), StatusCode::OK);
    let list = as_screen(&app, &screen, &format!("/api/v1/events/{}/uploads", event.slug)).await;
    assert_eq!(ids(&list.json().await.expect("json")), Vec::<&str>::new());
    assert_eq!(
        as_screen(&app, &screen, &format!("/api/v1/uploads/{shown_id}/thumb")).await.status(),
        StatusCode::NOT_FOUND
    );

    // Another event's screen link opens nothing here.
    let other = app.create_event().await;
    let other_organiser = app.organiser_login(&other).await;
    let foreign = new_link(&app, &other, &other_organiser).await;
    assert_problem(open(&app, &event, &foreign).await, StatusCode::FORBIDDEN, "invalid_screen_token").await;
    assert_problem(
        as_screen(&app, &foreign, &format!("/api/v1/events/{}/uploads", event.slug)).await,
        StatusCode::FORBIDDEN,
        "forbidden",
    )
    .await;
}

async fn replacing_or_revoking_the_link_ends_its_screens(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let organiser = app.organiser_login(&event).await;
    let gallery = format!("/api/v1/events/{}/uploads", event.slug);
    let first = new_link(&app, &event, &organiser).await;
    assert_eq!(as_screen(&app, &first, &gallery).await.status(), StatusCode::OK);

    // The admin makes a new one: the first no longer opens, nor reads.
    let second = new_link(&app, &event, ADMIN_TOKEN).await;
    assert_problem(as_screen(&app, &first, &gallery).await, StatusCode::UNAUTHORIZED, "unauthenticated").await;
    assert_problem(open(&app, &event, &first).await, StatusCode::FORBIDDEN, "invalid_screen_token").await;
    assert_eq!(as_screen(&app, &second, &gallery).await.status(), StatusCode::OK);

    let revoke = |key: &'static str| {
        app.client
            .delete(app.url(&format!("/api/v1/events/{}/screen-link", event.slug)))
            .bearer_auth(&organiser)
            .header("Idempotency-Key", key)
            .send()
    };
    assert_eq!(revoke("revoke-1").await.expect("revoke").status(), StatusCode::NO_CONTENT);
    assert_problem(as_screen(&app, &second, &gallery).await, StatusCode::UNAUTHORIZED, "unauthenticated").await;
    let (_, whole) = app.get_json(&format!("/api/v1/events/{}", event.slug), &organiser).await;
    assert_eq!(whole["screen_link_at"], Value::Null, "{whole}");
    let again = revoke("revoke-2").await.expect("revoke");
    assert_eq!(again.status(), StatusCode::NO_CONTENT, "none to revoke is fine");
}

async fn wrong_screen_tokens_are_throttled_like_join_tokens(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let organiser = app.organiser_login(&event).await;
    let made: Value = make_link(&app, &event, &organiser).await.json().await.expect("json");
    let token = made["token"].as_str().expect("token");
    for _ in 0..5 {
        assert_problem(open(&app, &event, "s_guessed").await, StatusCode::FORBIDDEN, "invalid_screen_token").await;
    }
    let locked = open(&app, &event, token).await;
    assert!(locked.headers().contains_key("retry-after"));
    assert_problem(locked, StatusCode::TOO_MANY_REQUESTS, "too_many_attempts").await;
    // Joining is counted apart: a guest with the join link still gets in.
    app.join(&event, "Anna").await;
}
