//! Events and organiser sessions.

use chrono::{DateTime, Utc};
use sqlx::FromRow;
use uuid::Uuid;

use super::event_page::EventPageRow;
use super::{Db, Tx, on_db, on_tx};
use crate::domain::Gallery;

#[derive(Clone, Debug, FromRow)]
pub struct EventRow {
    pub id: Uuid,
    pub slug: String,
    pub name: String,
    pub join_token: String,
    pub organiser_password_hash: String,
    pub guest_quota_bytes: i64,
    pub uploads_open: bool,
    pub created_at: DateTime<Utc>,
    /// All guests' photos together may not pass this (`guest_quota_bytes` is each one's share).
    pub storage_cap_bytes: i64,
    /// What the event's photos take, charged and refunded with the guests' own counters.
    pub used_bytes: i64,
    /// The guests' page: welcome text, cover, downloads, upload window.
    #[sqlx(flatten)]
    pub page: EventPageRow,
    /// Host modes (`domain::host_modes`): new uploads wait for approval; whose photos guests see, and from when.
    pub review_uploads: bool,
    #[sqlx(try_from = "String")]
    pub gallery: Gallery,
    pub gallery_opens_at: Option<DateTime<Utc>>,
    /// False while the event carries the name the server gave it (the demo event of a fresh
    /// install): its organiser's page asks for a name. True once a person named it.
    pub name_chosen: bool,
    /// When the event's current screen link was made; `None` while it has none.
    pub screen_link_at: Option<DateTime<Utc>>,
}

/// The columns of `EventRow`, as a literal so queries can be built with `concat!`.
macro_rules! event_select {
    () => {
        "SELECT e.id, e.slug, e.name, e.join_token, e.organiser_password_hash, e.guest_quota_bytes, e.uploads_open, e.created_at, e.storage_cap_bytes, e.used_bytes, \
         e.welcome_text, (SELECT u.id FROM uploads u WHERE u.id = e.cover_upload_id AND u.event_id = e.id AND u.status = 'ready' AND NOT u.hidden AND u.review = 'approved' AND u.deleted_at IS NULL) AS cover_upload_id, \
         e.guest_downloads, e.uploads_open_from, e.uploads_open_until, e.review_uploads, e.gallery, e.gallery_opens_at, e.name_chosen, e.screen_link_at FROM events e "
    };
}
pub(crate) use event_select;

impl Db {
    pub async fn event_by_slug(&self, slug: &str) -> sqlx::Result<Option<EventRow>> {
        on_db!(self, pool => sqlx::query_as(concat!(event_select!(), "WHERE e.slug = $1 AND e.deleted_at IS NULL"))
            .bind(slug)
            .fetch_optional(pool)
            .await)
    }

    pub async fn event_by_id(&self, id: Uuid) -> sqlx::Result<Option<EventRow>> {
        on_db!(self, pool => sqlx::query_as(concat!(event_select!(), "WHERE e.id = $1 AND e.deleted_at IS NULL"))
            .bind(id)
            .fetch_optional(pool)
            .await)
    }

    pub async fn count_events(&self) -> sqlx::Result<i64> {
        on_db!(self, pool => sqlx::query_scalar("SELECT COUNT(*) FROM events").fetch_one(pool).await)
    }

    /// Records an organiser session until `expires_at`, started with the event's password
    /// (`login_id` `None`) or a co-organiser's login; `false` when that login was revoked
    /// meanwhile. Expired sessions of every event are deleted on the way: logins are few and
    /// throttled, so this keeps the table to the sessions of one lifetime without a sweep of
    /// its own.
    pub async fn insert_organiser_session(
        &self,
        token_hash: &[u8],
        event_id: Uuid,
        login_id: Option<Uuid>,
        expires_at: DateTime<Utc>,
    ) -> sqlx::Result<bool> {
        let now = Utc::now();
        on_db!(self, pool => sqlx::query("DELETE FROM organiser_sessions WHERE expires_at <= $1")
            .bind(now)
            .execute(pool)
            .await
            .map(|r| r.rows_affected()))?;
        let inserted = on_db!(self, pool => sqlx::query(
            "INSERT INTO organiser_sessions (token_hash, event_id, created_at, expires_at, login_id)
             SELECT $1, $2, $3, $4, l.id FROM (SELECT $5 AS id) l
             WHERE l.id IS NULL OR EXISTS (SELECT 1 FROM organiser_logins o WHERE o.id = l.id AND o.revoked_at IS NULL)",
        )
        .bind(token_hash)
        .bind(event_id)
        .bind(now)
        .bind(expires_at)
        .bind(login_id)
        .execute(pool)
        .await
        .map(|r| r.rows_affected()))?;
        Ok(inserted == 1)
    }

    /// The event an organiser token belongs to, while its session lasts (and, for a
    /// co-organiser's session, while their login is not revoked).
    pub async fn organiser_event(&self, token_hash: &[u8]) -> sqlx::Result<Option<EventRow>> {
        on_db!(self, pool => sqlx::query_as(concat!(
            event_select!(),
            "JOIN organiser_sessions s ON s.event_id = e.id WHERE s.token_hash = $1 AND s.expires_at > $2 AND e.deleted_at IS NULL",
            " AND (s.login_id IS NULL OR EXISTS (SELECT 1 FROM organiser_logins o WHERE o.id = s.login_id AND o.revoked_at IS NULL))"
        ))
        .bind(token_hash)
        .bind(Utc::now())
        .fetch_optional(pool)
        .await)
    }

    /// Ends one organiser session of this event (logout); `false` when there was none.
    pub async fn delete_organiser_session(&self, token_hash: &[u8], event_id: Uuid) -> sqlx::Result<bool> {
        let deleted = on_db!(self, pool => sqlx::query(
            "DELETE FROM organiser_sessions WHERE token_hash = $1 AND event_id = $2",
        )
        .bind(token_hash)
        .bind(event_id)
        .execute(pool)
        .await
        .map(|r| r.rows_affected()))?;
        Ok(deleted == 1)
    }
}

/// A change an organiser makes to their event; `None` leaves a field as it is.
#[derive(Clone, Debug, Default)]
pub struct EventChange {
    pub name: Option<String>,
    pub uploads_open: Option<bool>,
    pub guest_quota_bytes: Option<i64>,
    pub storage_cap_bytes: Option<i64>,
    /// The host modes; `gallery_opens_at: Some(None)` clears the time.
    pub review_uploads: Option<bool>,
    pub gallery: Option<Gallery>,
    pub gallery_opens_at: Option<Option<DateTime<Utc>>>,
}

impl Tx {
    /// Inserts the event; `Ok(false)` when its slug is already taken.
    pub async fn insert_event(&mut self, e: &EventRow) -> sqlx::Result<bool> {
        let inserted = on_tx!(self, tx => sqlx::query(
            "INSERT INTO events (id, slug, name, join_token, organiser_password_hash, guest_quota_bytes, uploads_open, created_at,
                                 storage_cap_bytes, used_bytes, name_chosen)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
             ON CONFLICT (slug) DO NOTHING",
        )
        .bind(e.id)
        .bind(&e.slug)
        .bind(&e.name)
        .bind(&e.join_token)
        .bind(&e.organiser_password_hash)
        .bind(e.guest_quota_bytes)
        .bind(e.uploads_open)
        .bind(e.created_at)
        .bind(e.storage_cap_bytes)
        .bind(e.used_bytes)
        .bind(e.name_chosen)
        .execute(&mut **tx)
        .await
        .map(|r| r.rows_affected()))?;
        Ok(inserted == 1)
    }

    pub async fn update_event(&mut self, id: Uuid, change: &EventChange) -> sqlx::Result<Option<EventRow>> {
        let updated = on_tx!(self, tx => sqlx::query(
            "UPDATE events SET name = COALESCE($2, name), name_chosen = name_chosen OR $2 IS NOT NULL, uploads_open = COALESCE($3, uploads_open),
                               guest_quota_bytes = COALESCE($4, guest_quota_bytes),
                               storage_cap_bytes = COALESCE($5, storage_cap_bytes)
             WHERE id = $1 AND deleted_at IS NULL",
        )
        .bind(id)
        .bind(&change.name)
        .bind(change.uploads_open)
        .bind(change.guest_quota_bytes)
        .bind(change.storage_cap_bytes)
        .execute(&mut **tx)
        .await
        .map(|r| r.rows_affected()))?;
        if updated == 0 {
            return Ok(None);
        }
        self.update_host_modes(id, change).await?;
        on_tx!(self, tx => sqlx::query_as(concat!(event_select!(), "WHERE e.id = $1")).bind(id).fetch_optional(&mut **tx).await)
    }

    /// The host modes' part of `update_event`: its own statement, so they stay apart from the rest.
    async fn update_host_modes(&mut self, id: Uuid, change: &EventChange) -> sqlx::Result<()> {
        if change.review_uploads.is_none() && change.gallery.is_none() && change.gallery_opens_at.is_none() {
            return Ok(());
        }
        on_tx!(self, tx => sqlx::query(
            "UPDATE events SET review_uploads = COALESCE($2, review_uploads), gallery = COALESCE($3, gallery),
                               gallery_opens_at = CASE WHEN $4 THEN $5 ELSE gallery_opens_at END
             WHERE id = $1",
        )
        .bind(id)
        .bind(change.review_uploads)
        .bind(change.gallery.map(Gallery::as_str))
        .bind(change.gallery_opens_at.is_some())
        .bind(change.gallery_opens_at.flatten())
        .execute(&mut **tx)
        .await
        .map(|r| r.rows_affected()))?;
        Ok(())
    }
}
