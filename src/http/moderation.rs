//! Moderating several photos at once: the organiser's selection (up to 200 uploads of their
//! event) approved, rejected with a reason, hidden, shown or deleted in one request and one
//! transaction, answered per upload. The review view and the gallery's selection mode use it;
//! one photo at a time is `PATCH /api/v1/uploads/{id}` (`uploads`).

use axum::Json;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::extract::{JsonBody, Organiser};
use super::idempotency::{Keyed, Write};
use super::openapi::{IdempotencyKeyParam, SlugParam, refusals, schemas};
use super::views::UploadJson;
use crate::db::blob_jobs::BlobJobKind;
use crate::db::moderation::{Moderated, Moderation};
use crate::domain::RejectReason;
use crate::error::{ApiError, ApiResult};
use crate::http::AppState;

/// The most uploads one request moderates: a screenful of selected tiles many times over, and
/// a transaction that stays short.
pub const MAX_SELECTION: usize = 200;

pub fn routes(keyed: &Keyed) -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(keyed.route(routes!(moderate)))
}

/// What is done to every selected upload.
#[derive(Clone, Copy, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
enum Action {
    /// Approve (its review ends, everyone sees it unless it is hidden); a rejected upload is shown again too.
    Approve,
    /// Hide it with a `reason` its uploader reads on their own photo (`rejected`, `rejected_reason`).
    Reject,
    /// Hide it from guests (the organiser and its uploader still see it).
    Hide,
    /// Show it again (a rejection is lifted).
    Show,
    /// Delete it, as the organiser's delete of one photo does (undoable for `--undo-grace-s`).
    Delete,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = BulkModeration)]
struct Request {
    action: Action,
    /// 1–200 upload ids; an id given twice counts once. Not UUIDs: 400 `invalid_request`; more than 200: 422
    /// `selection_too_large`.
    #[schema(min_items = 1, max_items = 200)]
    upload_ids: Vec<Uuid>,
    /// With `reject` only: why, shown to the photo's uploader. One line, at most 200 characters once cleaned
    /// (trimmed, control and format characters removed); absent or empty: a rejection without a reason.
    #[schema(nullable = false, max_length = 200)]
    reason: Option<String>,
}

/// What became of one upload.
#[derive(Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
enum Outcome {
    /// The action changed it.
    Changed,
    /// It already was as asked; nothing changed.
    Unchanged,
    /// No upload of this event has this id (unknown, deleted, or another event's): it was not touched.
    NotFound,
}

#[derive(Serialize, ToSchema)]
#[schema(as = BulkModerationItem)]
struct Item {
    id: Uuid,
    result: Outcome,
    /// The upload as the action left it, as the organiser sees it; null when `not_found` and after `delete`.
    #[schema(required = true)]
    upload: Option<UploadJson>,
}

#[derive(Serialize, ToSchema)]
#[schema(as = BulkModerationResult)]
struct Answer {
    action: Action,
    /// One per distinct id, in the order of the request.
    items: Vec<Item>,
}

/// Moderate several uploads at once (organiser)
///
/// Approves, rejects (hides with a reason the uploader reads), hides, shows or deletes up to 200 uploads of the
/// event in one transaction: all of it happens, or (on a failure) none. Each id is answered on its own: `changed`,
/// `unchanged`, or `not_found` for an id that is no upload of this event — unknown, deleted, or another event's,
/// which is never touched and about which nothing is revealed. The live stream hears of each change as the
/// one-photo actions tell it (`removed` for a hide, reject or delete; `upload` for a ready photo that becomes
/// visible). Order: 401 / 403 → the `Idempotency-Key` → the body (400, 413, 422). Takes an `Idempotency-Key`
/// (parameter `IdempotencyKey`): a retry with the same key and body gets the first attempt's answer without
/// moderating again; another body under the same key is 422 `idempotency_key_reused`.
#[utoipa::path(
    post,
    path = "/api/v1/events/{slug}/uploads/moderation",
    operation_id = "moderateUploads",
    tag = "organiser",
    security(("organiserBearer" = []), ("organiserCookie" = [])),
    params(SlugParam, IdempotencyKeyParam),
    request_body = Request,
    responses(
        (status = 200, description = "Done: what became of each upload. With `Idempotent-Replayed: true`: the recorded answer of an earlier request with the same `Idempotency-Key`; nothing was changed this time.", body = Answer, headers(("Idempotent-Replayed" = inline(schemas::True), description = "`true`: this is the recorded answer to an earlier request with the same `Idempotency-Key` (parameter `IdempotencyKey`); the write was not run again. Absent when the write ran."))),
        ModerateRefusals,
    ),
)]
async fn moderate(
    State(state): State<AppState>,
    Organiser(event): Organiser,
    Path(slug): Path<String>,
    write: Write,
    JsonBody(request): JsonBody<Request>,
) -> ApiResult<Response> {
    if event.slug != slug {
        return Err(ApiError::Forbidden);
    }
    let action = parse(&request)?;
    let mut ids = Vec::with_capacity(request.upload_ids.len());
    for id in request.upload_ids {
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    let grace = chrono::TimeDelta::from_std(state.settings.undo_grace).unwrap_or_default();
    let mut tx = write.begin(&state.db).await?;
    let mut items = Vec::with_capacity(ids.len());
    let mut removals = Vec::new();
    let mut news = false;
    for id in ids {
        let effect = tx.moderate(event.id, id, &action).await?;
        if let Some(kind) = effect.news {
            tx.append_live(event.id, kind, id).await?;
            news = true;
        }
        if let Some((guest_id, bytes)) = effect.refund {
            tx.refund_quota(guest_id, bytes).await?;
            // As the organiser's delete of one photo: undoable for a while, its bytes wait that long.
            if grace > chrono::TimeDelta::zero() {
                tx.queue_delete_after(event.id, id, chrono::Utc::now() + grace).await?;
            } else {
                removals.push(tx.queue_blob_job(BlobJobKind::Delete, event.id, id, state.blob_jobs.claim()).await?);
            }
        }
        let upload = match effect.moderated {
            Moderated::NotFound => None,
            _ if effect.refund.is_some() => None,
            _ => tx.upload_by_id(id).await?.map(|row| UploadJson::new(&row)),
        };
        let result = match effect.moderated {
            Moderated::Changed => Outcome::Changed,
            Moderated::Unchanged => Outcome::Unchanged,
            Moderated::NotFound => Outcome::NotFound,
        };
        items.push(Item { id, result, upload });
    }
    let changed = items.iter().filter(|item| matches!(item.result, Outcome::Changed)).count();
    let response = tx.commit(Json(Answer { action: request.action, items }).into_response()).await?;
    if news {
        state.live.poke();
    }
    for removal in removals {
        state.blob_jobs.run(removal).await;
    }
    tracing::info!(event_id = %event.id, action = ?action, changed, "uploads moderated");
    Ok(response)
}

/// The action, once the selection's size and the reason are known to be acceptable.
fn parse(request: &Request) -> ApiResult<Moderation> {
    let count = request.upload_ids.len();
    if count == 0 {
        return Err(ApiError::InvalidRequest("`upload_ids` must name at least one upload".into()));
    }
    if count > MAX_SELECTION {
        return Err(ApiError::SelectionTooLarge { count, limit: MAX_SELECTION });
    }
    Ok(match (request.action, request.reason.as_deref()) {
        (Action::Reject, reason) => Moderation::Reject(RejectReason::parse(reason.unwrap_or_default())?),
        (_, Some(_)) => return Err(ApiError::InvalidReason("a `reason` goes with `reject` only".into())),
        (Action::Approve, None) => Moderation::Approve,
        (Action::Hide, None) => Moderation::Hide,
        (Action::Show, None) => Moderation::Show,
        (Action::Delete, None) => Moderation::Delete,
    })
}

refusals!(ModerateRefusals {
    400 => problem("Malformed JSON, wrong content type, an unknown `action` or member, an id that is not a UUID, or no ids (`invalid_request`). `invalid_idempotency_key`: the `Idempotency-Key` is not 1–255 printable ASCII characters.", &[InvalidRequest, InvalidIdempotencyKey]),
    401 => shared("Unauthenticated"),
    403 => or_cross_origin("`forbidden`: a guest (whatever the body), or the organiser of another event.", &[Forbidden]),
    409 => shared("IdempotencyKeyInFlight"),
    413 => shared("BodyTooLarge"),
    422 => problem("`selection_too_large`: more than 200 ids. `invalid_reason`: a `reason` longer than 200 characters, or one with another action than `reject`. `idempotency_key_reused`: the `Idempotency-Key` was used for another request.", &[SelectionTooLarge, InvalidReason, IdempotencyKeyReused]),
    500 => shared("Internal"),
});
