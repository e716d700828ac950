//! The guest's page as an installable app: each event's web app manifest
//! (`/e/{slug}/manifest.webmanifest`, linked from the event's page), the service worker
//! (`/sw.js`, `static/sw.js` with this build's version written into it) and the share target's
//! address without a worker. Not part of the API, so not in its reference (`http::openapi`).

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde_json::json;

use super::pages::{SERVICE_WORKER, VERSION, serve};
use crate::domain::EventSlug;
use crate::error::{ApiError, ApiResult};
use crate::http::AppState;

/// The page's background (`--bg` in `static/style.css`): the splash screen and the title bar.
const BACKGROUND: &str = "#fff7ee";

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/sw.js", get(service_worker))
        .route("/e/{slug}/manifest.webmanifest", get(manifest))
        .route("/e/{slug}/share", post(shared_without_worker))
}

/// Revalidated on every check (browsers look at least daily, and on each visit): a new build's
/// worker differs in its bytes, installs itself and drops the old build's files.
async fn service_worker(headers: HeaderMap) -> Response {
    serve(&SERVICE_WORKER, &headers, "no-cache")
}

/// The event as an app: its name, the icons, its page as the start and the scope, and the
/// share target (photos and videos shared from another app land in the queue, `static/sw.js`).
/// Public, as the event's name is (`GET /api/v1/events/{slug}`).
async fn manifest(State(state): State<AppState>, Path(slug): Path<String>) -> ApiResult<Response> {
    let slug = EventSlug::parse(&slug).map_err(|_| ApiError::EventNotFound)?;
    let event = state.db.event_by_slug(slug.as_str()).await?.ok_or(ApiError::EventNotFound)?;
    let page = format!("/e/{}", event.slug);
    let icon = |name: &str| format!("/static/{VERSION}/{name}");
    let body = json!({
        "id": page,
        "name": event.name,
        "short_name": event.name,
        "start_url": page,
        "scope": page,
        "display": "standalone",
        "background_color": BACKGROUND,
        "theme_color": BACKGROUND,
        "icons": [
            { "src": icon("icon-192.png"), "sizes": "192x192", "type": "image/png", "purpose": "any" },
            { "src": icon("icon-512.png"), "sizes": "512x512", "type": "image/png", "purpose": "any" },
            { "src": icon("icon-maskable-512.png"), "sizes": "512x512", "type": "image/png", "purpose": "maskable" },
            { "src": icon("favicon.svg"), "sizes": "any", "type": "image/svg+xml" },
        ],
        "share_target": {
            "action": format!("{page}/share"),
            "method": "POST",
            "enctype": "multipart/form-data",
            "params": { "files": [{ "name": "files", "accept": ["image/*", "video/*"] }] },
        },
    });
    Ok((
        [
            (header::CONTENT_TYPE, HeaderValue::from_static("application/manifest+json")),
            // The event's name may change.
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        body.to_string(),
    )
        .into_response())
}

/// A share that reached the server: the service worker takes shares into the queue, so this
/// phone has none (not installed yet, or its browser dropped it). The files are not read; the
/// event's page opens, where the guest picks them as usual.
async fn shared_without_worker(Path(slug): Path<String>) -> ApiResult<Redirect> {
    let slug = EventSlug::parse(&slug).map_err(|_| ApiError::EventNotFound)?;
    Ok(Redirect::to(&format!("/e/{}", slug.as_str())))
}
