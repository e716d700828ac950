//! Step 3: a new file streams to the store (recorded as staged), hashed, counted and sniffed as it goes;
//! refused early when it outgrows the size limit, the guest's quota or the event's storage, or
//! when the disk reaches its free-space floor.

use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::staged::Staged;
use super::store::DISK_CHECK_EVERY;
use super::{File, IngestError, Stop, Upload, UploadParts};
use crate::blobs::BlobWriter;
use crate::media::video::{ContainerSniff, ContainerWalker};
use crate::media::{Sniffed, Sniffer};

/// A file part streamed to the store, not committed yet.
pub(super) struct Received {
    pub upload_id: Uuid,
    pub guard: Staged,
    pub sniffed: Sniffed,
    /// Whether it is a video, and where its headers are.
    pub container: ContainerSniff,
    pub sha256: String,
    pub bytes: u64,
    /// A resumable upload's resource (and its completing request's lease), completed with the
    /// row, and until when it answers retries.
    pub resumable: Option<(crate::db::resumable::ResumableLease, chrono::DateTime<chrono::Utc>)>,
}

impl Upload {
    /// Streams the file part to a temporary blob. A refusal of the file is a `File::Refused`
    /// (told once the parts ended); a failure of the source or of the store stops the upload.
    pub(super) async fn receive(&self, parts: &mut impl UploadParts) -> Result<File, Stop> {
        let ingest = &self.ingest;
        let limits = ingest.limits;
        if let Some(refusal) = ingest.disk_refusal().await {
            return Ok(File::Refused(refusal));
        }
        // With its key already known to be new, the quota and the event's storage can stop the
        // upload early; the guarded UPDATEs at commit are what really hold the line.
        let guest_remaining = (self.guest.quota_bytes - self.guest.used_bytes).max(0) as u64;
        let event_remaining = (self.guest.event_storage_cap_bytes - self.guest.event_used_bytes).max(0) as u64;
        let remaining = guest_remaining.min(event_remaining);
        let upload_id = Uuid::now_v7();
        // Opened with the first byte: an empty file never reaches the store.
        let mut blob: Option<(BlobWriter, Staged)> = None;
        let mut sniffer = Sniffer::default();
        let mut container = ContainerWalker::default();
        // A movie header that comes first is checked as soon as it has passed.
        let mut moov_checked = false;
        let mut hasher = Sha256::new();
        let mut bytes: u64 = 0;
        let mut since_disk_check: u64 = 0;
        let stop = loop {
            let chunk = match parts.file_chunk().await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => break None,
                Err(e) => break Some(Stop::from(e)),
            };
            bytes += chunk.len() as u64;
            // A video has a limit of its own, known once its first bytes have arrived.
            container.update(&chunk);
            let max = match container.is_video() {
                Some(true) => limits.max_video_bytes,
                Some(false) => limits.max_upload_bytes,
                None => limits.max_file_bytes(),
            };
            if let Some(why) = container.refusal() {
                break Some(Stop::Refused(IngestError::UnsupportedMediaType(why.to_owned())));
            }
            if !moov_checked && let Some((kind, moov)) = container.streamed_moov() {
                moov_checked = true;
                if let Some(refusal) = ingest.early_video_refusal(kind, moov.to_vec()).await {
                    break Some(Stop::Refused(refusal));
                }
            }
            if bytes > max {
                break Some(Stop::Refused(IngestError::FileTooLarge { limit_bytes: max }));
            }
            since_disk_check += chunk.len() as u64;
            if since_disk_check >= DISK_CHECK_EVERY {
                since_disk_check = 0;
                if let Some(refusal) = ingest.disk_room(0, true).await {
                    break Some(Stop::Refused(refusal));
                }
            }
            if bytes > remaining {
                break Some(Stop::Refused(if bytes > guest_remaining {
                    ingest.quota_exceeded(&self.guest).await
                } else {
                    ingest.event_storage_full(&self.guest).await
                }));
            }
            sniffer.update(&chunk);
            hasher.update(&chunk);
            let writer = match &mut blob {
                Some((writer, _)) => writer,
                None => match self.begin_blob(upload_id).await {
                    Ok(begun) => &mut blob.insert(begun).0,
                    Err(e) => break Some(Stop::Refused(e)),
                },
            };
            if let Err(e) = writer.write(chunk).await {
                break Some(Stop::Refused(e.into()));
            }
        };
        if let Some(stop) = stop {
            if let Some((writer, guard)) = blob {
                if let Err(e) = writer.abort().await {
                    tracing::debug!(error = %e, "aborting a refused upload's blob");
                }
                guard.delete_now().await;
            }
            return match stop {
                // Refused for its size or where it would be stored: the rest of the parts may
                // still make this a replay.
                Stop::Refused(
                    refusal @ (IngestError::FileTooLarge { .. }
                    | IngestError::UnsupportedMediaType(_)
                    | IngestError::VideoTooLong { .. }
                    | IngestError::ImageTooLarge { .. }
                    | IngestError::QuotaExceeded { .. }
                    | IngestError::EventStorageFull { .. }
                    | IngestError::InsufficientStorage),
                ) => Ok(File::Refused(refusal)),
                other => Err(other),
            };
        }
        let Some((writer, guard)) = blob else {
            return Ok(File::Refused(IngestError::UnsupportedMediaType("the file is empty".into())));
        };
        writer.finish().await.map_err(IngestError::from)?;
        Ok(File::Stored(Box::new(Received {
            upload_id,
            guard,
            sniffed: sniffer.finish(),
            container: container.finish(),
            sha256: hex::encode(hasher.finalize()),
            bytes,
            resumable: None,
        })))
    }

    /// Begins the upload's blob, recorded as staged before the store's upload exists.
    async fn begin_blob(&self, upload_id: Uuid) -> Result<(BlobWriter, Staged), IngestError> {
        let ingest = &self.ingest;
        Staged::begin(&ingest.db, &ingest.blobs, ingest.instance, self.guest.event_id, upload_id).await
    }
}
