//! The fencing rules of the one lease (`db::lease`), on both databases: a claim keeps a second
//! holder out until the lease ends; an ended lease can be taken over; after a takeover, the old
//! holder's renewal and final write change nothing; a release by one who does not hold the
//! lease does nothing. Once through a job queue (the derivative jobs), once through a named
//! lease (the `leases` table).

mod common;

use chrono::{Duration, Utc};
use common::{Backend, Options, TestApp, images, upload_ok};
use confetti::db::derivatives::JOBS;
use confetti::db::instances::LEASES;
use uuid::Uuid;

async fn a_job_s_lease_is_fenced_by_its_holder_s_token(backend: Backend) {
    // No worker: the test is the only one claiming.
    let app = TestApp::spawn_with(backend, Options { derivative_workers: Some(0), ..Options::default() }).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    upload_ok(&app, &guest, &images::jpeg(64, 48)).await;
    let (db, instance) = (&app.db, app.state.instance.id);
    let later = Utc::now() + Duration::minutes(1);

    let first = db.claim_job(&JOBS, (instance, later)).await.expect("claim").expect("a due job");
    assert_eq!(first.attempts, 1);
    assert!(db.claim_job(&JOBS, (instance, later)).await.expect("claim").is_none(), "held until its lease ends");
    assert!(db.renew_job(&JOBS, &first, later).await.expect("renew"), "its holder renews it");

    // The first holder's lease ends (it renewed to a moment past): another takes it over.
    assert!(db.renew_job(&JOBS, &first, Utc::now() - Duration::seconds(1)).await.expect("renew"));
    let second = db.claim_job(&JOBS, (instance, later)).await.expect("claim").expect("taken over");
    assert_eq!((second.upload_id, second.attempts), (first.upload_id, 2));

    // The old holder's token changes nothing any more.
    assert!(!db.renew_job(&JOBS, &first, later).await.expect("renew"), "renewal by the old token: 0 rows");
    let mut tx = db.begin().await.expect("begin");
    assert!(!tx.finish_job(&JOBS, &first).await.expect("finish"), "final write by the old token: 0 rows");
    tx.rollback().await.expect("rollback");
    assert!(!db.finish_job(&JOBS, &first).await.expect("finish"), "final write by the old token: 0 rows");
    db.retry_job(&JOBS, &first, Utc::now(), "not mine").await.expect("give back");
    assert_eq!(
        app.scalar("SELECT COUNT(*) FROM derivative_jobs WHERE claim IS NOT NULL AND last_error IS NULL").await,
        1,
        "a give-back by the old token leaves the new holder's claim"
    );
    assert!(db.claim_job(&JOBS, (instance, later)).await.expect("claim").is_none(), "still the new holder's");

    // The holder's final write counts.
    assert!(db.finish_job(&JOBS, &second).await.expect("finish"));
    assert_eq!(db.pending_derivative_jobs().await.expect("count"), 0);
    app.stop().await;
}

async fn a_named_lease_is_fenced_by_its_holder_s_token(backend: Backend) {
    let app = TestApp::spawn_with(backend, Options { derivative_workers: Some(0), ..Options::default() }).await;
    let db = &app.db;
    let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
    let now = Utc::now();
    let later = now + Duration::minutes(1);

    assert!(db.take_lease(&LEASES, "test round", a, later).await.expect("take"));
    assert!(!db.take_lease(&LEASES, "test round", b, later).await.expect("take"), "held by a");
    assert!(!db.claim_lease(&LEASES, "test round", b, (now, later), "").await.expect("claim"), "held by a");
    assert!(!db.release_lease(&LEASES, "test round", b).await.expect("release"), "b holds nothing to give back");
    assert!(!db.take_lease(&LEASES, "test round", b, later).await.expect("take"), "still a's after b's release");
    assert!(db.renew_lease(&LEASES, "test round", a, later, "").await.expect("renew"));

    // a's lease ends: b takes it over, and a's token changes nothing any more.
    assert!(db.renew_lease(&LEASES, "test round", a, now - Duration::seconds(1), "").await.expect("renew"));
    assert!(db.claim_lease(&LEASES, "test round", b, (Utc::now(), later), "").await.expect("claim"), "taken over");
    assert!(!db.renew_lease(&LEASES, "test round", a, later, "").await.expect("renew"), "0 rows for the old token");
    assert!(!db.take_lease(&LEASES, "test round", a, later).await.expect("take"), "b's now");
    assert!(db.renew_lease(&LEASES, "test round", b, later, "").await.expect("renew"), "b holds it");
    app.stop().await;
}

both_backends!(a_job_s_lease_is_fenced_by_its_holder_s_token, a_named_lease_is_fenced_by_its_holder_s_token);
