//! An upload being received, from its first byte to its commit: recorded in `staged_uploads`
//! (which instance, which key, which multipart upload) so that another instance can clean up
//! should this one die, and abandoned — blob, multipart upload and record — on every way out
//! that is not a commit: a refusal, an error, a client gone mid-upload (the future is dropped).

use uuid::Uuid;

use crate::blobs::{BlobKey, BlobStore, BlobWriter};
use crate::db::Db;
use crate::db::instances::StagedUpload;

pub(super) struct Staged {
    db: Db,
    blobs: BlobStore,
    pub upload_id: Uuid,
    /// Where the bytes are: a temporary key, or (S3) the final one.
    pub key: BlobKey,
    multipart_id: Option<String>,
    armed: bool,
}

impl Staged {
    /// Records the upload `writer` has begun. When the record cannot be written the writer is
    /// aborted: nothing may be stored that no instance knows of.
    pub async fn record(
        db: &Db,
        blobs: &BlobStore,
        instance: Uuid,
        upload_id: Uuid,
        writer: BlobWriter,
    ) -> Result<(BlobWriter, Staged), anyhow::Error> {
        let staged = StagedUpload {
            upload_id,
            instance_id: instance,
            blob_key: writer.key().path().to_string(),
            multipart_id: writer.multipart_id().map(str::to_owned),
            started_at: chrono::Utc::now(),
        };
        if let Err(e) = db.stage_upload(&staged).await {
            if let Err(abort) = writer.abort().await {
                tracing::warn!(error = %abort, "could not abort an upload that was not recorded");
            }
            return Err(e.into());
        }
        let key = writer.key();
        let staged = Staged {
            db: db.clone(),
            blobs: blobs.clone(),
            upload_id,
            key,
            multipart_id: staged.multipart_id,
            armed: true,
        };
        Ok((writer, staged))
    }

    /// Committed: the record went with the commit, the blob belongs to the row.
    pub fn disarm(&mut self) {
        self.armed = false;
    }

    /// Abandons the upload now, and waits for it.
    pub async fn delete_now(mut self) {
        self.armed = false;
        abandon(&self.db, &self.blobs, self.upload_id, self.key, self.multipart_id.take()).await;
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if self.armed
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let (db, blobs, upload_id, key, multipart_id) =
                (self.db.clone(), self.blobs.clone(), self.upload_id, self.key, self.multipart_id.take());
            runtime.spawn(async move { abandon(&db, &blobs, upload_id, key, multipart_id).await });
        }
    }
}

/// The blob and multipart upload first, then the record: a record without a blob is cleaned
/// up again harmlessly, a blob without a record would only be found by the slow sweep.
async fn abandon(db: &Db, blobs: &BlobStore, upload_id: Uuid, key: BlobKey, multipart_id: Option<String>) {
    if let Err(e) = blobs.abandon(key, multipart_id.as_deref()).await {
        tracing::warn!(error = %e, ?key, "could not remove an abandoned upload; a dead-instance cleanup or the sweep will");
        return;
    }
    if let Err(e) = db.unstage_upload(upload_id).await {
        tracing::warn!(error = %e, %upload_id, "could not forget an abandoned upload; cleaning up after this instance will");
    }
}
