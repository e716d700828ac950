//! What every handler may read: the services, built once by the composition root
//! (`app`), and the settings. Only `http` and `app` know this struct; the services below it
//! take exactly what they use.

use std::sync::Arc;

use crate::blobs::BlobStore;
use crate::blocking::Blocking;
use crate::db::Db;
use crate::http::client_addr::TrustedProxies;
use crate::ingest::Ingest;
use crate::jobs::blob_jobs::BlobJobs;
use crate::jobs::derivatives::DerivativeQueue;
use crate::jobs::instances::Instance;
use crate::live::LiveHub;
use crate::settings::Settings;
use crate::throttle::Throttle;

#[derive(Clone, Debug)]
pub struct AppState {
    pub db: Db,
    pub blobs: BlobStore,
    pub blocking: Blocking,
    pub settings: Arc<Settings>,
    /// `Settings::trusted_proxies`, parsed.
    pub trusted_proxies: Arc<TrustedProxies>,
    pub admin_token: Arc<str>,
    pub throttle: Arc<Throttle>,
    pub idempotency_metrics: Arc<crate::idempotency::Metrics>,
    pub derivatives: Arc<DerivativeQueue>,
    /// Blob work that follows a commit (finalize, delete).
    pub blob_jobs: BlobJobs,
    /// The admin's webhook for photos waiting for review.
    pub webhooks: crate::jobs::webhooks::Webhooks,
    pub live: Arc<LiveHub>,
    pub ingest: Arc<Ingest>,
    /// Uploads sent in pieces, stored by `ingest` once whole.
    pub resumable: Arc<crate::resumable::Resumable>,
    /// This instance among those sharing the database: its heartbeat, its clean-ups.
    pub instance: Instance,
    /// `ffmpeg`, for videos' posters, as found at start.
    pub ffmpeg: Arc<crate::jobs::poster::Ffmpeg>,
    /// The confined processes that decode guests' photos and run `ffmpeg`.
    pub media: Arc<crate::sandbox::MediaWorkers>,
    /// Small derivatives kept in memory, read after the viewer's visibility check.
    pub derivative_cache: Arc<crate::derivative_cache::DerivativeCache>,
}
