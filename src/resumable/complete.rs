//! Completing a resource: the file assembled at the upload's key (or found there, assembled by
//! an earlier request that stopped before recording it) and handed to the upload use case, with
//! the lease renewed every third of it meanwhile; the answer from what is stored when the lease
//! was lost; the bytes kept for a retry when the server failed inside.

use chrono::Utc;
use uuid::Uuid;

use super::append::{Appended, Piece};
use super::{Resumable, ResumableError, completes_at_length};
use crate::blobs::PartialAppender;
use crate::db::guests::GuestRow;
use crate::db::resumable::{ResumableLease, ResumableRow};
use crate::domain::{Caption, ClientUploadId, FileName};
use crate::ingest::{Assembled, IngestError, Ingested, Pass};
use crate::lease::Renewed;

impl Resumable {
    /// A request on a resource whose bytes were all assembled by an earlier one that failed
    /// inside (or died): an empty append at the length completes it from there.
    pub(super) async fn retry_assembled(
        &self,
        guest: GuestRow,
        row: ResumableRow,
        token: Uuid,
        piece: Piece,
    ) -> Result<Appended, ResumableError> {
        let length = u64::try_from(row.length).unwrap_or(0);
        if piece.content_length.is_some_and(|n| n > 0) {
            self.db.unlock_resumable(row.id, token).await?;
            return Err(ResumableError::InconsistentUploadLength(format!(
                "every one of the upload's {length} bytes has arrived; this request brings more"
            )));
        }
        if !(piece.complete || completes_at_length(row.interop)) {
            self.db.unlock_resumable(row.id, token).await?;
            return Ok(Appended::Kept { offset: length, row: Box::new(row) });
        }
        // Assembled bytes left for longer than the orphan sweep's minimum age are gone: the
        // resource cannot go on.
        if let Err(object_store::Error::NotFound { .. }) =
            self.blobs.head(self.blobs.upload_key(row.event_id, row.id)).await
        {
            tracing::warn!(id = %row.id, "a resumable upload's assembled bytes are gone; cancelling it");
            self.cancel_now(&row, token).await;
            return Err(ResumableError::NotFound);
        }
        self.complete(guest, row, token, None, None).await
    }

    /// Whether an earlier completion assembled every byte at the upload's key and stopped
    /// before recording it (the database failing at that moment, the instance dying): if so,
    /// the row says so now. Asked once by a request that may complete the file (one look at
    /// the store), since the partial bytes it would append to are gone (the local file renamed,
    /// the S3 multipart upload completed and its tail deleted).
    pub(super) async fn assembled_unrecorded(&self, row: &ResumableRow, token: Uuid) -> bool {
        let length = u64::try_from(row.length).unwrap_or(0);
        match self.blobs.head(self.blobs.upload_key(row.event_id, row.id)).await {
            Ok(meta) if meta.size == length => {}
            _ => return false,
        }
        // A local append opened (and so created) the partial file again after it was renamed.
        if let Some(file) = self.blobs.partial_file(row.id)
            && let Err(e) = tokio::fs::remove_file(&file).await
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::debug!(error = %e, id = %row.id, "removing an empty partial file");
        }
        let now = Utc::now();
        match self.db.resumable_assembled(row.id, token, self.lease_end(now), self.expires_from(now)).await {
            Ok(recorded) => recorded,
            Err(e) => {
                tracing::warn!(error = %e, id = %row.id, "could not record a resumable upload's assembled bytes");
                false
            }
        }
    }

    /// Every byte is there: assembles the file (unless an earlier request did) and stores it,
    /// renewing the lease meanwhile. Answers from what is stored when the lease was lost (the
    /// holder decided). A refusal of the file cancels the resource; a failure inside keeps its
    /// bytes and leaves it open for a retry.
    #[tracing::instrument(name = "resumable.complete", skip_all, fields(resource_id = %row.id, length = row.length), err(level = "info"))]
    pub(super) async fn complete(
        &self,
        guest: GuestRow,
        row: ResumableRow,
        token: Uuid,
        appender: Option<PartialAppender>,
        pass: Option<Pass>,
    ) -> Result<Appended, ResumableError> {
        let lease = ResumableLease { id: row.id, token };
        let work = self.assemble_and_store(guest.clone(), &row, lease, appender, pass);
        let stored = tokio::select! {
            biased;
            stored = work => stored,
            () = self.keep_lease(lease) => {
                tracing::info!(id = %row.id, "lease lost while completing a resumable upload; its holder decides");
                Err(IngestError::Superseded)
            }
        };
        match stored {
            Ok(Ingested::Created(upload)) => Ok(Appended::Stored(Box::new(Ingested::Created(upload)))),
            Ok(Ingested::Replayed(upload)) => {
                // Another attempt stored the key first: this resource answers with its upload.
                self.db.complete_resumable(&lease, self.expires_from(Utc::now())).await?;
                Ok(Appended::Stored(Box::new(Ingested::Replayed(upload))))
            }
            Err(IngestError::Superseded) => self.answer_stored(&guest, row.id).await,
            Err(IngestError::Internal(e)) => {
                tracing::warn!(error = %e, id = %row.id, "completing a resumable upload failed; its bytes are kept for a retry");
                if let Err(unlock) = self.db.unlock_resumable(row.id, token).await {
                    tracing::warn!(error = %unlock, id = %row.id, "could not give a resumable upload's lease back; it ends on its own");
                }
                Err(IngestError::Internal(e).into())
            }
            Err(refusal) => {
                self.cancel_now(&row, token).await;
                Err(refusal.into())
            }
        }
    }

    /// The file assembled at the upload's key (recorded so), then handed to the use case.
    async fn assemble_and_store(
        &self,
        guest: GuestRow,
        row: &ResumableRow,
        lease: ResumableLease,
        appender: Option<PartialAppender>,
        pass: Option<Pass>,
    ) -> Result<Ingested, IngestError> {
        let length = u64::try_from(row.length).unwrap_or(0);
        let key = match appender {
            Some(appender) => {
                let key = appender.complete().await?;
                let now = Utc::now();
                if !self
                    .db
                    .resumable_assembled(row.id, lease.token, self.lease_end(now), self.expires_from(now))
                    .await?
                {
                    // Cancelled meanwhile: its bytes go with it.
                    self.blobs.delete(key).await?;
                    return Err(IngestError::Superseded);
                }
                key
            }
            None => self.blobs.upload_key(row.event_id, row.id),
        };
        let client_upload_id =
            ClientUploadId::from_uuid(row.client_upload_id).ok_or_else(|| anyhow::anyhow!("a nil key was kept"))?;
        let caption = match row.caption.as_deref().map(Caption::parse) {
            Some(Ok(caption)) => caption,
            _ => None,
        };
        let assembled = Assembled {
            upload_id: row.id,
            lease_token: lease.token,
            key,
            client_upload_id,
            filename: FileName::parse(Some(&row.filename)),
            caption,
            tombstone_until: self.expires_from(Utc::now()),
            pass: pass.filter(|pass| pass.bytes() == length),
        };
        self.ingest.complete_assembled(guest, assembled).await
    }

    /// Renews the lease every third of it while a completion works; returns once it is lost
    /// (taken over after a stall, or the resource cancelled). A resource completed meanwhile is
    /// not a loss: the completion that did it, this one or another, ends by itself.
    async fn keep_lease(&self, lease: ResumableLease) {
        crate::lease::keep(self.lease, "a resumable upload", || async move {
            if self.db.renew_resumable(lease.id, lease.token, self.lease_end(Utc::now())).await? {
                return Ok::<_, sqlx::Error>(Renewed::Held);
            }
            Ok(match self.db.resumable_by_id(lease.id).await? {
                Some(row) if row.state == "completed" => Renewed::Held,
                _ => Renewed::Lost,
            })
        })
        .await;
    }

    /// After the lease was lost: the stored upload (a replay), the holder still at work
    /// (`Busy`), or cancelled (`NotFound`).
    async fn answer_stored(&self, guest: &GuestRow, id: Uuid) -> Result<Appended, ResumableError> {
        let row = self.own(guest, id).await?;
        match row.state.as_str() {
            "completed" => Ok(Appended::Stored(Box::new(Ingested::Replayed(self.stored(guest, &row).await?)))),
            "open" if row.expires_at > Utc::now() => {
                Err(ResumableError::UploadBusy { offset: u64::try_from(row.upload_offset).unwrap_or(0) })
            }
            _ => Err(ResumableError::NotFound),
        }
    }
}
