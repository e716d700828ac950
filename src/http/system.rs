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
}

/// 200 while the database answers, else 503 (a load balancer stops sending guests here).
async fn ready(State(state): State<AppState>) -> Result<&'static str, ApiError> {
    if state.db.ping().await { Ok("ready") } else { Err(ApiError::NotReady) }
}

async fn info(State(state): State<AppState>) -> Json<Value> {
    Json(json!({
        "name": "confetti",
        "version": env!("CARGO_PKG_VERSION"),
        "capabilities": ["client_upload_id", "upload_preflight"],
        "limits": {
            "max_upload_bytes": state.settings.max_upload_bytes,
            "max_image_pixels": state.settings.max_image_pixels,
        },
    }))
}
