//! Uploads: the deduplicated upload (the use case lives in `ingest`), reading one upload,
//! the by-client-id preflight, hiding and deleting. The event's listing is `gallery`.

use axum::Json;
use axum::body::Bytes;
use axum::extract::DefaultBodyLimit;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::ToSchema;
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouterExt};
use utoipa_axum::routes;
use uuid::Uuid;

use super::IDEMPOTENT_REPLAYED;
use super::extract::{Guest, Viewer};
use super::idempotency::{Keyed, Write};
use super::openapi::{IdempotencyKeyParam, SlugParam, UploadIdParam, refusals, schemas};
use super::upload_parts::{self, Outcome};
use super::views::UploadJson;
use crate::db::blob_jobs::BlobJobKind;
use crate::db::live::LiveKind;
use crate::db::uploads::UploadRow;
use crate::domain::{ClientUploadId, UploadStatus};
use crate::error::{ApiError, ApiResult};
use crate::http::AppState;
use crate::ingest::Ingested;

pub fn routes(keyed: &Keyed) -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        // The upload counts its own bytes against `max_upload_bytes`; axum's 2 MB default would
        // cut photos off. It has its own key (`ingest`), so it is not `Keyed`.
        .routes(routes!(create_upload).layer(DefaultBodyLimit::disable()))
        .routes(routes!(upload_by_client_id))
        .routes(routes!(get_upload))
        .routes(keyed.route(routes!(change_upload, delete_upload)))
}

// The upload's `multipart/form-data` body, for the document (the handler reads it as a stream
// of parts, `http::multipart`).
/// Parts, in this order: `client_upload_id` (optional), `caption` (optional), `file` (required for a new
/// upload). Clients send `client_upload_id` BEFORE the file part, so that a retry's bytes are read and discarded
/// instead of stored. Other parts are read and ignored.
#[derive(ToSchema)]
#[allow(dead_code)]
struct UploadForm {
    /// A UUID the client made once for this queued photo (not the nil UUID). Unique across the whole server, not
    /// per event. Not a UUID: 400 `invalid_client_upload_id`. Same meaning as a UUID `Idempotency-Key` header;
    /// both present and different: 400 `idempotency_key_mismatch`.
    #[schema(nullable = false)]
    client_upload_id: Option<Uuid>,
    /// Trimmed; control characters and Unicode format characters (bidi overrides, zero-width…) removed, line
    /// breaks kept as `\n`, tabs turned into spaces; then at most 500 characters (otherwise 422
    /// `invalid_caption`); empty means no caption.
    #[schema(nullable = false, max_length = 500)]
    caption: Option<String>,
    /// The photo or video, with its file name (`filename` in its Content-Disposition; directories are dropped, at most 255
    /// characters, `photo` when missing). Its type is sniffed from the bytes; the declared type is ignored.
    /// Exactly one `file` part; a replay needs none.
    #[schema(value_type = String, content_media_type = "application/octet-stream")]
    file: Vec<u8>,
}

/// Upload a photo or video (guest)
///
/// A guest of the event uploads one photo or video, deduplicated on the client's upload id.
///
/// **The key.** The `client_upload_id` part, or the `Idempotency-Key` header when it holds a UUID (the two mean the
/// same; a header that is not a UUID is ignored). `client_upload_id` is unique across the whole server, not per
/// event. A request without any key is never deduplicated.
///
/// **Before the body.** A key in the header is looked up before the body is read: a known key is answered (200
/// replay, 409, 410) without storing any bytes. The server reads the rest of the body and discards it before
/// answering (closing early would reset the client's connection); when the request carries `Expect: 100-continue`,
/// it answers before the client sends the body at all (a replay is then answered without comparing the declared
/// parts). A `client_upload_id` part sent before the `file` part is looked up at once too, so a retry's bytes are
/// drained, never stored.
///
/// **Order of decisions:** 401/403 (who, which event) → the key: 409 another guest's, 410 deleted, otherwise a
/// replay (200; when the declared parts were read, 422 if the file name or caption differ — compared by value,
/// never by the raw body; a replay needs no file part) → only then the new-upload checks: 403 `guest_blocked`,
/// 403 `uploads_closed`,
/// 400, 413, 415. A replay is a replay even when the guest's quota has filled or uploads have closed since: 200,
/// never 413/403. Malformed parts (400 `invalid_multipart`, `invalid_client_upload_id`, `idempotency_key_mismatch`,
/// 422 `invalid_caption`) are refused wherever they are found.
///
/// Every refused attempt leaves nothing behind: no row, no blob, no quota charged. Every answer with an Upload
/// shows its live state (same id on every replay).
#[utoipa::path(
    post,
    path = "/api/v1/events/{slug}/uploads",
    operation_id = "createUpload",
    tag = "uploads",
    security(("guestBearer" = []), ("guestCookie" = [])),
    params(SlugParam, ("Idempotency-Key" = Option<String>, Header, nullable = false, description = "When it holds a UUID: the same as the `client_upload_id` part (both present and different: 400 `idempotency_key_mismatch`). Any other value (some browsers add keys of their own) is ignored here. Uploads do not take part in the `Idempotency-Key` of other writes (parameter `IdempotencyKey`): no `invalid_idempotency_key`, `idempotency_key_in_flight` or `idempotency_key_reused` here.", example = "0190a5a8-5e2b-7c3d-8e4f-1a2b3c4d5e6f"), ("Expect" = inline(Option<schemas::Continue>), Header, nullable = false, description = "`100-continue`: with a known `Idempotency-Key`, the answer comes before the body is sent.")),
    request_body(content = UploadForm, content_type = "multipart/form-data"),
    responses(
        (status = 200, description = "A replay: a later attempt with a known key by the same guest (sequential or concurrent, bytes re-sent or not). The SAME upload's live state; nothing new stored, quota not charged again.", body = UploadJson, headers(("Idempotent-Replayed" = inline(schemas::True), description = "`true`: this answer repeats an earlier upload with the same key; nothing new was stored and no quota was charged.")), links(("getUpload" = (operation_id = "getUpload", parameters(("id" = "$response.body#/id")), description = "The upload's live state: its status, and its thumb and preview once they exist.")))),
        (status = 201, description = "First attempt: stored.", body = UploadJson, headers(("Location" = String, description = "`/api/v1/uploads/{id}`.")), links(("getUpload" = (operation_id = "getUpload", parameters(("id" = "$response.body#/id")), description = "The upload's live state: its status, and its thumb and preview once they exist.")))),
        CreateUploadRefusals,
    ),
)]
async fn create_upload(
    State(state): State<AppState>,
    Guest(guest): Guest,
    Path(slug): Path<String>,
    headers: HeaderMap,
    request: Request,
) -> ApiResult<Response> {
    if guest.event_slug != slug {
        return Err(ApiError::WrongEvent);
    }
    let header_key = headers.get("idempotency-key").and_then(|v| v.to_str().ok()).and_then(ClientUploadId::from_header);
    let Outcome { result, unread } = upload_parts::ingest(&state.ingest, guest, header_key, request).await;
    let mut response = match result {
        Ok(Ingested::Created(row)) => {
            let location = format!("/api/v1/uploads/{}", row.id);
            (StatusCode::CREATED, [(header::LOCATION, location)], Json(UploadJson::new(&row))).into_response()
        }
        Ok(Ingested::Replayed(row)) => replayed(&row),
        Err(error) => error.into_response(),
    };
    if let Some(body) = unread {
        // Answered before the body ended: what is left of it would otherwise be read as the
        // next request.
        response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
        super::multipart::linger(body);
    }
    Ok(response)
}

fn replayed(row: &UploadRow) -> Response {
    let mut response = Json(UploadJson::new(row)).into_response();
    response.headers_mut().insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
    response
}

/// The upload if this viewer may see it: a guest or the organiser of its event; hidden uploads,
/// those waiting for approval and, while the event's gallery is private or not open yet, every
/// upload only for the organiser and their uploader. Everything else is "not found".
pub async fn visible_upload(state: &AppState, viewer: &Viewer, id: Uuid) -> ApiResult<UploadRow> {
    let row = state.db.upload_by_id(id, viewer.guest_id()).await?.ok_or(ApiError::NotFound)?;
    if may_see(viewer, &row) { Ok(row) } else { Err(ApiError::NotFound) }
}

/// Whether this viewer may see the upload (`visible_upload`'s rule, for a row read already).
pub fn may_see(viewer: &Viewer, row: &UploadRow) -> bool {
    row.deleted_at.is_none()
        && viewer.can_see_event(row.event_id)
        && (viewer.is_organiser_of(row.event_id)
            || viewer.guest_id() == Some(row.guest_id)
            || row.shared_with_guests(chrono::Utc::now()))
}

/// One upload
///
/// For a guest of its event or its organiser; a hidden upload only for the organiser and its uploader. Anything
/// else — including another event's upload — is 404, revealing nothing.
#[utoipa::path(
    get,
    path = "/api/v1/uploads/{id}",
    operation_id = "getUpload",
    tag = "uploads",
    security(("guestBearer" = []), ("guestCookie" = []), ("organiserBearer" = []), ("organiserCookie" = []), ("screenCookie" = [])),
    params(UploadIdParam),
    responses(
        (status = 200, description = "The upload's live state.", body = UploadJson),
        GetUploadRefusals,
    ),
)]
async fn get_upload(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
) -> ApiResult<Json<UploadJson>> {
    let id = Uuid::try_parse(&id).map_err(|_| ApiError::NotFound)?;
    Ok(Json(UploadJson::new(&visible_upload(&state, &viewer, id).await?)))
}

/// Preflight: the guest's upload with this key
///
/// A client asks this before re-sending a photo's bytes over a poor connection. Only the guest's own uploads are
/// found (hidden ones too).
#[utoipa::path(
    get,
    path = "/api/v1/events/{slug}/uploads/by-client-id/{client_upload_id}",
    operation_id = "getUploadByClientId",
    tag = "uploads",
    security(("guestBearer" = []), ("guestCookie" = [])),
    params(SlugParam, ("client_upload_id" = uuid::Uuid, Path, description = "The key the guest made for the photo. Not a (non-nil) UUID: 400 `invalid_client_upload_id`.")),
    responses(
        (status = 200, description = "The guest's upload with this key: already stored.", body = UploadJson),
        GetUploadByClientIdRefusals,
    ),
)]
// The preflight a page asks before re-sending a photo's bytes.
async fn upload_by_client_id(
    State(state): State<AppState>,
    Guest(guest): Guest,
    Path((slug, key)): Path<(String, String)>,
) -> ApiResult<Json<UploadJson>> {
    if guest.event_slug != slug {
        return Err(ApiError::WrongEvent);
    }
    let key = ClientUploadId::parse(&key)?;
    match state.db.upload_by_client_id(key.uuid(), Some(guest.id)).await? {
        Some(row) if row.guest_id == guest.id && row.deleted_at.is_some() => Err(ApiError::UploadDeleted),
        Some(row) if row.guest_id == guest.id => Ok(Json(UploadJson::new(&row))),
        _ => Err(ApiError::NotFound),
    }
}

/// At least one member. Any other member, or neither: 400 `invalid_request`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct ChangeUpload {
    /// true: hidden from guests (its uploader and the organiser still see it, with status `hidden`); false: shown
    /// again. Setting the value it already has changes nothing and answers 200. Not a boolean: 400
    /// `invalid_request`.
    #[schema(nullable = false)]
    hidden: Option<bool>,
    /// true: approves an upload waiting for review (`review` `pending` becomes `approved`): the event's guests see
    /// it from now on, and the live stream announces it once it is `ready`. Approving an approved upload changes
    /// nothing and answers 200. false: 400 `invalid_request` (an approved upload does not go back to review; hide
    /// it instead).
    #[schema(nullable = false)]
    approved: Option<bool>,
}

/// `ChangeUpload` as the document has it: `{}` is refused, so at least one member.
struct ChangeUploadBody;

impl utoipa::PartialSchema for ChangeUploadBody {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        schemas::at_least_one_member(<ChangeUpload as utoipa::PartialSchema>::schema())
    }
}

impl ToSchema for ChangeUploadBody {}

/// Hide, show or approve an upload (organiser)
///
/// The event's organiser hides an upload from guests (its uploader still sees it, with status `hidden`) or shows it
/// again, or approves an upload waiting for review (`{"approved": true}`; the review gate, `review_uploads` of the
/// event). Hiding announces `removed` on the live stream; showing or approving an upload that is `ready` (and not
/// hidden) announces it as `upload` (one still processing is announced when it becomes ready). Setting the value the
/// upload already has changes nothing and answers 200. Order: 401 / 403 `cross_origin` → the `Idempotency-Key` → 403 `forbidden` for anyone
/// who is not an organiser (whatever the id or body) → the upload (404, also for another event's organiser) → the
/// body (400, 413). Takes an `Idempotency-Key` (parameter `IdempotencyKey`): a retry with the same key and body
/// gets the first attempt's answer without changing the upload again.
#[utoipa::path(
    patch,
    path = "/api/v1/uploads/{id}",
    operation_id = "changeUpload",
    tag = "uploads",
    security(("organiserBearer" = []), ("organiserCookie" = [])),
    params(UploadIdParam, IdempotencyKeyParam),
    request_body = inline(ChangeUploadBody),
    responses(
        (status = 200, description = "The upload as changed, as the organiser sees it (`liked_by_me` false). With `Idempotent-Replayed: true`: the recorded answer of an earlier request with the same `Idempotency-Key` — the upload as that request left it, not necessarily as it is now; nothing was changed this time.", body = UploadJson, headers(("Idempotent-Replayed" = inline(schemas::True), description = "`true`: this is the recorded answer to an earlier request with the same `Idempotency-Key` (parameter `IdempotencyKey`); the write was not run again. Absent when the write ran."))),
        ChangeUploadRefusals,
    ),
)]
// The organiser hides an upload from guests (its uploader still sees it), or shows it again.
// Who may change the upload is decided before the body is read: an organiser of another
// event learns nothing from a malformed or oversized body that a well-formed one would not
// tell them.
async fn change_upload(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
    write: Write,
    request: Request,
) -> ApiResult<Response> {
    let (parts, body) = request.into_parts();
    let (id, row) = match may_change_upload(&state, &viewer, &id).await {
        Ok(allowed) => allowed,
        Err(refusal) => {
            super::extract::discard_body(body).await;
            return Err(refusal);
        }
    };
    let body: Bytes = super::extract::read_body(&parts.headers, body, super::extract::MAX_JSON_BODY).await?;
    let body: ChangeUpload = serde_json::from_slice(&body).map_err(|e| {
        ApiError::InvalidRequest(format!("the body must be {{\"hidden\": true|false, \"approved\": true}}: {e}"))
    })?;
    if body.hidden.is_none() && body.approved.is_none() {
        return Err(ApiError::InvalidRequest("the body must hold `hidden` or `approved`".into()));
    }
    if body.approved == Some(false) {
        return Err(ApiError::InvalidRequest("an approved upload does not go back to review: hide it instead".into()));
    }
    let mut tx = write.begin(&state.db).await?;
    // Hiding is news at once; showing again or approving only once there is something to show
    // (a photo still processing is announced when it becomes ready).
    let mut news = None;
    if let Some(hidden) = body.hidden {
        let Some(changed) = tx.set_upload_hidden(id, hidden).await? else {
            tx.rollback().await?;
            return Err(ApiError::NotFound);
        };
        news = match changed {
            Some(_) if hidden => Some(LiveKind::Removed),
            Some(UploadStatus::Ready) => Some(LiveKind::Upload),
            _ => None,
        };
    }
    if body.approved == Some(true) {
        let Some(changed) = tx.approve_upload(id).await? else {
            tx.rollback().await?;
            return Err(ApiError::NotFound);
        };
        if let Some((UploadStatus::Ready, false)) = changed {
            news = news.or(Some(LiveKind::Upload));
        }
    }
    if let Some(kind) = news {
        tx.append_live(row.event_id, kind, id).await?;
    }
    let row = tx.upload_by_id(id).await?.ok_or(ApiError::NotFound)?;
    let response = tx.commit(Json(UploadJson::new(&row)).into_response()).await?;
    if news.is_some() {
        state.live.poke();
    }
    tracing::info!(upload_id = %id, hidden = body.hidden, approved = body.approved, "upload visibility changed");
    Ok(response)
}

/// The upload an organiser may hide or show: one of their own event's.
async fn may_change_upload(state: &AppState, viewer: &Viewer, id: &str) -> ApiResult<(Uuid, UploadRow)> {
    // Organiser-only: a guest learns nothing more than that, whatever the id or the body.
    if viewer.organiser.is_none() {
        return Err(ApiError::Forbidden);
    }
    let id = Uuid::try_parse(id).map_err(|_| ApiError::NotFound)?;
    let row = visible_upload(state, viewer, id).await?;
    if !viewer.is_organiser_of(row.event_id) {
        return Err(ApiError::Forbidden);
    }
    Ok((id, row))
}

/// Delete an upload
///
/// By its uploader or the event's organiser. The original's bytes are removed and the guest's quota is refunded;
/// the record (and so its key) stays, so a late retry with the key gets 410 `upload_deleted`. A second delete is
/// 404. The uploader's own delete removes the bytes at once; the organiser's (a co-organiser's too) waits
/// `--undo-grace-s` (default 60 s) before removing them, and may be undone meanwhile (`POST …/restore`). Takes an `Idempotency-Key` (parameter `IdempotencyKey`): a retry of a successful delete with the same key
/// gets 204 again (with `Idempotent-Replayed: true`), not 404.
#[utoipa::path(
    delete,
    path = "/api/v1/uploads/{id}",
    operation_id = "deleteUpload",
    tag = "uploads",
    security(("guestBearer" = []), ("guestCookie" = []), ("organiserBearer" = []), ("organiserCookie" = [])),
    params(UploadIdParam, IdempotencyKeyParam),
    responses(
        (status = 204, description = "Deleted. With `Idempotent-Replayed: true`: an earlier request with the same `Idempotency-Key` deleted it.", headers(("Idempotent-Replayed" = inline(schemas::True), description = "`true`: this is the recorded answer to an earlier request with the same `Idempotency-Key` (parameter `IdempotencyKey`); the write was not run again. Absent when the write ran."))),
        DeleteUploadRefusals,
    ),
)]
// Soft delete: the row (and so its key) stays, a late retry learns the photo is gone;
// the bytes are removed and the guest's quota refunded in the same transaction.
async fn delete_upload(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
    write: Write,
) -> ApiResult<Response> {
    let id = Uuid::try_parse(&id).map_err(|_| ApiError::NotFound)?;
    let row = visible_upload(&state, &viewer, id).await?;
    if viewer.guest_id() != Some(row.guest_id) && !viewer.is_organiser_of(row.event_id) {
        return Err(ApiError::Forbidden);
    }
    let mut tx = write.begin(&state.db).await?;
    let Some((guest_id, bytes)) = tx.mark_upload_deleted(id).await? else {
        tx.rollback().await?;
        return Err(ApiError::NotFound);
    };
    tx.refund_quota(guest_id, bytes).await?;
    tx.append_live(row.event_id, LiveKind::Removed, id).await?;
    // The organiser's delete may be undone for a while (`restore`): its bytes wait that long.
    let grace = chrono::TimeDelta::from_std(state.settings.undo_grace).unwrap_or_default();
    let remove = if viewer.is_organiser_of(row.event_id) && grace > chrono::TimeDelta::zero() {
        tx.queue_delete_after(row.event_id, id, chrono::Utc::now() + grace).await?;
        None
    } else {
        Some(tx.queue_blob_job(BlobJobKind::Delete, row.event_id, id, state.blob_jobs.claim()).await?)
    };
    let response = tx.commit(StatusCode::NO_CONTENT.into_response()).await?;
    state.live.poke();
    if let Some(remove) = remove {
        state.blob_jobs.run(remove).await;
    }
    tracing::info!(upload_id = %id, undo = remove.is_none(), "upload deleted");
    Ok(response)
}

refusals!(CreateUploadRefusals {
    400 => problem("`invalid_multipart`: not `multipart/form-data`, malformed, more than one `file` part, or a text part that is not UTF-8. `missing_file`: a new upload without a `file` part. `invalid_client_upload_id`: the part is not a (non-nil) UUID. `idempotency_key_mismatch`: header and part hold different UUIDs. The multipart reader is bounded: a preamble over 4 KiB, a part's headers over 8 KiB or more than 16 parts are `invalid_multipart`, answered at once with `Connection: close`. A body that sends nothing for `--body-idle-timeout-s` is cut and nothing is kept.", &[InvalidMultipart, MissingFile, InvalidClientUploadId, IdempotencyKeyMismatch]),
    401 => problem("No valid guest credential.", &[Unauthenticated]),
    403 => or_cross_origin("`wrong_event`: the guest joined another event (also when the slug names no event). `uploads_closed`: a new upload while the organiser has closed uploads, or outside the event's upload window (`detail` says when it opens or that it closed). `guest_blocked`: a new upload by a guest the organiser blocked (checked before `uploads_closed`).", &[WrongEvent, UploadsClosed, GuestBlocked]),
    409 => problem("The key is already used by another guest's upload; nothing about it is revealed.", &[ClientUploadIdConflict]),
    410 => problem("The key's upload was deleted since; it is not stored again.", &[UploadDeleted]),
    413 => problem("`file_too_large`: a photo larger than `max_upload_bytes`, a video larger than `max_video_bytes` (`limit_bytes`). `video_too_long`: the video's header says it lasts longer than `max_video_seconds` (`duration_s`, `limit_seconds`). `quota_exceeded`: `used_bytes + size > quota_bytes` (`quota_bytes`, `remaining_bytes`). `image_too_large`: the image header declares more than `max_image_pixels` (`pixels`, `limit_pixels`). `event_storage_full`: the file does not fit in what is left of the event's storage cap, all guests together (`cap_bytes`, `remaining_bytes`). A body larger than the larger of `max_upload_bytes` and `max_video_bytes` plus 64 KiB of framing is refused at once with `file_too_large` and the connection closed.", &[FileTooLarge, QuotaExceeded, ImageTooLarge, VideoTooLong, EventStorageFull]),
    415 => problem("The bytes are not a supported image (JPEG, PNG, WebP, GIF, HEIC/HEIF; not AVIF) or video (MP4 and MOV with H.264, HEVC or AV1; WebM with VP8, VP9 or AV1), whatever the declared type; or the file is damaged or cut short (`detail` names the format). A file that starts like an MP4 or WebM and then is not one is refused as soon as its first boxes show it. An empty file (0 bytes) is refused the same way.", &[UnsupportedMediaType]),
    422 => problem("`client_upload_id_reused`: same guest and key, but another file name or caption. `invalid_caption`: the caption is longer than 500 characters.", &[ClientUploadIdReused, InvalidCaption]),
    500 => shared("Internal"),
    507 => problem("The server's photo disk has less free space than its floor (`--min-free-bytes`); nothing is stored. A replay still answers 200. Retry later.", &[InsufficientStorage]),
});

refusals!(GetUploadByClientIdRefusals {
    400 => problem("The key is not a (non-nil) UUID.", &[InvalidClientUploadId]),
    401 => problem("No valid guest credential.", &[Unauthenticated]),
    403 => problem("The guest joined another event (also when the slug names no event).", &[WrongEvent]),
    404 => problem("No upload with this key, or it belongs to someone else: send it.", &[NotFound]),
    410 => problem("The guest's upload with this key was deleted: do not send it again.", &[UploadDeleted]),
    500 => shared("Internal"),
});

refusals!(GetUploadRefusals {
    401 => shared("Unauthenticated"),
    404 => problem("No such upload, deleted, or not visible to the caller.", &[NotFound]),
    500 => shared("Internal"),
});

refusals!(ChangeUploadRefusals {
    400 => problem("Malformed JSON, wrong content type, neither `hidden` nor `approved`, one not a boolean, `approved` false, or another member (`invalid_request`). `invalid_idempotency_key`: the `Idempotency-Key` is not 1–255 printable ASCII characters.", &[InvalidRequest, InvalidIdempotencyKey]),
    401 => shared("Unauthenticated"),
    403 => or_cross_origin("`forbidden`: the caller is not an organiser (a guest, whatever the id or body): only the organiser hides.", &[Forbidden]),
    404 => problem("Not a UUID, no such upload, deleted, or not visible to the caller (another event's upload; a hidden one for anyone but the organiser and its uploader). Also for the organiser of another event.", &[NotFound]),
    409 => shared("IdempotencyKeyInFlight"),
    413 => shared("BodyTooLarge"),
    422 => shared("IdempotencyKeyReused"),
    500 => shared("Internal"),
});

refusals!(DeleteUploadRefusals {
    400 => problem("`invalid_idempotency_key`: the `Idempotency-Key` is not 1–255 printable ASCII characters.", &[InvalidIdempotencyKey, InvalidRequest]),
    401 => shared("Unauthenticated"),
    403 => or_cross_origin("`forbidden`: another guest of the event (who can see the upload but did not upload it).", &[Forbidden]),
    404 => problem("No such upload, already deleted, or not visible to the caller.", &[NotFound]),
    409 => shared("IdempotencyKeyInFlight"),
    413 => shared("BodyTooLarge"),
    422 => shared("IdempotencyKeyReused"),
    500 => shared("Internal"),
});
