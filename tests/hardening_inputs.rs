//! Inputs that used to get the wrong answer, on both backends: what the organiser's machine
//! receives in `export.zip`, invisible characters and NUL bytes in what guests type, JSON
//! bodies over their limit, requests axum's extractors refuse, weak `If-None-Match`, who
//! learns what from a malformed PATCH, and uploads read while their likes cannot be.

mod common;

use std::collections::HashSet;

use common::images;
use common::{ADMIN_TOKEN, Backend, Event, Guest, TestApp, assert_problem, settled, upload_form};
use confetti::db::Db;
use reqwest::StatusCode;
use serde_json::{Value, json};
use uuid::Uuid;

const JSON_LIMIT: u64 = 64 * 1024;

async fn execute(app: &TestApp, sql: &'static str) {
    match &app.db {
        Db::Sqlite(p) => sqlx::query(sql).execute(p).await.map(|_| ()),
        Db::Postgres(p) => sqlx::query(sql).execute(p).await.map(|_| ()),
    }
    .expect(sql)
}

async fn upload_named(app: &TestApp, guest: &Guest, filename: &str, caption: Option<&str>) -> Value {
    let form = upload_form(&images::jpeg(64, 48), Some(Uuid::new_v4()), filename, caption);
    let response = app.upload_form(guest, form, None).await;
    assert_eq!(response.status(), StatusCode::CREATED, "uploading {filename:?}");
    response.json().await.expect("upload json")
}

fn has_format_character(s: &str) -> bool {
    s.chars()
        .any(|c| matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}'))
}

async fn export_names(app: &TestApp, event: &Event, organiser: &str) -> Vec<String> {
    let url = app.url(&format!("/api/v1/events/{}/export.zip", event.slug));
    let response = app.client.get(url).bearer_auth(organiser).send().await.expect("export");
    assert_eq!(response.status(), StatusCode::OK);
    let bytes = response.bytes().await.expect("zip").to_vec();
    let reader = async_zip::base::read::mem::ZipFileReader::new(bytes).await.expect("a valid ZIP");
    reader.file().entries().iter().map(|e| e.filename().as_str().expect("utf-8 name").to_owned()).collect()
}

async fn export_entries_take_their_extension_from_the_stored_format_and_lose_hidden_characters(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let mallory = app.join(&event, "Mallory").await;
    let organiser = app.organiser_login(&event).await;
    // Real JPEGs, whatever their names say.
    for filename in ["invoice.hta", "holiday\u{202E}gpj.exe", "IMG.JPG", "img.jpg"] {
        upload_named(&app, &mallory, filename, None).await;
    }
    // A name stored before names were cleaned on input still leaves the archive clean.
    let stored = "Mal\u{200B}lory\u{202E}";
    match &app.db {
        Db::Sqlite(p) => sqlx::query("UPDATE guests SET display_name = $1").bind(stored).execute(p).await.map(|_| ()),
        Db::Postgres(p) => sqlx::query("UPDATE guests SET display_name = $1").bind(stored).execute(p).await.map(|_| ()),
    }
    .expect("update the guest's name");

    let names = export_names(&app, &event, &organiser).await;
    assert_eq!(
        names,
        ["Mallory - invoice.jpg", "Mallory - holidaygpj.jpg", "Mallory - IMG.jpg", "Mallory - img (2).jpg"]
    );
    assert!(names.iter().all(|n| !has_format_character(n)), "{names:?}");
    let folded: HashSet<String> = names.iter().map(|n| n.to_lowercase()).collect();
    assert_eq!(folded.len(), names.len(), "unique on a file system that ignores case: {names:?}");
}

async fn format_characters_are_removed_from_what_guests_and_organisers_type(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let response = app
        .client
        .post(app.url("/api/v1/events"))
        .bearer_auth(ADMIN_TOKEN)
        .json(&json!({"name": "Anna\u{2066} & Ben\u{2069}", "organiser_password": "correct horse"}))
        .send()
        .await
        .expect("create event");
    assert_eq!(response.status(), StatusCode::CREATED);
    let created: Value = response.json().await.expect("json");
    assert_eq!(created["name"], "Anna & Ben");
    let event = Event {
        id: created["id"].as_str().expect("id").parse().expect("uuid"),
        slug: created["slug"].as_str().expect("slug").to_owned(),
        join_token: created["join_token"].as_str().expect("token").to_owned(),
        password: "correct horse".to_owned(),
    };

    let guest = app.join(&event, "\u{202E}Mal\u{200B}lory\u{FEFF}").await;
    let (_, me) = app.get_json("/api/v1/me", &guest.token).await;
    assert_eq!(me["display_name"], "Mallory");

    let upload =
        upload_named(&app, &guest, "sun\u{200B}set\u{202E}.jpg", Some("Sun\u{202E}set \u{200D}\u{00AD}")).await;
    assert_eq!(upload["caption"], "Sunset");
    assert_eq!(upload["filename"], "sunset.jpg");
    assert_eq!(upload["guest"]["display_name"], "Mallory");

    let url = app.url(&format!("/api/v1/uploads/{}/comments", upload["id"].as_str().expect("id")));
    let response =
        app.client.post(&url).bearer_auth(&guest.token).json(&json!({"text": "Nice\u{200B} one\u{202E}"})).send().await;
    let comment: Value = response.expect("comment").json().await.expect("json");
    assert_eq!(comment["text"], "Nice one");
    assert_eq!(comment["guest"]["display_name"], "Mallory");
}

async fn a_nul_byte_in_a_caption_or_comment_is_removed_the_same_way_on_both_backends(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;

    let upload = upload_named(&app, &guest, "a.jpg", Some("sun\u{0}set")).await;
    assert_eq!(upload["caption"], "sunset");
    let nothing = upload_named(&app, &guest, "b.jpg", Some("\u{0}\u{200B}\u{0}")).await;
    assert_eq!(nothing["caption"], Value::Null, "a caption of only NUL and format characters is no caption");

    let url = app.url(&format!("/api/v1/uploads/{}/comments", upload["id"].as_str().expect("id")));
    let response = app.client.post(&url).bearer_auth(&guest.token).json(&json!({"text": "so\u{0} nice"})).send().await;
    let response = response.expect("comment");
    assert_eq!(response.status(), StatusCode::CREATED);
    assert_eq!(response.json::<Value>().await.expect("json")["text"], "so nice");
    let response = app.client.post(&url).bearer_auth(&guest.token).json(&json!({"text": "\u{0}\u{202E}"})).send().await;
    assert_problem(response.expect("comment"), StatusCode::UNPROCESSABLE_ENTITY, "invalid_comment").await;

    let (_, list) =
        app.get_json(&format!("/api/v1/uploads/{}/comments", upload["id"].as_str().expect("id")), &guest.token).await;
    assert_eq!(list["items"].as_array().map(Vec::len), Some(1), "the refused comment is not stored: {list}");
}

async fn json_bodies_over_the_limit_are_413_problems_everywhere(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let organiser = app.organiser_login(&event).await;
    let upload = upload_named(&app, &guest, "a.jpg", None).await;
    let id = upload["id"].as_str().expect("id");
    let padding = "x".repeat(JSON_LIMIT as usize);
    let too_large = |response: reqwest::Response| async move {
        let problem = assert_problem(response, StatusCode::PAYLOAD_TOO_LARGE, "body_too_large").await;
        assert_eq!(problem["limit_bytes"], JSON_LIMIT);
    };

    let comments = app.url(&format!("/api/v1/uploads/{id}/comments"));
    let request = app.client.post(&comments).bearer_auth(&guest.token).json(&json!({"text": padding}));
    too_large(request.send().await.expect("POST")).await;
    let keyed = app.client.post(&comments).bearer_auth(&guest.token).header("Idempotency-Key", "big-1");
    too_large(keyed.json(&json!({"text": padding})).send().await.expect("POST")).await;
    // Sent in chunks without a Content-Length, the limit holds as the bytes arrive.
    let chunks = futures_util::stream::iter(
        [b"{\"text\": \"".to_vec(), padding.clone().into_bytes(), b"\"}".to_vec()].map(Ok::<_, std::io::Error>),
    );
    let request = app.client.post(&comments).bearer_auth(&guest.token).header("content-type", "application/json");
    too_large(request.body(reqwest::Body::wrap_stream(chunks)).send().await.expect("POST")).await;

    let event_url = app.url(&format!("/api/v1/events/{}", event.slug));
    let request = app.client.patch(&event_url).bearer_auth(&organiser).json(&json!({"name": padding}));
    too_large(request.send().await.expect("PATCH event")).await;
    let upload_url = app.url(&format!("/api/v1/uploads/{id}"));
    let request = app.client.patch(&upload_url).bearer_auth(&organiser).json(&json!({"hidden": true, "x": padding}));
    too_large(request.send().await.expect("PATCH upload")).await;

    // Nothing was written.
    let (_, list) = app.get_json(&format!("/api/v1/uploads/{id}/comments"), &guest.token).await;
    assert_eq!(list["items"], json!([]));
    let (_, shown) = app.get_json(&format!("/api/v1/events/{}", event.slug), &organiser).await;
    assert_eq!(shown["name"], "Anna & Ben");
    let (_, still) = app.get_json(&format!("/api/v1/uploads/{id}"), &organiser).await;
    assert_ne!(still["status"], "hidden");
}

async fn requests_an_extractor_refuses_are_answered_in_problem_json(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let upload = upload_named(&app, &guest, "a.jpg", None).await;
    let id = upload["id"].as_str().expect("id");

    let get = |path: String| app.client.get(app.url(&path)).bearer_auth(&guest.token).send();
    let repeated = get(format!("/api/v1/events/{}/uploads?limit=1&limit=2", event.slug)).await.expect("GET");
    let problem = assert_problem(repeated, StatusCode::BAD_REQUEST, "invalid_request").await;
    assert!(problem["detail"].as_str().is_some_and(|d| d.contains("limit")), "{problem}");
    let not_utf8 = get("/api/v1/uploads/%FF".into()).await.expect("GET");
    assert_problem(not_utf8, StatusCode::BAD_REQUEST, "invalid_request").await;
    let not_utf8 = get("/api/v1/uploads/%FF/original".into()).await.expect("GET");
    assert_problem(not_utf8, StatusCode::BAD_REQUEST, "invalid_request").await;

    // Bodies that are not JSON, or none at all, and an unknown method or path.
    let comments = app.url(&format!("/api/v1/uploads/{id}/comments"));
    let plain = app.client.post(&comments).bearer_auth(&guest.token).header("content-type", "text/plain").body("hi");
    assert_problem(plain.send().await.expect("POST"), StatusCode::BAD_REQUEST, "invalid_request").await;
    let empty = app.client.post(&comments).bearer_auth(&guest.token).header("content-type", "application/json");
    assert_problem(empty.send().await.expect("POST"), StatusCode::BAD_REQUEST, "invalid_request").await;
    let put = app.client.put(&comments).bearer_auth(&guest.token).send().await.expect("PUT");
    assert_problem(put, StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed").await;
    let nowhere = get("/api/v1/nowhere".into()).await.expect("GET");
    assert_problem(nowhere, StatusCode::NOT_FOUND, "not_found").await;
}

async fn a_weak_if_none_match_is_answered_not_modified(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let created = upload_named(&app, &guest, "a.jpg", None).await;
    let upload = settled(&app, &guest.token, created["id"].as_str().expect("id")).await;
    assert_eq!(upload["status"], "ready");

    for kind in ["original", "thumb", "preview"] {
        let url = app.url(upload["urls"][kind].as_str().expect("url"));
        let full = app.client.get(&url).bearer_auth(&guest.token).send().await.expect("GET");
        assert_eq!(full.status(), StatusCode::OK);
        let etag = full.headers()["etag"].to_str().expect("ascii").to_owned();
        for field in [format!("W/{etag}"), format!("\"other\", W/{etag}"), "*".to_owned()] {
            let again = app.client.get(&url).bearer_auth(&guest.token).header("if-none-match", &field).send().await;
            assert_eq!(again.expect("GET").status(), StatusCode::NOT_MODIFIED, "{kind} with If-None-Match: {field}");
        }
        let other = app.client.get(&url).bearer_auth(&guest.token).header("if-none-match", "W/\"other\"").send().await;
        assert_eq!(other.expect("GET").status(), StatusCode::OK, "{kind}: another tag is no match");
    }
}

async fn an_organiser_of_another_event_learns_nothing_from_a_malformed_patch_body(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let upload = upload_named(&app, &guest, "a.jpg", None).await;
    let other = app.create_event().await;
    let stranger = app.organiser_login(&other).await;
    let url = app.url(&format!("/api/v1/uploads/{}", upload["id"].as_str().expect("id")));

    let well_formed = app.client.patch(&url).bearer_auth(&stranger).json(&json!({"hidden": true})).send().await;
    let expected = well_formed.expect("PATCH").status();
    assert!(expected == StatusCode::NOT_FOUND || expected == StatusCode::FORBIDDEN, "{expected}");
    let padding = "x".repeat(JSON_LIMIT as usize);
    for body in ["{not json".to_owned(), "{\"hidden\": \"yes\"}".to_owned(), padding] {
        let response = app.client.patch(&url).bearer_auth(&stranger).header("content-type", "application/json");
        let response = response.body(body.clone()).send().await.expect("PATCH");
        assert_eq!(response.status(), expected, "body {:?}", &body[..body.len().min(20)]);
        assert_eq!(response.headers()["content-type"], "application/problem+json");
    }
}

async fn uploads_stay_readable_while_their_likes_cannot_be_read(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let organiser = app.organiser_login(&event).await;
    let key = Uuid::new_v4();
    let photo = images::jpeg(64, 48);
    let response = app.upload(&guest, &photo, Some(key)).await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let id = response.json::<Value>().await.expect("json")["id"].as_str().expect("id").to_owned();
    let like = app.client.put(app.url(&format!("/api/v1/uploads/{id}/like"))).bearer_auth(&guest.token).send().await;
    assert_eq!(like.expect("like").status(), StatusCode::OK);
    let (_, liked) = app.get_json(&format!("/api/v1/uploads/{id}"), &guest.token).await;
    assert_eq!((liked["likes"].as_i64(), liked["liked_by_me"].as_bool()), (Some(1), Some(true)));

    execute(&app, "ALTER TABLE likes RENAME TO likes_gone").await;

    let (status, one) = app.get_json(&format!("/api/v1/uploads/{id}"), &guest.token).await;
    assert_eq!(status, StatusCode::OK, "{one}");
    assert_eq!(
        (one["id"].as_str(), one["likes"].as_i64(), one["liked_by_me"].as_bool()),
        (Some(&*id), Some(0), Some(false))
    );
    let (status, page) = app.get_json(&format!("/api/v1/events/{}/uploads", event.slug), &guest.token).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(page["items"][0]["id"].as_str(), Some(&*id));
    assert_eq!(page["items"][0]["likes"], 0);
    let (status, preflight) =
        app.get_json(&format!("/api/v1/events/{}/uploads/by-client-id/{key}", event.slug), &guest.token).await;
    assert_eq!((status, preflight["id"].as_str()), (StatusCode::OK, Some(&*id)));
    let replay = app.upload(&guest, &photo, Some(key)).await;
    assert_eq!(replay.status(), StatusCode::OK);
    assert_eq!(replay.json::<Value>().await.expect("json")["id"].as_str(), Some(&*id));
    let original = app.client.get(app.url(&format!("/api/v1/uploads/{id}/original"))).bearer_auth(&guest.token).send();
    assert_eq!(original.await.expect("GET").status(), StatusCode::OK);
    // A write that answers with the Upload still commits and answers.
    let hide = app.client.patch(app.url(&format!("/api/v1/uploads/{id}"))).bearer_auth(&organiser);
    let hidden = hide.json(&json!({"hidden": true})).send().await.expect("PATCH");
    assert_eq!(hidden.status(), StatusCode::OK);
    assert_eq!(hidden.json::<Value>().await.expect("json")["status"], "hidden");
    let (_, seen) = app.get_json(&format!("/api/v1/uploads/{id}"), &organiser).await;
    assert_eq!(seen["status"], "hidden", "the change was committed");
}

both_backends!(
    export_entries_take_their_extension_from_the_stored_format_and_lose_hidden_characters,
    format_characters_are_removed_from_what_guests_and_organisers_type,
    a_nul_byte_in_a_caption_or_comment_is_removed_the_same_way_on_both_backends,
    json_bodies_over_the_limit_are_413_problems_everywhere,
    requests_an_extractor_refuses_are_answered_in_problem_json,
    a_weak_if_none_match_is_answered_not_modified,
    an_organiser_of_another_event_learns_nothing_from_a_malformed_patch_body,
    uploads_stay_readable_while_their_likes_cannot_be_read,
);
