//! `confetti backup` and `confetti restore`: a consistent copy of an instance while it serves,
//! and bringing one back into an empty data directory.
//!
//! A backup is a place (a directory, or `s3://bucket/prefix`) holding `manifest.json`, the
//! SQLite database of one instant (`confetti-<id>.db`; none on PostgreSQL, whose database
//! `pg_dump` keeps) and every blob of the photo store under `blobs/<key>`. Its order makes it
//! consistent: the database snapshot first, then every blob the snapshot names (and whatever
//! else the store holds), then the database file, then the manifest. A photo committed after
//! the snapshot may or may not be copied and does not matter; one in the snapshot has its
//! bytes in the backup before the manifest names that database.
//!
//! Running it again on the same place brings the backup up to date: blobs never change under
//! their key (an upload's id is new, its original is written once, and a derivative made again
//! is made from the same original by the same code), so a blob already there with the same
//! size is not copied again, and a second backup copies only what is new. Temporary and
//! partial (resumable) blobs are never copied: their uploads are not committed.

mod copy;
mod manifest;
mod restore;
mod snapshot;

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::Path as FsPath;
use std::time::Instant;

use chrono::Utc;
use object_store::path::Path;
use object_store::{GetResult, ObjectStoreExt};
use sha2::{Digest, Sha256};
use uuid::Uuid;

pub use manifest::{DatabaseFile, Manifest};
pub use restore::{Restored, Target, restore, restore_command};

use crate::blobs::{BlobKey, BlobStore};
use crate::config::BackupArgs;
use crate::db::Db;
use crate::db::backups::BackupRecord;
use copy::{REQUEST_TIMEOUT, timed};

/// Where a backup keeps the photo store's blobs, each at its key.
const BLOBS: &str = "blobs";

/// What a backup did.
#[derive(Clone, Debug)]
pub struct BackedUp {
    /// As written at the destination.
    pub manifest: Manifest,
    /// Where it went, as given.
    pub destination: String,
    /// Originals this run copied (new photos since the last run).
    pub copied_originals: u64,
    /// Blobs the snapshot names whose uploads were deleted while the backup ran.
    pub deleted_meanwhile: u64,
    pub seconds: f64,
}

/// `confetti backup`: opens the instance's database and photo store as `serve` does and
/// backs them up to `--to`; fails (after writing the backup) when blobs are missing.
pub async fn backup_command(args: BackupArgs) -> anyhow::Result<()> {
    let db = Db::connect(args.site.database_url.as_deref(), &args.site.data_dir).await?;
    let done = async {
        let blobs = BlobStore::open(args.storage.as_deref(), &args.site.data_dir)?;
        let to = open_place(&args.to, true)?;
        backup(&db, &blobs, &to, &args.to, &args.site.data_dir).await
    }
    .await;
    db.close().await;
    let done = done?;
    println!("{done}");
    if let Some(first) = done.manifest.missing_blobs.first() {
        anyhow::bail!(
            "{} blobs the database names are not in the photo store (first: {first}); the backup holds everything else",
            done.manifest.missing_blobs.len()
        );
    }
    Ok(())
}

/// Backs up `db` and `blobs` to `to` (named `destination` in the manifest, the summary and
/// the database's record of it). A SQLite snapshot is written to `scratch_dir` on its way.
pub async fn backup(
    db: &Db,
    blobs: &BlobStore,
    to: &BlobStore,
    destination: &str,
    scratch_dir: &FsPath,
) -> anyhow::Result<BackedUp> {
    let (id, started_at, clock) = (Uuid::now_v7(), Utc::now(), Instant::now());
    let snapshot = snapshot::take(db, scratch_dir).await?;
    let needed: Vec<BlobKey> = snapshot.uploads.iter().flat_map(snapshot::needed).collect();
    let there = copy::sizes(to, BLOBS).await?;
    let mut stored = copy::sizes(blobs, "originals").await?;
    stored.extend(copy::sizes(blobs, "derivatives").await?);

    // What the store holds, and what the snapshot names that the listing missed (an original
    // still under its temporary key, moved since): each copied unless already there.
    let mut plan: Vec<(BlobKey, Option<u64>)> = Vec::new();
    let (mut held, mut held_bytes) = (HashSet::new(), 0u64);
    let listed: HashMap<BlobKey, u64> =
        stored.iter().filter_map(|(path, size)| Some((BlobKey::parse(path)?, *size))).collect();
    let unlisted = needed.iter().filter(|key| !listed.contains_key(key)).map(|key| (*key, None));
    for (key, size) in listed.iter().map(|(key, size)| (*key, Some(*size))).chain(unlisted) {
        match (there.get(&in_backup(key)), size) {
            (Some(had), Some(size)) if *had == size => {
                held.insert(key);
                held_bytes += size;
            }
            _ => plan.push((key, size)),
        }
    }
    let copied = copy::each(plan, |(key, _)| copy_blob(blobs, to, key)).await?;
    let (mut copied_blobs, mut copied_bytes, mut copied_originals) = (0u64, 0u64, 0u64);
    for (key, bytes) in copied.into_iter().filter_map(|(key, bytes)| Some((key, bytes?))) {
        held.insert(key);
        (copied_blobs, copied_bytes) = (copied_blobs + 1, copied_bytes + bytes);
        copied_originals += u64::from(matches!(key, BlobKey::Original { .. }));
    }

    // A needed blob the store does not have: its upload was deleted after the snapshot (the
    // restore deletes it again), or the store lost it (said loudly, and named in the manifest).
    let (mut missing_blobs, mut deleted_meanwhile) = (Vec::new(), 0);
    for key in needed.iter().filter(|key| !held.contains(key)) {
        let (_, upload_id) = key.upload().unwrap_or_default();
        if db.upload_is_deleted(upload_id).await? {
            deleted_meanwhile += 1;
        } else {
            missing_blobs.push(key.path().to_string());
        }
    }

    let database = match &snapshot.file {
        Some(file) => Some(put_database(&file.0, to, &format!("confetti-{id}.db")).await?),
        None => None,
    };
    let earlier = manifest::read(to, destination).await.ok();
    let manifest = Manifest {
        format: manifest::FORMAT,
        confetti_version: env!("CARGO_PKG_VERSION").to_owned(),
        schema_version: snapshot.schema_version,
        backend: db.backend().to_owned(),
        storage: blobs.kind().to_owned(),
        started_at,
        finished_at: Utc::now(),
        database,
        uploads: snapshot.uploads.iter().filter(|u| u.deleted_at.is_none()).count() as u64,
        blobs: held.len() as u64,
        bytes: held_bytes + copied_bytes,
        copied_blobs,
        copied_bytes,
        missing_blobs,
    };
    manifest::write(to, &manifest).await?;
    forget_earlier_database(to, earlier, &manifest).await;
    db.record_backup(&record(id, destination, &manifest)).await?;
    let seconds = clock.elapsed().as_secs_f64();
    Ok(BackedUp { manifest, destination: destination.to_owned(), copied_originals, deleted_meanwhile, seconds })
}

/// Copies one blob into the backup; `None` when the store does not have it (any more). An
/// original is read under its temporary key when it is not (yet) under its final one.
async fn copy_blob(blobs: &BlobStore, to: &BlobStore, key: BlobKey) -> anyhow::Result<(BlobKey, Option<u64>)> {
    let read = match key {
        BlobKey::Original { event_id, upload_id } => blobs.get_original(event_id, upload_id, None).await,
        _ => blobs.get(key, None).await,
    };
    let read: GetResult = match read {
        Ok(read) => read,
        Err(object_store::Error::NotFound { .. }) => return Ok((key, None)),
        Err(e) => return Err(e.into()),
    };
    let size = read.meta.size;
    let bytes = copy::write(copy::chunks_of(read), size, to, &in_backup(key), |_| {}).await?;
    Ok((key, Some(bytes)))
}

/// Writes the SQLite snapshot to the backup under `name`, hashing it on its way.
async fn put_database(file: &FsPath, to: &BlobStore, name: &str) -> anyhow::Result<DatabaseFile> {
    let opened = tokio::fs::File::open(file).await?;
    let length = opened.metadata().await?.len();
    let mut hash = Sha256::new();
    let bytes =
        copy::write(copy::file_chunks(opened, length), length, to, &Path::from(name), |chunk| hash.update(chunk))
            .await?;
    Ok(DatabaseFile { file: name.to_owned(), bytes, sha256: hex::encode(hash.finalize()) })
}

/// Removes the database file the earlier manifest named, now that the new manifest names
/// another; a failure only leaves a file behind.
async fn forget_earlier_database(to: &BlobStore, earlier: Option<Manifest>, now: &Manifest) {
    let Some(old) = earlier.and_then(|m| m.database).map(|d| d.file) else {
        return;
    };
    if now.database.as_ref().is_some_and(|d| d.file == old) {
        return;
    }
    if let Err(e) = timed(REQUEST_TIMEOUT, to.object_store().delete(&Path::from(old.as_str()))).await {
        tracing::warn!(error = %e, file = old, "could not remove the earlier backup's database file");
    }
}

fn record(id: Uuid, destination: &str, manifest: &Manifest) -> BackupRecord {
    let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    BackupRecord {
        id,
        started_at: manifest.started_at,
        finished_at: manifest.finished_at,
        destination: destination.to_owned(),
        with_database: manifest.database.is_some(),
        uploads: count(manifest.uploads),
        blobs: count(manifest.blobs),
        bytes: count(manifest.bytes),
        copied_blobs: count(manifest.copied_blobs),
        copied_bytes: count(manifest.copied_bytes),
        missing_blobs: count(manifest.missing_blobs.len() as u64),
    }
}

/// Where a blob is in a backup.
fn in_backup(key: BlobKey) -> Path {
    Path::from(format!("{BLOBS}/{}", key.path()))
}

/// The blob a path of a backup holds; `None` for anything else.
fn key_in_backup(path: &Path) -> Option<BlobKey> {
    let key: Path = path.prefix_match(&Path::from(BLOBS))?.collect();
    BlobKey::parse(&key).filter(|key| key.upload().is_some())
}

/// A backup's place: `s3://bucket/prefix` (through the `AWS_*` environment, as the photo
/// store), or a directory, created (private to this user) when `create` says so.
fn open_place(spec: &str, create: bool) -> anyhow::Result<BlobStore> {
    if !spec.starts_with("s3://") {
        let dir = spec.strip_prefix("file://").unwrap_or(spec);
        anyhow::ensure!(create || FsPath::new(dir).is_dir(), "{spec} holds no Confetti backup: no such directory");
        anyhow::ensure!(!spec.starts_with("memory:"), "a backup goes to a directory or an s3:// URL");
    }
    BlobStore::open(Some(spec), FsPath::new("."))
}

/// Bytes as an operator reads them.
fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b => format!("{:.1} KiB", b as f64 / 1024.0),
    }
}

/// The one line `confetti backup` prints.
impl fmt::Display for BackedUp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = &self.manifest;
        write!(
            f,
            "backup to {}: {} uploads, {} blobs ({}); copied {} blobs ({}, {} new originals) in {:.1} s; ",
            self.destination,
            m.uploads,
            m.blobs,
            size(m.bytes),
            m.copied_blobs,
            size(m.copied_bytes),
            self.copied_originals,
            self.seconds
        )?;
        match &m.database {
            Some(db) => write!(f, "database snapshot {}", size(db.bytes))?,
            None => write!(f, "database not included: pair it with the pg_dump made just before")?,
        }
        if self.deleted_meanwhile > 0 {
            write!(f, "; {} blobs of photos deleted meanwhile skipped", self.deleted_meanwhile)?;
        }
        if !m.missing_blobs.is_empty() {
            write!(f, "; {} MISSING from the photo store", m.missing_blobs.len())?;
        }
        Ok(())
    }
}
