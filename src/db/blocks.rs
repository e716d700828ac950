//! Blocked guests: the organiser stops one guest's uploads, likes and comments, and hides
//! every photo they sent, in one transaction (marked as hidden by the block). Unblocking lets
//! them upload again; the photos stay hidden, unless the organiser asks to show again the
//! ones the block hid.

use chrono::{DateTime, Utc};
use sqlx::FromRow;
use uuid::Uuid;

use super::{Db, Tx, on_db, on_tx};
use crate::domain::{Review, UploadStatus};

/// A guest as the organiser moderates them.
#[derive(Clone, Debug, FromRow)]
pub struct GuestStandingRow {
    pub id: Uuid,
    pub display_name: String,
    pub blocked_at: Option<DateTime<Utc>>,
    /// Their uploads that are not deleted (hidden ones included).
    pub upload_count: i64,
}

macro_rules! standing_select {
    () => {
        "SELECT g.id, g.display_name, g.blocked_at,
                (SELECT COUNT(*) FROM uploads u WHERE u.guest_id = g.id AND u.deleted_at IS NULL) AS upload_count
         FROM guests g "
    };
}

impl Db {
    /// One guest of the event, as the organiser moderates them.
    pub async fn guest_standing(&self, event_id: Uuid, guest_id: Uuid) -> sqlx::Result<Option<GuestStandingRow>> {
        on_db!(self, pool => sqlx::query_as(concat!(standing_select!(), "WHERE g.id = $1 AND g.event_id = $2"))
            .bind(guest_id)
            .bind(event_id)
            .fetch_optional(pool)
            .await)
    }

    /// The event's blocked guests, the most recently blocked first (at most `limit`).
    pub async fn blocked_guests(&self, event_id: Uuid, limit: i64) -> sqlx::Result<Vec<GuestStandingRow>> {
        on_db!(self, pool => sqlx::query_as(concat!(
            standing_select!(),
            "WHERE g.event_id = $1 AND g.blocked_at IS NOT NULL ORDER BY g.blocked_at DESC, g.id LIMIT $2"
        ))
        .bind(event_id)
        .bind(limit)
        .fetch_all(pool)
        .await)
    }
}

impl Tx {
    /// `Db::guest_standing`, inside this transaction.
    pub async fn guest_standing(&mut self, event_id: Uuid, guest_id: Uuid) -> sqlx::Result<Option<GuestStandingRow>> {
        on_tx!(self, tx => sqlx::query_as(concat!(standing_select!(), "WHERE g.id = $1 AND g.event_id = $2"))
            .bind(guest_id)
            .bind(event_id)
            .fetch_optional(&mut **tx)
            .await)
    }

    /// Blocks the event's guest (kept as blocked when they already were) and hides every
    /// upload of theirs that is shown; returns the uploads hidden now, or `None` when the
    /// event has no such guest.
    pub async fn block_guest(&mut self, event_id: Uuid, guest_id: Uuid) -> sqlx::Result<Option<Vec<Uuid>>> {
        let found = on_tx!(self, tx => sqlx::query(
            "UPDATE guests SET blocked_at = COALESCE(blocked_at, $3) WHERE id = $1 AND event_id = $2",
        )
        .bind(guest_id)
        .bind(event_id)
        .bind(Utc::now())
        .execute(&mut **tx)
        .await
        .map(|r| r.rows_affected()))?;
        if found == 0 {
            return Ok(None);
        }
        let hidden = on_tx!(self, tx => sqlx::query_scalar(
            "UPDATE uploads SET hidden = TRUE, hidden_by_block = TRUE
             WHERE guest_id = $1 AND deleted_at IS NULL AND hidden = FALSE RETURNING id",
        )
        .bind(guest_id)
        .fetch_all(&mut **tx)
        .await)?;
        Ok(Some(hidden))
    }

    /// Unblocks the event's guest (nothing changes when they were not blocked); `false` when
    /// the event has no such guest. Their hidden uploads stay hidden.
    pub async fn unblock_guest(&mut self, event_id: Uuid, guest_id: Uuid) -> sqlx::Result<bool> {
        let found = on_tx!(self, tx => sqlx::query("UPDATE guests SET blocked_at = NULL WHERE id = $1 AND event_id = $2")
            .bind(guest_id)
            .bind(event_id)
            .execute(&mut **tx)
            .await
            .map(|r| r.rows_affected()))?;
        Ok(found == 1)
    }

    /// Shows again the guest's live uploads that blocking hid (not those hidden or rejected
    /// by hand since); returns them with their status, for the live stream.
    pub async fn show_block_hidden(&mut self, guest_id: Uuid) -> sqlx::Result<Vec<(Uuid, UploadStatus, Review)>> {
        let shown: Vec<(Uuid, String, String)> = on_tx!(self, tx => sqlx::query_as(
            "UPDATE uploads SET hidden = FALSE, hidden_by_block = FALSE
             WHERE guest_id = $1 AND deleted_at IS NULL AND hidden = TRUE AND hidden_by_block = TRUE
             RETURNING id, status, review",
        )
        .bind(guest_id)
        .fetch_all(&mut **tx)
        .await)?;
        shown
            .into_iter()
            .map(|(id, status, review)| {
                let decode = |e: String| sqlx::Error::Decode(e.into());
                Ok((id, UploadStatus::try_from(status).map_err(decode)?, Review::try_from(review).map_err(decode)?))
            })
            .collect()
    }
}
