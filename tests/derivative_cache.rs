//! Serving derivatives fast: immutable answers a browser keeps and revalidates by `ETag`, small
//! ones kept in the instance's memory, and never served from memory to a viewer who may no
//! longer see the upload.

mod common;

use common::{Backend, Options, TestApp, images, settled, upload_ok};
use confetti::blobs::BlobKey;
use reqwest::{StatusCode, header};
use serde_json::json;
use uuid::Uuid;

async fn get(app: &TestApp, path: &str, token: &str) -> (StatusCode, header::HeaderMap, Vec<u8>) {
    let response = app.client.get(app.url(path)).bearer_auth(token).send().await.expect("GET");
    let (status, headers) = (response.status(), response.headers().clone());
    (status, headers, response.bytes().await.expect("body").to_vec())
}

/// Removes every derivative of an upload from the photo store, as if it were lost.
async fn remove_derivatives(app: &TestApp, event_id: Uuid, upload_id: &str) {
    let upload_id = Uuid::try_parse(upload_id).expect("upload id");
    for key in BlobKey::derivatives_for(event_id, upload_id) {
        let _ = app.state.blobs.delete(key).await;
    }
}

async fn derivatives_are_immutable_and_revalidated_by_their_etag(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let anna = app.join(&event, "Anna").await;
    let upload = upload_ok(&app, &anna, &images::jpeg(640, 480)).await;
    let id = upload["id"].as_str().expect("id");
    settled(&app, &anna.token, id).await;

    for (which, etag) in [("thumb", format!("\"{id}-thumb\"")), ("preview", format!("\"{id}-preview\""))] {
        let path = format!("/api/v1/uploads/{id}/{which}");
        // Twice: from the store, then (the thumb) from memory; both answers alike.
        for round in 0..2 {
            let (status, headers, body) = get(&app, &path, &anna.token).await;
            assert_eq!(status, StatusCode::OK, "{which}, round {round}");
            assert_eq!(headers[header::CACHE_CONTROL], "private, max-age=31536000, immutable");
            assert_eq!(headers[header::ETAG], etag.as_str());
            assert_eq!(headers[header::CONTENT_TYPE], "image/jpeg");
            assert_eq!(headers[header::CONTENT_LENGTH], body.len().to_string().as_str());
            assert!(body.starts_with(&[0xff, 0xd8]), "{which} is a JPEG");
        }
        let response = app
            .client
            .get(app.url(&path))
            .bearer_auth(&anna.token)
            .header(header::IF_NONE_MATCH, etag.as_str())
            .send()
            .await
            .expect("GET");
        assert_eq!(response.status(), StatusCode::NOT_MODIFIED, "{which}");
        assert_eq!(response.headers()[header::ETAG], etag.as_str());
        assert_eq!(response.headers()[header::CACHE_CONTROL], "private, max-age=31536000, immutable");
        assert!(response.bytes().await.expect("body").is_empty());
    }
}

async fn a_thumb_in_memory_is_served_only_while_its_upload_is_visible(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let anna = app.join(&event, "Anna").await;
    let ben = app.join(&event, "Ben").await;
    let organiser = app.organiser_login(&event).await;
    let hidden = upload_ok(&app, &anna, &images::jpeg(64, 48)).await;
    let deleted = upload_ok(&app, &anna, &images::jpeg(48, 64)).await;
    let (hidden, deleted) = (hidden["id"].as_str().expect("id"), deleted["id"].as_str().expect("id"));
    settled(&app, &anna.token, hidden).await;
    settled(&app, &anna.token, deleted).await;

    let thumb = |id: &str| format!("/api/v1/uploads/{id}/thumb");
    let (status, _, first) = get(&app, &thumb(hidden), &ben.token).await;
    assert_eq!(status, StatusCode::OK);
    remove_derivatives(&app, event.id, hidden).await;
    let (status, _, again) = get(&app, &thumb(hidden), &ben.token).await;
    assert_eq!(status, StatusCode::OK, "answered from memory while Ben may see it");
    assert_eq!(again, first);

    let response = app
        .client
        .patch(app.url(&format!("/api/v1/uploads/{hidden}")))
        .bearer_auth(&organiser)
        .json(&json!({"hidden": true}))
        .send()
        .await
        .expect("PATCH");
    assert_eq!(response.status(), StatusCode::OK);
    let (status, _, _) = get(&app, &thumb(hidden), &ben.token).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "hidden from Ben, memory or not");

    let (status, _, _) = get(&app, &thumb(deleted), &anna.token).await;
    assert_eq!(status, StatusCode::OK);
    remove_derivatives(&app, event.id, deleted).await;
    let response = app
        .client
        .delete(app.url(&format!("/api/v1/uploads/{deleted}")))
        .bearer_auth(&anna.token)
        .send()
        .await
        .expect("DELETE");
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    for token in [&anna.token, &organiser, &ben.token] {
        let (status, _, _) = get(&app, &thumb(deleted), token).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "deleted is deleted, memory or not");
    }
}

async fn the_memory_holds_no_more_bytes_than_its_bound(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let anna = app.join(&event, "Anna").await;
    let mut ids = Vec::new();
    for (w, h) in [(64, 48), (96, 64), (120, 90)] {
        let upload = upload_ok(&app, &anna, &images::jpeg(w, h)).await;
        let id = upload["id"].as_str().expect("id").to_owned();
        settled(&app, &anna.token, &id).await;
        ids.push(id);
    }
    let thumb = |id: &str| format!("/api/v1/uploads/{id}/thumb");
    let mut sizes = Vec::new();
    for id in &ids {
        let (status, _, body) = get(&app, &thumb(id), &anna.token).await;
        assert_eq!(status, StatusCode::OK);
        sizes.push(body.len() as u64);
    }

    // One byte less than the three thumbs: the one read first goes when the third comes.
    let bound = sizes.iter().sum::<u64>() - 1;
    let app = app.restart_with(Options { derivative_cache_bytes: bound, ..Options::default() }).await;
    for id in &ids {
        let (status, _, _) = get(&app, &thumb(id), &anna.token).await;
        assert_eq!(status, StatusCode::OK);
        assert!(app.state.derivative_cache.held_bytes() <= bound);
    }
    assert_eq!(app.state.derivative_cache.held_bytes(), sizes[1] + sizes[2]);
    for id in &ids {
        remove_derivatives(&app, event.id, id).await;
    }
    let (status, _, _) = get(&app, &thumb(&ids[0]), &anna.token).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "the thumb used longest ago was forgotten");
    for id in &ids[1..] {
        let (status, _, _) = get(&app, &thumb(id), &anna.token).await;
        assert_eq!(status, StatusCode::OK, "the two used last are in memory");
    }
}

every_store!(
    derivatives_are_immutable_and_revalidated_by_their_etag,
    a_thumb_in_memory_is_served_only_while_its_upload_is_visible,
    the_memory_holds_no_more_bytes_than_its_bound
);
