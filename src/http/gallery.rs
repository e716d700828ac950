//! The event's gallery: its uploads, newest first, a page at a time (keyset-paginated, so a
//! cursor stays valid while photos are added): by upload, or by capture time (`order=taken`).

use axum::Json;
use axum::extract::{Path, Query, State};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::extract::Viewer;
use super::openapi::{SlugParam, refusals};
use super::views::UploadJson;
use crate::db::uploads::{ListOrder, ListQuery};
use crate::domain::{EventSlug, Review};
use crate::error::{ApiError, ApiResult};
use crate::http::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_uploads))
}

#[derive(Deserialize)]
struct ListParams {
    limit: Option<String>,
    cursor: Option<String>,
    review: Option<String>,
    order: Option<String>,
}

/// The page size's bounds: `list_uploads` clamps `limit` to them, and the document says them.
const MIN_PAGE: i64 = 1;
pub(super) const DEFAULT_PAGE: i64 = 50;
const MAX_PAGE: i64 = 100;

/// Written by hand so that the bounds the document states are the constants the server clamps to.
impl utoipa::IntoParams for ListParams {
    fn into_params(
        _: impl Fn() -> Option<utoipa::openapi::path::ParameterIn>,
    ) -> Vec<utoipa::openapi::path::Parameter> {
        use utoipa::openapi::path::{ParameterBuilder, ParameterIn};
        use utoipa::openapi::{ObjectBuilder, OneOfBuilder, Required, Type};
        // Any whole number is taken (and clamped), and so is an empty value: no bounds here that the
        // server does not refuse by.
        let empty = || ObjectBuilder::new().schema_type(Type::String).enum_values(Some([""]));
        let limit = OneOfBuilder::new()
            .item(ObjectBuilder::new().schema_type(Type::Integer).default(Some(DEFAULT_PAGE.into())))
            .item(empty());
        let description = format!(
            "Page size: default {DEFAULT_PAGE}, clamped to {MIN_PAGE}–{MAX_PAGE} (any whole number is taken, however large or small). Not a whole number: 400 `invalid_request`. Empty: the default."
        );
        let cursor = "`next_cursor` of the previous page (opaque). Not one this server gave out: 400 `invalid_cursor`. Empty: the first page.";
        vec![
            {
                let mut limit = ParameterBuilder::new()
                    .name("limit")
                    .parameter_in(ParameterIn::Query)
                    .required(Required::False)
                    .description(Some(description))
                    .schema(Some(limit))
                    .build();
                // The bounds, for programs: the server clamps to them rather than refusing.
                let clamp = serde_json::json!({"minimum": MIN_PAGE, "maximum": MAX_PAGE});
                limit.extensions.get_or_insert_with(Default::default).insert("x-clamp".into(), clamp);
                limit
            },
            ParameterBuilder::new()
                .name("cursor")
                .parameter_in(ParameterIn::Query)
                .required(Required::False)
                .description(Some(cursor))
                .schema(Some(ObjectBuilder::new().schema_type(Type::String)))
                .build(),
            ParameterBuilder::new()
                .name("review")
                .parameter_in(ParameterIn::Query)
                .required(Required::False)
                .description(Some("`pending`: only uploads waiting for the organiser's approval (the organiser's review list; a guest gets their own); `approved`: only approved ones. Absent or empty: both, as far as the caller may see them. Another value: 400 `invalid_request`."))
                .schema(Some(ObjectBuilder::new().schema_type(Type::String).enum_values(Some(["pending", "approved", ""]))))
                .build(),
            ParameterBuilder::new()
                .name("order")
                .parameter_in(ParameterIn::Query)
                .required(Required::False)
                .description(Some("`uploaded` (absent or empty: the same): newest upload first. `taken`: latest `captured_at` first (the time the photo or video was taken, else its upload time), ties by upload. A cursor pages through the order it was given out for: with the other order, 400 `invalid_cursor`. Another value: 400 `invalid_request`."))
                .schema(Some(ObjectBuilder::new().schema_type(Type::String).enum_values(Some(["uploaded", "taken", ""]))))
                .build(),
        ]
    }
}

#[derive(Serialize, ToSchema)]
struct UploadPage {
    /// Newest first, in the order asked for.
    items: Vec<UploadJson>,
    /// Pass as `cursor` for the next (older) page; null on the last page.
    #[schema(required = true)]
    next_cursor: Option<String>,
}

/// List an event's uploads
///
/// Newest first, keyset-paginated: a cursor stays valid while photos are added. By upload, or with `order=taken`
/// by the time each was taken (`captured_at`). For the event's guests and its organiser. A hidden upload appears to the organiser and to its own uploader (with status `hidden`), never to
/// other guests; so does one waiting for approval (`review` `pending`), and, while the event's `gallery` is
/// `own_uploads` or its `gallery_opens_at` has not come yet, every upload. Deleted uploads never appear.
#[utoipa::path(
    get,
    path = "/api/v1/events/{slug}/uploads",
    operation_id = "listUploads",
    tag = "uploads",
    security(("guestBearer" = []), ("guestCookie" = []), ("organiserBearer" = []), ("organiserCookie" = []), ("screenCookie" = [])),
    params(SlugParam, ListParams),
    responses(
        (status = 200, description = "One page.", body = UploadPage),
        ListUploadsRefusals,
    ),
)]
async fn list_uploads(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(slug): Path<String>,
    Query(params): Query<ListParams>,
) -> ApiResult<Json<UploadPage>> {
    let slug = EventSlug::parse(&slug)?;
    let now = chrono::Utc::now();
    // A guest's own event came with their credential (a page's poll every few seconds reads it
    // once, not twice); anyone else's is read by its slug.
    let (event_id, shared) = match viewer.guest.as_ref().filter(|g| g.event_slug == slug.as_str()) {
        Some(guest) => (guest.event_id, guest.event_gallery.shared(guest.event_gallery_opens_at, now)),
        None => {
            let event = state.db.event_by_slug(slug.as_str()).await?.ok_or(ApiError::EventNotFound)?;
            if !viewer.can_see_event(event.id) {
                return Err(if viewer.guest.is_some() { ApiError::WrongEvent } else { ApiError::Forbidden });
            }
            (event.id, event.gallery.shared(event.gallery_opens_at, now))
        }
    };
    let limit = match params.limit.as_deref() {
        None | Some("") => DEFAULT_PAGE,
        Some(raw) => page_size(raw)?,
    };
    let order = match params.order.as_deref() {
        None | Some("") | Some("uploaded") => ListOrder::Uploaded,
        Some("taken") => ListOrder::Taken,
        Some(_) => return Err(ApiError::InvalidRequest("`order` must be `uploaded` or `taken`".into())),
    };
    let before = match params.cursor.as_deref() {
        None | Some("") => None,
        Some(raw) => Some(decode_cursor(event_id, order, raw)?),
    };
    let review = match params.review.as_deref() {
        None | Some("") => None,
        Some(raw) => Some(
            Review::parse(raw)
                .ok_or_else(|| ApiError::InvalidRequest("`review` must be `pending` or `approved`".into()))?,
        ),
    };
    let query = ListQuery {
        event_id,
        viewer_guest: viewer.guest.as_ref().filter(|g| g.event_id == event_id).map(|g| g.id),
        organiser: viewer.is_organiser_of(event_id),
        before,
        order,
        limit: limit + 1,
        shared,
        review,
    };
    let mut rows = state.db.list_uploads(&query).await?;
    let next_cursor = if rows.len() as i64 > limit {
        rows.truncate(limit as usize);
        rows.last().map(|r| encode_cursor(event_id, order, r.id))
    } else {
        None
    };
    Ok(Json(UploadPage { items: rows.iter().map(UploadJson::new).collect(), next_cursor }))
}

/// `limit` clamped: a whole number too large (or too small) for 64 bits is clamped like any other.
pub(super) fn page_size(raw: &str) -> ApiResult<i64> {
    use std::num::IntErrorKind;
    match raw.parse::<i64>() {
        Ok(limit) => Ok(limit.clamp(MIN_PAGE, MAX_PAGE)),
        Err(e) if *e.kind() == IntErrorKind::PosOverflow => Ok(MAX_PAGE),
        Err(e) if *e.kind() == IntErrorKind::NegOverflow => Ok(MIN_PAGE),
        Err(_) => Err(ApiError::InvalidRequest("`limit` must be a whole number".into())),
    }
}

/// The last upload of a page, and a check that ties it to the event's listing in one order: a cursor this server
/// did not give out for this event and this order is refused rather than read as a position.
fn encode_cursor(event_id: Uuid, order: ListOrder, last: Uuid) -> String {
    encode_listing_cursor(listing(order), event_id, last)
}

fn decode_cursor(event_id: Uuid, order: ListOrder, raw: &str) -> ApiResult<Uuid> {
    decode_listing_cursor(listing(order), event_id, raw)
}

/// Which listing a cursor pages through. Upload order's is what it was before there were two orders: its cursors
/// given out then still page.
fn listing(order: ListOrder) -> &'static [u8] {
    match order {
        ListOrder::Uploaded => b"confetti gallery cursor",
        ListOrder::Taken => b"confetti gallery cursor, by capture time",
    }
}

/// The last item of a page of `listing` (a name of the listing: the gallery in one order, the guestbook), and a
/// check that ties it to that listing of the event: a cursor of another listing or event is refused.
pub(super) fn encode_listing_cursor(listing: &[u8], event_id: Uuid, last: Uuid) -> String {
    let mut bytes = last.as_bytes().to_vec();
    bytes.extend_from_slice(&cursor_check(listing, event_id, last));
    URL_SAFE_NO_PAD.encode(bytes)
}

pub(super) fn decode_listing_cursor(listing: &[u8], event_id: Uuid, raw: &str) -> ApiResult<Uuid> {
    URL_SAFE_NO_PAD
        .decode(raw)
        .ok()
        .filter(|bytes| bytes.len() == 16 + CURSOR_CHECK)
        .and_then(|bytes| {
            Uuid::from_slice(&bytes[..16]).ok().filter(|id| bytes[16..] == cursor_check(listing, event_id, *id))
        })
        .ok_or_else(|| ApiError::InvalidCursor("the cursor is not one this server gave out for this listing".into()))
}

const CURSOR_CHECK: usize = 6;

fn cursor_check(listing: &[u8], event_id: Uuid, last: Uuid) -> [u8; CURSOR_CHECK] {
    use sha2::{Digest, Sha256};
    let digest = Sha256::new().chain_update(listing).chain_update(event_id).chain_update(last).finalize();
    let mut check = [0; CURSOR_CHECK];
    check.copy_from_slice(&digest[..CURSOR_CHECK]);
    check
}

refusals!(ListUploadsRefusals {
    400 => problem("`limit` not a whole number, an unknown `review` or `order` (`invalid_request`), or a `cursor` not given out for this listing in this order (`invalid_cursor`).", &[InvalidRequest, InvalidCursor]),
    401 => shared("Unauthenticated"),
    403 => problem("`wrong_event`: a guest of another event. `forbidden`: only the organiser of another event.", &[WrongEvent, Forbidden]),
    404 => shared("EventNotFound"),
    500 => shared("Internal"),
});
