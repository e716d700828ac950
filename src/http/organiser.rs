//! Organiser sessions: the event's password gives an organiser token and cookie, valid for the
//! configured session lifetime; logging out ends the session on the server. Password guesses are
//! throttled per client address and event (429 with Retry-After), counted before bcrypt runs.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::client_addr::ClientAddr;
use super::extract::{JsonBody, Organiser};
use super::openapi::{SlugParam, refusals, schemas};
use crate::auth::{self, ORGANISER_COOKIE, ORGANISER_PREFIX};
use crate::domain::EventSlug;
use crate::error::{ApiError, ApiResult};
use crate::http::AppState;
use crate::throttle::Purpose;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(login)).routes(routes!(logout))
}

#[derive(Deserialize, ToSchema)]
#[schema(as = OrganiserLogin)]
struct Login {
    password: String,
}

#[derive(Serialize, ToSchema)]
struct OrganiserSession {
    /// The organiser's bearer token (also set as the `confetti_organiser` cookie).
    #[schema(pattern = "^o_")]
    token: String,
}

/// Organiser login
///
/// The event's password, or the password of one of its co-organisers (checked after the event's, one by one), gives
/// an organiser token and sets the `confetti_organiser` cookie. Needs no credential;
/// ignores `Idempotency-Key`: there is no principal to scope a key to, and a replay must never hand one client
/// another client's token (no 400 `invalid_idempotency_key`, 409 or 422 from a key here; every request is a login
/// attempt). Attempts are counted per client address (the connection's, or behind a proxy named by
/// `--trusted-proxy` the right-most untrusted `X-Forwarded-For` address; IPv6 per /64) and event, before the
/// password is checked, so simultaneous guesses cannot slip past the count: from the 5th failure within 15 minutes,
/// further attempts are refused with 429 for 30 s, doubling with each further failure up to 15 minutes; a success
/// clears the count. The session lasts `--organiser-session-s` (default 7 days; the cookie's `Max-Age` says the
/// same) and ends earlier with `DELETE …/organiser-sessions/current`.
#[utoipa::path(
    post,
    path = "/api/v1/events/{slug}/organiser-sessions",
    operation_id = "organiserLogin",
    tag = "organiser",
    security(()),
    params(SlugParam),
    request_body = Login,
    responses(
        (status = 201, description = "Logged in.", body = OrganiserSession, headers(("Set-Cookie" = inline(schemas::OrganiserCookie), description = "`confetti_organiser=<token>; HttpOnly; SameSite=Lax; Path=/; Max-Age=<organiser session lifetime, default 604800>` (plus `; Secure` when the public URL is https)."))),
        OrganiserLoginRefusals,
    ),
)]
async fn login(
    State(state): State<AppState>,
    ClientAddr(client): ClientAddr,
    Path(slug): Path<String>,
    JsonBody(body): JsonBody<Login>,
) -> ApiResult<Response> {
    let slug = EventSlug::parse(&slug)?;
    let event = state.db.event_by_slug(slug.as_str()).await?.ok_or(ApiError::EventNotFound)?;
    // Counted now, before bcrypt: guesses sent all at once see each other's attempts.
    let attempt = state
        .throttle
        .begin(Purpose::OrganiserLogin, client, event.id)
        .await?
        .map_err(|retry_after_s| ApiError::TooManyAttempts { retry_after_s })?;
    // The event's own password, then each co-organiser's (`login_id`: whose it was).
    let Some(login_id) = super::co_organisers::password_login(&state, &event, body.password).await? else {
        return Err(ApiError::InvalidCredentials);
    };
    attempt.succeeded().await;
    let lifetime = state.settings.organiser_session;
    let expires_at = chrono::TimeDelta::from_std(lifetime)
        .ok()
        .and_then(|d| Utc::now().checked_add_signed(d))
        .ok_or_else(|| ApiError::Internal(anyhow::anyhow!("the organiser session lifetime is out of range")))?;
    let (token, digest) = auth::new_token(ORGANISER_PREFIX)?;
    if !state.db.insert_organiser_session(&digest, event.id, login_id, expires_at).await? {
        // The co-organiser's login was revoked while the password was being checked.
        return Err(ApiError::InvalidCredentials);
    }
    tracing::info!(event_id = %event.id, "organiser logged in");
    let cookie = auth::session_cookie(ORGANISER_COOKIE, &token, lifetime, state.settings.secure_cookies());
    Ok((StatusCode::CREATED, [(header::SET_COOKIE, cookie)], Json(OrganiserSession { token })).into_response())
}

/// Organiser logout
///
/// Ends the session whose token this request carries (bearer or cookie), on the server: the token answers 401
/// afterwards; the organiser's other sessions stay. Answers a `Set-Cookie` that clears the `confetti_organiser`
/// cookie. It ignores `Idempotency-Key`: the key's scope is the organiser, not the session, so a replay could tell
/// a second session it had ended while it had not; logging out twice is 401 the second time.
#[utoipa::path(
    delete,
    path = "/api/v1/events/{slug}/organiser-sessions/current",
    operation_id = "organiserLogout",
    tag = "organiser",
    security(("organiserBearer" = []), ("organiserCookie" = [])),
    params(SlugParam),
    responses(
        (status = 204, description = "The session has ended.", headers(("Set-Cookie" = String, description = "`confetti_organiser=; HttpOnly; SameSite=Lax; Path=/; Max-Age=0` (plus `Secure` behind https)."))),
        OrganiserLogoutRefusals,
    ),
)]
// Ends the session whose token made this request; answers 204 with a cookie that clears
// itself. Once the session is gone (a repeated logout) the token no longer authenticates.
async fn logout(
    State(state): State<AppState>,
    Organiser(event): Organiser,
    Path(slug): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    if event.slug != slug {
        return Err(ApiError::Forbidden);
    }
    // `Organiser` authenticated this very token, so it is present and of this event.
    let token = super::extract::organiser_token(&headers).ok_or(ApiError::Unauthenticated)?;
    state.db.delete_organiser_session(&auth::token_digest(token), event.id).await?;
    tracing::info!(event_id = %event.id, "organiser logged out");
    let cookie = auth::cleared_cookie(ORGANISER_COOKIE, state.settings.secure_cookies());
    Ok((StatusCode::NO_CONTENT, [(header::SET_COOKIE, cookie)]).into_response())
}

refusals!(OrganiserLoginRefusals {
    400 => problem("Malformed JSON, wrong content type, missing member.", &[InvalidRequest]),
    401 => problem("Wrong password.", &[InvalidCredentials]),
    404 => shared("EventNotFound"),
    413 => shared("BodyTooLarge"),
    429 => with_header(problem("Too many wrong passwords from this client for this event; the body's `retry_after_s` repeats `Retry-After`.", &[TooManyAttempts]), "Retry-After", schemas::Seconds::schema(), "Seconds to wait before trying again."),
    500 => shared("Internal"),
});

refusals!(OrganiserLogoutRefusals {
    401 => problem("No credential, or a session that expired or already ended.", &[Unauthenticated]),
    403 => problem("A guest, or another event's organiser; or a cookie request from another site.", &[Forbidden, CrossOrigin]),
    500 => shared("Internal"),
});
