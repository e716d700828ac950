//! What guests do with each other's photos: like them (idempotent by method: PUT sets,
//! DELETE clears, any number of times) and comment on them.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::extract::{JsonBody, Viewer};
use super::idempotency::{Keyed, Write};
use super::openapi::{IdempotencyKeyParam, UploadIdParam, refusals, schemas};
use super::uploads::visible_upload;
use super::views::CommentJson;
use crate::db::guests::GuestRow;
use crate::db::uploads::UploadRow;
use crate::domain::CommentText;
use crate::error::{ApiError, ApiResult};
use crate::http::AppState;

pub fn routes(keyed: &Keyed) -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(like))
        .routes(keyed.route(routes!(unlike)))
        .routes(routes!(comments))
        .routes(keyed.route(routes!(comment)))
}

/// The upload's likes after this request.
#[derive(Serialize, ToSchema)]
struct LikeState {
    /// How many guests like the upload now (one like per guest).
    #[schema(minimum = 0)]
    likes: i64,
    /// Whether the calling guest likes it: true after `PUT`, false after `DELETE`.
    liked_by_me: bool,
}

/// The upload a guest may react to: one they can see, in their own event.
async fn for_guest(state: &AppState, viewer: &Viewer, id: &str) -> ApiResult<(GuestRow, UploadRow)> {
    // Organisers moderate; likes and comments carry a guest's name. Decided before the upload is looked
    // for, so an organiser gets the same answer whatever the id.
    let Some(guest) = viewer.guest.clone() else {
        return Err(ApiError::GuestsOnly);
    };
    let id = Uuid::try_parse(id).map_err(|_| ApiError::NotFound)?;
    let row = visible_upload(state, viewer, id).await?;
    if guest.event_id != row.event_id {
        return Err(ApiError::GuestsOnly);
    }
    if guest.blocked {
        return Err(ApiError::GuestBlocked);
    }
    Ok((guest, row))
}

/// Like an upload (guest)
///
/// A guest of the upload's event likes it. Idempotent by its method: any number of repeats leave one like and
/// answer the same. It therefore ignores `Idempotency-Key` (no 400 `invalid_idempotency_key`, 409 or 422 from a key
/// here; no `Idempotent-Replayed`). Organisers moderate and do not like: 403 `forbidden`. No request body.
#[utoipa::path(
    put,
    path = "/api/v1/uploads/{id}/like",
    operation_id = "likeUpload",
    tag = "reactions",
    security(("guestBearer" = []), ("guestCookie" = [])),
    params(UploadIdParam),
    responses(
        (status = 200, description = "The guest likes it now.", body = LikeState),
        LikeUploadRefusals,
    ),
)]
async fn like(State(state): State<AppState>, viewer: Viewer, Path(id): Path<String>) -> ApiResult<Json<LikeState>> {
    let (guest, row) = for_guest(&state, &viewer, &id).await?;
    let mut tx = state.db.begin().await?;
    let likes = tx.set_like(row.id, guest.id, true).await?;
    tx.commit().await?;
    Ok(Json(LikeState { likes, liked_by_me: true }))
}

/// Take a like back (guest)
///
/// The guest's like is removed; without one, nothing changes and it answers the same. Idempotent by its method: any
/// number of repeats answer 200. Organisers: 403 `forbidden`. Takes an `Idempotency-Key` (parameter
/// `IdempotencyKey`): a retry with the same key gets the first attempt's answer (its `likes` count as it was then)
/// without running again.
#[utoipa::path(
    delete,
    path = "/api/v1/uploads/{id}/like",
    operation_id = "unlikeUpload",
    tag = "reactions",
    security(("guestBearer" = []), ("guestCookie" = [])),
    params(UploadIdParam, IdempotencyKeyParam),
    responses(
        (status = 200, description = "The guest does not like it (any more). With `Idempotent-Replayed: true`: the recorded answer of an earlier request with the same `Idempotency-Key`; `likes` is the count as it was then.", body = LikeState, headers(("Idempotent-Replayed" = inline(schemas::True), description = "`true`: this is the recorded answer to an earlier request with the same `Idempotency-Key` (parameter `IdempotencyKey`); the write was not run again. Absent when the write ran."))),
        UnlikeUploadRefusals,
    ),
)]
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

#[derive(Deserialize, ToSchema)]
#[schema(as = CreateComment)]
struct NewComment {
    /// Trimmed; then 1–1000 characters (counted as characters, not bytes), otherwise 422 `invalid_comment`. Other
    /// members are ignored.
    #[schema(min_length = 1, max_length = 1000)]
    text: String,
}

/// Comment on an upload (guest)
///
/// A guest of the upload's event comments on it. Organisers do not comment: 403 `forbidden`. The body is read
/// before the upload is looked up: a malformed body is 400 even for an unknown upload; the text is checked last
/// (422 `invalid_comment`). Takes an `Idempotency-Key` (parameter `IdempotencyKey`): a retry with the same key and
/// body gets the comment the first attempt created (201, same id) instead of adding another.
#[utoipa::path(
    post,
    path = "/api/v1/uploads/{id}/comments",
    operation_id = "createComment",
    tag = "reactions",
    security(("guestBearer" = []), ("guestCookie" = [])),
    params(UploadIdParam, IdempotencyKeyParam),
    request_body = NewComment,
    responses(
        (status = 201, description = "Added. With `Idempotent-Replayed: true`: the recorded answer of an earlier request with the same `Idempotency-Key`; no comment was added this time.", body = CommentJson, headers(("Idempotent-Replayed" = inline(schemas::True), description = "`true`: this is the recorded answer to an earlier request with the same `Idempotency-Key` (parameter `IdempotencyKey`); the write was not run again. Absent when the write ran."))),
        CreateCommentRefusals,
    ),
)]
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

#[derive(Serialize, ToSchema)]
struct CommentList {
    /// Oldest first; at most the first 1000 (not paginated).
    #[schema(max_items = 1000)]
    items: Vec<CommentJson>,
}

/// An upload's comments
///
/// For the same principals as the Upload: a guest of its event or its organiser (a hidden upload only for the
/// organiser and its uploader). Oldest first; at most the first 1000.
#[utoipa::path(
    get,
    path = "/api/v1/uploads/{id}/comments",
    operation_id = "listComments",
    tag = "reactions",
    security(("guestBearer" = []), ("guestCookie" = []), ("organiserBearer" = []), ("organiserCookie" = [])),
    params(UploadIdParam),
    responses(
        (status = 200, description = "The comments.", body = CommentList),
        ListCommentsRefusals,
    ),
)]
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

refusals!(LikeUploadRefusals {
    401 => shared("Unauthenticated"),
    403 => or_cross_origin("`forbidden`: an organiser (a like carries a guest's name). `guest_blocked`: the organiser blocked this guest.", &[Forbidden, GuestBlocked]),
    404 => shared("UploadNotFound"),
    500 => shared("Internal"),
});

refusals!(UnlikeUploadRefusals {
    400 => problem("`invalid_idempotency_key`: the `Idempotency-Key` is not 1–255 printable ASCII characters.", &[InvalidIdempotencyKey, InvalidRequest]),
    401 => shared("Unauthenticated"),
    403 => or_cross_origin("`forbidden`: an organiser (a like carries a guest's name). `guest_blocked`: the organiser blocked this guest.", &[Forbidden, GuestBlocked]),
    404 => shared("UploadNotFound"),
    409 => shared("IdempotencyKeyInFlight"),
    413 => shared("BodyTooLarge"),
    422 => shared("IdempotencyKeyReused"),
    500 => shared("Internal"),
});

refusals!(ListCommentsRefusals {
    401 => shared("Unauthenticated"),
    404 => shared("UploadNotFound"),
    500 => shared("Internal"),
});

refusals!(CreateCommentRefusals {
    400 => problem("Malformed JSON, wrong content type, `text` missing or not a string (`invalid_request`). `invalid_idempotency_key`: the `Idempotency-Key` is not 1–255 printable ASCII characters.", &[InvalidRequest, InvalidIdempotencyKey]),
    401 => shared("Unauthenticated"),
    403 => or_cross_origin("`forbidden`: an organiser (a comment carries a guest's name). `guest_blocked`: the organiser blocked this guest.", &[Forbidden, GuestBlocked]),
    404 => shared("UploadNotFound"),
    409 => shared("IdempotencyKeyInFlight"),
    413 => shared("BodyTooLarge"),
    422 => problem("`invalid_comment`: the text is empty (after trimming) or longer than 1000 characters. `idempotency_key_reused`: this `Idempotency-Key` was already used for a different request.", &[InvalidComment, IdempotencyKeyReused]),
    500 => shared("Internal"),
});
