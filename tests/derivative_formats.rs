//! Lighter galleries on every backend: thumbs negotiated between WebP and JPEG by
//! `Accept` (each format its own `ETag`, both `Vary: Accept`), JPEG for uploads derived before
//! WebP existed, the placeholder in every Upload once its derivatives exist, and the WebP blobs
//! removed with the upload.

mod common;

use std::path::PathBuf;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use common::{Backend, Options, TestApp, images, settled, upload_ok};
use confetti::db::Db;
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use uuid::Uuid;

/// What Chromium sends for an `<img>`.
const BROWSER_ACCEPT: &str = "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8";

struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Vec<u8>,
}

impl Answer {
    fn header(&self, name: &str) -> &str {
        self.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
    }
}

/// GET with these request headers (reqwest adds `Accept: */*` unless one is given).
async fn get(app: &TestApp, path: &str, token: &str, headers: &[(&str, &str)]) -> Answer {
    let mut request = app.client.get(app.url(path)).bearer_auth(token);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("GET");
    let (status, headers) = (response.status(), response.headers().clone());
    Answer { status, headers, body: response.bytes().await.expect("body").to_vec() }
}

/// GET over a bare HTTP/1.1 connection, so that the request has no `Accept` field at all.
async fn get_without_accept(app: &TestApp, path: &str, token: &str) -> Answer {
    let mut stream = tokio::net::TcpStream::connect(app.addr).await.expect("connect");
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n",
        app.addr
    );
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.expect("read");
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("a header block") + 4;
    let head = String::from_utf8_lossy(&raw[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines.next().and_then(|l| l.split(' ').nth(1)).and_then(|c| c.parse::<u16>().ok()).expect("status");
    let mut headers = HeaderMap::new();
    for line in lines.filter(|l| !l.is_empty()) {
        let (name, value) = line.split_once(':').expect("a header line");
        headers.append(
            reqwest::header::HeaderName::from_bytes(name.trim().as_bytes()).expect("name"),
            value.trim().parse().expect("value"),
        );
    }
    Answer { status: StatusCode::from_u16(status).expect("status"), headers, body: raw[end..].to_vec() }
}

fn is_webp(bytes: &[u8]) -> bool {
    bytes.len() > 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP"
}

fn decoded_size(bytes: &[u8], format: image::ImageFormat) -> (u32, u32) {
    let image = image::load_from_memory_with_format(bytes, format).expect("decodable");
    (image.width(), image.height())
}

fn placeholder_bytes(upload: &Value) -> Vec<u8> {
    let text = upload["placeholder"].as_str().unwrap_or_else(|| panic!("a placeholder: {upload}"));
    STANDARD.decode(text).expect("standard base64")
}

/// Runs one statement about an upload on the test's database.
async fn execute(app: &TestApp, sql: &'static str, id: Uuid) {
    match &app.db {
        Db::Sqlite(pool) => sqlx::query(sql).bind(id).execute(pool).await.map(|_| ()),
        Db::Postgres(pool) => sqlx::query(sql).bind(id).execute(pool).await.map(|_| ()),
    }
    .expect(sql);
}

fn derivative_file(app: &TestApp, event_id: Uuid, id: &str, name: &str) -> PathBuf {
    app.blob_dir().join(format!("derivatives/{event_id}/{id}/{name}"))
}

async fn thumbs_are_webp_for_browsers_and_jpeg_for_others(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let upload = upload_ok(&app, &guest, &images::jpeg(2400, 1600)).await;
    let id = upload["id"].as_str().expect("id").to_owned();
    let ready = settled(&app, &guest.token, &id).await;
    assert_eq!(ready["status"], "ready");
    let token = guest.token.as_str();

    {
        let kind = "thumb";
        let path = format!("/api/v1/uploads/{id}/{kind}");
        let (jpeg_tag, webp_tag) = (format!("\"{id}-{kind}\""), format!("\"{id}-{kind}-webp\""));

        let webp = get(&app, &path, token, &[("accept", BROWSER_ACCEPT)]).await;
        assert_eq!(webp.status, StatusCode::OK, "{kind}");
        assert_eq!(webp.header("content-type"), "image/webp", "{kind}");
        assert!(is_webp(&webp.body), "{kind}: RIFF/WEBP magic");
        assert_eq!(webp.header("vary"), "Accept", "{kind}");
        assert_eq!(webp.header("etag"), webp_tag, "{kind}");
        assert_eq!(webp.header("content-length"), webp.body.len().to_string(), "{kind}");
        assert_eq!(webp.header("cache-control"), "private, max-age=31536000, immutable");

        let jpeg = get_without_accept(&app, &path, token).await;
        assert_eq!(jpeg.status, StatusCode::OK, "{kind} without Accept");
        assert_eq!(jpeg.header("content-type"), "image/jpeg", "{kind} without Accept");
        assert_eq!(&jpeg.body[..2], &[0xFF, 0xD8], "{kind}: a JPEG");
        assert_eq!(jpeg.header("vary"), "Accept", "{kind}: the JPEG varies too");
        assert_eq!(jpeg.header("etag"), jpeg_tag, "{kind}");
        assert_ne!(jpeg.body, webp.body);
        assert_eq!(
            decoded_size(&webp.body, image::ImageFormat::WebP),
            decoded_size(&jpeg.body, image::ImageFormat::Jpeg),
            "{kind}: the same pixels' size in both formats"
        );
        if kind == "thumb" {
            assert_eq!(decoded_size(&webp.body, image::ImageFormat::WebP), (400, 267));
        }
        assert!(webp.body.len() < jpeg.body.len(), "{kind}: WebP {} B, JPEG {} B", webp.body.len(), jpeg.body.len());

        // Wildcards alone, and WebP refused or less wanted than JPEG: JPEG.
        for accept in ["*/*", "image/*", "image/webp;q=0, */*", "image/jpeg, image/webp;q=0.5"] {
            let answer = get(&app, &path, token, &[("accept", accept)]).await;
            assert_eq!(answer.header("content-type"), "image/jpeg", "{kind} for Accept {accept}");
            assert_eq!(answer.header("etag"), jpeg_tag, "{kind} for Accept {accept}");
        }

        // Each format revalidates under its own tag, and a tag of the other format does not match.
        let not_modified = get(&app, &path, token, &[("accept", BROWSER_ACCEPT), ("if-none-match", &webp_tag)]).await;
        assert_eq!(not_modified.status, StatusCode::NOT_MODIFIED, "{kind}: the WebP's tag");
        assert_eq!(not_modified.header("etag"), webp_tag);
        assert_eq!(not_modified.header("vary"), "Accept", "{kind}: 304 varies too");
        assert!(not_modified.body.is_empty());
        let not_modified = get(&app, &path, token, &[("accept", "*/*"), ("if-none-match", &jpeg_tag)]).await;
        assert_eq!(not_modified.status, StatusCode::NOT_MODIFIED, "{kind}: the JPEG's tag");
        assert_eq!(not_modified.header("etag"), jpeg_tag);
        let other = get(&app, &path, token, &[("accept", "*/*"), ("if-none-match", &webp_tag)]).await;
        assert_eq!(other.status, StatusCode::OK, "{kind}: the WebP's tag does not validate the JPEG");
        assert_eq!(other.header("content-type"), "image/jpeg");
        let other = get(&app, &path, token, &[("accept", BROWSER_ACCEPT), ("if-none-match", &jpeg_tag)]).await;
        assert_eq!(other.status, StatusCode::OK, "{kind}: the JPEG's tag does not validate the WebP");
        assert_eq!(other.header("content-type"), "image/webp");
    }

    // The preview is a JPEG whatever the browser accepts, and does not vary.
    let path = format!("/api/v1/uploads/{id}/preview");
    let preview = get(&app, &path, token, &[("accept", BROWSER_ACCEPT)]).await;
    assert_eq!(preview.status, StatusCode::OK);
    assert_eq!(preview.header("content-type"), "image/jpeg");
    assert_eq!(&preview.body[..2], &[0xFF, 0xD8]);
    assert_eq!(preview.header("etag"), format!("\"{id}-preview\""));
    assert!(preview.headers.get("vary").is_none(), "the preview does not depend on Accept");
    assert!(!derivative_file(&app, event.id, &id, "preview.webp").exists(), "no WebP preview is made");

    // The placeholder, in the Upload and in the listing.
    let hash = placeholder_bytes(&ready);
    assert!((5..=40).contains(&hash.len()), "a ThumbHash of {} bytes", hash.len());
    let (_, page) = app.get_json(&format!("/api/v1/events/{}/uploads", event.slug), token).await;
    assert_eq!(page["items"][0]["placeholder"], ready["placeholder"], "the listing carries it too");
    app.stop().await;
}

async fn the_placeholder_is_null_until_the_derivatives_exist(backend: Backend) {
    // No derivative worker: the upload stays `processing`.
    let app = TestApp::spawn_with(backend, Options { derivative_workers: Some(0), ..Options::default() }).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let upload = upload_ok(&app, &guest, &images::jpeg(640, 480)).await;
    let id = upload["id"].as_str().expect("id").to_owned();
    assert_eq!(upload["status"], "processing");
    assert!(upload.as_object().expect("an object").contains_key("placeholder"), "the key is always there");
    assert_eq!(upload["placeholder"], Value::Null, "no placeholder while processing");
    let (_, read) = app.get_json(&format!("/api/v1/uploads/{id}"), &guest.token).await;
    assert_eq!(read["placeholder"], Value::Null);

    // With a worker it comes with `ready`.
    let app = app.restart_with(Options::default()).await;
    let ready = settled(&app, &guest.token, &id).await;
    assert_eq!(ready["status"], "ready");
    assert!((5..=40).contains(&placeholder_bytes(&ready).len()));
    app.stop().await;
}

async fn an_upload_derived_before_webp_is_jpeg_whatever_the_client_accepts(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let upload = upload_ok(&app, &guest, &images::jpeg(800, 600)).await;
    let id = upload["id"].as_str().expect("id").to_owned();
    settled(&app, &guest.token, &id).await;
    let upload_id: Uuid = id.parse().expect("uuid");

    // As an upload derived before this version looks: no WebP recorded, none stored, no placeholder.
    execute(&app, "UPDATE uploads SET webp_thumb = FALSE, placeholder = NULL WHERE id = $1", upload_id).await;
    std::fs::remove_file(derivative_file(&app, event.id, &id, "thumb.webp")).expect("remove the WebP");
    let (_, read) = app.get_json(&format!("/api/v1/uploads/{id}"), &guest.token).await;
    assert_eq!(read["status"], "ready");
    assert_eq!(read["placeholder"], Value::Null, "older uploads have none");
    let answer = get(&app, &format!("/api/v1/uploads/{id}/thumb"), &guest.token, &[("accept", BROWSER_ACCEPT)]).await;
    assert_eq!(answer.status, StatusCode::OK, "never a 404 for a missing WebP");
    assert_eq!(answer.header("content-type"), "image/jpeg");
    assert_eq!(answer.header("etag"), format!("\"{id}-thumb\""));
    assert_eq!(answer.header("vary"), "Accept");
    assert_eq!(&answer.body[..2], &[0xFF, 0xD8]);

    // A row that says WebP exists while the store lost it: JPEG too, not a 404.
    execute(&app, "UPDATE uploads SET webp_thumb = TRUE WHERE id = $1", upload_id).await;
    let answer = get(&app, &format!("/api/v1/uploads/{id}/thumb"), &guest.token, &[("accept", BROWSER_ACCEPT)]).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.header("content-type"), "image/jpeg");
    app.stop().await;
}

async fn deleting_an_upload_removes_its_webp_thumb(backend: Backend) {
    let app = TestApp::spawn_with(backend, Options { undo_grace_s: 0, ..Options::default() }).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let organiser = app.organiser_login(&event).await;
    let upload = upload_ok(&app, &guest, &images::jpeg(640, 480)).await;
    let id = upload["id"].as_str().expect("id").to_owned();
    settled(&app, &guest.token, &id).await;
    let names = ["thumb.jpg", "preview.jpg", "thumb.webp"];
    for name in names {
        assert!(derivative_file(&app, event.id, &id, name).is_file(), "{name} is stored");
    }

    let response = app.client.delete(app.url(&format!("/api/v1/uploads/{id}"))).bearer_auth(&organiser).send().await;
    assert_eq!(response.expect("DELETE").status(), StatusCode::NO_CONTENT);
    let left: Vec<_> = app.derivative_files().into_iter().filter(|p| p.to_string_lossy().contains(&id)).collect();
    assert!(left.is_empty(), "every derivative went, WebP included: {left:?}");
    app.stop().await;
}

async fn deleting_an_event_removes_its_webp_thumb(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let upload = upload_ok(&app, &guest, &images::jpeg(640, 480)).await;
    let id = upload["id"].as_str().expect("id").to_owned();
    settled(&app, &guest.token, &id).await;
    assert!(derivative_file(&app, event.id, &id, "thumb.webp").is_file());

    let response = app
        .client
        .delete(app.url(&format!("/api/v1/events/{}", event.slug)))
        .bearer_auth(common::ADMIN_TOKEN)
        .send()
        .await
        .expect("DELETE event");
    assert!(response.status().is_success(), "{}", response.status());
    let started = std::time::Instant::now();
    while !app.derivative_files().is_empty() && started.elapsed() < std::time::Duration::from_secs(20) {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(app.derivative_files(), Vec::<PathBuf>::new(), "no derivative of the event is left, WebP included");
    app.stop().await;
}

every_store!(
    thumbs_are_webp_for_browsers_and_jpeg_for_others,
    deleting_an_upload_removes_its_webp_thumb,
    deleting_an_event_removes_its_webp_thumb,
);

both_backends!(
    the_placeholder_is_null_until_the_derivatives_exist,
    an_upload_derived_before_webp_is_jpeg_whatever_the_client_accepts,
);
