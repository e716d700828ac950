//! The live feed: what slideshows are told, appended in the same transaction as the change
//! it reports, so a change that rolls back is never announced.

use chrono::{DateTime, Utc};
use sqlx::FromRow;
use uuid::Uuid;

use super::{Db, Tx, on_db, on_tx};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LiveKind {
    /// An upload became visible: ready, or shown again.
    Upload,
    /// An upload was hidden or deleted.
    Removed,
    /// A guestbook message was written, shown again or approved (`upload_id` holds its id).
    Message,
    /// A guestbook message was hidden or deleted (`upload_id` holds its id).
    MessageRemoved,
}

impl LiveKind {
    pub fn as_str(self) -> &'static str {
        match self {
            LiveKind::Upload => "upload",
            LiveKind::Removed => "removed",
            LiveKind::Message => "guestbook",
            LiveKind::MessageRemoved => "guestbook_removed",
        }
    }

    /// As the feed stores it; anything else is read as an upload's news (the oldest kind).
    pub fn parse(stored: &str) -> Self {
        [LiveKind::Removed, LiveKind::Message, LiveKind::MessageRemoved]
            .into_iter()
            .find(|kind| kind.as_str() == stored)
            .unwrap_or(LiveKind::Upload)
    }
}

#[derive(Clone, Debug, FromRow)]
pub struct FeedRow {
    pub seq: i64,
    pub event_id: Uuid,
    pub kind: String,
    pub upload_id: Uuid,
}

impl Tx {
    pub async fn append_live(&mut self, event_id: Uuid, kind: LiveKind, upload_id: Uuid) -> sqlx::Result<()> {
        on_tx!(self, tx => sqlx::query(
            "INSERT INTO live_feed (event_id, kind, upload_id, created_at) VALUES ($1, $2, $3, $4)",
        )
        .bind(event_id)
        .bind(kind.as_str())
        .bind(upload_id)
        .bind(Utc::now())
        .execute(&mut **tx)
        .await
        .map(|r| r.rows_affected()))?;
        Ok(())
    }
}

impl Db {
    /// Feed rows written since `since` (by this instance's clock or another's), oldest first.
    pub async fn live_feed_since(&self, since: DateTime<Utc>) -> sqlx::Result<Vec<FeedRow>> {
        on_db!(self, pool => sqlx::query_as(
            "SELECT seq, event_id, kind, upload_id FROM live_feed WHERE created_at > $1 ORDER BY seq",
        )
        .bind(since)
        .fetch_all(pool)
        .await)
    }

    /// Forgets feed rows older than `cutoff`; returns how many.
    pub async fn sweep_live_feed(&self, cutoff: DateTime<Utc>) -> sqlx::Result<u64> {
        Ok(on_db!(self, pool => sqlx::query("DELETE FROM live_feed WHERE created_at < $1")
            .bind(cutoff)
            .execute(pool)
            .await
            .map(|r| r.rows_affected()))?)
    }
}
