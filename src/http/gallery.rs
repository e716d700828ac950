//! The event's gallery: its uploads, newest first, a page at a time (keyset-paginated, so a
//! cursor stays valid while photos are added).

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
use crate::db::uploads::ListQuery;
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
}

/// The page size's bounds: `list_uploads` clamps `limit` to them, and the document says them.
const MIN_PAGE: i64 = 1;
const DEFAULT_PAGE: i64 = 50;
const MAX_PAGE: i64 = 100;

/// Written by hand so that the bounds the document states are the constants the server clamps to.
impl utoipa::IntoParams for ListParams {
    fn into_params(
        _: impl Fn() -> Option<utoipa::openapi::path::ParameterIn>,
    ) -> Vec<utoipa::openapi::path::Parameter> {
        use utoipa::openapi::path::{ParameterBuilder, ParameterIn};
        use utoipa::openapi::{ObjectBuilder, Required, Type};
        let limit = ObjectBuilder::new()
            .schema_type(Type::Integer)
            .default(Some(DEFAULT_PAGE.into()))
            .minimum(Some(MIN_PAGE))
            .maximum(Some(MAX_PAGE));
        let description = format!(
            "Page size: default {DEFAULT_PAGE}, clamped to {MIN_PAGE}–{MAX_PAGE}. Not a whole number: 400 `invalid_request`. Empty: the default."
        );
        let cursor = "`next_cursor` of the previous page (opaque). Not one this server gave out: 400 `invalid_cursor`. Empty: the first page.";
        vec![
            ParameterBuilder::new()
                .name("limit")
                .parameter_in(ParameterIn::Query)
                .required(Required::False)
                .description(Some(description))
                .schema(Some(limit))
                .build(),
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
                .schema(Some(ObjectBuilder::new().schema_type(Type::String).enum_values(Some(["pending", "approved"]))))
                .build(),
        ]
    }
}

#[derive(Serialize, ToSchema)]
struct UploadPage {
    /// Newest first.
    items: Vec<UploadJson>,
    /// Pass as `cursor` for the next (older) page; null on the last page.
    #[schema(required = true)]
    next_cursor: Option<String>,
}

/// List an event's uploads
///
/// Newest first, keyset-paginated: a cursor stays valid while photos are added. For the event's guests and its
/// organiser. A hidden upload appears to the organiser and to its own uploader (with status `hidden`), never to
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
    let event = state.db.event_by_slug(slug.as_str()).await?.ok_or(ApiError::EventNotFound)?;
    if !viewer.can_see_event(event.id) {
        return Err(if viewer.guest.is_some() { ApiError::WrongEvent } else { ApiError::Forbidden });
    }
    let limit = match params.limit.as_deref() {
        None | Some("") => DEFAULT_PAGE,
        Some(raw) => raw
            .parse::<i64>()
            .map_err(|_| ApiError::InvalidRequest("`limit` must be a whole number".into()))?
            .clamp(MIN_PAGE, MAX_PAGE),
    };
    let before = match params.cursor.as_deref() {
        None | Some("") => None,
        Some(raw) => Some(decode_cursor(raw)?),
    };
    let review = match params.review.as_deref() {
        None | Some("") => None,
        Some(raw) => Some(
            Review::parse(raw)
                .ok_or_else(|| ApiError::InvalidRequest("`review` must be `pending` or `approved`".into()))?,
        ),
    };
    let query = ListQuery {
        event_id: event.id,
        viewer_guest: viewer.guest.as_ref().filter(|g| g.event_id == event.id).map(|g| g.id),
        organiser: viewer.is_organiser_of(event.id),
        before,
        limit: limit + 1,
        shared: event.gallery.shared(event.gallery_opens_at, chrono::Utc::now()),
        review,
    };
    let mut rows = state.db.list_uploads(&query).await?;
    let next_cursor = if rows.len() as i64 > limit {
        rows.truncate(limit as usize);
        rows.last().map(|r| URL_SAFE_NO_PAD.encode(r.id.as_bytes()))
    } else {
        None
    };
    Ok(Json(UploadPage { items: rows.iter().map(UploadJson::new).collect(), next_cursor }))
}

fn decode_cursor(raw: &str) -> ApiResult<Uuid> {
    URL_SAFE_NO_PAD
        .decode(raw)
        .ok()
        .and_then(|bytes| Uuid::from_slice(&bytes).ok())
        .ok_or_else(|| ApiError::InvalidCursor("the cursor is not one this server gave out".into()))
}

refusals!(ListUploadsRefusals {
    400 => problem("`limit` not a whole number or an unknown `review` (`invalid_request`), or a malformed `cursor` (`invalid_cursor`).", &[InvalidRequest, InvalidCursor]),
    401 => shared("Unauthenticated"),
    403 => problem("`wrong_event`: a guest of another event. `forbidden`: only the organiser of another event.", &[WrongEvent, Forbidden]),
    404 => shared("EventNotFound"),
    500 => shared("Internal"),
});
