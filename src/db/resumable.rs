//! Resumable upload resources: creation (one open resource per key, with the room it needs
//! read under the event's lock), the lease an appending request holds, progress fenced by that
//! lease, completion (in the upload's own transaction, fenced by the lease too), cancellation,
//! and what the cleanup sweep finds.
//!
//! An open, unexpired resource reserves its declared length against its guest's quota and its
//! event's storage cap. Nothing is written for that: the reservation is the row itself, so it
//! ends exactly when the row stops being open or its expiry passes — completed in the upload's
//! transaction (which charges the stored bytes instead), cancelled, or expired.

use chrono::{DateTime, Utc};
use sqlx::FromRow;
use uuid::Uuid;

use super::lease::{LeaseTable, lease_write};
use super::{Db, Tx, on_db, on_tx};

/// A request appending to or completing a resource, or the sweep removing it, holds its lease.
const LEASE: LeaseTable =
    LeaseTable { table: "resumable_uploads", key: &["id"], token: "lock_token", until: "lock_until" };

#[derive(Clone, Debug, FromRow)]
pub struct ResumableRow {
    pub id: Uuid,
    pub event_id: Uuid,
    pub guest_id: Uuid,
    pub client_upload_id: Uuid,
    pub filename: String,
    pub caption: Option<String>,
    pub length: i64,
    pub upload_offset: i64,
    pub interop: Option<i32>,
    pub state: String,
    pub multipart_id: Option<String>,
    pub part_size: i64,
    pub parts: String,
    pub tail_bytes: i64,
    pub lock_until: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    /// Every byte is at the upload's key (`BlobStore::upload_key`); the commit is next.
    pub assembled: bool,
}

/// Where an appending request got to; written only while its lease holds.
#[derive(Clone, Debug)]
pub struct Progress {
    pub offset: i64,
    pub multipart_id: Option<String>,
    /// JSON array of the S3 parts' ids.
    pub parts: String,
    pub tail_bytes: i64,
}

/// What a new resource must fit in, read with the event's storage locked: the guest's quota and
/// the event's cap, what is stored against each, and what their open resources reserve.
#[derive(Clone, Copy, Debug, FromRow)]
pub struct Room {
    pub quota_bytes: i64,
    pub used_bytes: i64,
    pub reserved_bytes: i64,
    pub event_cap_bytes: i64,
    pub event_used_bytes: i64,
    pub event_reserved_bytes: i64,
}

/// A scalar subquery: the bytes the open, unexpired resources whose `$column` is `$owner`
/// reserve, `$now` being the parameter that holds the time.
macro_rules! reserved_by {
    ($column:literal, $owner:literal, $now:literal) => {
        concat!(
            "(SELECT CAST(COALESCE(SUM(r.length), 0) AS BIGINT) FROM resumable_uploads r WHERE r.",
            $column,
            " = ",
            $owner,
            " AND r.state = 'open' AND r.expires_at > ",
            $now,
            ")"
        )
    };
}
pub(crate) use reserved_by;

/// The columns of `ResumableRow`.
macro_rules! columns {
    () => {
        "id, event_id, guest_id, client_upload_id, filename, caption, length, upload_offset, interop, state, \
         multipart_id, part_size, parts, tail_bytes, lock_until, created_at, expires_at, assembled"
    };
}

impl Db {
    pub async fn open_resumable_by_key(&self, client_upload_id: Uuid) -> sqlx::Result<Option<ResumableRow>> {
        on_db!(self, pool => sqlx::query_as(concat!(
            "SELECT ", columns!(), " FROM resumable_uploads WHERE client_upload_id = $1 AND state = 'open'"
        )).bind(client_upload_id).fetch_optional(pool).await)
    }

    pub async fn resumable_by_id(&self, id: Uuid) -> sqlx::Result<Option<ResumableRow>> {
        on_db!(self, pool => sqlx::query_as(concat!("SELECT ", columns!(), " FROM resumable_uploads WHERE id = $1")).bind(id).fetch_optional(pool).await)
    }

    /// Bytes the event's open resources reserve now.
    pub async fn event_reserved_bytes(&self, event_id: Uuid, now: DateTime<Utc>) -> sqlx::Result<i64> {
        let sum: Option<i64> = on_db!(self, pool => sqlx::query_scalar(
            concat!("SELECT ", reserved_by!("event_id", "$1", "$2"))
        )
        .bind(event_id)
        .bind(now)
        .fetch_one(pool)
        .await)?;
        Ok(sum.unwrap_or(0))
    }

    /// Takes the lease of an open, unexpired resource that no request holds; the row as it is
    /// then, or `None` (read the row to tell why).
    pub async fn lock_resumable(
        &self,
        id: Uuid,
        token: Uuid,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> sqlx::Result<Option<ResumableRow>> {
        if !self.claim_lease(&LEASE, &id, token, (now, until), "state = 'open' AND expires_at > $4").await? {
            return Ok(None);
        }
        self.resumable_by_id(id).await
    }

    /// Records progress and renews the lease and the expiry; `false` when the lease is no
    /// longer this request's (taken over, or the resource cancelled): it must stop writing.
    pub async fn resumable_progress(
        &self,
        id: Uuid,
        token: Uuid,
        progress: &Progress,
        until: DateTime<Utc>,
        expires_at: DateTime<Utc>,
    ) -> sqlx::Result<bool> {
        let set =
            "upload_offset = $3, multipart_id = $4, parts = $5, tail_bytes = $6, lock_until = $7, expires_at = $8";
        let updated = lease_write!(db self, LEASE.fenced(set, "state = 'open'"), &id, token,
            progress.offset, &progress.multipart_id, &progress.parts, progress.tail_bytes, until, expires_at)?;
        Ok(updated == 1)
    }

    /// Gives the lease back.
    pub async fn unlock_resumable(&self, id: Uuid, token: Uuid) -> sqlx::Result<()> {
        self.release_lease(&LEASE, &id, token).await?;
        Ok(())
    }

    /// Cancels an open resource (the cleanup removes its bytes); `false` when it was not open,
    /// or is being completed (assembled, its lease held at `now`) by another request than
    /// `holder`. A request appending to it finds its lease gone at its next step and stops.
    pub async fn cancel_resumable(&self, id: Uuid, now: DateTime<Utc>, holder: Option<Uuid>) -> sqlx::Result<bool> {
        let updated = on_db!(self, pool => sqlx::query(
            "UPDATE resumable_uploads SET state = 'cancelled', expires_at = $2, lock_token = NULL, lock_until = NULL
             WHERE id = $1 AND state = 'open'
               AND (NOT (assembled AND lock_until IS NOT NULL AND lock_until >= $2) OR lock_token = $3)",
        )
        .bind(id)
        .bind(now)
        .bind(holder)
        .execute(pool)
        .await
        .map(|r| r.rows_affected()))?;
        Ok(updated == 1)
    }

    /// Every byte is at the upload's key: recorded with the lease renewed; `false` when the
    /// lease is no longer this request's.
    pub async fn resumable_assembled(
        &self,
        id: Uuid,
        token: Uuid,
        until: DateTime<Utc>,
        expires_at: DateTime<Utc>,
    ) -> sqlx::Result<bool> {
        let set = "assembled = TRUE, upload_offset = length, tail_bytes = 0, lock_until = $3, expires_at = $4";
        let updated = lease_write!(db self, LEASE.fenced(set, "state = 'open'"), &id, token, until, expires_at)?;
        Ok(updated == 1)
    }

    /// Renews a lease (a completion at work); `false` when it is no longer this request's.
    pub async fn renew_resumable(&self, id: Uuid, token: Uuid, until: DateTime<Utc>) -> sqlx::Result<bool> {
        self.renew_lease(&LEASE, &id, token, until, "state = 'open'").await
    }

    /// Resources whose time is up: cancelled or expired ones (bytes to remove) and completed
    /// tombstones, none held by a request.
    pub async fn resumables_to_sweep(&self, now: DateTime<Utc>, limit: i64) -> sqlx::Result<Vec<ResumableRow>> {
        on_db!(self, pool => sqlx::query_as(concat!(
            "SELECT ", columns!(), " FROM resumable_uploads
             WHERE expires_at <= $1 AND (lock_until IS NULL OR lock_until < $1)
             ORDER BY expires_at LIMIT $2"
        )).bind(now).bind(limit).fetch_all(pool).await)
    }

    /// Takes a resource due for removal for the sweep (as a lease: should this instance die,
    /// another takes it again once it ends); `false` when a request or another sweep has it.
    pub async fn claim_resumable_removal(
        &self,
        id: Uuid,
        token: Uuid,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> sqlx::Result<bool> {
        let set = "state = CASE WHEN state = 'completed' THEN state ELSE 'cancelled' END";
        let taken = lease_write!(db self, LEASE.claim(set, "expires_at <= $4"), &id, token, until, now)?;
        Ok(taken == 1)
    }

    /// The row goes once its bytes are gone.
    pub async fn delete_resumable(&self, id: Uuid, token: Uuid) -> sqlx::Result<()> {
        lease_write!(db self, LEASE.fenced_delete(""), &id, token)?;
        Ok(())
    }

    /// After another attempt stored the key's upload: the resource answers with it from now
    /// on. `false` when the lease is no longer this request's (nothing is changed).
    pub async fn complete_resumable(&self, lease: &ResumableLease, expires_at: DateTime<Utc>) -> sqlx::Result<bool> {
        let mut tx = self.begin().await?;
        if !tx.complete_resumable(lease, expires_at).await? {
            tx.rollback().await?;
            return Ok(false);
        }
        tx.commit().await?;
        Ok(true)
    }
}

impl Tx {
    /// Locks the event's storage (`lock_event_storage`) and reads what a new resource of the
    /// guest must fit in; `None` when the guest or the event is gone. Creations and the
    /// charges of one event queue here, so none of them counts without the others.
    pub async fn resumable_room(
        &mut self,
        guest_id: Uuid,
        event_id: Uuid,
        now: DateTime<Utc>,
    ) -> sqlx::Result<Option<Room>> {
        self.lock_event_storage(event_id).await?;
        on_tx!(self, tx => sqlx::query_as(concat!(
            "SELECT e.guest_quota_bytes AS quota_bytes, g.used_bytes, ",
            reserved_by!("guest_id", "g.id", "$2"), " AS reserved_bytes,
                    e.storage_cap_bytes AS event_cap_bytes, e.used_bytes AS event_used_bytes, ",
            reserved_by!("event_id", "e.id", "$2"), " AS event_reserved_bytes
             FROM guests g JOIN events e ON e.id = g.event_id AND e.deleted_at IS NULL
             WHERE g.id = $1"
        ))
        .bind(guest_id)
        .bind(now)
        .fetch_optional(&mut **tx)
        .await)
    }

    /// Creates the resource, after `resumable_room` said it fits; `false` when the key has an
    /// open one already (read it with `open_resumable_by_key` once this transaction ended).
    pub async fn insert_resumable(&mut self, row: &ResumableRow) -> sqlx::Result<bool> {
        let inserted = on_tx!(self, tx => sqlx::query(
            "INSERT INTO resumable_uploads (id, event_id, guest_id, client_upload_id, filename, caption, length,
                 upload_offset, interop, state, part_size, created_at, expires_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, 0, $8, 'open', $9, $10, $11)
             ON CONFLICT (client_upload_id) WHERE state = 'open' DO NOTHING",
        )
        .bind(row.id)
        .bind(row.event_id)
        .bind(row.guest_id)
        .bind(row.client_upload_id)
        .bind(&row.filename)
        .bind(&row.caption)
        .bind(row.length)
        .bind(row.interop)
        .bind(row.part_size)
        .bind(row.created_at)
        .bind(row.expires_at)
        .execute(&mut **tx)
        .await
        .map(|r| r.rows_affected()))?;
        Ok(inserted == 1)
    }

    /// In the upload's own transaction: the resource is completed with the row, by the
    /// request holding its lease, if it is still open. `false` otherwise (taken over, cancelled
    /// or completed by another request): the caller rolls back, and the holder decides.
    pub async fn complete_resumable(
        &mut self,
        lease: &ResumableLease,
        expires_at: DateTime<Utc>,
    ) -> sqlx::Result<bool> {
        let set = "state = 'completed', lock_token = NULL, lock_until = NULL, expires_at = $3";
        let updated = lease_write!(tx self, LEASE.fenced(set, "state = 'open'"), &lease.id, lease.token, expires_at)?;
        Ok(updated == 1)
    }
}

/// A resource and the token of the request holding its lease: what fences its writes.
#[derive(Clone, Copy, Debug)]
pub struct ResumableLease {
    pub id: Uuid,
    pub token: Uuid,
}
