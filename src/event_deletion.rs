//! Deleting an event (the instance admin): in one transaction the event is marked deleted,
//! every upload of it marked deleted with a durable 'delete' blob job each (the same job a
//! single upload's deletion queues), and its organiser sessions end. From the commit on, every
//! lookup by slug, guest token or organiser session treats the event as gone. The blobs are
//! removed after the commit, in the background: an event can hold thousands of photos, and
//! the jobs are durable, so a process that stops first leaves them to the workers.

use chrono::{DateTime, Utc};
use futures_util::StreamExt;
use uuid::Uuid;

use crate::db::Tx;
use crate::db::blob_jobs::BlobJob;
use crate::jobs::blob_jobs::BlobJobs;

/// How many of the deleted event's blob jobs run at once: enough to be quick on S3, few enough
/// to leave the store to the guests of other events.
const CONCURRENT_REMOVALS: usize = 4;

/// A deleted event's photos, still to be removed from the store.
#[must_use = "the blobs are removed by `Removal::start` after the commit"]
pub struct Removal {
    /// Uploads that were live until now.
    pub photos: u64,
    jobs: Vec<BlobJob>,
}

/// Deletes the event in `tx` (which the caller commits): `None` when it is gone already.
pub async fn delete(tx: &mut Tx, event_id: Uuid, claim: (Uuid, DateTime<Utc>)) -> sqlx::Result<Option<Removal>> {
    let now = Utc::now();
    if !tx.mark_event_deleted(event_id, now).await? {
        return Ok(None);
    }
    let photos = tx.mark_event_uploads_deleted(event_id, now).await?;
    let jobs = tx.queue_event_blob_deletes(event_id, claim).await?;
    tx.end_organiser_sessions(event_id).await?;
    Ok(Some(Removal { photos, jobs }))
}

impl Removal {
    /// After the commit: runs the blob jobs in the background, a few at a time. A job that
    /// fails is given back and retried by the workers until the store takes it.
    pub fn start(self, blob_jobs: BlobJobs) {
        if self.jobs.is_empty() {
            return;
        }
        tokio::spawn(async move {
            futures_util::stream::iter(self.jobs)
                .for_each_concurrent(CONCURRENT_REMOVALS, |job| blob_jobs.run(job))
                .await;
        });
    }
}
