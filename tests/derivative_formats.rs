//! Lighter galleries on every backend: thumbs negotiated between AVIF and JPEG by `Accept`
//! (each format its own `ETag`, all `Vary: Accept`), the AVIF showing the JPEG's colours, the
//! WebP or JPEG for uploads derived before AVIF (or WebP) existed, the placeholder in
//! every Upload once its derivatives exist, and the AVIF and WebP blobs removed with the upload.

mod common;

use std::path::PathBuf;
use std::process::Command;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use common::{Backend, Options, TestApp, images, settled, upload_ok};
use confetti::blobs::BlobKey;
use confetti::db::Db;
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use uuid::Uuid;

/// What Chromium sends for an `<img>`.
const BROWSER_ACCEPT: &str = "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8";
/// What Safari 14–15 send for an `<img>`: WebP, no AVIF.
const WEBP_ONLY_ACCEPT: &str = "image/webp,image/png,image/svg+xml,image/*;q=0.8,video/*;q=0.8,*/*;q=0.5";

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

/// A real WebP (lossless), as uploads derived before AVIF have for their thumb.
fn webp_file() -> Vec<u8> {
    let img = image::RgbImage::from_fn(400, 300, |x, y| image::Rgb([x as u8, y as u8, 90]));
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::WebP).expect("encode webp");
    out.into_inner()
}

/// Stores a WebP thumb for the upload and records it, as an upload derived before AVIF looks.
async fn with_old_webp_thumb(app: &TestApp, event_id: Uuid, upload_id: Uuid) {
    let key = BlobKey::ThumbWebp { event_id, upload_id };
    app.state.blobs.put(key, webp_file().into()).await.expect("put the WebP");
    execute(app, "UPDATE uploads SET webp_thumb = TRUE WHERE id = $1", upload_id).await;
}

fn is_avif(bytes: &[u8]) -> bool {
    bytes.len() > 12 && &bytes[4..12] == b"ftypavif"
}

/// An AVIF's pixels, decoded by Debian's `heif-convert` (libheif-examples, which the HEIC tests
/// use too): what a browser shows, independently of the encoder.
fn avif_pixels(bytes: &[u8]) -> image::RgbImage {
    let dir = tempfile::tempdir().expect("tempdir");
    let (avif, png) = (dir.path().join("thumb.avif"), dir.path().join("thumb.png"));
    std::fs::write(&avif, bytes).expect("write");
    let status = Command::new("heif-convert")
        .arg(&avif)
        .arg(&png)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("heif-convert (apt-get install libheif-examples)");
    assert!(status.success(), "heif-convert failed");
    image::open(&png).expect("the decoded PNG").into_rgb8()
}

/// A photo of four flat, saturated quarters (red, green, blue, a skin tone), 1200×800.
fn quarters_jpeg() -> Vec<u8> {
    const COLOURS: [[u8; 3]; 4] = [[200, 30, 40], [40, 160, 60], [30, 60, 190], [225, 170, 140]];
    let img = image::RgbImage::from_fn(1200, 800, |x, y| image::Rgb(COLOURS[(x / 600 + 2 * (y / 400)) as usize]));
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Jpeg).expect("encode jpeg");
    out.into_inner()
}

/// The mean colour of the 20×20 pixels around (x, y).
fn mean_colour(image: &image::RgbImage, x: u32, y: u32) -> [f64; 3] {
    let mut sum = [0.0; 3];
    for dy in 0..20 {
        for dx in 0..20 {
            let p = image.get_pixel(x - 10 + dx, y - 10 + dy);
            for c in 0..3 {
                sum[c] += f64::from(p[c]) / 400.0;
            }
        }
    }
    sum
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

async fn thumbs_are_avif_for_browsers_and_jpeg_for_others(backend: Backend) {
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
        let (jpeg_tag, avif_tag) = (format!("\"{id}-{kind}\""), format!("\"{id}-{kind}-avif\""));

        let avif = get(&app, &path, token, &[("accept", BROWSER_ACCEPT)]).await;
        assert_eq!(avif.status, StatusCode::OK, "{kind}");
        assert_eq!(avif.header("content-type"), "image/avif", "{kind}");
        assert!(is_avif(&avif.body), "{kind}: ftyp avif");
        assert_eq!(avif.header("vary"), "Accept", "{kind}");
        assert_eq!(avif.header("etag"), avif_tag, "{kind}");
        assert_eq!(avif.header("content-length"), avif.body.len().to_string(), "{kind}");
        assert_eq!(avif.header("cache-control"), "private, max-age=31536000, immutable");
        assert_eq!(avif_pixels(&avif.body).dimensions(), (400, 267), "{kind}: the thumb's size");

        let jpeg = get_without_accept(&app, &path, token).await;
        assert_eq!(jpeg.status, StatusCode::OK, "{kind} without Accept");
        assert_eq!(jpeg.header("content-type"), "image/jpeg", "{kind} without Accept");
        assert_eq!(&jpeg.body[..2], &[0xFF, 0xD8], "{kind}: a JPEG");
        assert_eq!(jpeg.header("vary"), "Accept", "{kind}: the JPEG varies too");
        assert_eq!(jpeg.header("etag"), jpeg_tag, "{kind}");
        assert_eq!(
            avif_pixels(&avif.body).dimensions(),
            decoded_size(&jpeg.body, image::ImageFormat::Jpeg),
            "{kind}: the same pixels' size in both formats"
        );
        assert!(avif.body.len() < jpeg.body.len(), "{kind}: AVIF {} B, JPEG {} B", avif.body.len(), jpeg.body.len());

        // New uploads have no WebP: a browser that takes WebP but not AVIF gets the JPEG.
        assert!(!derivative_file(&app, event.id, &id, "thumb.webp").exists(), "no WebP thumb is made");
        let answer = get(&app, &path, token, &[("accept", WEBP_ONLY_ACCEPT)]).await;
        assert_eq!(answer.header("content-type"), "image/jpeg", "{kind} for a WebP-only browser");
        assert_eq!(answer.header("etag"), jpeg_tag);

        // Wildcards alone, and AVIF and WebP refused or less wanted than JPEG: JPEG.
        for accept in ["*/*", "image/*", "image/avif;q=0, image/webp;q=0, */*", "image/jpeg, image/avif;q=0.5"] {
            let answer = get(&app, &path, token, &[("accept", accept)]).await;
            assert_eq!(answer.header("content-type"), "image/jpeg", "{kind} for Accept {accept}");
            assert_eq!(answer.header("etag"), jpeg_tag, "{kind} for Accept {accept}");
        }

        // Each format revalidates under its own tag, and a tag of the other format does not match.
        let not_modified = get(&app, &path, token, &[("accept", BROWSER_ACCEPT), ("if-none-match", &avif_tag)]).await;
        assert_eq!(not_modified.status, StatusCode::NOT_MODIFIED, "{kind}: the AVIF's tag");
        assert_eq!(not_modified.header("etag"), avif_tag);
        assert_eq!(not_modified.header("vary"), "Accept", "{kind}: 304 varies too");
        assert!(not_modified.body.is_empty());
        let not_modified = get(&app, &path, token, &[("accept", "*/*"), ("if-none-match", &jpeg_tag)]).await;
        assert_eq!(not_modified.status, StatusCode::NOT_MODIFIED, "{kind}: the JPEG's tag");
        assert_eq!(not_modified.header("etag"), jpeg_tag);
        let other = get(&app, &path, token, &[("accept", "*/*"), ("if-none-match", &avif_tag)]).await;
        assert_eq!(other.status, StatusCode::OK, "{kind}: the AVIF's tag does not validate the JPEG");
        assert_eq!(other.header("content-type"), "image/jpeg");
        let other = get(&app, &path, token, &[("accept", BROWSER_ACCEPT), ("if-none-match", &jpeg_tag)]).await;
        assert_eq!(other.status, StatusCode::OK, "{kind}: the JPEG's tag does not validate the AVIF");
        assert_eq!(other.header("content-type"), "image/avif");
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

async fn an_upload_derived_before_avif_or_webp_gets_the_next_format(backend: Backend) {
    // Forms are removed from the store after they were served: without the instance's memory
    // of small derivatives, so each answer is the store's (tests/derivative_cache.rs has it).
    let app = TestApp::spawn_with(backend, Options { derivative_cache_bytes: 0, ..Options::default() }).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let upload = upload_ok(&app, &guest, &images::jpeg(800, 600)).await;
    let id = upload["id"].as_str().expect("id").to_owned();
    settled(&app, &guest.token, &id).await;
    let upload_id: Uuid = id.parse().expect("uuid");

    // As an upload derived before AVIF looks (WebP then): the WebP.
    execute(&app, "UPDATE uploads SET avif_thumb = FALSE WHERE id = $1", upload_id).await;
    std::fs::remove_file(derivative_file(&app, event.id, &id, "thumb.avif")).expect("remove the AVIF");
    with_old_webp_thumb(&app, event.id, upload_id).await;
    for accept in [BROWSER_ACCEPT, WEBP_ONLY_ACCEPT] {
        let answer = get(&app, &format!("/api/v1/uploads/{id}/thumb"), &guest.token, &[("accept", accept)]).await;
        assert_eq!(answer.status, StatusCode::OK);
        assert_eq!(answer.header("content-type"), "image/webp", "the next format the browser takes: {accept}");
        assert_eq!(answer.header("etag"), format!("\"{id}-thumb-webp\""));
        assert!(is_webp(&answer.body));
    }

    // As an upload derived before WebP looks: no WebP recorded, none stored, no placeholder.
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

    // A row that says AVIF or WebP exists while the store lost it: JPEG too, not a 404.
    for (column, accept) in [("avif_thumb", BROWSER_ACCEPT), ("webp_thumb", WEBP_ONLY_ACCEPT)] {
        let sql = match column {
            "avif_thumb" => "UPDATE uploads SET avif_thumb = TRUE WHERE id = $1",
            _ => "UPDATE uploads SET avif_thumb = FALSE, webp_thumb = TRUE WHERE id = $1",
        };
        execute(&app, sql, upload_id).await;
        let answer = get(&app, &format!("/api/v1/uploads/{id}/thumb"), &guest.token, &[("accept", accept)]).await;
        assert_eq!(answer.status, StatusCode::OK, "{column}");
        assert_eq!(answer.header("content-type"), "image/jpeg", "{column}");
    }
    app.stop().await;
}

async fn deleting_an_upload_removes_its_avif_and_webp_thumbs(backend: Backend) {
    // A WebP is planted: uploads derived before AVIF have one.
    let app = TestApp::spawn_with(backend, Options { undo_grace_s: 0, ..Options::default() }).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let organiser = app.organiser_login(&event).await;
    let upload = upload_ok(&app, &guest, &images::jpeg(640, 480)).await;
    let id = upload["id"].as_str().expect("id").to_owned();
    settled(&app, &guest.token, &id).await;
    with_old_webp_thumb(&app, event.id, id.parse().expect("uuid")).await;
    let names = ["thumb.jpg", "preview.jpg", "thumb.webp", "thumb.avif"];
    for name in names {
        assert!(derivative_file(&app, event.id, &id, name).is_file(), "{name} is stored");
    }

    let response = app.client.delete(app.url(&format!("/api/v1/uploads/{id}"))).bearer_auth(&organiser).send().await;
    assert_eq!(response.expect("DELETE").status(), StatusCode::NO_CONTENT);
    let left: Vec<_> = app.derivative_files().into_iter().filter(|p| p.to_string_lossy().contains(&id)).collect();
    assert!(left.is_empty(), "every derivative went, AVIF and WebP included: {left:?}");
    app.stop().await;
}

async fn deleting_an_event_removes_its_avif_and_webp_thumbs(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let upload = upload_ok(&app, &guest, &images::jpeg(640, 480)).await;
    let id = upload["id"].as_str().expect("id").to_owned();
    settled(&app, &guest.token, &id).await;
    with_old_webp_thumb(&app, event.id, id.parse().expect("uuid")).await;
    assert!(derivative_file(&app, event.id, &id, "thumb.webp").is_file());
    assert!(derivative_file(&app, event.id, &id, "thumb.avif").is_file());

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
    assert_eq!(app.derivative_files(), Vec::<PathBuf>::new(), "no derivative of the event is left, AVIF included");
    app.stop().await;
}

async fn the_avif_thumb_shows_the_jpeg_colours(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let upload = upload_ok(&app, &guest, &quarters_jpeg()).await;
    let id = upload["id"].as_str().expect("id").to_owned();
    assert_eq!(settled(&app, &guest.token, &id).await["status"], "ready");
    let path = format!("/api/v1/uploads/{id}/thumb");
    let avif = get(&app, &path, &guest.token, &[("accept", BROWSER_ACCEPT)]).await;
    assert!(is_avif(&avif.body), "an AVIF");
    let jpeg = get(&app, &path, &guest.token, &[("accept", "image/jpeg")]).await;
    let (avif, jpeg) = (avif_pixels(&avif.body), image::load_from_memory(&jpeg.body).expect("a JPEG").into_rgb8());
    assert_eq!(avif.dimensions(), (400, 267));
    // The middle of each quarter: a wrong matrix, range or transfer in the AVIF's `nclx` would
    // move saturated colours by tens of levels.
    for (x, y) in [(100, 66), (300, 66), (100, 200), (300, 200)] {
        let (a, j) = (mean_colour(&avif, x, y), mean_colour(&jpeg, x, y));
        for c in 0..3 {
            assert!((a[c] - j[c]).abs() <= 4.0, "at ({x}, {y}): AVIF {a:?}, JPEG {j:?}");
        }
    }
    app.stop().await;
}

every_store!(
    thumbs_are_avif_for_browsers_and_jpeg_for_others,
    deleting_an_upload_removes_its_avif_and_webp_thumbs,
    deleting_an_event_removes_its_avif_and_webp_thumbs,
);

both_backends!(
    the_placeholder_is_null_until_the_derivatives_exist,
    an_upload_derived_before_avif_or_webp_gets_the_next_format,
    the_avif_thumb_shows_the_jpeg_colours,
);
