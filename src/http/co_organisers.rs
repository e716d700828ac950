//! Co-organisers: the event's organiser (logged in with the event's own password) gives a
//! second person a login of their own, with a label ("Best man") and a password, lists them
//! and revokes one (its sessions end at once). A co-organiser's session may do everything an
//! organiser's may, except this: managing co-organisers is for the event's own password.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::extract::{JsonBody, Organiser};
use super::idempotency::{Keyed, Write};
use super::openapi::{IdempotencyKeyParam, SlugParam, refusals, schemas};
use crate::auth;
use crate::db::events::EventRow;
use crate::db::organiser_logins::OrganiserLoginRow;
use crate::domain::{DisplayName, InvalidText, OrganiserPassword};
use crate::error::{ApiError, ApiResult};
use crate::http::AppState;

/// At most this many co-organisers per event that are not revoked: a login then checks at
/// most 11 passwords (the event's and theirs).
pub const MAX_CO_ORGANISERS: i64 = 10;

pub fn routes(keyed: &Keyed) -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(keyed.route(routes!(list, add))).routes(keyed.route(routes!(revoke)))
}

/// Which login `password` opens for `event`: `Some(None)` the event's own password,
/// `Some(Some(id))` a co-organiser's, `None` neither. All checks run as one task on the
/// blocking pool, the event's password first.
pub async fn password_login(state: &AppState, event: &EventRow, password: String) -> ApiResult<Option<Option<Uuid>>> {
    let logins = state.db.active_organiser_logins(event.id).await?;
    let own = event.organiser_password_hash.clone();
    let others: Vec<(Uuid, String)> = logins.into_iter().map(|l| (l.id, l.password_hash)).collect();
    let found = state
        .blocking
        .crypto(move || {
            if auth::verify_password(&password, &own) {
                return Some(None);
            }
            others.into_iter().find(|(_, hash)| auth::verify_password(&password, hash)).map(|(id, _)| Some(id))
        })
        .await?;
    Ok(found)
}

/// The event, when the request is its organiser's with the event's own password; a
/// co-organiser, another event's organiser or a guest is 403 `forbidden`.
async fn event_owner(state: &AppState, event: EventRow, slug: &str, headers: &HeaderMap) -> ApiResult<EventRow> {
    if event.slug != slug {
        return Err(ApiError::Forbidden);
    }
    let token = super::extract::organiser_token(headers).ok_or(ApiError::Forbidden)?;
    match state.db.organiser_session_login(&auth::token_digest(token)).await? {
        Some(None) => Ok(event),
        _ => Err(ApiError::Forbidden),
    }
}

#[derive(Serialize, ToSchema)]
#[schema(as = CoOrganiser)]
struct CoOrganiserJson {
    id: Uuid,
    /// Who it is for, as the organiser named them.
    #[schema(min_length = 1, max_length = 60)]
    label: String,
    #[schema(format = DateTime)]
    created_at: String,
}

impl CoOrganiserJson {
    fn new(row: &OrganiserLoginRow) -> Self {
        Self { id: row.id, label: row.label.clone(), created_at: rfc3339(row.created_at) }
    }
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

#[derive(Serialize, ToSchema)]
struct CoOrganiserList {
    /// Oldest first; revoked ones are not listed.
    #[schema(max_items = 10)]
    items: Vec<CoOrganiserJson>,
}

/// An event's co-organisers (organiser)
///
/// The co-organiser logins that are not revoked, oldest first. Only for the organiser logged in with the event's
/// own password: a co-organiser gets 403 `forbidden`.
#[utoipa::path(
    get,
    path = "/api/v1/events/{slug}/co-organisers",
    operation_id = "listCoOrganisers",
    tag = "organiser",
    security(("organiserBearer" = []), ("organiserCookie" = [])),
    params(SlugParam),
    responses(
        (status = 200, description = "The co-organisers.", body = CoOrganiserList),
        ListCoOrganisersRefusals,
    ),
)]
async fn list(
    State(state): State<AppState>,
    Organiser(event): Organiser,
    Path(slug): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Json<CoOrganiserList>> {
    let event = event_owner(&state, event, &slug, &headers).await?;
    let items = state.db.active_organiser_logins(event.id).await?.iter().map(CoOrganiserJson::new).collect();
    Ok(Json(CoOrganiserList { items }))
}

#[derive(Deserialize, ToSchema)]
#[schema(as = AddCoOrganiser)]
struct AddCoOrganiser {
    /// Who it is for ("Best man"): trimmed, control and format characters removed, then 1–60 characters; otherwise
    /// 400 `invalid_request`.
    #[schema(min_length = 1, max_length = 60)]
    label: String,
    /// Their own password: at least 8 characters and at most 72 bytes; otherwise 422 `weak_password`.
    #[schema(min_length = 8)]
    password: String,
}

/// Add a co-organiser (organiser)
///
/// The organiser, logged in with the event's own password, gives someone a login of their own: a label and a
/// password (stored as a bcrypt hash). The co-organiser logs in at `POST …/organiser-sessions` with that password and
/// may then do everything the organiser does, except managing co-organisers. At most 10 per event that are not
/// revoked (409 `co_organiser_limit`). Takes an `Idempotency-Key` (parameter `IdempotencyKey`): a retry with the
/// same key and body gets the co-organiser the first attempt added (201, same id) instead of adding another.
#[utoipa::path(
    post,
    path = "/api/v1/events/{slug}/co-organisers",
    operation_id = "addCoOrganiser",
    tag = "organiser",
    security(("organiserBearer" = []), ("organiserCookie" = [])),
    params(SlugParam, IdempotencyKeyParam),
    request_body = AddCoOrganiser,
    responses(
        (status = 201, description = "Added. With `Idempotent-Replayed: true`: the recorded answer of an earlier request with the same `Idempotency-Key`; nobody was added this time.", body = CoOrganiserJson, headers(("Idempotent-Replayed" = inline(schemas::True), description = "`true`: this is the recorded answer to an earlier request with the same `Idempotency-Key` (parameter `IdempotencyKey`); the write was not run again. Absent when the write ran."))),
        AddCoOrganiserRefusals,
    ),
)]
// Credentials first: only the event's own password manages co-organisers, whatever the body.
async fn add(
    State(state): State<AppState>,
    Organiser(event): Organiser,
    Path(slug): Path<String>,
    headers: HeaderMap,
    write: Write,
    body: Result<JsonBody<AddCoOrganiser>, ApiError>,
) -> ApiResult<Response> {
    let event = event_owner(&state, event, &slug, &headers).await?;
    let JsonBody(body) = body?;
    let label = DisplayName::parse(&body.label).map_err(|e| match e {
        InvalidText::DisplayName(why) => {
            ApiError::InvalidRequest(format!("label: {}", why.replace("display name", "label")))
        }
        other => ApiError::from(other),
    })?;
    let password = OrganiserPassword::parse(&body.password)?.as_str().to_owned();
    let password_hash = state.blocking.crypto(move || auth::hash_password(&password)).await??;
    let row = OrganiserLoginRow {
        id: Uuid::now_v7(),
        event_id: event.id,
        label: label.as_str().to_owned(),
        password_hash,
        created_at: Utc::now(),
    };
    let mut tx = write.begin(&state.db).await?;
    if !tx.insert_organiser_login(&row, MAX_CO_ORGANISERS).await? {
        tx.rollback().await?;
        return Err(ApiError::CoOrganiserLimit { limit: MAX_CO_ORGANISERS });
    }
    let location = format!("/api/v1/events/{}/co-organisers/{}", event.slug, row.id);
    let answer = (StatusCode::CREATED, [(header::LOCATION, location)], Json(CoOrganiserJson::new(&row)));
    let response = tx.commit(answer.into_response()).await?;
    tracing::info!(event_id = %event.id, login_id = %row.id, "co-organiser added");
    Ok(response)
}

/// Revoke a co-organiser (organiser)
///
/// The organiser, logged in with the event's own password, revokes a co-organiser's login: its password no longer
/// logs in, and every session it started ends at once (its tokens answer 401). A revoked or unknown id is 404. Takes
/// an `Idempotency-Key` (parameter `IdempotencyKey`): a retry of a successful revocation with the same key gets 204
/// again (with `Idempotent-Replayed: true`), not 404.
#[utoipa::path(
    delete,
    path = "/api/v1/events/{slug}/co-organisers/{id}",
    operation_id = "revokeCoOrganiser",
    tag = "organiser",
    security(("organiserBearer" = []), ("organiserCookie" = [])),
    params(SlugParam, ("id" = Uuid, Path, description = "The co-organiser's id. Not a UUID: 404 `not_found`."), IdempotencyKeyParam),
    responses(
        (status = 204, description = "Revoked. With `Idempotent-Replayed: true`: an earlier request with the same `Idempotency-Key` revoked it.", headers(("Idempotent-Replayed" = inline(schemas::True), description = "`true`: this is the recorded answer to an earlier request with the same `Idempotency-Key` (parameter `IdempotencyKey`); the write was not run again. Absent when the write ran."))),
        RevokeCoOrganiserRefusals,
    ),
)]
async fn revoke(
    State(state): State<AppState>,
    Organiser(event): Organiser,
    Path((slug, id)): Path<(String, String)>,
    headers: HeaderMap,
    write: Write,
) -> ApiResult<Response> {
    let event = event_owner(&state, event, &slug, &headers).await?;
    let id = Uuid::try_parse(&id).map_err(|_| ApiError::NotFound)?;
    let mut tx = write.begin(&state.db).await?;
    if !tx.revoke_organiser_login(event.id, id).await? {
        tx.rollback().await?;
        return Err(ApiError::NotFound);
    }
    let response = tx.commit(StatusCode::NO_CONTENT.into_response()).await?;
    tracing::info!(event_id = %event.id, login_id = %id, "co-organiser revoked");
    Ok(response)
}

refusals!(ListCoOrganisersRefusals {
    401 => shared("Unauthenticated"),
    403 => problem("`forbidden`: a co-organiser (only the event's own password manages co-organisers), a guest, or another event's organiser.", &[Forbidden]),
    500 => shared("Internal"),
});

refusals!(AddCoOrganiserRefusals {
    400 => problem("Malformed JSON, wrong content type, missing member, empty or over-long `label` (`invalid_request`). `invalid_idempotency_key`: the `Idempotency-Key` is not 1–255 printable ASCII characters.", &[InvalidRequest, InvalidIdempotencyKey]),
    401 => shared("Unauthenticated"),
    403 => or_cross_origin("`forbidden`: a co-organiser (only the event's own password manages co-organisers), a guest, or another event's organiser.", &[Forbidden]),
    409 => with_header(problem("`co_organiser_limit`: the event already has 10 co-organisers that are not revoked. `idempotency_key_in_flight`: an earlier request with this `Idempotency-Key` is still running; retry after `Retry-After`.", &[CoOrganiserLimit, IdempotencyKeyInFlight]), "Retry-After", schemas::Seconds::schema(), "With `idempotency_key_in_flight`: seconds to wait before trying again."),
    413 => shared("BodyTooLarge"),
    422 => problem("`weak_password`: the password has fewer than 8 characters or more than 72 bytes. `idempotency_key_reused`: this `Idempotency-Key` was already used for a different request.", &[WeakPassword, IdempotencyKeyReused]),
    500 => shared("Internal"),
});

refusals!(RevokeCoOrganiserRefusals {
    400 => problem("`invalid_idempotency_key`: the `Idempotency-Key` is not 1–255 printable ASCII characters.", &[InvalidIdempotencyKey, InvalidRequest]),
    401 => shared("Unauthenticated"),
    403 => or_cross_origin("`forbidden`: a co-organiser, a guest, or another event's organiser.", &[Forbidden]),
    404 => problem("Not a UUID, no such co-organiser of this event, or revoked already.", &[NotFound]),
    409 => shared("IdempotencyKeyInFlight"),
    413 => shared("BodyTooLarge"),
    422 => shared("IdempotencyKeyReused"),
    500 => shared("Internal"),
});
