//! Time and memory, as a guest's file can take them from others: a progressive JPEG that
//! repeats its scans is refused after 64 of them instead of holding a worker for minutes, one
//! guest's slow files do not hold another guest's photo back (the queue serves guests in turn),
//! and a HEIC whose label understates its stream is refused by the stream's own size.

mod common;

use std::time::{Duration, Instant};

use common::{Backend, Options, TestApp, assert_problem, settled_within, shown_within, upload_ok};
use reqwest::StatusCode;

/// A real progressive JPEG whose last scan is repeated `repeats` more times: valid to a
/// decoder, which does a full pass over the coefficients for each.
fn scan_bomb(repeats: usize) -> Vec<u8> {
    let pixels: Vec<u8> = (0..256 * 256 * 3).map(|i| (i % 251) as u8).collect();
    let mut bytes = Vec::new();
    let mut encoder = jpeg_encoder::Encoder::new(&mut bytes, 80);
    encoder.set_progressive(true);
    encoder.encode(&pixels, 256, 256, jpeg_encoder::ColorType::Rgb).expect("encode");
    let last_scan = bytes.windows(2).rposition(|m| m == [0xFF, 0xDA]).expect("a scan");
    let end = bytes.len() - 2;
    let scan = bytes[last_scan..end].to_vec();
    let mut bomb = bytes[..end].to_vec();
    for _ in 0..repeats {
        bomb.extend_from_slice(&scan);
    }
    bomb.extend_from_slice(&[0xFF, 0xD9]);
    bomb
}

/// A PNG a worker takes seconds over (10000×8000, row by row).
fn slow_png(seed: u8) -> Vec<u8> {
    let (w, h) = (10_000u32, 8_000u32);
    let mut bytes = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut bytes, w, h);
        encoder.set_color(png::ColorType::Rgb);
        let mut writer = encoder.write_header().expect("png header");
        let mut stream = writer.stream_writer().expect("png stream");
        let row: Vec<u8> = (0..w * 3).map(|i| (i % 7) as u8 ^ seed).collect();
        for _ in 0..h {
            std::io::Write::write_all(&mut stream, &row).expect("png row");
        }
        stream.finish().expect("png end");
    }
    bytes
}

async fn a_jpeg_that_repeats_its_scans_is_refused_at_the_scan_limit(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Mallory").await;
    let token = app.organiser_login(&event).await;
    let fine = upload_ok(&app, &guest, &scan_bomb(40)).await;
    let bomb = upload_ok(&app, &guest, &scan_bomb(200)).await;
    let started = Instant::now();
    let bomb = settled_within(&app, &token, bomb["id"].as_str().expect("id"), Duration::from_secs(60)).await;
    assert_eq!(bomb["status"], "failed", "{bomb}");
    assert!(bomb["failure"].as_str().is_some_and(|f| f.contains("more than 64 scans")), "{bomb}");
    println!("a 200-scan bomb failed {:.2} s after it was stored", started.elapsed().as_secs_f64());
    let fine = settled_within(&app, &token, fine["id"].as_str().expect("id"), Duration::from_secs(60)).await;
    assert_eq!(fine["status"], "ready", "a progressive JPEG of 40 and some scans is fine: {fine}");
}

/// One worker; a guest sends three photos that take it seconds each, then another guest sends
/// one small photo: it is shown right after the first slow one, not after all three (its
/// preview follows once every waiting thumb is made: thumbs first).
async fn one_guests_slow_photos_do_not_hold_another_guests_photo_back(backend: Backend) {
    let app = TestApp::spawn_with(backend, Options { derivative_workers: Some(1), ..Options::default() }).await;
    let event = app.create_event().await;
    let slow = app.join(&event, "Slow").await;
    let quick = app.join(&event, "Quick").await;
    let token = app.organiser_login(&event).await;
    let mut slow_ids = Vec::new();
    for seed in 0..3 {
        slow_ids.push(upload_ok(&app, &slow, &slow_png(seed)).await["id"].as_str().expect("id").to_owned());
    }
    let sent = Instant::now();
    let small = upload_ok(&app, &quick, &common::images::jpeg(640, 480)).await;
    let small = shown_within(&app, &token, small["id"].as_str().expect("id"), Duration::from_secs(120)).await;
    let waited = sent.elapsed();
    assert_eq!(small["status"], "ready");
    let mut still_processing = 0;
    for id in &slow_ids {
        let (_, body) = app.get_json(&format!("/api/v1/uploads/{id}"), &token).await;
        still_processing += usize::from(body["status"] == "processing");
    }
    println!("the other guest's photo was ready {:.2} s after it was sent", waited.as_secs_f64());
    assert!(
        still_processing >= 2,
        "the small photo went before the slow guest's second and third ({still_processing} left)"
    );
    for id in &slow_ids {
        let done = settled_within(&app, &token, id, Duration::from_secs(180)).await;
        assert_eq!(done["status"], "ready", "{done}");
    }
}

/// A HEIC whose `ispe` says 320×240 over an 8192×8192 HEVC stream: the decoder would allocate
/// what the stream's SPS says, so the upload is refused on it before any decoder sees the file
/// (the server's memory used to grow by what the stream asks for), and nothing is stored.
async fn a_heic_that_understates_its_size_is_refused_by_its_stream_size(backend: Backend) {
    let honest = common::generated::heic("8192x8192.heic", "8192x8192");
    let liar = common::generated::made("liar.heic", |out| {
        let mut bytes = std::fs::read(&honest).expect("heic");
        let ispe = bytes.windows(4).position(|w| w == b"ispe").expect("an ispe box");
        bytes[ispe + 8..ispe + 16].copy_from_slice(&[0, 0, 1, 64, 0, 0, 0, 240]);
        std::fs::write(out, bytes).expect("write");
    });
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Mallory").await;
    let response = app.upload(&guest, &std::fs::read(liar).expect("read"), None).await;
    let problem = assert_problem(response, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type").await;
    let detail = problem["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("8192×8192") && detail.contains("320×240"), "{problem}");
    app.assert_nothing_stored(&guest).await;
    // The honest file is taken.
    let upload = upload_ok(&app, &guest, &std::fs::read(honest).expect("read")).await;
    assert_eq!((upload["width"].as_i64(), upload["height"].as_i64()), (Some(8192), Some(8192)), "{upload}");
}

both_backends!(
    a_heic_that_understates_its_size_is_refused_by_its_stream_size,
    a_jpeg_that_repeats_its_scans_is_refused_at_the_scan_limit,
    one_guests_slow_photos_do_not_hold_another_guests_photo_back,
);
