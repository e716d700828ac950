//! Instances sharing a database and a photo store clean up after each other: the uploads a
//! dead instance was receiving are removed from the store (on S3 their multipart uploads are
//! aborted by the id recorded with them), the jobs it had claimed are given back at once, a
//! stopping instance hands back its own, and a sweep runs on one instance at a time.

mod common;

use std::time::Duration;

use bytes::Bytes;
use chrono::Utc;
use common::{Backend, Options, TestApp, all_files, images, settled_within, upload_ok};
use confetti::db::derivatives;
use confetti::db::instances::LEASES;
use confetti::ingest::Staged;
use confetti::jobs::instances::CleanedUp;
use futures_util::StreamExt;
use reqwest::StatusCode;
use serde_json::Value;
use uuid::Uuid;

every_store!(
    a_dead_instances_uploads_in_flight_leave_nothing_in_the_store,
    a_dead_instances_claims_are_given_back_at_once,
    a_stopping_instance_hands_back_its_derivative_job,
    an_upload_cut_off_mid_body_leaves_no_blob_and_no_open_multipart_upload,
    a_photo_of_several_parts_is_stored_byte_for_byte,
);
both_backends!(a_sweep_lease_is_held_by_one_instance_at_a_time);

/// Begins an upload's blob as an instance's ingest does (recorded as staged by `instance`),
/// writes `bytes` of it; `finish` completes the blob (all bytes there, row not committed).
async fn stage(app: &TestApp, instance: Uuid, bytes: usize, finish: bool) -> Uuid {
    let (event_id, upload_id) = (Uuid::new_v4(), Uuid::now_v7());
    let (mut writer, staged) =
        Staged::begin(&app.db, &app.state.blobs, instance, event_id, upload_id).await.expect("begin");
    let photo = images::jpeg_of_about(bytes);
    for chunk in photo.chunks(64 * 1024) {
        writer.write(Bytes::copy_from_slice(chunk)).await.expect("write");
    }
    if finish {
        writer.finish().await.expect("finish");
    } else {
        // The process dies: nothing completes or aborts the upload. The writer's parts in
        // flight finish first, as they would have on the wire.
        tokio::time::sleep(Duration::from_millis(300)).await;
        std::mem::forget(writer);
    }
    // Whoever abandons it, it is not this (dead, or not yet committing) instance.
    std::mem::forget(staged);
    upload_id
}

async fn staged_rows(app: &TestApp) -> i64 {
    app.scalar("SELECT COUNT(*) FROM staged_uploads").await
}

async fn a_dead_instances_uploads_in_flight_leave_nothing_in_the_store(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    // Another instance, receiving two uploads, one of them complete but not committed yet.
    let dead = Uuid::new_v4();
    app.db.register_instance(dead).await.expect("register");
    stage(&app, dead, 12 * 1024 * 1024, false).await;
    stage(&app, dead, 300_000, true).await;
    // And a phone photo still arriving: within one part, so on S3 nothing of it is sent yet.
    stage(&app, dead, 3 * 1024 * 1024, false).await;
    assert_eq!(staged_rows(&app).await, 3);
    assert!(!all_files(&app.blob_dir()).is_empty(), "the store holds the complete one");
    if let Some(s3) = &app.s3 {
        assert_eq!(s3.open_multipart_uploads(), 1, "one upload past a part was still being received");
        assert!(s3.open_part_files() >= 1, "with parts already stored");
        let recorded = app.scalar("SELECT COUNT(*) FROM staged_uploads WHERE multipart_id IS NOT NULL").await;
        assert_eq!(recorded, 1, "its id is recorded; the others have none");
        assert_eq!(all_files(&app.blob_dir()).len(), 1, "only the complete one is in the bucket");
    }

    // A live instance's uploads are left alone.
    let alive = app.state.instance.id;
    stage(&app, alive, 100_000, true).await;
    app.db.heartbeat(dead).await.expect("heartbeat");
    assert_eq!(app.state.instance.clean_up_after_the_dead().await.expect("cleanup"), CleanedUp::default());
    assert_eq!(staged_rows(&app).await, 4);

    // Then it dies: not heard from for longer than an instance may be silent. (This instance's
    // own background round may get there first; either way the same is left.)
    set_heartbeat(&app, dead, Utc::now() - chrono::Duration::minutes(1)).await;
    let cleaned = app.state.instance.clean_up_after_the_dead().await.expect("cleanup");
    assert!(cleaned.uploads <= 3, "{cleaned:?}");

    assert_eq!(staged_rows(&app).await, 1, "only the live instance's record is left");
    let left = all_files(&app.blob_dir());
    assert_eq!(left.len(), 1, "only the live instance's blob is left: {left:?}");
    if let Some(s3) = &app.s3 {
        assert_eq!(s3.open_multipart_uploads(), 0, "the dead instance's multipart upload was aborted");
        assert_eq!(s3.open_part_files(), 0, "and its parts dropped");
    }
    // Repeating is harmless: another instance may clean up after the same one.
    assert_eq!(app.state.instance.clean_up_after_the_dead().await.expect("again"), CleanedUp::default());
    app.stop().await;
}

async fn a_dead_instances_claims_are_given_back_at_once(backend: Backend) {
    let app = TestApp::spawn_with(backend, Options { derivative_workers: Some(0), ..Options::default() }).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let id = upload_ok(&app, &guest, &images::jpeg(800, 600)).await["id"].as_str().expect("id").to_owned();
    // A worker of another instance claims the job for two minutes, then that instance dies.
    let dead = Uuid::new_v4();
    app.db.register_instance(dead).await.expect("register");
    let lease = Utc::now() + chrono::Duration::minutes(2);
    assert!(app.db.claim_job(&derivatives::JOBS, (dead, lease)).await.expect("claim").is_some());
    app.db.heartbeat(dead).await.expect("heartbeat");
    assert_eq!(app.state.instance.clean_up_after_the_dead().await.expect("cleanup").claims, 0, "alive: kept");

    // Not heard from for longer than an instance may be silent.
    // (This instance's own background round may get there first.)
    let silent = Utc::now() - chrono::Duration::minutes(1);
    set_heartbeat(&app, dead, silent).await;
    assert!(app.state.instance.clean_up_after_the_dead().await.expect("cleanup").claims <= 1);
    assert_eq!(app.scalar("SELECT COUNT(*) FROM derivative_jobs WHERE claimed_by IS NOT NULL").await, 0);

    // A worker takes the job at once, not when the dead instance's lease would have ended.
    let app = app.restart_with(Options { derivative_workers: Some(1), ..Options::default() }).await;
    let upload = settled_within(&app, &guest.token, &id, Duration::from_secs(15)).await;
    assert_eq!(upload["status"], "ready");
    app.stop().await;
}

async fn set_heartbeat(app: &TestApp, instance: Uuid, at: chrono::DateTime<Utc>) {
    let sql = "UPDATE instances SET heartbeat_at = $1 WHERE id = $2";
    match &app.db {
        confetti::db::Db::Sqlite(p) => sqlx::query(sql).bind(at).bind(instance).execute(p).await.map(|_| ()),
        confetti::db::Db::Postgres(p) => sqlx::query(sql).bind(at).bind(instance).execute(p).await.map(|_| ()),
    }
    .expect("set heartbeat");
}

async fn a_stopping_instance_hands_back_its_derivative_job(backend: Backend) {
    let app = TestApp::spawn_with(backend, Options { derivative_workers: Some(0), ..Options::default() }).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let id = upload_ok(&app, &guest, &images::jpeg(800, 600)).await["id"].as_str().expect("id").to_owned();
    // This instance's worker holds the job (for the default two minutes) when the stop comes.
    let lease = Utc::now() + chrono::Duration::minutes(2);
    let me = app.state.instance.id;
    assert!(app.db.claim_job(&derivatives::JOBS, (me, lease)).await.expect("claim").is_some());

    let started = std::time::Instant::now();
    let app = app.restart_with(Options { derivative_workers: Some(1), ..Options::default() }).await;
    let upload = settled_within(&app, &guest.token, &id, Duration::from_secs(15)).await;
    assert_eq!(upload["status"], "ready");
    assert!(started.elapsed() < Duration::from_secs(15), "ready {:?} after the restart", started.elapsed());
    assert_eq!(app.scalar("SELECT COUNT(*) FROM instances").await, 1, "the stopped instance is forgotten");
    app.stop().await;
}

async fn an_upload_cut_off_mid_body_leaves_no_blob_and_no_open_multipart_upload(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let photo = images::jpeg_of_about(12 * 1024 * 1024);
    let boundary = "confetti-cut-boundary";
    let head = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"client_upload_id\"\r\n\r\n{}\r\n\
         --{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"cut.jpg\"\r\n\
         Content-Type: image/jpeg\r\n\r\n",
        Uuid::new_v4()
    );
    // Eleven of twelve megabytes, then the phone loses its connection.
    let mut pieces: Vec<Result<Bytes, std::io::Error>> = vec![Ok(Bytes::from(head))];
    pieces.extend(photo[..11 * 1024 * 1024].chunks(256 * 1024).map(|c| Ok(Bytes::copy_from_slice(c))));
    pieces.push(Err(std::io::Error::other("the connection is lost")));
    let body = reqwest::Body::wrap_stream(futures_util::stream::iter(pieces).then(|piece| async move {
        tokio::time::sleep(Duration::from_millis(5)).await;
        piece
    }));
    let sent = reqwest::Client::new()
        .post(app.url(&format!("/api/v1/events/{}/uploads", guest.slug)))
        .bearer_auth(&guest.token)
        .header("content-type", format!("multipart/form-data; boundary={boundary}"))
        .body(body)
        .send()
        .await;
    assert!(sent.is_err(), "the request never completed");

    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let open = app.s3.as_ref().map_or(0, |s3| s3.open_multipart_uploads() + s3.open_part_files());
        let (files, staged) = (all_files(&app.blob_dir()), staged_rows(&app).await);
        if open == 0 && files.is_empty() && staged == 0 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "10 s after the cut: {open} open multipart files, blobs {files:?}, {staged} staged records"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(app.upload_rows().await, 0);
    assert_eq!(app.used_bytes(&guest).await, 0);
    app.stop().await;
}

async fn a_photo_of_several_parts_is_stored_byte_for_byte(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    // Three parts of an S3 multipart upload: 5 MiB, 5 MiB and the rest.
    let photo = images::jpeg_of_about(12 * 1024 * 1024);
    let created = upload_ok(&app, &guest, &photo).await;
    let id = created["id"].as_str().expect("id");
    let original = app
        .client
        .get(app.url(&format!("/api/v1/uploads/{id}/original")))
        .bearer_auth(&guest.token)
        .send()
        .await
        .expect("original");
    assert_eq!(original.status(), StatusCode::OK);
    assert!(original.bytes().await.expect("bytes") == photo, "the original is the photo, byte for byte");
    assert_eq!(app.scalar("SELECT COUNT(*) FROM staged_uploads").await, 0, "committed: no longer staged");
    let temporary = all_files(&app.blob_dir().join("tmp"));
    assert_eq!(temporary, Vec::<std::path::PathBuf>::new(), "nothing left in the temporary area");
    if let Some(s3) = &app.s3 {
        assert_eq!(s3.open_multipart_uploads(), 0);
    }
    let listed: Value = app.get_json(&format!("/api/v1/uploads/{id}"), &guest.token).await.1;
    assert_eq!(listed["bytes"], photo.len());
    app.stop().await;
}

async fn a_sweep_lease_is_held_by_one_instance_at_a_time(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
    let until = Utc::now() + chrono::Duration::minutes(1);
    assert!(app.db.take_lease(&LEASES, "test sweep", a, until).await.expect("a takes"));
    assert!(!app.db.take_lease(&LEASES, "test sweep", b, until).await.expect("b waits"), "held by a");
    assert!(app.db.take_lease(&LEASES, "test sweep", a, until).await.expect("a renews"));
    app.db.drop_leases(a).await.expect("a stops");
    assert!(app.db.take_lease(&LEASES, "test sweep", b, until).await.expect("b takes"), "free once a stopped");
    // A lease whose holder stopped renewing it ends on its own.
    let past = Utc::now() - chrono::Duration::seconds(1);
    assert!(app.db.take_lease(&LEASES, "other sweep", a, past).await.expect("a takes"));
    assert!(app.db.take_lease(&LEASES, "other sweep", b, until).await.expect("b takes over"), "a's lease ran out");
    app.stop().await;
}
