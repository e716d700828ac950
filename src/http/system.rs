//! Health, readiness, what this server can do, and `/metrics` — on the public port, or kept
//! private on a listener of its own (`--metrics-bind`) and/or behind a bearer token
//! (`CONFETTI_METRICS_TOKEN`).

use std::future::Future;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;
use tokio::net::TcpListener;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::openapi::{refusals, schemas};
use crate::auth;
use crate::error::ApiError;
use crate::http::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(healthz))
        .routes(routes!(ready))
        .routes(routes!(info))
        .routes(routes!(public_metrics))
}

/// Liveness
///
/// 200 once the server serves requests. Needs nothing else.
#[utoipa::path(
    get,
    path = "/healthz",
    operation_id = "healthz",
    tag = "system",
    security(()),
    responses(
        (status = 200, description = "Serving.", content_type = "text/plain", body = inline(schemas::Ok)),
    ),
)]
async fn healthz() -> &'static str {
    "ok"
}

/// With `--metrics-bind`, serves `/metrics` there (and nothing else) until `shutdown` resolves.
/// Returns the shutdown to hand to the public server: it resolves with `shutdown` and stops
/// this listener at the same moment. Without `--metrics-bind`, only passes `shutdown` on.
/// An address that cannot be bound is logged as an error and guests are served all the same
/// (the public port still keeps `/metrics` to itself): a monitoring mistake must not take the
/// event offline.
pub async fn spawn_metrics_listener(
    state: &AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> impl Future<Output = ()> + Send + 'static {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    if let Some(addr) = state.settings.metrics_bind {
        match TcpListener::bind(addr).await {
            Ok(listener) => {
                tracing::info!(bind = %addr, "serving /metrics on its own address");
                let router = Router::new()
                    .route("/metrics", get(private_metrics))
                    .fallback(|| async { ApiError::NotFound })
                    .with_state(state.clone());
                tokio::spawn(async move {
                    let stopped = async {
                        let _ = stopped.await;
                    };
                    if let Err(e) = axum::serve(listener, router).with_graceful_shutdown(stopped).await {
                        tracing::error!(error = %e, "the metrics listener stopped");
                    }
                });
            }
            Err(e) => tracing::error!(error = %e, bind = %addr, "cannot serve /metrics: binding its address failed"),
        }
    }
    async move {
        shutdown.await;
        let _ = stop.send(());
    }
}

/// Counters for operators
///
/// Counters in the Prometheus text exposition format (`Content-Type: text/plain; version=0.0.4`): for each, a `#
/// HELP` line, a `# TYPE … counter` line and its value. Counted per server process since it started. Needs no
/// credential. The counters, about `Idempotency-Key` on writes and the derivative worker:
///
/// - `confetti_idempotency_executions_total`: writes that claimed a key and ran.
/// - `confetti_idempotency_replays_total`: recorded answers replayed.
/// - `confetti_idempotency_mismatches_total`: keys reused with another request (422).
/// - `confetti_idempotency_in_flight_total`: attempts answered 409 while the key was held.
/// - `confetti_idempotency_takeovers_total`: claims taken over after their lease expired.
/// - `confetti_idempotency_released_total`: keys released after a refusal or failure.
/// - `confetti_idempotency_swept_total`: completed keys forgotten after the retention.
/// - `confetti_derivatives_thumbs_total`: uploads this instance made `ready` by their thumb alone (thumbs first; the
///   preview followed or follows).
/// - `confetti_derivatives_made_total`: uploads whose every derivative this instance finished (the last of them).
/// - `confetti_derivatives_failed_total`: uploads this instance could not decode (original kept, status `failed`).
///
/// Kept private by the operator: with `--metrics-bind` it is served only on that address (the public port answers
/// 404 `not_found`); with `CONFETTI_METRICS_TOKEN` set it needs `Authorization: Bearer <token>` (otherwise 401
/// `unauthenticated`).
#[utoipa::path(
    get,
    path = "/metrics",
    operation_id = "getMetrics",
    tag = "system",
    security(()),
    responses(
        (status = 200, description = "The counters.", content_type = "text/plain", body = inline(schemas::MetricsText)),
        GetMetricsRefusals,
    ),
)]
// On the public port: absent when the operator gave metrics an address of their own.
async fn public_metrics(State(state): State<AppState>, headers: HeaderMap) -> Result<MetricsText, ApiError> {
    if state.settings.metrics_bind.is_some() {
        return Err(ApiError::NotFound);
    }
    private_metrics(State(state), headers).await
}

async fn private_metrics(State(state): State<AppState>, headers: HeaderMap) -> Result<MetricsText, ApiError> {
    if let Some(token) = &state.settings.metrics_token {
        let given = headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, t)| t.trim());
        // Compared in constant time: the token is the only thing between a scanner and the counters.
        if !given.is_some_and(|given| auth::constant_time_eq(given.as_bytes(), token.as_bytes())) {
            return Err(ApiError::Unauthenticated);
        }
    }
    Ok(metrics(&state))
}

refusals!(GetMetricsRefusals {
    401 => problem("`CONFETTI_METRICS_TOKEN` is set and the request does not carry it.", &[Unauthenticated]),
    404 => problem("`--metrics-bind` is set: not served on this address.", &[NotFound]),
});

type MetricsText = ([(axum::http::HeaderName, &'static str); 1], String);

/// Readiness
///
/// 200 while the database and the photo store answer (the store's answer is reused for 5 s), else 503 problem+json `not_ready` whose `detail` names the failing part (a load balancer stops sending requests here).
#[utoipa::path(
    get,
    path = "/readyz",
    operation_id = "readyz",
    tag = "system",
    security(()),
    responses(
        (status = 200, description = "The database and the photo store answer.", content_type = "text/plain", body = inline(schemas::Ready)),
        ReadyzRefusals,
    ),
)]
async fn ready(State(state): State<AppState>) -> Result<&'static str, ApiError> {
    let (database, store) = tokio::join!(state.db.ping(), state.blobs.ready());
    match (database, store) {
        (true, Ok(())) => Ok("ready"),
        (false, Ok(())) => Err(ApiError::NotReady("the database does not answer".into())),
        // Why the store failed is logged by `ready`, not told to whoever asks.
        (true, Err(_)) => Err(ApiError::NotReady("the photo store does not answer".into())),
        (false, Err(_)) => Err(ApiError::NotReady("neither the database nor the photo store answers".into())),
    }
}

refusals!(ReadyzRefusals {
    503 => problem("The database or the photo store does not answer; `detail` says which.", &[NotReady]),
});

/// Capabilities and limits
///
/// What this server can do. A client uses a retry-with-key feature only when the server lists its capability.
#[utoipa::path(
    get,
    path = "/api/v1/info",
    operation_id = "getInfo",
    tag = "system",
    security(()),
    responses(
        (status = 200, description = "Capabilities and limits.", body = Info),
    ),
)]
async fn info(State(state): State<AppState>) -> Json<Info> {
    Json(Info::of(&state))
}

impl Info {
    /// What `GET /api/v1/info` answers (and a guest's event page carries).
    pub(crate) fn of(state: &AppState) -> Self {
        Info {
            name: "confetti",
            version: env!("CARGO_PKG_VERSION"),
            capabilities: if state.resumable.available() { WITH_RESUMABLE } else { CAPABILITIES },
            limits: Limits {
                max_upload_bytes: state.settings.max_upload_bytes,
                max_image_pixels: state.settings.max_image_pixels,
                max_video_bytes: state.settings.max_video_bytes,
                max_video_seconds: state.settings.max_video_seconds,
                resumable_expiry_s: state.settings.resumable_expiry_s,
            },
            idempotency: KeyTiming {
                retention_s: state.settings.idempotency_retention_s,
                lease_s: state.settings.idempotency_lease_s,
            },
        }
    }
}

#[derive(Serialize, ToSchema)]
pub(crate) struct Info {
    #[schema(schema_with = confetti)]
    name: &'static str,
    /// The server's version.
    #[schema(value_type = String, examples("0.1.0"))]
    version: &'static str,
    /// Features a client may rely on (`capability_list`).
    #[schema(schema_with = capability_list)]
    capabilities: &'static [&'static str],
    #[schema(inline)]
    limits: Limits,
    #[schema(inline)]
    idempotency: KeyTiming,
}

/// Strings, the example (a whole list) on the array rather than on its items.
fn capability_list() -> utoipa::openapi::Array {
    let description = "Features a client may rely on. This server lists `client_upload_id` (deduplicated uploads, the `Idempotency-Key` header on uploads), `upload_preflight` (`GET …/uploads/by-client-id/{client_upload_id}`), `idempotency_keys` (`Idempotency-Key` on every other authenticated write: parameter `IdempotencyKey`), `known_uploads` (`findKnownUploads`: which files, by SHA-256, the guest has stored already) and, where its photo store keeps partial uploads (a local directory, S3), `resumable_uploads` (`createResumableUpload`). Ignore values you do not know.";
    utoipa::openapi::ArrayBuilder::new()
        .description(Some(description))
        .items(utoipa::openapi::ObjectBuilder::new().schema_type(utoipa::openapi::Type::String))
        .examples([serde_json::json!(WITH_RESUMABLE)])
        .build()
}

/// `name` is always `confetti`.
fn confetti() -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::Type::String)
        .enum_values(Some(["confetti"]))
        .build()
}

#[derive(Serialize, ToSchema)]
struct Limits {
    /// Largest photo accepted (default 50 MiB).
    #[schema(minimum = 0)]
    max_upload_bytes: u64,
    /// Most pixels an image header may declare (default 100 million); also a video's frame size.
    #[schema(minimum = 0)]
    max_image_pixels: u64,
    /// Largest video accepted (MP4, MOV, WebM; default 2 GiB).
    #[schema(minimum = 0)]
    max_video_bytes: u64,
    /// Longest video accepted, in seconds, as its header says (default 600); longer: 413 `video_too_long`.
    #[schema(minimum = 0)]
    max_video_seconds: u64,
    /// Seconds an untouched resumable upload is kept before its bytes are removed (`--resumable-expiry-s`,
    /// default 86400; capability `resumable_uploads`).
    #[schema(minimum = 0)]
    resumable_expiry_s: u64,
}

/// What every server can do.
const CAPABILITIES: &[&str] = &["client_upload_id", "upload_preflight", "idempotency_keys", "known_uploads"];
/// Where the photo store keeps partial uploads (a local directory, S3).
const WITH_RESUMABLE: &[&str] =
    &["client_upload_id", "upload_preflight", "idempotency_keys", "known_uploads", "resumable_uploads"];

/// How long this server keeps `Idempotency-Key`s (capability `idempotency_keys`; parameter `IdempotencyKey`).
#[derive(Serialize, ToSchema)]
struct KeyTiming {
    /// Seconds a completed key is remembered (and replayed) before it is swept: `--idempotency-retention-s` /
    /// `CONFETTI_IDEMPOTENCY_RETENTION_S`, default 86400 (24 h). The sweep runs every 10 minutes, so a key may
    /// live up to that much longer, never shorter.
    #[schema(minimum = 0, examples(86400))]
    retention_s: u64,
    /// Seconds a running attempt holds its key: `--idempotency-lease-s` / `CONFETTI_IDEMPOTENCY_LEASE_S`, default
    /// 30. Meanwhile a retry with the key gets 409 `idempotency_key_in_flight`; after it, a retry takes over the
    /// claim of an attempt whose process died.
    #[schema(minimum = 0, examples(30))]
    lease_s: u64,
}

/// Counters in the Prometheus text format, so an operator can watch the mechanisms work:
/// Idempotency-Key and the derivative worker.
fn metrics(state: &AppState) -> MetricsText {
    use std::sync::atomic::Ordering::Relaxed;
    let m = &state.idempotency_metrics;
    let counters = [
        ("executions", "writes that claimed a key and ran", &m.executions),
        ("replays", "recorded answers replayed", &m.replays),
        ("mismatches", "keys reused with another request (422)", &m.mismatches),
        ("in_flight", "attempts answered 409 while the key was held", &m.in_flight),
        ("takeovers", "claims taken over after their lease expired", &m.takeovers),
        ("released", "keys released after a refusal or failure", &m.released),
        ("swept", "completed keys forgotten after the retention", &m.swept),
    ];
    let mut out = String::new();
    for (name, help, value) in counters {
        out.push_str(&format!(
            "# HELP confetti_idempotency_{name}_total {help}\n# TYPE confetti_idempotency_{name}_total counter\nconfetti_idempotency_{name}_total {}\n",
            value.load(Relaxed)
        ));
    }
    let d = &state.derivatives;
    for (name, help, value) in [
        ("thumbs", "uploads this instance made ready by their thumb alone", &d.thumbs),
        ("made", "uploads whose every derivative this instance finished", &d.made),
        ("failed", "uploads this instance could not decode (original kept, status failed)", &d.failed),
    ] {
        out.push_str(&format!(
            "# HELP confetti_derivatives_{name}_total {help}\n# TYPE confetti_derivatives_{name}_total counter\nconfetti_derivatives_{name}_total {}\n",
            value.load(Relaxed)
        ));
    }
    ([(axum::http::header::CONTENT_TYPE, "text/plain; version=0.0.4")], out)
}
