//! HEIC photos, as iPhones send them, made here by Debian's `heif-enc` (libheif-examples) from
//! JPEGs the tests write: accepted with their displayed size, derived like a JPEG (thumb and
//! preview upright, served as JPEG or WebP), and refused from their header when they are cut
//! short or declare a pixel bomb.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{Backend, TestApp, assert_problem, images, settled_within as settled, upload_ok};
use image::{Rgb, RgbImage};
use reqwest::StatusCode;
use serde_json::Value;
use uuid::Uuid;

/// What Chromium sends for an `<img>`.
const BROWSER_ACCEPT: &str = "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8";

/// `jpeg` turned into a HEIC by `heif-enc` (which copies the JPEG's EXIF, orientation included).
fn heif_enc(jpeg: &[u8]) -> Vec<u8> {
    let dir = tempfile::tempdir().expect("tempdir");
    let (input, output) = (dir.path().join("in.jpg"), dir.path().join("out.heic"));
    std::fs::write(&input, jpeg).expect("write the JPEG");
    let status = Command::new("heif-enc")
        .args(["-q", "80", "-o"])
        .arg(&output)
        .arg(&input)
        .status()
        .expect("heif-enc (apt-get install libheif-examples)");
    assert!(status.success(), "heif-enc failed");
    read(&output)
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).expect("read the HEIC")
}

/// A landscape JPEG, blue with a red top-left corner, whose EXIF says "turn 90° clockwise to
/// display" (orientation 6): shown upright, it is portrait with the red corner at top right.
fn red_cornered_jpeg_orientation_6(w: u32, h: u32) -> Vec<u8> {
    let img =
        RgbImage::from_fn(w, h, |x, y| if x < w / 4 && y < h / 4 { Rgb([230, 20, 20]) } else { Rgb([20, 40, 220]) });
    let mut plain = std::io::Cursor::new(Vec::new());
    img.write_to(&mut plain, image::ImageFormat::Jpeg).expect("encode");
    images::with_orientation(&plain.into_inner(), 6)
}

async fn fetch(app: &TestApp, url: &Value, token: &str, accept: &str) -> (String, Vec<u8>) {
    let url = url.as_str().expect("a URL");
    let response = app.client.get(app.url(url)).bearer_auth(token).header("accept", accept).send().await.expect("GET");
    assert_eq!(response.status(), StatusCode::OK, "{url}");
    let content_type = response.headers()["content-type"].to_str().expect("ascii").to_owned();
    (content_type, response.bytes().await.expect("body").to_vec())
}

fn is_red(p: &Rgb<u8>) -> bool {
    p[0] > 180 && p[1] < 90 && p[2] < 90
}

fn is_blue(p: &Rgb<u8>) -> bool {
    p[2] > 170 && p[0] < 90
}

async fn a_heic_reaches_ready_with_its_thumb_and_preview_as_jpeg_and_avif(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let heic = heif_enc(&images::jpeg(640, 480));
    assert_eq!(&heic[4..12], b"ftypheic", "heif-enc wrote a HEIC");

    let created = upload_ok(&app, &guest, &heic).await;
    assert_eq!(created["content_type"], "image/heic", "{created}");
    assert_eq!((created["width"].as_i64(), created["height"].as_i64()), (Some(640), Some(480)));
    let upload = settled(&app, &guest.token, created["id"].as_str().expect("id"), Duration::from_secs(60)).await;
    assert_eq!(upload["status"], "ready", "{upload}");
    assert!(upload["placeholder"].is_string(), "{upload}");

    for kind in ["thumb", "preview"] {
        let (jpeg_type, jpeg) = fetch(&app, &upload["urls"][kind], &guest.token, "image/jpeg").await;
        assert_eq!(jpeg_type, "image/jpeg", "{kind}");
        let decoded = image::load_from_memory_with_format(&jpeg, image::ImageFormat::Jpeg).expect("a JPEG");
        let expected = if kind == "thumb" { (400, 300) } else { (640, 480) };
        assert_eq!((decoded.width(), decoded.height()), expected, "{kind}");
    }
    let (avif_type, avif) = fetch(&app, &upload["urls"]["thumb"], &guest.token, BROWSER_ACCEPT).await;
    assert_eq!(avif_type, "image/avif");
    assert!(avif.len() > 12 && &avif[4..12] == b"ftypavif");

    // The original is kept as sent.
    let (original_type, original) = fetch(&app, &upload["urls"]["original"], &guest.token, "*/*").await;
    assert_eq!((original_type.as_str(), original), ("image/heic", heic));
}

async fn a_heic_with_exif_orientation_6_gets_an_upright_portrait_thumb(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let heic = heif_enc(&red_cornered_jpeg_orientation_6(800, 600));

    let created = upload_ok(&app, &guest, &heic).await;
    assert_eq!((created["width"].as_i64(), created["height"].as_i64()), (Some(600), Some(800)), "{created}");
    let upload = settled(&app, &guest.token, created["id"].as_str().expect("id"), Duration::from_secs(60)).await;
    assert_eq!(upload["status"], "ready", "{upload}");

    let (_, thumb) = fetch(&app, &upload["urls"]["thumb"], &guest.token, "image/jpeg").await;
    let thumb = image::load_from_memory_with_format(&thumb, image::ImageFormat::Jpeg).expect("a JPEG").into_rgb8();
    let (w, h) = thumb.dimensions();
    assert!(w < h, "portrait: {w}x{h}");
    assert_eq!((w, h), (300, 400));
    // Turned a quarter clockwise, the red top-left corner is now at the top right.
    assert!(is_red(thumb.get_pixel(w - 10, 10)), "top right {:?}", thumb.get_pixel(w - 10, 10));
    assert!(is_blue(thumb.get_pixel(10, 10)), "top left {:?}", thumb.get_pixel(10, 10));
    assert!(is_blue(thumb.get_pixel(w - 10, h - 10)), "bottom right {:?}", thumb.get_pixel(w - 10, h - 10));
}

async fn a_heic_cut_short_is_refused_and_nothing_is_kept(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Mallory").await;
    let heic = heif_enc(&images::jpeg(320, 240));

    for keep in [heic.len() / 2, heic.len() - 10, 200] {
        let response = app.upload(&guest, &heic[..keep], Some(Uuid::new_v4())).await;
        let problem = assert_problem(response, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type").await;
        let detail = problem["detail"].as_str().unwrap_or_default();
        assert!(detail.contains("cut short"), "{keep} bytes: {problem}");
    }
    app.assert_nothing_stored(&guest).await;
}

async fn a_heic_declaring_an_absurd_size_is_refused_as_too_large(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Mallory").await;
    let mut heic = heif_enc(&images::jpeg(320, 240));
    // The primary image's `ispe` (version and flags, then width and height) says 100000².
    let ispe = heic.windows(4).position(|w| w == b"ispe").expect("an ispe box") + 8;
    heic[ispe..ispe + 4].copy_from_slice(&100_000u32.to_be_bytes());
    heic[ispe + 4..ispe + 8].copy_from_slice(&100_000u32.to_be_bytes());

    let response = app.upload(&guest, &heic, Some(Uuid::new_v4())).await;
    let problem = assert_problem(response, StatusCode::PAYLOAD_TOO_LARGE, "image_too_large").await;
    assert_eq!(problem["pixels"], 10_000_000_000u64, "{problem}");
    app.assert_nothing_stored(&guest).await;
}

both_backends!(
    a_heic_reaches_ready_with_its_thumb_and_preview_as_jpeg_and_avif,
    a_heic_with_exif_orientation_6_gets_an_upright_portrait_thumb,
    a_heic_cut_short_is_refused_and_nothing_is_kept,
    a_heic_declaring_an_absurd_size_is_refused_as_too_large,
);
