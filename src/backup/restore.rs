//! `confetti restore`: a backup brought back into an empty data directory. The manifest says
//! what the backup holds: with a SQLite database, the database file (checked against its
//! SHA-256, then opened, which brings it up to this build's schema) and the photos; from a
//! PostgreSQL instance, the photos only (its `pg_dump` is restored before, into the database
//! `--database-url` names). Photos go into the data directory's photo store, or into
//! `--storage`. Last, photos deleted while the backup ran are deleted in the restored database
//! too. Everything is created readable by this user only.

use std::collections::HashSet;
use std::fmt;
use std::path::{Path as FsPath, PathBuf};
use std::time::Instant;

use object_store::ObjectStoreExt;
use object_store::path::Path;
use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;

use super::copy::{self, REQUEST_TIMEOUT, timed};
use super::manifest::{self, DatabaseFile, Manifest};
use super::{BLOBS, key_in_backup, open_place, size};
use crate::blobs::{BlobKey, BlobStore};
use crate::config::RestoreArgs;
use crate::db::Db;
use crate::db::backups::known_schema_version;

/// What a restore did.
#[derive(Clone, Debug)]
pub struct Restored {
    pub manifest: Manifest,
    pub data_dir: PathBuf,
    /// Whether the database file was restored (SQLite).
    pub database: bool,
    /// Blobs the photo store holds from the backup, and their bytes.
    pub blobs: u64,
    pub bytes: u64,
    /// What this run copied (a store that already held some is not written twice).
    pub copied_blobs: u64,
    /// Photos whose bytes the backup lacks because they were deleted while it ran (after the
    /// database's snapshot or dump): deleted here too, their quota given back.
    pub deleted_meanwhile: u64,
    pub seconds: f64,
}

/// `confetti restore`: brings the backup at `--from` back into `--data-dir` (and, for a backup
/// of a PostgreSQL instance, the database `--database-url` names, filled by `pg_restore`).
pub async fn restore_command(args: RestoreArgs) -> anyhow::Result<()> {
    let from = open_place(&args.from, false)?;
    let to = Target {
        data_dir: &args.site.data_dir,
        database_url: args.site.database_url.as_deref(),
        storage: args.storage.as_deref(),
    };
    let restored = restore(&from, &args.from, to).await?;
    println!("{restored}");
    Ok(())
}

/// Where a restore goes.
#[derive(Clone, Copy, Debug)]
pub struct Target<'a> {
    /// Empty or absent; gets the SQLite database and, by default, the photos.
    pub data_dir: &'a FsPath,
    /// For a backup of a PostgreSQL instance: the database its `pg_dump` was restored into.
    pub database_url: Option<&'a str>,
    /// Where the photos go (as `--storage`: a directory or `s3://…`), opened once the data
    /// directory is found empty; default the data directory's store.
    pub storage: Option<&'a str>,
}

/// Restores the backup at `from` (named `name` in messages) into `to`.
pub async fn restore(from: &BlobStore, name: &str, to: Target<'_>) -> anyhow::Result<Restored> {
    let clock = Instant::now();
    refuse_unless_empty(to.data_dir).await?;
    let manifest = manifest::read(from, name).await?;
    let postgres = manifest.backend == "postgres";
    let known = known_schema_version(postgres);
    anyhow::ensure!(
        manifest.schema_version <= known,
        "{name} was made by a newer Confetti ({}, schema {}); this one knows schema {known} at most",
        manifest.confetti_version,
        manifest.schema_version
    );
    match (postgres, to.database_url) {
        (false, Some(_)) => {
            anyhow::bail!("{name} holds a SQLite database, restored into --data-dir: leave out --database-url")
        }
        (true, None) => anyhow::bail!(
            "{name} is a backup of a PostgreSQL instance: restore its pg_dump first, then name that database with --database-url"
        ),
        _ => {}
    }
    crate::private_files::private_dir(to.data_dir)?;
    if let Some(database) = &manifest.database {
        restore_database(from, database, to.data_dir).await?;
    }
    let db = Db::connect(to.database_url, to.data_dir).await?;
    let done = async {
        if manifest.database.is_some() {
            match db.sqlite_quick_check().await? {
                ok if ok == "ok" => {}
                problem => anyhow::bail!("the restored database fails SQLite's check: {problem}"),
            }
        }
        let photos = BlobStore::open(to.storage, to.data_dir)?;
        let (blobs, bytes, copied_blobs) = restore_blobs(from, &photos).await?;
        let deleted_meanwhile = delete_what_was_deleted_meanwhile(&db, &photos, &manifest).await?;
        anyhow::Ok((blobs, bytes, copied_blobs, deleted_meanwhile))
    }
    .await;
    db.close().await;
    let (blobs, bytes, copied_blobs, deleted_meanwhile) = done?;
    Ok(Restored {
        database: manifest.database.is_some(),
        manifest,
        data_dir: to.data_dir.to_owned(),
        blobs,
        bytes,
        copied_blobs,
        deleted_meanwhile,
        seconds: clock.elapsed().as_secs_f64(),
    })
}

/// A restore starts from nothing: a data directory holding anything (an earlier instance's
/// database, a token) is refused, so nothing of it is mixed or overwritten.
async fn refuse_unless_empty(data_dir: &FsPath) -> anyhow::Result<()> {
    let first = match tokio::fs::read_dir(data_dir).await {
        Ok(mut entries) => entries.next_entry().await,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => Err(e),
    };
    match first {
        Ok(None) => Ok(()),
        Ok(Some(entry)) => anyhow::bail!(
            "the data directory {} is not empty (it holds {:?}): restore needs an empty one",
            data_dir.display(),
            entry.file_name()
        ),
        Err(e) => anyhow::bail!("cannot read the data directory {}: {e}", data_dir.display()),
    }
}

/// Writes the database file as `confetti.db` (under another name until its SHA-256 matched);
/// opening it then brings it up to this build's schema.
async fn restore_database(from: &BlobStore, database: &DatabaseFile, data_dir: &FsPath) -> anyhow::Result<()> {
    let partial = data_dir.join("confetti.db.partial");
    let read = timed(REQUEST_TIMEOUT, from.object_store().get(&Path::from(database.file.as_str()))).await?;
    let mut chunks = copy::chunks_of(read);
    let mut file = tokio::fs::File::create(&partial).await?;
    let mut hash = Sha256::new();
    while let Some(chunk) =
        timed(REQUEST_TIMEOUT, async { futures_util::StreamExt::next(&mut chunks).await.transpose() }).await?
    {
        hash.update(&chunk);
        file.write_all(&chunk).await?;
    }
    file.sync_all().await?;
    drop(file);
    let sha256 = hex::encode(hash.finalize());
    if sha256 != database.sha256 {
        let _ = tokio::fs::remove_file(&partial).await;
        anyhow::bail!(
            "the backup's database file {} is damaged (its SHA-256 differs from the manifest's)",
            database.file
        );
    }
    tokio::fs::rename(&partial, data_dir.join("confetti.db")).await?;
    Ok(())
}

/// Copies every blob of the backup into `photos` (those not there with the same size);
/// returns the blobs and bytes it holds from the backup, and how many were copied.
async fn restore_blobs(from: &BlobStore, photos: &BlobStore) -> anyhow::Result<(u64, u64, u64)> {
    let in_backup = copy::sizes(from, BLOBS).await?;
    let mut there = copy::sizes(photos, "originals").await?;
    there.extend(copy::sizes(photos, "derivatives").await?);
    let (mut blobs, mut bytes, mut plan) = (0, 0, Vec::new());
    for (path, size) in in_backup {
        let Some(key) = key_in_backup(&path) else { continue };
        (blobs, bytes) = (blobs + 1, bytes + size);
        if there.get(&key.path()) != Some(&size) {
            plan.push((path, key.path(), size));
        }
    }
    let copied = copy::each(plan, |(path, to, size)| async move {
        let read = timed(REQUEST_TIMEOUT, from.object_store().get(&path)).await?;
        copy::write(copy::chunks_of(read), size, photos, &to, |_| {}).await
    })
    .await?;
    Ok((blobs, bytes, copied.len() as u64))
}

/// A photo the database holds whose original the backup lacks, and that the manifest does not
/// name as missing from the store, was deleted while the backup ran: after the snapshot (or the
/// dump) and before its bytes were copied. It is deleted here too, as its guest or organiser
/// deleted it, quota given back, rather than shown without its bytes. (A photo the manifest
/// names as missing stays: its loss is the store's, and the organiser should see it.)
async fn delete_what_was_deleted_meanwhile(db: &Db, photos: &BlobStore, manifest: &Manifest) -> anyhow::Result<u64> {
    let mut there = copy::sizes(photos, "originals").await?;
    let missing: HashSet<&str> = manifest.missing_blobs.iter().map(String::as_str).collect();
    let mut deleted = 0;
    for upload in db.stored_uploads().await?.into_iter().filter(|u| u.deleted_at.is_none()) {
        let original = BlobKey::Original { event_id: upload.event_id, upload_id: upload.id }.path();
        if there.remove(&original).is_some() || missing.contains(original.as_ref()) {
            continue;
        }
        let mut tx = db.begin().await?;
        if let Some((guest_id, bytes)) = tx.mark_upload_deleted(upload.id).await? {
            tx.refund_quota(guest_id, bytes).await?;
            deleted += 1;
        }
        tx.commit().await?;
    }
    Ok(deleted)
}

/// The one line `confetti restore` prints.
impl fmt::Display for Restored {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = &self.manifest;
        write!(
            f,
            "restored the backup of {} ({} uploads) into {}: {} blobs ({}), {} copied, in {:.1} s; ",
            m.finished_at.format("%Y-%m-%d %H:%M:%S UTC"),
            m.uploads,
            self.data_dir.display(),
            self.blobs,
            size(self.bytes),
            self.copied_blobs,
            self.seconds
        )?;
        match self.database {
            true => write!(f, "database restored (SQLite, schema {})", m.schema_version)?,
            false => write!(f, "photos only (the PostgreSQL database is its pg_dump's)")?,
        }
        if self.deleted_meanwhile > 0 {
            write!(f, "; {} photos deleted while the backup ran, deleted here too", self.deleted_meanwhile)?;
        }
        Ok(())
    }
}
