//! HTTP: one module per resource, each exporting its routes; `routes` merges them.
//! Handlers stay short: parse, call one use case, map the result to a response.

pub mod body_timeout;
pub mod client_addr;
pub mod connection_activity;
pub mod connections;
pub mod events;
pub mod export;
pub mod extract;
pub mod guests;
pub mod live;
pub mod media;
pub mod multipart;
pub mod organiser;
pub mod pages;
pub mod problem;
pub mod reactions;
pub mod security_headers;
pub mod system;
pub mod upload_parts;
pub mod uploads;
pub mod views;

use axum::Router;

use crate::app::AppState;

pub fn routes() -> Router<AppState> {
    Router::new()
        .merge(system::routes())
        .merge(events::routes())
        .merge(guests::routes())
        .merge(organiser::routes())
        .merge(uploads::routes())
        .merge(reactions::routes())
        .merge(export::routes())
        .merge(live::routes())
        .merge(media::routes())
        .merge(pages::routes())
}

/// `Idempotent-Replayed: true`, on answers that repeat an earlier one.
pub const IDEMPOTENT_REPLAYED: &str = "idempotent-replayed";
