//! The web page and the API reference, embedded in the binary: `/` and every event link
//! serve the same page (its ES modules decide what to show); `/static/…` its files;
//! `/e/{slug}/qr.svg` the QR code of an event's join link, for its organiser, the admin and its
//! venue screen (which shows it);
//! `/admin` the admin's page. Not part of the API, so not in its reference (`http::openapi`).

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use qrcode::QrCode;
use qrcode::render::svg;

use super::extract::{Manager, Viewer};
use crate::error::{ApiError, ApiResult};
use crate::http::AppState;

const INDEX_HTML: &str = include_str!("../../static/index.html");

const JS: &str = "text/javascript; charset=utf-8";

/// The page's files: name, content type, bytes. No build step: what is in `static/` is served.
const STATIC_FILES: &[(&str, &str, &str)] = &[
    ("style.css", "text/css; charset=utf-8", include_str!("../../static/style.css")),
    ("favicon.svg", "image/svg+xml", include_str!("../../static/favicon.svg")),
    ("app.js", JS, include_str!("../../static/app.js")),
    ("util.js", JS, include_str!("../../static/util.js")),
    ("i18n.js", JS, include_str!("../../static/i18n.js")),
    ("queue.js", JS, include_str!("../../static/queue.js")),
    ("gallery.js", JS, include_str!("../../static/gallery.js")),
    ("guest.js", JS, include_str!("../../static/guest.js")),
    ("organiser.js", JS, include_str!("../../static/organiser.js")),
    ("retry.js", JS, include_str!("../../static/retry.js")),
    ("messages.js", JS, include_str!("../../static/messages.js")),
    ("upload-view.js", JS, include_str!("../../static/upload-view.js")),
    ("quota-view.js", JS, include_str!("../../static/quota-view.js")),
    ("join-view.js", JS, include_str!("../../static/join-view.js")),
    ("gallery-view.js", JS, include_str!("../../static/gallery-view.js")),
    ("lightbox.js", JS, include_str!("../../static/lightbox.js")),
    ("moderation.js", JS, include_str!("../../static/moderation.js")),
    ("slideshow.js", JS, include_str!("../../static/slideshow.js")),
    ("admin.js", JS, include_str!("../../static/admin.js")),
    ("admin-event-view.js", JS, include_str!("../../static/admin-event-view.js")),
    ("event-page.js", JS, include_str!("../../static/event-page.js")),
    ("guest-page-card.js", JS, include_str!("../../static/guest-page-card.js")),
    ("co-organisers-view.js", JS, include_str!("../../static/co-organisers-view.js")),
    ("blocks-view.js", JS, include_str!("../../static/blocks-view.js")),
    ("host-modes-view.js", JS, include_str!("../../static/host-modes-view.js")),
    ("host-modes-card.js", JS, include_str!("../../static/host-modes-card.js")),
    ("fold.js", JS, include_str!("../../static/fold.js")),
    ("event-name-view.js", JS, include_str!("../../static/event-name-view.js")),
    ("screen.js", JS, include_str!("../../static/screen.js")),
    ("screen-link-card.js", JS, include_str!("../../static/screen-link-card.js")),
    ("thumbhash.js", JS, include_str!("../../static/thumbhash.js")),
];

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/", get(index))
        .route("/e/{slug}", get(index))
        .route("/e/{slug}/organiser", get(index))
        .route("/e/{slug}/screen", get(index))
        .route("/e/{slug}/qr.svg", get(join_qr_code))
        .route("/admin", get(index))
        .route("/static/{file}", get(static_file))
}

async fn index() -> impl IntoResponse {
    ([(header::CACHE_CONTROL, "no-cache")], Html(INDEX_HTML))
}

/// Revalidated on every load (a phone keeps an old page for days otherwise); the ETag makes
/// that a 304 while the binary is the same.
async fn static_file(Path(file): Path<String>, headers: axum::http::HeaderMap) -> ApiResult<Response> {
    let (_, content_type, body) = STATIC_FILES.iter().find(|(name, _, _)| *name == file).ok_or(ApiError::NotFound)?;
    let etag = format!("\"{}-{:x}\"", env!("CARGO_PKG_VERSION"), fnv1a(body.as_bytes()));
    let cache = [(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"))];
    if headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|c| c.trim() == etag))
    {
        return Ok((axum::http::StatusCode::NOT_MODIFIED, cache, [(header::ETAG, etag)]).into_response());
    }
    Ok((cache, [(header::CONTENT_TYPE, *content_type), (header::ETAG, etag.as_str())], *body).into_response())
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

/// The join link as a QR code, to print or show on a screen. Only for the event's organiser
/// (cookie or bearer), the admin (bearer only: the admin's page fetches it with its token) and
/// the event's venue screen (its slideshow invites guests with it): the link carries the join
/// token, which the event's public view keeps back.
async fn join_qr_code(
    State(state): State<AppState>,
    manager: Result<Manager, ApiError>,
    viewer: Result<Viewer, ApiError>,
    Path(slug): Path<String>,
) -> ApiResult<Response> {
    let event = match (manager, viewer) {
        (Ok(manager), _) => manager.event(&state, &slug).await?,
        (Err(refused), Ok(viewer)) => {
            let slug = crate::domain::EventSlug::parse(&slug)?;
            let event = state.db.event_by_slug(slug.as_str()).await?.ok_or(ApiError::EventNotFound)?;
            if !viewer.is_screen_of(event.id) {
                return Err(refused);
            }
            event
        }
        (Err(refused), Err(_)) => return Err(refused),
    };
    let url = crate::events::join_url(&state.settings.public_url, &event);
    let code = QrCode::new(url.as_bytes()).map_err(|e| ApiError::Internal(anyhow::anyhow!("QR code: {e}")))?;
    let image = code
        .render::<svg::Color>()
        .min_dimensions(320, 320)
        .dark_color(svg::Color("#000000"))
        .light_color(svg::Color("#ffffff"))
        .build();
    Ok(([(header::CONTENT_TYPE, "image/svg+xml"), (header::CACHE_CONTROL, "private, no-cache")], image).into_response())
}
