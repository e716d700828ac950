//! The derivative job queue: queued with the upload's row, claimed under a lease by one
//! worker on one instance, finished together with the upload's status change.
//!
//! A job has two phases (`Phase`): the thumb, which makes the upload `ready` (shown), then the
//! rest (preview, AVIF thumb). Every due phase-1 job is claimed before any phase-2 job, so at a
//! burst each photo is shown within seconds while previews wait. Ending phase 1 moves the same
//! row to phase 2 (fenced, in the transaction that sets the upload ready); ending phase 2
//! deletes it.

use std::marker::PhantomData;

use chrono::Utc;
use uuid::Uuid;

use super::lease::{Job, KeyPart, LeaseKey, LeaseTable, Queue, lease_write};
use super::{Db, Tx, on_db, on_tx};
use crate::domain::UploadStatus;

/// The queue. Thumbs first: every due phase-1 job goes before any phase-2 job. Within a
/// phase guests take turns: of the next 64 due jobs, a guest's first photo goes before
/// anyone's second, and so on (the rank is how many uploads the guest made before this one),
/// so one guest's burst or slow files hold a worker for one job at a time while the others'
/// photos go by. A job given back after a failure waits behind first attempts.
pub const JOBS: Queue<ClaimedJob> = Queue {
    lease: LeaseTable { table: "derivative_jobs", key: &["upload_id"], token: "claim", until: "run_after" },
    from: "derivative_jobs j JOIN uploads u ON u.id = j.upload_id",
    due: "j.upload_id IN (SELECT upload_id FROM derivative_jobs WHERE run_after <= $3 ORDER BY phase, run_after LIMIT 64)",
    order: "j.phase,
            j.attempts > 0,
            (SELECT COUNT(*) FROM uploads o WHERE o.guest_id = u.guest_id AND o.created_at < u.created_at),
            j.run_after",
    job: PhantomData,
};

/// A job this worker holds until its lease ends.
#[derive(Clone, Copy, Debug)]
pub struct ClaimedJob {
    pub upload_id: Uuid,
    /// Including this one, in this phase.
    pub attempts: i32,
    pub claim: Uuid,
    pub phase: Phase,
}

/// Where a job stands: `derivative_jobs.phase`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// The thumb and its placeholder (or, where the thumb alone is not much cheaper, everything
    /// at once): what the upload needs to be shown.
    Thumb = 1,
    /// The preview and the AVIF thumb of an upload already shown.
    Rest = 2,
}

impl LeaseKey for ClaimedJob {
    fn parts(&self) -> Vec<KeyPart<'_>> {
        vec![KeyPart::Uuid(self.upload_id)]
    }
}

impl Job for ClaimedJob {
    const RETURNING: &'static str = "upload_id, attempts, phase";
    type Row = (Uuid, i32, i32);

    fn from_row((upload_id, attempts, phase): Self::Row, claim: Uuid) -> Option<Self> {
        let phase = if phase == Phase::Rest as i32 { Phase::Rest } else { Phase::Thumb };
        Some(ClaimedJob { upload_id, attempts, claim, phase })
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
    /// Holds the upload's derivative job, if it has one, until the transaction ends. A worker
    /// ending a job writes the job's row and then the upload's; a transaction that writes the
    /// upload and then queues its job (a restore) calls this first, so the two take the rows in
    /// the same order (the other way round, each waits for the other: PostgreSQL's deadlock).
    /// SQLite's write transaction holds the whole database already.
    pub async fn lock_derivative_job(&mut self, upload_id: Uuid) -> sqlx::Result<()> {
        if let Tx::Postgres(tx) = self {
            sqlx::query("SELECT upload_id FROM derivative_jobs WHERE upload_id = $1 FOR UPDATE")
                .bind(upload_id)
                .fetch_optional(&mut **tx)
                .await?;
        }
        Ok(())
    }

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

    /// Ends phase 1 of the job held under `claim` with the thumb alone made: the upload becomes
    /// `ready` with its placeholder, its preview pending, and the job moves to phase 2 (due at
    /// once, its attempts counted again). An upload deleted meanwhile keeps its status and its
    /// job ends (nothing more is made; a restore queues it again). `None` when the lease was
    /// lost meanwhile (the caller rolls back).
    pub async fn finish_thumb_phase(&mut self, job: &ClaimedJob, placeholder: &[u8]) -> sqlx::Result<Option<Finished>> {
        let set = "phase = 2, claim = NULL, claimed_by = NULL, attempts = 0, run_after = $3, last_error = NULL";
        let moved = lease_write!(tx self, JOBS.lease.fenced(set, ""), job, job.claim, Utc::now())?;
        if moved == 0 {
            return Ok(None);
        }
        let finished: Option<Finished> = on_tx!(self, tx => sqlx::query_as(
            "UPDATE uploads SET status = CASE WHEN deleted_at IS NULL THEN 'ready' ELSE status END,
                                preview_pending = TRUE, webp_thumb = FALSE, avif_thumb = FALSE, placeholder = $2,
                                poster = FALSE, failure = NULL
             WHERE id = $1
             RETURNING event_id, hidden, deleted_at IS NOT NULL AS deleted",
        )
        .bind(job.upload_id)
        .bind(placeholder)
        .fetch_optional(&mut **tx)
        .await)?;
        if finished.is_none_or(|f| f.deleted) {
            on_tx!(self, tx => sqlx::query("DELETE FROM derivative_jobs WHERE upload_id = $1")
                .bind(job.upload_id)
                .execute(&mut **tx)
                .await
                .map(|r| r.rows_affected()))?;
        }
        Ok(finished)
    }

    /// Ends phase 2 of the job held under `claim`: with `Some(made)` the preview and the thumb's
    /// other formats exist; with `None` they could not be made, and the upload stays shown by its
    /// thumb (its preview URL keeps answering with the thumb). An upload deleted meanwhile goes
    /// back to `processing`, so that a restore makes its derivatives again. `None` when the
    /// lease was lost meanwhile (the caller rolls back).
    pub async fn finish_rest_phase(&mut self, job: &ClaimedJob, made: Option<&Made>) -> sqlx::Result<Option<Finished>> {
        let deleted = self.finish_job(&JOBS, job).await?;
        if !deleted {
            return Ok(None);
        }
        on_tx!(self, tx => sqlx::query_as(
            "UPDATE uploads SET status = CASE WHEN deleted_at IS NULL THEN status ELSE 'processing' END,
                                preview_pending = $2, webp_thumb = $3, avif_thumb = $4
             WHERE id = $1
             RETURNING event_id, hidden, deleted_at IS NOT NULL AS deleted",
        )
        .bind(job.upload_id)
        .bind(made.is_none())
        .bind(made.is_some_and(|m| m.webp))
        .bind(made.is_some_and(|m| m.avif))
        .fetch_optional(&mut **tx)
        .await)
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
                                webp_thumb = $3, avif_thumb = $6, placeholder = $4, poster = $5, failure = $7,
                                preview_pending = FALSE
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
