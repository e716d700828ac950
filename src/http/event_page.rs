//! The guests' page as the event's organiser shapes it: the settings `PATCH /api/v1/events/{slug}`
//! takes beside the event's others (welcome text, cover, guest downloads, upload window), and
//! the cover itself, served to anyone who knows the slug so the join page can show it.

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use serde::{Deserialize, Deserializer, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::media::{Representation, Vary, send_derivative};
use super::openapi::{SlugParam, refusals, schemas};
use super::views::cover_url;
use crate::blobs::BlobKey;
use crate::db::Tx;
use crate::db::event_page::EventPageChange;
use crate::db::events::EventRow;
use crate::domain::{EventSlug, UploadStatus, UploadWindow, WelcomeText, parse_window_end, rfc3339};
use crate::error::{ApiError, ApiResult};
use crate::http::AppState;

/// The cover may change under its URL: stored, but asked again (`If-None-Match`) on every use.
const COVER_CACHE: &str = "public, no-cache";

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(cover))
}

/// `Some(value)` for a member that is present, null included (`Some(None)`); with
/// `#[serde(default)]`, an absent member stays `None`.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// The page's members of a change to the event. Unlike the event's other members, a nullable one
/// is cleared by `null`; absent, it stays as it is.
#[derive(Deserialize, ToSchema, Default)]
pub struct ChangeEventPage {
    /// Shown under the event's name on the guests' page, as plain text with its line breaks. Cleaned like a caption;
    /// at most 1000 characters, else 422 `invalid_welcome_text`. `null` or empty: no welcome text.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, max_length = 1000)]
    welcome_text: Option<Option<String>>,
    /// An upload of this event that is ready, approved, not hidden and not deleted, else 422 `invalid_cover`. `null`: no
    /// cover.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, format = Uuid)]
    cover_upload_id: Option<Option<String>>,
    /// false: a guest asking for another guest's original gets 403 `downloads_disabled`.
    guest_downloads: Option<bool>,
    /// RFC 3339; new uploads are refused before it. `null`: no start. Not before `uploads_open_until`: 422
    /// `invalid_upload_window`.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, format = DateTime)]
    uploads_open_from: Option<Option<String>>,
    /// RFC 3339; new uploads are refused from it on. `null`: no end.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, format = DateTime)]
    uploads_open_until: Option<Option<String>>,
}

impl ChangeEventPage {
    /// The change, its values checked on their own (how they fit the event is `apply`'s).
    pub fn parse(self) -> ApiResult<EventPageChange> {
        let welcome_text = self
            .welcome_text
            .map(|text| text.as_deref().map(WelcomeText::parse).transpose().map(|t| t.flatten()))
            .transpose()?
            .map(|text| text.map(WelcomeText::into_string));
        let cover_upload_id = self
            .cover_upload_id
            .map(|id| {
                id.map(|id| {
                    Uuid::try_parse(id.trim())
                        .map_err(|_| ApiError::InvalidCover("cover_upload_id must be an upload's id or null".into()))
                })
                .transpose()
            })
            .transpose()?;
        let end = |field, raw: Option<Option<String>>| {
            raw.map(|end| end.as_deref().map(|end| parse_window_end(field, end)).transpose()).transpose()
        };
        Ok(EventPageChange {
            welcome_text,
            cover_upload_id,
            guest_downloads: self.guest_downloads,
            uploads_open_from: end("uploads_open_from", self.uploads_open_from)?,
            uploads_open_until: end("uploads_open_until", self.uploads_open_until)?,
        })
    }
}

/// What the guests' page shows of the event, before and after joining.
#[derive(Serialize, ToSchema)]
pub struct PublicEventPage {
    /// Plain text with its line breaks (never HTML); null: none.
    #[schema(required = true, max_length = 1000)]
    welcome_text: Option<String>,
    /// `/api/v1/events/{slug}/cover`, served without credentials; null when the event has no cover.
    #[schema(required = true, examples("/api/v1/events/hochzeit-anna-ben-x7k2/cover"))]
    cover_url: Option<String>,
    /// false: the page offers no saving of other guests' originals (403 `downloads_disabled`).
    guest_downloads: bool,
    /// New uploads are refused before this time; null: no start.
    #[schema(required = true, format = DateTime)]
    uploads_open_from: Option<String>,
    /// New uploads are refused from this time on; null: no end.
    #[schema(required = true, format = DateTime)]
    uploads_open_until: Option<String>,
}

impl PublicEventPage {
    pub fn new(event: &EventRow) -> Self {
        Self {
            welcome_text: event.page.welcome_text.clone(),
            cover_url: cover_url(event),
            guest_downloads: event.page.guest_downloads,
            uploads_open_from: event.page.uploads_open_from.map(rfc3339),
            uploads_open_until: event.page.uploads_open_until.map(rfc3339),
        }
    }
}

/// Stores the page's change to `event_id` in `tx`, once the cover is known to be one of the
/// event's ready, shown photos.
pub async fn apply(tx: &mut Tx, event_id: Uuid, change: &EventPageChange) -> ApiResult<()> {
    if let Some(Some(upload_id)) = change.cover_upload_id {
        let why = match tx.cover_candidate(event_id, upload_id).await? {
            None => Some("no upload of this event has this id"),
            Some(c) if c.deleted => Some("this upload was deleted"),
            Some(c) if c.hidden => Some("this upload is hidden"),
            Some(c) if c.review == "pending" => Some("this upload waits for approval"),
            Some(c) if c.status != UploadStatus::Ready.as_str() => {
                Some("this upload has no preview yet (or it could not be processed)")
            }
            Some(_) => None,
        };
        if let Some(why) = why {
            return Err(ApiError::InvalidCover(format!("cover_upload_id: {why}")));
        }
    }
    Ok(tx.update_event_page(event_id, change).await?)
}

/// The event as changed: its upload window must still have its ends in order.
pub fn check(event: &EventRow, change: &EventPageChange) -> ApiResult<()> {
    if change.uploads_open_from.is_some() || change.uploads_open_until.is_some() {
        UploadWindow::new(event.page.uploads_open_from, event.page.uploads_open_until)?;
    }
    Ok(())
}

/// The event's cover
///
/// The preview (a JPEG, 1600–2048 px on its long edge) of the upload the organiser chose as the event's cover, to
/// anyone who knows the slug: the join page shows it before a guest has joined. While that upload's preview is
/// still being made (thumbs first), its thumb (JPEG, `ETag` `"{upload id}-thumb"`). 404 `not_found` when the event has
/// no cover, also while the chosen upload is hidden or deleted. The cover may change under this URL: it is stored
/// but revalidated (`ETag`, `If-None-Match` → 304).
#[utoipa::path(
    get,
    path = "/api/v1/events/{slug}/cover",
    operation_id = "getCover",
    tag = "events",
    security(()),
    params(SlugParam, ("If-None-Match" = Option<String>, Header, nullable = false, description = "The `ETag` (or `*`, or a comma-separated list): when it matches, 304. Compared weakly (RFC 9110): `W/\"…\"`, a list of tags and `*` match too.")),
    responses(
        (status = 200, description = "The cover.", content_type = "image/jpeg", body = inline(schemas::Jpeg), headers(("ETag" = inline(schemas::DerivativeETag), description = "`\"{upload id}-preview\"` (`\"{upload id}-thumb\"` while its preview is being made): changes when the cover does."), ("Cache-Control" = inline(schemas::Revalidate), description = "`public, no-cache`."), ("Content-Length" = u64, description = "Bytes in this response's body."), ("X-Content-Type-Options" = inline(schemas::NoSniff), description = "`nosniff`."))),
        (status = 304, description = "`If-None-Match` matched: no body.", headers(("ETag" = inline(schemas::DerivativeETag), description = "`\"{upload id}-preview\"` (`\"{upload id}-thumb\"` while its preview is being made): changes when the cover does."), ("Cache-Control" = inline(schemas::Revalidate), description = "`public, no-cache`."))),
        GetCoverRefusals,
    ),
)]
async fn cover(State(state): State<AppState>, Path(slug): Path<String>, headers: HeaderMap) -> ApiResult<Response> {
    let slug = EventSlug::parse(&slug)?;
    let event = state.db.event_by_slug(slug.as_str()).await?.ok_or(ApiError::EventNotFound)?;
    let upload_id = event.page.cover_upload_id.ok_or(ApiError::NotFound)?;
    let key = BlobKey::Preview { event_id: event.id, upload_id };
    let jpeg = Representation { key, etag: format!("\"{upload_id}-preview\""), content_type: "image/jpeg" };
    match send_derivative(&state, &jpeg, &headers, COVER_CACHE, Vary::Nothing).await {
        // Chosen while its preview is still being made (thumbs first): its thumb meanwhile, under
        // the thumb's tag, so the next revalidation brings the preview.
        Err(ApiError::NotFound) => {
            let key = BlobKey::Thumb { event_id: event.id, upload_id };
            let thumb = Representation { key, etag: format!("\"{upload_id}-thumb\""), content_type: "image/jpeg" };
            send_derivative(&state, &thumb, &headers, COVER_CACHE, Vary::Nothing).await
        }
        answer => answer,
    }
}

refusals!(GetCoverRefusals {
    404 => problem("`event_not_found`: no event with this slug. `not_found`: the event has no cover (none chosen, or its upload is hidden or deleted).", &[EventNotFound, NotFound]),
    500 => shared("Internal"),
});
