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
//! request into a replay, and answering mid-body would reset the client's connection.

use axum::extract::multipart::Field;
use axum::extract::{FromRequest, Multipart, Request};
use axum::http::header;
use chrono::Utc;
use futures_util::StreamExt;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::app::AppState;
use crate::blobs::{BlobKey, TempBlobGuard};
use crate::db::guests::GuestRow;
use crate::db::uploads::{NewUpload, UploadRow};
use crate::domain::{Caption, ClientUploadId, FileName};
use crate::error::{ApiError, ApiResult};
use crate::media::{self, ProbeError, Sniffed, Sniffer};

/// What an upload request came to.
pub enum Ingested {
    /// First attempt: stored now.
    Created(UploadRow),
    /// A later attempt with a known key: the live state of the upload it names.
    Replayed(UploadRow),
}

/// Headers cannot grow the probe's window past this much of a file.
const MAX_PROBE_BYTES: usize = 16 * 1024 * 1024;
/// Text parts are small; a `client_upload_id` is 36 characters, a caption at most 500.
const MAX_KEY_PART_BYTES: usize = 200;
const MAX_CAPTION_PART_BYTES: usize = 4 * Caption::MAX_CHARS;

pub async fn ingest(
    state: &AppState,
    guest: GuestRow,
    header_key: Option<ClientUploadId>,
    request: Request,
) -> ApiResult<Ingested> {
    let drain_budget = state.settings.max_upload_bytes + 1024 * 1024;
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
        drain_budget,
    };

    if let Some(key) = header_key {
        let expects_continue =
            request.headers().get(header::EXPECT).is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
        match upload.resolve(key).await {
            Ok(Some(row)) if expects_continue => return Ok(Ingested::Replayed(row)),
            Err(refusal) => {
                if !expects_continue {
                    drain_body(request, drain_budget).await;
                }
                return Err(refusal);
            }
            Ok(found) => upload.replay = found,
        }
    }

    let mut multipart =
        Multipart::from_request(request, state).await.map_err(|e| ApiError::InvalidMultipart(e.body_text()))?;
    if let Err(refusal) = upload.read_parts(&mut multipart).await {
        if !matches!(refusal, ApiError::InvalidMultipart(_)) {
            drain_multipart(&mut multipart, upload.drain_budget).await;
        }
        upload.discard().await;
        return Err(refusal);
    }
    upload.decide().await
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
    /// How many more bytes may be read and thrown away.
    drain_budget: u64,
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
    async fn read_parts(&mut self, multipart: &mut Multipart) -> ApiResult<()> {
        while let Some(mut field) = multipart.next_field().await.map_err(multipart_error)? {
            match field.name().unwrap_or_default() {
                "client_upload_id" => {
                    let text = read_text(&mut field, MAX_KEY_PART_BYTES, ApiError::InvalidClientUploadId).await?;
                    let key = ClientUploadId::parse(&text)?;
                    if self.key.is_some_and(|known| known != key) {
                        return Err(ApiError::IdempotencyKeyMismatch);
                    }
                    self.key = Some(key);
                    // Known before the file: a retry's bytes are then drained, not stored.
                    if !self.key_resolved && self.received.is_none() {
                        self.replay = self.resolve(key).await?;
                    }
                }
                "caption" => {
                    let too_long = ApiError::InvalidCaption(format!(
                        "the caption may have at most {} characters",
                        Caption::MAX_CHARS
                    ));
                    let text = read_text(&mut field, MAX_CAPTION_PART_BYTES, too_long).await?;
                    self.caption = Some(Caption::parse(&text)?);
                }
                "file" => {
                    if self.filename.is_some() {
                        return Err(ApiError::InvalidMultipart("the request has more than one `file` part".into()));
                    }
                    self.filename = Some(FileName::parse(field.file_name()));
                    if self.replay.is_none() && self.refusal.is_none() {
                        if !self.guest.uploads_open {
                            self.refusal = Some(ApiError::UploadsClosed);
                        } else {
                            match self.receive(&mut field).await {
                                Ok(received) => self.received = Some(received),
                                Err(
                                    e @ (ApiError::FileTooLarge { .. }
                                    | ApiError::QuotaExceeded { .. }
                                    | ApiError::EventStorageFull { .. }
                                    | ApiError::InsufficientStorage),
                                ) => self.refusal = Some(e),
                                Err(e) => return Err(e),
                            }
                        }
                    }
                    self.drain(&mut field).await?;
                }
                _ => self.drain(&mut field).await?,
            }
        }
        Ok(())
    }

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
        // Last before the commit: every upload of the event waits for this row's lock.
        if !tx.charge_event_storage(self.guest.event_id, new.bytes).await? {
            tx.rollback().await?;
            received.guard.delete_now().await;
            return Err(event_storage_full(&self.state, &self.guest).await);
        }
        tx.commit().await?;

        // Committed: from here on the blob belongs to the row. If the move fails (or the
        // process dies first), the start-up sweep finds the temporary blob and moves it.
        received.guard.disarm();
        let original = BlobKey::Original { event_id: self.guest.event_id, upload_id: id };
        if let Err(e) = self.state.blobs.rename(BlobKey::Temp(id), original).await {
            tracing::error!(error = %e, upload_id = %id, "could not move a committed upload to its final key");
        }
        self.state.derivatives.wake();
        tracing::info!(upload_id = %id, guest_id = %self.guest.id, bytes = new.bytes, "upload stored");
        let row = db
            .upload_by_id(id, Some(self.guest.id))
            .await?
            .ok_or_else(|| anyhow::anyhow!("upload {id} vanished after commit"))?;
        Ok(Ingested::Created(row))
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

    /// Streams the file part to a temporary blob, hashing, counting and sniffing as it goes.
    async fn receive(&mut self, field: &mut Field<'_>) -> ApiResult<Received> {
        let max = self.state.settings.max_upload_bytes;
        if let Some(refusal) = disk_refusal(&self.state).await {
            return Err(refusal);
        }
        // With its key already known to be new, the quota and the event's storage can stop the
        // upload early; the guarded UPDATEs at commit are what really hold the line.
        let guest_remaining = (self.guest.quota_bytes - self.guest.used_bytes).max(0) as u64;
        let event_remaining = (self.guest.event_storage_cap_bytes - self.guest.event_used_bytes).max(0) as u64;
        let remaining = guest_remaining.min(event_remaining);
        let upload_id = Uuid::now_v7();
        let key = BlobKey::Temp(upload_id);
        let mut writer = self.state.blobs.writer(key).await?;
        let guard = TempBlobGuard::new(self.state.blobs.clone(), key);
        let mut sniffer = Sniffer::default();
        let mut hasher = Sha256::new();
        let mut bytes: u64 = 0;
        let limit = loop {
            let chunk = match field.chunk().await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => break None,
                Err(e) => break Some(multipart_error(e)),
            };
            bytes += chunk.len() as u64;
            if bytes > max {
                break Some(ApiError::FileTooLarge { limit_bytes: max });
            }
            if bytes > remaining {
                break Some(if bytes > guest_remaining {
                    self.quota_exceeded().await
                } else {
                    event_storage_full(&self.state, &self.guest).await
                });
            }
            sniffer.update(&chunk);
            hasher.update(&chunk);
            writer.write(chunk).await?;
        };
        if let Some(refusal) = limit {
            if let Err(e) = writer.abort().await {
                tracing::debug!(error = %e, "aborting a refused temporary blob");
            }
            guard.delete_now().await;
            return Err(refusal);
        }
        writer.finish().await?;
        Ok(Received { upload_id, guard, sniffed: sniffer.finish(), sha256: hex::encode(hasher.finalize()), bytes })
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

    /// Reads and throws away the rest of a part, within the drain budget.
    async fn drain(&mut self, field: &mut Field<'_>) -> ApiResult<()> {
        while let Some(chunk) = field.chunk().await.map_err(multipart_error)? {
            self.drain_budget = self.drain_budget.saturating_sub(chunk.len() as u64);
            if self.drain_budget == 0 {
                return Err(self
                    .refusal
                    .take()
                    .unwrap_or(ApiError::FileTooLarge { limit_bytes: self.state.settings.max_upload_bytes }));
            }
        }
        Ok(())
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

async fn read_text(field: &mut Field<'_>, max_bytes: usize, too_long: ApiError) -> ApiResult<String> {
    let mut buf = Vec::new();
    while let Some(chunk) = field.chunk().await.map_err(multipart_error)? {
        if buf.len() + chunk.len() > max_bytes {
            return Err(too_long);
        }
        buf.extend_from_slice(&chunk);
    }
    String::from_utf8(buf).map_err(|_| ApiError::InvalidMultipart("a text part is not UTF-8".into()))
}

fn multipart_error(e: axum::extract::multipart::MultipartError) -> ApiError {
    ApiError::InvalidMultipart(e.body_text())
}

/// Reads the rest of a multipart body after an early answer, so the client sees the answer
/// instead of a reset connection.
async fn drain_multipart(multipart: &mut Multipart, mut budget: u64) {
    while let Ok(Some(mut field)) = multipart.next_field().await {
        while let Ok(Some(chunk)) = field.chunk().await {
            budget = budget.saturating_sub(chunk.len() as u64);
            if budget == 0 {
                return;
            }
        }
    }
}

async fn drain_body(request: Request, mut budget: u64) {
    let mut body = request.into_body().into_data_stream();
    while let Some(Ok(chunk)) = body.next().await {
        budget = budget.saturating_sub(chunk.len() as u64);
        if budget == 0 {
            return;
        }
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
