//! The admin's webhook for photos waiting for review, on both backends: a burst of photos makes
//! one signed POST with the count; a refused delivery is tried again; the delivery is written
//! with the upload and survives a restart; no webhook, no delivery; bad URLs and other callers
//! are refused. A real receiver listens on a random port.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::HeaderMap;
use common::images;
use common::{ADMIN_TOKEN, Backend, Event, Options, TestApp, assert_problem};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// A delivery as the receiver got it.
struct Received {
    headers: HeaderMap,
    body: Bytes,
}

/// A receiver on a random port that answers 500 to the first `failures` POSTs, then 204.
async fn receiver(failures: usize) -> (String, mpsc::UnboundedReceiver<Received>) {
    let (sender, received) = mpsc::unbounded_channel();
    let seen = Arc::new(AtomicUsize::new(0));
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: HeaderMap, body: Bytes| {
            let (sender, seen) = (sender.clone(), Arc::clone(&seen));
            async move {
                let _ = sender.send(Received { headers, body });
                if seen.fetch_add(1, Ordering::SeqCst) < failures {
                    (StatusCode::INTERNAL_SERVER_ERROR, "receiver down")
                } else {
                    (StatusCode::NO_CONTENT, "")
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind receiver");
    let url = format!("http://{}/hook", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, received)
}

async fn next(received: &mut mpsc::UnboundedReceiver<Received>, within: Duration) -> Option<Received> {
    tokio::time::timeout(within, received.recv()).await.ok().flatten()
}

async fn put_webhook(app: &TestApp, token: Option<&str>, body: Value) -> reqwest::Response {
    let request = app.client.put(app.url("/api/v1/admin/webhook")).json(&body);
    let request = match token {
        Some(token) => request.bearer_auth(token),
        None => request,
    };
    request.send().await.expect("PUT webhook")
}

/// Sets the webhook to `url`; returns its secret.
async fn set_webhook(app: &TestApp, url: &str) -> String {
    let response = put_webhook(app, Some(ADMIN_TOKEN), json!({ "url": url })).await;
    assert_eq!(response.status(), StatusCode::OK);
    let answer: Value = response.json().await.expect("webhook json");
    assert_eq!(answer["url"], url);
    answer["secret"].as_str().expect("a secret").to_owned()
}

/// An event with the review gate on, and a guest of it.
async fn review_event(app: &TestApp) -> (Event, common::Guest) {
    let event = app.create_event().await;
    let organiser = app.organiser_login(&event).await;
    let url = app.url(&format!("/api/v1/events/{}", event.slug));
    let response = app
        .client
        .patch(url)
        .bearer_auth(&organiser)
        .json(&json!({"review_uploads": true}))
        .send()
        .await
        .expect("PATCH");
    assert_eq!(response.status(), StatusCode::OK);
    let guest = app.join(&event, "Ann").await;
    (event, guest)
}

async fn upload(app: &TestApp, guest: &common::Guest, side: u32) {
    let response = app.upload(guest, &images::jpeg(side, side), None).await;
    assert_eq!(response.status(), StatusCode::CREATED);
}

/// Checks the delivery's signature with the secret (as a receiver would) and returns its body.
fn verified(delivery: &Received, secret: &str) -> Value {
    let header = |name: &str| delivery.headers.get(name).and_then(|v| v.to_str().ok()).expect(name).to_owned();
    let timestamp = header("x-confetti-timestamp");
    let sent: i64 = timestamp.parse().expect("unix seconds");
    assert!((chrono::Utc::now().timestamp() - sent).abs() < 60, "a fresh timestamp");
    let signature = header("x-confetti-signature");
    let hex_mac = signature.strip_prefix("sha256=").expect("sha256=");
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes());
    let signed = [timestamp.as_bytes(), b".", &delivery.body].concat();
    ring::hmac::verify(&key, &signed, &hex::decode(hex_mac).expect("hex")).expect("the signature verifies");
    let wrong = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, b"another secret");
    assert!(ring::hmac::verify(&wrong, &signed, &hex::decode(hex_mac).expect("hex")).is_err());
    assert_eq!(header("content-type"), "application/json");
    serde_json::from_slice(&delivery.body).expect("a JSON body")
}

async fn webhook_state(app: &TestApp) -> Value {
    let (status, state) = app.get_json("/api/v1/admin/webhook", ADMIN_TOKEN).await;
    assert_eq!(status, StatusCode::OK, "{state}");
    state
}

async fn a_burst_of_photos_makes_one_signed_post(backend: Backend) {
    let app = TestApp::spawn_with(backend, Options { webhook_delay_s: 3, ..Options::default() }).await;
    let (url, mut received) = receiver(0).await;
    let secret = set_webhook(&app, &url).await;
    assert!(secret.len() >= 32, "a long secret: {secret}");
    let (event, guest) = review_event(&app).await;
    for side in [8, 9, 10] {
        upload(&app, &guest, side).await;
    }
    assert_eq!(app.db.pending_webhook_deliveries().await.expect("pending"), 1, "one delivery for the burst");

    let delivery = next(&mut received, Duration::from_secs(20)).await.expect("a delivery");
    let body = verified(&delivery, &secret);
    assert_eq!(body["waiting"], 3, "{body}");
    assert_eq!(body["event"]["slug"], event.slug.as_str());
    assert_eq!(body["dashboard_url"], app.url(&format!("/e/{}/organiser", event.slug)));
    assert_eq!(body["test"], false);
    assert!(body["sent_at"].is_string());
    assert!(next(&mut received, Duration::from_secs(4)).await.is_none(), "coalesced: no second POST");
    assert_eq!(app.db.pending_webhook_deliveries().await.expect("pending"), 0);

    let state = webhook_state(&app).await;
    assert_eq!(state["last_status"], 204, "{state}");
    assert!(state["last_error"].is_null());
    assert!(state["last_delivered_at"].is_string());
    assert!(state.get("secret").is_none(), "the secret is shown once");

    // Setting the same URL again keeps the secret.
    assert_eq!(set_webhook(&app, &url).await, secret);
    app.stop().await;
}

async fn a_refused_delivery_is_tried_again(backend: Backend) {
    let options = Options { webhook_delay_s: 1, webhook_retry_s: 1, ..Options::default() };
    let app = TestApp::spawn_with(backend, options).await;
    let (url, mut received) = receiver(1).await;
    let secret = set_webhook(&app, &url).await;
    let (_event, guest) = review_event(&app).await;
    upload(&app, &guest, 8).await;

    let first = next(&mut received, Duration::from_secs(15)).await.expect("a first try");
    assert_eq!(verified(&first, &secret)["waiting"], 1);
    let second = next(&mut received, Duration::from_secs(15)).await.expect("a second try");
    assert_eq!(verified(&second, &secret)["waiting"], 1);
    // The second try is recorded just after it is answered, and its delivery ended just after
    // that (two writes: a look between them sees the 204 and the delivery still there).
    let mut state = webhook_state(&app).await;
    let mut pending = app.db.pending_webhook_deliveries().await.expect("pending");
    for _ in 0..50 {
        if state["last_status"] == 204 && pending == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        state = webhook_state(&app).await;
        pending = app.db.pending_webhook_deliveries().await.expect("pending");
    }
    assert_eq!(state["last_status"], 204, "{state}");
    assert!(state["last_error"].is_null(), "{state}");
    assert_eq!(pending, 0, "the delivery ended after its 204");

    // The test delivery shows a refusal, and it counts as the last attempt.
    let (down_url, mut down) = receiver(usize::MAX).await;
    set_webhook(&app, &down_url).await;
    let response =
        app.client.post(app.url("/api/v1/admin/webhook/test")).bearer_auth(ADMIN_TOKEN).send().await.expect("test");
    assert_eq!(response.status(), StatusCode::OK);
    let test: Value = response.json().await.expect("test json");
    assert_eq!(test["delivered"], false, "{test}");
    assert_eq!(test["status"], 500);
    assert!(test["error"].as_str().expect("error").contains("receiver down"), "{test}");
    let delivery = next(&mut down, Duration::from_secs(5)).await.expect("the test delivery");
    assert_eq!(verified(&delivery, &secret)["test"], true);
    let state = webhook_state(&app).await;
    assert_eq!(state["last_status"], 500, "{state}");
    assert!(state["last_error"].as_str().expect("last error").starts_with("HTTP 500"), "{state}");
    app.stop().await;
}

async fn the_delivery_is_written_with_the_upload_and_survives_a_restart(backend: Backend) {
    let options = Options { webhook_delay_s: 5, ..Options::default() };
    let app = TestApp::spawn_with(backend, options).await;
    let (url, mut received) = receiver(0).await;
    let secret = set_webhook(&app, &url).await;
    let (_event, guest) = review_event(&app).await;
    upload(&app, &guest, 8).await;
    // Committed with the upload, before any delivery: the instance stops before it is due.
    assert_eq!(app.db.pending_webhook_deliveries().await.expect("pending"), 1);
    let app = app.restart().await;
    let delivery = next(&mut received, Duration::from_secs(20)).await.expect("delivered after the restart");
    assert_eq!(verified(&delivery, &secret)["waiting"], 1);
    app.stop().await;
}

async fn no_webhook_no_delivery(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (_event, guest) = review_event(&app).await;
    upload(&app, &guest, 8).await;
    assert_eq!(app.db.pending_webhook_deliveries().await.expect("pending"), 0, "no webhook set");
    let (status, _) = app.get_json("/api/v1/admin/webhook", ADMIN_TOKEN).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // A webhook, but an event without the review gate: nothing waits.
    let (url, _received) = receiver(0).await;
    set_webhook(&app, &url).await;
    let open = app.create_event().await;
    let guest = app.join(&open, "Ben").await;
    upload(&app, &guest, 9).await;
    assert_eq!(app.db.pending_webhook_deliveries().await.expect("pending"), 0, "no photo waits");

    // Removed: its pending deliveries go with it.
    let (_event, guest) = review_event(&app).await;
    upload(&app, &guest, 10).await;
    assert_eq!(app.db.pending_webhook_deliveries().await.expect("pending"), 1);
    let delete = || app.client.delete(app.url("/api/v1/admin/webhook")).bearer_auth(ADMIN_TOKEN).send();
    assert_eq!(delete().await.expect("DELETE").status(), StatusCode::NO_CONTENT);
    assert_eq!(app.db.pending_webhook_deliveries().await.expect("pending"), 0);
    assert_problem(delete().await.expect("DELETE"), StatusCode::NOT_FOUND, "not_found").await;
    app.stop().await;
}

async fn bad_urls_and_other_callers_are_refused(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    for url in ["ftp://example.org/hook", "not a url", "https://", "javascript:alert(1)"] {
        let response = put_webhook(&app, Some(ADMIN_TOKEN), json!({ "url": url })).await;
        assert_problem(response, StatusCode::UNPROCESSABLE_ENTITY, "invalid_webhook").await;
    }
    let long = format!("https://example.org/{}", "a".repeat(2000));
    assert_problem(
        put_webhook(&app, Some(ADMIN_TOKEN), json!({ "url": long })).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_webhook",
    )
    .await;
    let short_secret = json!({ "url": "https://example.org/hook", "secret": "short" });
    assert_problem(
        put_webhook(&app, Some(ADMIN_TOKEN), short_secret).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_webhook",
    )
    .await;
    assert_problem(put_webhook(&app, Some(ADMIN_TOKEN), json!({})).await, StatusCode::BAD_REQUEST, "invalid_request")
        .await;
    let (status, _) = app.get_json("/api/v1/admin/webhook", ADMIN_TOKEN).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "nothing was stored");

    let good = json!({ "url": "https://example.org/hook", "secret": "a secret the admin chose" });
    assert_problem(put_webhook(&app, None, good.clone()).await, StatusCode::UNAUTHORIZED, "unauthenticated").await;
    let event = app.create_event().await;
    let organiser = app.organiser_login(&event).await;
    assert_problem(put_webhook(&app, Some(&organiser), good.clone()).await, StatusCode::FORBIDDEN, "forbidden").await;
    let guest = app.join(&event, "Ann").await;
    assert_problem(put_webhook(&app, Some(&guest.token), good.clone()).await, StatusCode::FORBIDDEN, "forbidden").await;
    let (status, _) = app.get_json("/api/v1/admin/webhook", &organiser).await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // The admin's own secret is taken as given.
    let response = put_webhook(&app, Some(ADMIN_TOKEN), good).await;
    assert_eq!(response.status(), StatusCode::OK);
    let answer: Value = response.json().await.expect("json");
    assert_eq!(answer["secret"], "a secret the admin chose");
    app.stop().await;
}

both_backends!(
    a_burst_of_photos_makes_one_signed_post,
    a_refused_delivery_is_tried_again,
    the_delivery_is_written_with_the_upload_and_survives_a_restart,
    no_webhook_no_delivery,
    bad_urls_and_other_callers_are_refused,
);
