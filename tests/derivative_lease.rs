//! A derivative job that takes longer than its lease (a big original from a slow store) keeps
//! its lease while it runs: no other worker takes it over and makes the same derivatives again.

mod common;

use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use common::failing_store::FailingStore;
use common::{Backend, Options, TestApp, images, settled_within, upload_ok};
use confetti::blobs::BlobStore;

async fn a_job_longer_than_its_lease_is_made_once(backend: Backend) {
    let store_dir = tempfile::tempdir().expect("store dir");
    let (store, switches) = FailingStore::over(store_dir.path());
    // Two workers that could take each other's job, a lease of one second, and an original
    // that takes three to arrive.
    let options = Options {
        blob_store: Some(BlobStore::with_store(store)),
        derivative_workers: Some(2),
        derivative_lease_s: 1,
        ..Options::default()
    };
    let app = TestApp::spawn_with(backend, options).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    switches.slow_reads(Duration::from_secs(3));

    let upload = upload_ok(&app, &guest, &images::jpeg(640, 480)).await;
    let id = upload["id"].as_str().expect("id").to_owned();
    let settled = settled_within(&app, &guest.token, &id, Duration::from_secs(30)).await;
    assert_eq!(settled["status"], "ready", "{settled}");

    let queue = &app.state.derivatives;
    // Thumbs first: the thumb, then the rest, each decoded once.
    assert_eq!(queue.started.load(Relaxed), 2, "one worker made each phase, none took the job over");
    assert_eq!(queue.thumbs.load(Relaxed), 1);
    assert_eq!(queue.made.load(Relaxed), 1);
    assert_eq!(app.scalar("SELECT COUNT(*) FROM derivative_jobs").await, 0);
    app.stop().await;
}

both_backends!(a_job_longer_than_its_lease_is_made_once);
