//! The web page and the API reference, embedded in the binary: `/` and every event link
//! serve the same page (its ES modules decide what to show); `/static/…` its files;
//! `/e/{slug}/qr.svg` the QR code of an event's join link, for its organiser, the admin and its
//! venue screen (which shows it);
//! `/admin` the admin's page. Not part of the API, so not in its reference (`http::openapi`).

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use qrcode::QrCode;
use qrcode::render::svg;

use super::events::ShownEvent;
use super::extract::{Manager, Viewer};
use super::first_visit;
use super::guests::Me;
use super::system::Info;
use crate::domain::EventSlug;
use crate::error::{ApiError, ApiResult};
use crate::http::AppState;

/// A file of the page as `build.rs` left it: its bytes raw and compressed.
pub struct StaticFile {
    pub name: &'static str,
    pub content_type: &'static str,
    pub raw: &'static [u8],
    pub gzip: &'static [u8],
    pub brotli: &'static [u8],
}

// `VERSION`, `FILES` (every file of `static/`), `INDEX` (the page) and `SERVICE_WORKER`
// (served by `http::install`), made by `build.rs`.
include!(concat!(env!("OUT_DIR"), "/static_files.rs"));

/// A year: the longest `max-age` caches honour, for names that change with their content.
const IMMUTABLE: &str = "public, max-age=31536000, immutable";

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/", get(index))
        .route("/e/{slug}", get(guest_page))
        .route("/e/{slug}/organiser", get(index))
        .route("/e/{slug}/screen", get(index))
        .route("/e/{slug}/qr.svg", get(join_qr_code))
        .route("/admin", get(index))
        .route("/static/{file}", get(static_file))
        .route("/static/{version}/{file}", get(versioned_file))
}

/// The page: revalidated on every load (a phone keeps an old page for days otherwise), a 304
/// while the binary is the same. It names the files under this build's version.
async fn index(headers: HeaderMap) -> Response {
    serve(&INDEX, &headers, "no-cache")
}

/// A guest's event page: the page, carrying what it would ask first (the event as this visitor
/// is shown it, the server's limits, the guest if this visitor is one of its guests) in a
/// `<script type="application/json" id="boot">`, so that a phone on a weak network shows the
/// name form one round trip after the page instead of four. Personal, so never kept by a shared
/// cache, and made for each request (about 2 KB; the page's files are cached for good). An
/// unknown slug, or a database that does not answer, gets the plain page: it asks for itself.
async fn guest_page(
    State(state): State<AppState>,
    viewer: Result<Viewer, ApiError>,
    Path(slug): Path<String>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let event = match EventSlug::parse(&slug) {
        Ok(slug) => state.db.event_by_slug(slug.as_str()).await,
        Err(_) => Ok(None),
    };
    let event = match event {
        Ok(Some(event)) => event,
        Ok(None) => return index(headers).await,
        Err(e) => {
            tracing::warn!(error = %e, "could not read an event for its page; the page asks for itself");
            return index(headers).await;
        }
    };
    let viewer = viewer.ok();
    let me = match viewer.as_ref().and_then(|v| v.guest.clone()).filter(|g| g.event_id == event.id) {
        Some(guest) => match Me::of(&state, guest).await {
            Ok(me) => Some(me),
            Err(e) => {
                tracing::warn!(error = %e, "could not describe a guest for their page; the page asks for itself");
                return index(headers).await;
            }
        },
        None => None,
    };
    let new_visitor = me.is_none() && came_with_join_token(&uri);
    let name = event.name.clone();
    let manifest = format!("/e/{}/manifest.webmanifest", event.slug);
    let boot = Boot { event: ShownEvent::to(&state, viewer.as_ref(), event), info: Info::of(&state), me };
    let Ok(json) = serde_json::to_string(&boot) else { return index(headers).await };
    // The event's own manifest (installed, the page opens as this event's app), and the boot data.
    let boot = format!(
        "  <link rel=\"manifest\" href=\"{manifest}\">\n  <script type=\"application/json\" id=\"boot\">{}</script>\n",
        inert(&json)
    );
    if new_visitor {
        let page = first_visit::page(&name, &boot, &headers);
        match page {
            Some(page) => match first_visit::respond(page, &headers).await {
                Some(response) => return response,
                None => tracing::warn!("could not compress a first visit's page; it goes as the plain page"),
            },
            None => tracing::warn!("the page lacks what a first visit's page fills in; it goes as the plain page"),
        }
    }
    let page = String::from_utf8_lossy(INDEX.raw).replacen("</head>", &format!("{boot}</head>"), 1);
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(INDEX.content_type)),
            (header::CACHE_CONTROL, HeaderValue::from_static("private, no-cache")),
            (header::VARY, HeaderValue::from_static("cookie")),
        ],
        page,
    )
        .into_response()
}

/// What a guest's event page carries.
#[derive(serde::Serialize)]
struct Boot {
    event: ShownEvent,
    info: Info,
    /// Absent when this visitor is not one of the event's guests (yet).
    me: Option<Me>,
}

/// Whether the link carries the join token (`?join=…`, the QR code's link): a new visitor then
/// gets the name form at once.
fn came_with_join_token(uri: &Uri) -> bool {
    uri.query().is_some_and(|q| q.split('&').any(|pair| pair.strip_prefix("join=").is_some_and(|v| !v.is_empty())))
}

/// JSON that cannot end the `<script>` element it sits in, whatever a name or a welcome text
/// holds: `<`, `>` and `&` written as JSON escapes (the same value once parsed).
fn inert(json: &str) -> String {
    json.replace('<', "\\u003c").replace('>', "\\u003e").replace('&', "\\u0026")
}

/// A file by its plain name (pages from before versioned names, tools): revalidated every time.
async fn static_file(Path(file): Path<String>, headers: HeaderMap) -> ApiResult<Response> {
    let found = FILES.iter().find(|f| f.name == file).ok_or(ApiError::NotFound)?;
    Ok(serve(found, &headers, "no-cache"))
}

/// A file under this build's version: the same name always has the same bytes, so a browser
/// keeps it for good and never asks again. Another version (a page open since before an
/// upgrade) gets today's file, revalidated as a plain name is.
async fn versioned_file(Path((version, file)): Path<(String, String)>, headers: HeaderMap) -> ApiResult<Response> {
    let found = FILES.iter().find(|f| f.name == file).ok_or(ApiError::NotFound)?;
    Ok(serve(found, &headers, if version == VERSION { IMMUTABLE } else { "no-cache" }))
}

/// The file in the smallest form the client takes (`Accept-Encoding`: brotli, then gzip, else
/// as it is), with an ETag per form.
pub(super) fn serve(file: &StaticFile, headers: &HeaderMap, cache: &'static str) -> Response {
    let (body, encoding) = match accepted(headers) {
        Encoding::Brotli if file.brotli.len() < file.raw.len() => (file.brotli, Some("br")),
        Encoding::Brotli | Encoding::Gzip if file.gzip.len() < file.raw.len() => (file.gzip, Some("gzip")),
        _ => (file.raw, None),
    };
    let etag =
        format!("\"{}-{:x}{}\"", VERSION, fnv1a(file.raw), encoding.map(|e| format!("-{e}")).unwrap_or_default());
    let common = [
        (header::CACHE_CONTROL, HeaderValue::from_static(cache)),
        (header::VARY, HeaderValue::from_static("accept-encoding")),
    ];
    if headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|c| c.trim() == etag))
    {
        return (StatusCode::NOT_MODIFIED, common, [(header::ETAG, etag)]).into_response();
    }
    let mut response =
        (common, [(header::CONTENT_TYPE, file.content_type), (header::ETAG, etag.as_str())], body).into_response();
    if let Some(encoding) = encoding {
        response.headers_mut().insert(header::CONTENT_ENCODING, HeaderValue::from_static(encoding));
    }
    response
}

#[derive(Debug, PartialEq)]
enum Encoding {
    Brotli,
    Gzip,
    Identity,
}

/// What `Accept-Encoding` allows, best first: `br`, then `gzip` (each unless given `q=0`).
fn accepted(headers: &HeaderMap) -> Encoding {
    let (brotli, gzip) = encodings(headers);
    if brotli {
        Encoding::Brotli
    } else if gzip {
        Encoding::Gzip
    } else {
        Encoding::Identity
    }
}

/// Whether the browser takes a gzipped body (a page made for the request is gzipped, not brotli).
pub fn takes_gzip(headers: &HeaderMap) -> bool {
    encodings(headers).1
}

/// Whether `Accept-Encoding` allows `br` and `gzip` (each unless given `q=0`).
fn encodings(headers: &HeaderMap) -> (bool, bool) {
    let (mut brotli, mut gzip) = (false, false);
    for value in headers.get_all(header::ACCEPT_ENCODING).iter().filter_map(|v| v.to_str().ok()) {
        for item in value.split(',') {
            let mut parts = item.split(';');
            let name = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
            let refused =
                parts.any(|p| p.trim().strip_prefix("q=").and_then(|q| q.trim().parse::<f32>().ok()) == Some(0.0));
            match name.as_str() {
                "br" if !refused => brotli = true,
                "gzip" if !refused => gzip = true,
                _ => {}
            }
        }
    }
    (brotli, gzip)
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
