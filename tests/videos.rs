//! Videos on every backend: MP4 (moov first or last), MOV and WebM accepted with their kind,
//! duration and displayed size read from the container's header; a poster (thumb, preview,
//! placeholder) made by `ffmpeg`, upright for a rotated video, and none (still ready, still
//! playable) on a server without `ffmpeg`; a file that starts like an MP4 and is not one refused before its bytes are stored;
//! the original served in ranges as its video type; the video limits (size, duration) refused
//! with the contract's codes. The clips are made by `ffmpeg` in each test.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;
use common::generated::ffmpeg;
use common::{Backend, Options, TestApp, assert_problem, images, settled, upload_form};
use reqwest::StatusCode;
use reqwest::multipart::{Form, Part};
use serde_json::Value;
use uuid::Uuid;

/// A 320×240 H.264 clip with sound, `seconds` long, at 1 Mbit/s (so it is larger than the
/// 64 KiB the ingest keeps of a file's head); its movie header at the end, as phones write it,
/// unless `faststart`.
fn mp4(dir: &Path, seconds: u32, faststart: bool) -> Vec<u8> {
    let t = seconds.to_string();
    let mut args = vec![
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=320x240:rate=30",
        "-f",
        "lavfi",
        "-i",
        "sine=frequency=440",
        "-t",
        &t,
        "-c:v",
        "libx264",
        "-b:v",
        "1M",
        "-pix_fmt",
        "yuv420p",
        "-c:a",
        "aac",
    ];
    if faststart {
        args.extend(["-movflags", "+faststart"]);
    }
    ffmpeg(dir, if faststart { "fast.mp4" } else { "clip.mp4" }, &args)
}

fn webm(dir: &Path) -> Vec<u8> {
    ffmpeg(
        dir,
        "clip.webm",
        &[
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=320x240:rate=30",
            "-t",
            "2",
            "-c:v",
            "libvpx-vp9",
            "-b:v",
            "500k",
            "-deadline",
            "realtime",
            "-cpu-used",
            "8",
        ],
    )
}

/// The 2 s clip, its display matrix turned 90°: a phone held upright.
fn rotated_mp4(dir: &Path) -> Vec<u8> {
    mp4(dir, 2, false);
    let source = dir.join("clip.mp4");
    let source = source.to_str().expect("path");
    ffmpeg(dir, "rotated.mp4", &["-i", source, "-c", "copy", "-metadata:s:v:0", "rotate=90"])
}

fn video_form(bytes: &[u8], filename: &str, mime: &str) -> Form {
    let part = Part::bytes(bytes.to_vec()).file_name(filename.to_owned()).mime_str(mime).expect("mime");
    Form::new().text("client_upload_id", Uuid::new_v4().to_string()).part("file", part)
}

async fn upload_video(app: &TestApp, guest: &common::Guest, bytes: &[u8], filename: &str, mime: &str) -> Value {
    let response = app.upload_form(guest, video_form(bytes, filename, mime), None).await;
    let status = response.status();
    let body: Value = response.json().await.expect("json");
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body
}

fn seconds(upload: &Value) -> f64 {
    upload["duration_s"].as_f64().unwrap_or_else(|| panic!("a duration: {upload}"))
}

async fn mp4_mov_and_webm_are_accepted_with_their_kind_duration_and_size(backend: Backend) {
    let dir = tempfile::tempdir().expect("dir");
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Ada").await;

    let clip = mp4(dir.path(), 2, false);
    let upload = upload_video(&app, &guest, &clip, "IMG_0001.mp4", "video/mp4").await;
    assert_eq!(upload["kind"], "video", "{upload}");
    assert_eq!(upload["content_type"], "video/mp4");
    assert!((seconds(&upload) - 2.0).abs() < 0.15, "{upload}");
    assert_eq!((upload["width"].as_i64(), upload["height"].as_i64()), (Some(320), Some(240)));
    assert_eq!(upload["bytes"].as_u64(), Some(clip.len() as u64));

    let fast = mp4(dir.path(), 3, true);
    let upload = upload_video(&app, &guest, &fast, "fast.mp4", "video/mp4").await;
    assert!((seconds(&upload) - 3.0).abs() < 0.15, "{upload}");

    let clip = webm(dir.path());
    let upload = upload_video(&app, &guest, &clip, "clip.webm", "video/webm").await;
    assert_eq!((upload["kind"].as_str(), upload["content_type"].as_str()), (Some("video"), Some("video/webm")));
    assert!((seconds(&upload) - 2.0).abs() < 0.15, "{upload}");
    assert_eq!((upload["width"].as_i64(), upload["height"].as_i64()), (Some(320), Some(240)));

    let webm_id = upload["id"].as_str().expect("id").to_owned();

    let mov =
        ffmpeg(dir.path(), "clip.mov", &["-i", dir.path().join("clip.mp4").to_str().expect("path"), "-c", "copy"]);
    let upload = upload_video(&app, &guest, &mov, "IMG_0002.MOV", "video/quicktime").await;
    assert_eq!(upload["content_type"], "video/quicktime", "{upload}");
    // Each container's poster is made by its own demuxer.
    for id in [webm_id.as_str(), upload["id"].as_str().expect("id")] {
        let settled = settled(&app, &guest.token, id).await;
        assert_eq!((settled["status"].as_str(), settled["poster"].as_bool()), (Some("ready"), Some(true)), "{settled}");
    }

    // The organiser's archive holds the videos under safe names with their format's extension.
    let organiser = app.organiser_login(&event).await;
    let response = app
        .client
        .get(app.url(&format!("/api/v1/events/{}/export.zip", event.slug)))
        .bearer_auth(&organiser)
        .send()
        .await
        .expect("GET export.zip");
    assert_eq!(response.status(), StatusCode::OK);
    let entries = common::reading::unzip(response.bytes().await.expect("zip").to_vec()).await;
    let mut names: Vec<&str> = entries.keys().map(String::as_str).collect();
    names.sort();
    assert_eq!(names, ["Ada - IMG_0001.mp4", "Ada - IMG_0002.mov", "Ada - clip.webm", "Ada - fast.mp4"]);
    assert_eq!(entries["Ada - clip.webm"], clip, "the original bytes");

    // A photo is still a photo, with no duration.
    let photo = common::upload_ok(&app, &guest, &images::jpeg(64, 48)).await;
    assert_eq!((photo["kind"].as_str(), photo["duration_s"].is_null()), (Some("photo"), true), "{photo}");
    assert!(photo["poster"].is_null(), "{photo}");
    assert_eq!(app.upload_rows().await, 5);
}

async fn a_video_is_ready_and_served_in_ranges_as_its_type(backend: Backend) {
    let dir = tempfile::tempdir().expect("dir");
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Ada").await;
    let clip = mp4(dir.path(), 2, false);
    let upload = upload_video(&app, &guest, &clip, "clip.mp4", "video/mp4").await;
    let id = upload["id"].as_str().expect("id");
    let settled = settled(&app, &guest.token, id).await;
    assert_eq!(settled["status"], "ready", "{settled}");
    assert_eq!(settled["poster"], true, "{settled}");
    assert!(settled["placeholder"].is_string(), "{settled}");
    let (w, h) = poster_size(&app, &guest.token, &settled, "thumb").await;
    assert_eq!((w, h), (320, 240), "a small video's thumb keeps its size");
    let (w, h) = poster_size(&app, &guest.token, &settled, "preview").await;
    assert_eq!((w, h), (320, 240));
    let copies = common::all_files(&app.data_dir.path().join("poster-tmp"));
    assert_eq!(copies, Vec::<PathBuf>::new(), "no temporary copy is left behind");

    let original = app.url(&format!("/api/v1/uploads/{id}/original"));
    let response = app
        .client
        .get(&original)
        .bearer_auth(&guest.token)
        .header("range", "bytes=1000-1999")
        .send()
        .await
        .expect("GET");
    assert_eq!(response.status(), StatusCode::PARTIAL_CONTENT);
    let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    assert_eq!(header("content-type"), "video/mp4");
    assert_eq!(header("content-range"), format!("bytes 1000-1999/{}", clip.len()));
    assert_eq!(header("accept-ranges"), "bytes");
    assert_eq!(response.bytes().await.expect("body").as_ref(), &clip[1000..2000]);
    // The end of the file, as a player asks for a moov at the end.
    let response =
        app.client.get(&original).bearer_auth(&guest.token).header("range", "bytes=-100").send().await.expect("GET");
    assert_eq!(response.status(), StatusCode::PARTIAL_CONTENT);
    assert_eq!(response.bytes().await.expect("body").as_ref(), &clip[clip.len() - 100..]);
}

async fn a_rotated_video_is_shown_upright(backend: Backend) {
    let dir = tempfile::tempdir().expect("dir");
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Ada").await;
    let clip = rotated_mp4(dir.path());
    let upload = upload_video(&app, &guest, &clip, "portrait.mp4", "video/mp4").await;
    // Displayed size: turned.
    assert_eq!((upload["width"].as_i64(), upload["height"].as_i64()), (Some(240), Some(320)), "{upload}");
    let settled = settled(&app, &guest.token, upload["id"].as_str().expect("id")).await;
    assert_eq!(settled["poster"], true, "{settled}");
    // The poster is upright: portrait, as the phone was held.
    assert_eq!(poster_size(&app, &guest.token, &settled, "thumb").await, (240, 320));
    assert_eq!(poster_size(&app, &guest.token, &settled, "preview").await, (240, 320));
}

/// The size of an Upload's thumb or preview, as served (JPEG: asked with `Accept: image/jpeg`).
async fn poster_size(app: &TestApp, token: &str, upload: &Value, which: &str) -> (u32, u32) {
    let url = upload["urls"][which].as_str().unwrap_or_else(|| panic!("a {which} url: {upload}"));
    let response =
        app.client.get(app.url(url)).bearer_auth(token).header("accept", "image/jpeg").send().await.expect("GET");
    assert_eq!(response.status(), StatusCode::OK, "{which}");
    assert_eq!(response.headers()["content-type"], "image/jpeg");
    let bytes = response.bytes().await.expect("body");
    let image = image::load_from_memory(&bytes).expect("a JPEG");
    (image.width(), image.height())
}

async fn without_ffmpeg_a_video_is_ready_and_plays_without_a_poster(backend: Backend) {
    let dir = tempfile::tempdir().expect("dir");
    let clip = mp4(dir.path(), 2, false);
    let options = Options { ffmpeg: PathBuf::from("/nonexistent/ffmpeg"), ..Options::default() };
    let app = TestApp::spawn_with(backend, options).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Ada").await;
    let upload = upload_video(&app, &guest, &clip, "clip.mp4", "video/mp4").await;
    assert_eq!(upload["poster"], false, "not yet: {upload}");
    let id = upload["id"].as_str().expect("id");
    let settled = settled(&app, &guest.token, id).await;
    assert_eq!((settled["status"].as_str(), settled["poster"].as_bool()), (Some("ready"), Some(false)), "{settled}");
    assert!(settled["urls"]["thumb"].is_null() && settled["urls"]["preview"].is_null(), "{settled}");
    assert!(settled["placeholder"].is_null(), "{settled}");
    let (status, _) = app.get_json(&format!("/api/v1/uploads/{id}/thumb"), &guest.token).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let response =
        app.client.get(app.url(&format!("/api/v1/uploads/{id}/original"))).bearer_auth(&guest.token).send().await;
    let response = response.expect("GET");
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.bytes().await.expect("body").len(), clip.len(), "the video plays from its original");
    assert_eq!(app.derivative_files(), Vec::<PathBuf>::new(), "no poster files");
}

/// The bytes of a multipart body whose file part starts with `prefix`, in pieces: the part
/// header with the prefix and `first` filler bytes, then `rest` filler bytes, then the end.
fn body_pieces(prefix: &[u8], first: usize, rest: usize) -> (Vec<u8>, Vec<Vec<u8>>) {
    let boundary = "confetti-video-test";
    let filler = |n: usize| (0..n).map(|i| (i as u8).wrapping_mul(31) | 0x80).collect::<Vec<u8>>();
    let head = [
        format!("--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"clip.mp4\"\r\nContent-Type: video/mp4\r\n\r\n")
            .as_bytes(),
        prefix,
        &filler(first),
    ]
    .concat();
    let mut tail: Vec<Vec<u8>> = filler(rest).chunks(256 * 1024).map(<[u8]>::to_vec).collect();
    tail.push(format!("\r\n--{boundary}--\r\n").into_bytes());
    (head, tail)
}

/// Sends a body in two stages: the head, then (after a look at the blob directory) the rest.
/// Returns the answer and the files under the blob directory while the body was still arriving.
async fn send_in_two_stages(app: &TestApp, guest: &common::Guest, prefix: &[u8]) -> (reqwest::Response, Vec<PathBuf>) {
    let (head, tail) = body_pieces(prefix, 2 * 1024 * 1024, 24 * 1024 * 1024);
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(2);
    let stream = futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|piece| (piece, rx)) });
    let request = app
        .client
        .post(app.url(&format!("/api/v1/events/{}/uploads", guest.slug)))
        .bearer_auth(&guest.token)
        .header("content-type", "multipart/form-data; boundary=confetti-video-test")
        .body(reqwest::Body::wrap_stream(stream))
        .send();
    let sent = tokio::spawn(request);
    tx.send(Ok(Bytes::from(head))).await.expect("send");
    // Whatever the server stores of the head is there by now.
    tokio::time::sleep(Duration::from_millis(700)).await;
    let in_flight = app.blob_files();
    for piece in tail {
        if tx.send(Ok(Bytes::from(piece))).await.is_err() {
            break;
        }
    }
    drop(tx);
    let response = tokio::time::timeout(Duration::from_secs(30), sent).await.expect("answered").expect("task");
    (response.expect("the answer"), in_flight)
}

async fn a_file_that_starts_like_an_mp4_but_is_not_one_is_refused_before_it_is_stored(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Mallory").await;
    // A real file type box, then garbage.
    let ftyp = [&[0, 0, 0, 0x18][..], b"ftypmp42", &[0, 0, 0, 0], b"isommp42"].concat();
    let (response, in_flight) = send_in_two_stages(&app, &guest, &ftyp).await;
    assert_eq!(in_flight, Vec::<PathBuf>::new(), "nothing of the file was being stored while it arrived");
    let problem = assert_problem(response, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type").await;
    assert!(problem["detail"].as_str().unwrap_or_default().contains("MP4"), "{problem}");
    app.assert_nothing_stored(&guest).await;

    // The control: bytes that start like a JPEG are being stored at that moment, so the look
    // above could have seen them.
    let (response, in_flight) = send_in_two_stages(&app, &guest, &[0xFF, 0xD8, 0xFF, 0xE0, 0, 16]).await;
    assert_eq!(in_flight.len(), 1, "the photo's temporary blob while it arrives");
    assert_problem(response, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type").await;
    app.assert_nothing_stored(&guest).await;
}

/// Where a file's `mdat` box starts: what comes before it is the header of a fast-start MP4.
fn mdat_offset(file: &[u8]) -> usize {
    let mut at = 0;
    while &file[at + 4..at + 8] != b"mdat" {
        at += u32::from_be_bytes([file[at], file[at + 1], file[at + 2], file[at + 3]]) as usize;
    }
    at
}

async fn a_fast_start_video_over_the_duration_limit_is_refused_before_its_data_is_stored(backend: Backend) {
    let dir = tempfile::tempdir().expect("dir");
    let clip = mp4(dir.path(), 3, true);
    let app = TestApp::spawn_with(backend, Options { max_video_seconds: 1, ..Options::default() }).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Ada").await;
    // Its header (type, movie header), then megabytes of media data.
    let header = &clip[..mdat_offset(&clip) + 8];
    let (response, in_flight) = send_in_two_stages(&app, &guest, header).await;
    assert_eq!(in_flight, Vec::<PathBuf>::new(), "nothing was being stored once the header had passed");
    let problem = assert_problem(response, StatusCode::PAYLOAD_TOO_LARGE, "video_too_long").await;
    assert_eq!((problem["duration_s"].as_u64(), problem["limit_seconds"].as_u64()), (Some(3), Some(1)), "{problem}");
    app.assert_nothing_stored(&guest).await;
}

async fn videos_are_held_to_their_own_limits(backend: Backend) {
    let dir = tempfile::tempdir().expect("dir");
    let clip = mp4(dir.path(), 2, false);
    let options = Options { max_video_seconds: 1, max_video_bytes: 10 * 1024 * 1024, ..Options::default() };
    let app = TestApp::spawn_with(backend, options).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Ada").await;

    let response = app.upload_form(&guest, video_form(&clip, "long.mp4", "video/mp4"), None).await;
    let problem = assert_problem(response, StatusCode::PAYLOAD_TOO_LARGE, "video_too_long").await;
    assert_eq!((problem["duration_s"].as_u64(), problem["limit_seconds"].as_u64()), (Some(2), Some(1)), "{problem}");
    app.assert_nothing_stored(&guest).await;

    // The size limit of videos, apart from the photos' one.
    let options = Options { max_video_bytes: 100_000, max_upload_bytes: 1_000_000, ..Options::default() };
    let app = app.restart_with(options).await;
    let response = app.upload_form(&guest, video_form(&clip, "big.mp4", "video/mp4"), None).await;
    let problem = assert_problem(response, StatusCode::PAYLOAD_TOO_LARGE, "file_too_large").await;
    assert_eq!(problem["limit_bytes"].as_u64(), Some(100_000), "{problem}");
    app.assert_nothing_stored(&guest).await;
    let photo = images::jpeg_of_about(300_000);
    assert_eq!(app.upload(&guest, &photo, None).await.status(), StatusCode::CREATED, "photos keep theirs");

    let (_, info) = app.get_json("/api/v1/info", "").await;
    assert_eq!(info["limits"]["max_video_bytes"].as_u64(), Some(100_000), "{info}");
    assert_eq!(info["limits"]["max_video_seconds"].as_u64(), Some(600), "{info}");
}

async fn an_mp4_without_a_video_track_or_in_another_codec_is_refused_by_name(backend: Backend) {
    let dir = tempfile::tempdir().expect("dir");
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Ada").await;

    let sound = ffmpeg(dir.path(), "sound.mp4", &["-f", "lavfi", "-i", "sine", "-t", "1", "-c:a", "aac"]);
    let response = app.upload_form(&guest, upload_form(&sound, None, "sound.mp4", None), None).await;
    let problem = assert_problem(response, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type").await;
    assert!(problem["detail"].as_str().unwrap_or_default().contains("no video track"), "{problem}");

    let old =
        ffmpeg(dir.path(), "old.mp4", &["-f", "lavfi", "-i", "testsrc2=size=160x120", "-t", "1", "-c:v", "mpeg4"]);
    let response = app.upload_form(&guest, upload_form(&old, None, "old.mp4", None), None).await;
    let problem = assert_problem(response, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type").await;
    assert!(problem["detail"].as_str().unwrap_or_default().contains("mp4v"), "{problem}");

    // Cut short: the movie header (at the end) is missing.
    let clip = mp4(dir.path(), 2, false);
    let response = app.upload_form(&guest, upload_form(&clip[..clip.len() / 2], None, "cut.mp4", None), None).await;
    let problem = assert_problem(response, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type").await;
    assert!(problem["detail"].as_str().unwrap_or_default().contains("cut short"), "{problem}");
    app.assert_nothing_stored(&guest).await;
}

/// `bytes` with its track header's display size set to 320×240, whatever its stream holds.
fn labelled_320x240(mut bytes: Vec<u8>) -> Vec<u8> {
    let at = bytes.windows(4).position(|w| w == b"tkhd").expect("a tkhd box") - 4;
    let end = at + u32::from_be_bytes(bytes[at..at + 4].try_into().expect("size")) as usize;
    bytes[end - 8..end].copy_from_slice(&[0x01, 0x40, 0, 0, 0, 0xF0, 0, 0]);
    bytes
}

/// The decoder allocates what the stream's SPS says: a 2560×1920 stream (H.264 and HEVC) whose
/// track header says 320×240 is refused at upload, naming both sizes; over the pixel limit, by
/// the stream's pixels. The same file with its honest label is taken.
async fn a_video_whose_track_header_understates_its_stream_is_refused(backend: Backend) {
    let dir = tempfile::tempdir().expect("dir");
    let options = Options { max_image_pixels: 6_000_000, ..Options::default() };
    let app = TestApp::spawn_with(backend, options).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Mallory").await;
    for (codec, name) in [("libx264", "avc.mp4"), ("libx265", "hevc.mp4")] {
        let honest = ffmpeg(
            dir.path(),
            name,
            &[
                "-f",
                "lavfi",
                "-i",
                "testsrc2=size=2560x1920",
                "-frames:v",
                "1",
                "-pix_fmt",
                "yuv420p",
                "-c:v",
                codec,
                // One large frame: x265's default preset took 5.4 s of CPU for it.
                "-preset",
                "ultrafast",
                "-tag:v",
                if codec == "libx264" { "avc1" } else { "hvc1" },
            ],
        );
        let liar = labelled_320x240(honest.clone());
        let rows = app.upload_rows().await;
        let response = app.upload_form(&guest, video_form(&liar, name, "video/mp4"), None).await;
        let problem = assert_problem(response, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type").await;
        let detail = problem["detail"].as_str().unwrap_or_default();
        assert!(detail.contains("2560×1920") && detail.contains("320×240"), "{codec}: {problem}");
        assert_eq!(app.upload_rows().await, rows, "nothing stored");
        let upload = upload_video(&app, &guest, &honest, name, "video/mp4").await;
        assert_eq!((upload["width"].as_i64(), upload["height"].as_i64()), (Some(2560), Some(1920)), "{upload}");
    }
    // Over the pixel limit by its stream, not by its label.
    let big = ffmpeg(
        dir.path(),
        "big.mp4",
        &[
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=2800x2400",
            "-frames:v",
            "1",
            "-pix_fmt",
            "yuv420p",
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
        ],
    );
    let mut big = labelled_320x240(big);
    let at = big.windows(4).position(|w| w == b"tkhd").expect("tkhd") - 4;
    let end = at + u32::from_be_bytes(big[at..at + 4].try_into().expect("size")) as usize;
    big[end - 8..end].copy_from_slice(&[0x09, 0x60, 0, 0, 0x07, 0xD0, 0, 0]);
    let response = app.upload_form(&guest, video_form(&big, "big.mp4", "video/mp4"), None).await;
    let problem = assert_problem(response, StatusCode::PAYLOAD_TOO_LARGE, "image_too_large").await;
    assert_eq!(problem["pixels"].as_u64(), Some(2800 * 2400), "{problem}");
}

// On S3 the movie header at the end is read back with a range request, and `ffmpeg` reads a
// temporary copy of the original.
every_store!(a_video_is_ready_and_served_in_ranges_as_its_type, a_rotated_video_is_shown_upright);

both_backends!(
    mp4_mov_and_webm_are_accepted_with_their_kind_duration_and_size,
    without_ffmpeg_a_video_is_ready_and_plays_without_a_poster,
    a_file_that_starts_like_an_mp4_but_is_not_one_is_refused_before_it_is_stored,
    videos_are_held_to_their_own_limits,
    a_fast_start_video_over_the_duration_limit_is_refused_before_its_data_is_stored,
    an_mp4_without_a_video_track_or_in_another_codec_is_refused_by_name,
    a_video_whose_track_header_understates_its_stream_is_refused,
);
