//! Organiser login: the event's password gives an organiser token and cookie.
//! Wrong passwords from one client are throttled (429 with Retry-After).

use axum::extract::{ConnectInfo, Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;

use super::extract::JsonBody;
use crate::app::AppState;
use crate::auth::{self, ORGANISER_COOKIE, ORGANISER_PREFIX};
use crate::domain::EventSlug;
use crate::error::{ApiError, ApiResult};

pub fn routes() -> Router<AppState> {
    Router::new().route("/api/v1/events/{slug}/organiser-sessions", post(login))
}

#[derive(Deserialize)]
struct Login {
    password: String,
}

async fn login(
    State(state): State<AppState>,
    ConnectInfo(client): ConnectInfo<std::net::SocketAddr>,
    Path(slug): Path<String>,
    JsonBody(body): JsonBody<Login>,
) -> ApiResult<Response> {
    let slug = EventSlug::parse(&slug)?;
    let event = state.db.event_by_slug(slug.as_str()).await?.ok_or(ApiError::EventNotFound)?;
    let client = client.ip();
    state
        .login_throttle
        .check(client, event.id)
        .map_err(|retry_after_s| ApiError::TooManyAttempts { retry_after_s })?;
    let hash = event.organiser_password_hash.clone();
    let password = body.password;
    if !state.blocking.crypto(move || auth::verify_password(&password, &hash)).await? {
        state.login_throttle.failed(client, event.id);
        return Err(ApiError::InvalidCredentials);
    }
    state.login_throttle.succeeded(client, event.id);
    let (token, digest) = auth::new_token(ORGANISER_PREFIX)?;
    state.db.insert_organiser_session(&digest, event.id).await?;
    tracing::info!(event_id = %event.id, "organiser logged in");
    let cookie = auth::session_cookie(ORGANISER_COOKIE, &token, state.settings.secure_cookies);
    Ok((StatusCode::CREATED, [(header::SET_COOKIE, cookie)], Json(json!({ "token": token }))).into_response())
}
