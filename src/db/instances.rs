//! Running instances and what each holds: uploads being received (`staged_uploads`), job
//! claims (`claimed_by`), and leases on work one instance at a time does. Together they let
//! any instance clean up after one that died, and a stopping one hand back what it holds.

use std::future::Future;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::lease::LeaseTable;
use super::{Db, Tx, on_db, on_tx};

/// Work one instance at a time does (the sweeps), by name: held by an instance until it ends.
pub const LEASES: LeaseTable = LeaseTable { table: "leases", key: &["name"], token: "holder", until: "until" };

/// An upload being received, as recorded before its first byte is stored.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct StagedUpload {
    pub upload_id: Uuid,
    pub instance_id: Uuid,
    /// The blob's key (`BlobKey::path`).
    pub blob_key: String,
    pub multipart_id: Option<String>,
    pub started_at: DateTime<Utc>,
}

impl Db {
    /// An instance starts, or finds its row gone (it was taken for dead): heard from now.
    pub async fn register_instance(&self, id: Uuid) -> sqlx::Result<()> {
        let now = Utc::now();
        on_db!(self, pool => sqlx::query(
            "INSERT INTO instances (id, started_at, heartbeat_at) VALUES ($1, $2, $2)
             ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at",
        )
        .bind(id)
        .bind(now)
        .execute(pool)
        .await
        .map(|r| r.rows_affected()))?;
        Ok(())
    }

    /// Renews the heartbeat; `false` when the row is gone (another instance took this one for
    /// dead and cleaned up after it).
    pub async fn heartbeat(&self, id: Uuid) -> sqlx::Result<bool> {
        let updated = on_db!(self, pool => sqlx::query("UPDATE instances SET heartbeat_at = $2 WHERE id = $1")
            .bind(id)
            .bind(Utc::now())
            .execute(pool)
            .await
            .map(|r| r.rows_affected()))?;
        Ok(updated == 1)
    }

    /// Instances not heard from since `heard_before`, and instances that hold staged uploads
    /// or job claims without a row (one stopped before it could hand them back).
    pub async fn dead_instances(&self, heard_before: DateTime<Utc>) -> sqlx::Result<Vec<Uuid>> {
        on_db!(self, pool => sqlx::query_scalar(
            "SELECT id FROM instances WHERE heartbeat_at < $1
             UNION SELECT instance_id FROM staged_uploads WHERE instance_id NOT IN (SELECT id FROM instances)
             UNION SELECT claimed_by FROM derivative_jobs
                   WHERE claimed_by IS NOT NULL AND claimed_by NOT IN (SELECT id FROM instances)
             UNION SELECT claimed_by FROM blob_jobs
                   WHERE claimed_by IS NOT NULL AND claimed_by NOT IN (SELECT id FROM instances)",
        )
        .bind(heard_before)
        .fetch_all(pool)
        .await)
    }

    /// The instance's row goes: it is gone, and what it held has been cleaned up.
    pub async fn forget_instance(&self, id: Uuid) -> sqlx::Result<()> {
        on_db!(self, pool => sqlx::query("DELETE FROM instances WHERE id = $1").bind(id).execute(pool).await.map(|r| r.rows_affected()))?;
        Ok(())
    }

    /// Gives back every job the instance had claimed, due at once. Returns how many.
    pub async fn release_claims(&self, instance: Uuid) -> sqlx::Result<u64> {
        self.release_claims_of(
            &[&super::derivatives::JOBS.lease, &super::blob_jobs::JOBS.lease, &super::webhooks::DELIVERIES.lease],
            instance,
        )
        .await
    }

    /// Records an upload being received, before anything of it is in the store: another
    /// instance can always find what this one began, should it die.
    pub async fn stage_upload(&self, staged: &StagedUpload) -> sqlx::Result<()> {
        on_db!(self, pool => sqlx::query(
            "INSERT INTO staged_uploads (upload_id, instance_id, blob_key, multipart_id, started_at)
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(staged.upload_id)
        .bind(staged.instance_id)
        .bind(&staged.blob_key)
        .bind(&staged.multipart_id)
        .bind(staged.started_at)
        .execute(pool)
        .await
        .map(|r| r.rows_affected()))?;
        Ok(())
    }

    /// Runs `create`, which starts the staged upload's multipart upload in the store and tells
    /// its id, and records that id. A connection is taken first and held throughout, so the id
    /// follows the store's answer without waiting for a free connection. A crash in between
    /// leaves an upload whose id no record names, at the key the staged record does name:
    /// cleaning up after the instance lists what is open there (`BlobStore::abandon`).
    pub async fn record_multipart_while<E>(
        &self,
        upload_id: Uuid,
        create: impl Future<Output = Result<String, E>>,
    ) -> sqlx::Result<Result<String, E>> {
        on_db!(self, pool => {
            let mut conn = pool.acquire().await?;
            let id = match create.await {
                Ok(id) => id,
                Err(e) => return Ok(Err(e)),
            };
            sqlx::query("UPDATE staged_uploads SET multipart_id = $2 WHERE upload_id = $1")
                .bind(upload_id)
                .bind(&id)
                .execute(&mut *conn)
                .await?;
            Ok(Ok(id))
        })
    }

    /// The upload will never commit, and what it stored is gone.
    pub async fn unstage_upload(&self, upload_id: Uuid) -> sqlx::Result<()> {
        on_db!(self, pool => sqlx::query("DELETE FROM staged_uploads WHERE upload_id = $1")
            .bind(upload_id)
            .execute(pool)
            .await
            .map(|r| r.rows_affected()))?;
        Ok(())
    }

    pub async fn staged_uploads_of(&self, instance: Uuid) -> sqlx::Result<Vec<StagedUpload>> {
        on_db!(self, pool => sqlx::query_as(
            "SELECT upload_id, instance_id, blob_key, multipart_id, started_at FROM staged_uploads
             WHERE instance_id = $1",
        )
        .bind(instance)
        .fetch_all(pool)
        .await)
    }

    /// Ends `holder`'s leases: another instance may take them at once.
    pub async fn drop_leases(&self, holder: Uuid) -> sqlx::Result<()> {
        on_db!(self, pool => sqlx::query("DELETE FROM leases WHERE holder = $1").bind(holder).execute(pool).await.map(|r| r.rows_affected()))?;
        Ok(())
    }
}

impl Tx {
    /// In the transaction that commits the upload: it is no longer being received.
    pub async fn unstage_upload(&mut self, upload_id: Uuid) -> sqlx::Result<()> {
        on_tx!(self, tx => sqlx::query("DELETE FROM staged_uploads WHERE upload_id = $1")
            .bind(upload_id)
            .execute(&mut **tx)
            .await
            .map(|r| r.rows_affected()))?;
        Ok(())
    }
}
