//! The transport half of an upload: reading the request's parts in order, streaming the
//! file part to a temporary blob, and throwing away what will not be kept.

use axum::body::BodyDataStream;
use futures_util::StreamExt;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::{MAX_CAPTION_PART_BYTES, MAX_KEY_PART_BYTES, Parts, Received, UploadSession};
use crate::blobs::{BlobKey, BlobWriter, TempBlobGuard};
use crate::domain::{Caption, ClientUploadId, FileName};
use crate::error::{ApiError, ApiResult};
use crate::http::multipart::MultipartError;
use crate::media::Sniffer;

impl UploadSession {
    pub(super) async fn read_parts(&mut self, parts: &mut Parts) -> ApiResult<()> {
        loop {
            let part = match parts.next_part().await {
                Ok(Some(part)) => part,
                Ok(None) => return Ok(()),
                Err(e) => return Err(self.stopped(e)),
            };
            match part.name.as_deref().unwrap_or_default() {
                "client_upload_id" => {
                    let text = self.read_text(parts, MAX_KEY_PART_BYTES, ApiError::InvalidClientUploadId).await?;
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
                    let text = self.read_text(parts, MAX_CAPTION_PART_BYTES, too_long).await?;
                    self.caption = Some(Caption::parse(&text)?);
                }
                "file" => {
                    if self.filename.is_some() {
                        return Err(ApiError::InvalidMultipart("the request has more than one `file` part".into()));
                    }
                    self.filename = Some(FileName::parse(part.file_name.as_deref()));
                    if self.replay.is_none() && self.refusal.is_none() {
                        if !self.guest.uploads_open {
                            self.refusal = Some(ApiError::UploadsClosed);
                        } else {
                            match self.receive(parts).await {
                                Ok(received) => self.received = Some(received),
                                Err(
                                    e @ (ApiError::FileTooLarge { .. }
                                    | ApiError::QuotaExceeded { .. }
                                    | ApiError::EventStorageFull { .. }
                                    | ApiError::InsufficientStorage
                                    | ApiError::UnsupportedMediaType(_)),
                                ) => self.refusal = Some(e),
                                Err(e) => return Err(e),
                            }
                        }
                    }
                    self.drain(parts).await?;
                }
                _ => self.drain(parts).await?,
            }
        }
    }

    /// Streams the file part to a temporary blob, hashing, counting and sniffing as it goes.
    async fn receive(&mut self, parts: &mut Parts) -> ApiResult<Received> {
        let max = self.state.settings.max_upload_bytes;
        if let Some(refusal) = super::disk_refusal(&self.state).await {
            return Err(refusal);
        }
        // With its key already known to be new, the quota and the event's storage can stop the
        // upload early; the guarded UPDATEs at commit are what really hold the line.
        let guest_remaining = (self.guest.quota_bytes - self.guest.used_bytes).max(0) as u64;
        let event_remaining = (self.guest.event_storage_cap_bytes - self.guest.event_used_bytes).max(0) as u64;
        let remaining = guest_remaining.min(event_remaining);
        let upload_id = Uuid::now_v7();
        let key = BlobKey::Temp(upload_id);
        // Opened with the first byte: an empty file never reaches the store.
        let mut blob: Option<(BlobWriter, TempBlobGuard)> = None;
        let mut sniffer = Sniffer::default();
        let mut hasher = Sha256::new();
        let mut bytes: u64 = 0;
        let limit = loop {
            let chunk = match parts.chunk().await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => break None,
                Err(e) => break Some(self.stopped(e)),
            };
            bytes += chunk.len() as u64;
            if bytes > max {
                break Some(ApiError::FileTooLarge { limit_bytes: max });
            }
            if bytes > remaining {
                break Some(if bytes > guest_remaining {
                    self.quota_exceeded().await
                } else {
                    super::event_storage_full(&self.state, &self.guest).await
                });
            }
            sniffer.update(&chunk);
            hasher.update(&chunk);
            let writer = match &mut blob {
                Some((writer, _)) => writer,
                None => {
                    let writer = self.state.blobs.writer(key).await?;
                    &mut blob.insert((writer, TempBlobGuard::new(self.state.blobs.clone(), key))).0
                }
            };
            writer.write(chunk).await?;
        };
        if let Some(refusal) = limit {
            if let Some((writer, guard)) = blob {
                if let Err(e) = writer.abort().await {
                    tracing::debug!(error = %e, "aborting a refused temporary blob");
                }
                guard.delete_now().await;
            }
            return Err(refusal);
        }
        let Some((writer, guard)) = blob else {
            return Err(ApiError::UnsupportedMediaType("the file is empty".into()));
        };
        writer.finish().await?;
        Ok(Received { upload_id, guard, sniffed: sniffer.finish(), sha256: hex::encode(hasher.finalize()), bytes })
    }

    /// Reads and throws away the rest of a part.
    async fn drain(&mut self, parts: &mut Parts) -> ApiResult<()> {
        loop {
            match parts.chunk().await {
                Ok(Some(_)) => {}
                Ok(None) => return Ok(()),
                Err(e) => return Err(self.stopped(e)),
            }
        }
    }

    /// A text part, whole.
    async fn read_text(&mut self, parts: &mut Parts, max_bytes: usize, too_long: ApiError) -> ApiResult<String> {
        let mut buf = Vec::new();
        loop {
            match parts.chunk().await {
                Ok(Some(chunk)) if buf.len() + chunk.len() > max_bytes => return Err(too_long),
                Ok(Some(chunk)) => buf.extend_from_slice(&chunk),
                Ok(None) => break,
                Err(e) => return Err(self.stopped(e)),
            }
        }
        String::from_utf8(buf).map_err(|_| ApiError::InvalidMultipart("a text part is not UTF-8".into()))
    }

    /// The answer when the reader gives up on the body. Over the size bound, a refusal found
    /// earlier (the quota, say) says more than the size.
    pub(super) fn stopped(&mut self, e: MultipartError) -> ApiError {
        match e {
            MultipartError::TooLarge => self
                .refusal
                .take()
                .unwrap_or(ApiError::FileTooLarge { limit_bytes: self.state.settings.max_upload_bytes }),
            MultipartError::Malformed(why) | MultipartError::Transport(why) => ApiError::InvalidMultipart(why),
        }
    }
}

/// Reads what is left of the parts after an early answer, so the client sees the answer
/// instead of a reset connection; the reader's bounds stop a body that goes on too long.
pub(super) async fn drain_parts(parts: &mut Parts) {
    while let Ok(Some(_)) = parts.next_part().await {}
}

/// Reads and throws away a body that will not be parsed, up to `budget` bytes; what is left
/// of it when it goes on longer.
pub(super) async fn drain_body(mut body: BodyDataStream, mut budget: u64) -> Option<BodyDataStream> {
    loop {
        match body.next().await {
            None => return None,
            Some(Ok(chunk)) => match budget.checked_sub(chunk.len() as u64) {
                Some(left) => budget = left,
                None => return Some(body),
            },
            Some(Err(_)) => return Some(body),
        }
    }
}
