//! The upload use case, in one place: from a guest's parts to one stored photo, or to a replay
//! of the photo a key already names. It knows nothing of HTTP: a transport hands it the parts
//! (`UploadParts`) and answers its refusals (`IngestError`, each with the contract's code).
//!
//! 1. A key the client named before any part (the `Idempotency-Key` header) is looked up when
//!    the upload begins: a known key is answered (replay, conflict, deleted) without storing
//!    anything, and the transport may answer it before the client sends the body at all.
//! 2. Parts are read in order. A key part is looked up as soon as it arrives (each key once,
//!    in `Upload::key_named`), so a retry's file bytes are skipped, never stored.
//! 3. A new file streams to the store while it is hashed, counted and sniffed; it stops early
//!    at `max_upload_bytes` (`max_video_bytes` once its first bytes say it is a video), at the
//!    guest's remaining quota, when the disk reaches its free-space floor (read before the
//!    first byte and every `DISK_CHECK_EVERY`), or as soon as a video container turns out
//!    damaged or its movie header, when it comes first, says it is too long (`receive`,
//!    `media::video::sniff`).
//!    Before its first byte is stored it is recorded as staged (instance, key, multipart upload id), so another
//!    instance can remove it should this one die (`staged`, `jobs::instances`). Its key is a
//!    temporary one, or in an S3 bucket (where a move is a copy) its final one.
//! 4. The header probe runs on the blocking pool: format from magic bytes, dimensions from the
//!    header, pixel bombs and cut-short files refused before anything is decoded (`store`); a
//!    video's duration, size and codec from its container's header (`video`).
//! 5. One transaction: `INSERT … ON CONFLICT (client_upload_id) DO NOTHING RETURNING id`. No row
//!    back means another attempt won: roll back, delete the temporary blob, replay the winner.
//!    A row back: charge the quota with a guarded `UPDATE`, commit.
//! 6. The same transaction ends the staged record and, for a temporary key, queues the move of
//!    the blob to its final key as a blob job; after the commit, `Ingest::finalize` runs it (a
//!    worker does, should the store fail or the process die first) and wakes the derivative
//!    workers.
//!
//! Every refusal leaves no row, no blob and no quota charge. A refusal of the file (too large,
//! over quota, not an image, …) waits until the parts ended: a key sent after the file can
//! still turn the request into a replay. A refusal of the request itself (a key that is not a
//! UUID, another guest's key, two keys) ends the reading at once, and so does a source that
//! gives up on a body longer than any upload may be — answered with a replay when the key is
//! known. What the source still holds is the transport's to drain.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use tracing::Instrument;
use uuid::Uuid;

use crate::blobs::BlobStore;
use crate::blocking::Blocking;
use crate::db::Db;
use crate::db::guests::GuestRow;
use crate::db::uploads::UploadRow;
use crate::domain::{Caption, ClientUploadId, FileName};
use crate::jobs::blob_jobs::BlobJobs;
use crate::jobs::derivatives::DerivativeQueue;

mod assembled;
mod error;
mod parts;
mod receive;
mod staged;
mod store;
mod video;

pub use assembled::{Assembled, HEAD_CHECK_BYTES, Pass};
pub use error::IngestError;
pub use parts::{Part, PartsError, UploadParts};
use receive::Received;
pub use staged::Staged;
pub use store::DISK_CHECK_EVERY;

/// The upload use case with exactly what it uses; built once, shared by every request.
#[derive(Debug)]
pub struct Ingest {
    db: Db,
    blobs: BlobStore,
    blocking: Blocking,
    limits: IngestLimits,
    /// Woken once a new upload's derivatives are queued.
    derivatives: Arc<DerivativeQueue>,
    /// Runs the move of a committed upload's blob to its final key.
    blob_jobs: BlobJobs,
    /// The instance receiving: named with each staged upload.
    instance: Uuid,
}

/// The operator's limits on uploads.
#[derive(Clone, Copy, Debug)]
pub struct IngestLimits {
    pub max_upload_bytes: u64,
    pub max_image_pixels: u64,
    /// Videos have their own size limit, and a duration limit.
    pub max_video_bytes: u64,
    pub max_video_seconds: u64,
    /// New files are refused while the photo store has less free space (0: no floor).
    pub min_free_bytes: u64,
    /// A photo put up for review queues the admin's webhook this long ahead (see
    /// `jobs::webhooks`).
    pub webhook_delay: Duration,
}

/// What an upload came to.
#[derive(Debug)]
pub enum Ingested {
    /// First attempt: stored now.
    Created(UploadRow),
    /// A later attempt with a known key: the live state of the upload it names.
    Replayed(UploadRow),
}

/// Pauses before reading a committed upload back again; then it is answered from the row
/// just written.
const READ_BACK_RETRIES: [Duration; 2] = [Duration::from_millis(50), Duration::from_millis(200)];

impl IngestLimits {
    /// The most bytes any file may have, photo or video: what a body may carry.
    pub fn max_file_bytes(&self) -> u64 {
        self.max_upload_bytes.max(self.max_video_bytes)
    }
}

impl Ingest {
    pub fn new(
        db: Db,
        blobs: BlobStore,
        blocking: Blocking,
        limits: IngestLimits,
        derivatives: Arc<DerivativeQueue>,
        blob_jobs: BlobJobs,
        instance: Uuid,
    ) -> Self {
        Self { db, blobs, blocking, limits, derivatives, blob_jobs, instance }
    }

    pub fn limits(&self) -> IngestLimits {
        self.limits
    }

    /// Step 1: an upload by `guest` begins, with the key it named up front, if any.
    pub async fn begin(self: &Arc<Self>, guest: GuestRow, key: Option<ClientUploadId>) -> Result<Upload, IngestError> {
        let mut upload = Upload {
            ingest: Arc::clone(self),
            guest,
            key: Key::Unknown,
            file: File::NotSeen,
            filename: None,
            caption: None,
        };
        if let Some(key) = key {
            upload.key = upload.look_up(key).await?;
        }
        Ok(upload)
    }
}

/// One upload while its parts arrive.
pub struct Upload {
    ingest: Arc<Ingest>,
    guest: GuestRow,
    key: Key,
    file: File,
    /// What the request declared; compared with a replay's upload.
    filename: Option<FileName>,
    caption: Option<Option<Caption>>,
}

/// What the upload's key says, decided once, when the key becomes known.
enum Key {
    /// No key named (yet): an upload without one is stored as it is.
    Unknown,
    /// A key no upload has: this is its first attempt.
    New(ClientUploadId),
    /// A key naming this guest's upload: this is a retry, answered with that upload.
    Replay(ClientUploadId, Box<UploadRow>),
}

/// What became of the file part.
enum File {
    NotSeen,
    /// The key names a stored upload: the bytes were skipped.
    Skipped,
    /// Streamed to the store, waiting for the commit.
    Stored(Box<Received>),
    /// Not stored, for this reason; told once the parts ended.
    Refused(IngestError),
}

/// Why the parts stopped being read before their end.
enum Stop {
    /// The source gave up on a body longer than any upload may be.
    CutShort,
    Refused(IngestError),
}

impl From<IngestError> for Stop {
    fn from(e: IngestError) -> Self {
        Stop::Refused(e)
    }
}

impl From<PartsError> for Stop {
    fn from(e: PartsError) -> Self {
        match e {
            PartsError::TooLarge => Stop::CutShort,
            PartsError::Malformed(why) => Stop::Refused(IngestError::InvalidMultipart(why)),
            PartsError::InvalidKey => Stop::Refused(IngestError::InvalidClientUploadId),
            PartsError::InvalidCaption(why) => Stop::Refused(IngestError::InvalidCaption(why)),
        }
    }
}

impl Upload {
    /// The upload the key named before any part, when it is this guest's: a client that has
    /// not sent its body yet need not send it.
    pub fn known_replay(&self) -> Option<UploadRow> {
        match &self.key {
            Key::Replay(_, row) => Some(UploadRow::clone(row)),
            Key::Unknown | Key::New(_) => None,
        }
    }

    /// Steps 2–6: reads the parts, then replays, refuses or stores.
    #[tracing::instrument(name = "upload", skip_all, fields(guest_id = %self.guest.id, event_id = %self.guest.event_id))]
    pub async fn run(mut self, parts: &mut impl UploadParts) -> Result<Ingested, IngestError> {
        match self.read(parts).await {
            Ok(()) => self.decide().await,
            Err(stop) => {
                let refusal = std::mem::replace(&mut self.file, File::NotSeen).discard().await;
                match (stop, self.key) {
                    // A known key is a replay even when its body turns out longer than any
                    // upload may be: a replay's bytes are thrown away unread.
                    (Stop::CutShort, Key::Replay(_, row)) => {
                        check_declared(self.filename.as_ref(), self.caption.as_ref(), &row)?;
                        Ok(Ingested::Replayed(*row))
                    }
                    // Over the size bound, a refusal found earlier (the quota, say) says more.
                    (Stop::CutShort, _) => Err(refusal
                        .unwrap_or(IngestError::FileTooLarge { limit_bytes: self.ingest.limits.max_upload_bytes })),
                    (Stop::Refused(refusal), _) => Err(refusal),
                }
            }
        }
    }

    async fn read(&mut self, parts: &mut impl UploadParts) -> Result<(), Stop> {
        while let Some(part) = parts.next_part().await? {
            match part {
                Part::Key(key) => self.key_named(key).await?,
                Part::Caption(caption) => self.caption = Some(caption),
                Part::File(name) => {
                    if self.filename.is_some() {
                        let why = "the request has more than one `file` part".into();
                        return Err(Stop::Refused(IngestError::InvalidMultipart(why)));
                    }
                    self.filename = Some(name);
                    self.file = match self.key {
                        Key::Replay(..) => File::Skipped,
                        Key::Unknown | Key::New(_) if self.guest.blocked => File::Refused(IngestError::GuestBlocked),
                        Key::Unknown | Key::New(_) => match self.guest.uploads_refused(Utc::now()) {
                            Some(shut) => File::Refused(shut.into()),
                            None => self.receive(parts).await?,
                        },
                    };
                }
            }
        }
        Ok(())
    }

    /// A key part: looked up when it is the first key named; the same key again changes nothing.
    async fn key_named(&mut self, key: ClientUploadId) -> Result<(), IngestError> {
        match self.key {
            Key::Unknown => self.key = self.look_up(key).await?,
            Key::New(known) | Key::Replay(known, _) if known == key => {}
            Key::New(_) | Key::Replay(..) => return Err(IngestError::IdempotencyKeyMismatch),
        }
        Ok(())
    }

    /// The whole body was read: replay, refuse, or store.
    #[tracing::instrument(name = "upload.decide", skip_all, err(level = "info"))]
    async fn decide(mut self) -> Result<Ingested, IngestError> {
        let file = std::mem::replace(&mut self.file, File::NotSeen);
        if let Key::Replay(_, row) = self.key {
            file.discard().await;
            check_declared(self.filename.as_ref(), self.caption.as_ref(), &row)?;
            return Ok(Ingested::Replayed(*row));
        }
        if self.guest.blocked {
            file.discard().await;
            return Err(IngestError::GuestBlocked);
        }
        if let Some(shut) = self.guest.uploads_refused(Utc::now()) {
            file.discard().await;
            return Err(shut.into());
        }
        match file {
            // The rest runs as its own task: once the row may commit, a client that hangs up
            // must not cancel the work halfway (its blob would be deleted under a committed row).
            File::Stored(received) => tokio::spawn(async move { self.store(*received).await }.in_current_span())
                .await
                .map_err(|e| anyhow::anyhow!("storing an upload panicked: {e}"))?,
            File::Refused(refusal) => Err(refusal),
            File::NotSeen | File::Skipped => Err(IngestError::MissingFile),
        }
    }

    /// Looks up the upload `key` names and decides what it means for this guest.
    async fn look_up(&self, key: ClientUploadId) -> Result<Key, IngestError> {
        let found = self.ingest.db.upload_by_client_id(key.uuid(), Some(self.guest.id)).await?;
        Ok(match classify(&self.guest, found)? {
            None => Key::New(key),
            Some(row) => Key::Replay(key, Box::new(row)),
        })
    }
}

impl File {
    /// Deletes a received file that will not be kept; the reason, when the file was refused.
    async fn discard(self) -> Option<IngestError> {
        match self {
            File::Stored(received) => {
                received.guard.delete_now().await;
                None
            }
            File::Refused(refusal) => Some(refusal),
            File::NotSeen | File::Skipped => None,
        }
    }
}

/// What a found key means for this guest: `None` is unknown (a new upload), `Some` a replay;
/// someone else's key and deleted uploads are refusals.
fn classify(guest: &GuestRow, found: Option<UploadRow>) -> Result<Option<UploadRow>, IngestError> {
    match found {
        None => Ok(None),
        Some(row) if row.guest_id != guest.id => Err(IngestError::ClientUploadIdConflict),
        Some(row) if row.deleted_at.is_some() => Err(IngestError::UploadDeleted),
        Some(row) => Ok(Some(row)),
    }
}

/// A replay must describe the same photo: file name and caption compared by value, where the
/// request declared them.
fn check_declared(
    filename: Option<&FileName>,
    caption: Option<&Option<Caption>>,
    row: &UploadRow,
) -> Result<(), IngestError> {
    if let Some(filename) = filename
        && filename.as_str() != row.filename
    {
        return Err(IngestError::ClientUploadIdReused(format!(
            "it was used for “{}”, not “{}”",
            row.filename,
            filename.as_str()
        )));
    }
    if let Some(caption) = caption {
        let caption = caption.clone().map(Caption::into_string);
        if caption.as_deref() != row.caption.as_deref() {
            return Err(IngestError::ClientUploadIdReused("it was used with another caption".into()));
        }
    }
    Ok(())
}
