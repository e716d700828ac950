//! Events: created by the instance admin, changed by their organiser.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::event_page::{self, ChangeEventPage, PublicEventPage};
use super::extract::{Admin, JsonBody, Manager, Viewer};
use super::idempotency::{Keyed, Write};
use super::openapi::{IdempotencyKeyParam, SlugParam, either, refusals, schemas};
use super::views::{EventJson, HostGallery, HostModesJson};
use crate::db::events::{EventChange, EventRow};
use crate::domain::{EventName, EventSlug, Gallery, OrganiserPassword};
use crate::error::{ApiError, ApiResult};
use crate::events::{self, NewEvent};
use crate::http::AppState;

pub fn routes(keyed: &Keyed) -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(keyed.route(routes!(create))).routes(routes!(show)).routes(keyed.route(routes!(change)))
}

#[derive(Deserialize, ToSchema)]
struct CreateEvent {
    /// 1–120 characters after trimming; otherwise 400 `invalid_request`.
    #[schema(min_length = 1, max_length = 120)]
    name: String,
    /// At least 8 characters and at most 72 bytes; otherwise 422 `weak_password`.
    #[schema(min_length = 8)]
    organiser_password: String,
    /// Each guest's quota; absent or null: the server's default (1 GiB). Negative: 400 `invalid_request`.
    #[schema(minimum = 0)]
    guest_quota_bytes: Option<i64>,
    /// The event's total storage; absent or null: the server's default (100 GiB). Negative: 400 `invalid_request`.
    #[schema(minimum = 0)]
    storage_cap_bytes: Option<i64>,
}

/// Create an event (admin)
///
/// The instance admin creates an event: a fresh slug and join token, the organiser password stored as a bcrypt
/// hash. Only the admin bearer token is accepted (no cookie). Takes an `Idempotency-Key` (parameter
/// `IdempotencyKey`): a retry with the same key and body gets the event the first attempt created (201, the same
/// slug and join token) instead of creating another.
#[utoipa::path(
    post,
    path = "/api/v1/events",
    operation_id = "createEvent",
    tag = "events",
    security(("adminBearer" = [])),
    params(IdempotencyKeyParam),
    request_body = CreateEvent,
    responses(
        (status = 201, description = "Created. With `Idempotent-Replayed: true`: the recorded answer of an earlier request with the same `Idempotency-Key`; no event was created this time.", body = EventJson, headers(("Location" = String, description = "`/api/v1/events/{slug}`: the event (operation `showEvent`)."), ("Idempotent-Replayed" = inline(schemas::True), description = "`true`: this is the recorded answer to an earlier request with the same `Idempotency-Key` (parameter `IdempotencyKey`); the write was not run again. Absent when the write ran.")), links(("joinEvent" = (operation_id = "joinEvent", parameters(("slug" = "$response.body#/slug")), request_body = json!({"join_token": "$response.body#/join_token", "display_name": "Anna"}), description = "Guests join the new event with its `join_token` and a display name of their own.")), ("showEvent" = (operation_id = "showEvent", parameters(("slug" = "$response.body#/slug")), description = "The event, as its `Location` names it.")))),
        CreateEventRefusals,
    ),
)]
async fn create(
    State(state): State<AppState>,
    _: Admin,
    write: Write,
    JsonBody(body): JsonBody<CreateEvent>,
) -> ApiResult<Response> {
    let new = NewEvent {
        name: EventName::parse(&body.name)?,
        password: OrganiserPassword::parse(&body.organiser_password)?,
        guest_quota_bytes: body.guest_quota_bytes.unwrap_or(state.settings.guest_quota_bytes),
        storage_cap_bytes: body.storage_cap_bytes.unwrap_or(state.settings.event_storage_cap_bytes),
        name_chosen: true,
    };
    let prepared = events::prepare(&state.blocking, new).await?;
    let mut tx = write.begin(&state.db).await?;
    let event = events::insert(&mut tx, &prepared).await?;
    let location = format!("/api/v1/events/{}", event.slug);
    let answer =
        (StatusCode::CREATED, [(header::LOCATION, location)], Json(EventJson::new(&event, &state.settings.public_url)));
    let response = tx.commit(answer.into_response()).await?;
    tracing::info!(event_id = %event.id, slug = %event.slug, "event created");
    Ok(response)
}

/// An event as its join page shows it
///
/// Anyone who knows the slug (it is in the join link) sees the event's name, whether uploads are open, and the
/// guests' page as the organiser shaped it (welcome text, cover, guest downloads, upload window), so the page can
/// greet guests before they join. The event's organiser sees the whole event, join token included.
#[utoipa::path(
    get,
    path = "/api/v1/events/{slug}",
    operation_id = "showEvent",
    tag = "events",
    security((), ("organiserBearer" = []), ("organiserCookie" = [])),
    params(SlugParam),
    responses(
        (status = 200, description = "The public view, or the whole event for its organiser.", body = inline(ShownEvent)),
        ShowEventRefusals,
    ),
)]
// What the join page shows before anyone joined: the event's name, whether uploads are open
// and the guests' page. Its organiser sees the whole event, join token included.
async fn show(
    State(state): State<AppState>,
    viewer: Result<Viewer, ApiError>,
    Path(slug): Path<String>,
) -> ApiResult<Response> {
    let slug = EventSlug::parse(&slug)?;
    let event = state.db.event_by_slug(slug.as_str()).await?.ok_or(ApiError::EventNotFound)?;
    Ok(Json(ShownEvent::to(&state, viewer.ok().as_ref(), event)).into_response())
}

/// What `show` answers: the whole event to its organiser, the public view to anyone else.
#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum ShownEvent {
    Whole(EventJson),
    Public(PublicEvent),
}

impl ShownEvent {
    /// `event` as `viewer` is shown it (by `show`, and in a guest's event page).
    pub(crate) fn to(state: &AppState, viewer: Option<&Viewer>, event: EventRow) -> Self {
        if viewer.is_some_and(|v| v.is_organiser_of(event.id)) {
            return ShownEvent::Whole(EventJson::new(&event, &state.settings.public_url));
        }
        let modes = HostModesJson::new(&event);
        ShownEvent::Public(PublicEvent {
            page: PublicEventPage::new(&event),
            slug: event.slug,
            name: event.name,
            uploads_open: event.uploads_open,
            modes,
        })
    }
}

// `anyOf`, not `oneOf`: the whole event has every member of the public view, so an organiser's answer matches
// both. A client tells them apart by `join_token`, which only the whole event has.
either!(
    ShownEvent: AnyOfBuilder(EventJson, PublicEvent),
    "The whole `Event` for its organiser (it has `join_token`), else the `PublicEvent`."
);

/// The event's name, whether uploads are open, the guests' page and the host modes: what its join page shows before
/// anyone joined.
#[derive(Serialize, ToSchema)]
pub(crate) struct PublicEvent {
    slug: String,
    name: String,
    uploads_open: bool,
    #[serde(flatten)]
    page: PublicEventPage,
    #[serde(flatten)]
    modes: HostModesJson,
}

/// Absent or null members are left as they are, except the page's nullable members (`welcome_text`,
/// `cover_upload_id`, `uploads_open_from`, `uploads_open_until`) and `gallery_opens_at`, which `null` clears.
#[derive(Deserialize, ToSchema)]
struct ChangeEvent {
    /// 1–120 characters after trimming; otherwise 400 `invalid_request`.
    #[schema(min_length = 1, max_length = 120)]
    name: Option<String>,
    /// false: new uploads are refused with 403 `uploads_closed` (replays of existing ones still answer 200).
    uploads_open: Option<bool>,
    /// Negative: 400 `invalid_request`.
    #[schema(minimum = 0)]
    guest_quota_bytes: Option<i64>,
    /// Negative: 400 `invalid_request`. Lower than `used_bytes` is allowed: new uploads are then refused.
    #[schema(minimum = 0)]
    storage_cap_bytes: Option<i64>,
    #[serde(flatten)]
    page: ChangeEventPage,
    /// true: new uploads wait for the organiser's approval (`review` `pending`). Switching it off approves nothing:
    /// uploads waiting stay pending until approved.
    review_uploads: Option<bool>,
    /// `everyone` or `own_uploads` (guests see their own photos only); another value: 400 `invalid_request`.
    #[schema(value_type = Option<HostGallery>)]
    gallery: Option<String>,
    /// RFC 3339: until then guests see their own photos only. Unlike the other members, null clears it (the gallery
    /// is open) and only an absent member leaves it as it is. Not a timestamp: 400 `invalid_request`.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, format = DateTime)]
    gallery_opens_at: Option<Option<DateTime<Utc>>>,
}

/// Tells a member given as null (`Some(None)`) from an absent one (`None`, by `#[serde(default)]`).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// Change an event (organiser or admin)
///
/// The event's organiser (or the instance admin, by bearer token, for any event) renames it, opens or closes
/// uploads, changes the guest quota, sets the host modes (the review gate, a private gallery, a gallery that opens at a
/// set time) or shapes the guests' page: welcome text, cover, guest downloads, upload window (`null` clears those
/// and `gallery_opens_at`). Takes an `Idempotency-Key` (parameter `IdempotencyKey`): a retry with the same
/// key and body gets the first attempt's answer without changing the event again. Credentials first: another
/// event's organiser gets 403 `forbidden` whatever the body; for the admin an unknown slug is 404
/// `event_not_found`, decided before the body.
#[utoipa::path(
    patch,
    path = "/api/v1/events/{slug}",
    operation_id = "changeEvent",
    tag = "events",
    security(("organiserBearer" = []), ("organiserCookie" = []), ("adminBearer" = [])),
    params(SlugParam, IdempotencyKeyParam),
    request_body = ChangeEvent,
    responses(
        (status = 200, description = "The event as changed. With `Idempotent-Replayed: true`: the recorded answer of an earlier request with the same `Idempotency-Key` — the event as that request left it, not necessarily as it is now; nothing was changed this time.", body = EventJson, headers(("Idempotent-Replayed" = inline(schemas::True), description = "`true`: this is the recorded answer to an earlier request with the same `Idempotency-Key` (parameter `IdempotencyKey`); the write was not run again. Absent when the write ran."))),
        ChangeEventRefusals,
    ),
)]
// Credentials first: the organiser of another event is refused whatever the body holds,
// so the body is parsed only once the slug is known to be theirs.
async fn change(
    State(state): State<AppState>,
    manager: Manager,
    Path(slug): Path<String>,
    write: Write,
    body: Result<JsonBody<ChangeEvent>, ApiError>,
) -> ApiResult<Response> {
    let event = manager.event(&state, &slug).await?;
    let JsonBody(body) = body?;
    if body.guest_quota_bytes.is_some_and(|q| q < 0) {
        return Err(ApiError::InvalidRequest("guest_quota_bytes must not be negative".into()));
    }
    if body.storage_cap_bytes.is_some_and(|c| c < 0) {
        return Err(ApiError::InvalidRequest("storage_cap_bytes must not be negative".into()));
    }
    let change = EventChange {
        name: body.name.as_deref().map(EventName::parse).transpose()?.map(|n| n.as_str().to_owned()),
        uploads_open: body.uploads_open,
        guest_quota_bytes: body.guest_quota_bytes,
        storage_cap_bytes: body.storage_cap_bytes,
        review_uploads: body.review_uploads,
        gallery: body
            .gallery
            .as_deref()
            .map(|g| {
                Gallery::parse(g)
                    .ok_or_else(|| ApiError::InvalidRequest("`gallery` must be `everyone` or `own_uploads`".into()))
            })
            .transpose()?,
        gallery_opens_at: body.gallery_opens_at,
    };
    let page = body.page.parse()?;
    let mut tx = write.begin(&state.db).await?;
    event_page::apply(&mut tx, event.id, &page).await?;
    let Some(event) = tx.update_event(event.id, &change).await? else {
        tx.rollback().await?;
        return Err(ApiError::EventNotFound);
    };
    event_page::check(&event, &page)?;
    tx.commit(Json(EventJson::new(&event, &state.settings.public_url)).into_response()).await
}

refusals!(CreateEventRefusals {
    400 => problem("Malformed JSON, wrong content type, missing member, empty or over-long `name`, negative `guest_quota_bytes`. `invalid_idempotency_key`: the `Idempotency-Key` is not 1–255 printable ASCII characters.", &[InvalidRequest, InvalidIdempotencyKey]),
    401 => problem("No credential, or a bearer token that is neither the admin token nor a known guest or organiser token.", &[Unauthenticated]),
    403 => or_cross_origin("A valid guest or organiser credential instead of the admin token (`forbidden`).", &[Forbidden]),
    409 => shared("IdempotencyKeyInFlight"),
    413 => shared("BodyTooLarge"),
    422 => problem("`idempotency_key_reused`: this `Idempotency-Key` was already used for a different request. `weak_password`: `organiser_password` shorter than 8 characters or longer than 72 bytes.", &[WeakPassword, IdempotencyKeyReused]),
    500 => shared("Internal"),
});

refusals!(ChangeEventRefusals {
    400 => problem("Malformed JSON, wrong content type, empty or over-long `name`, negative `guest_quota_bytes`, an unknown `gallery`, a `gallery_opens_at` that is not an RFC 3339 timestamp. `invalid_idempotency_key`: the `Idempotency-Key` is not 1–255 printable ASCII characters.", &[InvalidRequest, InvalidIdempotencyKey]),
    401 => shared("Unauthenticated"),
    403 => or_cross_origin("`forbidden`: a guest, or the organiser of another event (also when the slug names no event).", &[Forbidden]),
    404 => problem("The admin named no event (or a deleted one), or the event was deleted while the request ran.", &[EventNotFound]),
    409 => shared("IdempotencyKeyInFlight"),
    413 => shared("BodyTooLarge"),
    422 => problem("`idempotency_key_reused`: this `Idempotency-Key` was already used for a different request. `invalid_welcome_text`: over 1000 characters after cleaning. `invalid_cover`: `cover_upload_id` is not an upload of this event that is ready, shown and not deleted. `invalid_upload_window`: an end that is not an RFC 3339 time, or `uploads_open_from` not before `uploads_open_until` (as the event would be).", &[IdempotencyKeyReused, InvalidWelcomeText, InvalidCover, InvalidUploadWindow]),
    500 => shared("Internal"),
});

refusals!(ShowEventRefusals {
    404 => shared("EventNotFound"),
});
