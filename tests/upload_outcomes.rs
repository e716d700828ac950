//! Every row of API.md's upload outcome table, on SQLite and on PostgreSQL. Each refusal also
//! asserts that nothing was left behind: no row, no blob, no quota charge.

mod common;

use std::io::{Read, Write};

use common::{Backend, Options, TestApp, assert_problem, images, upload_form};
use futures_util::future::join_all;
use reqwest::StatusCode;
use reqwest::multipart::{Form, Part};
use serde_json::{Value, json};
use uuid::Uuid;

every_store!(
    sequential_retries_replay_the_first_answer,
    sixteen_concurrent_attempts_store_one_photo_and_charge_once,
    another_guests_key_is_a_conflict_that_reveals_nothing,
    a_replay_at_full_quota_is_still_a_replay,
    a_retry_after_delete_is_gone_for_good,
    a_key_in_the_header_is_answered_without_storing_the_bytes,
    a_known_header_key_with_expect_continue_is_answered_before_the_body,
    malformed_multipart_is_refused,
    an_upload_without_a_file_part_is_refused,
    a_key_that_is_not_a_uuid_is_refused,
    text_sent_as_image_jpeg_is_refused,
    a_truncated_jpeg_is_refused,
    a_file_over_the_size_limit_is_refused,
    a_png_declaring_ten_billion_pixels_is_refused_from_its_header,
    an_upload_over_the_quota_is_refused_with_what_is_left,
    a_guest_of_another_event_is_refused,
    an_upload_without_credentials_is_refused,
    closed_uploads_refuse_new_photos_but_replay_old_ones,
    different_keys_in_header_and_part_are_refused,
    the_same_key_with_another_file_name_or_caption_is_refused,
    uploads_without_a_key_are_never_deduplicated,
    a_replay_needs_no_file_part,
    exif_orientation_swaps_the_displayed_dimensions,
);

async fn json(response: reqwest::Response) -> Value {
    response.json().await.expect("json body")
}

async fn sequential_retries_replay_the_first_answer(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let photo = images::jpeg(64, 48);
    let key = Uuid::new_v4();

    let first = app.upload(&guest, &photo, Some(key)).await;
    assert_eq!(first.status(), StatusCode::CREATED);
    let location = first.headers()["location"].to_str().expect("location").to_owned();
    assert!(first.headers().get("idempotent-replayed").is_none());
    let first = json(first).await;
    assert_eq!(location, format!("/api/v1/uploads/{}", first["id"].as_str().expect("id")));
    assert_eq!(first["client_upload_id"], key.to_string());
    assert_eq!(first["bytes"], photo.len());
    assert_eq!(first["width"], 64);
    assert_eq!(first["content_type"], "image/jpeg");
    // Live state: the derivative worker may already have finished a photo this small.
    assert!(first["status"] == "processing" || first["status"] == "ready", "{first}");

    for _ in 0..2 {
        let again = app.upload(&guest, &photo, Some(key)).await;
        assert_eq!(again.status(), StatusCode::OK);
        assert_eq!(again.headers()["idempotent-replayed"], "true");
        let again = json(again).await;
        assert_eq!(again["id"], first["id"]);
        assert_eq!(again["sha256"], first["sha256"]);
    }

    assert_eq!(app.upload_rows().await, 1);
    assert_eq!(app.blob_files().len(), 1, "one stored original");
    assert_eq!(app.used_bytes(&guest).await, photo.len() as i64, "quota charged once");
    let (status, me) = app.get_json("/api/v1/me", &guest.token).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(me["upload_count"], 1);
    assert_eq!(me["used_bytes"], photo.len());
}

async fn sixteen_concurrent_attempts_store_one_photo_and_charge_once(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let photo = images::jpeg_of_about(600_000);
    let key = Uuid::new_v4();

    let attempts = (0..16).map(|_| app.upload(&guest, &photo, Some(key)));
    let responses = join_all(attempts).await;
    let mut created = 0;
    let mut ids = Vec::new();
    for response in responses {
        match response.status() {
            StatusCode::CREATED => created += 1,
            StatusCode::OK => assert_eq!(response.headers()["idempotent-replayed"], "true"),
            other => panic!("unexpected status {other}"),
        }
        ids.push(json(response).await["id"].clone());
    }
    assert_eq!(created, 1, "exactly one attempt stores the photo");
    assert!(ids.iter().all(|id| *id == ids[0]), "every answer names the same upload");
    assert_eq!(app.upload_rows().await, 1);
    assert_eq!(app.used_bytes(&guest).await, photo.len() as i64);
    assert_eq!(app.blob_files().len(), 1, "one original, no temporary leftovers");
}

async fn another_guests_key_is_a_conflict_that_reveals_nothing(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let anna = app.join(&event, "Anna").await;
    let ben = app.join(&event, "Ben").await;
    let key = Uuid::new_v4();
    let stored = json(
        app.upload_form(&anna, upload_form(&images::jpeg(32, 32), Some(key), "secret-name.jpg", None), None).await,
    )
    .await;

    let response = app.upload(&ben, &images::jpeg(40, 40), Some(key)).await;
    let problem = assert_problem(response, StatusCode::CONFLICT, "client_upload_id_conflict").await;
    let text = problem.to_string();
    assert!(!text.contains(stored["id"].as_str().expect("id")), "the other upload's id is not revealed");
    assert!(!text.contains("secret-name") && !text.contains("Anna"), "nothing about it is revealed");

    let preflight = app
        .client
        .get(app.url(&format!("/api/v1/events/{}/uploads/by-client-id/{key}", event.slug)))
        .bearer_auth(&ben.token)
        .send()
        .await
        .expect("preflight");
    assert_problem(preflight, StatusCode::NOT_FOUND, "not_found").await;
    assert_eq!(app.upload_rows().await, 1);
    assert_eq!(app.used_bytes(&ben).await, 0);
    assert_eq!(app.blob_files().len(), 1);
}

async fn a_replay_at_full_quota_is_still_a_replay(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let photo = images::jpeg(64, 64);
    let event = app.create_event_with_quota(photo.len() as i64).await;
    let guest = app.join(&event, "Anna").await;
    let key = Uuid::new_v4();

    assert_eq!(app.upload(&guest, &photo, Some(key)).await.status(), StatusCode::CREATED);
    assert_eq!(app.used_bytes(&guest).await, photo.len() as i64, "the quota is now full");
    let replay = app.upload(&guest, &photo, Some(key)).await;
    assert_eq!(replay.status(), StatusCode::OK, "a replay is never 413");
    let another = app.upload(&guest, &images::jpeg(8, 8), Some(Uuid::new_v4())).await;
    assert_problem(another, StatusCode::PAYLOAD_TOO_LARGE, "quota_exceeded").await;
    assert_eq!(app.upload_rows().await, 1);
    assert_eq!(app.used_bytes(&guest).await, photo.len() as i64);
}

async fn a_retry_after_delete_is_gone_for_good(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let photo = images::jpeg(32, 32);
    let key = Uuid::new_v4();
    let stored = json(app.upload(&guest, &photo, Some(key)).await).await;
    let id = stored["id"].as_str().expect("id");

    let delete = app
        .client
        .delete(app.url(&format!("/api/v1/uploads/{id}")))
        .bearer_auth(&guest.token)
        .send()
        .await
        .expect("delete");
    assert_eq!(delete.status(), StatusCode::NO_CONTENT);
    assert_eq!(app.used_bytes(&guest).await, 0, "the quota is refunded");
    assert!(app.blob_files().is_empty(), "the original is removed");

    let retry = app.upload(&guest, &photo, Some(key)).await;
    assert_problem(retry, StatusCode::GONE, "upload_deleted").await;
    let header_retry =
        app.upload_form(&guest, upload_form(&photo, None, "photo.jpg", None), Some(&key.to_string())).await;
    assert_problem(header_retry, StatusCode::GONE, "upload_deleted").await;
    let preflight = app
        .client
        .get(app.url(&format!("/api/v1/events/{}/uploads/by-client-id/{key}", event.slug)))
        .bearer_auth(&guest.token)
        .send()
        .await
        .expect("preflight");
    assert_problem(preflight, StatusCode::GONE, "upload_deleted").await;
    let again = app
        .client
        .delete(app.url(&format!("/api/v1/uploads/{id}")))
        .bearer_auth(&guest.token)
        .send()
        .await
        .expect("delete");
    assert_problem(again, StatusCode::NOT_FOUND, "not_found").await;

    assert_eq!(app.upload_rows().await, 1, "the row stays (soft delete) and nothing new is stored");
    assert_eq!(app.used_bytes(&guest).await, 0);
    assert!(app.blob_files().is_empty());
}

async fn a_key_in_the_header_is_answered_without_storing_the_bytes(backend: Backend) {
    let options = Options { max_upload_bytes: 256 * 1024, ..Options::default() };
    let app = TestApp::spawn_with(backend, options).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let photo = images::jpeg(64, 64);
    let key = Uuid::new_v4().to_string();

    let first = app.upload_form(&guest, upload_form(&photo, None, "photo.jpg", None), Some(&key)).await;
    assert_eq!(first.status(), StatusCode::CREATED);
    let first = json(first).await;
    assert_eq!(first["client_upload_id"], key);

    // The retry's body is larger than the upload limit and is no image at all: had the
    // server stored or probed it, the answer would be 413 or 415. It is a replay.
    let junk = vec![b'x'; 600 * 1024];
    let retry = app.upload_form(&guest, upload_form(&junk, None, "photo.jpg", None), Some(&key)).await;
    assert_eq!(retry.status(), StatusCode::OK);
    assert_eq!(retry.headers()["idempotent-replayed"], "true");
    let retry = json(retry).await;
    assert_eq!(retry["id"], first["id"]);
    assert_eq!(retry["sha256"], first["sha256"]);

    // The same holds for a key part sent before the file part.
    let part_retry =
        app.upload_form(&guest, upload_form(&junk, Some(key.parse().expect("uuid")), "photo.jpg", None), None).await;
    assert_eq!(part_retry.status(), StatusCode::OK);

    // A header that is not a UUID is someone else's key and is ignored.
    let foreign = app.upload_form(&guest, upload_form(&photo, None, "photo.jpg", None), Some("browser:abc")).await;
    assert_eq!(foreign.status(), StatusCode::CREATED);

    assert_eq!(app.upload_rows().await, 2);
    assert_eq!(app.blob_files().len(), 2);
    assert_eq!(app.used_bytes(&guest).await, 2 * photo.len() as i64);
}

/// With `Expect: 100-continue`, a known key is answered before the client sends its body.
async fn a_known_header_key_with_expect_continue_is_answered_before_the_body(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let key = Uuid::new_v4();
    assert_eq!(app.upload(&guest, &images::jpeg(16, 16), Some(key)).await.status(), StatusCode::CREATED);

    let addr = app.addr;
    let (token, slug) = (guest.token.clone(), guest.slug.clone());
    let head = tokio::task::spawn_blocking(move || {
        let mut stream = std::net::TcpStream::connect(addr).expect("connect");
        stream.set_read_timeout(Some(std::time::Duration::from_secs(10))).expect("timeout");
        write!(
            stream,
            "POST /api/v1/events/{slug}/uploads HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
             Idempotency-Key: {key}\r\nContent-Type: multipart/form-data; boundary=b\r\n\
             Content-Length: 5000000\r\nExpect: 100-continue\r\n\r\n"
        )
        .expect("write head");
        let mut answer = vec![0u8; 4096];
        let n = stream.read(&mut answer).expect("read answer");
        String::from_utf8_lossy(&answer[..n]).into_owned()
    })
    .await
    .expect("raw client");
    assert!(head.starts_with("HTTP/1.1 200"), "answered without the body: {head}");
    assert!(!head.contains("100 Continue"));
    assert!(head.to_ascii_lowercase().contains("idempotent-replayed: true"));
    assert_eq!(app.upload_rows().await, 1);
}

async fn malformed_multipart_is_refused(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let url = app.url(&format!("/api/v1/events/{}/uploads", guest.slug));

    let broken = app
        .client
        .post(&url)
        .bearer_auth(&guest.token)
        .header("content-type", "multipart/form-data; boundary=XYZ")
        .body("--XYZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.jpg\"\r\n\r\nnot closed")
        .send()
        .await
        .expect("send");
    assert_problem(broken, StatusCode::BAD_REQUEST, "invalid_multipart").await;
    let not_multipart =
        app.client.post(&url).bearer_auth(&guest.token).json(&json!({"file": "x"})).send().await.expect("send");
    assert_problem(not_multipart, StatusCode::BAD_REQUEST, "invalid_multipart").await;
    app.assert_nothing_stored(&guest).await;
}

async fn an_upload_without_a_file_part_is_refused(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let form = Form::new().text("client_upload_id", Uuid::new_v4().to_string()).text("caption", "hi");
    assert_problem(app.upload_form(&guest, form, None).await, StatusCode::BAD_REQUEST, "missing_file").await;
    app.assert_nothing_stored(&guest).await;
}

async fn a_key_that_is_not_a_uuid_is_refused(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let form = Form::new()
        .text("client_upload_id", "photo-1")
        .part("file", Part::bytes(images::jpeg(16, 16)).file_name("a.jpg"));
    assert_problem(app.upload_form(&guest, form, None).await, StatusCode::BAD_REQUEST, "invalid_client_upload_id")
        .await;
    app.assert_nothing_stored(&guest).await;
}

async fn text_sent_as_image_jpeg_is_refused(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let response = app.upload(&guest, b"<html>this is not a photo</html>", Some(Uuid::new_v4())).await;
    assert_problem(response, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type").await;
    app.assert_nothing_stored(&guest).await;
}

async fn a_truncated_jpeg_is_refused(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let photo = images::jpeg(200, 200);
    for cut in [photo.len() / 2, 100] {
        let response = app.upload(&guest, &photo[..cut], Some(Uuid::new_v4())).await;
        assert_problem(response, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type").await;
    }
    app.assert_nothing_stored(&guest).await;
}

async fn a_file_over_the_size_limit_is_refused(backend: Backend) {
    let options = Options { max_upload_bytes: 200 * 1024, ..Options::default() };
    let app = TestApp::spawn_with(backend, options).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let big = images::jpeg_of_about(400 * 1024);
    assert!(big.len() > 200 * 1024);
    let response = app.upload(&guest, &big, Some(Uuid::new_v4())).await;
    let problem = assert_problem(response, StatusCode::PAYLOAD_TOO_LARGE, "file_too_large").await;
    assert_eq!(problem["limit_bytes"], 200 * 1024);
    app.assert_nothing_stored(&guest).await;
}

async fn a_png_declaring_ten_billion_pixels_is_refused_from_its_header(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let bomb = images::png_bomb(100_000, 100_000);
    let response = app.upload_form(&guest, upload_form(&bomb, Some(Uuid::new_v4()), "bomb.png", None), None).await;
    let problem = assert_problem(response, StatusCode::PAYLOAD_TOO_LARGE, "image_too_large").await;
    assert_eq!(problem["pixels"], 10_000_000_000u64);
    app.assert_nothing_stored(&guest).await;
}

async fn an_upload_over_the_quota_is_refused_with_what_is_left(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let small = images::jpeg(16, 16);
    let event = app.create_event_with_quota(small.len() as i64 + 1000).await;
    let guest = app.join(&event, "Anna").await;
    let response = app.upload(&guest, &images::jpeg_of_about(50_000), Some(Uuid::new_v4())).await;
    let problem = assert_problem(response, StatusCode::PAYLOAD_TOO_LARGE, "quota_exceeded").await;
    assert_eq!(problem["remaining_bytes"], small.len() + 1000);
    app.assert_nothing_stored(&guest).await;
    // What fits still fits.
    assert_eq!(app.upload(&guest, &small, Some(Uuid::new_v4())).await.status(), StatusCode::CREATED);
}

async fn a_guest_of_another_event_is_refused(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let wedding = app.create_event().await;
    let party = app.create_event().await;
    let guest = app.join(&wedding, "Anna").await;
    let response = app
        .client
        .post(app.url(&format!("/api/v1/events/{}/uploads", party.slug)))
        .bearer_auth(&guest.token)
        .multipart(upload_form(&images::jpeg(16, 16), Some(Uuid::new_v4()), "a.jpg", None))
        .send()
        .await
        .expect("send");
    assert_problem(response, StatusCode::FORBIDDEN, "wrong_event").await;
    app.assert_nothing_stored(&guest).await;
}

async fn an_upload_without_credentials_is_refused(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let url = app.url(&format!("/api/v1/events/{}/uploads", event.slug));
    let form = || upload_form(&images::jpeg(16, 16), Some(Uuid::new_v4()), "a.jpg", None);
    let anonymous = app.client.post(&url).multipart(form()).send().await.expect("send");
    assert_problem(anonymous, StatusCode::UNAUTHORIZED, "unauthenticated").await;
    let forged = app.client.post(&url).bearer_auth("g_forged").multipart(form()).send().await.expect("send");
    assert_problem(forged, StatusCode::UNAUTHORIZED, "unauthenticated").await;
    app.assert_nothing_stored(&guest).await;
}

async fn closed_uploads_refuse_new_photos_but_replay_old_ones(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let photo = images::jpeg(16, 16);
    let key = Uuid::new_v4();
    assert_eq!(app.upload(&guest, &photo, Some(key)).await.status(), StatusCode::CREATED);

    let organiser = app.organiser_login(&event).await;
    let closed = app
        .client
        .patch(app.url(&format!("/api/v1/events/{}", event.slug)))
        .bearer_auth(&organiser)
        .json(&json!({"uploads_open": false}))
        .send()
        .await
        .expect("patch");
    assert_eq!(closed.status(), StatusCode::OK);
    assert_eq!(json(closed).await["uploads_open"], false);

    assert_eq!(app.upload(&guest, &photo, Some(key)).await.status(), StatusCode::OK, "a replay, not 403");
    let new = app.upload(&guest, &photo, Some(Uuid::new_v4())).await;
    assert_problem(new, StatusCode::FORBIDDEN, "uploads_closed").await;
    assert_eq!(app.upload_rows().await, 1);
    assert_eq!(app.blob_files().len(), 1);
    assert_eq!(app.used_bytes(&guest).await, photo.len() as i64);
}

async fn different_keys_in_header_and_part_are_refused(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let form = upload_form(&images::jpeg(16, 16), Some(Uuid::new_v4()), "a.jpg", None);
    let response = app.upload_form(&guest, form, Some(&Uuid::new_v4().to_string())).await;
    assert_problem(response, StatusCode::BAD_REQUEST, "idempotency_key_mismatch").await;
    app.assert_nothing_stored(&guest).await;
}

async fn the_same_key_with_another_file_name_or_caption_is_refused(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let photo = images::jpeg(16, 16);
    let key = Uuid::new_v4();
    let first = app.upload_form(&guest, upload_form(&photo, Some(key), "IMG_1.jpg", Some("Tanz")), None).await;
    assert_eq!(first.status(), StatusCode::CREATED);

    let renamed = app.upload_form(&guest, upload_form(&photo, Some(key), "IMG_2.jpg", Some("Tanz")), None).await;
    assert_problem(renamed, StatusCode::UNPROCESSABLE_ENTITY, "client_upload_id_reused").await;
    let recaptioned = app.upload_form(&guest, upload_form(&photo, Some(key), "IMG_1.jpg", Some("Torte")), None).await;
    assert_problem(recaptioned, StatusCode::UNPROCESSABLE_ENTITY, "client_upload_id_reused").await;
    // The same values in a new multipart body (new boundary) are the same request.
    let same = app.upload_form(&guest, upload_form(&photo, Some(key), "IMG_1.jpg", Some("Tanz")), None).await;
    assert_eq!(same.status(), StatusCode::OK);
    assert_eq!(app.upload_rows().await, 1);
    assert_eq!(app.used_bytes(&guest).await, photo.len() as i64);
}

async fn uploads_without_a_key_are_never_deduplicated(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let photo = images::jpeg(16, 16);
    let a = json(app.upload(&guest, &photo, None).await).await;
    let b = json(app.upload(&guest, &photo, None).await).await;
    assert_ne!(a["id"], b["id"]);
    assert_eq!(a["client_upload_id"], Value::Null);
    assert_eq!(app.upload_rows().await, 2);
    assert_eq!(app.used_bytes(&guest).await, 2 * photo.len() as i64);
}

async fn a_replay_needs_no_file_part(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let key = Uuid::new_v4();
    let first = json(app.upload(&guest, &images::jpeg(16, 16), Some(key)).await).await;
    let form = Form::new().text("client_upload_id", key.to_string());
    let replay = app.upload_form(&guest, form, None).await;
    assert_eq!(replay.status(), StatusCode::OK);
    assert_eq!(json(replay).await["id"], first["id"]);
}

async fn exif_orientation_swaps_the_displayed_dimensions(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let rotated = images::jpeg_with_orientation(120, 80, 6);
    let upload = json(app.upload(&guest, &rotated, Some(Uuid::new_v4())).await).await;
    assert_eq!((upload["width"].as_i64(), upload["height"].as_i64()), (Some(80), Some(120)), "{upload}");
}
