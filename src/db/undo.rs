//! Undoing an organiser's delete: the delete's blob job waits out a grace (`run_after` in the
//! future, never claimed, no attempt made), and a restore within it takes the job back, clears
//! `deleted_at` and charges the photo's bytes back, in one transaction. A job a worker has
//! claimed (or tried) cannot be taken back: its bytes may be gone.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::blob_jobs::BlobJobKind;
use super::{Tx, on_tx};

/// What a restore brought back.
#[derive(Clone, Copy, Debug)]
pub struct Restored {
    pub guest_id: Uuid,
    pub bytes: i64,
}

impl Tx {
    /// Queues the removal of a deleted upload's blobs for `run_after`, unclaimed: a worker
    /// takes it once it is due, unless a restore took it back first.
    pub async fn queue_delete_after(
        &mut self,
        event_id: Uuid,
        upload_id: Uuid,
        run_after: DateTime<Utc>,
    ) -> sqlx::Result<()> {
        on_tx!(self, tx => sqlx::query(
            "INSERT INTO blob_jobs (upload_id, kind, event_id, attempts, run_after, created_at)
             VALUES ($1, $2, $3, 0, $4, $5)
             ON CONFLICT (upload_id, kind) DO UPDATE SET run_after = excluded.run_after",
        )
        .bind(upload_id)
        .bind(BlobJobKind::Delete.as_str())
        .bind(event_id)
        .bind(run_after)
        .bind(Utc::now())
        .execute(&mut **tx)
        .await
        .map(|r| r.rows_affected()))?;
        Ok(())
    }

    /// Takes back the upload's delete job while it still waits out its grace (not due, never
    /// claimed or tried); `false` when there is no such job: the grace has passed, the job
    /// ran or runs, or the delete had none of this kind (a guest's own delete runs at once).
    /// On PostgreSQL a worker claiming it at the same moment holds the row: this waits, then
    /// finds it claimed.
    pub async fn take_back_delete(&mut self, upload_id: Uuid) -> sqlx::Result<bool> {
        let taken = on_tx!(self, tx => sqlx::query(
            "DELETE FROM blob_jobs
             WHERE upload_id = $1 AND kind = $2 AND attempts = 0 AND claim IS NULL AND run_after > $3",
        )
        .bind(upload_id)
        .bind(BlobJobKind::Delete.as_str())
        .bind(Utc::now())
        .execute(&mut **tx)
        .await
        .map(|r| r.rows_affected()))?;
        Ok(taken == 1)
    }

    /// Clears the upload's `deleted_at` and charges its bytes back to its guest and event,
    /// even past their quota and cap (the photo was there before); `None` when it is not
    /// deleted.
    pub async fn undelete_upload(&mut self, upload_id: Uuid) -> sqlx::Result<Option<Restored>> {
        let restored: Option<(Uuid, i64)> = on_tx!(self, tx => sqlx::query_as(
            "UPDATE uploads SET deleted_at = NULL WHERE id = $1 AND deleted_at IS NOT NULL RETURNING guest_id, bytes",
        )
        .bind(upload_id)
        .fetch_optional(&mut **tx)
        .await)?;
        let Some((guest_id, bytes)) = restored else {
            return Ok(None);
        };
        // The guest's row first, then the event's, as every charge does.
        on_tx!(self, tx => sqlx::query("UPDATE guests SET used_bytes = used_bytes + $2 WHERE id = $1")
            .bind(guest_id)
            .bind(bytes)
            .execute(&mut **tx)
            .await
            .map(|r| r.rows_affected()))?;
        on_tx!(self, tx => sqlx::query(
            "UPDATE events SET used_bytes = used_bytes + $2 WHERE id = (SELECT event_id FROM guests WHERE id = $1)",
        )
        .bind(guest_id)
        .bind(bytes)
        .execute(&mut **tx)
        .await
        .map(|r| r.rows_affected()))?;
        Ok(Some(Restored { guest_id, bytes }))
    }
}
