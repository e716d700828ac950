//! The upload use case, in one place: from a guest's multipart request to one stored photo,
//! or to a replay of the photo a key already names.
//!
//! 1. A key in the `Idempotency-Key` header is looked up before the body is read: a known key
//!    is answered (replay, 409, 410) without storing anything — and, when the client sent
//!    `Expect: 100-continue`, before it sends the body at all.
//! 2. Parts are read in order. A `client_upload_id` part arriving before the file is looked up
//!    at once, so a retry's bytes are drained, never stored.
//! 3. A new file streams to a temporary blob while it is hashed, counted and sniffed; it stops
//!    early at `max_upload_bytes` or at the guest's remaining quota.
//! 4. The header probe runs on the blocking pool: format from magic bytes, dimensions from the
//!    header, pixel bombs and cut-short files refused before anything is decoded.
//! 5. One transaction: `INSERT … ON CONFLICT (client_upload_id) DO NOTHING RETURNING id`. No row
//!    back means another attempt won: roll back, delete the temporary blob, replay the winner.
//!    A row back: charge the quota with a guarded `UPDATE`, commit, move the blob to its final key.
//!
//! Every refusal leaves no row, no blob and no quota charge. Refusals found while the body is
//! still arriving wait until the rest is read: a key sent after the file can still turn the
//! request into a replay, and answering mid-body would reset the client's connection. Only a
//! body the multipart reader gives up on (broken framing, or longer than `max_upload_bytes`
//! plus a small overhead) is answered at once — with a replay when its key is known — and the
//! connection is then closed.

use std::time::Duration;

use axum::body::BodyDataStream;
use axum::extract::Request;
use axum::http::header;
use chrono::Utc;
use uuid::Uuid;

use crate::app::AppState;
use crate::blobs::{BlobKey, TempBlobGuard};
use crate::db::blob_jobs::BlobJobKind;
use crate::db::guests::GuestRow;
use crate::db::uploads::{NewUpload, UploadRow};
use crate::domain::{Caption, ClientUploadId, FileName, UploadStatus};
use crate::error::{ApiError, ApiResult};
use crate::http::multipart::{self, Limits, MultipartError, MultipartReader};
use crate::jobs::blob_jobs::BlobJobs;
use crate::media::{self, ProbeError, Sniffed};

mod transport;

/// What an upload request came to.
pub enum Ingested {
    /// First attempt: stored now.
    Created(UploadRow),
    /// A later attempt with a known key: the live state of the upload it names.
    Replayed(UploadRow),
}

/// The answer to an upload request, and the rest of its body when the answer comes before
/// the body ended: the connection must then be closed, or what is still arriving would be
/// read as the next request.
pub struct Outcome {
    pub result: ApiResult<Ingested>,
    pub unread: Option<BodyDataStream>,
}

impl From<ApiResult<Ingested>> for Outcome {
    fn from(result: ApiResult<Ingested>) -> Self {
        Outcome { result, unread: None }
    }
}

/// The parts of an upload request, as they arrive.
type Parts = MultipartReader<BodyDataStream>;

/// Headers cannot grow the probe's window past this much of a file.
const MAX_PROBE_BYTES: usize = 16 * 1024 * 1024;
/// Text parts are small; a `client_upload_id` is 36 characters, a caption at most 500.
const MAX_KEY_PART_BYTES: usize = 200;
const MAX_CAPTION_PART_BYTES: usize = 4 * Caption::MAX_CHARS;
/// Pauses before reading a committed upload back again; then it is answered from the row
/// just written.
const READ_BACK_RETRIES: [Duration; 2] = [Duration::from_millis(50), Duration::from_millis(200)];

pub async fn ingest(
    state: &AppState,
    guest: GuestRow,
    header_key: Option<ClientUploadId>,
    request: Request,
) -> Outcome {
    let limits = Limits::for_upload(state.settings.max_upload_bytes);
    let mut upload = UploadSession {
        state: state.clone(),
        guest,
        key: header_key,
        key_resolved: false,
        replay: None,
        filename: None,
        caption: None,
        received: None,
        refusal: None,
    };

    if let Some(key) = header_key {
        let expects_continue =
            request.headers().get(header::EXPECT).is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
        match upload.resolve(key).await {
            // The client sends no body unless asked to.
            Ok(Some(row)) if expects_continue => return Ok(Ingested::Replayed(row)).into(),
            Err(error) if expects_continue => return Err(error).into(),
            Err(error) => {
                let unread = transport::drain_body(request.into_body().into_data_stream(), limits.body).await;
                return Outcome { result: Err(error), unread };
            }
            Ok(found) => upload.replay = found,
        }
    }

    let boundary = match multipart::boundary(request.headers()) {
        Ok(boundary) => boundary,
        Err(e) => {
            return Outcome { result: Err(upload.stopped(e)), unread: Some(request.into_body().into_data_stream()) };
        }
    };
    let mut parts = MultipartReader::new(request.into_body().into_data_stream(), &boundary, limits);
    if let Err(error) = upload.read_parts(&mut parts).await {
        let cut_short = parts.failure() == Some(&MultipartError::TooLarge);
        if parts.failure().is_none() {
            transport::drain_parts(&mut parts).await;
        }
        upload.discard().await;
        // A known key is a replay even when its body turns out longer than any upload may
        // be: a replay's bytes are thrown away unread.
        let result = match upload.replay.take() {
            Some(row) if cut_short => upload.check_declared(&row).map(|()| Ingested::Replayed(row)),
            _ => Err(error),
        };
        let unread = (!parts.finished()).then(|| parts.into_inner());
        return Outcome { result, unread };
    }
    upload.decide().await.into()
}

/// The state of one upload request while its parts arrive.
struct UploadSession {
    state: AppState,
    guest: GuestRow,
    key: Option<ClientUploadId>,
    /// Whether `key` was looked up already.
    key_resolved: bool,
    /// The upload `key` names, when it exists and is this guest's.
    replay: Option<UploadRow>,
    /// What the request declared; compared with a replay's upload.
    filename: Option<FileName>,
    caption: Option<Option<Caption>>,
    /// The new file, in its temporary blob.
    received: Option<Received>,
    /// Why the file part was not stored, told once the whole body was read.
    refusal: Option<ApiError>,
}

/// A file part streamed to a temporary blob.
struct Received {
    upload_id: Uuid,
    guard: TempBlobGuard,
    sniffed: Sniffed,
    sha256: String,
    bytes: u64,
}

impl UploadSession {
    /// The whole body was read: replay, refuse, or store.
    async fn decide(mut self) -> ApiResult<Ingested> {
        if !self.key_resolved
            && let Some(key) = self.key
        {
            match self.resolve(key).await {
                Ok(found) => self.replay = found,
                Err(refusal) => {
                    self.discard().await;
                    return Err(refusal);
                }
            }
        }
        if let Some(row) = self.replay.take() {
            self.discard().await;
            self.check_declared(&row)?;
            return Ok(Ingested::Replayed(row));
        }
        if !self.guest.uploads_open {
            self.discard().await;
            return Err(ApiError::UploadsClosed);
        }
        if let Some(refusal) = self.refusal.take() {
            self.discard().await;
            return Err(refusal);
        }
        let Some(received) = self.received.take() else {
            return Err(ApiError::MissingFile);
        };
        // The rest runs as its own task: once the row may commit, a client that hangs up
        // must not cancel the work halfway (its blob would be deleted under a committed row).
        tokio::spawn(async move { self.store(received).await })
            .await
            .map_err(|e| ApiError::Internal(anyhow::anyhow!("storing an upload panicked: {e}")))?
    }

    /// Probe, insert (or lose to another attempt), charge the quota, commit, finalize.
    async fn store(self, mut received: Received) -> ApiResult<Ingested> {
        let probe = match self.probe(&received).await {
            Ok(probe) => probe,
            Err(refusal) => {
                received.guard.delete_now().await;
                return Err(refusal);
            }
        };
        let db = &self.state.db;
        let new = NewUpload {
            id: received.upload_id,
            event_id: self.guest.event_id,
            guest_id: self.guest.id,
            client_upload_id: self.key.map(ClientUploadId::uuid),
            filename: self.filename.as_ref().map(|f| f.as_str().to_owned()).unwrap_or_else(|| "photo".into()),
            caption: self.caption.clone().flatten().map(Caption::into_string),
            content_type: probe.format.mime().to_owned(),
            bytes: i64::try_from(received.bytes).unwrap_or(i64::MAX),
            sha256: received.sha256.clone(),
            width: i32::try_from(probe.width).unwrap_or(i32::MAX),
            height: i32::try_from(probe.height).unwrap_or(i32::MAX),
            taken_at: probe.taken_at,
            created_at: Utc::now(),
        };

        let mut tx = db.begin().await?;
        let Some(id) = tx.insert_upload(&new).await? else {
            // Another attempt holds this key and has committed: replay it.
            tx.rollback().await?;
            received.guard.delete_now().await;
            let key = self.key.ok_or_else(|| anyhow::anyhow!("an upload without a key conflicted"))?;
            let row = self.resolve_committed(key).await?;
            self.check_declared(&row)?;
            return Ok(Ingested::Replayed(row));
        };
        if !tx.charge_quota(self.guest.id, new.bytes).await? {
            tx.rollback().await?;
            received.guard.delete_now().await;
            return Err(self.quota_exceeded().await);
        }
        tx.queue_derivatives(id).await?;
        let finalize =
            tx.queue_blob_job(BlobJobKind::Finalize, self.guest.event_id, id, BlobJobs::lease_until()).await?;
        // Last before the commit: every upload of the event waits for this row's lock.
        if !tx.charge_event_storage(self.guest.event_id, new.bytes).await? {
            tx.rollback().await?;
            received.guard.delete_now().await;
            return Err(event_storage_full(&self.state, &self.guest).await);
        }
        tx.commit().await?;

        // Committed: from here on the blob belongs to the row, and moving it to its final key
        // is a job of its own, done now or (store failing, process dead) by a worker later.
        received.guard.disarm();
        self.state.blob_jobs.run(finalize).await;
        self.state.derivatives.wake();
        tracing::info!(upload_id = %id, guest_id = %self.guest.id, bytes = new.bytes, "upload stored");
        Ok(Ingested::Created(self.read_back(new).await))
    }

    /// The committed upload as the guest will see it. The photo is stored whatever happens
    /// now: a read that fails is retried briefly, then answered from the row just written.
    async fn read_back(&self, new: NewUpload) -> UploadRow {
        let mut pauses = READ_BACK_RETRIES.iter();
        loop {
            let why = match self.state.db.upload_by_id(new.id, Some(self.guest.id)).await {
                Ok(Some(row)) => return row,
                Ok(None) => "it is not there".to_owned(),
                Err(e) => e.to_string(),
            };
            let Some(pause) = pauses.next() else {
                tracing::warn!(upload_id = %new.id, error = %why, "answering a stored upload from the row just written");
                return self.written_row(new);
            };
            tracing::debug!(upload_id = %new.id, error = %why, "reading a stored upload back failed; retrying");
            tokio::time::sleep(*pause).await;
        }
    }

    /// What a read right after the insert would show: processing, nothing derived, no
    /// likes or comments yet.
    fn written_row(&self, new: NewUpload) -> UploadRow {
        UploadRow {
            id: new.id,
            event_id: new.event_id,
            event_slug: self.guest.event_slug.clone(),
            guest_id: new.guest_id,
            guest_display_name: self.guest.display_name.clone(),
            client_upload_id: new.client_upload_id,
            filename: new.filename,
            caption: new.caption,
            content_type: new.content_type,
            bytes: new.bytes,
            sha256: new.sha256,
            width: new.width,
            height: new.height,
            taken_at: new.taken_at,
            created_at: new.created_at,
            status: UploadStatus::Processing,
            hidden: false,
            deleted_at: None,
            likes: 0,
            liked_by_me: false,
            comments: 0,
        }
    }

    /// Looks up the upload `key` names and decides what it means for this guest.
    async fn resolve(&mut self, key: ClientUploadId) -> ApiResult<Option<UploadRow>> {
        self.key_resolved = true;
        classify(&self.guest, self.state.db.upload_by_client_id(key.uuid(), Some(self.guest.id)).await?)
    }

    /// After losing the insert: the winner has committed, so the row is there.
    async fn resolve_committed(&self, key: ClientUploadId) -> ApiResult<UploadRow> {
        classify(&self.guest, self.state.db.upload_by_client_id(key.uuid(), Some(self.guest.id)).await?)?
            .ok_or_else(|| ApiError::Internal(anyhow::anyhow!("the upload that won key {} is gone", key.uuid())))
    }

    /// A replay must describe the same photo: file name and caption compared by value,
    /// where the request declared them.
    fn check_declared(&self, row: &UploadRow) -> ApiResult<()> {
        if let Some(filename) = &self.filename
            && filename.as_str() != row.filename
        {
            return Err(ApiError::ClientUploadIdReused(format!(
                "it was used for “{}”, not “{}”",
                row.filename,
                filename.as_str()
            )));
        }
        if let Some(caption) = &self.caption {
            let caption = caption.clone().map(Caption::into_string);
            if caption.as_deref() != row.caption.as_deref() {
                return Err(ApiError::ClientUploadIdReused("it was used with another caption".into()));
            }
        }
        Ok(())
    }

    /// The header probe, on the blocking pool; reads more of the blob when a header is long.
    async fn probe(&self, received: &Received) -> ApiResult<media::Probe> {
        let max_pixels = self.state.settings.max_image_pixels;
        let sniffed = std::sync::Arc::new(received.sniffed.clone());
        let mut head = sniffed.head.clone();
        loop {
            let for_probe = sniffed.clone();
            let (result, returned_head) =
                self.state.blocking.media(move || (media::probe::probe(&head, &for_probe, max_pixels), head)).await?;
            match result {
                Ok(probe) => return Ok(probe),
                Err(ProbeError::NeedMore(want)) if want > returned_head.len() && want <= MAX_PROBE_BYTES => {
                    let range = 0..want as u64;
                    head = self.state.blobs.get_range(BlobKey::Temp(received.upload_id), range).await?.to_vec();
                }
                Err(ProbeError::NeedMore(_)) => {
                    return Err(ApiError::UnsupportedMediaType("the image header is too large to read".into()));
                }
                Err(ProbeError::Unsupported(message)) => {
                    return Err(ApiError::UnsupportedMediaType(message));
                }
                Err(ProbeError::TooManyPixels { pixels, limit }) => {
                    return Err(ApiError::ImageTooLarge { pixels, limit });
                }
            }
        }
    }

    async fn quota_exceeded(&self) -> ApiError {
        let guest = self.state.db.guest_by_id(self.guest.id).await.ok().flatten().unwrap_or_else(|| self.guest.clone());
        ApiError::QuotaExceeded {
            quota_bytes: guest.quota_bytes,
            remaining_bytes: (guest.quota_bytes - guest.used_bytes).max(0),
        }
    }

    /// Deletes a received file that will not be kept.
    async fn discard(&mut self) {
        if let Some(received) = self.received.take() {
            received.guard.delete_now().await;
        }
    }
}

/// What a key means for this guest: `None` is unknown (a new upload), `Some` a replay;
/// someone else's key and deleted uploads are refusals.
fn classify(guest: &GuestRow, found: Option<UploadRow>) -> ApiResult<Option<UploadRow>> {
    match found {
        None => Ok(None),
        Some(row) if row.guest_id != guest.id => Err(ApiError::ClientUploadIdConflict),
        Some(row) if row.deleted_at.is_some() => Err(ApiError::UploadDeleted),
        Some(row) => Ok(Some(row)),
    }
}

/// The refusal when the event's storage is full, with what is left as the database has it now.
async fn event_storage_full(state: &AppState, guest: &GuestRow) -> ApiError {
    let (cap, used) = match state.db.event_by_id(guest.event_id).await {
        Ok(Some(event)) => (event.storage_cap_bytes, event.used_bytes),
        _ => (guest.event_storage_cap_bytes, guest.event_used_bytes),
    };
    ApiError::EventStorageFull { cap_bytes: cap, remaining_bytes: (cap - used).max(0) }
}

/// Refuses a new file while the photo store's disk is below the free-space floor, before any
/// of its bytes are written: a full disk would fail every write, the database's included.
async fn disk_refusal(state: &AppState) -> Option<ApiError> {
    let floor = state.settings.min_free_bytes;
    if floor == 0 {
        return None;
    }
    let free = state.blobs.free_bytes().await?;
    if free >= floor {
        return None;
    }
    tracing::warn!(
        free_bytes = free,
        min_free_bytes = floor,
        "refusing an upload: the photo store's disk is almost full"
    );
    Some(ApiError::InsufficientStorage)
}
