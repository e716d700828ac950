//! Thumbs first: a photo is shown (`ready`, announced on the live stream, listed with its thumb)
//! as soon as its small thumb exists, and every waiting photo's thumb is made before any photo's
//! preview and AVIF, which follow. Until its preview exists, a shown photo's preview URL answers
//! with its thumb (307).

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::failing_store::FailingStore;
use common::{Backend, Options, TestApp, images, settled, upload_ok};
use confetti::blobs::BlobStore;
use confetti::db::Db;
use reqwest::StatusCode;
use serde_json::Value;

/// The uploads' processing states in one consistent read: (still processing, shown by their thumb
/// with the preview pending, complete).
async fn snapshot(db: &Db) -> (i64, i64, i64) {
    let sql = "SELECT CAST(COALESCE(SUM(CASE WHEN status = 'processing' THEN 1 ELSE 0 END), 0) AS BIGINT),
                      CAST(COALESCE(SUM(CASE WHEN status = 'ready' AND preview_pending THEN 1 ELSE 0 END), 0) AS BIGINT),
                      CAST(COALESCE(SUM(CASE WHEN status = 'ready' AND NOT preview_pending THEN 1 ELSE 0 END), 0) AS BIGINT)
               FROM uploads";
    match db {
        Db::Sqlite(p) => sqlx::query_as(sql).fetch_one(p).await,
        Db::Postgres(p) => sqlx::query_as(sql).fetch_one(p).await,
    }
    .expect(sql)
}

/// Server-sent events as they come, kept across reads (one chunk may hold several).
struct Events {
    stream: reqwest::Response,
    buffer: String,
}

impl Events {
    /// The next `upload` event's Upload.
    async fn next_upload(&mut self) -> Value {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                if !block.lines().any(|l| l.trim() == "event: upload") {
                    continue;
                }
                let data = block.lines().find_map(|l| l.strip_prefix("data:")).expect("data");
                return serde_json::from_str(data.trim_start()).expect("JSON data");
            }
            let chunk = tokio::time::timeout_at(deadline, self.stream.chunk()).await.expect("an event within 60 s");
            let chunk = chunk.expect("stream").expect("the stream stays open");
            self.buffer.push_str(std::str::from_utf8(&chunk).expect("utf-8"));
        }
    }
}

async fn every_waiting_thumb_is_made_before_any_preview(backend: Backend) {
    const PHOTOS: usize = 6;
    // Photos queued while no worker runs, as at a burst where they arrive faster than they are made.
    let app = TestApp::spawn_with(backend, Options { derivative_workers: Some(0), ..Options::default() }).await;
    let event = app.create_event().await;
    let anna = app.join(&event, "Anna").await;
    let ben = app.join(&event, "Ben").await;
    let mut ids = Vec::new();
    for i in 0..PHOTOS {
        let upload = upload_ok(&app, &anna, &images::jpeg(2400 + i as u32 * 8, 1600)).await;
        ids.push(upload["id"].as_str().expect("id").to_owned());
    }
    // One worker: the order in which jobs are claimed is the order in which things are made.
    let app = app.restart_with(Options { derivative_workers: Some(1), ..Options::default() }).await;

    // Watches the uploads' states while the worker runs: never a complete upload beside one still
    // processing (a preview made before every waiting thumb).
    let (seen, done) = (Arc::new(Mutex::new(Vec::new())), Arc::new(std::sync::atomic::AtomicBool::new(false)));
    let watcher = {
        let (db, seen, done) = (app.db.clone(), seen.clone(), done.clone());
        tokio::spawn(async move {
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let state = snapshot(&db).await;
                seen.lock().expect("seen").push(state);
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
    };

    // Another guest hears of every photo, with its thumb, and no preview is made before the last
    // photo is announced.
    let stream = app
        .client
        .get(app.url(&format!("/api/v1/events/{}/live", event.slug)))
        .bearer_auth(&ben.token)
        .send()
        .await
        .expect("live");
    assert_eq!(stream.status(), StatusCode::OK);
    let mut events = Events { stream, buffer: String::new() };
    let mut announced = Vec::new();
    while announced.len() < PHOTOS {
        let upload = events.next_upload().await;
        assert_eq!(upload["status"], "ready", "announced once its thumb exists: {upload}");
        assert!(upload["urls"]["thumb"].is_string(), "announced with its thumb: {upload}");
        assert!(upload["urls"]["preview"].is_string(), "and a preview URL that works: {upload}");
        assert!(upload["placeholder"].is_string(), "and its placeholder: {upload}");
        let id = upload["id"].as_str().expect("id").to_owned();
        if !announced.contains(&id) {
            announced.push(id);
        }
    }
    let (processing, pending, complete) = snapshot(&app.db).await;
    assert_eq!(processing, 0, "every photo is shown");
    assert!(
        pending >= 1,
        "the last photo announced before the first photos' previews: {pending} pending, {complete} complete"
    );
    // A listing shows every photo with its thumb.
    let (status, page) = app.get_json(&format!("/api/v1/events/{}/uploads", event.slug), &ben.token).await;
    assert_eq!(status, StatusCode::OK);
    let items = page["items"].as_array().expect("items");
    assert_eq!(items.len(), PHOTOS);
    assert!(items.iter().all(|u| u["status"] == "ready" && u["urls"]["thumb"].is_string()), "{page}");

    // The previews and AVIF thumbs follow; every photo ends complete.
    for id in &ids {
        let upload = settled(&app, &anna.token, id).await;
        assert_eq!(upload["status"], "ready", "{upload}");
        let preview = app
            .client
            .get(app.url(&format!("/api/v1/uploads/{id}/preview")))
            .bearer_auth(&ben.token)
            .send()
            .await
            .expect("preview");
        assert_eq!(preview.status(), StatusCode::OK);
        assert_eq!(preview.headers()["etag"].to_str().expect("ascii"), format!("\"{id}-preview\""));
        let thumb = app
            .client
            .get(app.url(&format!("/api/v1/uploads/{id}/thumb")))
            .header("accept", "image/avif,image/webp,*/*")
            .bearer_auth(&ben.token)
            .send()
            .await
            .expect("thumb");
        assert_eq!(thumb.headers()["content-type"], "image/avif", "the AVIF thumb follows too");
    }
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    watcher.await.expect("watcher");
    let seen = seen.lock().expect("seen").clone();
    assert!(
        !seen.iter().any(|&(processing, _, complete)| processing > 0 && complete > 0),
        "a photo was completed while another still waited for its thumb: {seen:?}"
    );
    assert!(
        seen.iter().any(|&(_, pending, _)| pending > 1),
        "several photos were shown before their previews: {seen:?}"
    );
    assert_eq!(snapshot(&app.db).await, (0, 0, PHOTOS as i64));
    let queue = &app.state.derivatives;
    use std::sync::atomic::Ordering::Relaxed;
    assert_eq!(queue.started.load(Relaxed), 2 * PHOTOS as u64, "each photo decoded once per phase");
    assert_eq!(queue.thumbs.load(Relaxed), PHOTOS as u64);
    assert_eq!(queue.made.load(Relaxed), PHOTOS as u64);
    assert_eq!(app.db.pending_derivative_jobs().await.expect("jobs"), 0);
    app.stop().await;
}

async fn a_shown_photo_answers_its_preview_url_with_its_thumb_until_the_preview_exists(backend: Backend) {
    let store_dir = tempfile::tempdir().expect("store dir");
    let (store, switches) = FailingStore::over(store_dir.path());
    let options = Options { blob_store: Some(BlobStore::with_store(store)), ..Options::default() };
    let app = TestApp::spawn_with(backend, options).await;
    let event = app.create_event().await;
    let anna = app.join(&event, "Anna").await;
    // Every read of the original takes two seconds: the preview's phase is seen pending.
    switches.slow_reads(Duration::from_secs(2));
    let upload = upload_ok(&app, &anna, &images::jpeg(2400, 1600)).await;
    let id = upload["id"].as_str().expect("id").to_owned();
    let started = std::time::Instant::now();
    let shown = loop {
        let (_, upload) = app.get_json(&format!("/api/v1/uploads/{id}"), &anna.token).await;
        if upload["status"] != "processing" {
            break upload;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "never shown: {upload}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(shown["status"], "ready", "{shown}");
    assert!(app.derivatives_pending(&id).await, "the preview is still to be made");

    let direct = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");
    let preview_url = shown["urls"]["preview"].as_str().expect("a preview URL once shown");
    let answer = direct.get(app.url(preview_url)).bearer_auth(&anna.token).send().await.expect("preview");
    assert_eq!(answer.status(), StatusCode::TEMPORARY_REDIRECT);
    assert_eq!(answer.headers()["location"], format!("/api/v1/uploads/{id}/thumb").as_str());
    assert_eq!(answer.headers()["cache-control"], "no-store", "not kept: the preview follows");
    // Followed (as an <img> does): the thumb's JPEG.
    let followed = app.client.get(app.url(preview_url)).bearer_auth(&anna.token).send().await.expect("followed");
    assert_eq!(followed.status(), StatusCode::OK);
    assert_eq!(followed.headers()["etag"].to_str().expect("ascii"), format!("\"{id}-thumb\""));

    let done = settled(&app, &anna.token, &id).await;
    assert_eq!(done["status"], "ready");
    let answer = direct.get(app.url(preview_url)).bearer_auth(&anna.token).send().await.expect("preview");
    assert_eq!(answer.status(), StatusCode::OK, "the preview itself once made");
    assert_eq!(answer.headers()["etag"].to_str().expect("ascii"), format!("\"{id}-preview\""));
    let bytes = answer.bytes().await.expect("bytes");
    let preview = image::load_from_memory(&bytes).expect("a JPEG");
    assert_eq!((preview.width(), preview.height()), (2048, 1365));
    app.stop().await;
}

both_backends!(
    every_waiting_thumb_is_made_before_any_preview,
    a_shown_photo_answers_its_preview_url_with_its_thumb_until_the_preview_exists,
);
