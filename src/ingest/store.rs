//! Steps 4–6: probe the received file, commit its row (or lose to another attempt with the
//! same key), then move its blob to the final key. Also the refusals that say how much room
//! is left, read from the database as it is now.

use std::sync::Arc;

use chrono::Utc;

use super::{Ingest, IngestError, Ingested, Key, READ_BACK_RETRIES, Received, Upload, check_declared, classify};
use crate::blobs::BlobKey;
use crate::db::blob_jobs::{BlobJob, BlobJobKind};
use crate::db::guests::GuestRow;
use crate::db::uploads::{NewUpload, UploadRow};
use crate::domain::{Caption, Captured, ClientUploadId, Gallery, Review, UploadStatus};
use crate::media::{self, ProbeError};

/// How often a request that is storing a file reads the disk's free space again: a fast client
/// passes this many bytes in milliseconds, so it stops within this much of the floor (a reading
/// is one `statvfs`).
pub const DISK_CHECK_EVERY: u64 = 4 * 1024 * 1024;

/// Headers cannot grow the probe's window past this much of a file.
pub(super) const MAX_PROBE_BYTES: usize = 16 * 1024 * 1024;

impl Upload {
    /// Probe, insert (or lose to another attempt), charge the quota, commit, finalize.
    #[tracing::instrument(name = "upload.store", skip_all, fields(upload_id = %received.upload_id, bytes = received.bytes), err(level = "info"))]
    pub(super) async fn store(self, mut received: Received) -> Result<Ingested, IngestError> {
        let ingest = &self.ingest;
        let probe = match ingest.probe_media(&received).await {
            Ok(probe) => probe,
            Err(refusal) => {
                received.guard.delete_now().await;
                return Err(refusal);
            }
        };
        let key = match self.key {
            Key::New(key) => Some(key),
            Key::Unknown => None,
            Key::Replay(..) => return Err(anyhow::anyhow!("a replay reached the insert").into()),
        };
        let created_at = Utc::now();
        let captured = Captured::decide(probe.taken_at, probe.taken_from, created_at);
        let new = NewUpload {
            id: received.upload_id,
            event_id: self.guest.event_id,
            guest_id: self.guest.id,
            client_upload_id: key.map(ClientUploadId::uuid),
            filename: self.filename.as_ref().map(|f| f.as_str().to_owned()).unwrap_or_else(|| "photo".into()),
            caption: self.caption.clone().flatten().map(Caption::into_string),
            content_type: probe.content_type.to_owned(),
            bytes: i64::try_from(received.bytes).unwrap_or(i64::MAX),
            sha256: received.sha256.clone(),
            width: i32::try_from(probe.width).unwrap_or(i32::MAX),
            height: i32::try_from(probe.height).unwrap_or(i32::MAX),
            taken_at: captured.taken_at,
            captured_at: captured.at,
            captured_from: captured.source,
            created_at,
            kind: probe.kind,
            duration_ms: probe.duration_ms.map(|ms| i64::try_from(ms).unwrap_or(i64::MAX)),
        };

        let mut tx = ingest.db.begin().await?;
        let Some((id, review)) = tx.insert_upload(&new).await? else {
            // Another attempt holds this key and has committed: replay it.
            tx.rollback().await?;
            let key = key.ok_or_else(|| anyhow::anyhow!("an upload without a key conflicted"))?;
            let row = ingest.winner(&self.guest, key).await?;
            if row.id == received.upload_id {
                // A resumable upload completed by another request: these bytes are its photo's.
                received.guard.disarm();
                return Err(IngestError::Superseded);
            }
            received.guard.delete_now().await;
            check_declared(self.filename.as_ref(), self.caption.as_ref(), &row)?;
            return Ok(Ingested::Replayed(row));
        };
        if !tx.charge_quota(self.guest.id, new.bytes).await? {
            tx.rollback().await?;
            received.guard.delete_now().await;
            return Err(ingest.quota_exceeded(&self.guest).await);
        }
        tx.queue_derivatives(id).await?;
        // Waiting for review: the admin's webhook, if set, tells of it (with those that follow).
        if review == Review::Pending {
            let due = Utc::now() + chrono::TimeDelta::from_std(ingest.limits.webhook_delay).unwrap_or_default();
            tx.queue_webhook_delivery(self.guest.event_id, due).await?;
        }
        tx.unstage_upload(id).await?;
        // Fenced: only the request holding the resource's lease completes it, and only once.
        if let Some((lease, until)) = received.resumable
            && !tx.complete_resumable(&lease, until).await?
        {
            tx.rollback().await?;
            received.guard.disarm();
            return Err(IngestError::Superseded);
        }
        // Written to a temporary key: moved to the final one after the commit. Written straight
        // to the final key (S3): nothing to move.
        let finalize = match received.guard.key {
            BlobKey::Temp(_) => {
                Some(tx.queue_blob_job(BlobJobKind::Finalize, self.guest.event_id, id, ingest.blob_jobs.claim()).await?)
            }
            _ => None,
        };
        // Last, with the commit: every upload of the event waits for this row's lock.
        if !tx.commit_charging_event(self.guest.event_id, new.bytes).await? {
            received.guard.delete_now().await;
            return Err(ingest.event_storage_full(&self.guest).await);
        }

        // Committed: from here on the blob belongs to the row.
        received.guard.disarm();
        ingest.finalize(finalize).await;
        tracing::info!(upload_id = %id, guest_id = %self.guest.id, bytes = new.bytes, "upload stored");
        Ok(Ingested::Created(ingest.read_back(&self.guest, new, review).await))
    }
}

impl Ingest {
    /// Step 6, after the commit: the temporary blob moves to its final key — a blob job
    /// written in the upload's own transaction, done now or, when the store fails or the
    /// process dies first, by a worker later — and the derivative workers wake.
    async fn finalize(&self, job: Option<BlobJob>) {
        if let Some(job) = job {
            self.blob_jobs.run(job).await;
        }
        self.derivatives.wake();
    }

    /// The header probe, on the blocking pool; reads more of the blob when a header is long.
    pub(super) async fn probe(&self, received: &Received) -> Result<media::Probe, IngestError> {
        let max_pixels = self.limits.max_image_pixels;
        let sniffed = Arc::new(received.sniffed.clone());
        let mut head = sniffed.head.clone();
        loop {
            let for_probe = sniffed.clone();
            let (result, returned_head) =
                self.blocking.media(move || (media::probe::probe(&head, &for_probe, max_pixels), head)).await?;
            match result {
                Ok(probe) => return Ok(probe),
                Err(ProbeError::NeedMore(want)) if want > returned_head.len() && want <= MAX_PROBE_BYTES => {
                    let range = 0..want as u64;
                    head = self.blobs.get_range(received.guard.key, range).await?.to_vec();
                }
                Err(ProbeError::NeedMore(_)) => {
                    return Err(IngestError::UnsupportedMediaType("the image header is too large to read".into()));
                }
                Err(ProbeError::Unsupported(message)) => return Err(IngestError::UnsupportedMediaType(message)),
                Err(ProbeError::TooManyPixels { pixels, limit }) => {
                    return Err(IngestError::ImageTooLarge { pixels, limit });
                }
            }
        }
    }

    /// After losing the insert: the winner has committed, so the row is there.
    async fn winner(&self, guest: &GuestRow, key: ClientUploadId) -> Result<UploadRow, IngestError> {
        classify(guest, self.db.upload_by_client_id(key.uuid(), Some(guest.id)).await?)?
            .ok_or_else(|| anyhow::anyhow!("the upload that won key {} is gone", key.uuid()).into())
    }

    /// The committed upload as the guest will see it. The photo is stored whatever happens
    /// now: a read that fails is retried briefly, then answered from the row just written.
    async fn read_back(&self, guest: &GuestRow, new: NewUpload, review: Review) -> UploadRow {
        let mut pauses = READ_BACK_RETRIES.iter();
        loop {
            let why = match self.db.upload_by_id(new.id, Some(guest.id)).await {
                Ok(Some(row)) => return row,
                Ok(None) => "it is not there".to_owned(),
                Err(e) => e.to_string(),
            };
            let Some(pause) = pauses.next() else {
                tracing::warn!(upload_id = %new.id, error = %why, "answering a stored upload from the row just written");
                return written_row(guest, new, review);
            };
            tracing::debug!(upload_id = %new.id, error = %why, "reading a stored upload back failed; retrying");
            tokio::time::sleep(*pause).await;
        }
    }

    /// The refusal when the guest's quota is used up, with what is left as the database has it now.
    pub(super) async fn quota_exceeded(&self, guest: &GuestRow) -> IngestError {
        let guest = self.db.guest_by_id(guest.id).await.ok().flatten().unwrap_or_else(|| guest.clone());
        IngestError::QuotaExceeded {
            quota_bytes: guest.quota_bytes,
            remaining_bytes: (guest.quota_bytes - guest.used_bytes).max(0),
        }
    }

    /// The refusal when the event's storage is full, with what is left as the database has it now
    /// (open resumable uploads' reservations taken off).
    pub(super) async fn event_storage_full(&self, guest: &GuestRow) -> IngestError {
        let (cap, used) = match self.db.event_by_id(guest.event_id).await {
            Ok(Some(event)) => (event.storage_cap_bytes, event.used_bytes),
            _ => (guest.event_storage_cap_bytes, guest.event_used_bytes),
        };
        let reserved = self.db.event_reserved_bytes(guest.event_id, Utc::now()).await.unwrap_or(0);
        IngestError::EventStorageFull { cap_bytes: cap, remaining_bytes: (cap - used - reserved).max(0) }
    }

    /// Refuses a new file while the photo store's disk is below the free-space floor, before any
    /// of its bytes are written: a full disk would fail every write, the database's included.
    pub(super) async fn disk_refusal(&self) -> Option<IngestError> {
        self.disk_room(0, false).await
    }

    /// Refuses `need` more bytes unless they fit in the photo store's free space above the
    /// floor; `now` reads the disk now rather than trusting a reading of the last seconds (a
    /// request that has been writing since). No floor, or a store that is not a local disk:
    /// never refused.
    pub async fn disk_room(&self, need: u64, now: bool) -> Option<IngestError> {
        let floor = self.limits.min_free_bytes;
        if floor == 0 {
            return None;
        }
        let free = if now { self.blobs.free_bytes_now().await? } else { self.blobs.free_bytes().await? };
        if free >= floor.saturating_add(need) {
            return None;
        }
        tracing::warn!(
            free_bytes = free,
            min_free_bytes = floor,
            need_bytes = need,
            "refusing an upload's bytes: the photo store's disk is almost full"
        );
        Some(IngestError::InsufficientStorage)
    }
}

/// What a read right after the insert would show: processing, nothing derived, no likes or
/// comments yet.
fn written_row(guest: &GuestRow, new: NewUpload, review: Review) -> UploadRow {
    UploadRow {
        id: new.id,
        event_id: new.event_id,
        event_slug: guest.event_slug.clone(),
        guest_id: new.guest_id,
        guest_display_name: guest.display_name.clone(),
        client_upload_id: new.client_upload_id,
        filename: new.filename,
        caption: new.caption,
        content_type: new.content_type,
        bytes: new.bytes,
        sha256: new.sha256,
        width: new.width,
        height: new.height,
        taken_at: new.taken_at,
        captured_at: new.captured_at,
        captured_from: new.captured_from,
        created_at: new.created_at,
        status: UploadStatus::Processing,
        hidden: false,
        deleted_at: None,
        likes: 0,
        liked_by_me: false,
        comments: 0,
        review,
        // Only its uploader reads this row, who sees it whatever the event's gallery mode.
        event_gallery: Gallery::Everyone,
        event_gallery_opens_at: None,
        webp_thumb: false,
        avif_thumb: false,
        placeholder: None,
        preview_pending: false,
        kind: new.kind,
        duration_ms: new.duration_ms,
        poster: false,
        failure: None,
        rejected_reason: None,
    }
}
