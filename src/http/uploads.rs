//! Uploads: the deduplicated upload (the use case lives in `ingest`), reading one upload,
//! the by-client-id preflight, the event listing, hiding and deleting.

use axum::body::Bytes;
use axum::extract::DefaultBodyLimit;
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, patch, post};
use axum::{Json, Router};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::IDEMPOTENT_REPLAYED;
use super::extract::{Guest, Viewer};
use super::idempotency::{Keyed, Write};
use super::views::UploadJson;
use crate::app::AppState;
use crate::blobs::BlobKey;
use crate::db::live::LiveKind;
use crate::db::uploads::{ListQuery, UploadRow};
use crate::domain::{ClientUploadId, EventSlug, UploadStatus};
use crate::error::{ApiError, ApiResult};
use crate::ingest::{Ingested, Outcome, ingest};

pub fn routes(keyed: &Keyed) -> Router<AppState> {
    Router::new()
        .route(
            "/api/v1/events/{slug}/uploads",
            // The upload counts its own bytes against `max_upload_bytes`; axum's 2 MB default
            // would cut photos off.
            post(create_upload).layer(DefaultBodyLimit::disable()).get(list_uploads),
        )
        .route("/api/v1/events/{slug}/uploads/by-client-id/{client_upload_id}", get(upload_by_client_id))
        .route("/api/v1/uploads/{id}", get(get_upload))
        .route("/api/v1/uploads/{id}", keyed.route(patch(change_upload).delete(delete_upload)))
}

async fn create_upload(
    State(state): State<AppState>,
    Guest(guest): Guest,
    Path(slug): Path<String>,
    headers: HeaderMap,
    request: Request,
) -> ApiResult<Response> {
    if guest.event_slug != slug {
        return Err(ApiError::WrongEvent);
    }
    let header_key = headers.get("idempotency-key").and_then(|v| v.to_str().ok()).and_then(ClientUploadId::from_header);
    let Outcome { result, unread } = ingest(&state, guest, header_key, request).await;
    let mut response = match result {
        Ok(Ingested::Created(row)) => {
            let location = format!("/api/v1/uploads/{}", row.id);
            (StatusCode::CREATED, [(header::LOCATION, location)], Json(UploadJson::new(&row))).into_response()
        }
        Ok(Ingested::Replayed(row)) => replayed(&row),
        Err(error) => error.into_response(),
    };
    if let Some(body) = unread {
        // Answered before the body ended: what is left of it would otherwise be read as the
        // next request.
        response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
        super::multipart::linger(body);
    }
    Ok(response)
}

fn replayed(row: &UploadRow) -> Response {
    let mut response = Json(UploadJson::new(row)).into_response();
    response.headers_mut().insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
    response
}

/// The upload if this viewer may see it: a guest or the organiser of its event, hidden
/// uploads only for the organiser and their uploader. Everything else is "not found".
pub async fn visible_upload(state: &AppState, viewer: &Viewer, id: Uuid) -> ApiResult<UploadRow> {
    let row = state.db.upload_by_id(id, viewer.guest_id()).await?.ok_or(ApiError::NotFound)?;
    let visible = row.deleted_at.is_none()
        && viewer.can_see_event(row.event_id)
        && (!row.hidden || viewer.is_organiser_of(row.event_id) || viewer.guest_id() == Some(row.guest_id));
    if visible { Ok(row) } else { Err(ApiError::NotFound) }
}

async fn get_upload(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
) -> ApiResult<Json<UploadJson>> {
    let id = Uuid::try_parse(&id).map_err(|_| ApiError::NotFound)?;
    Ok(Json(UploadJson::new(&visible_upload(&state, &viewer, id).await?)))
}

/// The preflight a page asks before re-sending a photo's bytes.
async fn upload_by_client_id(
    State(state): State<AppState>,
    Guest(guest): Guest,
    Path((slug, key)): Path<(String, String)>,
) -> ApiResult<Json<UploadJson>> {
    if guest.event_slug != slug {
        return Err(ApiError::WrongEvent);
    }
    let key = ClientUploadId::parse(&key)?;
    match state.db.upload_by_client_id(key.uuid(), Some(guest.id)).await? {
        Some(row) if row.guest_id == guest.id && row.deleted_at.is_some() => Err(ApiError::UploadDeleted),
        Some(row) if row.guest_id == guest.id => Ok(Json(UploadJson::new(&row))),
        _ => Err(ApiError::NotFound),
    }
}

#[derive(Deserialize)]
struct ListParams {
    limit: Option<String>,
    cursor: Option<String>,
}

#[derive(Serialize)]
struct UploadPage {
    items: Vec<UploadJson>,
    next_cursor: Option<String>,
}

const DEFAULT_PAGE: i64 = 50;
const MAX_PAGE: i64 = 100;

async fn list_uploads(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(slug): Path<String>,
    Query(params): Query<ListParams>,
) -> ApiResult<Json<UploadPage>> {
    let slug = EventSlug::parse(&slug)?;
    let event = state.db.event_by_slug(slug.as_str()).await?.ok_or(ApiError::EventNotFound)?;
    if !viewer.can_see_event(event.id) {
        return Err(if viewer.guest.is_some() { ApiError::WrongEvent } else { ApiError::Forbidden });
    }
    let limit = match params.limit.as_deref() {
        None | Some("") => DEFAULT_PAGE,
        Some(raw) => raw
            .parse::<i64>()
            .map_err(|_| ApiError::InvalidRequest("`limit` must be a whole number".into()))?
            .clamp(1, MAX_PAGE),
    };
    let before = match params.cursor.as_deref() {
        None | Some("") => None,
        Some(raw) => Some(decode_cursor(raw)?),
    };
    let query = ListQuery {
        event_id: event.id,
        viewer_guest: viewer.guest.as_ref().filter(|g| g.event_id == event.id).map(|g| g.id),
        organiser: viewer.is_organiser_of(event.id),
        before,
        limit: limit + 1,
    };
    let mut rows = state.db.list_uploads(&query).await?;
    let next_cursor = if rows.len() as i64 > limit {
        rows.truncate(limit as usize);
        rows.last().map(|r| URL_SAFE_NO_PAD.encode(r.id.as_bytes()))
    } else {
        None
    };
    Ok(Json(UploadPage { items: rows.iter().map(UploadJson::new).collect(), next_cursor }))
}

fn decode_cursor(raw: &str) -> ApiResult<Uuid> {
    URL_SAFE_NO_PAD
        .decode(raw)
        .ok()
        .and_then(|bytes| Uuid::from_slice(&bytes).ok())
        .ok_or_else(|| ApiError::InvalidCursor("the cursor is not one this server gave out".into()))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ChangeUpload {
    hidden: bool,
}

/// The organiser hides an upload from guests (its uploader still sees it), or shows it again.
/// Who may change the upload is decided before the body is read: an organiser of another
/// event learns nothing from a malformed or oversized body that a well-formed one would not
/// tell them.
async fn change_upload(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
    write: Write,
    request: Request,
) -> ApiResult<Response> {
    let (parts, body) = request.into_parts();
    let (id, row) = match may_change_upload(&state, &viewer, &id).await {
        Ok(allowed) => allowed,
        Err(refusal) => {
            super::extract::discard_body(body).await;
            return Err(refusal);
        }
    };
    let body: Bytes = super::extract::read_body(&parts.headers, body, super::extract::MAX_JSON_BODY).await?;
    let body: ChangeUpload = serde_json::from_slice(&body)
        .map_err(|e| ApiError::InvalidRequest(format!("the body must be {{\"hidden\": true|false}}: {e}")))?;
    let mut tx = write.begin(&state.db).await?;
    let Some(changed) = tx.set_upload_hidden(id, body.hidden).await? else {
        tx.rollback().await?;
        return Err(ApiError::NotFound);
    };
    // Hiding is news at once; showing again only once there is something to show (a photo
    // still processing is announced when it becomes ready).
    let news = match changed {
        Some(_) if body.hidden => Some(LiveKind::Removed),
        Some(UploadStatus::Ready) => Some(LiveKind::Upload),
        _ => None,
    };
    if let Some(kind) = news {
        tx.append_live(row.event_id, kind, id).await?;
    }
    let row = tx.upload_by_id(id).await?.ok_or(ApiError::NotFound)?;
    let response = tx.commit(Json(UploadJson::new(&row)).into_response()).await?;
    if news.is_some() {
        state.live.poke();
    }
    tracing::info!(upload_id = %id, hidden = body.hidden, "upload visibility changed");
    Ok(response)
}

/// The upload an organiser may hide or show: one of their own event's.
async fn may_change_upload(state: &AppState, viewer: &Viewer, id: &str) -> ApiResult<(Uuid, UploadRow)> {
    // Organiser-only: a guest learns nothing more than that, whatever the id or the body.
    if viewer.organiser.is_none() {
        return Err(ApiError::Forbidden);
    }
    let id = Uuid::try_parse(id).map_err(|_| ApiError::NotFound)?;
    let row = visible_upload(state, viewer, id).await?;
    if !viewer.is_organiser_of(row.event_id) {
        return Err(ApiError::Forbidden);
    }
    Ok((id, row))
}

/// Soft delete: the row (and so its key) stays, a late retry learns the photo is gone;
/// the bytes are removed and the guest's quota refunded in the same transaction.
async fn delete_upload(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
    write: Write,
) -> ApiResult<Response> {
    let id = Uuid::try_parse(&id).map_err(|_| ApiError::NotFound)?;
    let row = visible_upload(&state, &viewer, id).await?;
    if viewer.guest_id() != Some(row.guest_id) && !viewer.is_organiser_of(row.event_id) {
        return Err(ApiError::Forbidden);
    }
    let mut tx = write.begin(&state.db).await?;
    let Some((guest_id, bytes)) = tx.mark_upload_deleted(id).await? else {
        tx.rollback().await?;
        return Err(ApiError::NotFound);
    };
    tx.refund_quota(guest_id, bytes).await?;
    tx.append_live(row.event_id, LiveKind::Removed, id).await?;
    let response = tx.commit(StatusCode::NO_CONTENT.into_response()).await?;
    state.live.poke();
    for key in BlobKey::all_for(row.event_id, id) {
        if let Err(e) = state.blobs.delete(key).await {
            tracing::warn!(error = %e, upload_id = %id, ?key, "could not delete a deleted upload's blob");
        }
    }
    tracing::info!(upload_id = %id, "upload deleted");
    Ok(response)
}
