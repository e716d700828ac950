//! `Idempotency-Key` on every authenticated write other than uploads (API.md), on SQLite and
//! PostgreSQL: replays, mismatches, scopes, concurrency, takeovers, releases and the sweep.

mod common;

use chrono::Utc;
use common::{ADMIN_TOKEN, Backend, Options, TestApp, assert_problem, images};
use confetti::db::Db;
use confetti::db::idempotency::{KeyScope, RecordedAnswer};
use futures_util::future::join_all;
use reqwest::StatusCode;
use reqwest::header::HeaderValue;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use uuid::Uuid;

both_backends!(
    a_keyed_write_replays_its_first_answer_byte_for_byte,
    the_same_key_with_another_body_is_refused,
    keys_are_scoped_to_principal_method_and_path,
    twelve_concurrent_attempts_execute_once,
    a_claim_whose_holder_died_is_taken_over_and_the_stale_holder_records_nothing,
    a_live_claim_is_answered_in_flight_with_retry_after,
    a_refused_attempt_releases_the_key_for_a_corrected_retry,
    a_failed_attempt_releases_the_key,
    the_sweep_forgets_only_expired_completed_keys,
    invalid_keys_are_refused,
    a_keyed_delete_replays_its_204_while_a_bare_repeat_is_404,
    info_announces_the_capability_and_its_timing,
    the_writes_that_do_not_take_part_never_claim_a_key,
);

fn event_body(name: &str) -> Value {
    json!({"name": name, "organiser_password": "correct horse"})
}

async fn create_event_keyed(app: &TestApp, key: &str, body: &Value) -> reqwest::Response {
    app.client
        .post(app.url("/api/v1/events"))
        .bearer_auth(ADMIN_TOKEN)
        .header("Idempotency-Key", key)
        .json(body)
        .send()
        .await
        .expect("POST /api/v1/events")
}

async fn count_events(app: &TestApp) -> i64 {
    match &app.db {
        Db::Sqlite(p) => sqlx::query_scalar("SELECT COUNT(*) FROM events").fetch_one(p).await,
        Db::Postgres(p) => sqlx::query_scalar("SELECT COUNT(*) FROM events").fetch_one(p).await,
    }
    .expect("count events")
}

async fn execute(app: &TestApp, sql: &'static str) {
    match &app.db {
        Db::Sqlite(p) => sqlx::raw_sql(sql).execute(p).await.map(|_| ()),
        Db::Postgres(p) => sqlx::raw_sql(sql).execute(p).await.map(|_| ()),
    }
    .expect(sql)
}

/// The scope and fingerprint the server computes for the admin's POST /api/v1/events.
fn admin_create_scope(key: &str, body: &Value) -> (KeyScope, Vec<u8>) {
    let scope = KeyScope {
        principal: "admin".into(),
        method: "POST".into(),
        path_digest: Sha256::digest("/api/v1/events").to_vec(),
        key: key.into(),
    };
    let request = axum::http::Request::post("/api/v1/events")
        .header("content-type", "application/json")
        .body(())
        .expect("request");
    let (parts, ()) = request.into_parts();
    let fingerprint = confetti::idempotency::fingerprint(&parts, &serde_json::to_vec(body).expect("json"));
    (scope, fingerprint)
}

async fn metric(app: &TestApp, name: &str) -> u64 {
    let text = app.client.get(app.url("/metrics")).send().await.expect("metrics").text().await.expect("text");
    let line = format!("confetti_idempotency_{name}_total ");
    text.lines().find_map(|l| l.strip_prefix(&line)).and_then(|v| v.parse().ok()).expect("counter")
}

async fn a_keyed_write_replays_its_first_answer_byte_for_byte(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let body = event_body("Sommerfest");
    let first = create_event_keyed(&app, "create-sommerfest", &body).await;
    assert_eq!(first.status(), StatusCode::CREATED);
    assert!(first.headers().get("idempotent-replayed").is_none());
    let location = first.headers()["location"].clone();
    let first_body = first.bytes().await.expect("body");

    let again = create_event_keyed(&app, "create-sommerfest", &body).await;
    assert_eq!(again.status(), StatusCode::CREATED);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert_eq!(again.headers()["location"], location);
    assert_eq!(again.headers()["content-type"], "application/json");
    assert!(again.headers().get("set-cookie").is_none(), "a replay never carries Set-Cookie");
    assert_eq!(again.bytes().await.expect("body"), first_body, "the same body, byte for byte");
    assert_eq!(count_events(&app).await, 1, "the write ran once");
    assert_eq!(metric(&app, "replays").await, 1);

    // Without a key, the same request is another event.
    let bare =
        app.client.post(app.url("/api/v1/events")).bearer_auth(ADMIN_TOKEN).json(&body).send().await.expect("post");
    assert_eq!(bare.status(), StatusCode::CREATED);
    assert_eq!(count_events(&app).await, 2);
}

async fn the_same_key_with_another_body_is_refused(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    assert_eq!(create_event_keyed(&app, "k1", &event_body("Sommerfest")).await.status(), StatusCode::CREATED);
    let other = create_event_keyed(&app, "k1", &event_body("Winterfest")).await;
    assert_problem(other, StatusCode::UNPROCESSABLE_ENTITY, "idempotency_key_reused").await;
    assert_eq!(count_events(&app).await, 1);
    assert_eq!(metric(&app, "mismatches").await, 1);
}

async fn keys_are_scoped_to_principal_method_and_path(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let first: Value = create_event_keyed(&app, "same-key", &event_body("A")).await.json().await.expect("json");
    let a = app.create_event().await;
    let b = app.create_event().await;
    let organiser_a = app.organiser_login(&a).await;
    let organiser_b = app.organiser_login(&b).await;
    for (organiser, event) in [(&organiser_a, &a), (&organiser_b, &b)] {
        let changed = app
            .client
            .patch(app.url(&format!("/api/v1/events/{}", event.slug)))
            .bearer_auth(organiser)
            .header("Idempotency-Key", "same-key")
            .json(&json!({"name": "Renamed"}))
            .send()
            .await
            .expect("patch");
        assert_eq!(changed.status(), StatusCode::OK, "another principal and path: an independent key");
        assert!(changed.headers().get("idempotent-replayed").is_none());
    }
    let guest = app.join(&a, "Anna").await;
    let upload: Value = app.upload(&guest, &images::jpeg(8, 8), Some(Uuid::new_v4())).await.json().await.expect("json");
    let deleted = app
        .client
        .delete(app.url(&format!("/api/v1/uploads/{}", upload["id"].as_str().expect("id"))))
        .bearer_auth(&guest.token)
        .header("Idempotency-Key", "same-key")
        .send()
        .await
        .expect("delete");
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    let second: Value = create_event_keyed(&app, "same-key", &event_body("A")).await.json().await.expect("json");
    assert_eq!(second["id"], first["id"], "the admin's key still replays");
}

async fn twelve_concurrent_attempts_execute_once(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let body = event_body("Gleichzeitig");
    let responses = join_all((0..12).map(|_| create_event_keyed(&app, "concurrent", &body))).await;
    let mut created = Vec::new();
    for response in responses {
        match response.status() {
            StatusCode::CREATED => created.push(response.json::<Value>().await.expect("json")["id"].clone()),
            StatusCode::CONFLICT => {
                assert!(response.headers().contains_key("retry-after"));
                assert_problem(response, StatusCode::CONFLICT, "idempotency_key_in_flight").await;
            }
            other => panic!("unexpected {other}"),
        }
    }
    assert!(!created.is_empty());
    assert!(created.iter().all(|id| *id == created[0]), "every 201 names the one event");
    assert_eq!(count_events(&app).await, 1, "exactly one execution");
    assert_eq!(metric(&app, "executions").await, 1);
}

async fn a_claim_whose_holder_died_is_taken_over_and_the_stale_holder_records_nothing(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let body = event_body("Übernahme");
    let (scope, fingerprint) = admin_create_scope("dead-holder", &body);
    // A holder that claimed the key and died: its lease ran out a second ago.
    let dead = Uuid::now_v7();
    assert!(
        app.db.claim_key(&scope, &fingerprint, dead, Utc::now() - chrono::Duration::seconds(1)).await.expect("claim")
    );

    let taken_over = create_event_keyed(&app, "dead-holder", &body).await;
    assert_eq!(taken_over.status(), StatusCode::CREATED);
    let event: Value = taken_over.json().await.expect("json");
    assert_eq!(count_events(&app).await, 1);
    assert_eq!(metric(&app, "takeovers").await, 1);

    // The stale holder wakes up and tries to record its answer: fenced out.
    let mut tx = app.db.begin().await.expect("begin");
    let answer = RecordedAnswer { status: 201, location: None, content_type: None, body: b"stale".to_vec() };
    assert!(!tx.record_key(&scope, dead, &answer).await.expect("record"), "a stale holder records nothing");
    tx.rollback().await.expect("rollback");
    let replay: Value = create_event_keyed(&app, "dead-holder", &body).await.json().await.expect("json");
    assert_eq!(replay, event, "the replay is the new holder's answer");
}

async fn a_live_claim_is_answered_in_flight_with_retry_after(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let body = event_body("Noch dabei");
    let (scope, fingerprint) = admin_create_scope("busy", &body);
    let lease = Utc::now() + chrono::Duration::seconds(20);
    assert!(app.db.claim_key(&scope, &fingerprint, Uuid::now_v7(), lease).await.expect("claim"));
    let busy = create_event_keyed(&app, "busy", &body).await;
    let retry_after: u64 = busy.headers()["retry-after"].to_str().expect("header").parse().expect("seconds");
    assert!((1..=20).contains(&retry_after), "{retry_after}");
    assert_problem(busy, StatusCode::CONFLICT, "idempotency_key_in_flight").await;
    let other = create_event_keyed(&app, "busy", &event_body("Anders")).await;
    assert_problem(other, StatusCode::UNPROCESSABLE_ENTITY, "idempotency_key_reused").await;
    assert_eq!(count_events(&app).await, 0);
}

async fn a_refused_attempt_releases_the_key_for_a_corrected_retry(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let refused = create_event_keyed(&app, "fix-me", &json!({"name": "Party", "organiser_password": "short"})).await;
    assert_problem(refused, StatusCode::UNPROCESSABLE_ENTITY, "weak_password").await;
    let corrected = create_event_keyed(&app, "fix-me", &event_body("Party")).await;
    assert_eq!(corrected.status(), StatusCode::CREATED, "the key was released, not bound to the refused body");
    assert!(corrected.headers().get("idempotent-replayed").is_none());
    assert_eq!(count_events(&app).await, 1);
}

async fn a_failed_attempt_releases_the_key(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let organiser = app.organiser_login(&event).await;
    // Inject a failure: the database refuses to rename an event to "boom".
    match backend {
        Backend::Sqlite => {
            execute(&app, "CREATE TRIGGER boom BEFORE UPDATE ON events WHEN NEW.name = 'boom' BEGIN SELECT RAISE(ABORT, 'injected'); END").await
        }
        Backend::Postgres | Backend::S3 => {
            execute(
                &app,
                "CREATE FUNCTION boom() RETURNS trigger AS $$ BEGIN IF NEW.name = 'boom' THEN RAISE EXCEPTION 'injected'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql;
                 CREATE TRIGGER boom BEFORE UPDATE ON events FOR EACH ROW EXECUTE FUNCTION boom();",
            )
            .await
        }
    }
    let rename = || {
        app.client
            .patch(app.url(&format!("/api/v1/events/{}", event.slug)))
            .bearer_auth(&organiser)
            .header("Idempotency-Key", "rename-1")
            .json(&json!({"name": "boom"}))
            .send()
    };
    let failed = rename().await.expect("patch");
    let problem = assert_problem(failed, StatusCode::INTERNAL_SERVER_ERROR, "internal").await;
    assert!(!problem.to_string().contains("injected"), "5xx details are logged, not sent");
    match backend {
        Backend::Sqlite => execute(&app, "DROP TRIGGER boom").await,
        Backend::Postgres | Backend::S3 => execute(&app, "DROP TRIGGER boom ON events").await,
    }
    let retried = rename().await.expect("patch");
    assert_eq!(retried.status(), StatusCode::OK, "the failed attempt released the key");
    assert!(retried.headers().get("idempotent-replayed").is_none());
    assert_eq!(retried.json::<Value>().await.expect("json")["name"], "boom");
    assert!(metric(&app, "released").await >= 1);
}

async fn the_sweep_forgets_only_expired_completed_keys(backend: Backend) {
    let options = Options { idempotency_retention_s: 3600, ..Options::default() };
    let app = TestApp::spawn_with(backend, options).await;
    for key in ["old", "recent"] {
        assert_eq!(create_event_keyed(&app, key, &event_body(key)).await.status(), StatusCode::CREATED);
    }
    let two_hours_ago = Utc::now() - chrono::Duration::hours(2);
    let set_finished = |key: &'static str| {
        let db = app.db.clone();
        async move {
            match &db {
                Db::Sqlite(p) => sqlx::query("UPDATE idempotency_keys SET finished_at = $1 WHERE key = $2")
                    .bind(two_hours_ago)
                    .bind(key)
                    .execute(p)
                    .await
                    .map(|_| ()),
                Db::Postgres(p) => sqlx::query("UPDATE idempotency_keys SET finished_at = $1 WHERE key = $2")
                    .bind(two_hours_ago)
                    .bind(key)
                    .execute(p)
                    .await
                    .map(|_| ()),
            }
            .expect("age the key")
        }
    };
    set_finished("old").await;
    let (live, fp) = admin_create_scope("live", &event_body("live"));
    assert!(
        app.db.claim_key(&live, &fp, Uuid::now_v7(), Utc::now() + chrono::Duration::seconds(30)).await.expect("claim")
    );
    let (abandoned, fp) = admin_create_scope("abandoned", &event_body("abandoned"));
    assert!(app.db.claim_key(&abandoned, &fp, Uuid::now_v7(), two_hours_ago).await.expect("claim"));

    let swept = confetti::jobs::idempotency_keys::sweep(
        &app.db,
        &app.state.idempotency_metrics,
        app.state.settings.idempotency_retention_s,
    )
    .await
    .expect("sweep");
    assert_eq!(swept, 2, "the old completed key and the long-abandoned claim");
    assert!(app.db.key_row(&live).await.expect("row").is_some(), "a live claim is never touched");
    assert!(app.db.key_row(&abandoned).await.expect("row").is_none());
    let forgotten = create_event_keyed(&app, "old", &event_body("something else")).await;
    assert_eq!(forgotten.status(), StatusCode::CREATED, "a forgotten key is free again");
    let remembered = create_event_keyed(&app, "recent", &event_body("something else")).await;
    assert_problem(remembered, StatusCode::UNPROCESSABLE_ENTITY, "idempotency_key_reused").await;
    assert_eq!(metric(&app, "swept").await, 2);
}

async fn invalid_keys_are_refused(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let too_long = "k".repeat(256);
    let bad: [HeaderValue; 4] = [
        HeaderValue::from_static(""),
        HeaderValue::from_str(&too_long).expect("header"),
        HeaderValue::from_static("tab\there"),
        HeaderValue::from_bytes(b"caf\xe9").expect("header"),
    ];
    for value in bad {
        let response = app
            .client
            .post(app.url("/api/v1/events"))
            .bearer_auth(ADMIN_TOKEN)
            .header("Idempotency-Key", value)
            .json(&event_body("x"))
            .send()
            .await
            .expect("post");
        assert_problem(response, StatusCode::BAD_REQUEST, "invalid_idempotency_key").await;
    }
    let longest = create_event_keyed(&app, &"k".repeat(255), &event_body("x")).await;
    assert_eq!(longest.status(), StatusCode::CREATED);
    assert_eq!(count_events(&app).await, 1);
}

async fn a_keyed_delete_replays_its_204_while_a_bare_repeat_is_404(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let upload: Value = app.upload(&guest, &images::jpeg(8, 8), Some(Uuid::new_v4())).await.json().await.expect("json");
    let url = app.url(&format!("/api/v1/uploads/{}", upload["id"].as_str().expect("id")));
    let delete = |key: Option<&'static str>| {
        let mut request = app.client.delete(&url).bearer_auth(&guest.token);
        if let Some(key) = key {
            request = request.header("Idempotency-Key", key);
        }
        request.send()
    };
    assert_eq!(delete(Some("del-1")).await.expect("delete").status(), StatusCode::NO_CONTENT);
    let replayed = delete(Some("del-1")).await.expect("delete");
    assert_eq!(replayed.status(), StatusCode::NO_CONTENT);
    assert_eq!(replayed.headers()["idempotent-replayed"], "true");
    assert_problem(delete(None).await.expect("delete"), StatusCode::NOT_FOUND, "not_found").await;
    assert_eq!(app.used_bytes(&guest).await, 0, "refunded once");
}

async fn info_announces_the_capability_and_its_timing(backend: Backend) {
    let options = Options { idempotency_lease_s: 7, idempotency_retention_s: 90_000, ..Options::default() };
    let app = TestApp::spawn_with(backend, options).await;
    let info: Value = app.client.get(app.url("/api/v1/info")).send().await.expect("info").json().await.expect("json");
    assert!(info["capabilities"].as_array().expect("capabilities").contains(&json!("idempotency_keys")));
    assert_eq!(info["idempotency"], json!({"retention_s": 90_000, "lease_s": 7}));
}

/// The key layer sits only on the writes that take part: an upload (whose body it must never
/// buffer), joining, organiser login and liking run as they would without the header, and
/// nothing is claimed.
async fn the_writes_that_do_not_take_part_never_claim_a_key(backend: Backend) {
    let app = TestApp::spawn_with(backend, Options { derivative_workers: Some(0), ..Options::default() }).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Ann").await;
    let photo = images::jpeg(8, 8);
    let mut ids = Vec::new();
    for _ in 0..2 {
        let form = common::upload_form(&photo, None, "photo.jpg", None);
        let response = app.upload_form(&guest, form, Some("not-a-uuid")).await;
        assert_eq!(response.status(), StatusCode::CREATED, "an upload ignores a key that is not a UUID");
        assert!(response.headers().get("idempotent-replayed").is_none(), "nothing replayed");
        let body: Value = response.json().await.expect("upload json");
        ids.push(body["id"].as_str().expect("id").to_owned());
    }
    assert_ne!(ids[0], ids[1], "each upload without its own key is a new upload");
    for _ in 0..2 {
        let joined = app
            .client
            .post(app.url(&format!("/api/v1/events/{}/guests", event.slug)))
            .header("Idempotency-Key", "join-1")
            .json(&json!({"join_token": event.join_token, "display_name": "Ben"}))
            .send()
            .await
            .expect("join");
        assert_eq!(joined.status(), StatusCode::CREATED, "joining ignores the key");
        let login = app
            .client
            .post(app.url(&format!("/api/v1/events/{}/organiser-sessions", event.slug)))
            .header("Idempotency-Key", "login-1")
            .json(&json!({"password": event.password}))
            .send()
            .await
            .expect("login");
        assert_eq!(login.status(), StatusCode::CREATED, "organiser login ignores the key");
        let like = app
            .client
            .put(app.url(&format!("/api/v1/uploads/{}/like", ids[0])))
            .bearer_auth(&guest.token)
            .header("Idempotency-Key", "like-1")
            .send()
            .await
            .expect("like");
        assert_eq!(like.status(), StatusCode::OK, "a PUT ignores the key");
    }
    assert_eq!(metric(&app, "executions").await, 0, "no key was claimed");
    assert_eq!(metric(&app, "replays").await, 0, "no answer was replayed");
    app.stop().await;
}
