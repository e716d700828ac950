//! Guests and their storage quota. A guest's quota is the event's `guest_quota_bytes`, read
//! live, so an organiser who raises it raises it for everyone who already joined. The event's
//! own total (`storage_cap_bytes`) is charged and refunded here too, beside the guest's.

use chrono::{DateTime, Utc};
use sqlx::FromRow;
use uuid::Uuid;

use super::{Db, Tx, on_db, on_tx};
use crate::domain::{Gallery, UploadWindow, WindowState};

#[derive(Clone, Debug, FromRow)]
pub struct GuestRow {
    pub id: Uuid,
    pub event_id: Uuid,
    pub event_slug: String,
    pub display_name: String,
    pub used_bytes: i64,
    pub quota_bytes: i64,
    pub uploads_open: bool,
    /// The event's total for all guests, and what its photos take (as read with the guest).
    pub event_storage_cap_bytes: i64,
    pub event_used_bytes: i64,
    /// The organiser blocked the guest: new uploads, likes and comments are refused.
    pub blocked: bool,
    /// The event's upload window and whether guests may save each other's originals.
    pub uploads_open_from: Option<DateTime<Utc>>,
    pub uploads_open_until: Option<DateTime<Utc>>,
    pub guest_downloads: bool,
    /// Whose photos the event's guests see, and from when (as read with the guest: a guest's
    /// own gallery is listed without reading the event again).
    #[sqlx(try_from = "String")]
    pub event_gallery: Gallery,
    pub event_gallery_opens_at: Option<DateTime<Utc>>,
}

impl GuestRow {
    /// Why a new upload by this guest is refused now, if it is: the organiser's switch, then
    /// the event's upload window.
    pub fn uploads_refused(&self, now: DateTime<Utc>) -> Option<UploadsShut> {
        if !self.uploads_open {
            return Some(UploadsShut::Closed);
        }
        let window = UploadWindow { from: self.uploads_open_from, until: self.uploads_open_until };
        match window.at(now) {
            WindowState::Open => None,
            WindowState::NotYet(opens_at) => Some(UploadsShut::NotYet(opens_at)),
            WindowState::Ended(closed_at) => Some(UploadsShut::Ended(closed_at)),
        }
    }
}

/// Why new uploads are refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UploadsShut {
    /// The organiser closed them.
    Closed,
    /// The upload window opens at this moment.
    NotYet(DateTime<Utc>),
    /// The upload window closed at this moment.
    Ended(DateTime<Utc>),
}

macro_rules! guest_select {
    () => {
        "SELECT g.id, g.event_id, e.slug AS event_slug, g.display_name, g.used_bytes,
                e.guest_quota_bytes AS quota_bytes, e.uploads_open,
                e.storage_cap_bytes AS event_storage_cap_bytes, e.used_bytes AS event_used_bytes,
                e.uploads_open_from, e.uploads_open_until, e.guest_downloads,
                e.gallery AS event_gallery, e.gallery_opens_at AS event_gallery_opens_at,
                g.blocked_at IS NOT NULL AS blocked
         FROM guests g JOIN events e ON e.id = g.event_id AND e.deleted_at IS NULL "
    };
}

impl Db {
    pub async fn insert_guest(
        &self,
        id: Uuid,
        event_id: Uuid,
        display_name: &str,
        token_hash: &[u8],
    ) -> sqlx::Result<()> {
        on_db!(self, pool => sqlx::query(
            "INSERT INTO guests (id, event_id, display_name, token_hash, used_bytes, created_at) VALUES ($1, $2, $3, $4, 0, $5)",
        )
        .bind(id)
        .bind(event_id)
        .bind(display_name)
        .bind(token_hash)
        .bind(Utc::now())
        .execute(pool)
        .await
        .map(|r| r.rows_affected()))?;
        Ok(())
    }

    pub async fn guest_by_token_hash(&self, token_hash: &[u8]) -> sqlx::Result<Option<GuestRow>> {
        on_db!(self, pool => sqlx::query_as(concat!(guest_select!(), "WHERE g.token_hash = $1"))
            .bind(token_hash)
            .fetch_optional(pool)
            .await)
    }

    pub async fn guest_by_id(&self, id: Uuid) -> sqlx::Result<Option<GuestRow>> {
        on_db!(self, pool => sqlx::query_as(concat!(guest_select!(), "WHERE g.id = $1"))
            .bind(id)
            .fetch_optional(pool)
            .await)
    }

    /// How many of the guest's uploads exist (deleted ones do not count).
    pub async fn guest_upload_count(&self, guest_id: Uuid) -> sqlx::Result<i64> {
        on_db!(self, pool => sqlx::query_scalar(
            "SELECT COUNT(*) FROM uploads WHERE guest_id = $1 AND deleted_at IS NULL",
        )
        .bind(guest_id)
        .fetch_one(pool)
        .await)
    }
}

impl Tx {
    /// Charges `bytes` to the guest unless that would pass the event's quota; the guard in
    /// the `WHERE` makes two concurrent charges unable to overshoot together.
    /// `Ok(false)`: over quota, nothing changed.
    pub async fn charge_quota(&mut self, guest_id: Uuid, bytes: i64) -> sqlx::Result<bool> {
        let rows = on_tx!(self, tx => sqlx::query(
            "UPDATE guests SET used_bytes = used_bytes + $2
             WHERE id = $1
               AND used_bytes + $2 <= (SELECT guest_quota_bytes FROM events WHERE events.id = guests.event_id)",
        )
        .bind(guest_id)
        .bind(bytes)
        .execute(&mut **tx)
        .await
        .map(|r| r.rows_affected()))?;
        Ok(rows == 1)
    }

    /// Charges `bytes` to the event unless that would pass its storage cap, counting what its
    /// open resumable uploads reserve (a resource completed earlier in this transaction no
    /// longer does: its bytes are these), and commits. Guarded like the guest's charge, and made
    /// after it in the same transaction (every transaction that touches both rows takes the
    /// guest's first, so two of them cannot deadlock). `Ok(false)`: the event is full, the
    /// transaction rolled back. Also for an event deleted meanwhile: an upload committing while
    /// the admin deletes its event must not outlive it.
    pub async fn commit_charging_event(mut self, event_id: Uuid, bytes: i64) -> sqlx::Result<bool> {
        if let Tx::Postgres(tx) = &mut self {
            return commit_charging_event_pg(tx, event_id, bytes).await;
        }
        let rows = on_tx!(&mut self, tx => sqlx::query(concat!(
            "UPDATE events SET used_bytes = used_bytes + $2
             WHERE id = $1 AND deleted_at IS NULL AND used_bytes + $2 + ",
            super::resumable::reserved_by!("event_id", "$1", "$3"),
            " <= storage_cap_bytes"
        ))
        .bind(event_id)
        .bind(bytes)
        .bind(Utc::now())
        .execute(&mut **tx)
        .await
        .map(|r| r.rows_affected()))?;
        if rows == 1 {
            self.commit().await?;
            Ok(true)
        } else {
            self.rollback().await?;
            Ok(false)
        }
    }

    /// Holds the event's storage row until the transaction ends, before what is stored and
    /// reserved against its cap is read: a check and the write it allows then see every
    /// charge and reservation committed before them. PostgreSQL locks the row as the charge's
    /// `UPDATE` would (a subquery re-checked after a wait would still read the older snapshot);
    /// `NO KEY`, as that `UPDATE`'s own lock is, so that it does not wait for the key-share
    /// locks other uploads' inserts hold on the event (waiting for those, while they wait for
    /// the guest's row this transaction holds, deadlocks). SQLite's write transaction holds the
    /// whole database already.
    pub async fn lock_event_storage(&mut self, event_id: Uuid) -> sqlx::Result<()> {
        if let Tx::Postgres(tx) = self {
            sqlx::query("SELECT id FROM events WHERE id = $1 FOR NO KEY UPDATE")
                .bind(event_id)
                .fetch_optional(&mut **tx)
                .await?;
        }
        Ok(())
    }

    /// Gives `bytes` back to the guest and to their event (an upload was deleted).
    pub async fn refund_quota(&mut self, guest_id: Uuid, bytes: i64) -> sqlx::Result<()> {
        on_tx!(self, tx => sqlx::query(
            "UPDATE guests SET used_bytes = CASE WHEN used_bytes >= $2 THEN used_bytes - $2 ELSE 0 END WHERE id = $1",
        )
        .bind(guest_id)
        .bind(bytes)
        .execute(&mut **tx)
        .await
        .map(|r| r.rows_affected()))?;
        on_tx!(self, tx => sqlx::query(
            "UPDATE events SET used_bytes = CASE WHEN used_bytes >= $2 THEN used_bytes - $2 ELSE 0 END
             WHERE id = (SELECT event_id FROM guests WHERE id = $1)",
        )
        .bind(guest_id)
        .bind(bytes)
        .execute(&mut **tx)
        .await
        .map(|r| r.rows_affected()))?;
        Ok(())
    }
}

/// The event's row is the one lock every upload of the event waits for, from its charge to its
/// commit: on PostgreSQL the lock, the charge and the commit go in one message, so the lock is
/// held for no round trip to Confetti at all (at the burst, uploads waited 39–83 ms on average
/// for it while it was held for two). The lock comes first, in its own statement, so that the
/// charge reads the reservations with a snapshot taken after it (`lock_event_storage`). A charge
/// that does not fit sets `used_bytes` below zero, which its `CHECK` refuses: the error ends the
/// message before its `COMMIT`, and the transaction is rolled back. The message opens a new,
/// empty transaction after its `COMMIT`, which the `Transaction` ends when dropped. A message of
/// several statements takes no parameters, so the values are written in: a UUID, a number and a
/// time, all made here, none from a client.
async fn commit_charging_event_pg(
    tx: &mut sqlx::Transaction<'static, sqlx::Postgres>,
    event_id: Uuid,
    bytes: i64,
) -> sqlx::Result<bool> {
    let sql = format!(
        concat!(
            "SELECT id FROM events WHERE id = '{event}' FOR NO KEY UPDATE;
             UPDATE events SET used_bytes = CASE
                 WHEN deleted_at IS NULL AND used_bytes + {bytes} + ",
            super::resumable::reserved_by!("event_id", "'{event}'", "'{now}'"),
            " <= storage_cap_bytes THEN used_bytes + {bytes} ELSE -1 END
             WHERE id = '{event}';
             COMMIT;
             BEGIN"
        ),
        event = event_id,
        bytes = bytes,
        now = Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
    );
    match sqlx::raw_sql(sqlx::AssertSqlSafe(sql)).execute(&mut **tx).await {
        Ok(_) => Ok(true),
        Err(sqlx::Error::Database(e)) if e.constraint() == Some("events_used_bytes_check") => Ok(false),
        Err(e) => Err(e),
    }
}
