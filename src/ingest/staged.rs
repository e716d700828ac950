//! An upload being received, from its first byte to its commit: recorded in `staged_uploads`
//! (which instance, which key, which multipart upload) so that another instance can clean up
//! should this one die, and abandoned — blob, multipart upload and record — on every way out
//! that is not a commit: a refusal, an error, a client gone mid-upload (the future is dropped).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use futures_util::FutureExt;
use uuid::Uuid;

use crate::blobs::{BlobKey, BlobStore, BlobWriter, RecordMultipart};
use crate::db::Db;
use crate::db::instances::StagedUpload;
use crate::ingest::IngestError;

pub struct Staged {
    db: Db,
    blobs: BlobStore,
    pub upload_id: Uuid,
    /// Where the bytes are: a temporary key, or (S3) the final one.
    pub key: BlobKey,
    /// The store's multipart upload, once the writer has begun one (S3, past one part).
    multipart_id: Arc<OnceLock<String>>,
    /// The store was asked for a multipart upload: one may be open even with no id known.
    asked: Arc<AtomicBool>,
    armed: bool,
}

impl Staged {
    /// Records the upload, then begins its blob: another instance can always find what this
    /// one began, should it die. Should the writer begin a multipart upload, its id is
    /// recorded the moment the store tells it.
    pub async fn begin(
        db: &Db,
        blobs: &BlobStore,
        instance: Uuid,
        event_id: Uuid,
        upload_id: Uuid,
    ) -> Result<(BlobWriter, Staged), IngestError> {
        let key = blobs.upload_key(event_id, upload_id);
        let staged = Self::adopt(db, blobs, instance, upload_id, key).await?;
        // Dropped on failure: the record goes again.
        let writer = blobs.begin_upload(event_id, upload_id, staged.record_multipart()).await?;
        Ok((writer, staged))
    }

    /// Records the upload at `key` as this instance's staged upload, from now until its commit.
    async fn adopt(
        db: &Db,
        blobs: &BlobStore,
        instance: Uuid,
        upload_id: Uuid,
        key: BlobKey,
    ) -> Result<Staged, IngestError> {
        let record = StagedUpload {
            upload_id,
            instance_id: instance,
            blob_key: key.path().to_string(),
            multipart_id: None,
            started_at: chrono::Utc::now(),
        };
        db.stage_upload(&record).await.map_err(anyhow::Error::from)?;
        Ok(Staged::new(db, blobs, upload_id, key, true))
    }

    /// A resumable upload's assembled bytes at `key`: not recorded, and left where they are
    /// when dropped (the resource owns them: a retry completes them, the resumable sweep
    /// removes them with it); `delete_now` (a refusal) removes them.
    pub fn owned_by_resource(db: &Db, blobs: &BlobStore, upload_id: Uuid, key: BlobKey) -> Staged {
        Staged::new(db, blobs, upload_id, key, false)
    }

    fn new(db: &Db, blobs: &BlobStore, upload_id: Uuid, key: BlobKey, armed: bool) -> Staged {
        let (multipart_id, asked) = (Arc::new(OnceLock::new()), Arc::new(AtomicBool::new(false)));
        Staged { db: db.clone(), blobs: blobs.clone(), upload_id, key, multipart_id, asked, armed }
    }

    /// What abandoning the upload must abort: the multipart upload known by its id, and
    /// (`true`) any other open at the key when one was asked for but its id is not known.
    fn begun(&self) -> (Option<String>, bool) {
        let id = self.multipart_id.get().cloned();
        let unknown = id.is_none() && self.asked.load(Ordering::SeqCst);
        (id, unknown)
    }

    /// Records the multipart upload `create` makes, and keeps its id for abandoning it.
    fn record_multipart(&self) -> RecordMultipart {
        let (db, upload_id, known) = (self.db.clone(), self.upload_id, Arc::clone(&self.multipart_id));
        let asked = Arc::clone(&self.asked);
        Box::new(move |create| {
            // Before the store is asked: a request dropped while it answers leaves an upload
            // whose id only a listing finds.
            asked.store(true, Ordering::SeqCst);
            async move {
                // Known here before it is recorded: should the record fail, abandoning the
                // upload still aborts it.
                let created = async {
                    let id = create.await?;
                    let _ = known.set(id.clone());
                    Ok::<_, object_store::Error>(id)
                };
                match db.record_multipart_while(upload_id, created).await {
                    Ok(result) => result,
                    Err(e) => Err(object_store::Error::Generic { store: "staged_uploads", source: Box::new(e) }),
                }
            }
            .boxed()
        })
    }

    /// Committed: the record went with the commit, the blob belongs to the row.
    pub fn disarm(&mut self) {
        self.armed = false;
    }

    /// Abandons the upload now, and waits for it.
    pub async fn delete_now(mut self) {
        self.armed = false;
        abandon(&self.db, &self.blobs, self.upload_id, self.key, self.begun()).await;
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if self.armed
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let (db, blobs, upload_id, key, begun) =
                (self.db.clone(), self.blobs.clone(), self.upload_id, self.key, self.begun());
            runtime.spawn(async move { abandon(&db, &blobs, upload_id, key, begun).await });
        }
    }
}

/// The blob and multipart upload first, then the record: a record without a blob is cleaned
/// up again harmlessly, a blob without a record would only be found by the slow sweep.
async fn abandon(db: &Db, blobs: &BlobStore, upload_id: Uuid, key: BlobKey, begun: (Option<String>, bool)) {
    let (multipart_id, unknown) = begun;
    if let Err(e) = blobs.abandon(key, multipart_id.as_deref(), unknown).await {
        tracing::warn!(error = %e, ?key, "could not remove an abandoned upload; a dead-instance cleanup or the sweep will");
        return;
    }
    if let Err(e) = db.unstage_upload(upload_id).await {
        tracing::warn!(error = %e, %upload_id, "could not forget an abandoned upload; cleaning up after this instance will");
    }
}
