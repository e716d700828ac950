//! The database side of a backup, taken before any blob is copied: a SQLite database is copied
//! at one instant while the server writes (`VACUUM INTO`, one read transaction; WAL mode lets
//! writers go on meanwhile); a PostgreSQL database is read as it stands (its dump is `pg_dump`'s,
//! made before, so every row of the dump is in this reading or was deleted since). From it,
//! the blobs each upload must have in the backup.

use std::path::{Path, PathBuf};

use uuid::Uuid;

use crate::blobs::BlobKey;
use crate::db::Db;
use crate::db::backups::StoredUpload;
use crate::domain::{MediaKind, UploadStatus};

pub struct Snapshot {
    /// The SQLite copy, removed when the snapshot is dropped; `None` on PostgreSQL.
    pub file: Option<Scratch>,
    /// Every upload of the snapshot, deleted ones included.
    pub uploads: Vec<StoredUpload>,
    pub schema_version: i64,
}

/// A file of this run's, removed when dropped (also when the run fails half-way).
pub struct Scratch(pub PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_file(&self.0)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(error = %e, path = %self.0.display(), "could not remove a backup's scratch file");
        }
    }
}

/// Takes the snapshot; a SQLite copy is written into `scratch_dir` (the data directory: the
/// same disk as the database, which it is smaller than).
pub async fn take(db: &Db, scratch_dir: &Path) -> anyhow::Result<Snapshot> {
    match db {
        Db::Sqlite(_) => {
            let scratch = Scratch(scratch_dir.join(format!("confetti-backup-{}.db", Uuid::now_v7())));
            db.sqlite_snapshot_into(&scratch.0).await?;
            let copy = Db::open_sqlite_snapshot(&scratch.0).await?;
            let read = async { anyhow::Ok((copy.stored_uploads().await?, copy.schema_version().await?)) }.await;
            copy.close().await;
            let (uploads, schema_version) = read?;
            Ok(Snapshot { file: Some(scratch), uploads, schema_version })
        }
        Db::Postgres(_) => {
            let schema_version = db.schema_version().await?;
            Ok(Snapshot { file: None, uploads: db.stored_uploads().await?, schema_version })
        }
    }
}

/// The blobs an upload must have in the backup: a live upload's original, and its derivatives
/// once its row says they were made (a photo that is ready; a video whose poster was made).
/// A deleted upload needs none: its blobs are being removed, and a restored server removes
/// whatever of them it finds.
pub fn needed(upload: &StoredUpload) -> Vec<BlobKey> {
    if upload.deleted_at.is_some() {
        return Vec::new();
    }
    let (event_id, upload_id) = (upload.event_id, upload.id);
    let mut keys = vec![BlobKey::Original { event_id, upload_id }];
    if upload.status == UploadStatus::Ready && (upload.kind == MediaKind::Photo || upload.poster) {
        keys.push(BlobKey::Thumb { event_id, upload_id });
        if !upload.preview_pending {
            keys.push(BlobKey::Preview { event_id, upload_id });
        }
        if upload.webp_thumb {
            keys.push(BlobKey::ThumbWebp { event_id, upload_id });
        }
        if upload.avif_thumb {
            keys.push(BlobKey::ThumbAvif { event_id, upload_id });
        }
    }
    keys
}
