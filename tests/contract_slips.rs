//! Where the server once answered otherwise than its contract says: an organiser's like or
//! comment, cursors it never gave out, a `limit` past 64 bits, the losers of concurrent restores,
//! a restore beside a worker ending the photo's job, the resumable draft's interop version on
//! early refusals and `OPTIONS`, and the event's two views against the schemas the document
//! gives them.

mod common;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use common::{Backend, TestApp, assert_problem, images, upload_ok};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use uuid::Uuid;

both_backends!(
    an_organisers_like_or_comment_is_forbidden_whatever_the_upload,
    a_cursor_the_server_did_not_give_out_for_this_event_is_refused,
    a_limit_past_64_bits_is_clamped_like_any_other,
    the_losers_of_concurrent_restores_are_told_it_is_not_deleted,
    the_interop_version_is_echoed_on_early_refusals_and_options,
    each_caller_gets_the_event_view_its_schema_describes,
);

async fn an_organisers_like_or_comment_is_forbidden_whatever_the_upload(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let organiser = app.organiser_login(&event).await;
    let anna = app.join(&event, "Anna").await;
    let upload = upload_ok(&app, &anna, &images::jpeg(16, 16)).await;
    let known = upload["id"].as_str().expect("id").to_owned();
    for id in [known.clone(), Uuid::now_v7().to_string(), "not-a-uuid".to_owned()] {
        for (method, path, body) in [
            (Method::PUT, format!("/api/v1/uploads/{id}/like"), None),
            (Method::DELETE, format!("/api/v1/uploads/{id}/like"), None),
            (Method::POST, format!("/api/v1/uploads/{id}/comments"), Some(json!({"text": "Schön!"}))),
        ] {
            let mut request = app.client.request(method.clone(), app.url(&path)).bearer_auth(&organiser);
            if let Some(body) = body {
                request = request.json(&body);
            }
            let response = request.send().await.expect("request");
            let problem = assert_problem(response, StatusCode::FORBIDDEN, "forbidden").await;
            let detail = problem["detail"].as_str().expect("detail");
            assert!(detail.contains("guests"), "{method} {path}: the detail says who may: {detail}");
        }
    }
    // The guest still likes it.
    let liked = app.client.put(app.url(&format!("/api/v1/uploads/{known}/like"))).bearer_auth(&anna.token);
    assert_eq!(liked.send().await.expect("like").status(), StatusCode::OK);
    app.stop().await;
}

async fn a_cursor_the_server_did_not_give_out_for_this_event_is_refused(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let other = app.create_event().await;
    let anna = app.join(&event, "Anna").await;
    let olga = app.join(&other, "Olga").await;
    for _ in 0..3 {
        upload_ok(&app, &anna, &images::jpeg(8, 8)).await;
        upload_ok(&app, &olga, &images::jpeg(8, 8)).await;
    }
    let list = |slug: &str, token: &str, query: String| {
        let path = format!("/api/v1/events/{slug}/uploads?{query}");
        let (app, token) = (&app, token.to_owned());
        async move { app.get_json(&path, &token).await }
    };
    let (status, first) = list(&event.slug, &anna.token, "limit=1".into()).await;
    assert_eq!(status, StatusCode::OK);
    let cursor = first["next_cursor"].as_str().expect("a next page").to_owned();
    let (status, second) = list(&event.slug, &anna.token, format!("limit=1&cursor={cursor}")).await;
    assert_eq!(status, StatusCode::OK, "{second}");
    assert_ne!(second["items"][0]["id"], first["items"][0]["id"], "the cursor the server gave out moves on");

    // The id of a real upload, as a cursor of the old kind (its bare bytes), and a random one.
    let shown = Uuid::parse_str(first["items"][0]["id"].as_str().expect("id")).expect("uuid");
    let (_, olgas) = list(&other.slug, &olga.token, "limit=1".into()).await;
    let foreign = olgas["next_cursor"].as_str().expect("a next page").to_owned();
    for unissued in [
        URL_SAFE_NO_PAD.encode(shown.as_bytes()),
        URL_SAFE_NO_PAD.encode(Uuid::now_v7().as_bytes()),
        URL_SAFE_NO_PAD.encode([0u8; 22]),
        foreign,
    ] {
        let (status, body) = list(&event.slug, &anna.token, format!("cursor={unissued}")).await;
        assert_eq!((status, body["code"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_cursor")), "{unissued}");
    }
    app.stop().await;
}

async fn a_limit_past_64_bits_is_clamped_like_any_other(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let anna = app.join(&event, "Anna").await;
    for _ in 0..2 {
        upload_ok(&app, &anna, &images::jpeg(8, 8)).await;
    }
    let path = |limit: &str| format!("/api/v1/events/{}/uploads?limit={limit}", event.slug);
    let (status, body) = app.get_json(&path("99999999999999999999999"), &anna.token).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["items"].as_array().map(Vec::len), Some(2), "clamped to the largest page");
    let (status, body) = app.get_json(&path("-99999999999999999999999"), &anna.token).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["items"].as_array().map(Vec::len), Some(1), "clamped to the smallest page");
    let (status, body) = app.get_json(&path("2.5"), &anna.token).await;
    assert_eq!((status, body["code"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_request")));
    app.stop().await;
}

async fn the_losers_of_concurrent_restores_are_told_it_is_not_deleted(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let organiser = app.organiser_login(&event).await;
    let anna = app.join(&event, "Anna").await;
    let upload = upload_ok(&app, &anna, &images::jpeg(16, 16)).await;
    let id = upload["id"].as_str().expect("id").to_owned();
    let path = format!("/api/v1/uploads/{id}");
    let deleted = app.client.delete(app.url(&path)).bearer_auth(&organiser).send().await.expect("delete");
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);

    let restores = (0..6).map(|_| app.client.post(app.url(&format!("{path}/restore"))).bearer_auth(&organiser).send());
    let mut statuses = Vec::new();
    for response in futures_util::future::join_all(restores).await {
        let response = response.expect("restore");
        let status = response.status();
        let body: Value = response.json().await.expect("json");
        if status != StatusCode::OK {
            assert_eq!(body["code"], "upload_not_deleted", "{status}: {body}");
        }
        statuses.push(status);
    }
    statuses.sort();
    assert_eq!(statuses[0], StatusCode::OK, "one restore wins: {statuses:?}");
    assert!(statuses[1..].iter().all(|s| *s == StatusCode::CONFLICT), "the others are 409: {statuses:?}");
    app.stop().await;
}

/// A restore of a photo deleted while its thumb was being made queues the photo's job again,
/// while a worker may be ending that job: the worker writes the job's row, then the upload's.
/// Here the test is that worker, holding the job's row written; the restore waits for it before
/// it writes the upload, so the worker's write of the upload goes through and both end. (The
/// restore once wrote the upload first, then waited for the job: PostgreSQL found the two
/// waiting for each other and failed one, seen as a 500 in a test run.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_restore_and_a_worker_ending_the_photos_job_do_not_deadlock() {
    let options = common::Options { derivative_workers: Some(0), ..common::Options::default() };
    let app = TestApp::spawn_with(Backend::Postgres, options).await;
    let confetti::db::Db::Postgres(pool) = &app.db else { panic!("a PostgreSQL test") };
    let event = app.create_event().await;
    let organiser = app.organiser_login(&event).await;
    let anna = app.join(&event, "Anna").await;
    let upload = upload_ok(&app, &anna, &images::jpeg(16, 16)).await;
    let id = Uuid::parse_str(upload["id"].as_str().expect("id")).expect("uuid");
    assert_eq!(upload["status"], "processing", "no worker: its job waits");
    let path = format!("/api/v1/uploads/{id}");
    let deleted = app.client.delete(app.url(&path)).bearer_auth(&organiser).send().await.expect("delete");
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);

    let mut worker = pool.begin().await.expect("begin");
    let held = sqlx::query("UPDATE derivative_jobs SET attempts = attempts WHERE upload_id = $1")
        .bind(id)
        .execute(&mut *worker)
        .await
        .expect("the job's row");
    assert_eq!(held.rows_affected(), 1, "the photo's job is there");
    let restore = tokio::spawn(app.client.post(app.url(&format!("{path}/restore"))).bearer_auth(&organiser).send());
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let wrote = sqlx::query("UPDATE uploads SET status = status WHERE id = $1").bind(id).execute(&mut *worker).await;
    assert!(wrote.is_ok(), "the worker's write of the upload: {wrote:?}");
    worker.commit().await.expect("commit");

    let restored = restore.await.expect("join").expect("restore");
    assert_eq!(restored.status(), StatusCode::OK);
    let body: Value = restored.json().await.expect("json");
    assert_eq!(body["status"], "processing", "{body}");
    assert!(app.derivatives_pending(&id.to_string()).await, "its job is queued");
    app.stop().await;
}

async fn the_interop_version_is_echoed_on_early_refusals_and_options(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let other = app.create_event().await;
    let olga = app.join(&other, "Olga").await;
    let anna = app.join(&event, "Anna").await;
    let create = app.url(&format!("/api/v1/events/{}/uploads/resumable", event.slug));
    let echoed = |response: &reqwest::Response| {
        response.headers().get("upload-draft-interop-version").map(|v| v.to_str().unwrap_or_default().to_owned())
    };
    // No credential, another event's guest, a header that does not parse, no length.
    let refusals = [
        (app.client.post(&create), StatusCode::UNAUTHORIZED),
        (app.client.post(&create).bearer_auth(&olga.token), StatusCode::FORBIDDEN),
        (app.client.post(&create).bearer_auth(&anna.token).header("Upload-Complete", "yes"), StatusCode::BAD_REQUEST),
        (app.client.post(&create).bearer_auth(&anna.token), StatusCode::BAD_REQUEST),
        (
            app.client.request(Method::HEAD, app.url(&format!("/api/v1/events/{}/uploads/resumable/x", event.slug))),
            StatusCode::UNAUTHORIZED,
        ),
    ];
    for (request, status) in refusals {
        let response = request.header("Upload-Draft-Interop-Version", "6").send().await.expect("request");
        assert_eq!(response.status(), status);
        assert_eq!(echoed(&response).as_deref(), Some("6"), "echoed on the {status} refusal");
    }
    for (version, age) in [(Some("6"), "expires="), (Some("8"), "max-age="), (None, "max-age=")] {
        let mut request = app.client.request(Method::OPTIONS, &create);
        if let Some(version) = version {
            request = request.header("Upload-Draft-Interop-Version", version);
        }
        let response = request.send().await.expect("OPTIONS");
        assert_eq!(response.status(), StatusCode::NO_CONTENT);
        assert_eq!(echoed(&response).as_deref(), version, "OPTIONS echoes the version");
        let limit = response.headers()["upload-limit"].to_str().expect("ascii").to_owned();
        assert!(limit.contains(age), "interop {version:?}: `Upload-Limit: {limit}` names the time left {age}");
    }
    app.stop().await;
}

/// The members a schema of the served document requires, following `$ref`s and `allOf`.
fn required(doc: &Value, schema: &Value) -> Vec<String> {
    let schema = match schema["$ref"].as_str() {
        Some(reference) => doc.pointer(reference.trim_start_matches('#')).expect("a schema"),
        None => schema,
    };
    let mut members: Vec<String> =
        schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_owned).collect();
    for part in schema["allOf"].as_array().into_iter().flatten() {
        members.extend(required(doc, part));
    }
    members
}

async fn each_caller_gets_the_event_view_its_schema_describes(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let organiser = app.organiser_login(&event).await;
    let anonymous = |path: String| {
        let app = &app;
        async move {
            let response = app.client.get(app.url(&path)).send().await.expect("GET");
            (response.status(), response.json::<Value>().await.expect("json"))
        }
    };
    let (_, doc) = anonymous("/api/v1/openapi.json".into()).await;
    let shown =
        &doc["paths"]["/api/v1/events/{slug}"]["get"]["responses"]["200"]["content"]["application/json"]["schema"];
    let choices = shown["anyOf"].as_array().expect("the event view is anyOf: an Event is also a PublicEvent");
    assert!(shown.get("oneOf").is_none(), "no oneOf that an organiser's answer would fail");
    let event_schema = json!({"$ref": "#/components/schemas/Event"});
    let public_schema = json!({"$ref": "#/components/schemas/PublicEvent"});
    assert_eq!(choices, &vec![event_schema.clone(), public_schema.clone()]);

    let path = format!("/api/v1/events/{}", event.slug);
    let (status, whole) = app.get_json(&path, &organiser).await;
    assert_eq!(status, StatusCode::OK);
    let (status, public) = anonymous(path.clone()).await;
    assert_eq!(status, StatusCode::OK);
    for member in required(&doc, &event_schema) {
        assert!(whole.get(&member).is_some(), "the organiser's view has {member}");
    }
    for member in required(&doc, &public_schema) {
        assert!(public.get(&member).is_some(), "the public view has {member}");
    }
    assert!(whole["join_token"].is_string() && public.get("join_token").is_none(), "told apart by join_token");
    app.stop().await;
}
