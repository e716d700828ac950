//! Media bytes: an upload's original and its derivatives, to whoever may see the upload, by
//! cookie as well as by bearer token (an `<img>` sends only cookies). Content never changes
//! under a URL, so it is cached for a year; the original is validated by its SHA-256 and
//! served in ranges, a derivative (made once per upload) by its upload id, kind and format.
//!
//! A derivative is WebP or JPEG by the request's `Accept` (`negotiate`), so both answers say
//! `Vary: Accept`, and each format has its own `ETag`. `Cache-Control` stays `private,
//! immutable`: a browser keys its cache by URL and keeps the `Vary`, so an `<img>` (which lists
//! WebP) and a `fetch()` (which sends `*/*`) of the same URL get each their own answer, and a
//! shared cache is not allowed to store either.

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use object_store::GetRange;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::extract::Viewer;
use super::negotiate::{ImageForm, preferred_form};
use super::openapi::{UploadIdParam, refusals, schemas};
use super::uploads::visible_upload;
use crate::blobs::{BlobKey, Read};
use crate::domain::UploadStatus;
use crate::error::{ApiError, ApiResult};
use crate::http::AppState;

const CACHE_FOREVER: &str = "private, max-age=31536000, immutable";

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(original)).routes(routes!(thumb)).routes(routes!(preview))
}

/// One stored form of a derivative and how it is labelled.
pub(super) struct Representation {
    pub key: BlobKey,
    /// Quoted.
    pub etag: String,
    pub content_type: &'static str,
}

fn not_modified(headers: &HeaderMap, etag: &str, cache_control: &'static str) -> Option<Response> {
    let current = etag.trim_matches('"').as_bytes();
    let mut fields = headers.get_all(header::IF_NONE_MATCH).iter();
    fields.any(|field| none_match_lists(field.as_bytes(), current)).then(|| {
        (StatusCode::NOT_MODIFIED, [(header::ETAG, etag.to_owned()), (header::CACHE_CONTROL, cache_control.into())])
            .into_response()
    })
}

/// Whether an `If-None-Match` field matches the entity tag whose opaque part is `current`:
/// `*`, or a list of entity tags one of which is weakly equal to it (RFC 9110 §13.1.2: the
/// opaque tags are the same, either of them marked weak `W/` or not). An entity tag may hold a
/// comma, so the list is read tag by tag rather than split; a malformed rest matches nothing,
/// and the full answer is sent.
fn none_match_lists(field: &[u8], current: &[u8]) -> bool {
    let mut rest = field;
    loop {
        while let [b' ' | b'\t' | b',', tail @ ..] = rest {
            rest = tail;
        }
        let tag = match rest {
            [] => return false,
            [b'*', ..] => return true,
            [b'W', b'/', b'"', tail @ ..] | [b'"', tail @ ..] => tail,
            _ => return false,
        };
        let Some(end) = tag.iter().position(|b| *b == b'"') else {
            return false;
        };
        if &tag[..end] == current {
            return true;
        }
        rest = &tag[end + 1..];
    }
}

/// The thumb's bytes
///
/// An AVIF, a WebP or a JPEG (by `Accept`, below) 400 px on its long edge (the contract allows 320–512; a smaller original is
/// not enlarged), pixels turned upright, without any EXIF (no orientation, no location). To the same principals as the Upload, by cookie as well
/// as by bearer token (an `<img>` sends only cookies). 404 until it is made: use `urls.thumb` of the Upload, which
/// is null until then (and stays null when processing `failed`). Made once per upload, it never changes: cached for
/// a year, validated by `ETag`. No ranges (a `Range` header is ignored: 200, whole file). Every format answers with
/// `Vary: Accept` and each has its own `ETag`.
///
/// AVIF (or WebP) when the request's `Accept` lists `image/avif` (or `image/webp`) with a weight (`q`) above 0 and at
/// least JPEG's (`image/jpeg`, else `image/*`, else `*/*`); of those, the higher weight, and AVIF on a tie; otherwise
/// JPEG. A wildcard alone (`*/*`, `image/*`) means neither. Photos whose derivatives were made before AVIF (or WebP)
/// existed do not have it and get the next format `Accept` allows.
#[utoipa::path(
    get,
    path = "/api/v1/uploads/{id}/thumb",
    operation_id = "getThumb",
    tag = "media",
    security(("guestBearer" = []), ("guestCookie" = []), ("organiserBearer" = []), ("organiserCookie" = []), ("screenCookie" = [])),
    params(UploadIdParam, ("If-None-Match" = Option<String>, Header, nullable = false, description = "The `ETag` (or `*`, or a comma-separated list): when it matches, 304. Compared weakly (RFC 9110): `W/\"…\"`, a list of tags and `*` match too.")),
    responses(
        (status = 200, description = "The thumb: AVIF, WebP or JPEG by `Accept`.", content((inline(schemas::Avif) = "image/avif"), (inline(schemas::Webp) = "image/webp"), (inline(schemas::Jpeg) = "image/jpeg")), headers(("Vary" = inline(schemas::VaryAccept), description = "`Accept`: AVIF, WebP or JPEG by the request's `Accept`."), ("ETag" = inline(schemas::DerivativeETag), description = "`\"{upload id}-thumb\"` for the JPEG, `\"{upload id}-thumb-avif\"` for the AVIF, `\"{upload id}-thumb-webp\"` for the WebP: a derivative is made once per upload and never changes."), ("Cache-Control" = inline(schemas::Immutable), description = "`private, max-age=31536000, immutable`."), ("Content-Length" = u64, description = "Bytes in this response's body."), ("X-Content-Type-Options" = inline(schemas::NoSniff), description = "`nosniff`."))),
        (status = 304, description = "`If-None-Match` matched the `ETag` of the format `Accept` selects: no body.", headers(("Vary" = inline(schemas::VaryAccept), description = "`Accept`."), ("ETag" = inline(schemas::DerivativeETag), description = "`\"{upload id}-thumb\"` for the JPEG, `\"{upload id}-thumb-avif\"` for the AVIF, `\"{upload id}-thumb-webp\"` for the WebP: a derivative is made once per upload and never changes."), ("Cache-Control" = inline(schemas::Immutable), description = "`private, max-age=31536000, immutable`."))),
        GetThumbRefusals,
    ),
)]
async fn thumb(state: State<AppState>, viewer: Viewer, id: Path<String>, headers: HeaderMap) -> ApiResult<Response> {
    derivative(state, viewer, id, headers, Derivative::Thumb).await
}

/// The preview's bytes
///
/// A JPEG 1600–2048 px on its long edge (never larger than the original: a smaller original keeps its size), sRGB,
/// pixels turned upright, without any EXIF (no orientation, no location). To the same principals as the Upload, by cookie
/// as well as by bearer token (an `<img>` sends only cookies). 404 while the upload is `processing`: use `urls.preview`
/// of the Upload, which is null until it is `ready` (and stays null when processing `failed`). Thumbs first: an upload
/// is `ready` (shown) once its thumb exists, and its preview is made after every waiting upload's thumb — seconds
/// later, at a burst of uploads a minute or so; until then this URL answers 307 to the thumb's URL (`Cache-Control:
/// no-store`: ask again later for the preview itself). Made once per upload, the preview never
/// changes: cached for a year, validated by `ETag`. No ranges (a `Range` header is ignored: 200, whole file).
/// Whatever `Accept` says: a WebP preview was not smaller at the same quality within the time a derivative may
/// take (docs/benchmarks.md).
#[utoipa::path(
    get,
    path = "/api/v1/uploads/{id}/preview",
    operation_id = "getPreview",
    tag = "media",
    security(("guestBearer" = []), ("guestCookie" = []), ("organiserBearer" = []), ("organiserCookie" = []), ("screenCookie" = [])),
    params(UploadIdParam, ("If-None-Match" = Option<String>, Header, nullable = false, description = "The `ETag` (or `*`, or a comma-separated list): when it matches, 304. Compared weakly (RFC 9110): `W/\"…\"`, a list of tags and `*` match too.")),
    responses(
        (status = 200, description = "The preview.", content_type = "image/jpeg", body = inline(schemas::Jpeg), headers(("ETag" = inline(schemas::DerivativeETag), description = "`\"{upload id}-preview\"`: a derivative is made once per upload and never changes."), ("Cache-Control" = inline(schemas::Immutable), description = "`private, max-age=31536000, immutable`."), ("Content-Length" = u64, description = "Bytes in this response's body."), ("X-Content-Type-Options" = inline(schemas::NoSniff), description = "`nosniff`."))),
        (status = 304, description = "`If-None-Match` matched: no body.", headers(("ETag" = inline(schemas::DerivativeETag), description = "`\"{upload id}-preview\"`: a derivative is made once per upload and never changes."), ("Cache-Control" = inline(schemas::Immutable), description = "`private, max-age=31536000, immutable`."))),
        (status = 307, description = "The upload is shown by its thumb and its preview is not made yet: the thumb's URL, in the preview's place for now. No body.", headers(("Location" = inline(schemas::ThumbLocation), description = "`/api/v1/uploads/{id}/thumb`."), ("Cache-Control" = inline(schemas::NoStore), description = "`no-store`: the preview follows under this URL."))),
        GetPreviewRefusals,
    ),
)]
async fn preview(state: State<AppState>, viewer: Viewer, id: Path<String>, headers: HeaderMap) -> ApiResult<Response> {
    derivative(state, viewer, id, headers, Derivative::Preview).await
}

#[derive(Clone, Copy)]
enum Derivative {
    Thumb,
    Preview,
}

/// A derivative: 404 until the worker made it (the Upload's `urls` say when).
async fn derivative(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
    headers: HeaderMap,
    kind: Derivative,
) -> ApiResult<Response> {
    let id = Uuid::try_parse(&id).map_err(|_| ApiError::NotFound)?;
    let row = visible_upload(&state, &viewer, id).await?;
    if row.status != UploadStatus::Ready {
        return Err(ApiError::NotFound);
    }
    let (event_id, upload_id) = (row.event_id, row.id);
    if matches!(kind, Derivative::Preview) && row.preview_pending {
        return Ok(thumb_in_place(upload_id));
    }
    let (jpeg, name, vary, form) = match kind {
        Derivative::Thumb => (
            BlobKey::Thumb { event_id, upload_id },
            "thumb",
            Vary::Accept,
            preferred_form(&headers, row.avif_thumb, row.webp_thumb),
        ),
        // Previews are JPEG only (`media::derive::FORMATS` says why).
        Derivative::Preview => (BlobKey::Preview { event_id, upload_id }, "preview", Vary::Nothing, ImageForm::Jpeg),
    };
    // Uploads derived before AVIF or WebP existed have fewer forms (their row says so); one
    // whose form is missing from the store for whatever reason gets the JPEG, never a 404.
    let other = match form {
        ImageForm::Avif => Some((BlobKey::ThumbAvif { event_id, upload_id }, "avif", "image/avif")),
        ImageForm::Webp => Some((BlobKey::ThumbWebp { event_id, upload_id }, "webp", "image/webp")),
        ImageForm::Jpeg => None,
    };
    if let Some((key, suffix, content_type)) = other {
        let other = Representation { key, etag: format!("\"{upload_id}-{name}-{suffix}\""), content_type };
        match send_derivative(&state, &other, &headers, CACHE_FOREVER, Vary::Accept).await {
            Err(ApiError::NotFound) => tracing::warn!(%upload_id, name, suffix, "a derivative is missing; JPEG sent"),
            other => return other,
        }
    }
    let jpeg = Representation { key: jpeg, etag: format!("\"{upload_id}-{name}\""), content_type: "image/jpeg" };
    send_derivative(&state, &jpeg, &headers, CACHE_FOREVER, vary).await
}

/// The preview of an upload shown before its preview was made (thumbs first): a redirect to its
/// thumb, which the page has usually loaded already. Not to be kept: the preview follows.
fn thumb_in_place(upload_id: Uuid) -> Response {
    let location = format!("/api/v1/uploads/{upload_id}/thumb");
    let headers = [(header::LOCATION, location), (header::CACHE_CONTROL, "no-store".to_owned())];
    (StatusCode::TEMPORARY_REDIRECT, headers).into_response()
}

/// Whether an answer depends on the request's `Accept`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Vary {
    Nothing,
    Accept,
}

/// A derivative's bytes under its `ETag` (304 when `If-None-Match` matches it), cached as
/// `cache_control` says; 404 when the store does not hold it. The caller has checked that the
/// viewer may see the upload; a small derivative is then answered from this instance's memory
/// (`DerivativeCache`) when it holds it, and kept there when read from the store.
pub(super) async fn send_derivative(
    state: &AppState,
    representation: &Representation,
    headers: &HeaderMap,
    cache_control: &'static str,
    vary: Vary,
) -> ApiResult<Response> {
    let etag = representation.etag.as_str();
    let mut response = match not_modified(headers, etag, cache_control) {
        Some(response) => response,
        None => match state.derivative_cache.get(representation.key) {
            Some(bytes) => {
                representation_response(bytes.len() as u64, Body::from(bytes), representation, cache_control)?
            }
            None => {
                let cache = &state.derivative_cache;
                let (len, body) = match state.blobs.get_whole_if(representation.key, |len| cache.keeps(len)).await {
                    Err(object_store::Error::NotFound { .. }) => return Err(ApiError::NotFound),
                    Ok(Read::Whole(bytes)) => {
                        cache.insert(representation.key, bytes.clone());
                        (bytes.len() as u64, Body::from(bytes))
                    }
                    Ok(Read::Streamed(blob)) => (blob.meta.size, Body::from_stream(blob.into_stream())),
                    Err(e) => return Err(e.into()),
                };
                representation_response(len, body, representation, cache_control)?
            }
        },
    };
    if vary == Vary::Accept {
        response.headers_mut().insert(header::VARY, HeaderValue::from_static("Accept"));
    }
    Ok(response)
}

fn representation_response(
    len: u64,
    body: Body,
    representation: &Representation,
    cache_control: &'static str,
) -> ApiResult<Response> {
    let etag = representation.etag.as_str();
    let mut response = Response::new(body);
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(representation.content_type));
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache_control));
    h.insert(header::ETAG, HeaderValue::from_str(etag).map_err(anyhow::Error::from)?);
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    Ok(response)
}

/// The original's bytes
///
/// To the same principals as the Upload, by cookie as well as by bearer token (an `<img>` sends only cookies);
/// while the event's `guest_downloads` is off, a guest gets only their own originals (another guest's: 403
/// `downloads_disabled`). Content never changes under this URL: cached for a year, validated by `ETag` (the SHA-256). A single byte range
/// gives 206; several ranges or another unit are ignored (200, whole file).
#[utoipa::path(
    get,
    path = "/api/v1/uploads/{id}/original",
    operation_id = "getOriginal",
    tag = "media",
    security(("guestBearer" = []), ("guestCookie" = []), ("organiserBearer" = []), ("organiserCookie" = []), ("screenCookie" = [])),
    params(UploadIdParam, ("If-None-Match" = Option<String>, Header, nullable = false, description = "The `ETag` (or `*`, or a comma-separated list): when it matches, 304. Compared weakly (RFC 9110): `W/\"…\"`, a list of tags and `*` match too."), ("Range" = Option<String>, Header, nullable = false, description = "`bytes=first-last`, `bytes=first-` or `bytes=-suffix`: 206. Starting at or beyond the end: 416.", example = "bytes=0-1023")),
    responses(
        (status = 200, description = "The whole original, as its `content_type`.", content((inline(schemas::Original) = "image/*"), (inline(schemas::Original) = "video/*")), headers(("ETag" = inline(schemas::Sha256ETag), description = "The original's SHA-256, quoted: `\"<sha256 hex>\"`. Content never changes under a URL."), ("Cache-Control" = inline(schemas::Immutable), description = "`private, max-age=31536000, immutable`."), ("Accept-Ranges" = inline(schemas::Bytes), description = "`bytes`."), ("Content-Length" = u64, description = "Bytes in this response's body."), ("X-Content-Type-Options" = inline(schemas::NoSniff), description = "`nosniff`."))),
        (status = 206, description = "The requested byte range.", content((inline(schemas::Original) = "image/*"), (inline(schemas::Original) = "video/*")), headers(("Content-Range" = inline(schemas::ContentRange), description = "`bytes {first}-{last}/{length}` on 206."), ("ETag" = inline(schemas::Sha256ETag), description = "The original's SHA-256, quoted: `\"<sha256 hex>\"`. Content never changes under a URL."), ("Cache-Control" = inline(schemas::Immutable), description = "`private, max-age=31536000, immutable`."), ("Accept-Ranges" = inline(schemas::Bytes), description = "`bytes`."), ("Content-Length" = u64, description = "Bytes in this response's body."), ("X-Content-Type-Options" = inline(schemas::NoSniff), description = "`nosniff`."))),
        (status = 304, description = "`If-None-Match` matched: no body.", headers(("ETag" = inline(schemas::Sha256ETag), description = "The original's SHA-256, quoted: `\"<sha256 hex>\"`. Content never changes under a URL."), ("Cache-Control" = inline(schemas::Immutable), description = "`private, max-age=31536000, immutable`."))),
        GetOriginalRefusals,
    ),
)]
async fn original(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let id = Uuid::try_parse(&id).map_err(|_| ApiError::NotFound)?;
    let row = visible_upload(&state, &viewer, id).await?;
    // With guest downloads off, a guest still gets their own originals; the organiser all. A
    // screen plays videos from their originals: it may, unless downloads are off.
    let others = !viewer.is_organiser_of(row.event_id) && viewer.guest_id() != Some(row.guest_id);
    let downloads_off = match (&viewer.guest, &viewer.screen) {
        (Some(g), _) => !g.guest_downloads,
        (None, Some(_)) => state.db.event_by_id(row.event_id).await?.is_none_or(|e| !e.page.guest_downloads),
        (None, None) => false,
    };
    if others && downloads_off {
        return Err(ApiError::DownloadsDisabled);
    }
    let etag = format!("\"{}\"", row.sha256);
    let len = u64::try_from(row.bytes).unwrap_or(0);

    if let Some(response) = not_modified(&headers, &etag, CACHE_FOREVER) {
        return Ok(response);
    }

    let range = match headers.get(header::RANGE).and_then(|v| v.to_str().ok()) {
        None => None,
        Some(raw) => match parse_range(raw, len) {
            RangeRequest::Satisfiable(start, end) => Some((start, end)),
            RangeRequest::Ignored => None,
            RangeRequest::Unsatisfiable => return Err(ApiError::RangeNotSatisfiable { len }),
        },
    };

    let get_range = range.map(|(start, end)| GetRange::Bounded(start..end + 1));
    let blob = state.blobs.get_original(row.event_id, id, get_range).await?;

    let (status, body_len) = match range {
        Some((start, end)) => (StatusCode::PARTIAL_CONTENT, end - start + 1),
        None => (StatusCode::OK, len),
    };
    let mut response = Response::new(Body::from_stream(blob.into_stream()));
    *response.status_mut() = status;
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_str(&row.content_type).map_err(anyhow::Error::from)?);
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(body_len));
    h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(CACHE_FOREVER));
    h.insert(header::ETAG, HeaderValue::from_str(&etag).map_err(anyhow::Error::from)?);
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    if let Some((start, end)) = range {
        h.insert(
            header::CONTENT_RANGE,
            HeaderValue::from_str(&format!("bytes {start}-{end}/{len}")).map_err(anyhow::Error::from)?,
        );
    }
    Ok(response)
}

#[derive(Debug, PartialEq)]
enum RangeRequest {
    /// Inclusive first and last byte.
    Satisfiable(u64, u64),
    /// Not a single byte range this server serves partially: send the whole file.
    Ignored,
    Unsatisfiable,
}

fn parse_range(raw: &str, len: u64) -> RangeRequest {
    let Some(spec) = raw.trim().strip_prefix("bytes=") else {
        return RangeRequest::Ignored;
    };
    if spec.contains(',') {
        return RangeRequest::Ignored;
    }
    let Some((first, last)) = spec.trim().split_once('-') else {
        return RangeRequest::Ignored;
    };
    let (first, last) = (first.trim(), last.trim());
    let range = match (first.parse::<u64>(), last.parse::<u64>()) {
        (Ok(start), Ok(end)) if start <= end => (start, end.min(len.saturating_sub(1))),
        (Ok(start), Err(_)) if last.is_empty() => (start, len.saturating_sub(1)),
        (Err(_), Ok(suffix)) if first.is_empty() && suffix > 0 => (len.saturating_sub(suffix), len.saturating_sub(1)),
        _ => return RangeRequest::Ignored,
    };
    if len == 0 || range.0 >= len { RangeRequest::Unsatisfiable } else { RangeRequest::Satisfiable(range.0, range.1) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_read_as_rfc_9110_says() {
        assert_eq!(parse_range("bytes=0-9", 100), RangeRequest::Satisfiable(0, 9));
        assert_eq!(parse_range("bytes=90-", 100), RangeRequest::Satisfiable(90, 99));
        assert_eq!(parse_range("bytes=-10", 100), RangeRequest::Satisfiable(90, 99));
        assert_eq!(parse_range("bytes=50-500", 100), RangeRequest::Satisfiable(50, 99));
        assert_eq!(parse_range("bytes=100-", 100), RangeRequest::Unsatisfiable);
        assert_eq!(parse_range("bytes=0-1,5-6", 100), RangeRequest::Ignored);
        assert_eq!(parse_range("items=0-1", 100), RangeRequest::Ignored);
    }

    #[test]
    fn if_none_match_compares_entity_tags_weakly_as_rfc_9110_says() {
        let matches = |field: &str| none_match_lists(field.as_bytes(), b"abc");
        assert!(matches("\"abc\""));
        assert!(matches("W/\"abc\""));
        assert!(matches("*"));
        assert!(matches("\"x\", W/\"abc\""));
        assert!(matches("\"a,b\",\"abc\""), "a comma inside a tag is part of it");
        assert!(!matches("\"abcd\", \"ab\""));
        assert!(!matches("w/\"abc\""), "the weak marker is case-sensitive");
        assert!(!matches("abc"), "an unquoted tag is malformed");
        assert!(!matches("\"abc"));
        assert!(!matches(""));
    }
}

refusals!(GetOriginalRefusals {
    401 => shared("Unauthenticated"),
    403 => problem("`downloads_disabled`: the organiser turned guest downloads off and this is another guest's photo.", &[DownloadsDisabled]),
    404 => problem("No such upload, deleted, or not visible to the caller.", &[NotFound]),
    416 => with_header(problem("The range starts at or beyond the end of the file.", &[RangeNotSatisfiable]), "Content-Range", schemas::UnsatisfiedRange::schema(), "`bytes */{length}`."),
    500 => shared("Internal"),
});

refusals!(GetThumbRefusals {
    401 => shared("Unauthenticated"),
    404 => problem("No such upload, deleted, or not visible to the caller; or its thumb does not exist (yet): the upload is still `processing`, or processing `failed`.", &[NotFound]),
    500 => shared("Internal"),
});

refusals!(GetPreviewRefusals {
    401 => shared("Unauthenticated"),
    404 => problem("No such upload, deleted, or not visible to the caller; or its preview does not exist (yet): the upload is still `processing`, or processing `failed`.", &[NotFound]),
    500 => shared("Internal"),
});
