//! Organiser sessions: the event's password gives an organiser token and cookie, valid for the
//! configured session lifetime; logging out ends the session on the server. Password guesses are
//! throttled per client address and event (429 with Retry-After), counted before bcrypt runs.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, post};
use axum::{Json, Router};
use chrono::Utc;
use serde::Deserialize;
use serde_json::json;

use super::client_addr::ClientAddr;
use super::extract::{JsonBody, Organiser};
use crate::app::AppState;
use crate::auth::{self, ORGANISER_COOKIE, ORGANISER_PREFIX};
use crate::domain::EventSlug;
use crate::error::{ApiError, ApiResult};
use crate::throttle::Purpose;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/v1/events/{slug}/organiser-sessions", post(login))
        .route("/api/v1/events/{slug}/organiser-sessions/current", delete(logout))
}

#[derive(Deserialize)]
struct Login {
    password: String,
}

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
        .map_err(|retry_after_s| ApiError::TooManyAttempts { retry_after_s })?;
    let hash = event.organiser_password_hash.clone();
    let password = body.password;
    if !state.blocking.crypto(move || auth::verify_password(&password, &hash)).await? {
        return Err(ApiError::InvalidCredentials);
    }
    attempt.succeeded();
    let lifetime = state.settings.organiser_session;
    let expires_at = chrono::TimeDelta::from_std(lifetime)
        .ok()
        .and_then(|d| Utc::now().checked_add_signed(d))
        .ok_or_else(|| ApiError::Internal(anyhow::anyhow!("the organiser session lifetime is out of range")))?;
    let (token, digest) = auth::new_token(ORGANISER_PREFIX)?;
    state.db.insert_organiser_session(&digest, event.id, expires_at).await?;
    tracing::info!(event_id = %event.id, "organiser logged in");
    let cookie = auth::session_cookie(ORGANISER_COOKIE, &token, lifetime, state.settings.secure_cookies());
    Ok((StatusCode::CREATED, [(header::SET_COOKIE, cookie)], Json(json!({ "token": token }))).into_response())
}

/// Ends the session whose token made this request; answers 204 with a cookie that clears
/// itself. Once the session is gone (a repeated logout) the token no longer authenticates.
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
