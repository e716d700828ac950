//! HTTP: one module per resource, each exporting its routes; `routes` merges them.
//! Handlers stay short: parse, call one use case, map the result to a response.

pub mod admin;
pub mod blocks;
pub mod body_timeout;
pub mod client_addr;
pub mod co_organisers;
pub mod connection_activity;
pub mod connections;
pub mod credentials;
pub mod event_page;
pub mod events;
pub mod export;
pub mod extract;
pub mod first_visit;
pub mod gallery;
pub mod guestbook;
pub mod guests;
pub mod idempotency;
pub mod install;
pub mod known_uploads;
pub mod live;
pub mod media;
pub mod moderation;
pub mod multipart;
pub mod negotiate;
pub mod openapi;
pub mod organiser;
pub mod pages;
pub mod problem;
pub mod reactions;
pub mod restore;
pub mod resumable;
mod resumable_doc;
pub mod screens;
pub mod security_headers;
mod state;
pub mod system;
pub mod upload_parts;
pub mod uploads;
pub mod views;
pub mod webhook;

use axum::{Extension, Router};

pub use state::AppState;

/// Every route, each API route with its operation in the API reference (`openapi`), which is
/// made here once and served at `/api/v1/openapi.json`. The writes that take an
/// `Idempotency-Key` are wrapped by their module in `Keyed::route`. The web page's routes are
/// not part of the API.
pub fn routes(state: &AppState) -> Router<AppState> {
    let keyed = idempotency::Keyed::new(state);
    let (api, reference) = openapi::router()
        .merge(system::routes())
        .merge(events::routes(&keyed))
        .merge(admin::routes(&keyed))
        .merge(webhook::routes(&keyed))
        .merge(event_page::routes())
        .merge(guests::routes())
        .merge(organiser::routes())
        .merge(uploads::routes(&keyed))
        .merge(known_uploads::routes())
        .merge(resumable::routes())
        .merge(gallery::routes())
        .merge(reactions::routes(&keyed))
        .merge(guestbook::routes(&keyed))
        .merge(export::routes())
        .merge(live::routes())
        .merge(media::routes())
        .merge(co_organisers::routes(&keyed))
        .merge(blocks::routes(&keyed))
        .merge(moderation::routes(&keyed))
        .merge(restore::routes(&keyed))
        .merge(screens::routes(&keyed))
        .split_for_parts();
    api.layer(Extension(openapi::Document(openapi::document(reference))))
        .merge(pages::routes())
        .merge(install::routes())
}

/// `Idempotent-Replayed: true`, on answers that repeat an earlier one.
pub const IDEMPOTENT_REPLAYED: &str = "idempotent-replayed";
