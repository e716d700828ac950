//! Guests: joining an event with its join token and a display name, and "who am I".
//! Wrong join tokens are throttled per client address and event, as organiser passwords are.

use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;
use uuid::Uuid;

use super::client_addr::ClientAddr;
use super::extract::{Guest, JsonBody};
use crate::app::AppState;
use crate::auth::{self, GUEST_COOKIE, GUEST_PREFIX};
use crate::domain::{DisplayName, EventSlug};
use crate::error::{ApiError, ApiResult};
use crate::throttle::Purpose;

pub fn routes() -> Router<AppState> {
    Router::new().route("/api/v1/events/{slug}/guests", post(join)).route("/api/v1/me", get(me))
}

#[derive(Deserialize)]
struct Join {
    join_token: String,
    display_name: String,
}

async fn join(
    State(state): State<AppState>,
    ClientAddr(client): ClientAddr,
    Path(slug): Path<String>,
    JsonBody(body): JsonBody<Join>,
) -> ApiResult<Response> {
    let slug = EventSlug::parse(&slug)?;
    let event = state.db.event_by_slug(slug.as_str()).await?.ok_or(ApiError::EventNotFound)?;
    // Counted before the comparison, like an organiser's password: a wrong token costs an
    // attempt, the right one starts the count again.
    let attempt = state
        .throttle
        .begin(Purpose::Join, client, event.id)
        .map_err(|retry_after_s| ApiError::TooManyAttempts { retry_after_s })?;
    if !auth::constant_time_eq(body.join_token.as_bytes(), event.join_token.as_bytes()) {
        return Err(ApiError::InvalidJoinToken);
    }
    attempt.succeeded();
    let name = DisplayName::parse(&body.display_name)?;
    let (token, digest) = auth::new_token(GUEST_PREFIX)?;
    let id = Uuid::now_v7();
    state.db.insert_guest(id, event.id, name.as_str(), &digest).await?;
    tracing::info!(guest_id = %id, event_id = %event.id, "guest joined");
    let body = json!({
        "guest": {
            "id": id,
            "display_name": name.as_str(),
            "quota_bytes": event.guest_quota_bytes,
            "used_bytes": 0,
        },
        "token": token,
    });
    let cookie =
        auth::session_cookie(GUEST_COOKIE, &token, auth::GUEST_COOKIE_LIFETIME, state.settings.secure_cookies());
    Ok((StatusCode::CREATED, [(header::SET_COOKIE, cookie)], Json(body)).into_response())
}

async fn me(State(state): State<AppState>, Guest(guest): Guest) -> ApiResult<Json<serde_json::Value>> {
    let upload_count = state.db.guest_upload_count(guest.id).await?;
    Ok(Json(json!({
        "id": guest.id,
        "display_name": guest.display_name,
        "event": guest.event_slug,
        "quota_bytes": guest.quota_bytes,
        "used_bytes": guest.used_bytes,
        "upload_count": upload_count,
    })))
}
