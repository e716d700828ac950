//! The derivative worker: makes each upload's thumb and preview after its row committed.
//!
//! Jobs live in the database (`derivative_jobs`), queued in the upload's own transaction.
//! A worker claims one under a lease (on PostgreSQL with `FOR UPDATE SKIP LOCKED`, so the
//! instances sharing a database share the work and never make a derivative twice), decodes on
//! the low-priority background threads, stores both JPEGs and both WebPs, and ends the job in the
//! same transaction that sets the upload's status, its formats and its placeholder. A worker that dies leaves its job to be claimed again when the
//! lease ends; a restart finds every job still queued.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use bytes::Bytes;
use chrono::Utc;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::blobs::{BlobKey, BlobStore};
use crate::blocking::Blocking;
use crate::db::Db;
use crate::db::blob_jobs::BlobJobKind;
use crate::db::derivatives::{ClaimedJob, Made};
use crate::db::live::LiveKind;
use crate::domain::UploadStatus;
use crate::jobs::blob_jobs::BlobJobs;
use crate::live::LiveHub;
use crate::media::{self, ProbeError, Sniffer};

/// How often an idle worker looks for jobs queued by another instance (its own instance
/// wakes it at once).
const POLL: Duration = Duration::from_secs(2);
/// Claims of one job before it gives up: passing failures (storage unreachable) back off up to
/// `MAX_BACKOFF` between tries, so about an hour of outage is waited out; a job whose worker
/// keeps dying (a photo that exhausts memory) ends as failed instead of killing every instance.
const MAX_ATTEMPTS: i32 = 10;
const MAX_BACKOFF: Duration = Duration::from_secs(10 * 60);

/// The workers' shared state: a wake-up for new jobs and what they did, for `/metrics`.
#[derive(Debug)]
pub struct DerivativeQueue {
    wake: Notify,
    lease: Duration,
    /// Derivations begun (decodes started), to see that no upload is worked on twice.
    pub started: AtomicU64,
    pub made: AtomicU64,
    pub failed: AtomicU64,
}

impl DerivativeQueue {
    pub fn new(lease: Duration) -> Self {
        Self {
            wake: Notify::new(),
            lease,
            started: AtomicU64::new(0),
            made: AtomicU64::new(0),
            failed: AtomicU64::new(0),
        }
    }

    /// A job was queued on this instance: one idle worker starts on it now.
    pub fn wake(&self) {
        self.wake.notify_one();
    }
}

/// How one job ended.
enum Outcome {
    /// Stored; what was made beside the JPEGs.
    Ready(Made),
    /// The image cannot be decoded: the upload keeps its original and shows as failed.
    Undecodable(String),
    /// The upload was deleted meanwhile: nothing to make.
    Gone,
}

/// The workers, with what they use.
#[derive(Clone, Debug)]
pub struct DerivativeWorkers {
    pub db: Db,
    pub blobs: BlobStore,
    pub blocking: Blocking,
    pub queue: Arc<DerivativeQueue>,
    pub live: Arc<LiveHub>,
    pub blob_jobs: BlobJobs,
    pub max_image_pixels: u64,
    /// The instance the workers run on: named with each claim.
    pub instance: Uuid,
    /// Once cancelled (the instance is stopping), the workers claim nothing more.
    pub stopping: CancellationToken,
}

impl DerivativeWorkers {
    /// Starts `workers` workers (0: this instance makes no derivatives; another one sharing the
    /// database does).
    pub fn spawn(&self, workers: usize) {
        for _ in 0..workers {
            let worker = self.clone();
            tokio::spawn(async move { worker.work().await });
        }
    }

    async fn work(&self) {
        let queue = &self.queue;
        while !self.db.is_closed() && !self.stopping.is_cancelled() {
            let lease_until = Utc::now() + queue.lease;
            match self.db.claim_derivative_job((self.instance, lease_until)).await {
                Ok(Some(job)) => self.run(job).await,
                Ok(None) => {
                    tokio::select! {
                        () = queue.wake.notified() => {}
                        () = self.stopping.cancelled() => {}
                        () = tokio::time::sleep(POLL) => {}
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "could not claim a derivative job");
                    tokio::time::sleep(POLL).await;
                }
            }
        }
    }

    #[tracing::instrument(skip_all, fields(upload_id = %job.upload_id, attempt = job.attempts))]
    async fn run(&self, job: ClaimedJob) {
        if job.attempts > MAX_ATTEMPTS {
            let outcome = Outcome::Undecodable(format!("given up after {MAX_ATTEMPTS} attempts"));
            if let Err(e) = self.finish(&job, &outcome).await {
                tracing::warn!(error = %e, "could not finish a derivative job; its lease will end");
            }
            return;
        }
        let outcome = match self.make(&job).await {
            Ok(outcome) => outcome,
            Err(e) if job.attempts < MAX_ATTEMPTS => {
                let backoff = Duration::from_secs(5 << job.attempts.clamp(0, 10)).min(MAX_BACKOFF);
                tracing::warn!(error = %e, retry_in_s = backoff.as_secs(), "derivatives failed; will retry");
                if let Err(e) = self.db.retry_derivative_job(&job, Utc::now() + backoff, &format!("{e:#}")).await {
                    tracing::warn!(error = %e, "could not give the job back; its lease will end");
                }
                return;
            }
            Err(e) => Outcome::Undecodable(format!("gave up after {} attempts: {e:#}", job.attempts)),
        };
        if let Err(e) = self.finish(&job, &outcome).await {
            tracing::warn!(error = %e, "could not finish a derivative job; its lease will end");
        }
    }

    /// Reads the original, derives on the media pool, stores the derivatives in both formats.
    async fn make(&self, job: &ClaimedJob) -> anyhow::Result<Outcome> {
        let Some(row) = self.db.upload_by_id(job.upload_id, None).await? else {
            return Ok(Outcome::Gone);
        };
        if row.deleted_at.is_some() {
            return Ok(Outcome::Gone);
        }
        let (event_id, upload_id) = (row.event_id, row.id);
        let original = self.blobs.get_original(event_id, upload_id, None).await?.bytes().await?;
        self.queue.started.fetch_add(1, Relaxed);
        let max_pixels = self.max_image_pixels;
        let derived = self.blocking.background(move || derive(&original, max_pixels)).await?;
        let derived = match derived {
            Ok(derived) => derived,
            Err(reason) => return Ok(Outcome::Undecodable(reason)),
        };
        self.blobs.put(BlobKey::Thumb { event_id, upload_id }, Bytes::from(derived.thumb.bytes)).await?;
        self.blobs.put(BlobKey::Preview { event_id, upload_id }, Bytes::from(derived.preview.bytes)).await?;
        self.blobs.put(BlobKey::ThumbWebp { event_id, upload_id }, Bytes::from(derived.thumb_webp.bytes)).await?;
        self.blobs.put(BlobKey::PreviewWebp { event_id, upload_id }, Bytes::from(derived.preview_webp.bytes)).await?;
        Ok(Outcome::Ready(Made { webp: true, placeholder: Some(derived.placeholder) }))
    }

    async fn finish(&self, job: &ClaimedJob, outcome: &Outcome) -> anyhow::Result<()> {
        let status = match outcome {
            Outcome::Ready(_) => UploadStatus::Ready,
            Outcome::Undecodable(_) => UploadStatus::Failed,
            // Deleted meanwhile: the status no longer matters (a deleted upload keeps its own).
            Outcome::Gone => UploadStatus::Processing,
        };
        let mut tx = self.db.begin().await?;
        let made = match outcome {
            Outcome::Ready(made) => made,
            Outcome::Undecodable(_) | Outcome::Gone => &Made::default(),
        };
        let Some(upload) = tx.finish_derivative_job(job, status, made).await? else {
            tx.rollback().await?;
            tracing::info!("lease lost to another worker; it decides");
            return Ok(());
        };
        let announce = matches!(outcome, Outcome::Ready(_)) && !upload.hidden && !upload.deleted;
        if announce {
            tx.append_live(upload.event_id, LiveKind::Upload, job.upload_id).await?;
        }
        // Deleted while its derivatives were being made: the delete removed what existed then,
        // and what was just made goes the same way.
        let remove = match upload.deleted {
            true => Some(
                tx.queue_blob_job(
                    BlobJobKind::DeleteDerivatives,
                    upload.event_id,
                    job.upload_id,
                    self.blob_jobs.claim(),
                )
                .await?,
            ),
            false => None,
        };
        tx.commit().await?;
        if announce {
            self.live.poke();
        }
        if let Some(remove) = remove {
            self.blob_jobs.run(remove).await;
        }
        let queue = &self.queue;
        match outcome {
            Outcome::Ready(_) => {
                queue.made.fetch_add(1, Relaxed);
                tracing::info!("derivatives made");
            }
            Outcome::Undecodable(reason) => {
                queue.failed.fetch_add(1, Relaxed);
                tracing::warn!(reason, "derivatives failed: the original stays, shown as failed");
            }
            Outcome::Gone => tracing::info!("upload deleted before its derivatives were made"),
        }
        Ok(())
    }
}

/// Probe again (the orientation is not stored) and derive; `Err` is why it cannot be decoded.
fn derive(original: &[u8], max_pixels: u64) -> Result<media::derive::Derivatives, String> {
    let probe = reprobe(original, max_pixels).map_err(|e| e.to_string())?;
    media::derive::derive(original, probe.format, probe.orientation).map_err(|e| e.to_string())
}

/// The probe on a whole original. Its head is cut at `HEAD_BYTES` as at upload, and a header
/// longer than that (big EXIF thumbnails, XMP and ICC profiles: real cameras write them) is
/// read as far as the probe asks, from the original already in memory.
fn reprobe(original: &[u8], max_pixels: u64) -> Result<media::Probe, ProbeError> {
    let mut sniffer = Sniffer::default();
    sniffer.update(original);
    let sniffed = sniffer.finish();
    let mut head = &sniffed.head[..];
    loop {
        match media::probe::probe(head, &sniffed, max_pixels) {
            // Each request is longer than the last (the probe asks for more than it had), so
            // this ends once the whole original is offered.
            Err(ProbeError::NeedMore(want)) if want > head.len() && head.len() < original.len() => {
                head = &original[..want.min(original.len())];
            }
            other => return other,
        }
    }
}
