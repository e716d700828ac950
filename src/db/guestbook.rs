//! The guestbook: short messages guests leave for the hosts, moderated like photos (the review
//! gate, hiding, deleting). Listed newest first by id (UUIDv7).

use chrono::{DateTime, Utc};
use sqlx::FromRow;
use uuid::Uuid;

use super::{Db, Tx, on_db, on_tx};
use crate::domain::{Gallery, Review};

/// One message as stored, with the names a response needs.
#[derive(Clone, Debug, FromRow)]
pub struct MessageRow {
    pub id: Uuid,
    pub event_id: Uuid,
    pub event_slug: String,
    pub guest_id: Uuid,
    pub guest_display_name: String,
    pub text: String,
    /// Whether it waits for the organiser's approval (the event's review gate when it was written).
    #[sqlx(try_from = "String")]
    pub review: Review,
    pub hidden: bool,
    pub created_at: DateTime<Utc>,
    /// The event's gallery mode and opening time: whether its guests see each other's words.
    #[sqlx(try_from = "String")]
    pub event_gallery: Gallery,
    pub event_gallery_opens_at: Option<DateTime<Utc>>,
}

impl MessageRow {
    /// Whether the event's other guests (and its screen) may read it at `now`: shown, approved,
    /// and the event's gallery shared, as for photos. Its writer and the organiser always may.
    pub fn shared_with_guests(&self, now: DateTime<Utc>) -> bool {
        !self.hidden && self.review == Review::Approved && self.event_gallery.shared(self.event_gallery_opens_at, now)
    }
}

/// A page of an event's guestbook as one reader may see it.
#[derive(Clone, Debug)]
pub struct MessageQuery {
    pub event_id: Uuid,
    /// The reading guest, who also sees their own waiting and hidden messages.
    pub viewer_guest: Option<Uuid>,
    /// Organisers see every message.
    pub organiser: bool,
    /// Whether guests see each other's approved, shown messages now (`Gallery::shared`).
    pub shared: bool,
    /// Only messages older than this one (the keyset cursor).
    pub before: Option<Uuid>,
    pub limit: i64,
    /// Only messages in this review state.
    pub review: Option<Review>,
}

/// `SELECT` with a `WHERE …` after it, as one static string.
macro_rules! select {
    ($where:literal) => {
        concat!(
            "SELECT m.id, m.event_id, e.slug AS event_slug, m.guest_id, g.display_name AS guest_display_name,
                    m.text, m.review, m.hidden, m.created_at, e.gallery AS event_gallery,
                    e.gallery_opens_at AS event_gallery_opens_at
             FROM guestbook_messages m JOIN guests g ON g.id = m.guest_id JOIN events e ON e.id = m.event_id ",
            $where
        )
    };
}

impl Db {
    /// The message, whoever may see it.
    pub async fn message(&self, id: Uuid) -> sqlx::Result<Option<MessageRow>> {
        on_db!(self, pool => sqlx::query_as(select!("WHERE m.id = $1")).bind(id).fetch_optional(pool).await)
    }

    /// Newest first; ids are UUIDv7, so `id < cursor` stays valid while messages are added.
    pub async fn list_messages(&self, q: &MessageQuery) -> sqlx::Result<Vec<MessageRow>> {
        on_db!(self, pool => sqlx::query_as(select!(
            "WHERE m.event_id = $1
               AND ($2 OR m.guest_id = $3 OR (m.hidden = FALSE AND m.review = 'approved' AND $4))
               AND ($5 IS NULL OR m.review = $5)
               AND m.id < $6
             ORDER BY m.id DESC LIMIT $7"
        ))
        .bind(q.event_id)
        .bind(q.organiser)
        .bind(q.viewer_guest)
        .bind(q.shared)
        .bind(q.review.map(Review::as_str))
        .bind(q.before.unwrap_or(Uuid::max()))
        .bind(q.limit)
        .fetch_all(pool)
        .await)
    }

    /// What an export holds of the guestbook: the shown, approved messages (and the hidden or
    /// waiting ones when asked), oldest first, a page at a time after `after`.
    pub async fn export_messages(
        &self,
        event_id: Uuid,
        after: Option<Uuid>,
        limit: i64,
        include: super::uploads::ExportExtras,
    ) -> sqlx::Result<Vec<MessageRow>> {
        on_db!(self, pool => sqlx::query_as(select!(
            "WHERE m.event_id = $1 AND (m.hidden = FALSE OR $2) AND (m.review = 'approved' OR $3) AND m.id > $4
             ORDER BY m.id LIMIT $5"
        ))
        .bind(event_id)
        .bind(include.hidden)
        .bind(include.pending)
        .bind(after.unwrap_or(Uuid::nil()))
        .bind(limit)
        .fetch_all(pool)
        .await)
    }
}

impl Tx {
    /// Writes a guest's message; it waits for approval when the event's review gate is on now.
    pub async fn insert_message(&mut self, event_id: Uuid, guest_id: Uuid, text: &str) -> sqlx::Result<MessageRow> {
        let id = Uuid::now_v7();
        on_tx!(self, tx => sqlx::query(
            "INSERT INTO guestbook_messages (id, event_id, guest_id, text, review, hidden, created_at)
             VALUES ($1, $2, $3, $4,
                     CASE WHEN (SELECT review_uploads FROM events WHERE id = $2) THEN 'pending' ELSE 'approved' END,
                     FALSE, $5)",
        )
        .bind(id)
        .bind(event_id)
        .bind(guest_id)
        .bind(text)
        .bind(Utc::now())
        .execute(&mut **tx)
        .await
        .map(|r| r.rows_affected()))?;
        self.message(id).await?.ok_or(sqlx::Error::RowNotFound)
    }

    /// The message inside this transaction.
    pub async fn message(&mut self, id: Uuid) -> sqlx::Result<Option<MessageRow>> {
        on_tx!(self, tx => sqlx::query_as(select!("WHERE m.id = $1")).bind(id).fetch_optional(&mut **tx).await)
    }

    /// Hides or shows a message; true when it changed.
    pub async fn set_message_hidden(&mut self, id: Uuid, hidden: bool) -> sqlx::Result<bool> {
        let changed = on_tx!(self, tx => sqlx::query(
            "UPDATE guestbook_messages SET hidden = $2 WHERE id = $1 AND hidden <> $2",
        )
        .bind(id)
        .bind(hidden)
        .execute(&mut **tx)
        .await
        .map(|r| r.rows_affected()))?;
        Ok(changed > 0)
    }

    /// Approves a waiting message; true when it changed.
    pub async fn approve_message(&mut self, id: Uuid) -> sqlx::Result<bool> {
        let changed = on_tx!(self, tx => sqlx::query(
            "UPDATE guestbook_messages SET review = 'approved' WHERE id = $1 AND review = 'pending'",
        )
        .bind(id)
        .execute(&mut **tx)
        .await
        .map(|r| r.rows_affected()))?;
        Ok(changed > 0)
    }

    /// Deletes a message for good; false when there was none.
    pub async fn delete_message(&mut self, id: Uuid) -> sqlx::Result<bool> {
        let deleted = on_tx!(self, tx => sqlx::query("DELETE FROM guestbook_messages WHERE id = $1")
            .bind(id)
            .execute(&mut **tx)
            .await
            .map(|r| r.rows_affected()))?;
        Ok(deleted > 0)
    }
}
