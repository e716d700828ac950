//! The orphan sweep, at start and every quarter of an hour: temporary blobs left by a crash
//! or a killed request. A temporary blob whose upload row committed is moved to its final key
//! (the process died between commit and move); one without a live row is deleted, and so are
//! half-written staging files of a local store. Blobs younger than `MIN_AGE` are left alone:
//! another instance sharing the store may still be receiving them.

use std::time::Duration;

use chrono::Utc;

use crate::app::AppState;
use crate::blobs::BlobKey;

const MIN_AGE: Duration = Duration::from_secs(15 * 60);

/// Sweeps at start and then every `MIN_AGE`: after a quick restart (seconds, as a service
/// manager does it) a crashed upload's blobs are still too young, and the next round gets them.
pub fn spawn_sweep(state: AppState) {
    super::every(state, MIN_AGE, "orphan sweep", |state| async move {
        let (finalized, deleted) = sweep(&state, MIN_AGE).await?;
        if finalized + deleted > 0 {
            tracing::info!(finalized, deleted, "orphan sweep done");
        }
        Ok(())
    });
}

/// Returns how many blobs were finalized and how many deleted.
pub async fn sweep(state: &AppState, min_age: Duration) -> anyhow::Result<(usize, usize)> {
    let (mut finalized, mut deleted) = (0, 0);
    let now = Utc::now();
    for (id, meta) in state.blobs.list_temp().await? {
        if (now - meta.last_modified).to_std().unwrap_or_default() < min_age {
            continue;
        }
        let temp = BlobKey::Temp(id);
        match state.db.upload_by_id(id, None).await? {
            Some(row) if row.deleted_at.is_none() => {
                state.blobs.rename(temp, BlobKey::Original { event_id: row.event_id, upload_id: id }).await?;
                finalized += 1;
            }
            _ => {
                state.blobs.delete(temp).await?;
                deleted += 1;
            }
        }
    }
    deleted += state.blobs.sweep_local_staging(min_age).await?;
    Ok((finalized, deleted))
}
