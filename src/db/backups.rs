//! Backups: what a backup reads of the database (every upload with what it has in the photo
//! store, the schema's version), opening a SQLite snapshot to read it there, and the record of
//! each backup that ran, which the admin page shows.

use std::path::Path;

use chrono::{DateTime, Utc};
use sqlx::FromRow;
use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions};
use uuid::Uuid;

use super::{Db, on_db};
use crate::domain::{MediaKind, UploadStatus};

/// One upload as a backup sees it: enough to know which blobs it has.
#[derive(Clone, Debug, FromRow)]
pub struct StoredUpload {
    pub id: Uuid,
    pub event_id: Uuid,
    pub deleted_at: Option<DateTime<Utc>>,
    #[sqlx(try_from = "String")]
    pub status: UploadStatus,
    #[sqlx(try_from = "String")]
    pub kind: MediaKind,
    pub poster: bool,
    pub webp_thumb: bool,
    pub avif_thumb: bool,
    /// Shown by its thumb while its preview is still being made.
    pub preview_pending: bool,
}

/// A backup that ran, as recorded in the database it backed up.
#[derive(Clone, Debug, FromRow)]
pub struct BackupRecord {
    pub id: Uuid,
    pub started_at: DateTime<Utc>,
    pub finished_at: DateTime<Utc>,
    /// The directory or `s3://` URL it went to.
    pub destination: String,
    /// Whether it holds the database (SQLite); on PostgreSQL `pg_dump` does.
    pub with_database: bool,
    /// Uploads in the snapshot that were not deleted.
    pub uploads: i64,
    /// Blobs and bytes the backup holds for the snapshot.
    pub blobs: i64,
    pub bytes: i64,
    /// What this run copied; the rest was there from an earlier one.
    pub copied_blobs: i64,
    pub copied_bytes: i64,
    /// Blobs the snapshot names that the store did not have.
    pub missing_blobs: i64,
}

impl Db {
    /// A SQLite snapshot (`VACUUM INTO`), opened read-only to be read, never migrated.
    pub async fn open_sqlite_snapshot(file: &Path) -> anyhow::Result<Db> {
        let options = SqliteConnectOptions::new().filename(file).read_only(true);
        let pool = SqlitePoolOptions::new().max_connections(1).connect_with(options).await?;
        Ok(Db::Sqlite(pool))
    }

    /// Writes a consistent copy of a SQLite database to `file` (which must not exist) while
    /// others write: one read transaction, so the copy is the database at one instant. The
    /// copy holds no write-ahead log and no free pages.
    pub async fn sqlite_snapshot_into(&self, file: &Path) -> anyhow::Result<()> {
        let Db::Sqlite(pool) = self else {
            anyhow::bail!("only a SQLite database is copied by Confetti; PostgreSQL's is kept by pg_dump");
        };
        let file = file.to_str().ok_or_else(|| anyhow::anyhow!("the path {} is not UTF-8", file.display()))?;
        sqlx::query("VACUUM INTO $1").bind(file).execute(pool).await?;
        Ok(())
    }

    /// SQLite's `PRAGMA quick_check`: `ok`, or what is wrong.
    pub async fn sqlite_quick_check(&self) -> anyhow::Result<String> {
        let Db::Sqlite(pool) = self else {
            anyhow::bail!("not a SQLite database");
        };
        let found: Vec<String> = sqlx::query_scalar("PRAGMA quick_check").fetch_all(pool).await?;
        Ok(found.join("; "))
    }

    /// Every upload, deleted ones included, with what it has in the store.
    pub async fn stored_uploads(&self) -> sqlx::Result<Vec<StoredUpload>> {
        on_db!(self, pool => sqlx::query_as(
            "SELECT id, event_id, deleted_at, status, kind, poster, webp_thumb, avif_thumb, preview_pending FROM uploads",
        )
        .fetch_all(pool)
        .await)
    }

    /// The newest migration applied: which schema a backup's database has.
    pub async fn schema_version(&self) -> sqlx::Result<i64> {
        on_db!(self, pool => sqlx::query_scalar(
            "SELECT COALESCE(MAX(version), 0) FROM _sqlx_migrations WHERE success",
        )
        .fetch_one(pool)
        .await)
    }

    pub async fn record_backup(&self, backup: &BackupRecord) -> sqlx::Result<()> {
        on_db!(self, pool => sqlx::query(
            "INSERT INTO backups (id, started_at, finished_at, destination, with_database, uploads, blobs, bytes,
                                  copied_blobs, copied_bytes, missing_blobs)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
        )
        .bind(backup.id)
        .bind(backup.started_at)
        .bind(backup.finished_at)
        .bind(&backup.destination)
        .bind(backup.with_database)
        .bind(backup.uploads)
        .bind(backup.blobs)
        .bind(backup.bytes)
        .bind(backup.copied_blobs)
        .bind(backup.copied_bytes)
        .bind(backup.missing_blobs)
        .execute(pool)
        .await
        .map(|r| r.rows_affected()))?;
        Ok(())
    }

    /// The backup that finished last, if any ran.
    pub async fn last_backup(&self) -> sqlx::Result<Option<BackupRecord>> {
        on_db!(self, pool => sqlx::query_as(
            "SELECT id, started_at, finished_at, destination, with_database, uploads, blobs, bytes,
                    copied_blobs, copied_bytes, missing_blobs
             FROM backups ORDER BY finished_at DESC LIMIT 1",
        )
        .fetch_optional(pool)
        .await)
    }
}

/// The newest migration this build knows, per backend: a backup whose schema is newer was made
/// by a newer Confetti and cannot be restored by this one.
pub fn known_schema_version(postgres: bool) -> i64 {
    let migrator = if postgres { sqlx::migrate!("migrations/postgres") } else { sqlx::migrate!("migrations/sqlite") };
    migrator.iter().map(|m| m.version).max().unwrap_or(0)
}
