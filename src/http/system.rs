//! Health, readiness and what this server can do.

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};

use crate::app::AppState;
use crate::error::ApiError;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(ready))
        .route("/api/v1/info", get(info))
        .route("/metrics", get(metrics))
}

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
async fn metrics(State(state): State<AppState>) -> ([(axum::http::HeaderName, &'static str); 1], String) {
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
