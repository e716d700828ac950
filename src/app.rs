//! The application: shared state, the router, the layer stack, and `serve`, the one seam
//! through which production and tests alike run Confetti on a listener.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::MatchedPath;
use axum::http::Request;
use axum::response::{IntoResponse, Response};
use tokio::net::TcpListener;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::trace::TraceLayer;

use crate::blobs::BlobStore;
use crate::blocking::Blocking;
use crate::config::ServeArgs;
use crate::db::Db;
use crate::error::ApiError;
use crate::http::client_addr::TrustedProxies;
use crate::jobs::derivatives::DerivativeQueue;
use crate::live::LiveHub;
use crate::throttle::Throttle;

/// Limits and addresses every request may need.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Base of join links, without a trailing slash.
    pub public_url: String,
    pub max_upload_bytes: u64,
    pub max_image_pixels: u64,
    pub guest_quota_bytes: i64,
    /// Cookies get `Secure` when the public URL is https.
    pub secure_cookies: bool,
    pub idempotency_lease_s: u64,
    pub idempotency_retention_s: u64,
    /// Derivative workers on this instance.
    pub derivative_workers: usize,
    pub header_timeout: Duration,
    pub body_idle_timeout: Duration,
    pub idle_timeout: Duration,
    /// `None`: derived from the open-files limit when serving.
    pub max_connections: Option<usize>,
    /// `--trusted-proxy`: whose `X-Forwarded-For` names the client.
    pub trusted_proxies: TrustedProxies,
    pub organiser_session: Duration,
    /// When set, `/metrics` is served there only.
    pub metrics_bind: Option<SocketAddr>,
    /// When set, `/metrics` needs this bearer token.
    pub metrics_token: Option<String>,
    /// Storage cap of new events (all guests together).
    pub event_storage_cap_bytes: i64,
    /// Uploads are refused while the local photo store has less free space.
    pub min_free_bytes: u64,
}

#[derive(Clone, Debug)]
pub struct AppState {
    pub db: Db,
    pub blobs: BlobStore,
    pub blocking: Blocking,
    pub settings: Arc<Settings>,
    pub admin_token: Arc<str>,
    pub throttle: Arc<Throttle>,
    pub idempotency_metrics: Arc<crate::idempotency::Metrics>,
    pub derivatives: Arc<DerivativeQueue>,
    pub live: Arc<LiveHub>,
}

impl AppState {
    /// Connects the database (running migrations) and opens the blob store.
    pub async fn open(args: &ServeArgs, admin_token: String) -> anyhow::Result<Self> {
        // Checked before anything is opened: a mistyped proxy stops the start, not the first login.
        let trusted_proxies =
            TrustedProxies::parse(&args.trusted_proxy).map_err(|e| anyhow::anyhow!("--trusted-proxy: {e}"))?;
        let db = Db::connect(args.site.database_url.as_deref(), &args.site.data_dir).await?;
        let blobs = BlobStore::open(args.storage.as_deref(), &args.site.data_dir)?;
        let public_url = crate::bootstrap::public_url(args.site.public_url.as_deref(), args.bind);
        let blocking = Blocking::new();
        Ok(Self {
            db,
            blobs,
            derivatives: Arc::new(DerivativeQueue::new(Duration::from_secs(args.derivative_lease_s))),
            live: Arc::new(LiveHub::default()),
            settings: Arc::new(Settings {
                derivative_workers: args.derivative_workers.unwrap_or(blocking.media_permits()),
                secure_cookies: public_url.starts_with("https://"),
                public_url,
                max_upload_bytes: args.max_upload_bytes,
                max_image_pixels: args.max_image_pixels,
                guest_quota_bytes: args.guest_quota_bytes,
                idempotency_lease_s: args.idempotency_lease_s,
                idempotency_retention_s: args.idempotency_retention_s,
                header_timeout: Duration::from_secs(args.header_timeout_s),
                body_idle_timeout: Duration::from_secs(args.body_idle_timeout_s),
                idle_timeout: Duration::from_secs(args.idle_timeout_s),
                max_connections: args.max_connections,
                trusted_proxies,
                organiser_session: Duration::from_secs(args.organiser_session_s),
                metrics_bind: args.metrics_bind,
                metrics_token: crate::config::metrics_token_from_env(),
                event_storage_cap_bytes: args.event_storage_cap_bytes,
                min_free_bytes: args.min_free_bytes,
            }),
            blocking,
            admin_token: admin_token.into(),
            throttle: Arc::new(Throttle::default()),
            idempotency_metrics: Arc::default(),
        })
    }
}

pub fn router(state: AppState) -> Router {
    // Outermost first: panics become a 500 problem, then every request is traced
    // (the span names the route template, never the raw path with its ids), then every
    // answer gets the security headers, then every error answer is made problem+json (axum's
    // own rejections are text). The Idempotency-Key layer sits on the write routes that take
    // part (`http::idempotency::Keyed`).
    Router::new()
        .merge(crate::http::routes(&state))
        .fallback(|| async { ApiError::NotFound })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        .layer(axum::middleware::map_response(crate::http::problem::ensure))
        .layer(axum::middleware::map_response(crate::http::security_headers::add))
        .layer(TraceLayer::new_for_http().make_span_with(|request: &Request<_>| {
            let route = request.extensions().get::<MatchedPath>().map(MatchedPath::as_str).unwrap_or("-");
            tracing::info_span!("request", method = %request.method(), route)
        }))
        .layer(CatchPanicLayer::custom(|_: Box<dyn std::any::Any + Send>| -> Response {
            ApiError::Internal(anyhow::anyhow!("a request handler panicked")).into_response()
        }))
        .with_state(state)
}

/// Serves until `shutdown` resolves, then stops accepting and lets in-flight requests finish.
/// Connections are capped and closed when they stall or idle (`http::connections`).
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let shutdown = crate::http::system::spawn_metrics_listener(&state, shutdown).await;
    crate::jobs::orphans::spawn_sweep(state.clone());
    crate::jobs::idempotency_keys::spawn_sweep(state.clone());
    crate::jobs::live_feed::spawn_sweep(state.clone());
    crate::jobs::derivatives::spawn_workers(state.clone(), state.settings.derivative_workers);
    let live = Arc::clone(&state.live);
    let db = state.db.clone();
    tokio::spawn(async move { live.run(db).await });
    let live = Arc::clone(&state.live);
    let limits = crate::http::connections::Limits {
        timeouts: crate::http::connection_activity::Timeouts {
            header: state.settings.header_timeout,
            idle: state.settings.idle_timeout,
            body_idle: state.settings.body_idle_timeout,
        },
        max_connections: state
            .settings
            .max_connections
            .unwrap_or_else(crate::http::connections::default_max_connections),
    };
    crate::http::connections::serve(listener, router(state), limits, async move {
        shutdown.await;
        // Open live streams would otherwise hold their connections, and shutdown, open.
        live.close();
    })
    .await
}
