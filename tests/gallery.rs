//! The gallery on both backends: derivatives (sizes, orientation, no metadata, made once,
//! resumed after a restart), the live state of an Upload, hiding, likes, comments, the export
//! and the live stream.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::images::{self, jpeg_markers};
use common::reading::{next_sse, unzip};
use common::{Backend, Options, TestApp, assert_problem, settled, upload_form, upload_ok};
use reqwest::StatusCode;
use serde_json::{Value, json};
use uuid::Uuid;

async fn get_bytes(app: &TestApp, path: &str, token: &str) -> (StatusCode, reqwest::header::HeaderMap, Vec<u8>) {
    let response = app.client.get(app.url(path)).bearer_auth(token).send().await.expect("GET");
    let (status, headers) = (response.status(), response.headers().clone());
    (status, headers, response.bytes().await.expect("body").to_vec())
}

fn dimensions(jpeg: &[u8]) -> (u32, u32) {
    let decoded = image::load_from_memory_with_format(jpeg, image::ImageFormat::Jpeg).expect("a decodable JPEG");
    (decoded.width(), decoded.height())
}

async fn derivatives_appear_with_the_right_sizes(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let created = upload_ok(&app, &guest, &images::jpeg(3000, 2000)).await;
    assert_eq!(created["status"], "processing");
    assert_eq!(created["urls"]["thumb"], Value::Null, "no thumb before it exists");
    let id = created["id"].as_str().expect("id");

    let upload = settled(&app, &guest.token, id).await;
    assert_eq!(upload["status"], "ready");
    assert_eq!((upload["width"].as_i64(), upload["height"].as_i64()), (Some(3000), Some(2000)));
    let metrics = app.client.get(app.url("/metrics")).send().await.expect("metrics").text().await.expect("text");
    assert!(metrics.contains("\nconfetti_derivatives_made_total 1\n"), "{metrics}");

    let thumb_url = upload["urls"]["thumb"].as_str().expect("thumb url");
    let (status, headers, thumb) = get_bytes(&app, thumb_url, &guest.token).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-type"], "image/jpeg");
    assert!(headers["cache-control"].to_str().expect("ascii").contains("immutable"));
    let (w, h) = dimensions(&thumb);
    assert!((320..=512).contains(&w.max(h)), "thumb long edge {w}×{h}");
    assert!((w as f64 / h as f64 - 1.5).abs() < 0.02, "thumb keeps the aspect ratio: {w}×{h}");

    let (status, headers, preview) =
        get_bytes(&app, upload["urls"]["preview"].as_str().expect("preview url"), &guest.token).await;
    assert_eq!(status, StatusCode::OK);
    let (w, h) = dimensions(&preview);
    assert!((1600..=2048).contains(&w.max(h)), "preview long edge {w}×{h}");
    assert!((w as f64 / h as f64 - 1.5).abs() < 0.02, "preview keeps the aspect ratio: {w}×{h}");

    // The ETag validates.
    let etag = headers["etag"].clone();
    let again = app
        .client
        .get(app.url(upload["urls"]["preview"].as_str().expect("url")))
        .bearer_auth(&guest.token)
        .header("if-none-match", etag)
        .send()
        .await
        .expect("GET");
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
}

async fn a_small_photo_is_never_enlarged(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let upload = upload_ok(&app, &guest, &images::png(300, 200)).await;
    let upload = settled(&app, &guest.token, upload["id"].as_str().expect("id")).await;
    assert_eq!(upload["status"], "ready");
    for kind in ["thumb", "preview"] {
        let (status, _, bytes) = get_bytes(&app, upload["urls"][kind].as_str().expect("url"), &guest.token).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(dimensions(&bytes), (300, 200), "{kind} of a 300×200 PNG");
    }
}

async fn an_exif_rotated_photo_gives_an_upright_portrait_thumb(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let upload = upload_ok(&app, &guest, &images::jpeg_with_orientation(1200, 800, 6)).await;
    assert_eq!((upload["width"].as_i64(), upload["height"].as_i64()), (Some(800), Some(1200)), "as displayed");
    let upload = settled(&app, &guest.token, upload["id"].as_str().expect("id")).await;
    let (_, _, thumb) = get_bytes(&app, upload["urls"]["thumb"].as_str().expect("url"), &guest.token).await;
    let (w, h) = dimensions(&thumb);
    assert!(h > w, "orientation 6 turns 1200×800 into a portrait thumb, got {w}×{h}");
    assert!(!jpeg_markers(&thumb).contains(&0xE1), "no EXIF left to rotate it twice");
}

async fn taken_at_comes_from_the_camera_and_survives_a_replay(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let photo = images::jpeg_taken_at(640, 480, "2026:06:12 14:03:22");
    let key = Uuid::new_v4();
    let created: Value = app.upload(&guest, &photo, Some(key)).await.json().await.expect("json");
    assert_eq!(created["taken_at"], "2026-06-12T14:03:22.000Z");
    settled(&app, &guest.token, created["id"].as_str().expect("id")).await;
    let replay: Value = app.upload(&guest, &photo, Some(key)).await.json().await.expect("json");
    assert_eq!(replay["taken_at"], "2026-06-12T14:03:22.000Z");
    let plain: Value =
        app.upload(&guest, &images::jpeg(64, 64), Some(Uuid::new_v4())).await.json().await.expect("json");
    assert_eq!(plain["taken_at"], Value::Null, "no EXIF, no capture time");
}

async fn derivatives_carry_no_location_or_other_metadata(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let photo = images::jpeg_with_gps(800, 600);
    assert!(jpeg_markers(&photo).contains(&0xE1), "the test photo carries EXIF");
    let upload = upload_ok(&app, &guest, &photo).await;
    let upload = settled(&app, &guest.token, upload["id"].as_str().expect("id")).await;
    for kind in ["thumb", "preview"] {
        let (_, _, bytes) = get_bytes(&app, upload["urls"][kind].as_str().expect("url"), &guest.token).await;
        let markers = jpeg_markers(&bytes);
        assert!(!markers.iter().any(|m| (0xE1..=0xEF).contains(m)), "{kind} has APPn segments: {markers:x?}");
        let has = |needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
        assert!(!has(b"Exif") && !has(b"ConfettiCam"), "{kind} carries the camera's metadata");
    }
    // The original stays as the guest sent it.
    let (_, _, original) = get_bytes(&app, upload["urls"]["original"].as_str().expect("url"), &guest.token).await;
    assert_eq!(original, photo);
}

async fn an_undecodable_photo_ends_failed_and_keeps_its_original(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let photo = images::jpeg_without_quantization_tables(640, 480);
    let upload = upload_ok(&app, &guest, &photo).await;
    let upload = settled(&app, &guest.token, upload["id"].as_str().expect("id")).await;
    assert_eq!(upload["status"], "failed");
    assert_eq!(upload["urls"]["thumb"], Value::Null);
    assert_eq!(upload["urls"]["preview"], Value::Null);
    let (status, _, original) = get_bytes(&app, upload["urls"]["original"].as_str().expect("url"), &guest.token).await;
    assert_eq!((status, original), (StatusCode::OK, photo));
    let (status, _, _) =
        get_bytes(&app, &format!("/api/v1/uploads/{}/thumb", upload["id"].as_str().expect("id")), &guest.token).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

async fn a_replay_minutes_later_shows_derivatives_likes_and_comments(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let anna = app.join(&event, "Anna").await;
    let ben = app.join(&event, "Ben").await;
    let key = Uuid::new_v4();
    let photo = images::jpeg(640, 480);
    let first = app.upload(&anna, &photo, Some(key)).await;
    assert_eq!(first.status(), StatusCode::CREATED);
    let first: Value = first.json().await.expect("json");
    let id = first["id"].as_str().expect("id");
    settled(&app, &anna.token, id).await;

    let like = app.client.put(app.url(&format!("/api/v1/uploads/{id}/like"))).bearer_auth(&ben.token).send().await;
    assert_eq!(like.expect("like").status(), StatusCode::OK);
    let comment = app
        .client
        .post(app.url(&format!("/api/v1/uploads/{id}/comments")))
        .bearer_auth(&ben.token)
        .json(&json!({"text": "Lovely!"}))
        .send()
        .await
        .expect("comment");
    assert_eq!(comment.status(), StatusCode::CREATED);

    let replay = app.upload(&anna, &photo, Some(key)).await;
    assert_eq!(replay.status(), StatusCode::OK);
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    let replay: Value = replay.json().await.expect("json");
    assert_eq!(replay["id"], first["id"]);
    assert_eq!(replay["status"], "ready");
    assert!(replay["urls"]["thumb"].is_string() && replay["urls"]["preview"].is_string(), "{replay}");
    assert_eq!((replay["likes"].as_i64(), replay["liked_by_me"].as_bool()), (Some(1), Some(false)));
    assert_eq!(replay["comments"], 1);
    // Ben sees his own like.
    let (_, seen_by_ben) = app.get_json(&format!("/api/v1/uploads/{id}"), &ben.token).await;
    assert_eq!(seen_by_ben["liked_by_me"], true);
}

async fn likes_are_idempotent_by_method(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let anna = app.join(&event, "Anna").await;
    let ben = app.join(&event, "Ben").await;
    let upload = upload_ok(&app, &anna, &images::jpeg(64, 64)).await;
    let like_url = app.url(&format!("/api/v1/uploads/{}/like", upload["id"].as_str().expect("id")));
    for _ in 0..3 {
        let response = app.client.put(&like_url).bearer_auth(&ben.token).send().await.expect("PUT");
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.json::<Value>().await.expect("json"), json!({"likes": 1, "liked_by_me": true}));
    }
    let response = app.client.put(&like_url).bearer_auth(&anna.token).send().await.expect("PUT");
    assert_eq!(response.json::<Value>().await.expect("json"), json!({"likes": 2, "liked_by_me": true}));
    for _ in 0..2 {
        let response = app.client.delete(&like_url).bearer_auth(&ben.token).send().await.expect("DELETE");
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.json::<Value>().await.expect("json"), json!({"likes": 1, "liked_by_me": false}));
    }
    let organiser = app.organiser_login(&event).await;
    let response = app.client.put(&like_url).bearer_auth(&organiser).send().await.expect("PUT");
    assert_problem(response, StatusCode::FORBIDDEN, "forbidden").await;
}

async fn comments_are_kept_as_text_and_checked(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let anna = app.join(&event, "Anna").await;
    let ben = app.join(&event, "Ben").await;
    let upload = upload_ok(&app, &anna, &images::jpeg(64, 64)).await;
    let url = app.url(&format!("/api/v1/uploads/{}/comments", upload["id"].as_str().expect("id")));
    let text = "<script>alert('hi')</script> & 💍";
    let response =
        app.client.post(&url).bearer_auth(&ben.token).json(&json!({"text": text})).send().await.expect("POST");
    assert_eq!(response.status(), StatusCode::CREATED);
    let comment: Value = response.json().await.expect("json");
    assert_eq!(comment["text"], text);
    assert_eq!(comment["guest"]["display_name"], "Ben");

    for bad in ["", "   ", &"x".repeat(1001)] {
        let response = app.client.post(&url).bearer_auth(&ben.token).json(&json!({"text": bad})).send().await;
        assert_problem(response.expect("POST"), StatusCode::UNPROCESSABLE_ENTITY, "invalid_comment").await;
    }
    let longest = "y".repeat(1000);
    let response = app.client.post(&url).bearer_auth(&anna.token).json(&json!({"text": longest})).send().await;
    assert_eq!(response.expect("POST").status(), StatusCode::CREATED);

    let (status, list) =
        app.get_json(&format!("/api/v1/uploads/{}/comments", upload["id"].as_str().expect("id")), &anna.token).await;
    assert_eq!(status, StatusCode::OK);
    let texts: Vec<&str> =
        list["items"].as_array().expect("items").iter().map(|c| c["text"].as_str().expect("text")).collect();
    assert_eq!(texts, vec![text, longest.as_str()], "oldest first, exactly as written");
}

async fn hidden_uploads_are_invisible_to_other_guests(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let anna = app.join(&event, "Anna").await;
    let ben = app.join(&event, "Ben").await;
    let organiser = app.organiser_login(&event).await;
    let upload = upload_ok(&app, &anna, &images::jpeg(64, 64)).await;
    let id = upload["id"].as_str().expect("id");
    settled(&app, &anna.token, id).await;

    let hide = |hidden: bool| {
        app.client
            .patch(app.url(&format!("/api/v1/uploads/{id}")))
            .bearer_auth(&organiser)
            .json(&json!({"hidden": hidden}))
            .send()
    };
    let response = hide(true).await.expect("PATCH");
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.json::<Value>().await.expect("json")["status"], "hidden");

    let listing = format!("/api/v1/events/{}/uploads", event.slug);
    let ids = |page: &Value| -> Vec<String> {
        page["items"].as_array().expect("items").iter().map(|u| u["id"].as_str().expect("id").to_owned()).collect()
    };
    let (_, page) = app.get_json(&listing, &ben.token).await;
    assert!(ids(&page).is_empty(), "Ben does not see it: {page}");
    let (status, _) = app.get_json(&format!("/api/v1/uploads/{id}"), &ben.token).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _, _) = get_bytes(&app, &format!("/api/v1/uploads/{id}/thumb"), &ben.token).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "nor its thumb");
    let (status, _, _) = get_bytes(&app, &format!("/api/v1/uploads/{id}/original"), &ben.token).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "nor its original");

    for (who, token) in [("its uploader", &anna.token), ("the organiser", &organiser)] {
        let (_, page) = app.get_json(&listing, token).await;
        assert_eq!(ids(&page), vec![id.to_owned()], "{who} sees it");
        assert_eq!(page["items"][0]["status"], "hidden", "{who} sees it as hidden");
    }

    let response = hide(false).await.expect("PATCH");
    assert_eq!(response.json::<Value>().await.expect("json")["status"], "ready");
    let (_, page) = app.get_json(&listing, &ben.token).await;
    assert_eq!(ids(&page), vec![id.to_owned()], "shown again");
}

async fn organisers_delete_any_upload_and_the_uploader_is_refunded(backend: Backend) {
    // Without an undo grace the organiser's delete removes the bytes at once (with one, they
    // wait: tests/people.rs).
    let app = TestApp::spawn_with(backend, Options { undo_grace_s: 0, ..Options::default() }).await;
    let event = app.create_event().await;
    let anna = app.join(&event, "Anna").await;
    let organiser = app.organiser_login(&event).await;
    let upload = upload_ok(&app, &anna, &images::jpeg(64, 64)).await;
    let id = upload["id"].as_str().expect("id");
    settled(&app, &anna.token, id).await;
    assert!(app.used_bytes(&anna).await > 0);
    assert_eq!(app.derivative_files().len(), 3, "thumb and preview were made as JPEG, the thumb as AVIF too");
    let response = app.client.delete(app.url(&format!("/api/v1/uploads/{id}"))).bearer_auth(&organiser).send().await;
    assert_eq!(response.expect("DELETE").status(), StatusCode::NO_CONTENT);
    assert_eq!(app.used_bytes(&anna).await, 0, "refunded");
    let files = [app.blob_files(), app.derivative_files()].concat();
    let leftovers: Vec<_> = files.into_iter().filter(|p| p.to_string_lossy().contains(id)).collect();
    assert!(leftovers.is_empty(), "original and derivatives are gone: {leftovers:?}");
    let response = app.client.delete(app.url(&format!("/api/v1/uploads/{id}"))).bearer_auth(&organiser).send().await;
    assert_problem(response.expect("DELETE"), StatusCode::NOT_FOUND, "not_found").await;
}

async fn guests_get_403_on_organiser_endpoints(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let anna = app.join(&event, "Anna").await;
    let upload = upload_ok(&app, &anna, &images::jpeg(64, 64)).await;
    let id = upload["id"].as_str().expect("id");
    let c = &app.client;
    let requests = [
        ("PATCH upload", c.patch(app.url(&format!("/api/v1/uploads/{id}"))).json(&json!({"hidden": true}))),
        (
            "PATCH event",
            c.patch(app.url(&format!("/api/v1/events/{}", event.slug))).json(&json!({"uploads_open": false})),
        ),
        ("export", c.get(app.url(&format!("/api/v1/events/{}/export.zip", event.slug)))),
    ];
    for (what, request) in requests {
        let anonymous = request.try_clone().expect("clone").send().await.expect("send");
        assert_problem(anonymous, StatusCode::UNAUTHORIZED, "unauthenticated").await;
        let response = request.bearer_auth(&anna.token).send().await.expect("send");
        assert_eq!(response.status(), StatusCode::FORBIDDEN, "{what}");
        assert_problem(response, StatusCode::FORBIDDEN, "forbidden").await;
    }
    // Whatever the id or body: a guest learns only that this is the organiser's.
    let other = app.create_event().await;
    let carl = app.join(&other, "Carl").await;
    let theirs = upload_ok(&app, &carl, &images::jpeg(64, 64)).await;
    for (what, path, body) in [
        (
            "another event's upload",
            format!("/api/v1/uploads/{}", theirs["id"].as_str().expect("id")),
            json!({"hidden": true}),
        ),
        ("an unknown upload", format!("/api/v1/uploads/{}", Uuid::now_v7()), json!({"hidden": true})),
        ("a malformed body", format!("/api/v1/uploads/{id}"), json!({"hidden": "yes"})),
    ] {
        let response = c.patch(app.url(&path)).bearer_auth(&anna.token).json(&body).send().await.expect("PATCH");
        assert_eq!(response.status(), StatusCode::FORBIDDEN, "{what}");
        assert_problem(response, StatusCode::FORBIDDEN, "forbidden").await;
    }
    let (_, still) = app.get_json(&format!("/api/v1/uploads/{id}"), &anna.token).await;
    assert_ne!(still["status"], "hidden", "nothing changed");
}

async fn media_urls_work_with_the_cookie_alone(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let anna = app.join(&event, "Anna").await;
    let upload = upload_ok(&app, &anna, &images::jpeg(640, 480)).await;
    let upload = settled(&app, &anna.token, upload["id"].as_str().expect("id")).await;
    for kind in ["original", "preview", "thumb"] {
        let url = app.url(upload["urls"][kind].as_str().expect("url"));
        let response = app.client.get(&url).header("cookie", format!("confetti_guest={}", anna.token)).send().await;
        let response = response.expect("GET");
        assert_eq!(response.status(), StatusCode::OK, "{kind} by cookie");
        assert!(response.headers()["content-type"].to_str().expect("ascii").starts_with("image/"));
        let anonymous = app.client.get(&url).send().await.expect("GET");
        assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED, "{kind} without credentials");
    }
}

/// The organiser hides `hidden`; its uploader deletes `deleted`.
async fn hide_one_delete_another(
    app: &TestApp,
    organiser: &str,
    uploader: &common::Guest,
    hidden: &str,
    deleted: &str,
) {
    let response = app
        .client
        .patch(app.url(&format!("/api/v1/uploads/{hidden}")))
        .bearer_auth(organiser)
        .json(&json!({"hidden": true}))
        .send()
        .await;
    assert_eq!(response.expect("PATCH").status(), StatusCode::OK);
    let response =
        app.client.delete(app.url(&format!("/api/v1/uploads/{deleted}"))).bearer_auth(&uploader.token).send().await;
    assert_eq!(response.expect("DELETE").status(), StatusCode::NO_CONTENT);
}

async fn export_zip_holds_exactly_the_visible_originals(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let anna = app.join(&event, "Anna").await;
    let ben = app.join(&event, "Ben").await;
    let organiser = app.organiser_login(&event).await;
    let mut visible = HashMap::new();
    let mut ids = Vec::new();
    for (i, guest) in [&anna, &ben, &anna, &ben].into_iter().enumerate() {
        let photo = images::jpeg(100 + i as u32 * 10, 80);
        let form = upload_form(&photo, Some(Uuid::new_v4()), "IMG_0001.jpg", None);
        let response = app.upload_form(guest, form, None).await;
        assert_eq!(response.status(), StatusCode::CREATED);
        let body: Value = response.json().await.expect("json");
        ids.push(body["id"].as_str().expect("id").to_owned());
        visible.insert(body["id"].as_str().expect("id").to_owned(), photo);
    }
    // One hidden, one deleted: neither belongs in the archive.
    hide_one_delete_another(&app, &organiser, &anna, &ids[1], &ids[2]).await;
    visible.remove(&ids[1]);
    visible.remove(&ids[2]);

    let (status, headers, zip) =
        get_bytes(&app, &format!("/api/v1/events/{}/export.zip", event.slug), &organiser).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-type"], "application/zip");
    let entries = unzip(zip).await;
    assert_eq!(entries.len(), 2, "exactly the visible originals: {:?}", entries.keys());
    let mut expected: Vec<&Vec<u8>> = visible.values().collect();
    let mut got: Vec<&Vec<u8>> = entries.values().collect();
    expected.sort();
    got.sort();
    assert_eq!(got, expected, "byte for byte");
    let mut names: Vec<&String> = entries.keys().collect();
    names.sort();
    assert_eq!(names, vec!["Anna - IMG_0001.jpg", "Ben - IMG_0001.jpg"]);
}

async fn export_zip_includes_hidden_photos_only_on_request(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let anna = app.join(&event, "Anna").await;
    let organiser = app.organiser_login(&event).await;
    let mut ids = Vec::new();
    for (i, name) in ["shown.jpg", "hidden.jpg", "deleted.jpg"].into_iter().enumerate() {
        let form = upload_form(&images::jpeg(100 + i as u32 * 10, 80), Some(Uuid::new_v4()), name, None);
        let response = app.upload_form(&anna, form, None).await;
        assert_eq!(response.status(), StatusCode::CREATED);
        let body: Value = response.json().await.expect("json");
        ids.push(body["id"].as_str().expect("id").to_owned());
    }
    hide_one_delete_another(&app, &organiser, &anna, &ids[1], &ids[2]).await;

    let export = |query: &str| format!("/api/v1/events/{}/export.zip{query}", event.slug);
    let names = |entries: HashMap<String, Vec<u8>>| {
        let mut names: Vec<String> = entries.into_keys().collect();
        names.sort();
        names
    };
    for query in ["", "?include_hidden=false", "?include_hidden="] {
        let (status, _, zip) = get_bytes(&app, &export(query), &organiser).await;
        assert_eq!(status, StatusCode::OK, "{query}");
        assert_eq!(names(unzip(zip).await), vec!["Anna - shown.jpg"], "by default only the visible photo ({query:?})");
    }
    let (status, headers, zip) = get_bytes(&app, &export("?include_hidden=true"), &organiser).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-type"], "application/zip");
    assert_eq!(
        names(unzip(zip).await),
        vec!["Anna - hidden.jpg", "Anna - shown.jpg"],
        "hidden on request, never deleted"
    );

    let response = app.client.get(app.url(&export("?include_hidden=yes"))).bearer_auth(&organiser).send().await;
    assert_problem(response.expect("GET"), StatusCode::BAD_REQUEST, "invalid_request").await;
    let response = app
        .client
        .get(app.url(&export("?include_hidden=true&include_hidden=true")))
        .bearer_auth(&organiser)
        .send()
        .await;
    assert_problem(response.expect("GET"), StatusCode::BAD_REQUEST, "invalid_request").await;
    // The guests' side stays closed whatever the query says.
    let response = app.client.get(app.url(&export("?include_hidden=true"))).bearer_auth(&anna.token).send().await;
    assert_problem(response.expect("GET"), StatusCode::FORBIDDEN, "forbidden").await;
    let response = app.client.get(app.url(&export("?include_hidden=yes"))).send().await;
    assert_problem(response.expect("GET"), StatusCode::UNAUTHORIZED, "unauthenticated").await;
}

/// Every entry of a ZIP archive, by name.
async fn a_restart_finishes_the_derivatives_the_last_run_did_not_make(backend: Backend) {
    // The first run commits the upload and dies before any derivative is made.
    let app = TestApp::spawn_with(backend, Options { derivative_workers: Some(0), ..Options::default() }).await;
    let event = app.create_event().await;
    let anna = app.join(&event, "Anna").await;
    let upload = upload_ok(&app, &anna, &images::jpeg(640, 480)).await;
    let id = upload["id"].as_str().expect("id").to_owned();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (_, still) = app.get_json(&format!("/api/v1/uploads/{id}"), &anna.token).await;
    assert_eq!(still["status"], "processing");
    assert_eq!(app.db.pending_derivative_jobs().await.expect("jobs"), 1);

    let app = app.restart_with(Options::default()).await;
    let upload = settled(&app, &anna.token, &id).await;
    assert_eq!(upload["status"], "ready");
    assert_eq!(app.db.pending_derivative_jobs().await.expect("jobs"), 0, "the job is done and gone");
    let (status, _, _) = get_bytes(&app, upload["urls"]["thumb"].as_str().expect("url"), &anna.token).await;
    assert_eq!(status, StatusCode::OK);
}

async fn a_photo_deleted_before_its_derivatives_gets_none(backend: Backend) {
    let app = TestApp::spawn_with(backend, Options { derivative_workers: Some(0), ..Options::default() }).await;
    let event = app.create_event().await;
    let anna = app.join(&event, "Anna").await;
    let upload = upload_ok(&app, &anna, &images::jpeg(640, 480)).await;
    let id = upload["id"].as_str().expect("id").to_owned();
    let response = app.client.delete(app.url(&format!("/api/v1/uploads/{id}"))).bearer_auth(&anna.token).send().await;
    assert_eq!(response.expect("DELETE").status(), StatusCode::NO_CONTENT);

    let app = app.restart_with(Options::default()).await;
    for _ in 0..100 {
        if app.db.pending_derivative_jobs().await.expect("jobs") == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(app.db.pending_derivative_jobs().await.expect("jobs"), 0, "the job ended");
    assert_eq!(app.derivative_files(), Vec::<std::path::PathBuf>::new(), "nothing made for a deleted photo");
    assert_eq!(app.blob_files(), Vec::<std::path::PathBuf>::new());
}

async fn the_live_stream_tells_of_new_and_removed_photos(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let anna = app.join(&event, "Anna").await;
    let organiser = app.organiser_login(&event).await;
    let mut stream = app
        .client
        .get(app.url(&format!("/api/v1/events/{}/live", event.slug)))
        .header("cookie", format!("confetti_organiser={organiser}"))
        .send()
        .await
        .expect("live");
    assert_eq!(stream.status(), StatusCode::OK);
    assert!(stream.headers()["content-type"].to_str().expect("ascii").starts_with("text/event-stream"));

    let upload = upload_ok(&app, &anna, &images::jpeg(640, 480)).await;
    let id = upload["id"].as_str().expect("id").to_owned();
    let (kind, data) = next_sse(&mut stream).await;
    assert_eq!(kind, "upload");
    assert_eq!(data["id"], id.as_str());
    assert_eq!(data["status"], "ready", "announced once it can be shown");
    assert!(data["urls"]["preview"].is_string());

    let response = app
        .client
        .patch(app.url(&format!("/api/v1/uploads/{id}")))
        .bearer_auth(&organiser)
        .json(&json!({"hidden": true}))
        .send()
        .await;
    assert_eq!(response.expect("PATCH").status(), StatusCode::OK);
    let (kind, data) = next_sse(&mut stream).await;
    assert_eq!((kind.as_str(), &data), ("removed", &json!({"id": id})));
}

/// Two instances share one PostgreSQL and one blob directory: every upload's derivatives are
/// made exactly once, by one of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_instances_on_one_postgres_make_each_derivative_once() {
    let a = TestApp::spawn(Backend::Postgres).await;
    let b = TestApp::spawn_sharing(&a).await;
    let event = a.create_event().await;
    let anna = a.join(&event, "Anna").await;
    let mut ids = Vec::new();
    for i in 0..12 {
        let app = if i % 2 == 0 { &a } else { &b };
        ids.push(upload_ok(app, &anna, &images::jpeg(800, 600)).await["id"].as_str().expect("id").to_owned());
    }
    for id in &ids {
        assert_eq!(settled(&a, &anna.token, id).await["status"], "ready");
    }
    use std::sync::atomic::Ordering::Relaxed;
    let started = |app: &TestApp| app.state.derivatives.started.load(Relaxed);
    let made = |app: &TestApp| app.state.derivatives.made.load(Relaxed);
    // Thumbs first: each upload is decoded once for its thumb and once for the rest.
    assert_eq!(
        started(&a) + started(&b),
        24,
        "each upload decoded once a phase (a: {}, b: {})",
        started(&a),
        started(&b)
    );
    assert_eq!(made(&a) + made(&b), 12, "each upload's derivatives made once (a: {}, b: {})", made(&a), made(&b));
    assert_eq!(a.state.derivatives.failed.load(Relaxed) + b.state.derivatives.failed.load(Relaxed), 0);
    assert_eq!(a.db.pending_derivative_jobs().await.expect("jobs"), 0);
}

every_store!(
    derivatives_appear_with_the_right_sizes,
    a_small_photo_is_never_enlarged,
    an_exif_rotated_photo_gives_an_upright_portrait_thumb,
    derivatives_carry_no_location_or_other_metadata,
    taken_at_comes_from_the_camera_and_survives_a_replay,
    an_undecodable_photo_ends_failed_and_keeps_its_original,
    a_replay_minutes_later_shows_derivatives_likes_and_comments,
    likes_are_idempotent_by_method,
    comments_are_kept_as_text_and_checked,
    hidden_uploads_are_invisible_to_other_guests,
    organisers_delete_any_upload_and_the_uploader_is_refunded,
    guests_get_403_on_organiser_endpoints,
    media_urls_work_with_the_cookie_alone,
    export_zip_holds_exactly_the_visible_originals,
    export_zip_includes_hidden_photos_only_on_request,
    a_restart_finishes_the_derivatives_the_last_run_did_not_make,
    a_photo_deleted_before_its_derivatives_gets_none,
    the_live_stream_tells_of_new_and_removed_photos,
);
