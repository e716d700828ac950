//! Resumable uploads: a guest's file sent in pieces over as many requests as the connection
//! needs, keyed by the same `client_upload_id` as a one-request upload and stored by the same
//! use case (`ingest`) once whole. This module knows the resource's life, not HTTP:
//!
//! - **Creation** looks the key up first (a stored upload is replayed, this guest's open
//!   resource for the key is found again), then the new-upload checks: the declared length must
//!   fit in the guest's quota and in the event's storage cap, each with the open resources
//!   reserved (read and reserved in one transaction under the event's lock), and in the disk's
//!   free space above its floor. One open resource per key (a unique index): two creations
//!   racing end with one resource.
//! - **Appending** takes the resource's lease (two requests never write at once; the second is
//!   told `Busy`), checks the offset, and streams the bytes to `blobs::partial`, recording each
//!   step that made bytes safe. A request cut short records what arrived, and so does one that
//!   finds the disk below its free-space floor (checked before the first byte and every few
//!   MiB): it is told `DiskFull` with the offset to resume from later. The file's head is
//!   checked as soon as it is there; a refused file cancels the resource. The last byte (and
//!   the client saying so, or, for drafts 03–05, the offset reaching the length) hands the file
//!   to `Ingest::complete_assembled`, which completes the resource with the row.
//! - **Completion** holds the lease too, renewed while the file is assembled, read and
//!   committed; the commit is fenced by it (`Tx::complete_resumable`), so a request that lost
//!   the lease commits nothing and answers from what is stored. Meanwhile the resource is
//!   *assembled*: `HEAD` says so (`Status::Completing`), a retry is told `Busy`, and so is a
//!   cancellation. A failure inside (the database, the store) keeps the assembled bytes and the
//!   resource open for a retry; only a refusal of the file cancels it.
//! - **Cancellation** and **expiry** leave a row the sweep (`jobs::resumable_sweep`) finds
//!   until its bytes are gone; a completed resource stays as a tombstone that answers retries
//!   with the stored upload until it expires.
//!
//! The append runs as its own task: a client that hangs up drops the request, not the record
//! of the bytes it sent.

mod append;
mod complete;

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::blobs::BlobStore;
use crate::db::Db;
use crate::db::guests::GuestRow;
use crate::db::resumable::{ResumableRow, Room};
use crate::db::uploads::UploadRow;
use crate::domain::{Caption, ClientUploadId, FileName};
use crate::error::coded;
use crate::ingest::{Ingest, IngestError};

pub use append::{AppendOutcome, Appended, Piece};

/// How long a request waits for another one's lease to end before it is told `Busy`, and
/// how often it looks meanwhile.
const WAIT_FOR_LEASE: Duration = Duration::from_secs(2);
const LEASE_POLL: Duration = Duration::from_millis(50);

/// Drafts 03 to 05 (interop versions 5 and 6): the offset reaching the length completes.
pub fn completes_at_length(interop: Option<i32>) -> bool {
    matches!(interop, Some(5 | 6))
}

#[derive(Debug)]
pub struct Resumable {
    db: Db,
    blobs: BlobStore,
    ingest: Arc<Ingest>,
    expiry: Duration,
    /// How long a request appending to or completing a resource holds it without renewing
    /// (`--resumable-lease-s`); it renews every third of it, so no byte is written and nothing
    /// committed after another request could have taken over.
    lease: Duration,
}

/// What a client asks to create.
#[derive(Debug)]
pub struct Creation {
    pub key: ClientUploadId,
    pub filename: FileName,
    pub caption: Option<Caption>,
    pub length: u64,
    pub interop: Option<i32>,
}

/// What a creation came to.
#[derive(Debug)]
pub enum Created {
    /// A new resource.
    New(ResumableRow),
    /// This guest's open resource for the key, found again.
    Existing(ResumableRow),
    /// The key's upload is stored already: its live state.
    Stored(UploadRow),
}

coded! {
/// Why a request on a resource was not served: named as the contract names it, with its code
/// beside it and its text the problem's `detail`.
#[derive(Debug, thiserror::Error)]
pub enum ResumableError {
    #[error("not found")]
    NotFound => NotFound,
    #[error("another request is appending to this upload")]
    UploadBusy { offset: u64 } => UploadBusy,
    #[error("the upload's offset is {expected}, not {provided}")]
    UploadOffsetMismatch { expected: u64, provided: u64 } => UploadOffsetMismatch,
    #[error("{0}")]
    InconsistentUploadLength(String) => InconsistentUploadLength,
    /// The client went away mid-request: nobody reads the answer.
    #[error("the request was cut short; its bytes are kept")]
    Cut => InvalidRequest,
    /// The photo store's disk is below its free-space floor: the bytes up to `offset` are
    /// kept, the resource stays open for the client to resume once there is room.
    #[error("the server is running out of disk space; uploads are paused until its operator makes room")]
    InsufficientStorage { offset: u64 } => InsufficientStorage,
}
wraps {
    #[error(transparent)]
    Refused(#[from] IngestError),
}
}

impl From<anyhow::Error> for ResumableError {
    fn from(e: anyhow::Error) -> Self {
        ResumableError::Refused(IngestError::Internal(e))
    }
}

impl Resumable {
    pub fn new(db: Db, blobs: BlobStore, ingest: Arc<Ingest>, expiry: Duration, lease: Duration) -> Self {
        Self { db, blobs, ingest, expiry, lease }
    }

    /// Whether this server's store keeps partial uploads.
    pub fn available(&self) -> bool {
        self.blobs.resumable_part_size(0).is_some()
    }

    pub fn expiry(&self) -> Duration {
        self.expiry
    }

    /// The most bytes a resource may declare.
    pub fn max_length(&self) -> u64 {
        self.ingest.limits().max_file_bytes()
    }

    fn lease_end(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        now + chrono::Duration::from_std(self.lease).unwrap_or(chrono::Duration::seconds(60))
    }

    /// How often a request holding a lease renews it.
    fn renew_every(&self) -> Duration {
        crate::lease::renew_every(self.lease)
    }

    fn expires_from(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        now + chrono::Duration::from_std(self.expiry).unwrap_or(chrono::Duration::days(1))
    }

    /// Creates the resource, or finds what the key already names.
    pub async fn create(&self, guest: GuestRow, creation: Creation) -> Result<Created, IngestError> {
        let upload = self.ingest.begin(guest.clone(), Some(creation.key)).await?;
        if let Some(row) = upload.known_replay() {
            return Ok(Created::Stored(row));
        }
        if let Some(existing) = self.open_for(&guest, &creation).await? {
            return Ok(Created::Existing(existing));
        }
        let Some(part_size) = self.blobs.resumable_part_size(creation.length) else {
            return Err(anyhow::anyhow!("this store keeps no partial uploads").into());
        };
        self.ingest.check_new(&guest, creation.length)?;
        // Read before the event's lock is taken, told after the quota and the cap.
        let disk = self.ingest.disk_room(creation.length, false).await;
        let now = Utc::now();
        let row = ResumableRow {
            id: Uuid::now_v7(),
            event_id: guest.event_id,
            guest_id: guest.id,
            client_upload_id: creation.key.uuid(),
            filename: creation.filename.as_str().to_owned(),
            caption: creation.caption.clone().map(Caption::into_string),
            length: i64::try_from(creation.length).unwrap_or(i64::MAX),
            upload_offset: 0,
            interop: creation.interop,
            state: "open".into(),
            multipart_id: None,
            part_size: i64::try_from(part_size).unwrap_or(i64::MAX),
            parts: "[]".into(),
            tail_bytes: 0,
            lock_until: None,
            created_at: now,
            expires_at: self.expires_from(now),
            assembled: false,
        };
        // The room and the reservation in one transaction under the event's lock: creations
        // racing (one guest's, or many guests') cannot each find the same room free.
        let mut tx = self.db.begin().await?;
        let refusal = match tx.resumable_room(guest.id, guest.event_id, now).await? {
            Some(room) => no_room(&room, creation.length).or(disk),
            None => Some(IngestError::EventStorageFull { cap_bytes: 0, remaining_bytes: 0 }),
        };
        if let Some(refusal) = refusal {
            tx.rollback().await?;
            return Err(refusal);
        }
        let inserted = tx.insert_resumable(&row).await?;
        tx.commit().await?;
        if inserted {
            return Ok(Created::New(row));
        }
        // Another creation with the key won the race: its resource is this one.
        match self.open_for(&guest, &creation).await? {
            Some(existing) => Ok(Created::Existing(existing)),
            None => Err(anyhow::anyhow!("the resource that won key {} is gone", creation.key.uuid()).into()),
        }
    }

    /// The key's open resource, when this guest has one for the same file.
    async fn open_for(&self, guest: &GuestRow, creation: &Creation) -> Result<Option<ResumableRow>, IngestError> {
        let Some(row) = self.db.open_resumable_by_key(creation.key.uuid()).await? else {
            return Ok(None);
        };
        if row.guest_id != guest.id {
            return Err(IngestError::ClientUploadIdConflict);
        }
        if row.filename != creation.filename.as_str() {
            return Err(IngestError::ClientUploadIdReused(format!(
                "it was used for “{}”, not “{}”",
                row.filename,
                creation.filename.as_str()
            )));
        }
        if row.caption.as_deref() != creation.caption.as_ref().map(Caption::as_str) {
            return Err(IngestError::ClientUploadIdReused("it was used with another caption".into()));
        }
        Ok(Some(row))
    }

    /// The guest's resource, live: open (with its offset), being completed, or stored.
    pub async fn status(&self, guest: &GuestRow, id: Uuid) -> Result<Status, ResumableError> {
        let mut row = self.own(guest, id).await?;
        // An append running (or cut a moment ago and writing its last bytes down): its offset
        // is worth waiting a little for, so the client does not send bytes the server has. A
        // completion is not: the client is told at once to ask again later.
        let waiting_since = std::time::Instant::now();
        while row.state == "open" && !row.assembled && held(&row) && waiting_since.elapsed() < WAIT_FOR_LEASE {
            tokio::time::sleep(LEASE_POLL).await;
            row = self.own(guest, id).await?;
        }
        match row.state.as_str() {
            "completed" => Ok(Status::Stored(self.stored(guest, &row).await?)),
            "open" if row.expires_at > Utc::now() && row.assembled && held(&row) => Ok(Status::Completing(row)),
            "open" if row.expires_at > Utc::now() => Ok(Status::Open(row)),
            _ => Err(ResumableError::NotFound),
        }
    }

    /// The guest cancels: the bytes go (now, or by the sweep should that fail). Refused while a
    /// request completes the resource (its photo may be stored any moment), and when it was
    /// stored meanwhile: never an answer that says cancelled while the photo is kept. A
    /// resource found stored already is not touched (its photo is deleted as an upload).
    pub async fn cancel(&self, guest: &GuestRow, id: Uuid) -> Result<(), ResumableError> {
        let row = self.own(guest, id).await?;
        if row.state == "completed" {
            // Stored: cancelling is a delete of the upload, which is another request.
            return Ok(());
        }
        if self.db.cancel_resumable(id, Utc::now(), None).await? {
            crate::jobs::resumable_sweep::remove(&self.db, &self.blobs, &row).await;
            return Ok(());
        }
        match self.own(guest, id).await? {
            now if now.state == "completed" || (now.state == "open" && now.assembled) => {
                Err(ResumableError::UploadBusy { offset: u64::try_from(now.upload_offset).unwrap_or(0) })
            }
            _ => Ok(()),
        }
    }

    /// The resource, if it is this guest's.
    async fn own(&self, guest: &GuestRow, id: Uuid) -> Result<ResumableRow, ResumableError> {
        match self.db.resumable_by_id(id).await? {
            Some(row) if row.guest_id == guest.id => Ok(row),
            _ => Err(ResumableError::NotFound),
        }
    }

    /// A completed resource's upload, as a replay sees it.
    async fn stored(&self, guest: &GuestRow, row: &ResumableRow) -> Result<UploadRow, ResumableError> {
        let key = ClientUploadId::from_uuid(row.client_upload_id).ok_or(ResumableError::NotFound)?;
        let upload = self.ingest.begin(guest.clone(), Some(key)).await?;
        upload.known_replay().ok_or(ResumableError::NotFound)
    }
}

/// A resource as `HEAD` shows it.
#[derive(Debug)]
pub enum Status {
    Open(ResumableRow),
    /// Every byte is there and a request is storing the photo: ask again shortly.
    Completing(ResumableRow),
    Stored(UploadRow),
}

/// Whether a request holds the resource's lease now.
fn held(row: &ResumableRow) -> bool {
    row.lock_until.is_some_and(|until| until > Utc::now())
}

/// Why a new resource of `length` bytes does not fit: the guest's quota, then the event's cap,
/// each with what its open resources reserve counted as used.
fn no_room(room: &Room, length: u64) -> Option<IngestError> {
    let length = i64::try_from(length).unwrap_or(i64::MAX);
    let quota_left = room.quota_bytes - room.used_bytes - room.reserved_bytes;
    if length > quota_left {
        return Some(IngestError::QuotaExceeded { quota_bytes: room.quota_bytes, remaining_bytes: quota_left.max(0) });
    }
    let event_left = room.event_cap_bytes - room.event_used_bytes - room.event_reserved_bytes;
    if length > event_left {
        return Some(IngestError::EventStorageFull {
            cap_bytes: room.event_cap_bytes,
            remaining_bytes: event_left.max(0),
        });
    }
    None
}
