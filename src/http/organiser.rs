//! Organiser login: the event's password gives an organiser token and cookie. Password guesses
//! are throttled per client address and event (429 with Retry-After), counted before bcrypt runs.

use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;

use super::client_addr::ClientAddr;
use super::extract::JsonBody;
use crate::app::AppState;
use crate::auth::{self, ORGANISER_COOKIE, ORGANISER_PREFIX};
use crate::domain::EventSlug;
use crate::error::{ApiError, ApiResult};
use crate::throttle::Purpose;

pub fn routes() -> Router<AppState> {
    Router::new().route("/api/v1/events/{slug}/organiser-sessions", post(login))
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
    let (token, digest) = auth::new_token(ORGANISER_PREFIX)?;
    state.db.insert_organiser_session(&digest, event.id).await?;
    tracing::info!(event_id = %event.id, "organiser logged in");
    let cookie = auth::session_cookie(ORGANISER_COOKIE, &token, state.settings.secure_cookies);
    Ok((StatusCode::CREATED, [(header::SET_COOKIE, cookie)], Json(json!({ "token": token }))).into_response())
}
