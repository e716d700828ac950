//! Events: created by the instance admin, changed by their organiser.

use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, patch, post};
use axum::{Json, Router};
use serde::Deserialize;

use super::extract::{Admin, JsonBody, Organiser, Viewer};
use super::idempotency::{Keyed, Write};
use super::views::EventJson;
use crate::app::AppState;
use crate::db::events::EventChange;
use crate::domain::{EventName, EventSlug, OrganiserPassword};
use crate::error::{ApiError, ApiResult};
use crate::events::{self, NewEvent};

pub fn routes(keyed: &Keyed) -> Router<AppState> {
    Router::new()
        .route("/api/v1/events", keyed.route(post(create)))
        .route("/api/v1/events/{slug}", get(show))
        .route("/api/v1/events/{slug}", keyed.route(patch(change)))
}

#[derive(Deserialize)]
struct CreateEvent {
    name: String,
    organiser_password: String,
    guest_quota_bytes: Option<i64>,
    storage_cap_bytes: Option<i64>,
}

async fn create(
    State(state): State<AppState>,
    _: Admin,
    write: Write,
    JsonBody(body): JsonBody<CreateEvent>,
) -> ApiResult<Response> {
    let new = NewEvent {
        name: EventName::parse(&body.name)?,
        password: OrganiserPassword::parse(&body.organiser_password)?,
        guest_quota_bytes: body.guest_quota_bytes.unwrap_or(state.settings.guest_quota_bytes),
        storage_cap_bytes: body.storage_cap_bytes.unwrap_or(state.settings.event_storage_cap_bytes),
    };
    let prepared = events::prepare(&state.blocking, new).await?;
    let mut tx = write.begin(&state.db).await?;
    let event = events::insert(&mut tx, &prepared).await?;
    let location = format!("/api/v1/events/{}", event.slug);
    let answer =
        (StatusCode::CREATED, [(header::LOCATION, location)], Json(EventJson::new(&event, &state.settings.public_url)));
    let response = tx.commit(answer.into_response()).await?;
    tracing::info!(event_id = %event.id, slug = %event.slug, "event created");
    Ok(response)
}

/// What the join page shows before anyone joined: the event's name and whether uploads are
/// open. Its organiser sees the whole event, join token included.
async fn show(
    State(state): State<AppState>,
    viewer: Result<Viewer, ApiError>,
    Path(slug): Path<String>,
) -> ApiResult<Response> {
    let slug = EventSlug::parse(&slug)?;
    let event = state.db.event_by_slug(slug.as_str()).await?.ok_or(ApiError::EventNotFound)?;
    if viewer.is_ok_and(|v| v.is_organiser_of(event.id)) {
        return Ok(Json(EventJson::new(&event, &state.settings.public_url)).into_response());
    }
    Ok(Json(serde_json::json!({"slug": event.slug, "name": event.name, "uploads_open": event.uploads_open}))
        .into_response())
}

#[derive(Deserialize)]
struct ChangeEvent {
    name: Option<String>,
    uploads_open: Option<bool>,
    guest_quota_bytes: Option<i64>,
    storage_cap_bytes: Option<i64>,
}

/// Credentials first: the organiser of another event is refused whatever the body holds,
/// so the body is parsed only once the slug is known to be theirs.
async fn change(
    State(state): State<AppState>,
    Organiser(event): Organiser,
    Path(slug): Path<String>,
    write: Write,
    body: Result<JsonBody<ChangeEvent>, ApiError>,
) -> ApiResult<Response> {
    if event.slug != slug {
        return Err(ApiError::Forbidden);
    }
    let JsonBody(body) = body?;
    if body.guest_quota_bytes.is_some_and(|q| q < 0) {
        return Err(ApiError::InvalidRequest("guest_quota_bytes must not be negative".into()));
    }
    if body.storage_cap_bytes.is_some_and(|c| c < 0) {
        return Err(ApiError::InvalidRequest("storage_cap_bytes must not be negative".into()));
    }
    let change = EventChange {
        name: body.name.as_deref().map(EventName::parse).transpose()?.map(|n| n.as_str().to_owned()),
        uploads_open: body.uploads_open,
        guest_quota_bytes: body.guest_quota_bytes,
        storage_cap_bytes: body.storage_cap_bytes,
    };
    let mut tx = write.begin(&state.db).await?;
    let Some(event) = tx.update_event(event.id, &change).await? else {
        tx.rollback().await?;
        return Err(ApiError::EventNotFound);
    };
    tx.commit(Json(EventJson::new(&event, &state.settings.public_url)).into_response()).await
}
