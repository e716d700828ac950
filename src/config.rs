//! Configuration. Every flag has an environment twin; the doc comments are the operator
//! documentation (`confetti serve --help` prints them, the README's table repeats them).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::settings::{Settings, defaults};

/// Where Confetti keeps its data; shared by `serve` and the `event` commands.
#[derive(Args, Clone, Debug)]
pub struct SiteArgs {
    /// Directory for the SQLite database, the admin token and (by default) the photos.
    #[arg(long, env = "CONFETTI_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,

    /// Database URL: `postgres://user@host/db` for PostgreSQL; default SQLite in the data directory.
    #[arg(long, env = "DATABASE_URL")]
    pub database_url: Option<String>,

    /// Address guests' phones use to reach this server, used in join links and QR codes
    /// (e.g. `http://192.168.1.20:8080`). Default: this machine's LAN address and the bind port.
    #[arg(long, env = "CONFETTI_PUBLIC_URL")]
    pub public_url: Option<String>,
}

#[derive(Args, Clone, Debug)]
pub struct ServeArgs {
    #[command(flatten)]
    pub site: SiteArgs,

    /// Address and port to listen on.
    #[arg(long, env = "CONFETTI_BIND", default_value = "0.0.0.0:8080")]
    pub bind: SocketAddr,

    /// Where photos are stored: default the data directory; `s3://bucket/prefix` for an
    /// S3-compatible store (credentials and endpoint from the usual AWS_* variables).
    #[arg(long, env = "CONFETTI_STORAGE")]
    pub storage: Option<String>,

    /// Largest photo accepted, in bytes.
    #[arg(long, env = "CONFETTI_MAX_UPLOAD_BYTES", default_value_t = defaults::MAX_UPLOAD_BYTES)]
    pub max_upload_bytes: u64,

    /// Largest image accepted, in pixels (width × height) as declared by its header.
    #[arg(long, env = "CONFETTI_MAX_IMAGE_PIXELS", default_value_t = defaults::MAX_IMAGE_PIXELS)]
    pub max_image_pixels: u64,

    /// Largest video accepted (MP4, MOV, WebM), in bytes.
    #[arg(long, env = "CONFETTI_MAX_VIDEO_BYTES", default_value_t = defaults::MAX_VIDEO_BYTES)]
    pub max_video_bytes: u64,

    /// Longest video accepted, in seconds, as its container's header says.
    #[arg(long, env = "CONFETTI_MAX_VIDEO_SECONDS", default_value_t = defaults::MAX_VIDEO_SECONDS)]
    pub max_video_seconds: u64,

    /// Seconds a resumable upload that is neither completed nor appended to is kept; then its
    /// bytes are removed.
    #[arg(long, env = "CONFETTI_RESUMABLE_EXPIRY_S", default_value_t = defaults::RESUMABLE_EXPIRY_S)]
    pub resumable_expiry_s: u64,

    /// Seconds a request appending to or completing a resumable upload holds it unless it
    /// renews (it renews every third of it); another request takes it over only after that.
    #[arg(long, env = "CONFETTI_RESUMABLE_LEASE_S", default_value_t = defaults::RESUMABLE_LEASE_S)]
    pub resumable_lease_s: u64,

    /// The `ffmpeg` program that makes a poster frame for each video (a name on the PATH or a
    /// path). Without it videos are still stored and played, without a poster.
    #[arg(long, env = "CONFETTI_FFMPEG", default_value = defaults::FFMPEG)]
    pub ffmpeg: PathBuf,

    /// Storage quota of each guest for new events, in bytes.
    #[arg(long, env = "CONFETTI_GUEST_QUOTA_BYTES", default_value_t = defaults::GUEST_QUOTA_BYTES)]
    pub guest_quota_bytes: i64,

    /// Do not create a demo event when the database has no events.
    #[arg(long, env = "CONFETTI_NO_DEMO")]
    pub no_demo: bool,

    /// Seconds a write holds its Idempotency-Key before another attempt may take it over
    /// (the holder is presumed dead).
    #[arg(long, env = "CONFETTI_IDEMPOTENCY_LEASE_S", default_value_t = defaults::IDEMPOTENCY_LEASE_S)]
    pub idempotency_lease_s: u64,

    /// Seconds a completed Idempotency-Key is remembered (and replayed) before it is swept.
    #[arg(long, env = "CONFETTI_IDEMPOTENCY_RETENTION_S", default_value_t = defaults::IDEMPOTENCY_RETENTION_S)]
    pub idempotency_retention_s: u64,

    /// Workers making thumbnails and previews on this instance. Default: the number of cores
    /// (each hands its work to a media worker process at a low CPU priority, so requests stay
    /// quick). 0 leaves the work to other instances sharing the database.
    #[arg(long, env = "CONFETTI_DERIVATIVE_WORKERS")]
    pub derivative_workers: Option<usize>,

    /// Seconds a worker holds a derivative job before another may take it over (the holder is
    /// presumed dead). A running job renews its lease every third of this.
    #[arg(long, env = "CONFETTI_DERIVATIVE_LEASE_S", default_value_t = defaults::DERIVATIVE_LEASE_S)]
    pub derivative_lease_s: u64,

    /// Seconds in-flight requests get to finish after SIGTERM/SIGINT.
    #[arg(long, env = "CONFETTI_SHUTDOWN_GRACE_S", default_value_t = 30)]
    pub shutdown_grace_s: u64,

    /// Seconds a connection may take to send a request's headers; one that stalls inside
    /// them is closed.
    #[arg(long, env = "CONFETTI_HEADER_TIMEOUT_S", default_value_t = defaults::HEADER_TIMEOUT_S)]
    pub header_timeout_s: u64,

    /// Seconds a request body may go without a single byte arriving before it is cut, and a
    /// response may wait for a client that reads nothing. A phone on a bad network is slow, not
    /// silent: keep this generous.
    #[arg(long, env = "CONFETTI_BODY_IDLE_TIMEOUT_S", default_value_t = defaults::BODY_IDLE_TIMEOUT_S)]
    pub body_idle_timeout_s: u64,

    /// Seconds a kept-alive connection may sit idle between requests before it is closed.
    #[arg(long, env = "CONFETTI_IDLE_TIMEOUT_S", default_value_t = defaults::IDLE_TIMEOUT_S)]
    pub idle_timeout_s: u64,

    /// Most connections served at once; further ones wait in the kernel's queue. Default:
    /// three quarters of the process's open-files limit, leaving room for the database,
    /// photos being written and logs.
    #[arg(long, env = "CONFETTI_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,

    /// Reverse proxies in front of Confetti whose `X-Forwarded-For` names the real client
    /// (addresses or CIDR ranges, comma-separated). Without it, the connection's own address
    /// is the client's (for login and join throttling).
    #[arg(long, env = "CONFETTI_TRUSTED_PROXY", value_delimiter = ',')]
    pub trusted_proxy: Vec<String>,

    /// Seconds an organiser's login lasts; after that the organiser logs in again.
    #[arg(long, env = "CONFETTI_ORGANISER_SESSION_S", default_value_t = defaults::ORGANISER_SESSION_S)]
    pub organiser_session_s: u64,

    /// Seconds an organiser may undo deleting a photo; its bytes are removed after that.
    #[arg(long, env = "CONFETTI_UNDO_GRACE_S", default_value_t = defaults::UNDO_GRACE_S)]
    pub undo_grace_s: u64,

    /// Serve `/metrics` only on this separate address (e.g. `127.0.0.1:9090`), not on the
    /// public one. `CONFETTI_METRICS_TOKEN`, when set, also requires `Authorization: Bearer`.
    #[arg(long, env = "CONFETTI_METRICS_BIND")]
    pub metrics_bind: Option<SocketAddr>,

    /// Storage cap of each new event, all guests together, in bytes (joining again does not
    /// add to it).
    #[arg(long, env = "CONFETTI_EVENT_STORAGE_CAP_BYTES", default_value_t = defaults::EVENT_STORAGE_CAP_BYTES)]
    pub event_storage_cap_bytes: i64,

    /// Uploads are refused (507) while the photo store's disk has less free space than this,
    /// in bytes (local storage only).
    #[arg(long, env = "CONFETTI_MIN_FREE_BYTES", default_value_t = defaults::MIN_FREE_BYTES)]
    pub min_free_bytes: u64,

    /// Bytes of small derivatives (thumbs, video posters; each at most 64 KiB) this instance
    /// keeps in memory, so the photo store is not asked for them again (0: none).
    #[arg(long, env = "CONFETTI_DERIVATIVE_CACHE_BYTES", default_value_t = defaults::DERIVATIVE_CACHE_BYTES)]
    pub derivative_cache_bytes: u64,

    /// Seconds between a photo starting to wait for review and the admin's webhook being
    /// called; photos arriving meanwhile go in the same call.
    #[arg(long, env = "CONFETTI_WEBHOOK_DELAY_S", default_value_t = defaults::WEBHOOK_DELAY_S)]
    pub webhook_delay_s: u64,

    /// Seconds before a failed webhook call is tried again; doubles up to 30 minutes, and a
    /// call is given up a day after its photo came in.
    #[arg(long, env = "CONFETTI_WEBHOOK_RETRY_S", default_value_t = defaults::WEBHOOK_RETRY_S)]
    pub webhook_retry_s: u64,
}

impl ServeArgs {
    /// The runtime settings these flags (and their environment twins) ask for.
    pub fn settings(&self) -> Settings {
        let public_url = crate::bootstrap::public_url(self.site.public_url.as_deref(), self.bind);
        Settings {
            database_url: self.site.database_url.clone(),
            storage: self.storage.clone(),
            max_upload_bytes: self.max_upload_bytes,
            max_image_pixels: self.max_image_pixels,
            max_video_bytes: self.max_video_bytes,
            max_video_seconds: self.max_video_seconds,
            resumable_expiry_s: self.resumable_expiry_s,
            resumable_lease: Duration::from_secs(self.resumable_lease_s.max(1)),
            ffmpeg: self.ffmpeg.clone(),
            guest_quota_bytes: self.guest_quota_bytes,
            idempotency_lease_s: self.idempotency_lease_s,
            idempotency_retention_s: self.idempotency_retention_s,
            derivative_workers: self.derivative_workers,
            derivative_lease: Duration::from_secs(self.derivative_lease_s),
            header_timeout: Duration::from_secs(self.header_timeout_s),
            body_idle_timeout: Duration::from_secs(self.body_idle_timeout_s),
            idle_timeout: Duration::from_secs(self.idle_timeout_s),
            max_connections: self.max_connections,
            trusted_proxies: self.trusted_proxy.clone(),
            organiser_session: Duration::from_secs(self.organiser_session_s),
            undo_grace: Duration::from_secs(self.undo_grace_s),
            metrics_bind: self.metrics_bind,
            metrics_token: metrics_token_from_env(),
            event_storage_cap_bytes: self.event_storage_cap_bytes,
            min_free_bytes: self.min_free_bytes,
            derivative_cache_bytes: self.derivative_cache_bytes,
            webhook_delay: Duration::from_secs(self.webhook_delay_s),
            webhook_retry: Duration::from_secs(self.webhook_retry_s.max(1)),
            ..Settings::new(&self.site.data_dir, &public_url)
        }
    }

    /// Every flag as `confetti serve` would have it with none given (the environment still
    /// applies), for the given site.
    pub fn defaults(site: SiteArgs) -> anyhow::Result<Self> {
        use clap::{Args as _, FromArgMatches as _};
        let command = Self::augment_args(clap::Command::new("serve").no_binary_name(true));
        let matches = command.try_get_matches_from(Vec::<String>::new())?;
        Ok(Self { site, ..Self::from_arg_matches(&matches)? })
    }
}

/// `confetti backup`: the instance to back up and where to.
#[derive(Args, Clone, Debug)]
pub struct BackupArgs {
    #[command(flatten)]
    pub site: SiteArgs,

    /// Where the photos are, as `serve` has it: default the data directory; `s3://bucket/prefix`
    /// for an S3-compatible store (the usual AWS_* variables).
    #[arg(long, env = "CONFETTI_STORAGE")]
    pub storage: Option<String>,

    /// Where the backup goes: a directory, or `s3://bucket/prefix` (the same AWS_* variables).
    /// A backup already there is brought up to date: only what is new is copied.
    #[arg(long, env = "CONFETTI_BACKUP_TO")]
    pub to: String,
}

/// `confetti restore`: which backup, and the empty data directory it goes into.
#[derive(Args, Clone, Debug)]
pub struct RestoreArgs {
    #[command(flatten)]
    pub site: SiteArgs,

    /// Where the restored photos go: default the data directory; `s3://bucket/prefix` for an
    /// S3-compatible store (the usual AWS_* variables).
    #[arg(long, env = "CONFETTI_STORAGE")]
    pub storage: Option<String>,

    /// The backup: the directory or `s3://bucket/prefix` that `confetti backup --to` wrote.
    #[arg(long, env = "CONFETTI_RESTORE_FROM")]
    pub from: String,
}

/// The instance admin's token; from the environment, never a flag (flags show in `ps`).
pub fn admin_token_from_env() -> Option<String> {
    std::env::var("CONFETTI_ADMIN_TOKEN").ok().filter(|t| !t.trim().is_empty())
}

/// The token `/metrics` asks for, when set; from the environment, never a flag.
pub fn metrics_token_from_env() -> Option<String> {
    std::env::var("CONFETTI_METRICS_TOKEN").ok().filter(|t| !t.trim().is_empty())
}
