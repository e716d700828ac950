//! An upload being received, from its first byte to its commit: recorded in `staged_uploads`
//! (which instance, which key, which multipart upload) so that another instance can clean up
//! should this one die, and abandoned — blob, multipart upload and record — on every way out
//! that is not a commit: a refusal, an error, a client gone mid-upload (the future is dropped).

use uuid::Uuid;

use crate::blobs::{BlobKey, BlobStore, BlobWriter};
use crate::db::Db;
use crate::db::instances::StagedUpload;
use crate::ingest::IngestError;

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
    /// Begins the upload's blob, recorded before the store's upload exists: another instance
    /// can always find what this one began, should it die.
    pub async fn begin(
        db: &Db,
        blobs: &BlobStore,
        instance: Uuid,
        event_id: Uuid,
        upload_id: Uuid,
    ) -> Result<(BlobWriter, Staged), IngestError> {
        let key = blobs.upload_key(event_id, upload_id);
        let record = StagedUpload {
            upload_id,
            instance_id: instance,
            blob_key: key.path().to_string(),
            multipart_id: None,
            started_at: chrono::Utc::now(),
        };
        let begin = async {
            let writer = blobs.begin_upload(event_id, upload_id).await?;
            let multipart_id = writer.multipart_id().map(str::to_owned);
            Ok::<_, object_store::Error>((writer, multipart_id))
        };
        let writer = db.stage_upload_while(&record, begin).await.map_err(anyhow::Error::from)??;
        let multipart_id = writer.multipart_id().map(str::to_owned);
        let staged = Staged { db: db.clone(), blobs: blobs.clone(), upload_id, key, multipart_id, armed: true };
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
