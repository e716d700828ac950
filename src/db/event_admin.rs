//! What the instance admin does to events beyond creating them: the listing with its counts,
//! a new organiser password, and deleting an event (its uploads marked deleted, each with a
//! blob job that removes its blobs).

use chrono::{DateTime, Utc};
use sqlx::FromRow;
use uuid::Uuid;

use super::blob_jobs::{BlobJob, BlobJobKind};
use super::events::{EventRow, event_select};
use super::{Db, Tx, on_db, on_tx};

/// An event as the admin's listing shows it: the event and how much it holds.
#[derive(Clone, Debug, FromRow)]
pub struct ListedEvent {
    #[sqlx(flatten)]
    pub event: EventRow,
    /// Everyone who joined it.
    pub guest_count: i64,
    /// Its uploads that are not deleted (hidden ones count).
    pub upload_count: i64,
}

impl Db {
    /// The newest `limit` events that are not deleted, newest first, with their counts.
    pub async fn list_events(&self, limit: i64) -> sqlx::Result<Vec<ListedEvent>> {
        on_db!(self, pool => sqlx::query_as(concat!(
            "SELECT x.*,
                    (SELECT COUNT(*) FROM guests g WHERE g.event_id = x.id) AS guest_count,
                    (SELECT COUNT(*) FROM uploads u WHERE u.event_id = x.id AND u.deleted_at IS NULL) AS upload_count
             FROM (",
            event_select!(),
            "WHERE e.deleted_at IS NULL ORDER BY e.created_at DESC, e.id DESC LIMIT $1) x
             ORDER BY x.created_at DESC, x.id DESC"
        ))
        .bind(limit)
        .fetch_all(pool)
        .await)
    }
}

impl Tx {
    /// Replaces the organiser password's hash and ends every organiser session of the event.
    /// `Ok(None)` when the event is gone; else how many sessions ended.
    pub async fn set_organiser_password(&mut self, event_id: Uuid, password_hash: &str) -> sqlx::Result<Option<u64>> {
        let updated = on_tx!(self, tx => sqlx::query(
            "UPDATE events SET organiser_password_hash = $2 WHERE id = $1 AND deleted_at IS NULL",
        )
        .bind(event_id)
        .bind(password_hash)
        .execute(&mut **tx)
        .await
        .map(|r| r.rows_affected()))?;
        if updated == 0 {
            return Ok(None);
        }
        self.end_organiser_sessions(event_id).await.map(Some)
    }

    /// Marks the event deleted; `false` when it already was (or never existed). First in its
    /// transaction: the event's row lock makes an upload committing at the same time either
    /// commit before (and be marked deleted next) or find the event gone (`commit_charging_event`).
    pub async fn mark_event_deleted(&mut self, event_id: Uuid, now: DateTime<Utc>) -> sqlx::Result<bool> {
        let updated = on_tx!(self, tx => sqlx::query(
            "UPDATE events SET deleted_at = $2 WHERE id = $1 AND deleted_at IS NULL",
        )
        .bind(event_id)
        .bind(now)
        .execute(&mut **tx)
        .await
        .map(|r| r.rows_affected()))?;
        Ok(updated == 1)
    }

    /// Marks every live upload of the event deleted; how many were.
    pub async fn mark_event_uploads_deleted(&mut self, event_id: Uuid, now: DateTime<Utc>) -> sqlx::Result<u64> {
        on_tx!(self, tx => sqlx::query(
            "UPDATE uploads SET deleted_at = $2 WHERE event_id = $1 AND deleted_at IS NULL",
        )
        .bind(event_id)
        .bind(now)
        .execute(&mut **tx)
        .await
        .map(|r| r.rows_affected()))
    }

    /// Queues a 'delete' blob job for every upload the event ever had (those deleted before
    /// too: removing blobs that are gone is harmless, and leaves nothing behind), claimed by
    /// the caller as `queue_blob_job` does, one statement for them all.
    pub async fn queue_event_blob_deletes(
        &mut self,
        event_id: Uuid,
        (by, lease_until): (Uuid, DateTime<Utc>),
    ) -> sqlx::Result<Vec<BlobJob>> {
        let claim = Uuid::new_v4();
        let kind = BlobJobKind::Delete;
        // `WHERE` on the `SELECT` also keeps SQLite from reading `ON CONFLICT` as a join.
        let queued: Vec<(Uuid, i32)> = on_tx!(self, tx => sqlx::query_as(
            "INSERT INTO blob_jobs (upload_id, kind, event_id, attempts, run_after, claim, claimed_by, created_at)
             SELECT id, $2, event_id, 1, $3, $4, $5, $6 FROM uploads WHERE event_id = $1
             ON CONFLICT (upload_id, kind)
             DO UPDATE SET claim = excluded.claim, claimed_by = excluded.claimed_by,
                           run_after = excluded.run_after, attempts = blob_jobs.attempts + 1
             RETURNING upload_id, attempts",
        )
        .bind(event_id)
        .bind(kind.as_str())
        .bind(lease_until)
        .bind(claim)
        .bind(by)
        .bind(Utc::now())
        .fetch_all(&mut **tx)
        .await)?;
        Ok(queued
            .into_iter()
            .map(|(upload_id, attempts)| BlobJob { kind, event_id, upload_id, attempts, claim })
            .collect())
    }

    /// Ends every organiser session of the event; how many there were.
    pub async fn end_organiser_sessions(&mut self, event_id: Uuid) -> sqlx::Result<u64> {
        on_tx!(self, tx => sqlx::query("DELETE FROM organiser_sessions WHERE event_id = $1")
            .bind(event_id)
            .execute(&mut **tx)
            .await
            .map(|r| r.rows_affected()))
    }
}
