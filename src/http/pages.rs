//! The web page and the API reference, embedded in the binary: `/` and every event link
//! serve the same page; `/api/v1/openapi.json` describes the API.

use axum::Router;
use axum::http::header;
use axum::response::{Html, IntoResponse};
use axum::routing::get;

use crate::app::AppState;

const INDEX_HTML: &str = include_str!("../../static/index.html");
const STYLE_CSS: &str = include_str!("../../static/style.css");
const OPENAPI_JSON: &str = include_str!("../../static/openapi.json");

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/", get(index))
        .route("/e/{slug}", get(index))
        .route("/e/{slug}/organiser", get(index))
        .route("/api/v1/openapi.json", get(|| async { ([(header::CONTENT_TYPE, "application/json")], OPENAPI_JSON) }))
        .route("/static/style.css", get(|| async { ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], STYLE_CSS) }))
}

async fn index() -> impl IntoResponse {
    ([(header::CACHE_CONTROL, "no-cache")], Html(INDEX_HTML))
}
