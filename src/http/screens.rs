//! The venue's screen: the organiser (or the admin) makes a link that opens the live slideshow
//! and nothing else, and revokes it. Opening the link trades its token for the screen cookie
//! (`confetti_screen`); with it a browser reads what the event's guests see — the gallery, the
//! live stream, thumbnails, previews and originals, the join QR code — and may write nothing.
//! Wrong tokens are throttled per client address and event, as join tokens are.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::client_addr::ClientAddr;
use super::extract::{JsonBody, Manager};
use super::idempotency::{Keyed, Write};
use super::openapi::{IdempotencyKeyParam, SlugParam, refusals, schemas};
use crate::auth::{self, SCREEN_COOKIE, SCREEN_PREFIX};
use crate::domain::{EventSlug, rfc3339};
use crate::error::{ApiError, ApiResult};
use crate::http::AppState;
use crate::throttle::Purpose;

/// How long a screen's cookie lasts: a party, and the morning after; revoking ends it sooner.
const SCREEN_COOKIE_LIFETIME: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 60 * 60);

pub fn routes(keyed: &Keyed) -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(keyed.route(routes!(make_link, revoke_link))).routes(routes!(open_screen))
}

/// A screen link, as its maker sees it once: the token is not kept, only its digest.
#[derive(Serialize, ToSchema)]
struct ScreenLink {
    /// `{public_url}/e/{slug}/screen#{token}`: opens the slideshow on the venue's screen. The token is in the
    /// fragment, which browsers send to no server.
    #[schema(format = "uri")]
    url: String,
    /// The link's token (prefix `s_`), for `POST /api/v1/events/{slug}/screens`.
    #[schema(pattern = "^s_")]
    token: String,
    #[schema(format = DateTime)]
    created_at: String,
}

/// Make a screen link (organiser or admin)
///
/// A link for the venue's screen: it shows the event's live slideshow — what the event's guests see, following
/// the review gate, a private gallery and a gallery that opens later — and nothing else; it holds no organiser
/// rights. An event has one screen link at most: making one replaces the one before, whose screens stop at once.
/// Only the token's digest is stored: the link is in this answer only (the Event's `screen_link_at` says when the
/// current one was made). Takes an `Idempotency-Key` (parameter `IdempotencyKey`): a retry with the same key gets
/// the first attempt's link instead of replacing it.
#[utoipa::path(
    post,
    path = "/api/v1/events/{slug}/screen-link",
    operation_id = "makeScreenLink",
    tag = "organiser",
    security(("organiserBearer" = []), ("organiserCookie" = []), ("adminBearer" = [])),
    params(SlugParam, IdempotencyKeyParam),
    responses(
        (status = 201, description = "The new link; the one before no longer opens. With `Idempotent-Replayed: true`: the recorded answer of an earlier request with the same `Idempotency-Key`; no link was made this time.", body = ScreenLink, headers(("Idempotent-Replayed" = inline(schemas::True), description = "`true`: this is the recorded answer to an earlier request with the same `Idempotency-Key` (parameter `IdempotencyKey`); the write was not run again. Absent when the write ran.")), links(("openScreen" = (operation_id = "openScreen", parameters(("slug" = "$request.path.slug")), description = "The screen trades the link's `token` for its cookie.")))),
        ScreenLinkRefusals,
    ),
)]
async fn make_link(
    State(state): State<AppState>,
    manager: Manager,
    Path(slug): Path<String>,
    write: Write,
) -> ApiResult<Response> {
    let event = manager.event(&state, &slug).await?;
    let (token, digest) = auth::new_token(SCREEN_PREFIX)?;
    let now = Utc::now();
    let mut tx = write.begin(&state.db).await?;
    if !tx.set_screen_link(event.id, Some(&digest), now).await? {
        tx.rollback().await?;
        return Err(ApiError::EventNotFound);
    }
    let url = format!("{}/e/{}/screen#{token}", state.settings.public_url, event.slug);
    let link = ScreenLink { url, token, created_at: rfc3339(now) };
    let response = tx.commit((StatusCode::CREATED, Json(link)).into_response()).await?;
    tracing::info!(event_id = %event.id, "screen link made");
    Ok(response)
}

/// Revoke the screen link (organiser or admin)
///
/// The event's screen link no longer opens, and every screen that opened it loses its access at its next request
/// (its live stream ends with the next news). 204 also when there was none. Takes an `Idempotency-Key` (parameter
/// `IdempotencyKey`).
#[utoipa::path(
    delete,
    path = "/api/v1/events/{slug}/screen-link",
    operation_id = "revokeScreenLink",
    tag = "organiser",
    security(("organiserBearer" = []), ("organiserCookie" = []), ("adminBearer" = [])),
    params(SlugParam, IdempotencyKeyParam),
    responses(
        (status = 204, description = "No screen link opens the event now. With `Idempotent-Replayed: true`: an earlier request with the same `Idempotency-Key` revoked it.", headers(("Idempotent-Replayed" = inline(schemas::True), description = "`true`: this is the recorded answer to an earlier request with the same `Idempotency-Key` (parameter `IdempotencyKey`); the write was not run again. Absent when the write ran."))),
        ScreenLinkRefusals,
    ),
)]
async fn revoke_link(
    State(state): State<AppState>,
    manager: Manager,
    Path(slug): Path<String>,
    write: Write,
) -> ApiResult<Response> {
    let event = manager.event(&state, &slug).await?;
    let mut tx = write.begin(&state.db).await?;
    if !tx.set_screen_link(event.id, None, Utc::now()).await? {
        tx.rollback().await?;
        return Err(ApiError::EventNotFound);
    }
    let response = tx.commit(StatusCode::NO_CONTENT.into_response()).await?;
    tracing::info!(event_id = %event.id, "screen link revoked");
    Ok(response)
}

#[derive(Deserialize, ToSchema)]
#[schema(as = OpenScreen)]
struct Open {
    /// The screen link's token (the fragment of its `url`).
    token: String,
}

#[derive(Serialize, ToSchema)]
#[schema(as = OpenedScreen)]
struct Opened {
    /// The event's slug.
    event: String,
    name: String,
}

/// Open a screen
///
/// Trades a screen link's token for the `confetti_screen` cookie, with which this browser reads what the event's
/// guests see (gallery, live stream, media) and writes nothing. Needs no credential; ignores `Idempotency-Key`, as
/// joining does. Wrong tokens are counted per client address and event like join tokens (counted before the token
/// is compared): from the 5th failure within 15 minutes further attempts are refused with 429, even with the right
/// token, for 30 s doubling up to 15 minutes.
#[utoipa::path(
    post,
    path = "/api/v1/events/{slug}/screens",
    operation_id = "openScreen",
    tag = "guests",
    security(()),
    params(SlugParam),
    request_body = Open,
    responses(
        (status = 201, description = "This browser is the event's screen.", body = Opened, headers(("Set-Cookie" = inline(schemas::ScreenCookie), description = "`confetti_screen=<token>; HttpOnly; SameSite=Lax; Path=/; Max-Age=604800` (plus `; Secure` when the public URL is https)."))),
        OpenScreenRefusals,
    ),
)]
async fn open_screen(
    State(state): State<AppState>,
    ClientAddr(client): ClientAddr,
    Path(slug): Path<String>,
    JsonBody(body): JsonBody<Open>,
) -> ApiResult<Response> {
    let slug = EventSlug::parse(&slug)?;
    let event = state.db.event_by_slug(slug.as_str()).await?.ok_or(ApiError::EventNotFound)?;
    let attempt = state
        .throttle
        .begin(Purpose::Screen, client, event.id)
        .await?
        .map_err(|retry_after_s| ApiError::TooManyAttempts { retry_after_s })?;
    // The token's digest names the event it opens: it must be this one's current link.
    let opens = state.db.screen_event(&auth::token_digest(&body.token)).await?;
    if opens.is_none_or(|e| e.id != event.id) || !body.token.starts_with(SCREEN_PREFIX) {
        return Err(ApiError::InvalidScreenToken);
    }
    attempt.succeeded().await;
    let cookie =
        auth::session_cookie(SCREEN_COOKIE, &body.token, SCREEN_COOKIE_LIFETIME, state.settings.secure_cookies());
    tracing::info!(event_id = %event.id, "screen opened");
    Ok((StatusCode::CREATED, [(header::SET_COOKIE, cookie)], Json(Opened { event: event.slug, name: event.name }))
        .into_response())
}

// Making and revoking refuse alike.
refusals!(ScreenLinkRefusals {
    400 => problem("`invalid_idempotency_key`: the `Idempotency-Key` is not 1–255 printable ASCII characters.", &[InvalidIdempotencyKey, InvalidRequest]),
    401 => shared("Unauthenticated"),
    403 => or_cross_origin("`forbidden`: a guest, a screen, or the organiser of another event (also when the slug names no event).", &[Forbidden]),
    404 => problem("The admin named no event (or a deleted one), or the event was deleted while the request ran.", &[EventNotFound]),
    409 => shared("IdempotencyKeyInFlight"),
    413 => shared("BodyTooLarge"),
    422 => shared("IdempotencyKeyReused"),
    500 => shared("Internal"),
});

refusals!(OpenScreenRefusals {
    400 => problem("Malformed JSON, wrong content type, missing member.", &[InvalidRequest]),
    403 => problem("The token is not this event's current screen link (never was, or was replaced or revoked).", &[InvalidScreenToken]),
    404 => shared("EventNotFound"),
    413 => shared("BodyTooLarge"),
    429 => with_header(problem("Too many wrong screen tokens from this client for this event; the body's `retry_after_s` repeats `Retry-After`.", &[TooManyAttempts]), "Retry-After", schemas::Seconds::schema(), "Seconds to wait before trying again."),
    500 => shared("Internal"),
});
