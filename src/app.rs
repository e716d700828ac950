//! The composition root: builds every service once with what it uses (`AppState::open`), the
//! router with its layer stack, and `serve`, the one seam through which production and tests
//! alike run Confetti on a listener. The state handlers read is defined in `http`.

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use axum::extract::MatchedPath;
use axum::http::Request;
use axum::response::{IntoResponse, Response};
use tokio::net::TcpListener;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::trace::TraceLayer;

use crate::blobs::BlobStore;
use crate::blocking::Blocking;
use crate::db::Db;
use crate::derivative_cache::DerivativeCache;
use crate::error::ApiError;
use crate::http::client_addr::TrustedProxies;
use crate::ingest::{Ingest, IngestLimits};
use crate::jobs::blob_jobs::BlobJobs;
use crate::jobs::derivatives::{DerivativeQueue, DerivativeWorkers};
use crate::jobs::instances::Instance;
use crate::jobs::poster::Ffmpeg;
use crate::live::LiveHub;
use crate::resumable::Resumable;
use crate::sandbox::MediaWorkers;
use crate::throttle::Throttle;

pub use crate::http::AppState;
pub use crate::settings::Settings;

impl AppState {
    /// Connects the database (running migrations) and opens the blob store.
    pub async fn open(settings: Settings, admin_token: String) -> anyhow::Result<Self> {
        let blobs = BlobStore::open(settings.storage.as_deref(), &settings.data_dir)?;
        Self::open_with(settings, admin_token, blobs).await
    }

    /// Connects the database (running migrations), with the given blob store.
    pub async fn open_with(settings: Settings, admin_token: String, blobs: BlobStore) -> anyhow::Result<Self> {
        // Checked before anything is opened: a mistyped proxy stops the start, not the first login.
        let trusted_proxies =
            TrustedProxies::parse(&settings.trusted_proxies).map_err(|e| anyhow::anyhow!("--trusted-proxy: {e}"))?;
        // A bucket that does not exist, or credentials it refuses, stop the start: such an
        // instance would answer every upload with a 500.
        blobs.check().await.map_err(|e| {
            anyhow::anyhow!("the photo store does not answer ({e}); check --storage and the AWS_* settings")
        })?;
        let db = Db::connect(settings.database_url.as_deref(), &settings.data_dir).await?;
        let blocking = Blocking::new();
        let derivative_workers = settings.derivative_workers.unwrap_or(blocking.cores());
        let derivatives = Arc::new(DerivativeQueue::new(settings.derivative_lease));
        let instance = Instance::register(db.clone(), blobs.clone()).await?;
        let blob_jobs = BlobJobs::new(db.clone(), blobs.clone(), instance.id, instance.stopping());
        // One waiting media worker per derivative worker: a job never waits for a process start.
        let media = MediaWorkers::new(settings.media_worker.clone(), derivative_workers);
        media.fill();
        let ffmpeg =
            Arc::new(Ffmpeg::check(&settings.ffmpeg, settings.data_dir.join("poster-tmp"), Arc::clone(&media)).await);
        let ingest = Arc::new(Ingest::new(
            db.clone(),
            blobs.clone(),
            blocking.clone(),
            IngestLimits {
                max_upload_bytes: settings.max_upload_bytes,
                max_image_pixels: settings.max_image_pixels,
                max_video_bytes: settings.max_video_bytes,
                max_video_seconds: settings.max_video_seconds,
                min_free_bytes: settings.min_free_bytes,
                webhook_delay: settings.webhook_delay,
            },
            Arc::clone(&derivatives),
            blob_jobs.clone(),
            instance.id,
        ));
        let resumable = Arc::new(Resumable::new(
            db.clone(),
            blobs.clone(),
            Arc::clone(&ingest),
            std::time::Duration::from_secs(settings.resumable_expiry_s.max(1)),
            settings.resumable_lease.max(std::time::Duration::from_secs(1)),
        ));
        let webhooks = crate::jobs::webhooks::Webhooks::new(
            db.clone(),
            &settings.public_url,
            (settings.webhook_delay, settings.webhook_retry),
            instance.id,
            instance.stopping(),
        )?;
        let throttle = Arc::new(Throttle::new(db.clone()));
        let derivative_cache = Arc::new(DerivativeCache::new(settings.derivative_cache_bytes));
        Ok(Self {
            blob_jobs,
            webhooks,
            derivatives,
            ingest,
            resumable,
            live: Arc::new(LiveHub::default()),
            settings: Arc::new(Settings { derivative_workers: Some(derivative_workers), ..settings }),
            trusted_proxies: Arc::new(trusted_proxies),
            db,
            blobs,
            blocking,
            admin_token: admin_token.into(),
            throttle,
            idempotency_metrics: Arc::default(),
            instance,
            ffmpeg,
            media,
            derivative_cache,
        })
    }
}

impl AppState {
    /// The derivative workers, with what they use of this state.
    pub fn derivative_workers(&self) -> DerivativeWorkers {
        DerivativeWorkers {
            db: self.db.clone(),
            blobs: self.blobs.clone(),
            media: Arc::clone(&self.media),
            queue: Arc::clone(&self.derivatives),
            live: Arc::clone(&self.live),
            blob_jobs: self.blob_jobs.clone(),
            max_image_pixels: self.settings.max_image_pixels,
            ffmpeg: Arc::clone(&self.ffmpeg),
            max_video_bytes: self.settings.max_video_bytes,
            instance: self.instance.id,
            stopping: self.instance.stopping(),
        }
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
    let instance = state.instance.clone();
    instance.spawn();
    crate::jobs::orphans::spawn_sweep(state.db.clone(), state.blobs.clone(), instance.id);
    crate::jobs::idempotency_keys::spawn_sweep(
        state.db.clone(),
        Arc::clone(&state.idempotency_metrics),
        state.settings.idempotency_retention_s,
        instance.id,
    );
    crate::jobs::live_feed::spawn_sweep(state.db.clone(), instance.id);
    crate::jobs::resumable_sweep::spawn_sweep(
        state.db.clone(),
        state.blobs.clone(),
        state.resumable.expiry(),
        instance.id,
    );
    state.derivative_workers().spawn(state.settings.derivative_workers.unwrap_or(1));
    state.blob_jobs.spawn_workers(1);
    state.webhooks.spawn_worker();
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
    let stopping = instance.clone();
    let served = crate::http::connections::serve(listener, router(state), limits, async move {
        shutdown.await;
        // From now on this instance claims no job: the others take the new ones.
        stopping.begin_stop();
        // Open live streams would otherwise hold their connections, and shutdown, open.
        live.close();
    })
    .await;
    // The requests have finished: what this instance still holds goes back at once.
    instance.retire().await;
    served
}
