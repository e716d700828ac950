//! Resumable uploads over HTTP: the IETF "Resumable Uploads for HTTP" draft's creation,
//! offset retrieval, append and cancellation, for the current draft and for interop versions
//! 5 and 6 (drafts 03–05, what tus-js-client speaks). Headers in, headers out; the resource's
//! life is `crate::resumable`'s, the upload's `crate::ingest`'s.
//!
//! No `104 (Upload Resumption Supported)` is sent: hyper cannot send interim responses from a
//! handler, and the draft allows that ("unless the server is not capable of sending interim
//! responses"). Clients create with an empty request and learn the resource from the `201`.

use axum::Json;
use axum::body::{Body, BodyDataStream};
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use chrono::Utc;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouterExt};
use utoipa_axum::routes;
use uuid::Uuid;

use super::IDEMPOTENT_REPLAYED;
use super::extract::Guest;
use super::openapi::{SlugParam, refusals, schemas};
use super::resumable_doc as doc;
use super::views::UploadJson;
use crate::db::resumable::ResumableRow;
use crate::domain::{Caption, ClientUploadId, FileName};
use crate::error::{ApiError, ApiResult};
use crate::http::AppState;
use crate::ingest::Ingested;
use crate::resumable::{AppendOutcome, Appended, Created, Creation, Piece, Status, completes_at_length};

const UPLOAD_OFFSET: HeaderName = HeaderName::from_static("upload-offset");
const UPLOAD_COMPLETE: HeaderName = HeaderName::from_static("upload-complete");
const UPLOAD_LENGTH: HeaderName = HeaderName::from_static("upload-length");
const UPLOAD_LIMIT: HeaderName = HeaderName::from_static("upload-limit");
const UPLOAD_METADATA: HeaderName = HeaderName::from_static("upload-metadata");
const INTEROP: HeaderName = HeaderName::from_static("upload-draft-interop-version");

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        // Bodies are counted against the declared length, not axum's 2 MB default.
        .routes(
            routes!(create_resumable, resumable_options)
                .layer(DefaultBodyLimit::disable())
                .layer(middleware::from_fn(echo_interop)),
        )
        .routes(
            routes!(resumable_offset, append_resumable, cancel_resumable)
                .layer(DefaultBodyLimit::disable())
                .layer(middleware::from_fn(echo_interop)),
        )
}

/// Every answer of these routes carries the request's `Upload-Draft-Interop-Version`, refusals
/// made before the handler runs (no credential, a header that does not parse) included.
async fn echo_interop(request: Request, next: Next) -> Response {
    let version = interop(request.headers());
    let mut response = next.run(request).await;
    if let Some(version) = version {
        response.headers_mut().insert(INTEROP, HeaderValue::from(version));
    }
    response
}

/// A new upload resource.
#[derive(Serialize, ToSchema)]
#[schema(as = UploadResource)]
pub(super) struct ResourceJson {
    id: Uuid,
    /// Bytes kept so far.
    offset: u64,
    length: u64,
    expires_at: chrono::DateTime<Utc>,
}

/// Create a resumable upload (guest)
///
/// Creates an upload resource for one file, keyed by the `client_upload_id` in `Upload-Metadata` (tus syntax:
/// `client_upload_id <base64>,filename <base64>[,caption <base64>]`), with its length in `Upload-Length`. Order
/// of decisions: 401/403 (who, which event) → the key: 409 another guest's, 410 deleted, 200 an upload already
/// stored (a replay: nothing read or kept), 201 with the same resource when this guest has one open for the key →
/// only then 403 `guest_blocked` / `uploads_closed`, 413 (the length over the limits, the guest's quota or the
/// event's storage cap, the open resources of the guest and of the event counted as reserved), 507 (the length
/// does not fit in the disk's free space above its floor). A body is the file from its first byte (with `Upload-Complete: ?1`, all of
/// it). No `104` interim response is sent. It ignores `Idempotency-Key`: the `client_upload_id` is its key.
#[utoipa::path(
    post,
    path = "/api/v1/events/{slug}/uploads/resumable",
    operation_id = "createResumableUpload",
    tag = "uploads",
    security(("guestBearer" = []), ("guestCookie" = [])),
    params(SlugParam, doc::CreationHeaders),
    request_body(content = inline(Option<schemas::Original>), content_type = "application/octet-stream", description = "Optional: the file from its first byte (with `Upload-Complete: ?1`, all of it). Any content type."),
    responses(
        (status = 200, description = "The key's upload is stored already: a replay (`Idempotent-Replayed: true`, `Upload-Complete: ?1`).", body = UploadJson, headers(("Idempotent-Replayed" = inline(schemas::True), description = "`true`."), ("Upload-Complete" = inline(doc::Stored), description = "The file is stored."), ("Upload-Offset" = inline(doc::Offset), description = "The file's length."), ("Upload-Draft-Interop-Version" = inline(doc::Interop), description = "The request's, when it sent one."))),
        (status = 201, description = "The upload resource (new, or this guest's open one for the key), with `Location`, `Upload-Offset`, `Upload-Limit`; or, for a complete body, the stored Upload with `Upload-Complete: ?1` and `Location` naming it.", body = inline(doc::CreatedBody), headers(("Location" = String, description = "The resource (`…/uploads/resumable/{id}`), or the stored upload (`/api/v1/uploads/{id}`)."), ("Upload-Complete" = inline(doc::Complete), description = "`?0`: a resource to append to; `?1`: the file is stored."), ("Upload-Offset" = inline(doc::Offset), description = "The bytes kept."), ("Upload-Limit" = inline(doc::Limit), description = "The size limit and the seconds the resource is kept."), ("Upload-Draft-Interop-Version" = inline(doc::Interop), description = "The request's, when it sent one."))),
        (status = 204, description = "The first bytes were kept (a creation with a body that did not complete the file): `Upload-Offset`, `Upload-Complete: ?0`, `Location`.", headers(("Location" = String, description = "The resource."), ("Upload-Complete" = inline(doc::NotYet), description = "More is to come."), ("Upload-Offset" = inline(doc::Offset), description = "The bytes kept."), ("Upload-Limit" = inline(doc::Limit), description = "The size limit and the seconds the resource is kept."), ("Upload-Draft-Interop-Version" = inline(doc::Interop), description = "The request's, when it sent one."))),
        ResumableRefusals,
    ),
)]
async fn create_resumable(
    State(state): State<AppState>,
    Guest(guest): Guest,
    Path(slug): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    if guest.event_slug != slug {
        return Err(ApiError::WrongEvent);
    }
    let resumable = available(&state)?;
    let interop = interop(&headers);
    let complete = boolean(&headers, &UPLOAD_COMPLETE)?.unwrap_or(false);
    let length = length(&headers, complete)?;
    let creation = creation(&headers, length, interop)?;
    let row = match resumable.create(guest.clone(), creation).await {
        Ok(Created::Stored(row)) => return Ok(stored(Ingested::Replayed(row))),
        Ok(Created::New(row) | Created::Existing(row)) => row,
        Err(refusal) => return Err(refusal.into()),
    };
    let location = location(&slug, row.id);
    if !(has_body(&headers) || complete && length == 0) {
        return Ok(created(&state, &row, &location));
    }
    let piece = Piece { offset: 0, complete, content_length: integer(&headers, &header::CONTENT_LENGTH)? };
    let outcome = resumable.append(guest, row.id, piece, body.into_data_stream()).await;
    Ok(appended_response(&state, outcome, &location))
}

/// What creating an upload resource allows (`Accept-Patch`, `Upload-Limit`)
#[utoipa::path(
    options,
    path = "/api/v1/events/{slug}/uploads/resumable",
    operation_id = "resumableUploadOptions",
    tag = "uploads",
    security(()),
    params(SlugParam, doc::InteropHeader),
    responses(
        (status = 204, description = "`Accept-Patch: application/partial-upload` and `Upload-Limit`.", headers(("Accept-Patch" = inline(doc::AcceptPatch), description = "What an append sends."), ("Upload-Limit" = inline(doc::Limit), description = "The size limit and the seconds the resource is kept."), ("Upload-Draft-Interop-Version" = inline(doc::Interop), description = "The request's, when it sent one."))),
        OptionsRefusals,
    ),
)]
async fn resumable_options(State(state): State<AppState>, headers: HeaderMap) -> ApiResult<Response> {
    let resumable = available(&state)?;
    let age = if completes_at_length(interop(&headers)) { "expires" } else { "max-age" };
    let limit = format!("max-size={}, {age}={}", resumable.max_length(), resumable.expiry().as_secs());
    let mut response = StatusCode::NO_CONTENT.into_response();
    let out = response.headers_mut();
    out.insert(HeaderName::from_static("accept-patch"), HeaderValue::from_static("application/partial-upload"));
    insert(out, UPLOAD_LIMIT, &limit);
    Ok(response)
}

/// How much of a resumable upload the server has (guest)
///
/// `Upload-Offset`: the bytes kept, never to be sent again; `Upload-Complete: ?1` once the file is stored. While a
/// request is storing the photo: `Upload-Offset` equal to `Upload-Length`, `Upload-Complete: ?0` and `Retry-After: 1`
/// (ask again then; an append meanwhile is told `upload_busy`).
#[utoipa::path(
    head,
    path = "/api/v1/events/{slug}/uploads/resumable/{id}",
    operation_id = "getResumableUploadOffset",
    tag = "uploads",
    security(("guestBearer" = []), ("guestCookie" = [])),
    params(SlugParam, ("id" = Uuid, Path, description = "The upload resource."), doc::InteropHeader),
    responses(
        (status = 204, description = "`Upload-Offset`, `Upload-Complete`, `Upload-Length`, `Upload-Limit`, `Cache-Control: no-store`; `Retry-After: 1` while a request is storing the photo.", headers(("Upload-Offset" = inline(doc::Offset), description = "The bytes kept (the whole length while the photo is being stored, and once it is)."), ("Upload-Complete" = inline(doc::Complete), description = "`?1` once the file is stored."), ("Upload-Length" = inline(doc::Offset), description = "The file's length."), ("Upload-Limit" = inline(doc::Limit), description = "While the resource is open."), ("Retry-After" = inline(schemas::Seconds), description = "`1`, while a request is storing the photo."), ("Cache-Control" = String, description = "`no-store`."), ("Upload-Draft-Interop-Version" = inline(doc::Interop), description = "The request's, when it sent one."))),
        ResumableRefusals,
    ),
)]
async fn resumable_offset(
    State(state): State<AppState>,
    Guest(guest): Guest,
    Path((slug, id)): Path<(String, String)>,
) -> ApiResult<Response> {
    let (resumable, id) = resource(&state, &guest, &slug, &id)?;
    let mut response = StatusCode::NO_CONTENT.into_response();
    let out = response.headers_mut();
    out.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    match resumable.status(&guest, id).await? {
        Status::Open(row) => {
            insert(out, UPLOAD_OFFSET, &row.upload_offset.to_string());
            out.insert(UPLOAD_COMPLETE, HeaderValue::from_static("?0"));
            insert(out, UPLOAD_LENGTH, &row.length.to_string());
            insert(out, UPLOAD_LIMIT, &limit(&state, &row));
        }
        // Every byte is there and the photo is being stored: the whole length, not complete
        // yet, and when to ask again (an append now would be told `upload_busy`).
        Status::Completing(row) => {
            insert(out, UPLOAD_OFFSET, &row.length.to_string());
            out.insert(UPLOAD_COMPLETE, HeaderValue::from_static("?0"));
            insert(out, UPLOAD_LENGTH, &row.length.to_string());
            insert(out, UPLOAD_LIMIT, &limit(&state, &row));
            out.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        Status::Stored(upload) => {
            insert(out, UPLOAD_OFFSET, &upload.bytes.to_string());
            out.insert(UPLOAD_COMPLETE, HeaderValue::from_static("?1"));
            insert(out, UPLOAD_LENGTH, &upload.bytes.to_string());
        }
    }
    Ok(response)
}

/// Append to a resumable upload (guest)
///
/// The body goes at `Upload-Offset`; `Upload-Complete: ?1` says it ends the file, which is then probed and
/// stored as a one-request upload is (201, or 200 `Idempotent-Replayed` when another attempt stored the key
/// first; a retry after a lost answer gets 200 too). For interop versions 5 and 6 reaching the declared length
/// completes. Bytes that arrived before a connection was cut are kept, and so are those that arrived before the
/// disk reached its free-space floor (507 with `Upload-Offset`). The request storing the photo holds the resource's
/// lease and renews it while it works; its commit is fenced by it, so a request that lost it stores nothing and answers
/// from what is stored. A failure of the server while storing (500) keeps every byte: an empty append at the length
/// with `Upload-Complete: ?1` stores the photo then. It ignores `Idempotency-Key`: the offset makes a repeated append
/// harmless (409 with the offset to go on from).
#[utoipa::path(
    patch,
    path = "/api/v1/events/{slug}/uploads/resumable/{id}",
    operation_id = "appendResumableUpload",
    tag = "uploads",
    security(("guestBearer" = []), ("guestCookie" = [])),
    params(SlugParam, ("id" = Uuid, Path, description = "The upload resource."), doc::AppendHeaders),
    request_body(content = inline(schemas::Original), content_type = "application/partial-upload", description = "The file's bytes from `Upload-Offset` on."),
    responses(
        (status = 200, description = "Stored before (a replay): the Upload, `Idempotent-Replayed: true`, `Upload-Complete: ?1`.", body = UploadJson, headers(("Idempotent-Replayed" = inline(schemas::True), description = "`true`."), ("Upload-Complete" = inline(doc::Stored), description = "The file is stored."), ("Upload-Offset" = inline(doc::Offset), description = "The file's length."), ("Upload-Draft-Interop-Version" = inline(doc::Interop), description = "The request's, when it sent one."))),
        (status = 201, description = "The file is whole and stored: the Upload, `Upload-Complete: ?1`.", body = UploadJson, headers(("Location" = String, description = "`/api/v1/uploads/{id}`."), ("Upload-Complete" = inline(doc::Stored), description = "The file is stored."), ("Upload-Offset" = inline(doc::Offset), description = "The file's length."), ("Upload-Draft-Interop-Version" = inline(doc::Interop), description = "The request's, when it sent one."))),
        (status = 204, description = "Kept: `Upload-Offset`, `Upload-Complete: ?0`.", headers(("Location" = String, description = "The resource."), ("Upload-Complete" = inline(doc::NotYet), description = "More is to come."), ("Upload-Offset" = inline(doc::Offset), description = "The bytes kept: where the next append starts."), ("Upload-Limit" = inline(doc::Limit), description = "The size limit and the seconds the resource is kept."), ("Upload-Draft-Interop-Version" = inline(doc::Interop), description = "The request's, when it sent one."))),
        ResumableRefusals,
    ),
)]
async fn append_resumable(
    State(state): State<AppState>,
    Guest(guest): Guest,
    Path((slug, id)): Path<(String, String)>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    let (resumable, id) = resource(&state, &guest, &slug, &id)?;
    let Some(offset) = integer(&headers, &UPLOAD_OFFSET)? else {
        return Err(ApiError::InvalidRequest("an append needs `Upload-Offset`".into()));
    };
    let complete = boolean(&headers, &UPLOAD_COMPLETE)?.unwrap_or(false);
    let piece = Piece { offset, complete, content_length: integer(&headers, &header::CONTENT_LENGTH)? };
    let outcome = resumable.append(guest, id, piece, body.into_data_stream()).await;
    Ok(appended_response(&state, outcome, &location(&slug, id)))
}

/// Cancel a resumable upload (guest)
///
/// Its bytes are removed. A stored upload is not touched (delete it as an upload). While a request is storing the
/// photo, or when it was stored while the cancellation was decided: 409 `upload_busy`, nothing cancelled.
/// It ignores `Idempotency-Key`: cancelling twice is 204, then 404.
#[utoipa::path(
    delete,
    path = "/api/v1/events/{slug}/uploads/resumable/{id}",
    operation_id = "cancelResumableUpload",
    tag = "uploads",
    security(("guestBearer" = []), ("guestCookie" = [])),
    params(SlugParam, ("id" = Uuid, Path, description = "The upload resource."), doc::InteropHeader),
    responses((status = 204, description = "Cancelled.", headers(("Upload-Draft-Interop-Version" = inline(doc::Interop), description = "The request's, when it sent one."))), ResumableRefusals),
)]
async fn cancel_resumable(
    State(state): State<AppState>,
    Guest(guest): Guest,
    Path((slug, id)): Path<(String, String)>,
) -> ApiResult<Response> {
    let (resumable, id) = resource(&state, &guest, &slug, &id)?;
    resumable.cancel(&guest, id).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

refusals!(ResumableRefusals {
    400 => problem("`upload_length_required`: created without `Upload-Length`. `inconsistent_upload_length`: lengths that differ, or more bytes than declared (the resource is cancelled). `invalid_request`: a header that does not parse, or an append without `Upload-Offset`. `invalid_client_upload_id`: `Upload-Metadata` without a non-nil UUID `client_upload_id`.", &[UploadLengthRequired, InconsistentUploadLength, InvalidRequest, InvalidClientUploadId]),
    401 => problem("No valid guest credential.", &[Unauthenticated]),
    403 => or_cross_origin("`wrong_event`, `uploads_closed`, `guest_blocked`: as for a one-request upload.", &[WrongEvent, UploadsClosed, GuestBlocked]),
    404 => problem("No such upload resource, or another guest's, or cancelled or expired.", &[NotFound]),
    409 => problem("`upload_offset_mismatch`: `Upload-Offset` is not the resource's (`expected-offset`, `provided-offset`, header `Upload-Offset`). `upload_busy`: another request is appending or storing the photo; for `DELETE`, the photo is being stored (`Retry-After`, `Upload-Offset`). `client_upload_id_conflict`: another guest's key.", &[UploadOffsetMismatch, UploadBusy, ClientUploadIdConflict]),
    410 => problem("The key's upload was deleted since; it is not stored again.", &[UploadDeleted]),
    413 => problem("As for a one-request upload, checked against the declared length at creation and against the file's first bytes as soon as they have arrived.", &[FileTooLarge, QuotaExceeded, ImageTooLarge, VideoTooLong, EventStorageFull]),
    415 => problem("Not a supported photo or video, refused after its first 64 KiB; the resource is cancelled.", &[UnsupportedMediaType]),
    422 => problem("`client_upload_id_reused`: this guest's key, for another file name or caption.", &[ClientUploadIdReused, InvalidCaption]),
    500 => shared("Internal"),
    507 => problem("The server's photo disk is below its free-space floor (`--min-free-bytes`), or a creation's `Upload-Length` does not fit in the free space above it. An append refused before its first byte keeps the resource as it was; one that reaches the floor while its bytes arrive keeps what arrived before and stops; either way the resource stays open, `Upload-Offset` says how far it is, and the client resumes from there once there is room.", &[InsufficientStorage]),
});

refusals!(OptionsRefusals {
    404 => problem("This server's photo store keeps no partial uploads (capability `resumable_uploads` not listed).", &[NotFound]),
});

fn available(state: &AppState) -> ApiResult<&std::sync::Arc<crate::resumable::Resumable>> {
    if state.resumable.available() { Ok(&state.resumable) } else { Err(ApiError::NotFound) }
}

/// The resource's id, for a guest of the event in the path.
fn resource<'a>(
    state: &'a AppState,
    guest: &crate::db::guests::GuestRow,
    slug: &str,
    id: &str,
) -> ApiResult<(&'a std::sync::Arc<crate::resumable::Resumable>, Uuid)> {
    if guest.event_slug != slug {
        return Err(ApiError::WrongEvent);
    }
    let resumable = available(state)?;
    let id = Uuid::try_parse(id).map_err(|_| ApiError::NotFound)?;
    Ok((resumable, id))
}

fn location(slug: &str, id: Uuid) -> String {
    format!("/api/v1/events/{slug}/uploads/resumable/{id}")
}

/// The answer to a new (or found again) resource.
fn created(state: &AppState, row: &ResumableRow, location: &str) -> Response {
    let json = ResourceJson {
        id: row.id,
        offset: u64::try_from(row.upload_offset).unwrap_or(0),
        length: u64::try_from(row.length).unwrap_or(0),
        expires_at: row.expires_at,
    };
    let mut response = (StatusCode::CREATED, Json(json)).into_response();
    let out = response.headers_mut();
    insert(out, header::LOCATION, location);
    insert(out, UPLOAD_OFFSET, &row.upload_offset.to_string());
    out.insert(UPLOAD_COMPLETE, HeaderValue::from_static("?0"));
    insert(out, UPLOAD_LIMIT, &limit(state, row));
    response
}

/// The append's answer; a body not read to its end is drained a little while the answer goes
/// out, and the connection then closed (`multipart::linger`).
fn appended_response(state: &AppState, outcome: AppendOutcome<BodyDataStream>, location: &str) -> Response {
    let mut response = match outcome.result {
        Ok(Appended::Kept { offset, row }) => {
            let mut response = StatusCode::NO_CONTENT.into_response();
            let out = response.headers_mut();
            insert(out, UPLOAD_OFFSET, &offset.to_string());
            out.insert(UPLOAD_COMPLETE, HeaderValue::from_static("?0"));
            insert(out, UPLOAD_LIMIT, &limit(state, &row));
            insert(out, header::LOCATION, location);
            response
        }
        Ok(Appended::Stored(ingested)) => stored(*ingested),
        // Stopped at the disk's floor, among others: `Upload-Offset` says what was kept.
        Err(e) => ApiError::from(e).into_response(),
    };
    if let Some(body) = outcome.unread {
        response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
        super::multipart::linger(body);
    }
    response
}

/// The stored upload, with `Upload-Complete: ?1`.
fn stored(ingested: Ingested) -> Response {
    let (status, row, replayed) = match ingested {
        Ingested::Created(row) => (StatusCode::CREATED, row, false),
        Ingested::Replayed(row) => (StatusCode::OK, row, true),
    };
    let mut response = (status, Json(UploadJson::new(&row))).into_response();
    let out = response.headers_mut();
    out.insert(UPLOAD_COMPLETE, HeaderValue::from_static("?1"));
    insert(out, UPLOAD_OFFSET, &row.bytes.to_string());
    if replayed {
        out.insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
    } else {
        insert(out, header::LOCATION, &format!("/api/v1/uploads/{}", row.id));
    }
    response
}

/// `Upload-Limit`: the size limit and the time left, named as the resource's draft names it.
fn limit(state: &AppState, row: &ResumableRow) -> String {
    let left = (row.expires_at - Utc::now()).num_seconds().max(0);
    let age = if completes_at_length(row.interop) { "expires" } else { "max-age" };
    format!("max-size={}, {age}={left}", state.resumable.max_length())
}

/// The request's interop version, echoed on its answers.
fn interop(headers: &HeaderMap) -> Option<i32> {
    headers.get(&INTEROP)?.to_str().ok()?.trim().parse().ok().filter(|v| *v > 0)
}

/// A structured-field Boolean (`?1`, `?0`).
fn boolean(headers: &HeaderMap, name: &HeaderName) -> ApiResult<Option<bool>> {
    match headers.get(name).map(|v| v.as_bytes()) {
        None => Ok(None),
        Some(b"?1") => Ok(Some(true)),
        Some(b"?0") => Ok(Some(false)),
        Some(_) => Err(ApiError::InvalidRequest(format!("`{name}` must be ?1 or ?0"))),
    }
}

/// A structured-field Integer: at most 15 digits.
fn integer(headers: &HeaderMap, name: &HeaderName) -> ApiResult<Option<u64>> {
    let Some(value) = headers.get(name) else {
        return Ok(None);
    };
    let text = value.to_str().unwrap_or_default().trim();
    if text.is_empty() || text.len() > 15 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ApiError::InvalidRequest(format!("`{name}` must be a non-negative integer")));
    }
    text.parse().map(Some).map_err(|_| ApiError::InvalidRequest(format!("`{name}` must be a non-negative integer")))
}

/// The file's length: `Upload-Length`, or a complete request's `Content-Length`.
fn length(headers: &HeaderMap, complete: bool) -> ApiResult<u64> {
    let declared = integer(headers, &UPLOAD_LENGTH)?;
    let content = if complete { integer(headers, &header::CONTENT_LENGTH)? } else { None };
    match (declared, content) {
        (Some(a), Some(b)) if a != b => Err(ApiError::InconsistentUploadLength(format!(
            "Upload-Length says {a} bytes, the complete request's Content-Length {b}"
        ))),
        (Some(length), _) | (None, Some(length)) => Ok(length),
        (None, None) => Err(ApiError::UploadLengthRequired),
    }
}

fn has_body(headers: &HeaderMap) -> bool {
    headers.contains_key(header::TRANSFER_ENCODING)
        || headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).is_some_and(|v| v.trim() != "0")
}

/// The key, name and caption from `Upload-Metadata` (`key base64,key base64`).
fn creation(headers: &HeaderMap, length: u64, interop: Option<i32>) -> ApiResult<Creation> {
    let raw = headers.get(&UPLOAD_METADATA).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let mut key = None;
    let mut filename = None;
    let mut caption = None;
    for pair in raw.split(',') {
        let mut words = pair.trim().splitn(2, ' ');
        let name = words.next().unwrap_or_default();
        let value = words.next().map(str::trim).unwrap_or_default();
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(value)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .ok_or_else(|| {
                ApiError::InvalidRequest(format!("`Upload-Metadata`: `{name}` is not base64 of UTF-8 text"))
            });
        match name {
            "client_upload_id" => key = Some(ClientUploadId::parse(&decoded?)?),
            "filename" => filename = Some(decoded?),
            "caption" => caption = Some(Caption::parse(&decoded?)?),
            _ => {}
        }
    }
    Ok(Creation {
        key: key.ok_or(ApiError::InvalidClientUploadId)?,
        filename: FileName::parse(filename.as_deref()),
        caption: caption.flatten(),
        length,
        interop,
    })
}

fn insert(headers: &mut HeaderMap, name: HeaderName, value: &str) {
    if let Ok(value) = HeaderValue::from_str(value) {
        headers.insert(name, value);
    }
}
