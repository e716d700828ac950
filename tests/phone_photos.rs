//! What phones really send reaches `ready` inside the media workers' limits: an iPhone's 48 MP
//! HEIC (8064×6048), a 16000×3000 HEIC panorama, a 200 MP JPEG from a phone's high-resolution
//! mode (16320×12240), and a 4K 60 fps HEVC video. The files are made once with ffmpeg and
//! heif-enc and kept in the build's temporary directory.

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::generated::{heic, made, run};
use common::{Backend, TestApp, settled_within, upload_form};

/// The files, made once for both backends' runs.
fn files() -> Vec<(&'static str, PathBuf)> {
    static FILES: std::sync::OnceLock<Vec<(&'static str, PathBuf)>> = std::sync::OnceLock::new();
    FILES.get_or_init(make_files).clone()
}

fn make_files() -> Vec<(&'static str, PathBuf)> {
    let jpeg = made("200mp.jpg", |out| {
        let args = ["-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=16320x12240", "-frames:v", "1"];
        run("ffmpeg", &[&args[..], &["-q:v", "4", "-f", "mjpeg", out.to_str().expect("path")]].concat());
    });
    let video = made("4k60-hevc.mp4", |out| {
        let args = ["-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=3840x2160:rate=60", "-t", "1"];
        let codec = ["-c:v", "libx265", "-preset", "ultrafast", "-x265-params", "log-level=error", "-tag:v", "hvc1"];
        run(
            "ffmpeg",
            &[&args[..], &codec[..], &["-pix_fmt", "yuv420p", "-f", "mp4", out.to_str().expect("path")]].concat(),
        );
    });
    vec![
        ("an iPhone's 48 MP HEIC", heic("48mp.heic", "8064x6048")),
        ("a 16000×3000 HEIC panorama", heic("panorama.heic", "16000x3000")),
        ("a 200 MP JPEG", jpeg),
        ("a 4K 60 fps HEVC video", video),
    ]
}

async fn every_real_phone_file_reaches_ready(backend: Backend) {
    let files = tokio::task::spawn_blocking(files).await.expect("files");
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Ada").await;
    let token = app.organiser_login(&event).await;
    let mut uploads = Vec::new();
    for (what, path) in &files {
        let bytes = std::fs::read(path).expect("read");
        let name = path.file_name().and_then(|n| n.to_str()).expect("name");
        let response = app.upload_form(&guest, upload_form(&bytes, Some(uuid::Uuid::new_v4()), name, None), None).await;
        assert_eq!(
            response.status(),
            reqwest::StatusCode::CREATED,
            "{what}: {}",
            response.text().await.unwrap_or_default()
        );
        let body: serde_json::Value = response.json().await.expect("json");
        uploads.push((what, body["id"].as_str().expect("id").to_owned(), Instant::now()));
    }
    for (what, id, sent) in uploads {
        let upload = settled_within(&app, &token, &id, Duration::from_secs(240)).await;
        assert_eq!(upload["status"], "ready", "{what}: {upload}");
        assert!(upload["urls"]["thumb"].is_string(), "{what} has a thumb: {upload}");
        println!("{what}: ready {:.1} s after it was stored", sent.elapsed().as_secs_f64());
    }
}

both_backends!(every_real_phone_file_reaches_ready);
