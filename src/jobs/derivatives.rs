//! The derivative worker: makes each upload's thumb and preview after its row committed.
//!
//! Jobs live in the database (`derivative_jobs`), queued in the upload's own transaction.
//! A worker claims one under a lease (on PostgreSQL with `FOR UPDATE SKIP LOCKED`, so the
//! instances sharing a database share the work and never make a derivative twice), has it
//! decoded in a confined media worker process (`sandbox`), stores both JPEGs and the thumb's
//! AVIF, and ends the job in the same transaction that sets the upload's status, its formats
//! and its placeholder. A media worker that crashes or runs out of its memory or time costs
//! the job one attempt; after `MAX_WORKER_ATTEMPTS` the upload is failed with the reason.
//! An instance that dies leaves its job to be claimed again when the lease ends; a restart
//! finds every job still queued.

use std::io::SeekFrom;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use bytes::Bytes;
use chrono::Utc;
use futures_util::TryStreamExt;
use object_store::GetResultPayload;
use tokio::io::{AsyncRead, AsyncSeekExt};
use tokio::sync::Notify;
use tokio_util::io::StreamReader;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::blobs::{BlobKey, BlobStore};
use crate::db::Db;
use crate::db::blob_jobs::BlobJobKind;
use crate::db::derivatives::{ClaimedJob, JOBS, Made};
use crate::db::live::LiveKind;
use crate::db::uploads::UploadRow;
use crate::domain::{MediaKind, UploadStatus};
use crate::jobs::blob_jobs::BlobJobs;
use crate::jobs::poster::{Ffmpeg, Video};
use crate::lease::Renewed;
use crate::live::LiveHub;
use crate::media;
use crate::sandbox::limits::Limits;
use crate::sandbox::{MediaWorkers, WorkerFailure};

/// How often an idle worker looks for jobs queued by another instance (its own instance
/// wakes it at once).
const POLL: Duration = Duration::from_secs(2);
/// Claims of one job before it gives up: passing failures (storage unreachable) back off up to
/// `MAX_BACKOFF` between tries, so about an hour of outage is waited out; a job whose worker
/// keeps dying (a photo that exhausts memory) ends as failed instead of killing every instance.
const MAX_ATTEMPTS: i32 = 10;
const MAX_BACKOFF: Duration = Duration::from_secs(10 * 60);
/// Attempts of a job whose media worker died or ran out of its limits: a second try covers a
/// worker killed from outside; the same file failing twice is the file.
const MAX_WORKER_ATTEMPTS: i32 = 2;
/// A job whose worker died waits this long before its second attempt (other guests' photos
/// go first meanwhile).
const WORKER_RETRY: Duration = Duration::from_secs(5);

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
    /// Where every decode and encode of a guest's bytes runs.
    pub media: Arc<MediaWorkers>,
    pub queue: Arc<DerivativeQueue>,
    pub live: Arc<LiveHub>,
    pub blob_jobs: BlobJobs,
    pub max_image_pixels: u64,
    /// Makes videos' posters, when this instance has `ffmpeg`.
    pub ffmpeg: Arc<Ffmpeg>,
    pub max_video_bytes: u64,
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
            match self.db.claim_job(&JOBS, (self.instance, lease_until)).await {
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

    #[tracing::instrument(name = "derivative.job", skip_all, fields(upload_id = %job.upload_id, attempt = job.attempts))]
    async fn run(&self, job: ClaimedJob) {
        if job.attempts > MAX_ATTEMPTS {
            let outcome = Outcome::Undecodable(format!("given up after {MAX_ATTEMPTS} attempts"));
            if let Err(e) = self.finish(&job, &outcome).await {
                tracing::warn!(error = %e, "could not finish a derivative job; its lease will end");
            }
            return;
        }
        // A big original takes a while; the lease is renewed meanwhile so that no other worker
        // takes the job over and makes it a second time. Once the lease is lost anyway (this
        // instance could not reach the database for a whole lease), the other worker decides.
        let made = tokio::select! {
            made = self.make(&job) => made,
            () = self.keep_lease(&job) => {
                tracing::info!("lease lost while making derivatives; the worker that holds it decides");
                return;
            }
        };
        let outcome = match made {
            Ok(outcome) => outcome,
            Err(Failure::Worker(reason)) if job.attempts < MAX_WORKER_ATTEMPTS => {
                tracing::warn!(
                    reason,
                    retry_in_s = WORKER_RETRY.as_secs(),
                    "the media worker gave no answer; will retry"
                );
                if let Err(e) = self.db.retry_job(&JOBS, &job, Utc::now() + WORKER_RETRY, &reason).await {
                    tracing::warn!(error = %e, "could not give the job back; its lease will end");
                }
                return;
            }
            Err(Failure::Worker(reason)) => Outcome::Undecodable(reason),
            Err(Failure::Passing(e)) if job.attempts < MAX_ATTEMPTS => {
                let backoff = Duration::from_secs(5 << job.attempts.clamp(0, 10)).min(MAX_BACKOFF);
                tracing::warn!(error = %e, retry_in_s = backoff.as_secs(), "derivatives failed; will retry");
                if let Err(e) = self.db.retry_job(&JOBS, &job, Utc::now() + backoff, &format!("{e:#}")).await {
                    tracing::warn!(error = %e, "could not give the job back; its lease will end");
                }
                return;
            }
            Err(Failure::Passing(e)) => Outcome::Undecodable(format!("gave up after {} attempts: {e:#}", job.attempts)),
        };
        if let Err(e) = self.finish(&job, &outcome).await {
            tracing::warn!(error = %e, "could not finish a derivative job; its lease will end");
        }
    }

    /// Renews the job's lease (`lease::keep`); returns once it is lost.
    async fn keep_lease(&self, job: &ClaimedJob) {
        let lease = self.queue.lease;
        crate::lease::keep(lease, "a derivative job", || async move {
            let held = self.db.renew_job(&JOBS, job, Utc::now() + lease).await?;
            Ok::<_, sqlx::Error>(if held { Renewed::Held } else { Renewed::Lost })
        })
        .await;
    }

    /// Reads the original and has its derivatives made in a media worker; stores them.
    #[tracing::instrument(name = "derivative.make", skip_all)]
    async fn make(&self, job: &ClaimedJob) -> Result<Outcome, Failure> {
        let Some(row) = self.db.upload_by_id(job.upload_id, None).await? else {
            return Ok(Outcome::Gone);
        };
        if row.deleted_at.is_some() {
            return Ok(Outcome::Gone);
        }
        let (event_id, upload_id) = (row.event_id, row.id);
        if row.kind == MediaKind::Video {
            return self.poster(&row).await;
        }
        let original = self.blobs.get_original(event_id, upload_id, None).await?;
        let len = original.meta.size;
        let reader: Box<dyn AsyncRead + Send + Unpin> = match original.payload {
            GetResultPayload::File(file, _) => {
                let mut file = tokio::fs::File::from_std(file);
                file.seek(SeekFrom::Start(original.range.start)).await?;
                Box::new(file)
            }
            GetResultPayload::Stream(stream) => Box::new(StreamReader::new(stream.map_err(std::io::Error::other))),
        };
        self.queue.started.fetch_add(1, Relaxed);
        let limits = Limits::photo(pixels(&row));
        match self.media.derive(reader, len, self.max_image_pixels, limits).await? {
            Ok(derived) => Ok(Outcome::Ready(self.put_derivatives(event_id, upload_id, derived).await?)),
            Err(reason) => Ok(Outcome::Undecodable(reason)),
        }
    }

    /// Stores the thumb, the preview, and the thumb in the other formats made; what was made, for the row.
    async fn put_derivatives(
        &self,
        event_id: Uuid,
        upload_id: Uuid,
        derived: media::derive::Derivatives,
    ) -> anyhow::Result<Made> {
        let (webp, avif) = (derived.thumb_webp.is_some(), derived.thumb_avif.is_some());
        let mut parts = vec![
            (BlobKey::Thumb { event_id, upload_id }, derived.thumb.bytes),
            (BlobKey::Preview { event_id, upload_id }, derived.preview.bytes),
        ];
        parts.extend(derived.thumb_webp.map(|t| (BlobKey::ThumbWebp { event_id, upload_id }, t.bytes)));
        parts.extend(derived.thumb_avif.map(|t| (BlobKey::ThumbAvif { event_id, upload_id }, t.bytes)));
        // All at once: the next job waits for the slowest write (or S3 request), not their sum.
        // One that fails fails the job, which is tried again and writes every key anew.
        futures_util::future::try_join_all(
            parts.into_iter().map(|(key, bytes)| self.blobs.put(key, Bytes::from(bytes))),
        )
        .await?;
        Ok(Made { webp, avif, placeholder: Some(derived.placeholder), poster: false, failure: None })
    }

    /// A video: its poster frame from `ffmpeg`, derived like a photo. Without `ffmpeg`, or
    /// when it cannot read a frame, the video is ready without a poster.
    async fn poster(&self, row: &UploadRow) -> Result<Outcome, Failure> {
        let (event_id, upload_id) = (row.event_id, row.id);
        if !self.ffmpeg.available() {
            return Ok(Outcome::Ready(Made::default()));
        }
        let original = self.blobs.get_original(event_id, upload_id, None).await?;
        self.queue.started.fetch_add(1, Relaxed);
        let started = std::time::Instant::now();
        let video = Video { content_type: &row.content_type, duration_ms: row.duration_ms, pixels: pixels(row) };
        let Some(png) = self.ffmpeg.poster(original, video, self.max_video_bytes).await? else {
            return Ok(Outcome::Ready(Made::default()));
        };
        let frame_ms = started.elapsed().as_millis();
        let derived = match self.media.derive_png(&png, Limits::photo(media::derive::MAX_POSTER_PIXELS)).await? {
            Ok(derived) => derived,
            Err(e) => {
                tracing::warn!(error = %e, "the poster frame could not be derived; the video has no poster");
                return Ok(Outcome::Ready(Made::default()));
            }
        };
        let made = self.put_derivatives(event_id, upload_id, derived).await?;
        tracing::info!(frame_ms, poster_ms = started.elapsed().as_millis(), "video poster made");
        Ok(Outcome::Ready(Made { poster: true, ..made }))
    }

    #[tracing::instrument(name = "derivative.finish", skip_all, err)]
    async fn finish(&self, job: &ClaimedJob, outcome: &Outcome) -> anyhow::Result<()> {
        let status = match outcome {
            Outcome::Ready(_) => UploadStatus::Ready,
            Outcome::Undecodable(_) => UploadStatus::Failed,
            // Deleted meanwhile: the status no longer matters (a deleted upload keeps its own).
            Outcome::Gone => UploadStatus::Processing,
        };
        let mut tx = self.db.begin().await?;
        let failed;
        let made = match outcome {
            Outcome::Ready(made) => made,
            Outcome::Undecodable(reason) => {
                failed = Made { failure: Some(reason.chars().take(500).collect()), ..Made::default() };
                &failed
            }
            Outcome::Gone => &Made::default(),
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

/// The pixels the upload's header declared (its limits are sized from them).
fn pixels(row: &UploadRow) -> u64 {
    u64::from(row.width.unsigned_abs()) * u64::from(row.height.unsigned_abs())
}

/// Why a job did not end.
enum Failure {
    /// The media worker died or ran out of its limits: counts toward `MAX_WORKER_ATTEMPTS`.
    Worker(String),
    /// The store or the database failed: tried again with a growing back-off.
    Passing(anyhow::Error),
}

impl From<WorkerFailure> for Failure {
    fn from(failure: WorkerFailure) -> Self {
        match failure {
            WorkerFailure::Died(reason) => Self::Worker(reason),
            other => Self::Passing(other.into()),
        }
    }
}

macro_rules! passing {
    ($($error:ty),*) => {$(
        impl From<$error> for Failure {
            fn from(e: $error) -> Self {
                Self::Passing(e.into())
            }
        }
    )*};
}
passing!(anyhow::Error, sqlx::Error, std::io::Error, object_store::Error);
