//! Work on blobs that must follow a commit, done until it is done.
//!
//! The writer queues the job in its own transaction, claimed by itself (`Tx::queue_blob_job`),
//! and calls `run` right after the commit: in the usual case the work is finished before the
//! answer goes out. When the store fails, or the process dies between commit and work, the job
//! stays in the database; a worker on any instance sharing it claims the job once its lease
//! ends and tries again, backing off, until the store takes it.
//!
//! Every job can be repeated: a finalize whose temporary blob is gone was done already (or the
//! upload was deleted meanwhile), and deleting a blob that is gone is fine.

use std::time::Duration;

use chrono::Utc;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::blobs::{BlobKey, BlobStore};
use crate::db::Db;
use crate::db::blob_jobs::{BlobJob, BlobJobKind, JOBS};

/// How long a holder has before another worker may take its job over.
pub const LEASE: Duration = Duration::from_secs(2 * 60);
/// How often an idle worker looks for due jobs.
const POLL: Duration = Duration::from_secs(2);
/// Failed tries wait 1 s, 2 s, 4 s … up to this, and never give up: the store comes back.
const MAX_BACKOFF: Duration = Duration::from_secs(5 * 60);

/// Runs blob jobs: the writer's own right after its commit, and the workers' left over.
#[derive(Clone, Debug)]
pub struct BlobJobs {
    db: Db,
    blobs: BlobStore,
    /// The instance these jobs run on: its claims are given back when it stops or dies.
    instance: Uuid,
    /// Once cancelled, the workers claim nothing more.
    stopping: CancellationToken,
}

impl BlobJobs {
    pub fn new(db: Db, blobs: BlobStore, instance: Uuid, stopping: CancellationToken) -> Self {
        Self { db, blobs, instance, stopping }
    }

    /// A claim by this instance on a job queued or claimed now: who holds it, and until when
    /// another may take it over should this instance neither finish nor hand it back.
    pub fn claim(&self) -> (Uuid, chrono::DateTime<Utc>) {
        (self.instance, Utc::now() + LEASE)
    }

    /// Runs a claimed job and ends it: done, or given back to be tried again later. Never
    /// fails the caller: the job stays in the database until it is done.
    #[tracing::instrument(skip_all, fields(upload_id = %job.upload_id, kind = job.kind.as_str(), attempt = job.attempts))]
    pub async fn run(&self, job: BlobJob) {
        match self.work(&job).await {
            // A lease lost meanwhile ends nothing: its new holder does the same work again,
            // which is harmless.
            Ok(()) => {
                if let Err(e) = self.db.finish_job(&JOBS, &job).await {
                    tracing::warn!(error = %e, "could not end a blob job that is done; it will run again");
                }
            }
            Err(e) => {
                let backoff = Duration::from_secs(1 << (job.attempts.clamp(1, 16) - 1)).min(MAX_BACKOFF);
                tracing::warn!(error = %e, retry_in_s = backoff.as_secs(), "blob job failed; will retry");
                if let Err(e) = self.db.retry_job(&JOBS, &job, Utc::now() + backoff, &e.to_string()).await {
                    tracing::warn!(error = %e, "could not give a blob job back; its lease will end");
                }
            }
        }
    }

    async fn work(&self, job: &BlobJob) -> object_store::Result<()> {
        let (event_id, upload_id) = (job.event_id, job.upload_id);
        match job.kind {
            // An upload written straight to its final key (S3) has nothing to move.
            BlobJobKind::Finalize => {
                match self.blobs.rename(BlobKey::Temp(upload_id), BlobKey::Original { event_id, upload_id }).await {
                    // Moved already (by an earlier try, or the upload's delete took it).
                    Err(object_store::Error::NotFound { .. }) => Ok(()),
                    other => other,
                }
            }
            BlobJobKind::Delete => {
                // The temporary key first: a finalize running at the same time then finds
                // nothing to move, instead of moving it after its original was deleted.
                self.blobs.delete(BlobKey::Temp(upload_id)).await?;
                for key in BlobKey::all_for(event_id, upload_id) {
                    self.blobs.delete(key).await?;
                }
                Ok(())
            }
            BlobJobKind::DeleteDerivatives => {
                // Restored meanwhile (an organiser's undo): its derivatives are made again under
                // these keys, and must stay. A retry after the restore finds it so.
                let deleted = self.db.upload_is_deleted(upload_id).await;
                if !deleted.map_err(|e| object_store::Error::Generic { store: "database", source: Box::new(e) })? {
                    return Ok(());
                }
                for key in BlobKey::derivatives_for(event_id, upload_id) {
                    self.blobs.delete(key).await?;
                }
                Ok(())
            }
        }
    }

    /// Starts `workers` workers for the jobs their writers did not finish.
    pub fn spawn_workers(&self, workers: usize) {
        for _ in 0..workers {
            let jobs = self.clone();
            tokio::spawn(async move { jobs.work_loop().await });
        }
    }

    async fn work_loop(&self) {
        while !self.db.is_closed() && !self.stopping.is_cancelled() {
            match self.db.claim_job(&JOBS, self.claim()).await {
                Ok(Some(job)) => self.run(job).await,
                Ok(None) => {
                    tokio::select! {
                        () = self.stopping.cancelled() => {}
                        () = tokio::time::sleep(POLL) => {}
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "could not claim a blob job");
                    tokio::time::sleep(POLL).await;
                }
            }
        }
    }
}
