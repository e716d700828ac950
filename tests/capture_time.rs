//! Capture time on both databases: each Upload's `captured_at` from its EXIF (with the offset
//! the camera wrote, or read as UTC without one), from an MP4's movie header, else its upload
//! time, never in the future; the gallery listed by it (`order=taken`) a page at a time, ties
//! and photos added between pages included, and cursors that page only the order they were
//! given out for.

mod common;

use std::path::Path;

use common::generated::ffmpeg;
use common::images::{self, DATE_TIME_ORIGINAL, OFFSET_TIME, OFFSET_TIME_ORIGINAL};
use common::{Backend, Guest, TestApp, upload_form};
use reqwest::StatusCode;
use serde_json::Value;
use uuid::Uuid;

/// A JPEG taken at `taken` ("YYYY:MM:DD HH:MM:SS") by the camera's clock, with these offset tags.
fn photo_taken(taken: &str, offsets: &[(u16, &str)]) -> Vec<u8> {
    let mut fields = vec![(DATE_TIME_ORIGINAL, taken)];
    fields.extend_from_slice(offsets);
    images::jpeg_with_exif_text(64, 48, &fields)
}

async fn stored(app: &TestApp, guest: &Guest, bytes: &[u8]) -> Value {
    let response = app.upload(guest, bytes, Some(Uuid::new_v4())).await;
    assert_eq!(response.status(), StatusCode::CREATED);
    response.json().await.expect("json")
}

fn capture(upload: &Value) -> (Value, Value, Value) {
    (upload["taken_at"].clone(), upload["captured_at"].clone(), upload["captured_from"].clone())
}

async fn a_photo_is_dated_by_its_exif_at_its_offset_else_by_its_upload(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;

    // 14:03 on a camera two hours east of UTC is 12:03 UTC.
    let key = Uuid::new_v4();
    let east = photo_taken("2026:06:12 14:03:22", &[(OFFSET_TIME_ORIGINAL, "+02:00")]);
    let created: Value = app.upload(&guest, &east, Some(key)).await.json().await.expect("json");
    let want = ("2026-06-12T12:03:22.000Z".into(), "2026-06-12T12:03:22.000Z".into(), "exif".into());
    assert_eq!(capture(&created), want);
    let replay: Value = app.upload(&guest, &east, Some(key)).await.json().await.expect("json");
    assert_eq!(capture(&replay), want, "a replay shows the same capture time");

    // Only the file's offset (OffsetTime): it stands for the original's.
    let west = stored(&app, &guest, &photo_taken("2026:06:12 14:03:22", &[(OFFSET_TIME, "-05:00")])).await;
    assert_eq!(capture(&west).1, "2026-06-12T19:03:22.000Z");
    // Both: OffsetTimeOriginal wins.
    let both = photo_taken("2026:06:12 14:03:22", &[(OFFSET_TIME, "-05:00"), (OFFSET_TIME_ORIGINAL, "+09:30")]);
    assert_eq!(capture(&stored(&app, &guest, &both).await).1, "2026-06-12T04:33:22.000Z");

    // No offset at all: read as UTC, as docs/api.md says.
    let naive = stored(&app, &guest, &photo_taken("2026:06:12 14:03:22", &[])).await;
    assert_eq!(capture(&naive), ("2026-06-12T14:03:22.000Z".into(), "2026-06-12T14:03:22.000Z".into(), "exif".into()));

    // No EXIF: the upload time.
    let plain = stored(&app, &guest, &images::jpeg(64, 48)).await;
    assert_eq!(capture(&plain), (Value::Null, plain["created_at"].clone(), "upload".into()));

    // A camera whose clock says 2099: never dated in the future, the upload time instead.
    let future = stored(&app, &guest, &photo_taken("2099:01:01 00:00:00", &[(OFFSET_TIME_ORIGINAL, "+00:00")])).await;
    assert_eq!(capture(&future), (Value::Null, future["created_at"].clone(), "upload".into()));
    // So is one only a minute ahead of the server.
    let ahead = (chrono::Utc::now() + chrono::Duration::minutes(1)).format("%Y:%m:%d %H:%M:%S").to_string();
    let ahead = stored(&app, &guest, &photo_taken(&ahead, &[(OFFSET_TIME_ORIGINAL, "+00:00")])).await;
    assert_eq!(capture(&ahead), (Value::Null, ahead["created_at"].clone(), "upload".into()));

    // A damaged date is no date.
    let damaged = stored(&app, &guest, &photo_taken("2026:13:45 99:03:22", &[])).await;
    assert_eq!(capture(&damaged).2, "upload");

    // What the listing and a read show is what the upload answered.
    let (status, read) =
        app.get_json(&format!("/api/v1/uploads/{}", west["id"].as_str().expect("id")), &guest.token).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(capture(&read), capture(&west));
}

/// A one-second 160×120 H.264 MP4, with these extra arguments (metadata) before its name.
fn clip(dir: &Path, name: &str, extra: &[&str]) -> Vec<u8> {
    let mut args =
        vec!["-f", "lavfi", "-i", "testsrc2=size=160x120:rate=10", "-t", "1", "-c:v", "libx264", "-pix_fmt", "yuv420p"];
    args.extend_from_slice(extra);
    ffmpeg(dir, name, &args)
}

async fn a_video_is_dated_by_its_movie_header(backend: Backend) {
    let dir = tempfile::tempdir().expect("dir");
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let send = |bytes: Vec<u8>, name: &'static str| {
        let (app, guest) = (&app, &guest);
        async move {
            let response = app.upload_form(guest, upload_form(&bytes, Some(Uuid::new_v4()), name, None), None).await;
            assert_eq!(response.status(), StatusCode::CREATED);
            response.json::<Value>().await.expect("json")
        }
    };

    let dated = clip(dir.path(), "dated.mp4", &["-metadata", "creation_time=2025-08-30T18:45:10Z"]);
    let dated = send(dated, "dated.mp4").await;
    assert_eq!(dated["kind"], "video");
    assert_eq!(capture(&dated), ("2025-08-30T18:45:10.000Z".into(), "2025-08-30T18:45:10.000Z".into(), "video".into()));

    // A MOV says it the same way.
    let mov = clip(dir.path(), "dated.mov", &["-metadata", "creation_time=2025-08-30T18:45:10Z"]);
    assert_eq!(capture(&send(mov, "dated.mov").await).2, "video");

    // ffmpeg writes 0 when it is not told: no capture time.
    let undated = send(clip(dir.path(), "undated.mp4", &[]), "undated.mp4").await;
    assert_eq!(capture(&undated), (Value::Null, undated["created_at"].clone(), "upload".into()));

    // A recording dated after its upload: the upload time.
    let future = clip(dir.path(), "future.mp4", &["-metadata", "creation_time=2099-01-01T00:00:00Z"]);
    let future = send(future, "future.mp4").await;
    assert_eq!(capture(&future), (Value::Null, future["created_at"].clone(), "upload".into()));
}

fn ids(page: &Value) -> Vec<String> {
    page["items"].as_array().expect("items").iter().map(|u| u["id"].as_str().expect("id").to_owned()).collect()
}

async fn the_gallery_lists_by_capture_time_a_page_at_a_time(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let list = |query: String| {
        let (app, token, slug) = (&app, guest.token.clone(), event.slug.clone());
        async move { app.get_json(&format!("/api/v1/events/{slug}/uploads?{query}"), &token).await }
    };
    let send = |taken: Option<&'static str>| {
        let (app, guest) = (&app, &guest);
        async move {
            let bytes = match taken {
                Some(taken) => photo_taken(taken, &[(OFFSET_TIME_ORIGINAL, "+00:00")]),
                None => images::jpeg(64, 48),
            };
            stored(app, guest, &bytes).await["id"].as_str().expect("id").to_owned()
        }
    };
    // Uploaded in this order: the evening's photos out of order, one without EXIF (so its upload
    // time, the latest of all), and two taken in the same second.
    let t3 = send(Some("2025:08:30 21:00:00")).await;
    let t1a = send(Some("2025:08:30 18:00:00")).await;
    let none = send(None).await;
    let t5 = send(Some("2025:08:30 23:00:00")).await;
    let t1b = send(Some("2025:08:30 18:00:00")).await;
    let t2 = send(Some("2025:08:30 19:00:00")).await;

    // By capture time, latest first; the tie newest upload first.
    let (status, page1) = list("order=taken&limit=2".into()).await;
    assert_eq!(status, StatusCode::OK, "{page1}");
    assert_eq!(ids(&page1), [none.clone(), t5.clone()]);
    let cursor = page1["next_cursor"].as_str().expect("a next page").to_owned();
    // Added between pages: one taken between t3 and t5 belongs on the next page; one without EXIF
    // (uploaded now) sorts before the cursor and is not repeated or shifted into it.
    let t4 = send(Some("2025:08:30 22:00:00")).await;
    let late = send(None).await;
    let (_, page2) = list(format!("order=taken&limit=2&cursor={cursor}")).await;
    assert_eq!(ids(&page2), [t4.clone(), t3.clone()]);
    let (_, page3) =
        list(format!("order=taken&limit=2&cursor={}", page2["next_cursor"].as_str().expect("cursor"))).await;
    assert_eq!(ids(&page3), [t2.clone(), t1b.clone()]);
    let (_, page4) =
        list(format!("order=taken&limit=2&cursor={}", page3["next_cursor"].as_str().expect("cursor"))).await;
    assert_eq!(ids(&page4), std::slice::from_ref(&t1a));
    assert_eq!(page4["next_cursor"], Value::Null);

    // One at a time through the tie: every photo once, in order.
    let mut seen = Vec::new();
    let mut cursor = String::new();
    loop {
        let (status, page) = list(format!("order=taken&limit=1&cursor={cursor}")).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        seen.extend(ids(&page));
        match page["next_cursor"].as_str() {
            Some(next) => cursor = next.to_owned(),
            None => break,
        }
    }
    assert_eq!(seen, [&late, &none, &t5, &t4, &t3, &t2, &t1b, &t1a].map(String::clone));

    // Upload order stays the default, and is there by name.
    let uploaded = [&late, &t4, &t2, &t1b, &t5, &none, &t1a, &t3].map(String::clone);
    let (_, default) = list("limit=100".into()).await;
    assert_eq!(ids(&default), uploaded);
    let (_, by_upload) = list("order=uploaded&limit=3".into()).await;
    assert_eq!(ids(&by_upload), uploaded[..3]);
    let upload_cursor = by_upload["next_cursor"].as_str().expect("cursor").to_owned();
    let (_, next) = list(format!("limit=3&cursor={upload_cursor}")).await;
    assert_eq!(ids(&next), uploaded[3..6], "an upload-order cursor pages without `order` too");

    // A cursor pages only the order it was given out for.
    let (_, taken_page) = list("order=taken&limit=3".into()).await;
    let taken_cursor = taken_page["next_cursor"].as_str().expect("cursor").to_owned();
    for query in [
        format!("order=uploaded&cursor={taken_cursor}"),
        format!("cursor={taken_cursor}"),
        format!("order=taken&cursor={upload_cursor}"),
        "order=taken&cursor=garbage".to_owned(),
    ] {
        let (status, body) = list(query.clone()).await;
        assert_eq!(
            (status, body["code"].as_str()),
            (StatusCode::BAD_REQUEST, Some("invalid_cursor")),
            "{query}: {body}"
        );
    }
    let (status, body) = list("order=shot".into()).await;
    assert_eq!((status, body["code"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_request")), "{body}");
    let (status, empty) = list("order=&limit=2".into()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(ids(&empty), uploaded[..2], "an empty order is the default");
}

async fn a_cursor_of_another_event_is_refused_in_capture_order(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (one, two) = (app.create_event().await, app.create_event().await);
    let (anna, ben) = (app.join(&one, "Anna").await, app.join(&two, "Ben").await);
    for _ in 0..2 {
        stored(&app, &anna, &images::jpeg(8, 8)).await;
    }
    let (_, page) =
        app.get_json(&format!("/api/v1/events/{}/uploads?order=taken&limit=1", one.slug), &anna.token).await;
    let cursor = page["next_cursor"].as_str().expect("cursor");
    let (status, body) =
        app.get_json(&format!("/api/v1/events/{}/uploads?order=taken&cursor={cursor}", two.slug), &ben.token).await;
    assert_eq!((status, body["code"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_cursor")));
}

both_backends!(
    a_photo_is_dated_by_its_exif_at_its_offset_else_by_its_upload,
    a_video_is_dated_by_its_movie_header,
    the_gallery_lists_by_capture_time_a_page_at_a_time,
    a_cursor_of_another_event_is_refused_in_capture_order,
);
