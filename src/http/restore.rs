//! Undoing a delete: the organiser brings a photo they deleted back within the undo grace
//! (`--undo-grace-s`), before its bytes are removed.

use axum::Json;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::extract::Viewer;
use super::idempotency::{Keyed, Write};
use super::openapi::{IdempotencyKeyParam, UploadIdParam, refusals, schemas};
use super::views::UploadJson;
use crate::db::live::LiveKind;
use crate::domain::UploadStatus;
use crate::error::{ApiError, ApiResult};
use crate::http::AppState;

pub fn routes(keyed: &Keyed) -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(keyed.route(routes!(restore)))
}

/// Restore a deleted upload (organiser)
///
/// Undoes the organiser's `DELETE /api/v1/uploads/{id}` within the undo grace (`--undo-grace-s`, default 60 s):
/// the upload is live again (same id, key, likes and comments), its bytes are charged back to its guest and the
/// event — even past the quota or the storage cap, since the photo was there before — and the pending removal of its
/// bytes is cancelled, all in one transaction. A photo that is `ready` and not hidden is announced as `upload` on the
/// live stream. After the grace, once its bytes are being (or were) removed, or for a photo its uploader deleted
/// (removed at once): 410 `undo_expired`. An upload that is not deleted: 409 `upload_not_deleted`. Takes an
/// `Idempotency-Key` (parameter `IdempotencyKey`): a retry of a successful restore with the same key gets the first
/// answer again (with `Idempotent-Replayed: true`), not 409.
#[utoipa::path(
    post,
    path = "/api/v1/uploads/{id}/restore",
    operation_id = "restoreUpload",
    tag = "uploads",
    security(("organiserBearer" = []), ("organiserCookie" = [])),
    params(UploadIdParam, IdempotencyKeyParam),
    responses(
        (status = 200, description = "Restored: the upload as the organiser sees it. With `Idempotent-Replayed: true`: the recorded answer of an earlier request with the same `Idempotency-Key`; nothing was changed this time.", body = UploadJson, headers(("Idempotent-Replayed" = inline(schemas::True), description = "`true`: this is the recorded answer to an earlier request with the same `Idempotency-Key` (parameter `IdempotencyKey`); the write was not run again. Absent when the write ran."))),
        RestoreUploadRefusals,
    ),
)]
async fn restore(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
    write: Write,
) -> ApiResult<Response> {
    // Organiser-only: a guest learns nothing more than that, whatever the id.
    if viewer.organiser.is_none() {
        return Err(ApiError::Forbidden);
    }
    let id = Uuid::try_parse(&id).map_err(|_| ApiError::NotFound)?;
    let row = state.db.upload_by_id(id, None).await?.ok_or(ApiError::NotFound)?;
    if !viewer.is_organiser_of(row.event_id) {
        return Err(ApiError::NotFound);
    }
    if row.deleted_at.is_none() {
        return Err(ApiError::UploadNotDeleted);
    }
    let mut tx = write.begin(&state.db).await?;
    if !tx.take_back_delete(id).await? {
        tx.rollback().await?;
        // A restore that committed in between took the job back first: its losers are told the upload is not
        // deleted (409), as a restore after it would be, not that the undo expired.
        return Err(match state.db.upload_is_live(id).await? {
            Some(true) => ApiError::UploadNotDeleted,
            _ => ApiError::UndoExpired,
        });
    }
    // Its derivative job before its row, in the order a worker ending that job takes them.
    tx.lock_derivative_job(id).await?;
    let Some(restored) = tx.undelete_upload(id).await? else {
        // Restored by a request that committed in between.
        tx.rollback().await?;
        return Err(ApiError::UploadNotDeleted);
    };
    let row = tx.upload_by_id(id).await?.ok_or(ApiError::NotFound)?;
    // Deleted while its thumbnail was being made: the worker gave the job up, so it is made again.
    let derive = row.status == UploadStatus::Processing;
    if derive {
        tx.queue_derivatives(id).await?;
    }
    let announce = row.status == UploadStatus::Ready && !row.hidden;
    if announce {
        tx.append_live(row.event_id, LiveKind::Upload, id).await?;
    }
    let response = tx.commit(Json(UploadJson::new(&row)).into_response()).await?;
    if announce {
        state.live.poke();
    }
    if derive {
        state.derivatives.wake();
    }
    tracing::info!(upload_id = %id, guest_id = %restored.guest_id, bytes = restored.bytes, "upload restored");
    Ok(response)
}

refusals!(RestoreUploadRefusals {
    400 => problem("`invalid_idempotency_key`: the `Idempotency-Key` is not 1–255 printable ASCII characters.", &[InvalidIdempotencyKey, InvalidRequest]),
    401 => shared("Unauthenticated"),
    403 => or_cross_origin("`forbidden`: the caller is not an organiser (a guest, whatever the id).", &[Forbidden]),
    404 => problem("Not a UUID, no such upload, or another event's upload.", &[NotFound]),
    409 => with_header(problem("`upload_not_deleted`: the upload is not deleted. `idempotency_key_in_flight`: an earlier request with this `Idempotency-Key` is still running; retry after `Retry-After`.", &[UploadNotDeleted, IdempotencyKeyInFlight]), "Retry-After", schemas::Seconds::schema(), "With `idempotency_key_in_flight`: seconds to wait before trying again."),
    410 => problem("`undo_expired`: the undo grace has passed, the photo's bytes are being or were removed, or its uploader deleted it.", &[UndoExpired]),
    413 => shared("BodyTooLarge"),
    422 => shared("IdempotencyKeyReused"),
    500 => shared("Internal"),
});
