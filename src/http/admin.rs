//! The instance admin's routes beyond creating an event (`events`): the list of events with
//! their counts (and the last backup), a new organiser password, and deleting an event. Admin
//! bearer token only.
//! (The admin also changes an event with `PATCH /api/v1/events/{slug}`, in `events`.)

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::extract::{Admin, JsonBody};
use super::idempotency::{Keyed, Write};
use super::openapi::{IdempotencyKeyParam, SlugParam, refusals, schemas};
use super::views::EventJson;
use crate::auth;
use crate::db::backups::BackupRecord;
use crate::db::events::EventRow;
use crate::domain::{EventSlug, OrganiserPassword, rfc3339};
use crate::error::{ApiError, ApiResult};
use crate::event_deletion;
use crate::http::AppState;

pub fn routes(keyed: &Keyed) -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_events))
        .routes(keyed.route(routes!(set_organiser_password)))
        .routes(keyed.route(routes!(delete_event)))
}

/// The most events one listing shows. An instance holds a few events a month; should one
/// ever hold more, `truncated` says so (the oldest are left out).
const MAX_LISTED: usize = 500;

/// An event as the admin's list shows it: the whole event and what it holds.
#[derive(Serialize, ToSchema)]
struct ListedEvent {
    #[serde(flatten)]
    event: EventJson,
    /// Everyone who joined the event.
    #[schema(minimum = 0)]
    guest_count: i64,
    /// Its photos that are not deleted (hidden ones included).
    #[schema(minimum = 0)]
    upload_count: i64,
}

#[derive(Serialize, ToSchema)]
struct EventList {
    /// Newest first; deleted events are not listed.
    items: Vec<ListedEvent>,
    /// True when there are more than 500 events: the oldest are left out.
    truncated: bool,
    /// The backup (`confetti backup`) that finished last; null when none ran.
    #[schema(required = true)]
    last_backup: Option<LastBackup>,
}

/// A backup that ran, as the command recorded it.
#[derive(Serialize, ToSchema)]
struct LastBackup {
    #[schema(format = DateTime)]
    started_at: String,
    #[schema(format = DateTime)]
    finished_at: String,
    /// Whether it holds the database: true on SQLite; on PostgreSQL `pg_dump` keeps it.
    with_database: bool,
    /// Photos and videos in its database snapshot (not deleted).
    #[schema(minimum = 0)]
    uploads: i64,
    /// Originals and derivatives the backup holds for them, and their bytes.
    #[schema(minimum = 0)]
    blobs: i64,
    #[schema(minimum = 0)]
    bytes: i64,
    /// What this run copied (new since the run before); the rest was there already.
    #[schema(minimum = 0)]
    copied_blobs: i64,
    #[schema(minimum = 0)]
    copied_bytes: i64,
    /// Blobs its database names that the photo store did not have; 0 in a healthy backup.
    #[schema(minimum = 0)]
    missing_blobs: i64,
}

impl LastBackup {
    fn new(record: BackupRecord) -> Self {
        Self {
            started_at: rfc3339(record.started_at),
            finished_at: rfc3339(record.finished_at),
            with_database: record.with_database,
            uploads: record.uploads,
            blobs: record.blobs,
            bytes: record.bytes,
            copied_blobs: record.copied_blobs,
            copied_bytes: record.copied_bytes,
            missing_blobs: record.missing_blobs,
        }
    }
}

/// List events (admin)
///
/// Every event that is not deleted, newest first, each with its join link, how many guests joined and how many
/// photos it holds (`used_bytes`: their storage). At most 500; `truncated` says whether older ones were left out.
/// `last_backup` is the backup that finished last (`confetti backup`), null when none ran.
/// Only the admin bearer token is accepted.
#[utoipa::path(
    get,
    path = "/api/v1/events",
    operation_id = "listEvents",
    tag = "events",
    security(("adminBearer" = [])),
    responses(
        (status = 200, description = "The events, newest first, and the last backup.", body = EventList),
        ListEventsRefusals,
    ),
)]
async fn list_events(State(state): State<AppState>, _: Admin) -> ApiResult<Response> {
    let mut rows = state.db.list_events(MAX_LISTED as i64 + 1).await?;
    let truncated = rows.len() > MAX_LISTED;
    rows.truncate(MAX_LISTED);
    let public_url = &state.settings.public_url;
    let items = rows
        .into_iter()
        .map(|row| ListedEvent {
            event: EventJson::new(&row.event, public_url),
            guest_count: row.guest_count,
            upload_count: row.upload_count,
        })
        .collect();
    let last_backup = state.db.last_backup().await?.map(LastBackup::new);
    Ok(Json(EventList { items, truncated, last_backup }).into_response())
}

#[derive(Deserialize, ToSchema)]
#[schema(as = NewOrganiserPassword)]
struct NewPassword {
    /// At least 8 characters and at most 72 bytes; otherwise 422 `weak_password`.
    #[schema(min_length = 8)]
    password: String,
}

/// Set the organiser password (admin)
///
/// Replaces the event's organiser password (for an organiser who forgot it, or one who should no longer get in)
/// and ends every organiser session of the event in the same transaction: their tokens and cookies answer 401
/// from then on, and the new password logs in. The password is hashed (bcrypt) before the transaction starts.
/// Only the admin bearer token is accepted. The body is read before the slug is looked up (400 before 404); the
/// password is checked after (422). Takes an `Idempotency-Key` (parameter `IdempotencyKey`): a retry with the same
/// key and body answers 204 again without ending the sessions opened since.
#[utoipa::path(
    post,
    path = "/api/v1/events/{slug}/organiser-password",
    operation_id = "setOrganiserPassword",
    tag = "events",
    security(("adminBearer" = [])),
    params(SlugParam, IdempotencyKeyParam),
    request_body = NewPassword,
    responses(
        (status = 204, description = "The password is set; the event's organiser sessions have ended. With `Idempotent-Replayed: true`: an earlier request with the same `Idempotency-Key` set it.", headers(("Idempotent-Replayed" = inline(schemas::True), description = "`true`: this is the recorded answer to an earlier request with the same `Idempotency-Key` (parameter `IdempotencyKey`); the write was not run again. Absent when the write ran."))),
        SetOrganiserPasswordRefusals,
    ),
)]
async fn set_organiser_password(
    State(state): State<AppState>,
    _: Admin,
    Path(slug): Path<String>,
    write: Write,
    JsonBody(body): JsonBody<NewPassword>,
) -> ApiResult<Response> {
    let event = live_event(&state, &slug).await?;
    let password = OrganiserPassword::parse(&body.password)?;
    let hash = state.blocking.crypto(move || auth::hash_password(password.as_str())).await??;
    let mut tx = write.begin(&state.db).await?;
    let Some(ended) = tx.set_organiser_password(event.id, &hash).await? else {
        tx.rollback().await?;
        return Err(ApiError::EventNotFound);
    };
    let response = tx.commit(StatusCode::NO_CONTENT.into_response()).await?;
    tracing::info!(event_id = %event.id, ended_sessions = ended, "organiser password set by the admin");
    Ok(response)
}

/// Delete an event (admin)
///
/// Deletes the event for everyone, at once: in one transaction the event is marked deleted, every photo of it
/// marked deleted with a durable job that removes its original and derivatives from the store (retried until the
/// store takes it), and its organiser sessions end. From then on its slug answers 404 `event_not_found` and its
/// guest and organiser tokens 401. The photos' bytes go in the background, within seconds. Only the admin bearer
/// token is accepted. A second delete is 404; a retry with the same `Idempotency-Key` (parameter
/// `IdempotencyKey`) gets 204 again (with `Idempotent-Replayed: true`).
#[utoipa::path(
    delete,
    path = "/api/v1/events/{slug}",
    operation_id = "deleteEvent",
    tag = "events",
    security(("adminBearer" = [])),
    params(SlugParam, IdempotencyKeyParam),
    responses(
        (status = 204, description = "Deleted. With `Idempotent-Replayed: true`: an earlier request with the same `Idempotency-Key` deleted it.", headers(("Idempotent-Replayed" = inline(schemas::True), description = "`true`: this is the recorded answer to an earlier request with the same `Idempotency-Key` (parameter `IdempotencyKey`); the write was not run again. Absent when the write ran."))),
        DeleteEventRefusals,
    ),
)]
async fn delete_event(
    State(state): State<AppState>,
    _: Admin,
    Path(slug): Path<String>,
    write: Write,
) -> ApiResult<Response> {
    let event = live_event(&state, &slug).await?;
    let mut tx = write.begin(&state.db).await?;
    let Some(removal) = event_deletion::delete(&mut tx, event.id, state.blob_jobs.claim()).await? else {
        tx.rollback().await?;
        return Err(ApiError::EventNotFound);
    };
    let response = tx.commit(StatusCode::NO_CONTENT.into_response()).await?;
    tracing::info!(event_id = %event.id, slug = %event.slug, photos = removal.photos, "event deleted");
    removal.start(state.blob_jobs.clone());
    Ok(response)
}

/// The event `slug` names, unless it is deleted.
async fn live_event(state: &AppState, slug: &str) -> ApiResult<EventRow> {
    let slug = EventSlug::parse(slug)?;
    state.db.event_by_slug(slug.as_str()).await?.ok_or(ApiError::EventNotFound)
}

refusals!(ListEventsRefusals {
    401 => problem("No credential, or a bearer token that is neither the admin token nor a known guest or organiser token.", &[Unauthenticated]),
    403 => problem("A valid guest or organiser credential instead of the admin token.", &[Forbidden]),
    500 => shared("Internal"),
});

refusals!(SetOrganiserPasswordRefusals {
    400 => problem("Malformed JSON, wrong content type, missing `password` (`invalid_request`). `invalid_idempotency_key`: the `Idempotency-Key` is not 1–255 printable ASCII characters.", &[InvalidRequest, InvalidIdempotencyKey]),
    401 => problem("No credential, or a bearer token that is neither the admin token nor a known guest or organiser token.", &[Unauthenticated]),
    403 => or_cross_origin("A valid guest or organiser credential instead of the admin token (`forbidden`).", &[Forbidden]),
    404 => problem("No event with this slug (or it was deleted).", &[EventNotFound]),
    409 => shared("IdempotencyKeyInFlight"),
    413 => shared("BodyTooLarge"),
    422 => problem("`weak_password`: shorter than 8 characters or longer than 72 bytes. `idempotency_key_reused`: this `Idempotency-Key` was already used for a different request.", &[WeakPassword, IdempotencyKeyReused]),
    500 => shared("Internal"),
});

refusals!(DeleteEventRefusals {
    400 => problem("`invalid_idempotency_key`: the `Idempotency-Key` is not 1–255 printable ASCII characters.", &[InvalidIdempotencyKey, InvalidRequest]),
    401 => problem("No credential, or a bearer token that is neither the admin token nor a known guest or organiser token.", &[Unauthenticated]),
    403 => or_cross_origin("A valid guest or organiser credential instead of the admin token (`forbidden`).", &[Forbidden]),
    404 => problem("No event with this slug, or it is deleted already.", &[EventNotFound]),
    409 => shared("IdempotencyKeyInFlight"),
    413 => shared("BodyTooLarge"),
    422 => shared("IdempotencyKeyReused"),
    500 => shared("Internal"),
});
