//! Re-picked photos: before sending the bytes of the files a guest picked, a client asks once, for
//! the whole pick, which of their SHA-256 hashes the guest has stored already. For each one the
//! server answers with the guest's own upload of those bytes, and the client sends nothing for it:
//! no new row, no quota charged again. The server stays the authority: it hashes every file it
//! stores (`uploads.sha256`) and answers from that, never from what a client says it sent.
//!
//! Only the asking guest's own uploads that are not deleted are found, so a hash never tells
//! anything about another guest's photos, nor brings back a photo that was deleted.

use std::collections::HashSet;

use axum::Json;
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::extract::{Guest, JsonBody};
use super::openapi::{SlugParam, refusals};
use super::views::UploadJson;
use crate::error::{ApiError, ApiResult};
use crate::http::AppState;

/// The most hashes one request may ask about: a large pick (a phone's whole afternoon) in one request,
/// about 34 KB of JSON, well within the 64 KiB a JSON body may have.
pub const MAX_KNOWN_HASHES: usize = 500;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(known_uploads))
}

/// The hashes of the files a guest picked.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KnownQuery {
    sha256: Vec<String>,
}

/// `KnownQuery` as the document has it: the shape of each hash too.
struct KnownUploadsQuery;

impl utoipa::PartialSchema for KnownUploadsQuery {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::{ArrayBuilder, ObjectBuilder, Type};
        let hash = ObjectBuilder::new().schema_type(Type::String).pattern(Some("^[0-9a-fA-F]{64}$"));
        let hashes = ArrayBuilder::new().items(hash).max_items(Some(MAX_KNOWN_HASHES)).description(Some(
            "The SHA-256 of each file's bytes, as 64 hexadecimal digits (either case); at most 500. Repeats are answered \
             once. Anything else: 400 `invalid_content_hashes`.",
        ));
        ObjectBuilder::new()
            .description(Some("The hashes of the files a guest picked."))
            .property("sha256", hashes)
            .required("sha256")
            .additional_properties(Some(utoipa::openapi::schema::AdditionalProperties::FreeForm(false)))
            .into()
    }
}

impl ToSchema for KnownUploadsQuery {}

/// The guest's uploads of the asked-for bytes.
#[derive(Serialize, ToSchema)]
#[schema(as = KnownUploads)]
struct Known {
    /// One Upload per asked-for hash the guest has stored (its `sha256` says which; the oldest when the guest
    /// stored the same bytes more than once), in no particular order. A hash without an entry is not stored for
    /// this guest: send the file.
    known: Vec<UploadJson>,
}

/// Which of these files the guest has stored already
///
/// A client asks this once for a whole pick, before sending its files, with each file's SHA-256. For each hash the
/// asking guest has stored (in an upload that is not deleted; hidden, rejected and waiting ones too) the answer
/// holds that upload: the client sends nothing for that file (nothing is stored or charged again), and its own new
/// `client_upload_id` for it is never sent. Another guest's uploads are never found; a deleted upload is not found
/// (the file is sent again, as a new upload). A read: it ignores `Idempotency-Key`; asking again is harmless.
#[utoipa::path(
    post,
    path = "/api/v1/events/{slug}/uploads/known",
    operation_id = "findKnownUploads",
    tag = "uploads",
    security(("guestBearer" = []), ("guestCookie" = [])),
    params(SlugParam),
    request_body = KnownUploadsQuery,
    responses(
        (status = 200, description = "The guest's uploads of the asked-for bytes; an empty list when none is stored.", body = Known),
        KnownUploadsRefusals,
    ),
)]
async fn known_uploads(
    State(state): State<AppState>,
    Guest(guest): Guest,
    Path(slug): Path<String>,
    JsonBody(query): JsonBody<KnownQuery>,
) -> ApiResult<Json<Known>> {
    if guest.event_slug != slug {
        return Err(ApiError::WrongEvent);
    }
    let hashes = content_hashes(query.sha256)?;
    if hashes.is_empty() {
        return Ok(Json(Known { known: Vec::new() }));
    }
    let rows = state.db.own_uploads_by_sha256(guest.id, &hashes).await?;
    // Oldest first: the first upload of each hash answers for it.
    let mut seen = HashSet::new();
    let known = rows.iter().filter(|row| seen.insert(row.sha256.clone())).map(UploadJson::new).collect();
    Ok(Json(Known { known }))
}

/// The asked-for hashes, lowercase (as the server stores them), each once; bounded in number and shape.
fn content_hashes(asked: Vec<String>) -> ApiResult<Vec<String>> {
    if asked.len() > MAX_KNOWN_HASHES {
        return Err(ApiError::InvalidContentHashes(format!(
            "{} hashes asked about; at most {MAX_KNOWN_HASHES} in one request",
            asked.len()
        )));
    }
    let mut hashes = Vec::with_capacity(asked.len());
    let mut seen = HashSet::new();
    for hash in asked {
        if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(ApiError::InvalidContentHashes("each `sha256` is 64 hexadecimal digits".into()));
        }
        let hash = hash.to_ascii_lowercase();
        if seen.insert(hash.clone()) {
            hashes.push(hash);
        }
    }
    Ok(hashes)
}

refusals!(KnownUploadsRefusals {
    400 => problem("`invalid_content_hashes`: a `sha256` entry that is not 64 hexadecimal digits, or more than 500 entries. `invalid_request`: the body is not a JSON object with (only) the array `sha256`.", &[InvalidContentHashes, InvalidRequest]),
    401 => problem("No valid guest credential.", &[Unauthenticated]),
    403 => or_cross_origin("The guest joined another event (also when the slug names no event).", &[WrongEvent]),
    413 => shared("BodyTooLarge"),
    500 => shared("Internal"),
});
