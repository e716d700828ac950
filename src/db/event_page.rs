//! The event's page as its organiser shapes it: welcome text, cover photo, whether guests may
//! save each other's originals, and the window in which uploads are open. Read with every event
//! (`EventRow::page`), changed by its own `UPDATE` beside the event's other settings.

use chrono::{DateTime, Utc};
use sqlx::FromRow;
use uuid::Uuid;

use super::{Tx, on_tx};

/// The page's settings as stored. `cover_upload_id` is read through the uploads table: it is
/// `None` while the upload is not ready, hidden, waiting for approval or deleted, so a page never shows a cover that
/// is gone.
#[derive(Clone, Debug, FromRow, PartialEq, Eq)]
pub struct EventPageRow {
    pub welcome_text: Option<String>,
    pub cover_upload_id: Option<Uuid>,
    pub guest_downloads: bool,
    pub uploads_open_from: Option<DateTime<Utc>>,
    pub uploads_open_until: Option<DateTime<Utc>>,
}

/// A new event's page: no welcome, no cover, downloads on, no window.
impl Default for EventPageRow {
    fn default() -> Self {
        Self {
            welcome_text: None,
            cover_upload_id: None,
            guest_downloads: true,
            uploads_open_from: None,
            uploads_open_until: None,
        }
    }
}

/// A change to the page: the outer `None` leaves a setting as it is, `Some(None)` clears it.
#[derive(Clone, Debug, Default)]
pub struct EventPageChange {
    pub welcome_text: Option<Option<String>>,
    pub cover_upload_id: Option<Option<Uuid>>,
    pub guest_downloads: Option<bool>,
    pub uploads_open_from: Option<Option<DateTime<Utc>>>,
    pub uploads_open_until: Option<Option<DateTime<Utc>>>,
}

impl EventPageChange {
    pub fn is_empty(&self) -> bool {
        self.welcome_text.is_none()
            && self.cover_upload_id.is_none()
            && self.guest_downloads.is_none()
            && self.uploads_open_from.is_none()
            && self.uploads_open_until.is_none()
    }
}

/// What an upload is, for choosing it as a cover.
#[derive(Clone, Debug, FromRow)]
pub struct CoverCandidate {
    pub status: String,
    pub hidden: bool,
    /// `pending` while it waits for the organiser's approval (the review gate).
    pub review: String,
    pub deleted: bool,
}

impl Tx {
    /// Changes the page's settings named in `change`; the others stay.
    pub async fn update_event_page(&mut self, id: Uuid, change: &EventPageChange) -> sqlx::Result<()> {
        if change.is_empty() {
            return Ok(());
        }
        on_tx!(self, tx => sqlx::query(
            "UPDATE events SET welcome_text = CASE WHEN $2 THEN $3 ELSE welcome_text END,
                               cover_upload_id = CASE WHEN $4 THEN $5 ELSE cover_upload_id END,
                               guest_downloads = COALESCE($6, guest_downloads),
                               uploads_open_from = CASE WHEN $7 THEN $8 ELSE uploads_open_from END,
                               uploads_open_until = CASE WHEN $9 THEN $10 ELSE uploads_open_until END
             WHERE id = $1",
        )
        .bind(id)
        .bind(change.welcome_text.is_some())
        .bind(change.welcome_text.clone().flatten())
        .bind(change.cover_upload_id.is_some())
        .bind(change.cover_upload_id.flatten())
        .bind(change.guest_downloads)
        .bind(change.uploads_open_from.is_some())
        .bind(change.uploads_open_from.flatten())
        .bind(change.uploads_open_until.is_some())
        .bind(change.uploads_open_until.flatten())
        .execute(&mut **tx)
        .await
        .map(|r| r.rows_affected()))?;
        Ok(())
    }

    /// The upload `upload_id` of this event, as a cover would need it; `None` when the event
    /// has no such upload.
    pub async fn cover_candidate(&mut self, event_id: Uuid, upload_id: Uuid) -> sqlx::Result<Option<CoverCandidate>> {
        on_tx!(self, tx => sqlx::query_as(
            "SELECT status, hidden, review, deleted_at IS NOT NULL AS deleted FROM uploads WHERE id = $1 AND event_id = $2",
        )
        .bind(upload_id)
        .bind(event_id)
        .fetch_optional(&mut **tx)
        .await)
    }
}
