//! Health, readiness, what this server can do, and `/metrics` — on the public port, or kept
//! private on a listener of its own (`--metrics-bind`) and/or behind a bearer token
//! (`CONFETTI_METRICS_TOKEN`).

use std::future::Future;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};
use tokio::net::TcpListener;

use crate::app::AppState;
use crate::auth;
use crate::error::ApiError;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(ready))
        .route("/api/v1/info", get(info))
        .route("/metrics", get(public_metrics))
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

/// On the public port: absent when the operator gave metrics an address of their own.
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

type MetricsText = ([(axum::http::HeaderName, &'static str); 1], String);

/// 200 while the database answers, else 503 (a load balancer stops sending guests here).
async fn ready(State(state): State<AppState>) -> Result<&'static str, ApiError> {
    if state.db.ping().await { Ok("ready") } else { Err(ApiError::NotReady) }
}

async fn info(State(state): State<AppState>) -> Json<Value> {
    Json(json!({
        "name": "confetti",
        "version": env!("CARGO_PKG_VERSION"),
        "capabilities": ["client_upload_id", "upload_preflight", "idempotency_keys"],
        "limits": {
            "max_upload_bytes": state.settings.max_upload_bytes,
            "max_image_pixels": state.settings.max_image_pixels,
        },
        "idempotency": {
            "retention_s": state.settings.idempotency_retention_s,
            "lease_s": state.settings.idempotency_lease_s,
        },
    }))
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
        ("made", "uploads whose thumb and preview this instance made", &d.made),
        ("failed", "uploads this instance could not decode (original kept, status failed)", &d.failed),
    ] {
        out.push_str(&format!(
            "# HELP confetti_derivatives_{name}_total {help}\n# TYPE confetti_derivatives_{name}_total counter\nconfetti_derivatives_{name}_total {}\n",
            value.load(Relaxed)
        ));
    }
    ([(axum::http::header::CONTENT_TYPE, "text/plain; version=0.0.4")], out)
}
