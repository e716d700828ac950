//! Configuration. Every flag has an environment twin; the doc comments are the operator
//! documentation (`confetti serve --help` prints them, the README's table repeats them).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;

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
    #[arg(long, env = "CONFETTI_MAX_UPLOAD_BYTES", default_value_t = 50 * 1024 * 1024)]
    pub max_upload_bytes: u64,

    /// Largest image accepted, in pixels (width × height) as declared by its header.
    #[arg(long, env = "CONFETTI_MAX_IMAGE_PIXELS", default_value_t = 100_000_000)]
    pub max_image_pixels: u64,

    /// Storage quota of each guest for new events, in bytes.
    #[arg(long, env = "CONFETTI_GUEST_QUOTA_BYTES", default_value_t = 1024 * 1024 * 1024)]
    pub guest_quota_bytes: i64,

    /// Do not create a demo event when the database has no events.
    #[arg(long, env = "CONFETTI_NO_DEMO")]
    pub no_demo: bool,

    /// Seconds a write holds its Idempotency-Key before another attempt may take it over
    /// (the holder is presumed dead).
    #[arg(long, env = "CONFETTI_IDEMPOTENCY_LEASE_S", default_value_t = 30)]
    pub idempotency_lease_s: u64,

    /// Seconds a completed Idempotency-Key is remembered (and replayed) before it is swept.
    #[arg(long, env = "CONFETTI_IDEMPOTENCY_RETENTION_S", default_value_t = 24 * 60 * 60)]
    pub idempotency_retention_s: u64,

    /// Workers making thumbnails and previews on this instance. Default: cores − 1 (at least
    /// one). 0 leaves the work to other instances sharing the database.
    #[arg(long, env = "CONFETTI_DERIVATIVE_WORKERS")]
    pub derivative_workers: Option<usize>,

    /// Seconds a worker holds a derivative job before another may take it over (the holder is
    /// presumed dead).
    #[arg(long, env = "CONFETTI_DERIVATIVE_LEASE_S", default_value_t = 120)]
    pub derivative_lease_s: u64,

    /// Seconds in-flight requests get to finish after SIGTERM/SIGINT.
    #[arg(long, env = "CONFETTI_SHUTDOWN_GRACE_S", default_value_t = 30)]
    pub shutdown_grace_s: u64,
}

/// The instance admin's token; from the environment, never a flag (flags show in `ps`).
pub fn admin_token_from_env() -> Option<String> {
    std::env::var("CONFETTI_ADMIN_TOKEN").ok().filter(|t| !t.trim().is_empty())
}
