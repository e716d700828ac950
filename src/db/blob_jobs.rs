//! The blob job queue: work on an upload's blobs that must follow a commit (finalize a new
//! original, remove a deleted upload's blobs). A job is written in the transaction whose commit
//! it follows, already claimed by the writer, which runs it right after the commit; a writer
//! that dies first (or fails) leaves it to the workers, which claim it when its lease ends.
//! The lease's end is kept in `run_after`, as for derivative jobs.

use std::marker::PhantomData;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::lease::{Job, KeyPart, LeaseKey, LeaseTable, Queue};
use super::{Db, Tx, on_db, on_tx};

/// What a job does to the upload's blobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlobJobKind {
    /// Move the original from its temporary key to its final one.
    Finalize,
    /// Remove every blob the upload has.
    Delete,
    /// Remove the thumb and preview made for an upload deleted while they were being made
    /// (its other blobs went with the delete).
    DeleteDerivatives,
}

impl BlobJobKind {
    pub fn as_str(self) -> &'static str {
        match self {
            BlobJobKind::Finalize => "finalize",
            BlobJobKind::Delete => "delete",
            BlobJobKind::DeleteDerivatives => "delete_derivatives",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        match text {
            "finalize" => Some(BlobJobKind::Finalize),
            "delete" => Some(BlobJobKind::Delete),
            "delete_derivatives" => Some(BlobJobKind::DeleteDerivatives),
            _ => None,
        }
    }
}

/// The queue: the oldest due job first.
pub const JOBS: Queue<BlobJob> = Queue {
    lease: LeaseTable { table: "blob_jobs", key: &["upload_id", "kind"], token: "claim", until: "run_after" },
    from: "blob_jobs j",
    due: "j.run_after <= $3",
    order: "j.run_after",
    job: PhantomData,
};

/// A job its holder may run until its lease ends.
#[derive(Clone, Copy, Debug)]
pub struct BlobJob {
    pub kind: BlobJobKind,
    pub event_id: Uuid,
    pub upload_id: Uuid,
    /// Including this one.
    pub attempts: i32,
    pub claim: Uuid,
}

impl LeaseKey for BlobJob {
    fn parts(&self) -> Vec<KeyPart<'_>> {
        vec![KeyPart::Uuid(self.upload_id), KeyPart::Text(self.kind.as_str())]
    }
}

impl Job for BlobJob {
    const RETURNING: &'static str = "upload_id, kind, event_id, attempts";
    type Row = (Uuid, String, Uuid, i32);

    fn from_row((upload_id, kind, event_id, attempts): Self::Row, claim: Uuid) -> Option<Self> {
        Some(BlobJob { kind: BlobJobKind::parse(&kind)?, event_id, upload_id, attempts, claim })
    }

    fn claim(&self) -> Uuid {
        self.claim
    }
}

impl Tx {
    /// Queues `kind` for the upload, claimed by the caller (instance `by`) until `lease_until`.
    /// A job of that kind still pending is claimed anew: the caller will do the whole of it.
    pub async fn queue_blob_job(
        &mut self,
        kind: BlobJobKind,
        event_id: Uuid,
        upload_id: Uuid,
        (by, lease_until): (Uuid, DateTime<Utc>),
    ) -> sqlx::Result<BlobJob> {
        let claim = Uuid::new_v4();
        let attempts: i32 = on_tx!(self, tx => sqlx::query_scalar(
            "INSERT INTO blob_jobs (upload_id, kind, event_id, attempts, run_after, claim, claimed_by, created_at)
             VALUES ($1, $2, $3, 1, $4, $5, $7, $6)
             ON CONFLICT (upload_id, kind)
             DO UPDATE SET claim = excluded.claim, claimed_by = excluded.claimed_by,
                           run_after = excluded.run_after, attempts = blob_jobs.attempts + 1
             RETURNING attempts",
        )
        .bind(upload_id)
        .bind(kind.as_str())
        .bind(event_id)
        .bind(lease_until)
        .bind(claim)
        .bind(Utc::now())
        .bind(by)
        .fetch_one(&mut **tx)
        .await)?;
        Ok(BlobJob { kind, event_id, upload_id, attempts, claim })
    }
}

impl Db {
    /// Whether the upload is deleted now (`false` too when there is no such row): a job that
    /// removes a deleted upload's bytes asks before it runs, as an undo may have restored it.
    pub async fn upload_is_deleted(&self, upload_id: Uuid) -> sqlx::Result<bool> {
        let deleted: Option<bool> = on_db!(self, pool => sqlx::query_scalar(
            "SELECT deleted_at IS NOT NULL FROM uploads WHERE id = $1",
        )
        .bind(upload_id)
        .fetch_optional(pool)
        .await)?;
        Ok(deleted.unwrap_or(false))
    }

    /// Jobs not done yet, due or not (for tests and `/metrics`).
    pub async fn pending_blob_jobs(&self) -> sqlx::Result<i64> {
        on_db!(self, pool => sqlx::query_scalar("SELECT COUNT(*) FROM blob_jobs").fetch_one(pool).await)
    }

    /// The ids of an event's uploads that are not deleted, or whose delete job is still
    /// pending (it may wait out an undo grace, and the job removes the blobs itself): their
    /// blobs must stay.
    pub async fn live_upload_ids(&self, event_id: Uuid) -> sqlx::Result<Vec<Uuid>> {
        on_db!(self, pool => sqlx::query_scalar(
            "SELECT id FROM uploads WHERE event_id = $1
               AND (deleted_at IS NULL OR id IN (SELECT upload_id FROM blob_jobs WHERE kind = 'delete'))",
        )
            .bind(event_id)
            .fetch_all(pool)
            .await)
    }
}
