//! `guestbook`: short messages guests leave for the hosts. Written by the event's guests (with
//! `Idempotency-Key`, as comments), moderated like photos (the review gate, hiding, deleting),
//! listed newest first a page at a time, and announced on the live stream (`guestbook`,
//! `guestbook_removed`) so the page and the slideshow follow it.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, Query, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::extract::{JsonBody, Viewer};
use super::gallery::{DEFAULT_PAGE, decode_listing_cursor, encode_listing_cursor, page_size};
use super::idempotency::{Keyed, Write};
use super::openapi::{IdempotencyKeyParam, SlugParam, refusals, schemas};
use super::views::GuestRef;
use crate::db::events::EventRow;
use crate::db::guestbook::{MessageQuery, MessageRow};
use crate::db::live::LiveKind;
use crate::domain::{EventSlug, GuestbookText, Review, rfc3339};
use crate::error::{ApiError, ApiResult};
use crate::http::AppState;

pub fn routes(keyed: &Keyed) -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_messages))
        .routes(keyed.route(routes!(write_message)))
        .routes(keyed.route(routes!(change_message)))
        .routes(keyed.route(routes!(delete_message)))
}

/// Which listing a guestbook cursor pages through (`gallery::encode_listing_cursor`).
const GUESTBOOK_CURSOR: &[u8] = b"confetti guestbook cursor";

/// A message in the event's guestbook.
#[derive(Serialize, ToSchema)]
#[schema(as = GuestbookMessage)]
pub struct MessageJson {
    /// UUIDv7.
    pub id: Uuid,
    /// The event's slug.
    pub event: String,
    /// Who wrote it.
    pub guest: GuestRef,
    /// As stored: cleaned and trimmed, line breaks kept as `\n`. Plain text, never HTML.
    #[schema(min_length = 1, max_length = 500)]
    pub text: String,
    /// `pending` while it waits for the organiser's approval (written while the review gate was on), else `approved`.
    #[schema(value_type = String, pattern = "^(pending|approved)$")]
    pub review: &'static str,
    /// Hidden by the organiser: only its writer and the organiser see it.
    pub hidden: bool,
    #[schema(format = DateTime)]
    pub created_at: String,
}

impl MessageJson {
    pub fn new(row: &MessageRow) -> Self {
        Self {
            id: row.id,
            event: row.event_slug.clone(),
            guest: GuestRef { id: row.guest_id, display_name: row.guest_display_name.clone() },
            text: row.text.clone(),
            review: row.review.as_str(),
            hidden: row.hidden,
            created_at: rfc3339(row.created_at),
        }
    }
}

/// The message as `viewer` may see it: the organiser sees every message of their event, its
/// writer their own, anyone else of the event (guests, its screen) the shown, approved ones
/// while the event's gallery is shared. Anything else is 404 `not_found`.
pub async fn visible_message(state: &AppState, viewer: &Viewer, id: Uuid) -> ApiResult<MessageRow> {
    let row = state.db.message(id).await?.ok_or(ApiError::NotFound)?;
    let own = viewer.guest_id() == Some(row.guest_id);
    let allowed = viewer.is_organiser_of(row.event_id)
        || own
        || (viewer.can_see_event(row.event_id) && row.shared_with_guests(Utc::now()));
    if allowed { Ok(row) } else { Err(ApiError::NotFound) }
}

/// The event `slug` names, if the viewer may read it.
async fn readable_event(state: &AppState, viewer: &Viewer, slug: &str) -> ApiResult<EventRow> {
    let slug = EventSlug::parse(slug)?;
    let event = state.db.event_by_slug(slug.as_str()).await?.ok_or(ApiError::EventNotFound)?;
    if !viewer.can_see_event(event.id) {
        return Err(if viewer.guest.is_some() { ApiError::WrongEvent } else { ApiError::Forbidden });
    }
    Ok(event)
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct ListParams {
    /// Page size: default 50, clamped to 1–100 (any whole number is taken). Not a whole number: 400
    /// `invalid_request`. Empty: the default.
    #[param(value_type = Option<i64>)]
    limit: Option<String>,
    /// `next_cursor` of the previous page (opaque). Not one this server gave out for this event's guestbook: 400
    /// `invalid_cursor`. Empty: the first page.
    cursor: Option<String>,
    /// `pending`: only messages waiting for the organiser's approval (a guest gets their own); `approved`: only
    /// approved ones. Absent or empty: both, as far as the caller may see them. Another value: 400 `invalid_request`.
    #[param(value_type = Option<String>, pattern = "^(pending|approved)?$")]
    review: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[schema(as = GuestbookPage)]
struct MessagePage {
    /// Newest first.
    items: Vec<MessageJson>,
    /// Pass as `cursor` for the next (older) page; null on the last page.
    #[schema(required = true)]
    next_cursor: Option<String>,
}

/// List the event's guestbook
///
/// Newest first, keyset-paginated: a cursor stays valid while messages are added. For the event's guests, its
/// organiser and its screen. Like photos: a message waiting for approval (`review` `pending`) or hidden by the
/// organiser appears to the organiser and to its writer only; while the event's `gallery` is `own_uploads` or its
/// `gallery_opens_at` has not come yet, each guest reads only their own messages (and a screen none).
#[utoipa::path(
    get,
    path = "/api/v1/events/{slug}/guestbook",
    operation_id = "listGuestbook",
    tag = "guestbook",
    security(("guestBearer" = []), ("guestCookie" = []), ("organiserBearer" = []), ("organiserCookie" = []), ("screenCookie" = [])),
    params(SlugParam, ListParams),
    responses(
        (status = 200, description = "One page.", body = MessagePage),
        ListGuestbookRefusals,
    ),
)]
async fn list_messages(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(slug): Path<String>,
    Query(params): Query<ListParams>,
) -> ApiResult<Json<MessagePage>> {
    let event = readable_event(&state, &viewer, &slug).await?;
    let limit = match params.limit.as_deref() {
        None | Some("") => DEFAULT_PAGE,
        Some(raw) => page_size(raw)?,
    };
    let before = match params.cursor.as_deref() {
        None | Some("") => None,
        Some(raw) => Some(decode_listing_cursor(GUESTBOOK_CURSOR, event.id, raw)?),
    };
    let review = match params.review.as_deref() {
        None | Some("") => None,
        Some(raw) => Some(
            Review::parse(raw)
                .ok_or_else(|| ApiError::InvalidRequest("`review` must be `pending` or `approved`".into()))?,
        ),
    };
    let query = MessageQuery {
        event_id: event.id,
        viewer_guest: viewer.guest.as_ref().filter(|g| g.event_id == event.id).map(|g| g.id),
        organiser: viewer.is_organiser_of(event.id),
        shared: event.gallery.shared(event.gallery_opens_at, Utc::now()),
        before,
        limit: limit + 1,
        review,
    };
    let mut rows = state.db.list_messages(&query).await?;
    let next_cursor = if rows.len() as i64 > limit {
        rows.truncate(limit as usize);
        rows.last().map(|r| encode_listing_cursor(GUESTBOOK_CURSOR, event.id, r.id))
    } else {
        None
    };
    Ok(Json(MessagePage { items: rows.iter().map(MessageJson::new).collect(), next_cursor }))
}

#[derive(Deserialize, ToSchema)]
#[schema(as = WriteGuestbookMessage)]
struct NewMessage {
    /// Cleaned (control and format characters removed, line breaks kept) and trimmed; then 1–500 characters
    /// (counted as characters, not bytes), otherwise 422 `invalid_guestbook_message`. Other members are ignored.
    #[schema(min_length = 1, max_length = 500)]
    text: String,
}

/// Write in the guestbook (guest)
///
/// A guest of the event leaves a message for the hosts. While the event's review gate is on (`review_uploads`), it
/// waits for the organiser's approval (`review` `pending`): its writer and the organiser see it, nobody else. The
/// live stream announces it (`guestbook`). Organisers and screens do not write: 403 `forbidden`; a blocked guest:
/// 403 `guest_blocked`. The text is checked last (422 `invalid_guestbook_message`). Takes an `Idempotency-Key`
/// (parameter `IdempotencyKey`): a retry with the same key and body gets the message the first attempt wrote (201,
/// same id) instead of writing another; the same key with another body is 422 `idempotency_key_reused`.
#[utoipa::path(
    post,
    path = "/api/v1/events/{slug}/guestbook",
    operation_id = "writeGuestbookMessage",
    tag = "guestbook",
    security(("guestBearer" = []), ("guestCookie" = [])),
    params(SlugParam, IdempotencyKeyParam),
    request_body = NewMessage,
    responses(
        (status = 201, description = "Written. With `Idempotent-Replayed: true`: the recorded answer of an earlier request with the same `Idempotency-Key`; nothing was written this time.", body = MessageJson, headers(("Idempotent-Replayed" = inline(schemas::True), description = "`true`: this is the recorded answer to an earlier request with the same `Idempotency-Key` (parameter `IdempotencyKey`); the write was not run again. Absent when the write ran."))),
        WriteGuestbookMessageRefusals,
    ),
)]
async fn write_message(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(slug): Path<String>,
    write: Write,
    JsonBody(body): JsonBody<NewMessage>,
) -> ApiResult<Response> {
    let Some(guest) = viewer.guest.clone() else {
        return Err(ApiError::GuestbookForGuests);
    };
    let slug = EventSlug::parse(&slug).map_err(|_| ApiError::WrongEvent)?;
    let event = match state.db.event_by_slug(slug.as_str()).await? {
        Some(event) if event.id == guest.event_id => event,
        _ => return Err(ApiError::WrongEvent),
    };
    if guest.blocked {
        return Err(ApiError::GuestBlocked);
    }
    let text = GuestbookText::parse(&body.text)?;
    let mut tx = write.begin(&state.db).await?;
    let message = tx.insert_message(event.id, guest.id, text.as_str()).await?;
    tx.append_live(event.id, LiveKind::Message, message.id).await?;
    let response = tx.commit((StatusCode::CREATED, Json(MessageJson::new(&message))).into_response()).await?;
    state.live.poke();
    tracing::info!(message_id = %message.id, review = message.review.as_str(), "guestbook message written");
    Ok(response)
}

/// At least one member. Any other member, or neither: 400 `invalid_request`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct ChangeMessage {
    /// true: hidden from guests and screens (its writer and the organiser still see it); false: shown again.
    #[schema(nullable = false)]
    hidden: Option<bool>,
    /// true: approves a message waiting for review. false: 400 `invalid_request` (hide it instead).
    #[schema(nullable = false)]
    approved: Option<bool>,
}

/// `ChangeMessage` as the document has it: `{}` is refused, so at least one member.
struct ChangeMessageBody;

impl utoipa::PartialSchema for ChangeMessageBody {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        schemas::at_least_one_member(<ChangeMessage as utoipa::PartialSchema>::schema())
    }
}

impl ToSchema for ChangeMessageBody {}

/// The message an organiser may moderate, or its writer delete: one of the event `slug` names.
async fn message_in_event(state: &AppState, viewer: &Viewer, slug: &str, id: &str) -> ApiResult<MessageRow> {
    let id = Uuid::try_parse(id).map_err(|_| ApiError::NotFound)?;
    let row = visible_message(state, viewer, id).await?;
    if row.event_slug != slug {
        return Err(ApiError::NotFound);
    }
    Ok(row)
}

/// Hide, show or approve a guestbook message (organiser)
///
/// The event's organiser hides a message from guests and screens (its writer still sees it), shows it again, or
/// approves one waiting for review (`{"approved": true}`). Hiding announces `guestbook_removed` on the live stream;
/// showing or approving a message that is not hidden announces it as `guestbook`. Setting the value it already has
/// changes nothing and answers 200. Order: 401 / 403 `cross_origin` → the `Idempotency-Key` → 403 `forbidden` for
/// anyone who is not an organiser (whatever the id or body) → the message (404, also for another event's organiser)
/// → the body (400, 413). Takes an `Idempotency-Key` (parameter `IdempotencyKey`).
#[utoipa::path(
    patch,
    path = "/api/v1/events/{slug}/guestbook/{id}",
    operation_id = "changeGuestbookMessage",
    tag = "guestbook",
    security(("organiserBearer" = []), ("organiserCookie" = [])),
    params(SlugParam, ("id" = Uuid, Path, description = "The message's id. Not a UUID: 404 `not_found`."), IdempotencyKeyParam),
    request_body = inline(ChangeMessageBody),
    responses(
        (status = 200, description = "The message as changed. With `Idempotent-Replayed: true`: the recorded answer of an earlier request with the same `Idempotency-Key`; nothing was changed this time.", body = MessageJson, headers(("Idempotent-Replayed" = inline(schemas::True), description = "`true`: this is the recorded answer to an earlier request with the same `Idempotency-Key` (parameter `IdempotencyKey`); the write was not run again. Absent when the write ran."))),
        ChangeGuestbookMessageRefusals,
    ),
)]
async fn change_message(
    State(state): State<AppState>,
    viewer: Viewer,
    Path((slug, id)): Path<(String, String)>,
    write: Write,
    request: Request,
) -> ApiResult<Response> {
    let (parts, body) = request.into_parts();
    let allowed = async {
        if viewer.organiser.is_none() {
            return Err(ApiError::Forbidden);
        }
        let row = message_in_event(&state, &viewer, &slug, &id).await?;
        if !viewer.is_organiser_of(row.event_id) {
            return Err(ApiError::NotFound);
        }
        Ok(row)
    };
    let row = match allowed.await {
        Ok(row) => row,
        Err(refusal) => {
            super::extract::discard_body(body).await;
            return Err(refusal);
        }
    };
    let body: Bytes = super::extract::read_body(&parts.headers, body, super::extract::MAX_JSON_BODY).await?;
    let body: ChangeMessage = serde_json::from_slice(&body).map_err(|e| {
        ApiError::InvalidRequest(format!("the body must be {{\"hidden\": true|false, \"approved\": true}}: {e}"))
    })?;
    if body.hidden.is_none() && body.approved.is_none() {
        return Err(ApiError::InvalidRequest("the body must hold `hidden` or `approved`".into()));
    }
    if body.approved == Some(false) {
        return Err(ApiError::InvalidRequest("an approved message does not go back to review: hide it instead".into()));
    }
    let mut tx = write.begin(&state.db).await?;
    let mut changed = false;
    if let Some(hidden) = body.hidden {
        changed |= tx.set_message_hidden(row.id, hidden).await?;
    }
    if body.approved == Some(true) {
        changed |= tx.approve_message(row.id).await?;
    }
    let Some(now) = tx.message(row.id).await? else {
        tx.rollback().await?;
        return Err(ApiError::NotFound);
    };
    if changed {
        let kind = if now.hidden { LiveKind::MessageRemoved } else { LiveKind::Message };
        tx.append_live(now.event_id, kind, now.id).await?;
    }
    let response = tx.commit(Json(MessageJson::new(&now)).into_response()).await?;
    if changed {
        state.live.poke();
    }
    tracing::info!(message_id = %now.id, hidden = body.hidden, approved = body.approved, "guestbook message moderated");
    Ok(response)
}

/// Delete a guestbook message
///
/// By its writer or the event's organiser; for good (no undo). Announces `guestbook_removed` on the live stream. A
/// second delete is 404; a retry with the same `Idempotency-Key` (parameter `IdempotencyKey`) gets 204 again (with
/// `Idempotent-Replayed: true`).
#[utoipa::path(
    delete,
    path = "/api/v1/events/{slug}/guestbook/{id}",
    operation_id = "deleteGuestbookMessage",
    tag = "guestbook",
    security(("guestBearer" = []), ("guestCookie" = []), ("organiserBearer" = []), ("organiserCookie" = [])),
    params(SlugParam, ("id" = Uuid, Path, description = "The message's id. Not a UUID: 404 `not_found`."), IdempotencyKeyParam),
    responses(
        (status = 204, description = "Deleted. With `Idempotent-Replayed: true`: an earlier request with the same `Idempotency-Key` deleted it.", headers(("Idempotent-Replayed" = inline(schemas::True), description = "`true`: this is the recorded answer to an earlier request with the same `Idempotency-Key` (parameter `IdempotencyKey`); the write was not run again. Absent when the write ran."))),
        DeleteGuestbookMessageRefusals,
    ),
)]
async fn delete_message(
    State(state): State<AppState>,
    viewer: Viewer,
    Path((slug, id)): Path<(String, String)>,
    write: Write,
) -> ApiResult<Response> {
    let row = message_in_event(&state, &viewer, &slug, &id).await?;
    if viewer.guest_id() != Some(row.guest_id) && !viewer.is_organiser_of(row.event_id) {
        return Err(ApiError::Forbidden);
    }
    let mut tx = write.begin(&state.db).await?;
    if !tx.delete_message(row.id).await? {
        tx.rollback().await?;
        return Err(ApiError::NotFound);
    }
    tx.append_live(row.event_id, LiveKind::MessageRemoved, row.id).await?;
    let response = tx.commit(StatusCode::NO_CONTENT.into_response()).await?;
    state.live.poke();
    tracing::info!(message_id = %row.id, "guestbook message deleted");
    Ok(response)
}

refusals!(ListGuestbookRefusals {
    400 => problem("`limit` not a whole number or an unknown `review` (`invalid_request`), or a `cursor` this server did not give out for this event's guestbook (`invalid_cursor`).", &[InvalidRequest, InvalidCursor]),
    401 => shared("Unauthenticated"),
    403 => problem("`wrong_event`: a guest of another event. `forbidden`: only the organiser (or screen) of another event.", &[WrongEvent, Forbidden]),
    404 => shared("EventNotFound"),
    500 => shared("Internal"),
});

refusals!(WriteGuestbookMessageRefusals {
    400 => problem("Malformed JSON, wrong content type, `text` missing or not a string (`invalid_request`). `invalid_idempotency_key`: the `Idempotency-Key` is not 1–255 printable ASCII characters.", &[InvalidRequest, InvalidIdempotencyKey]),
    401 => shared("Unauthenticated"),
    403 => or_cross_origin("`forbidden`: an organiser or a screen (a message carries a guest's name). `wrong_event`: the guest joined another event (also when the slug names no event). `guest_blocked`: the organiser blocked this guest.", &[Forbidden, WrongEvent, GuestBlocked]),
    409 => shared("IdempotencyKeyInFlight"),
    413 => shared("BodyTooLarge"),
    422 => problem("`invalid_guestbook_message`: the text is empty (after cleaning and trimming) or longer than 500 characters. `idempotency_key_reused`: this `Idempotency-Key` was already used for a different request.", &[InvalidGuestbookMessage, IdempotencyKeyReused]),
    500 => shared("Internal"),
});

refusals!(ChangeGuestbookMessageRefusals {
    400 => problem("Malformed JSON, wrong content type, neither `hidden` nor `approved`, one not a boolean, `approved` false, or another member (`invalid_request`). `invalid_idempotency_key`: the `Idempotency-Key` is not 1–255 printable ASCII characters.", &[InvalidRequest, InvalidIdempotencyKey]),
    401 => shared("Unauthenticated"),
    403 => or_cross_origin("`forbidden`: the caller is not an organiser (whatever the id or body).", &[Forbidden]),
    404 => problem("Not a UUID, no such message, deleted, or not this event's (also for the organiser of another event).", &[NotFound]),
    409 => shared("IdempotencyKeyInFlight"),
    413 => shared("BodyTooLarge"),
    422 => shared("IdempotencyKeyReused"),
    500 => shared("Internal"),
});

refusals!(DeleteGuestbookMessageRefusals {
    400 => problem("`invalid_idempotency_key`: the `Idempotency-Key` is not 1–255 printable ASCII characters.", &[InvalidIdempotencyKey, InvalidRequest]),
    401 => shared("Unauthenticated"),
    403 => or_cross_origin("`forbidden`: another guest of the event (who can read the message but did not write it), or a screen.", &[Forbidden]),
    404 => problem("Not a UUID, no such message, already deleted, or not one the caller may see.", &[NotFound]),
    409 => shared("IdempotencyKeyInFlight"),
    413 => shared("BodyTooLarge"),
    422 => shared("IdempotencyKeyReused"),
    500 => shared("Internal"),
});
