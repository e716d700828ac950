//! What guests do with each other's photos: like them (idempotent by method: PUT sets,
//! DELETE clears, any number of times) and comment on them.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post, put};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::extract::{JsonBody, Viewer};
use super::idempotency::{Keyed, Write};
use super::uploads::visible_upload;
use super::views::CommentJson;
use crate::app::AppState;
use crate::db::guests::GuestRow;
use crate::db::uploads::UploadRow;
use crate::domain::CommentText;
use crate::error::{ApiError, ApiResult};

pub fn routes(keyed: &Keyed) -> Router<AppState> {
    Router::new()
        .route("/api/v1/uploads/{id}/like", put(like))
        .route("/api/v1/uploads/{id}/like", keyed.route(delete(unlike)))
        .route("/api/v1/uploads/{id}/comments", get(comments))
        .route("/api/v1/uploads/{id}/comments", keyed.route(post(comment)))
}

#[derive(Serialize)]
struct LikeState {
    likes: i64,
    liked_by_me: bool,
}

/// The upload a guest may react to: one they can see, in their own event.
async fn for_guest(state: &AppState, viewer: &Viewer, id: &str) -> ApiResult<(GuestRow, UploadRow)> {
    let id = Uuid::try_parse(id).map_err(|_| ApiError::NotFound)?;
    let row = visible_upload(state, viewer, id).await?;
    // Organisers moderate; likes and comments carry a guest's name.
    let guest = viewer.guest.clone().filter(|g| g.event_id == row.event_id).ok_or(ApiError::Forbidden)?;
    Ok((guest, row))
}

async fn like(State(state): State<AppState>, viewer: Viewer, Path(id): Path<String>) -> ApiResult<Json<LikeState>> {
    let (guest, row) = for_guest(&state, &viewer, &id).await?;
    let mut tx = state.db.begin().await?;
    let likes = tx.set_like(row.id, guest.id, true).await?;
    tx.commit().await?;
    Ok(Json(LikeState { likes, liked_by_me: true }))
}

async fn unlike(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
    write: Write,
) -> ApiResult<Response> {
    let (guest, row) = for_guest(&state, &viewer, &id).await?;
    let mut tx = write.begin(&state.db).await?;
    let likes = tx.set_like(row.id, guest.id, false).await?;
    tx.commit(Json(LikeState { likes, liked_by_me: false }).into_response()).await
}

#[derive(Deserialize)]
struct NewComment {
    text: String,
}

async fn comment(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
    write: Write,
    JsonBody(body): JsonBody<NewComment>,
) -> ApiResult<Response> {
    let (guest, row) = for_guest(&state, &viewer, &id).await?;
    let text = CommentText::parse(&body.text)?;
    let mut tx = write.begin(&state.db).await?;
    let comment = tx.insert_comment(row.id, guest.id, text.as_str()).await?;
    tracing::info!(upload_id = %row.id, comment_id = %comment.id, "comment added");
    tx.commit((StatusCode::CREATED, Json(CommentJson::new(&comment))).into_response()).await
}

#[derive(Serialize)]
struct CommentList {
    items: Vec<CommentJson>,
}

async fn comments(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
) -> ApiResult<Json<CommentList>> {
    let id = Uuid::try_parse(&id).map_err(|_| ApiError::NotFound)?;
    let row = visible_upload(&state, &viewer, id).await?;
    let items = state.db.comments(row.id).await?.iter().map(CommentJson::new).collect();
    Ok(Json(CommentList { items }))
}
