//! `confetti restore`: a backup brought back into an empty data directory. The manifest says
//! what the backup holds: with a SQLite database, the database file (checked against its
//! SHA-256, then opened and brought up to this build's schema) and the photos; from a
//! PostgreSQL instance, the photos only (the database comes back with `pg_restore` or `psql`,
//! before). Photos go into the data directory's photo store, or into `--storage`. Everything
//! is created readable by this user only.

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
use crate::blobs::BlobStore;
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
    pub seconds: f64,
}

/// `confetti restore`: brings the backup at `--from` back into `--data-dir`.
pub async fn restore_command(args: RestoreArgs) -> anyhow::Result<()> {
    if args.site.database_url.as_deref().is_some_and(|url| url.starts_with("sqlite:")) {
        anyhow::bail!("restore writes the SQLite database into --data-dir; leave out --database-url");
    }
    let from = open_place(&args.from, false)?;
    let restored = restore(&from, &args.from, &args.site.data_dir, args.storage.as_deref()).await?;
    println!("{restored}");
    Ok(())
}

/// Restores the backup at `from` (named `name` in messages) into `data_dir`, which must be
/// empty or absent. Photos go to the store `storage` names (as `--storage` does; opened once
/// the data directory is found empty), else to the data directory's.
pub async fn restore(
    from: &BlobStore,
    name: &str,
    data_dir: &FsPath,
    storage: Option<&str>,
) -> anyhow::Result<Restored> {
    let clock = Instant::now();
    refuse_unless_empty(data_dir)?;
    let manifest = manifest::read(from, name).await?;
    let postgres = manifest.backend == "postgres";
    let known = known_schema_version(postgres);
    anyhow::ensure!(
        manifest.schema_version <= known,
        "{name} was made by a newer Confetti ({}, schema {}); this one knows schema {known} at most",
        manifest.confetti_version,
        manifest.schema_version
    );
    crate::private_files::private_dir(data_dir)?;
    if let Some(database) = &manifest.database {
        restore_database(from, database, data_dir).await?;
    }
    let photos = BlobStore::open(storage, data_dir)?;
    let (blobs, bytes, copied_blobs) = restore_blobs(from, &photos).await?;
    let seconds = clock.elapsed().as_secs_f64();
    let database = manifest.database.is_some();
    Ok(Restored { manifest, data_dir: data_dir.to_owned(), database, blobs, bytes, copied_blobs, seconds })
}

/// A restore starts from nothing: a data directory holding anything (an earlier instance's
/// database, a token) is refused, so nothing of it is mixed or overwritten.
fn refuse_unless_empty(data_dir: &FsPath) -> anyhow::Result<()> {
    match std::fs::read_dir(data_dir) {
        Ok(mut entries) => match entries.next() {
            None => Ok(()),
            Some(entry) => {
                let held = entry.map(|e| e.file_name().to_string_lossy().into_owned()).unwrap_or_default();
                anyhow::bail!(
                    "the data directory {} is not empty (it holds {held:?}): restore needs an empty one",
                    data_dir.display()
                )
            }
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => anyhow::bail!("cannot read the data directory {}: {e}", data_dir.display()),
    }
}

/// Writes the database file as `confetti.db` (under another name until its SHA-256 matched),
/// then opens it, which brings it up to this build's schema, and checks it.
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
    let db = Db::connect(None, data_dir).await?;
    let check = db.sqlite_quick_check().await;
    db.close().await;
    match check? {
        ok if ok == "ok" => Ok(()),
        problem => anyhow::bail!("the restored database fails SQLite's check: {problem}"),
    }
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
            true => write!(f, "database restored (SQLite, schema {})", m.schema_version),
            false => write!(f, "photos only: restore the PostgreSQL database from its pg_dump (pg_restore or psql)"),
        }
    }
}
