//! The orphan sweep, at start and every quarter of an hour: blobs no row accounts for.
//! - Temporary blobs left by a crash or a killed request: one whose upload row committed is
//!   moved to its final key (the blob job that should have done it is lost, e.g. a database
//!   restored from before it); one without a live row is deleted, and so are half-written
//!   staging files of a local store.
//! - Originals and derivatives whose upload is deleted or has no row at all (a store restored
//!   from a backup, blobs written by a version before blob jobs): deleted.
//!
//! Blobs younger than `MIN_AGE` are left alone: another instance sharing the store may still
//! be receiving them, or finishing the commit they belong to.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use chrono::Utc;
use uuid::Uuid;

use crate::blobs::{BlobKey, BlobStore};
use crate::db::Db;

const MIN_AGE: Duration = Duration::from_secs(15 * 60);

/// Sweeps at start and then every `MIN_AGE`: after a quick restart (seconds, as a service
/// manager does it) a crashed upload's blobs are still too young, and the next round gets them.
pub fn spawn_sweep(db: Db, blobs: BlobStore, instance: Uuid) {
    super::every(db.clone(), Some(instance), MIN_AGE, "orphan sweep", move || {
        let (db, blobs) = (db.clone(), blobs.clone());
        async move {
            let (finalized, deleted) = sweep(&db, &blobs, MIN_AGE).await?;
            if finalized + deleted > 0 {
                tracing::info!(finalized, deleted, "orphan sweep done");
            }
            Ok(())
        }
    });
}

/// Returns how many blobs were finalized and how many deleted.
pub async fn sweep(db: &Db, blobs: &BlobStore, min_age: Duration) -> anyhow::Result<(usize, usize)> {
    let (mut finalized, mut deleted) = (0, 0);
    let now = Utc::now();
    for (id, meta) in blobs.list_temp().await? {
        if (now - meta.last_modified).to_std().unwrap_or_default() < min_age {
            continue;
        }
        let temp = BlobKey::Temp(id);
        match db.upload_by_id(id, None).await? {
            Some(row) if row.deleted_at.is_none() => {
                blobs.rename(temp, BlobKey::Original { event_id: row.event_id, upload_id: id }).await?;
                finalized += 1;
            }
            _ => {
                blobs.delete(temp).await?;
                deleted += 1;
            }
        }
    }
    deleted += blobs.sweep_local_staging(min_age).await?;
    deleted += sweep_final(db, blobs, min_age).await?;
    Ok((finalized, deleted))
}

/// Deletes originals and derivatives of uploads that are deleted or unknown; returns how many.
async fn sweep_final(db: &Db, blobs: &BlobStore, min_age: Duration) -> anyhow::Result<usize> {
    let now = Utc::now();
    let mut by_event: HashMap<Uuid, Vec<(Uuid, BlobKey)>> = HashMap::new();
    for (key, meta) in blobs.list_final().await? {
        if (now - meta.last_modified).to_std().unwrap_or_default() < min_age {
            continue;
        }
        if let Some((event_id, upload_id)) = key.upload() {
            by_event.entry(event_id).or_default().push((upload_id, key));
        }
    }
    let mut deleted = 0;
    for (event_id, found) in by_event {
        let live: HashSet<Uuid> = db.live_upload_ids(event_id).await?.into_iter().collect();
        for (upload_id, key) in found {
            if !live.contains(&upload_id) {
                blobs.delete(key).await?;
                deleted += 1;
            }
        }
    }
    Ok(deleted)
}
