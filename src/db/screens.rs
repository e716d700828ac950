//! Screen links: one per event at most, made by its organiser for the venue's screen. Only the
//! token's digest is kept (as for every bearer token, `auth`); a new link replaces the old one,
//! and revoking clears it: the old link and every screen that opened it stop working.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::events::{EventRow, event_select};
use super::{Db, Tx, on_db, on_tx};

impl Db {
    /// The event a screen token opens, while that link is the event's current one.
    pub async fn screen_event(&self, token_hash: &[u8]) -> sqlx::Result<Option<EventRow>> {
        on_db!(self, pool => sqlx::query_as(concat!(event_select!(), "WHERE e.screen_token_hash = $1 AND e.deleted_at IS NULL"))
            .bind(token_hash)
            .fetch_optional(pool)
            .await)
    }
}

impl Tx {
    /// Makes `token_hash` the event's screen link (replacing any other), or none with `None`;
    /// `false` when the event is gone.
    pub async fn set_screen_link(
        &mut self,
        event_id: Uuid,
        token_hash: Option<&[u8]>,
        at: DateTime<Utc>,
    ) -> sqlx::Result<bool> {
        let updated = on_tx!(self, tx => sqlx::query(
            "UPDATE events SET screen_token_hash = $2, screen_link_at = CASE WHEN $2 IS NULL THEN NULL ELSE $3 END
             WHERE id = $1 AND deleted_at IS NULL",
        )
        .bind(event_id)
        .bind(token_hash)
        .bind(at)
        .execute(&mut **tx)
        .await
        .map(|r| r.rows_affected()))?;
        Ok(updated == 1)
    }
}
