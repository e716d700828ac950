//! Images that pass a header check but used to break or bloat the derivative worker: a header
//! longer than the probe's first window, a GIF frame larger than its screen, a 16-bit PNG of
//! 100 megapixels, a progressive JPEG whose coefficients alone exceed a job's memory budget.

mod common;

use std::time::{Duration, Instant};

use common::images;
use common::{Backend, TestApp, assert_problem, settled_within as settled, upload_ok};
use reqwest::StatusCode;
use serde_json::Value;
use uuid::Uuid;

async fn jpeg_at(app: &TestApp, url: &Value, token: &str) -> image::RgbImage {
    let url = url.as_str().expect("a URL");
    let response = app.client.get(app.url(url)).bearer_auth(token).send().await.expect("GET");
    assert_eq!(response.status(), StatusCode::OK, "{url}");
    let bytes = response.bytes().await.expect("body");
    image::load_from_memory_with_format(&bytes, image::ImageFormat::Jpeg).expect("a JPEG").into_rgb8()
}

/// This process's peak resident memory since `reset_peak_memory`, in MiB.
fn peak_memory_mib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).expect("VmHWM");
    line.split_whitespace().nth(1).and_then(|kb| kb.parse::<u64>().ok()).expect("kB") / 1024
}

fn reset_peak_memory() {
    // Writing 5 to clear_refs resets the peak (Linux 4.0 and later).
    std::fs::write("/proc/self/clear_refs", "5").expect("clear_refs");
}

async fn a_jpeg_with_more_than_64_kib_of_app_segments_gets_its_derivatives(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let original = images::jpeg_with_big_app_segments(1200, 800);
    assert!(
        original.len() > 200_000 && original[..65_536].windows(2).all(|m| m != [0xFF, 0xC0]),
        "the frame header lies past 64 KiB"
    );

    let created = upload_ok(&app, &guest, &original).await;
    assert_eq!((created["width"].as_i64(), created["height"].as_i64()), (Some(800), Some(1200)), "EXIF read at upload");
    let upload = settled(&app, &guest.token, created["id"].as_str().expect("id"), Duration::from_secs(30)).await;
    assert_eq!(upload["status"], "ready", "{upload}");
    let preview = jpeg_at(&app, &upload["urls"]["preview"], &guest.token).await;
    let thumb = jpeg_at(&app, &upload["urls"]["thumb"], &guest.token).await;
    assert_eq!(preview.dimensions(), (800, 1200), "turned upright as its EXIF says");
    assert_eq!(thumb.dimensions(), (267, 400));
}

async fn a_gif_whose_frame_outgrows_its_screen_is_refused_as_too_large(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Mallory").await;
    let bomb = images::gif_bomb();
    assert_eq!(bomb.len(), 35);

    let response = app.upload(&guest, &bomb, Some(Uuid::new_v4())).await;
    let problem = assert_problem(response, StatusCode::PAYLOAD_TOO_LARGE, "image_too_large").await;
    assert!(problem["detail"].as_str().is_some_and(|d| d.contains("400000000")), "{problem}");
    app.assert_nothing_stored(&guest).await;
}

/// 10000² at 4:2:0 is 2.3 million blocks of 64 coefficients, 300 MB before any pixel: more than
/// a decode in the server's process was allowed, well inside a media worker's limit for 100 MP
/// (1.85 GiB, enforced by the kernel). It is made, and the server's own memory never sees it.
async fn a_progressive_jpeg_of_100_megapixels_is_made_inside_its_workers_limit(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let original = images::progressive_jpeg_declaring(10_000, 10_000);

    let created = upload_ok(&app, &guest, &original).await;
    let upload = settled(&app, &guest.token, created["id"].as_str().expect("id"), Duration::from_secs(60)).await;
    assert_eq!(upload["status"], "ready", "{upload}");
    assert!(upload["urls"]["preview"].is_string(), "{upload}");
    assert!(!app.derivative_files().is_empty());
}

both_backends!(
    a_jpeg_with_more_than_64_kib_of_app_segments_gets_its_derivatives,
    a_gif_whose_frame_outgrows_its_screen_is_refused_as_too_large,
    a_progressive_jpeg_of_100_megapixels_is_made_inside_its_workers_limit,
);

/// The database plays no part in decoding: one backend is enough. Memory is this whole test
/// process's, which runs the server; the other tests here hold a few MiB at most.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_16_bit_png_of_100_megapixels_is_derived_row_by_row_while_the_server_answers() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let original = images::png16_rgba(10_000, 10_000);
    assert!(original.len() < 2_000_000, "{} bytes", original.len());

    reset_peak_memory();
    let created = upload_ok(&app, &guest, &original).await;
    let id = created["id"].as_str().expect("id").to_owned();
    let (mut slowest, started) = (Duration::ZERO, Instant::now());
    let upload = loop {
        let asked = Instant::now();
        let (status, body) = app.get_json(&format!("/api/v1/uploads/{id}"), &guest.token).await;
        slowest = slowest.max(asked.elapsed());
        assert_eq!(status, StatusCode::OK);
        if body["status"] != "processing" {
            break body;
        }
        assert!(started.elapsed() < Duration::from_secs(120), "still processing");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let peak = peak_memory_mib();
    assert_eq!(upload["status"], "ready", "{upload}");
    assert!(slowest < Duration::from_secs(2), "a request took {slowest:?} meanwhile");
    assert!(peak < 600, "peak resident memory {peak} MiB");

    let preview = jpeg_at(&app, &upload["urls"]["preview"], &guest.token).await;
    assert_eq!(preview.dimensions(), (2048, 2048));
    // Half-transparent orange on white.
    let p = preview.get_pixel(1024, 1024);
    assert!(p[0] > 245 && (180..=200).contains(&p[1]) && p[2] > 120 && p[2] < 135, "{p:?}");
}
