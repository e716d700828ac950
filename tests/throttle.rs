//! Guessing secrets and organiser sessions, on SQLite and PostgreSQL: the login and join throttle
//! under concurrency, keyed on the client (the forwarded one only behind a trusted proxy) and the
//! event; organiser sessions that expire and that logging out ends on the server.

mod common;

use std::time::Duration;

use common::{Backend, Event, Options, TestApp, assert_problem};
use confetti::db::Db;
use confetti::settings::Settings;
use futures_util::future::join_all;
use reqwest::StatusCode;
use serde_json::json;

both_backends!(
    forty_simultaneous_wrong_passwords_are_mostly_refused_before_the_password_is_checked,
    behind_a_trusted_proxy_the_organiser_logs_in_while_a_guesser_is_locked_out,
    without_a_trusted_proxy_invented_forwarded_addresses_do_not_dodge_the_throttle,
    wrong_join_tokens_are_throttled_while_a_guest_elsewhere_still_joins,
    an_organiser_session_ends_after_its_lifetime,
    logging_out_ends_the_session_on_the_server,
    two_instances_give_a_guesser_no_more_attempts_than_one,
);

/// Sends `guesses` wrong passwords at once; returns how many were checked (401) and refused (429).
async fn guess_at_once(
    app: &TestApp,
    event: &Event,
    guesses: usize,
    forwarded: impl Fn(usize) -> String,
) -> (usize, usize) {
    let path = app.url(&format!("/api/v1/events/{}/organiser-sessions", event.slug));
    let requests = (0..guesses).map(|i| {
        app.client
            .post(&path)
            .header("x-forwarded-for", forwarded(i))
            .json(&json!({"password": format!("guess number {i}")}))
            .send()
    });
    let mut counts = (0, 0);
    for response in join_all(requests).await {
        let response = response.expect("login attempt");
        match response.status() {
            StatusCode::UNAUTHORIZED => counts.0 += 1,
            StatusCode::TOO_MANY_REQUESTS => {
                assert!(response.headers().contains_key("retry-after"), "a 429 says when to come back");
                assert_problem(response, StatusCode::TOO_MANY_REQUESTS, "too_many_attempts").await;
                counts.1 += 1;
            }
            other => panic!("a wrong password got {other}"),
        }
    }
    counts
}

async fn login_from(app: &TestApp, event: &Event, forwarded: &str, password: &str) -> reqwest::Response {
    app.client
        .post(app.url(&format!("/api/v1/events/{}/organiser-sessions", event.slug)))
        .header("x-forwarded-for", forwarded)
        .json(&json!({ "password": password }))
        .send()
        .await
        .expect("login")
}

async fn join_from(app: &TestApp, event: &Event, forwarded: &str, join_token: &str) -> reqwest::Response {
    app.client
        .post(app.url(&format!("/api/v1/events/{}/guests", event.slug)))
        .header("x-forwarded-for", forwarded)
        .json(&json!({"join_token": join_token, "display_name": "Mallory"}))
        .send()
        .await
        .expect("join")
}

/// An organiser-only request that changes nothing: 200 while the token is a live session.
async fn organiser_check(app: &TestApp, event: &Event, token: &str) -> reqwest::Response {
    app.client
        .patch(app.url(&format!("/api/v1/events/{}", event.slug)))
        .bearer_auth(token)
        .json(&json!({}))
        .send()
        .await
        .expect("PATCH")
}

async fn count(db: &Db, sql: &'static str) -> i64 {
    match db {
        Db::Sqlite(p) => sqlx::query_scalar(sql).fetch_one(p).await,
        Db::Postgres(p) => sqlx::query_scalar(sql).fetch_one(p).await,
    }
    .expect(sql)
}

fn behind_proxy() -> Options {
    Options { trusted_proxy: vec!["127.0.0.1/32".to_owned()], ..Options::default() }
}

async fn forty_simultaneous_wrong_passwords_are_mostly_refused_before_the_password_is_checked(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let (checked, refused) = guess_at_once(&app, &event, 40, |_| "203.0.113.66".to_owned()).await;
    eprintln!("40 simultaneous wrong passwords ({backend:?}): {checked} checked (401), {refused} refused (429)");
    assert!(checked <= 5, "{checked} of 40 simultaneous guesses were checked");
    assert_eq!(checked + refused, 40);
    // The lock holds for the right password too: otherwise it would not stop a guesser.
    let locked = login_from(&app, &event, "203.0.113.66", &event.password).await;
    assert_problem(locked, StatusCode::TOO_MANY_REQUESTS, "too_many_attempts").await;
    assert_eq!(count(&app.db, "SELECT COUNT(*) FROM organiser_sessions").await, 0, "no session was made");
}

async fn behind_a_trusted_proxy_the_organiser_logs_in_while_a_guesser_is_locked_out(backend: Backend) {
    let app = TestApp::spawn_with(backend, behind_proxy()).await;
    let event = app.create_event().await;
    let other_event = app.create_event().await;
    let guesser = "203.0.113.66";
    for _ in 0..5 {
        let wrong = login_from(&app, &event, guesser, "not the password").await;
        assert_problem(wrong, StatusCode::UNAUTHORIZED, "invalid_credentials").await;
    }
    let locked = login_from(&app, &event, guesser, "not the password").await;
    assert_problem(locked, StatusCode::TOO_MANY_REQUESTS, "too_many_attempts").await;
    // Writing the organiser's address to the left does not help: the proxy appended the real one.
    let spoofed = login_from(&app, &event, &format!("198.51.100.7, {guesser}"), &event.password).await;
    assert_problem(spoofed, StatusCode::TOO_MANY_REQUESTS, "too_many_attempts").await;

    let organiser = login_from(&app, &event, "198.51.100.7", &event.password).await;
    assert_eq!(organiser.status(), StatusCode::CREATED, "the organiser, elsewhere, still logs in");
    let through_two_proxies = login_from(&app, &event, "198.51.100.8, 127.0.0.1", &event.password).await;
    assert_eq!(through_two_proxies.status(), StatusCode::CREATED, "trusted hops are skipped");
    let other = login_from(&app, &other_event, guesser, "not the password").await;
    assert_problem(other, StatusCode::UNAUTHORIZED, "invalid_credentials").await;
}

async fn without_a_trusted_proxy_invented_forwarded_addresses_do_not_dodge_the_throttle(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let (checked, refused) = guess_at_once(&app, &event, 20, |i| format!("198.51.100.{i}")).await;
    assert!(checked <= 5, "{checked} of 20 guesses with invented addresses were checked");
    assert_eq!(checked + refused, 20);
    let fresh_address = login_from(&app, &event, "192.0.2.200", &event.password).await;
    assert_problem(fresh_address, StatusCode::TOO_MANY_REQUESTS, "too_many_attempts").await;
}

async fn wrong_join_tokens_are_throttled_while_a_guest_elsewhere_still_joins(backend: Backend) {
    let app = TestApp::spawn_with(backend, behind_proxy()).await;
    let event = app.create_event().await;
    let guesser = "203.0.113.66";
    for i in 0..5 {
        let wrong = join_from(&app, &event, guesser, &format!("guess-{i}")).await;
        assert_problem(wrong, StatusCode::FORBIDDEN, "invalid_join_token").await;
    }
    let locked = join_from(&app, &event, guesser, &event.join_token).await;
    let retry_after: u64 = locked.headers()["retry-after"].to_str().expect("retry-after").parse().expect("seconds");
    assert!((1..=30).contains(&retry_after), "Retry-After: {retry_after}");
    assert_problem(locked, StatusCode::TOO_MANY_REQUESTS, "too_many_attempts").await;
    assert_eq!(count(&app.db, "SELECT COUNT(*) FROM guests").await, 0, "a refused join makes no guest");

    // Wrong tokens sent all at once from another address: counted before they are compared.
    let second = "203.0.113.67";
    let responses = join_all((0..20).map(|i| join_from(&app, &event, second, ["x", "y"][i % 2]))).await;
    let statuses: Vec<_> = responses.iter().map(|r| r.status()).collect();
    let compared = statuses.iter().filter(|s| **s == StatusCode::FORBIDDEN).count();
    let refused = statuses.iter().filter(|s| **s == StatusCode::TOO_MANY_REQUESTS).count();
    assert!(compared <= 5 && compared + refused == 20, "{statuses:?}");

    let guest = join_from(&app, &event, "198.51.100.7", &event.join_token).await;
    assert_eq!(guest.status(), StatusCode::CREATED, "a guest elsewhere still joins");
    assert_eq!(count(&app.db, "SELECT COUNT(*) FROM guests").await, 1);
}

async fn two_instances_give_a_guesser_no_more_attempts_than_one(backend: Backend) {
    let a = TestApp::spawn_with(backend, behind_proxy()).await;
    let b = TestApp::spawn_sharing(&a).await;
    let event = a.create_event().await;
    let guesser = "203.0.113.66";
    let mut checked = 0;
    for i in 0..12 {
        let app = [&a, &b][i % 2];
        let response = login_from(app, &event, guesser, &format!("guess {i}")).await;
        match response.status() {
            StatusCode::UNAUTHORIZED => checked += 1,
            StatusCode::TOO_MANY_REQUESTS => {}
            other => panic!("a wrong password got {other}"),
        }
    }
    assert_eq!(checked, 5, "five free guesses in all, whichever instance takes them");
    for app in [&a, &b] {
        let locked = login_from(app, &event, guesser, &event.password).await;
        assert_problem(locked, StatusCode::TOO_MANY_REQUESTS, "too_many_attempts").await;
    }

    // Wrong join tokens sent at once to both: counted before they are compared, on both.
    let second = "203.0.113.67";
    let responses = join_all((0..20).map(|i| join_from([&a, &b][i % 2], &event, second, "wrong"))).await;
    let compared = responses.iter().filter(|r| r.status() == StatusCode::FORBIDDEN).count();
    let refused = responses.iter().filter(|r| r.status() == StatusCode::TOO_MANY_REQUESTS).count();
    assert!(compared <= 5 && compared + refused == 20, "{compared} compared, {refused} refused");

    // One join budget for both: 130 joins at once, half here, half there, get the burst of 100
    // and what refilled meanwhile (one every 2 s); two budgets would have let all 130 in.
    let venue = "198.51.100.7";
    let started = std::time::Instant::now();
    let joins = join_all((0..130).map(|i| join_from([&a, &b][i % 2], &event, venue, &event.join_token))).await;
    let refilled = started.elapsed().as_secs() / 2 + 1;
    let created = joins.iter().filter(|r| r.status() == StatusCode::CREATED).count() as u64;
    let refused = joins.iter().filter(|r| r.status() == StatusCode::TOO_MANY_REQUESTS).count() as u64;
    assert_eq!(created + refused, 130);
    assert!((100..=100 + refilled).contains(&created), "{created} joined, {refilled} refilled at most");
    b.stop().await;
}

async fn an_organiser_session_ends_after_its_lifetime(backend: Backend) {
    let app = TestApp::spawn_with(backend, Options { organiser_session_s: 2, ..Options::default() }).await;
    let event = app.create_event().await;
    let response = app
        .client
        .post(app.url(&format!("/api/v1/events/{}/organiser-sessions", event.slug)))
        .json(&json!({"password": event.password}))
        .send()
        .await
        .expect("login");
    assert_eq!(response.status(), StatusCode::CREATED);
    let cookie = response.headers()["set-cookie"].to_str().expect("cookie").to_owned();
    assert!(cookie.contains("; Max-Age=2"), "the cookie lasts as long as the session: {cookie}");
    let token = response.json::<serde_json::Value>().await.expect("json")["token"].as_str().expect("token").to_owned();
    assert_eq!(organiser_check(&app, &event, &token).await.status(), StatusCode::OK);

    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_problem(organiser_check(&app, &event, &token).await, StatusCode::UNAUTHORIZED, "unauthenticated").await;
    let by_cookie = app
        .client
        .get(app.url(&format!("/api/v1/events/{}/export.zip", event.slug)))
        .header("cookie", format!("confetti_organiser={token}"))
        .send()
        .await
        .expect("export");
    assert_problem(by_cookie, StatusCode::UNAUTHORIZED, "unauthenticated").await;
    // The next login sweeps the expired session away.
    let fresh = app.organiser_login(&event).await;
    assert_eq!(count(&app.db, "SELECT COUNT(*) FROM organiser_sessions").await, 1, "only the live session is kept");
    assert_eq!(organiser_check(&app, &event, &fresh).await.status(), StatusCode::OK);
}

async fn logging_out_ends_the_session_on_the_server(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let other_event = app.create_event().await;
    let (first, second) = (app.organiser_login(&event).await, app.organiser_login(&event).await);
    let stranger = app.organiser_login(&other_event).await;
    let logout = app.url(&format!("/api/v1/events/{}/organiser-sessions/current", event.slug));

    let anonymous = app.client.delete(&logout).send().await.expect("logout");
    assert_problem(anonymous, StatusCode::UNAUTHORIZED, "unauthenticated").await;
    let other_organiser = app.client.delete(&logout).bearer_auth(&stranger).send().await.expect("logout");
    assert_problem(other_organiser, StatusCode::FORBIDDEN, "forbidden").await;
    assert_eq!(organiser_check(&app, &other_event, &stranger).await.status(), StatusCode::OK, "not logged out");

    // Both logouts below carry the same Idempotency-Key: each still ends its own session.
    let response = app
        .client
        .delete(&logout)
        .bearer_auth(&first)
        .header("idempotency-key", "logout")
        .send()
        .await
        .expect("logout");
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    let cleared = response.headers()["set-cookie"].to_str().expect("cookie");
    assert!(cleared.starts_with("confetti_organiser=;") && cleared.contains("Max-Age=0"), "{cleared}");
    assert_problem(organiser_check(&app, &event, &first).await, StatusCode::UNAUTHORIZED, "unauthenticated").await;
    let again = app.client.delete(&logout).bearer_auth(&first).send().await.expect("logout");
    assert_problem(again, StatusCode::UNAUTHORIZED, "unauthenticated").await;
    assert_eq!(organiser_check(&app, &event, &second).await.status(), StatusCode::OK, "other sessions go on");

    // A browser logs out with its cookie.
    let by_cookie = app
        .client
        .delete(&logout)
        .header("cookie", format!("confetti_organiser={second}"))
        .header("origin", &app.base)
        .header("idempotency-key", "logout")
        .send()
        .await
        .expect("logout");
    assert_eq!(by_cookie.status(), StatusCode::NO_CONTENT);
    assert_problem(organiser_check(&app, &event, &second).await, StatusCode::UNAUTHORIZED, "unauthenticated").await;
    assert_eq!(count(&app.db, "SELECT COUNT(*) FROM organiser_sessions").await, 1, "only the stranger's session");
}

#[tokio::test]
async fn an_invalid_trusted_proxy_stops_the_start_with_a_clear_message() {
    let data_dir = tempfile::tempdir().expect("temp dir");
    let settings = Settings {
        trusted_proxies: vec!["10.0.0.1".to_owned(), "10.0.0.0/40".to_owned()],
        ..Settings::new(data_dir.path(), "http://127.0.0.1:8080")
    };
    let error = confetti::app::AppState::open(settings, "admin".to_owned()).await.expect_err("refused");
    let message = format!("{error:#}");
    assert!(message.contains("--trusted-proxy") && message.contains("10.0.0.0/40"), "{message}");
}
