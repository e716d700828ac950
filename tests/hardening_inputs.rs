//! Inputs that used to get the wrong answer, on both backends: what the organiser's machine
//! receives in `export.zip`, invisible characters and NUL bytes in what guests type, JSON
//! bodies over their limit, requests axum's extractors refuse, weak `If-None-Match`, who
//! learns what from a malformed PATCH, and uploads read while their likes cannot be.

mod common;

use std::collections::HashSet;

use common::images;
use common::{ADMIN_TOKEN, Backend, Event, Guest, TestApp, assert_problem, upload_form};
use confetti::db::Db;
use reqwest::StatusCode;
use serde_json::{Value, json};
use uuid::Uuid;

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

both_backends!(
    export_entries_take_their_extension_from_the_stored_format_and_lose_hidden_characters,
    format_characters_are_removed_from_what_guests_and_organisers_type,
    a_nul_byte_in_a_caption_or_comment_is_removed_the_same_way_on_both_backends,
);
