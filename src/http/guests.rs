//! Guests: joining an event with its join token and a display name, and "who am I".
//! Wrong join tokens are throttled per client address and event, as organiser passwords are;
//! joins with the right one are budgeted per client address and event (each makes a guest
//! with a quota of their own).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::client_addr::ClientAddr;
use super::extract::{Guest, JsonBody};
use super::openapi::{SlugParam, refusals, schemas};
use crate::auth::{self, GUEST_COOKIE, GUEST_PREFIX};
use crate::db::guests::GuestRow;
use crate::domain::{DisplayName, EventSlug};
use crate::error::{ApiError, ApiResult};
use crate::http::AppState;
use crate::throttle::Purpose;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(join)).routes(routes!(me))
}

#[derive(Deserialize, ToSchema)]
#[schema(as = JoinEvent)]
struct Join {
    join_token: String,
    /// Trimmed; control characters and Unicode format characters (bidi overrides, zero-width…) removed, line
    /// breaks and tabs turned into spaces; then 1–60 characters, otherwise 422 `invalid_display_name`.
    #[schema(min_length = 1, max_length = 60)]
    display_name: String,
}

#[derive(Serialize, ToSchema)]
struct Joined {
    #[schema(inline)]
    guest: JoinedGuest,
    /// The guest's bearer token (also set as the `confetti_guest` cookie).
    #[schema(pattern = "^g_")]
    token: String,
}

#[derive(Serialize, ToSchema)]
struct JoinedGuest {
    id: Uuid,
    display_name: String,
    quota_bytes: i64,
    used_bytes: i64,
}

#[derive(Serialize, ToSchema)]
pub(crate) struct Me {
    id: Uuid,
    display_name: String,
    /// The event's slug.
    event: String,
    quota_bytes: i64,
    used_bytes: i64,
    /// The guest's uploads that are not deleted.
    upload_count: i64,
    /// The organiser blocked this guest: new uploads, likes and comments are refused (403 `guest_blocked`).
    blocked: bool,
}

/// Join an event as a guest
///
/// With the event's join token and a display name. Answers the guest's token and sets the `confetti_guest` cookie.
/// Needs no credential; ignores `Idempotency-Key`: there is no principal to scope a key to, and a replay must never
/// hand one client another client's token (no 400 `invalid_idempotency_key`, 409 or 422 from a key here; every
/// request joins afresh). The body is read before the slug is looked up: a malformed body is 400 even for an
/// unknown event. Wrong join tokens are counted per client address and event like organiser passwords (counted
/// before the token is compared): from the 5th failure within 15 minutes further attempts are refused with 429,
/// even with the right token, for 30 s doubling up to 15 minutes. Joins with the right token are budgeted per
/// client address and event (each makes a guest with a quota of their own): 100 at once, then one more every
/// 2 s; past that, 429 until the budget has one again, and no guest is made.
#[utoipa::path(
    post,
    path = "/api/v1/events/{slug}/guests",
    operation_id = "joinEvent",
    tag = "guests",
    security(()),
    params(SlugParam),
    request_body = Join,
    responses(
        (status = 201, description = "Joined.", body = Joined, headers(("Set-Cookie" = inline(schemas::GuestCookie), description = "`confetti_guest=<token>; HttpOnly; SameSite=Lax; Path=/; Max-Age=31536000` (plus `; Secure` when the public URL is https).")), links(("createUpload" = (operation_id = "createUpload", parameters(("slug" = "$request.path.slug")), description = "The new guest uploads photos to the event, with the `token` as bearer token.")))),
        JoinEventRefusals,
    ),
)]
async fn join(
    State(state): State<AppState>,
    ClientAddr(client): ClientAddr,
    Path(slug): Path<String>,
    JsonBody(body): JsonBody<Join>,
) -> ApiResult<Response> {
    let slug = EventSlug::parse(&slug)?;
    let event = state.db.event_by_slug(slug.as_str()).await?.ok_or(ApiError::EventNotFound)?;
    // Compared, then counted and judged before the answer: a wrong token costs an attempt,
    // the right one starts the count again, and a locked-out client is refused either way.
    let right = auth::constant_time_eq(body.join_token.as_bytes(), event.join_token.as_bytes());
    state
        .throttle
        .judge(Purpose::Join, client, event.id, right)
        .await?
        .map_err(|retry_after_s| ApiError::TooManyAttempts { retry_after_s })?;
    if !right {
        return Err(ApiError::InvalidJoinToken);
    }
    let name = DisplayName::parse(&body.display_name)?;
    // Last before the guest is made: a join refused for any other reason costs nothing.
    state
        .throttle
        .take_join(client, event.id)
        .await?
        .map_err(|retry_after_s| ApiError::TooManyAttempts { retry_after_s })?;
    let (token, digest) = auth::new_token(GUEST_PREFIX)?;
    let id = Uuid::now_v7();
    state.db.insert_guest(id, event.id, name.as_str(), &digest).await?;
    tracing::info!(guest_id = %id, event_id = %event.id, "guest joined");
    let guest =
        JoinedGuest { id, display_name: name.as_str().to_owned(), quota_bytes: event.guest_quota_bytes, used_bytes: 0 };
    let cookie =
        auth::session_cookie(GUEST_COOKIE, &token, auth::GUEST_COOKIE_LIFETIME, state.settings.secure_cookies());
    Ok((StatusCode::CREATED, [(header::SET_COOKIE, cookie)], Json(Joined { guest, token })).into_response())
}

/// The calling guest
///
/// Who the guest is, in which event, and how much of the quota is used.
#[utoipa::path(
    get,
    path = "/api/v1/me",
    operation_id = "getMe",
    tag = "guests",
    security(("guestBearer" = []), ("guestCookie" = [])),
    responses(
        (status = 200, description = "The guest.", body = Me),
        GetMeRefusals,
    ),
)]
async fn me(State(state): State<AppState>, Guest(guest): Guest) -> ApiResult<Json<Me>> {
    Ok(Json(Me::of(&state, guest).await?))
}

impl Me {
    /// What `GET /api/v1/me` answers `guest` (and a guest's event page carries).
    pub(crate) async fn of(state: &AppState, guest: GuestRow) -> ApiResult<Self> {
        let upload_count = state.db.guest_upload_count(guest.id).await?;
        Ok(Me {
            id: guest.id,
            display_name: guest.display_name,
            event: guest.event_slug,
            quota_bytes: guest.quota_bytes,
            used_bytes: guest.used_bytes,
            upload_count,
            blocked: guest.blocked,
        })
    }
}

refusals!(JoinEventRefusals {
    400 => problem("Malformed JSON, wrong content type, missing member.", &[InvalidRequest]),
    403 => problem("The join token is not this event's.", &[InvalidJoinToken]),
    404 => shared("EventNotFound"),
    413 => shared("BodyTooLarge"),
    422 => problem("Display name empty (after trimming) or longer than 60 characters.", &[InvalidDisplayName]),
    429 => with_header(problem("Too many wrong join tokens from this client for this event, or too many joins (100 at once, then one every 2 s); the body's `retry_after_s` repeats `Retry-After`.", &[TooManyAttempts]), "Retry-After", schemas::Seconds::schema(), "Seconds to wait before trying again."),
    500 => shared("Internal"),
});

refusals!(GetMeRefusals {
    401 => problem("No valid guest credential (an organiser token is not a guest).", &[Unauthenticated]),
    500 => shared("Internal"),
});
