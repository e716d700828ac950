//! Work on blobs that follows a commit is durable: with the store failing right after an
//! upload's commit and during a delete, the answers are still given (201, 204), the work waits
//! in the database, and once the store is back nothing is left behind — no temporary blob, no
//! blob of a deleted photo, every kept photo at its final key. And the sweep finds final blobs
//! no upload accounts for.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::failing_store::{FailingStore, Op};
use common::{Backend, Options, TestApp, all_files, images, settled, upload_ok};
use confetti::blobs::BlobStore;
use confetti::jobs::orphans::sweep;
use reqwest::StatusCode;
use uuid::Uuid;

/// Waits until no blob job is pending, at most `limit`.
async fn blob_jobs_done(app: &TestApp, limit: Duration) {
    let started = std::time::Instant::now();
    loop {
        let pending = app.db.pending_blob_jobs().await.expect("pending blob jobs");
        if pending == 0 {
            return;
        }
        assert!(started.elapsed() < limit, "{pending} blob jobs still pending after {limit:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn relative(root: &Path, files: Vec<PathBuf>) -> Vec<String> {
    let mut names: Vec<String> =
        files.into_iter().filter_map(|f| f.strip_prefix(root).ok().map(|p| p.to_string_lossy().into_owned())).collect();
    names.sort();
    names
}

async fn a_store_failing_after_the_commit_leaves_nothing_behind_once_it_is_back(backend: Backend) {
    let store_dir = tempfile::tempdir().expect("store dir");
    let (store, switches) = FailingStore::over(store_dir.path());
    let options = Options { blob_store: Some(BlobStore::with_store(store)), ..Options::default() };
    let app = TestApp::spawn_with(backend, options).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;

    let deleted = upload_ok(&app, &guest, &images::jpeg(300, 200)).await;
    let deleted_id = deleted["id"].as_str().expect("id").to_owned();
    settled(&app, &guest.token, &deleted_id).await;

    // The store stops moving and deleting: the upload still commits and is answered.
    switches.fail(&[Op::Move, Op::Delete]);
    let photo = images::jpeg(320, 240);
    let kept = upload_ok(&app, &guest, &photo).await;
    let kept_id = kept["id"].as_str().expect("id").to_owned();
    let delete = app
        .client
        .delete(app.url(&format!("/api/v1/uploads/{deleted_id}")))
        .bearer_auth(&guest.token)
        .send()
        .await
        .expect("delete");
    assert_eq!(delete.status(), StatusCode::NO_CONTENT);
    assert_eq!(app.db.pending_blob_jobs().await.expect("pending"), 2, "a finalize and a delete wait");
    let waiting = relative(store_dir.path(), all_files(store_dir.path()));
    assert!(waiting.contains(&format!("tmp/{kept_id}")), "the new photo waits under its temporary key: {waiting:?}");
    assert!(waiting.iter().any(|f| f.contains(&deleted_id)), "the deleted photo's blobs are still there: {waiting:?}");

    // Meanwhile the photo is served from where it is.
    let original = app
        .client
        .get(app.url(&format!("/api/v1/uploads/{kept_id}/original")))
        .bearer_auth(&guest.token)
        .send()
        .await
        .expect("original");
    assert_eq!(original.status(), StatusCode::OK);
    assert_eq!(original.bytes().await.expect("bytes").as_ref(), photo.as_slice());

    // Back: the workers finish what waited.
    switches.heal();
    blob_jobs_done(&app, Duration::from_secs(20)).await;
    settled(&app, &guest.token, &kept_id).await;
    let event_id = event.id;
    let left = relative(store_dir.path(), all_files(store_dir.path()));
    assert_eq!(
        left,
        vec![
            format!("derivatives/{event_id}/{kept_id}/preview.jpg"),
            format!("derivatives/{event_id}/{kept_id}/thumb.avif"),
            format!("derivatives/{event_id}/{kept_id}/thumb.jpg"),
            format!("originals/{event_id}/{kept_id}"),
        ],
        "only the kept photo's blobs, at their final keys"
    );
    app.stop().await;
}

async fn the_sweep_deletes_final_blobs_no_upload_accounts_for(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let kept = upload_ok(&app, &guest, &images::jpeg(300, 200)).await;
    let kept_id = kept["id"].as_str().expect("id").to_owned();
    settled(&app, &guest.token, &kept_id).await;

    // Blobs of an upload that has no row, in this event and in an unknown one.
    let (stray, unknown_event) = (Uuid::new_v4(), Uuid::new_v4());
    let blobs = app.blob_dir();
    for path in [
        format!("originals/{}/{stray}", event.id),
        format!("derivatives/{}/{stray}/thumb.jpg", event.id),
        format!("derivatives/{}/{stray}/thumb.webp", event.id),
        format!("derivatives/{}/{stray}/thumb.avif", event.id),
        format!("originals/{unknown_event}/{stray}"),
    ] {
        let path = blobs.join(path);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
        std::fs::write(&path, b"left behind").expect("stray blob");
    }

    let young = sweep(&app.db, &app.state.blobs, Duration::from_secs(3600)).await.expect("sweep");
    assert_eq!(young, (0, 0), "young blobs are left alone");
    let (finalized, deleted) = sweep(&app.db, &app.state.blobs, Duration::ZERO).await.expect("sweep");
    assert_eq!((finalized, deleted), (0, 5));
    let left = relative(&blobs, all_files(&blobs));
    assert_eq!(left.len(), 4, "the kept photo's original and derivatives: {left:?}");
    assert!(left.iter().all(|f| f.contains(&kept_id)), "{left:?}");
    app.stop().await;
}

both_backends!(
    a_store_failing_after_the_commit_leaves_nothing_behind_once_it_is_back,
    the_sweep_deletes_final_blobs_no_upload_accounts_for,
);
