//! Runtime settings: everything an instance needs to know, as a plain struct with the defaults
//! an operator gets without flags. The command line (`config`) is one way to fill it; tests and
//! benchmarks start from `Settings::new` and change what they need. The defaults are named once,
//! in `defaults`, and the flags' own defaults are these constants.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// The defaults, shared by `Settings::new` and the flags.
pub mod defaults {
    pub const MAX_UPLOAD_BYTES: u64 = 50 * 1024 * 1024;
    pub const MAX_IMAGE_PIXELS: u64 = 210_000_000;
    pub const MAX_VIDEO_BYTES: u64 = 2 * 1024 * 1024 * 1024;
    pub const MAX_VIDEO_SECONDS: u64 = 600;
    pub const RESUMABLE_EXPIRY_S: u64 = 86_400;
    pub const RESUMABLE_LEASE_S: u64 = 60;
    pub const FFMPEG: &str = "ffmpeg";
    pub const GUEST_QUOTA_BYTES: i64 = 1024 * 1024 * 1024;
    pub const IDEMPOTENCY_LEASE_S: u64 = 30;
    pub const IDEMPOTENCY_RETENTION_S: u64 = 24 * 60 * 60;
    pub const DERIVATIVE_LEASE_S: u64 = 120;
    pub const HEADER_TIMEOUT_S: u64 = 30;
    pub const BODY_IDLE_TIMEOUT_S: u64 = 60;
    pub const IDLE_TIMEOUT_S: u64 = 75;
    pub const ORGANISER_SESSION_S: u64 = 7 * 24 * 60 * 60;
    pub const EVENT_STORAGE_CAP_BYTES: i64 = 100 * 1024 * 1024 * 1024;
    pub const MIN_FREE_BYTES: u64 = 1024 * 1024 * 1024;
    pub const UNDO_GRACE_S: u64 = 60;
    pub const DERIVATIVE_CACHE_BYTES: u64 = 32 * 1024 * 1024;
    pub const WEBHOOK_DELAY_S: u64 = 30;
    pub const WEBHOOK_RETRY_S: u64 = 30;
}

#[derive(Clone, Debug)]
pub struct Settings {
    /// Directory for the SQLite database, the admin token and (by default) the photos.
    pub data_dir: PathBuf,
    /// `postgres://…`; `None`: SQLite in `data_dir`.
    pub database_url: Option<String>,
    /// Where photos are stored (`BlobStore::open`); `None`: `data_dir`.
    pub storage: Option<String>,
    /// Base of join links, without a trailing slash.
    pub public_url: String,
    pub max_upload_bytes: u64,
    pub max_image_pixels: u64,
    pub max_video_bytes: u64,
    pub max_video_seconds: u64,
    /// Seconds an untouched resumable upload is kept.
    pub resumable_expiry_s: u64,
    /// How long a request appending to (or completing) a resumable upload holds it unless it
    /// renews; it renews every third of it.
    pub resumable_lease: Duration,
    /// The `ffmpeg` program that makes video posters; checked when the instance starts.
    pub ffmpeg: PathBuf,
    /// The program started as a media worker (`confetti media-worker`): this binary.
    pub media_worker: PathBuf,
    pub guest_quota_bytes: i64,
    pub idempotency_lease_s: u64,
    pub idempotency_retention_s: u64,
    /// Derivative workers on this instance; `None`: one per core but one.
    pub derivative_workers: Option<usize>,
    pub derivative_lease: Duration,
    pub header_timeout: Duration,
    pub body_idle_timeout: Duration,
    pub idle_timeout: Duration,
    /// `None`: derived from the open-files limit when serving.
    pub max_connections: Option<usize>,
    /// Reverse proxies whose `X-Forwarded-For` names the client (addresses or CIDR ranges),
    /// as configured; checked when the instance starts.
    pub trusted_proxies: Vec<String>,
    pub organiser_session: Duration,
    /// When set, `/metrics` is served there only.
    pub metrics_bind: Option<SocketAddr>,
    /// When set, `/metrics` needs this bearer token.
    pub metrics_token: Option<String>,
    /// Storage cap of new events (all guests together).
    pub event_storage_cap_bytes: i64,
    /// Uploads are refused while the local photo store has less free space.
    pub min_free_bytes: u64,
    /// How long after an organiser deleted a photo they may restore it; its bytes are removed
    /// once it has passed (0: at once, as a guest's own delete).
    pub undo_grace: Duration,
    /// Bytes of small derivatives (thumbs, posters) this instance keeps in memory (0: none).
    pub derivative_cache_bytes: u64,
    /// How long after a photo starts waiting for review the admin's webhook is called (the
    /// photos that follow meanwhile are told of in the same call).
    pub webhook_delay: Duration,
    /// A failed webhook call is tried again after this, doubling up to 30 minutes.
    pub webhook_retry: Duration,
}

impl Settings {
    /// The defaults, for an instance keeping its data in `data_dir` and reached at `public_url`.
    pub fn new(data_dir: impl Into<PathBuf>, public_url: &str) -> Self {
        use defaults::*;
        Self {
            data_dir: data_dir.into(),
            database_url: None,
            storage: None,
            public_url: public_url.trim_end_matches('/').to_owned(),
            max_upload_bytes: MAX_UPLOAD_BYTES,
            max_image_pixels: MAX_IMAGE_PIXELS,
            max_video_bytes: MAX_VIDEO_BYTES,
            max_video_seconds: MAX_VIDEO_SECONDS,
            resumable_expiry_s: RESUMABLE_EXPIRY_S,
            resumable_lease: Duration::from_secs(RESUMABLE_LEASE_S),
            ffmpeg: PathBuf::from(FFMPEG),
            media_worker: PathBuf::from("/proc/self/exe"),
            guest_quota_bytes: GUEST_QUOTA_BYTES,
            idempotency_lease_s: IDEMPOTENCY_LEASE_S,
            idempotency_retention_s: IDEMPOTENCY_RETENTION_S,
            derivative_workers: None,
            derivative_lease: Duration::from_secs(DERIVATIVE_LEASE_S),
            header_timeout: Duration::from_secs(HEADER_TIMEOUT_S),
            body_idle_timeout: Duration::from_secs(BODY_IDLE_TIMEOUT_S),
            idle_timeout: Duration::from_secs(IDLE_TIMEOUT_S),
            max_connections: None,
            trusted_proxies: Vec::new(),
            organiser_session: Duration::from_secs(ORGANISER_SESSION_S),
            metrics_bind: None,
            metrics_token: None,
            event_storage_cap_bytes: EVENT_STORAGE_CAP_BYTES,
            min_free_bytes: MIN_FREE_BYTES,
            undo_grace: Duration::from_secs(UNDO_GRACE_S),
            derivative_cache_bytes: DERIVATIVE_CACHE_BYTES,
            webhook_delay: Duration::from_secs(WEBHOOK_DELAY_S),
            webhook_retry: Duration::from_secs(WEBHOOK_RETRY_S),
        }
    }

    /// Cookies get `Secure` when the public URL is https.
    pub fn secure_cookies(&self) -> bool {
        self.public_url.starts_with("https://")
    }
}
