//! The derivative job queue: queued with the upload's row, claimed under a lease by one
//! worker on one instance, finished together with the upload's status change.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{Db, Tx, on_db, on_tx};
use crate::domain::UploadStatus;

/// A job this worker holds until `lease_until`.
#[derive(Clone, Copy, Debug)]
pub struct ClaimedJob {
    pub upload_id: Uuid,
    /// Including this one.
    pub attempts: i32,
    pub claim: Uuid,
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
    /// Claims a due job, if any, until `lease_until`. Guests take turns: of the next
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
                                               ORDER BY run_after LIMIT 64)
                         ORDER BY j.attempts > 0,
                                  (SELECT COUNT(*) FROM uploads o WHERE o.guest_id = u.guest_id AND o.created_at < u.created_at),
                                  j.run_after
                         LIMIT 1 ",
                    $lock,
                    ") RETURNING upload_id, attempts"
                ))
                .bind(claim)
                .bind(lease_until)
                .bind(now)
                .bind(by)
                .fetch_optional($pool)
                .await?
            };
        }
        let row: Option<(Uuid, i32)> = match self {
            Db::Sqlite(pool) => claim!(pool, ""),
            Db::Postgres(pool) => claim!(pool, "FOR UPDATE OF j SKIP LOCKED"),
        };
        Ok(row.map(|(upload_id, attempts)| ClaimedJob { upload_id, attempts, claim }))
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
