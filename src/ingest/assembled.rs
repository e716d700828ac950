//! A file that arrived in pieces (a resumable upload, `crate::resumable`) joins the use case:
//! its head is checked as soon as it has arrived, and once whole it goes through the same steps
//! as a one-request upload's file — the key looked up (a replay stores nothing), the guest's
//! and the event's switches, one read of the file for its hash and what the sniffers see, the
//! probe, the insert with its quota charge — with the resource completed in the upload's own
//! transaction.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::receive::Received;
use super::staged::Staged;
use super::{File, Ingest, IngestError, Ingested, Key, check_declared};
use crate::blobs::BlobKey;
use crate::db::guests::GuestRow;
use crate::db::resumable::ResumableLease;
use crate::db::uploads::UploadRow;
use crate::domain::{Caption, ClientUploadId, FileName};
use crate::media::probe::HEAD_BYTES;
use crate::media::video::{ContainerSniff, ContainerWalker};
use crate::media::{ProbeError, Sniffer};

/// How much of a file's start is checked before the rest is taken.
pub const HEAD_CHECK_BYTES: u64 = HEAD_BYTES as u64;

/// Read size of the pass over a whole local file.
const PASS_CHUNK: usize = 1024 * 1024;

/// A resumable upload's file, whole at `key`.
pub struct Assembled {
    /// The resource's id: the upload gets it.
    pub upload_id: Uuid,
    /// The completing request's lease on the resource, which fences the commit.
    pub lease_token: Uuid,
    pub key: BlobKey,
    pub client_upload_id: ClientUploadId,
    pub filename: FileName,
    pub caption: Option<Caption>,
    /// Until when the completed resource answers retries with the stored upload.
    pub tombstone_until: DateTime<Utc>,
    /// The pass over every byte, if the pieces' requests made it.
    pub pass: Option<Pass>,
}

/// What one read of the whole file showed: fed as the pieces arrive, when the request that
/// completes the file saw them all (or could read the ones before it from the local disk),
/// else by reading the assembled file once.
#[derive(Default)]
pub struct Pass {
    sniffer: Sniffer,
    container: ContainerWalker,
    hasher: Sha256,
    bytes: u64,
}

impl Pass {
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn feed(&mut self, chunk: &[u8]) {
        self.sniffer.update(chunk);
        self.container.update(chunk);
        self.hasher.update(chunk);
        self.bytes += chunk.len() as u64;
    }
}

impl Ingest {
    /// Whether a file of `length` bytes that starts with `head` (its first
    /// `HEAD_CHECK_BYTES`, or all of it) can be taken: a supported photo or video within its
    /// size limit. A header longer than `head` is left to the probe once the file is whole.
    pub async fn check_head(&self, head: Vec<u8>, length: u64) -> Result<(), IngestError> {
        let mut container = ContainerWalker::default();
        container.update(&head);
        if let Some(why) = container.refusal() {
            return Err(IngestError::UnsupportedMediaType(why.to_owned()));
        }
        let limits = self.limits;
        match container.is_video() {
            Some(true) if length > limits.max_video_bytes => {
                Err(IngestError::FileTooLarge { limit_bytes: limits.max_video_bytes })
            }
            Some(true) => Ok(()),
            Some(false) | None => {
                if length > limits.max_upload_bytes {
                    return Err(IngestError::FileTooLarge { limit_bytes: limits.max_upload_bytes });
                }
                let max_pixels = limits.max_image_pixels;
                let probed =
                    self.blocking.media(move || crate::media::probe::probe_accepted(&head, length, max_pixels)).await?;
                match probed {
                    Ok(_) | Err(ProbeError::NeedMore(_)) => Ok(()),
                    Err(ProbeError::Unsupported(why)) => Err(IngestError::UnsupportedMediaType(why)),
                    Err(ProbeError::TooManyPixels { pixels, limit }) => {
                        Err(IngestError::ImageTooLarge { pixels, limit })
                    }
                }
            }
        }
    }

    /// The new-upload checks a resumable upload passes before its first byte is taken that
    /// need nothing but the guest as read with the request: the guest's and the event's
    /// switches and the size limit. The room it needs (quota, event's storage, disk) is the
    /// creation's to check, under the event's lock; the guarded charges at the commit are what
    /// really hold the line.
    pub fn check_new(&self, guest: &GuestRow, length: u64) -> Result<(), IngestError> {
        if guest.blocked {
            return Err(IngestError::GuestBlocked);
        }
        if let Some(shut) = guest.uploads_refused(Utc::now()) {
            return Err(shut.into());
        }
        let max = self.limits.max_file_bytes();
        if length > max {
            return Err(IngestError::FileTooLarge { limit_bytes: max });
        }
        Ok(())
    }

    /// The whole file is at `file.key`: replay, refuse or store it. A refusal removes its
    /// blob; a failure inside (the database, the store) or a lease lost leaves it for the
    /// resource (`IngestError::Internal`, `IngestError::Superseded`).
    pub async fn complete_assembled(
        self: &Arc<Self>,
        guest: GuestRow,
        file: Assembled,
    ) -> Result<Ingested, IngestError> {
        // The resource owns these bytes until the commit: the cleanup of resumable uploads
        // removes them with it, and a failure inside keeps them for a retry.
        let guard = Staged::owned_by_resource(&self.db, &self.blobs, file.upload_id, file.key);
        let mut upload = match self.begin(guest, Some(file.client_upload_id)).await {
            Ok(upload) => upload,
            Err(refusal) => {
                guard.delete_now().await;
                return Err(refusal);
            }
        };
        upload.filename = Some(file.filename);
        upload.caption = Some(file.caption);
        if let Key::Replay(_, row) = &upload.key {
            if row.id == file.upload_id {
                // Completed by another request: these bytes are its photo's.
                return Ok(Ingested::Replayed(UploadRow::clone(row)));
            }
            guard.delete_now().await;
            check_declared(upload.filename.as_ref(), upload.caption.as_ref(), row)?;
            return Ok(Ingested::Replayed(UploadRow::clone(row)));
        }
        if upload.guest.blocked {
            guard.delete_now().await;
            return Err(IngestError::GuestBlocked);
        }
        if let Some(shut) = upload.guest.uploads_refused(Utc::now()) {
            guard.delete_now().await;
            return Err(shut.into());
        }
        let pass = match file.pass {
            Some(pass) => Ok(pass),
            None => self.pass(file.key).await,
        };
        let pass = match pass {
            Ok(pass) => pass,
            // The store failing: the bytes stay for a retry.
            Err(e @ IngestError::Internal(_)) => return Err(e),
            Err(e) => {
                guard.delete_now().await;
                return Err(e);
            }
        };
        let container = pass.container.finish();
        if let ContainerSniff::Damaged(why) = container {
            guard.delete_now().await;
            return Err(IngestError::UnsupportedMediaType(why));
        }
        let received = Received {
            upload_id: file.upload_id,
            guard,
            sniffed: pass.sniffer.finish(),
            container,
            sha256: hex::encode(pass.hasher.finalize()),
            bytes: pass.bytes,
            resumable: Some((ResumableLease { id: file.upload_id, token: file.lease_token }, file.tombstone_until)),
        };
        upload.file = File::NotSeen;
        // As for a one-request upload: once the row may commit, nothing may cancel the work
        // halfway.
        tokio::spawn(async move { upload.store(received).await })
            .await
            .map_err(|e| anyhow::anyhow!("storing an upload panicked: {e}"))?
    }

    /// Reads the first `upto` bytes of a local file (all of them if `None`) on the blocking pool.
    pub async fn pass_local(&self, path: std::path::PathBuf, upto: Option<u64>) -> Result<Pass, IngestError> {
        let pass = self
            .blocking
            .media(move || -> std::io::Result<Pass> {
                use std::io::Read;
                let mut file = std::fs::File::open(path)?.take(upto.unwrap_or(u64::MAX));
                let mut pass = Pass::default();
                let mut buffer = vec![0; PASS_CHUNK];
                loop {
                    match file.read(&mut buffer) {
                        Ok(0) => return Ok(pass),
                        Ok(n) => pass.feed(&buffer[..n]),
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(e),
                    }
                }
            })
            .await?
            .map_err(anyhow::Error::from)?;
        Ok(pass)
    }

    /// Reads the whole file once: a local one on the blocking pool in large reads, others as
    /// the store streams them.
    async fn pass(&self, key: BlobKey) -> Result<Pass, IngestError> {
        if let Some(path) = self.blobs.local_path(key) {
            return self.pass_local(path, None).await;
        }
        use futures_util::StreamExt;
        let mut stream = self.blobs.get(key, None).await?.into_stream();
        let mut pass = Pass::default();
        while let Some(chunk) = stream.next().await {
            pass.feed(&chunk?);
        }
        Ok(pass)
    }
}
