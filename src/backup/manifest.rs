//! `manifest.json`, the backup's description: written last, so a place with a manifest holds a
//! whole backup (the database of that moment and every blob it names), and read first by a
//! restore, which learns from it what to bring back.

use chrono::{DateTime, Utc};
use object_store::ObjectStoreExt;
use object_store::path::Path;
use serde::{Deserialize, Serialize};

use super::copy::{REQUEST_TIMEOUT, timed};
use crate::blobs::BlobStore;

/// Where the manifest is, at the backup's root.
pub const FILE: &str = "manifest.json";
/// The layout this build writes and reads: `manifest.json`, `confetti.db` (SQLite) and every
/// blob under `blobs/` at its key in the photo store.
pub const FORMAT: u32 = 1;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Manifest {
    /// The backup's layout (`FORMAT`).
    pub format: u32,
    /// The Confetti that made it.
    pub confetti_version: String,
    /// The newest migration of the database it holds or pairs with.
    pub schema_version: i64,
    /// `sqlite`: the database is in the backup. `postgres`: it is in a `pg_dump` made just
    /// before, and the backup holds the photos only.
    pub backend: String,
    /// The photo store it was copied from: `local` or `s3`.
    pub storage: String,
    pub started_at: DateTime<Utc>,
    pub finished_at: DateTime<Utc>,
    /// The SQLite database file, when the backup holds one.
    pub database: Option<DatabaseFile>,
    /// Uploads in the database's snapshot that are not deleted.
    pub uploads: u64,
    /// Blobs (originals and derivatives) the backup holds for the snapshot, and their bytes.
    pub blobs: u64,
    pub bytes: u64,
    /// What this run copied; the rest was there from an earlier run.
    pub copied_blobs: u64,
    pub copied_bytes: u64,
    /// Keys the snapshot names that the photo store did not have; their uploads were not
    /// deleted since. Empty in a healthy backup.
    pub missing_blobs: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DatabaseFile {
    /// Its name at the backup's root.
    pub file: String,
    pub bytes: u64,
    /// Hex SHA-256, checked by the restore.
    pub sha256: String,
}

/// Writes the manifest (replacing an earlier run's): the last write of a backup.
pub async fn write(place: &BlobStore, manifest: &Manifest) -> anyhow::Result<()> {
    let json = serde_json::to_vec_pretty(manifest)?;
    timed(REQUEST_TIMEOUT, place.object_store().put(&Path::from(FILE), json.into())).await?;
    Ok(())
}

/// The manifest at `place`, with a one-line reason when there is none or it cannot be read.
pub async fn read(place: &BlobStore, name: &str) -> anyhow::Result<Manifest> {
    let read = async { place.object_store().get(&Path::from(FILE)).await?.bytes().await };
    let bytes = match timed(REQUEST_TIMEOUT, read).await {
        Ok(bytes) => bytes,
        Err(e) if is_not_found(&e) => anyhow::bail!("{name} holds no Confetti backup: {FILE} is missing"),
        Err(e) => anyhow::bail!("cannot read {FILE} of {name}: {e}"),
    };
    let manifest: Manifest = serde_json::from_slice(&bytes)
        .map_err(|e| anyhow::anyhow!("{FILE} of {name} is not a Confetti manifest: {e}"))?;
    anyhow::ensure!(
        manifest.format == FORMAT,
        "{name} is a backup of format {}, this Confetti reads format {FORMAT}",
        manifest.format
    );
    Ok(manifest)
}

fn is_not_found(e: &anyhow::Error) -> bool {
    matches!(e.downcast_ref::<object_store::Error>(), Some(object_store::Error::NotFound { .. }))
}
