//! The derivative job queue: queued with the upload's row, claimed under a lease by one
//! worker on one instance, finished together with the upload's status change.
//!
//! A job has two phases (`Phase`): the thumb, which makes the upload `ready` (shown), then the
//! rest (preview, AVIF thumb). Every due phase-1 job is claimed before any phase-2 job, so at a
//! burst each photo is shown within seconds while previews wait. Ending phase 1 moves the same
//! row to phase 2 (fenced, in the transaction that sets the upload ready); ending phase 2
//! deletes it.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{Db, Tx, on_db, on_tx};
use crate::domain::UploadStatus;

/// A job this worker holds until `lease_until`.
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

    /// Ends phase 1 of the job held under `claim` with the thumb alone made: the upload becomes
    /// `ready` with its placeholder, its preview pending, and the job moves to phase 2 (due at
    /// once, its attempts counted again). An upload deleted meanwhile keeps its status and its
    /// job ends (nothing more is made; a restore queues it again). `None` when the lease was
    /// lost meanwhile (the caller rolls back).
    pub async fn finish_thumb_phase(&mut self, job: &ClaimedJob, placeholder: &[u8]) -> sqlx::Result<Option<Finished>> {
        let moved = on_tx!(self, tx => sqlx::query(
            "UPDATE derivative_jobs SET phase = 2, claim = NULL, claimed_by = NULL, attempts = 0, run_after = $3,
                                        last_error = NULL
             WHERE upload_id = $1 AND claim = $2",
        )
        .bind(job.upload_id)
        .bind(job.claim)
        .bind(Utc::now())
        .execute(&mut **tx)
        .await
        .map(|r| r.rows_affected()))?;
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
        let deleted = on_tx!(self, tx => sqlx::query("DELETE FROM derivative_jobs WHERE upload_id = $1 AND claim = $2")
            .bind(job.upload_id)
            .bind(job.claim)
            .execute(&mut **tx)
            .await
            .map(|r| r.rows_affected()))?;
        if deleted == 0 {
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
        let deleted = on_tx!(self, tx => sqlx::query("DELETE FROM derivative_jobs WHERE upload_id = $1 AND claim = $2")
            .bind(job.upload_id)
            .bind(job.claim)
            .execute(&mut **tx)
            .await
            .map(|r| r.rows_affected()))?;
        if deleted == 0 {
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
    /// Claims a due job, if any, until `lease_until`. Thumbs first: every due phase-1 job
    /// goes before any phase-2 job. Within a phase guests take turns: of the next
    /// 64 due jobs, a guest's first photo goes before anyone's second, and so on (the
    /// rank is how many uploads the guest made before this one), so one guest's burst or slow
    /// files hold a worker for one job at a time while the others' photos go by. A job given
    /// back after a failure waits behind first attempts. On PostgreSQL, rows another instance is
    /// claiming right now are skipped, not waited for.
    pub async fn claim_derivative_job(
        &self,
        (by, lease_until): (Uuid, DateTime<Utc>),
    ) -> sqlx::Result<Option<ClaimedJob>> {
        let claim = Uuid::new_v4();
        let now = Utc::now();
        // SQLite has no row locks and needs none: one statement is one atomic write, and there
        // is one writer at a time.
        macro_rules! claim {
            ($pool:expr, $lock:literal) => {
                sqlx::query_as(concat!(
                    "UPDATE derivative_jobs SET claim = $1, claimed_by = $4, run_after = $2, attempts = attempts + 1
                     WHERE upload_id = (
                         SELECT j.upload_id FROM derivative_jobs j JOIN uploads u ON u.id = j.upload_id
                         WHERE j.upload_id IN (SELECT upload_id FROM derivative_jobs WHERE run_after <= $3
                                               ORDER BY phase, run_after LIMIT 64)
                         ORDER BY j.phase,
                                  j.attempts > 0,
                                  (SELECT COUNT(*) FROM uploads o WHERE o.guest_id = u.guest_id AND o.created_at < u.created_at),
                                  j.run_after
                         LIMIT 1 ",
                    $lock,
                    ") RETURNING upload_id, attempts, phase"
                ))
                .bind(claim)
                .bind(lease_until)
                .bind(now)
                .bind(by)
                .fetch_optional($pool)
                .await?
            };
        }
        let row: Option<(Uuid, i32, i32)> = match self {
            Db::Sqlite(pool) => claim!(pool, ""),
            Db::Postgres(pool) => claim!(pool, "FOR UPDATE OF j SKIP LOCKED"),
        };
        Ok(row.map(|(upload_id, attempts, phase)| {
            let phase = if phase == Phase::Rest as i32 { Phase::Rest } else { Phase::Thumb };
            ClaimedJob { upload_id, attempts, claim, phase }
        }))
    }

    /// Gives a job back to be tried again after `run_after` (a passing failure: storage
    /// unreachable). Does nothing if the lease was lost meanwhile.
    pub async fn retry_derivative_job(
        &self,
        job: &ClaimedJob,
        run_after: DateTime<Utc>,
        error: &str,
    ) -> sqlx::Result<()> {
        on_db!(self, pool => sqlx::query(
            "UPDATE derivative_jobs SET claim = NULL, claimed_by = NULL, run_after = $3, last_error = $4
             WHERE upload_id = $1 AND claim = $2",
        )
        .bind(job.upload_id)
        .bind(job.claim)
        .bind(run_after)
        .bind(error)
        .execute(pool)
        .await
        .map(|r| r.rows_affected()))?;
        Ok(())
    }

    /// Extends the lease of a job this worker still holds to `lease_until`. `false`: the lease
    /// was lost (it ran out and another worker claimed the job, or the job is gone).
    pub async fn renew_derivative_job(&self, job: &ClaimedJob, lease_until: DateTime<Utc>) -> sqlx::Result<bool> {
        let renewed = on_db!(self, pool => sqlx::query(
            "UPDATE derivative_jobs SET run_after = $3 WHERE upload_id = $1 AND claim = $2",
        )
        .bind(job.upload_id)
        .bind(job.claim)
        .bind(lease_until)
        .execute(pool)
        .await
        .map(|r| r.rows_affected()))?;
        Ok(renewed > 0)
    }

    /// Jobs not finished yet, due or not (for tests and `/metrics`).
    pub async fn pending_derivative_jobs(&self) -> sqlx::Result<i64> {
        on_db!(self, pool => sqlx::query_scalar("SELECT COUNT(*) FROM derivative_jobs").fetch_one(pool).await)
    }
}
