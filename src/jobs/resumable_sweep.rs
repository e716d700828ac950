//! Removes what resumable uploads leave: the bytes of resources cancelled or expired (their
//! file, or their S3 multipart upload and tail object) and then their rows, and the tombstones
//! of completed ones once they expired. The rows are the jobs: one whose removal failed, or
//! whose remover died, is found again next round.

use std::time::Duration;

use chrono::Utc;
use uuid::Uuid;

use crate::blobs::BlobStore;
use crate::db::Db;
use crate::db::resumable::ResumableRow;

/// How long a remover holds a resource: another takes it over after that.
const REMOVAL_LEASE: Duration = Duration::from_secs(300);
/// Resources removed per round at most.
const BATCH: i64 = 100;

/// Every minute, or a quarter of the expiry when that is shorter (tests use seconds).
pub fn spawn_sweep(db: Db, blobs: BlobStore, expiry: Duration, instance: Uuid) {
    let every = (expiry / 4).clamp(Duration::from_secs(1), Duration::from_secs(60));
    super::every(db.clone(), Some(instance), every, "resumable upload sweep", move || {
        let (db, blobs) = (db.clone(), blobs.clone());
        async move {
            let due = db.resumables_to_sweep(Utc::now(), BATCH).await?;
            let mut removed = 0;
            for row in &due {
                if remove(&db, &blobs, row).await {
                    removed += 1;
                }
            }
            if removed > 0 {
                tracing::info!(removed, "expired or cancelled resumable uploads removed");
            }
            Ok(())
        }
    });
}

/// Removes one resource due for it (cancelled, or expired) unless a request or another
/// remover holds it; `true` once its row is gone. A failure is logged and left for a later round.
pub async fn remove(db: &Db, blobs: &BlobStore, row: &ResumableRow) -> bool {
    let token = Uuid::now_v7();
    let now = Utc::now();
    let until = now + chrono::Duration::from_std(REMOVAL_LEASE).unwrap_or(chrono::Duration::minutes(5));
    match db.claim_resumable_removal(row.id, token, now, until).await {
        Ok(true) => {}
        Ok(false) => return false,
        Err(e) => {
            tracing::warn!(error = %e, id = %row.id, "could not claim a resumable upload for removal");
            return false;
        }
    }
    // A completed resource's bytes belong to its upload now.
    if row.state != "completed"
        && let Err(e) = blobs.remove_partial(row.event_id, row.id, row.multipart_id.as_deref()).await
    {
        tracing::warn!(error = %e, id = %row.id, "could not remove a resumable upload's bytes; retrying later");
        return false;
    }
    match db.delete_resumable(row.id, token).await {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!(error = %e, id = %row.id, "could not forget a removed resumable upload; retrying later");
            false
        }
    }
}
