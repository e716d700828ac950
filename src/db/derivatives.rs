//! The derivative job queue: queued with the upload's row, claimed under a lease by one
//! worker on one instance, finished together with the upload's status change.

use std::marker::PhantomData;

use chrono::Utc;
use uuid::Uuid;

use super::lease::{Job, KeyPart, LeaseKey, LeaseTable, Queue};
use super::{Db, Tx, on_db, on_tx};
use crate::domain::UploadStatus;

/// The queue. Guests take turns: of the next 64 due jobs, a guest's first photo goes before
/// anyone's second, and so on (the rank is how many uploads the guest made before this one),
/// so one guest's burst or slow files hold a worker for one job at a time while the others'
/// photos go by. A job given back after a failure waits behind first attempts.
pub const JOBS: Queue<ClaimedJob> = Queue {
    lease: LeaseTable { table: "derivative_jobs", key: &["upload_id"], token: "claim", until: "run_after" },
    from: "derivative_jobs j JOIN uploads u ON u.id = j.upload_id",
    due: "j.upload_id IN (SELECT upload_id FROM derivative_jobs WHERE run_after <= $3 ORDER BY run_after LIMIT 64)",
    order: "j.attempts > 0,
            (SELECT COUNT(*) FROM uploads o WHERE o.guest_id = u.guest_id AND o.created_at < u.created_at),
            j.run_after",
    job: PhantomData,
};

/// A job this worker holds until its lease ends.
#[derive(Clone, Copy, Debug)]
pub struct ClaimedJob {
    pub upload_id: Uuid,
    /// Including this one.
    pub attempts: i32,
    pub claim: Uuid,
}

impl LeaseKey for ClaimedJob {
    fn parts(&self) -> Vec<KeyPart<'_>> {
        vec![KeyPart::Uuid(self.upload_id)]
    }
}

impl Job for ClaimedJob {
    const RETURNING: &'static str = "upload_id, attempts";
    type Row = (Uuid, i32);

    fn from_row((upload_id, attempts): Self::Row, claim: Uuid) -> Option<Self> {
        Some(ClaimedJob { upload_id, attempts, claim })
    }

    fn claim(&self) -> Uuid {
        self.claim
    }
}

/// What a job made beside the JPEGs, recorded with the status: read with the upload, it says
/// which formats may be served and what the page draws while the thumb loads.
#[derive(Clone, Debug, Default)]
pub struct Made {
    /// The WebP thumb is stored.
    pub webp: bool,
    /// The AVIF thumb is stored.
    pub avif: bool,
    /// The thumb's ThumbHash.
    pub placeholder: Option<Vec<u8>>,
    /// Why processing failed, when it did.
    pub failure: Option<String>,
    /// For a video: a frame became its thumb and preview.
    pub poster: bool,
}

/// The upload a finished job was for, as it is at that moment.
#[derive(Clone, Copy, Debug, sqlx::FromRow)]
pub struct Finished {
    pub event_id: Uuid,
    pub hidden: bool,
    pub deleted: bool,
}

impl Tx {
    /// Queues the upload's derivatives; due at once.
    pub async fn queue_derivatives(&mut self, upload_id: Uuid) -> sqlx::Result<()> {
        let now = Utc::now();
        on_tx!(self, tx => sqlx::query(
            "INSERT INTO derivative_jobs (upload_id, run_after, created_at) VALUES ($1, $2, $2)
             ON CONFLICT (upload_id) DO NOTHING",
        )
        .bind(upload_id)
        .bind(now)
        .execute(&mut **tx)
        .await
        .map(|r| r.rows_affected()))?;
        Ok(())
    }

    /// Ends the job held under `claim`, setting the upload's status (a deleted upload keeps
    /// its own) and what was made beside the JPEGs. `None` when the lease was lost to another worker meanwhile (the caller rolls
    /// back; the other worker decides). The row stays locked until commit, so a concurrent
    /// hide or delete is ordered after this, in the live feed too.
    pub async fn finish_derivative_job(
        &mut self,
        job: &ClaimedJob,
        status: UploadStatus,
        made: &Made,
    ) -> sqlx::Result<Option<Finished>> {
        let deleted = self.finish_job(&JOBS, job).await?;
        if !deleted {
            return Ok(None);
        }
        on_tx!(self, tx => sqlx::query_as(
            "UPDATE uploads SET status = CASE WHEN deleted_at IS NULL THEN $2 ELSE status END,
                                webp_thumb = $3, avif_thumb = $6, placeholder = $4, poster = $5, failure = $7
             WHERE id = $1
             RETURNING event_id, hidden, deleted_at IS NOT NULL AS deleted",
        )
        .bind(job.upload_id)
        .bind(status.as_str())
        .bind(made.webp)
        .bind(made.placeholder.as_deref())
        .bind(made.poster)
        .bind(made.avif)
        .bind(made.failure.as_deref())
        .fetch_optional(&mut **tx)
        .await)
    }
}

impl Db {
    /// Jobs not finished yet, due or not (for tests and `/metrics`).
    pub async fn pending_derivative_jobs(&self) -> sqlx::Result<i64> {
        on_db!(self, pool => sqlx::query_scalar("SELECT COUNT(*) FROM derivative_jobs").fetch_one(pool).await)
    }
}
