//! Blocking a guest: one action of the organiser hides every photo the guest sent and refuses
//! their new uploads, likes and comments (403 `guest_blocked`); unblocking allows them again,
//! and on request shows again the photos the block hid.
//! The organiser also reads one guest (their name and how many photos they sent, for the
//! question asked before blocking) and the list of blocked guests.

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use chrono::SecondsFormat;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::extract::Organiser;
use super::idempotency::{Keyed, Write};
use super::openapi::{IdempotencyKeyParam, SlugParam, refusals, schemas};
use crate::db::blocks::GuestStandingRow;
use crate::db::events::EventRow;
use crate::db::live::LiveKind;
use crate::domain::{Review, UploadStatus};
use crate::error::{ApiError, ApiResult};
use crate::http::AppState;

/// The blocked-guests list shows at most this many.
const MAX_LISTED: i64 = 500;

pub fn routes(keyed: &Keyed) -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(standing)).routes(routes!(blocked)).routes(keyed.route(routes!(block, unblock)))
}

/// A guest as the organiser moderates them.
#[derive(Serialize, ToSchema)]
#[schema(as = GuestStanding)]
struct GuestStandingJson {
    id: Uuid,
    display_name: String,
    /// Their uploads that are not deleted, hidden ones included.
    #[schema(minimum = 0)]
    upload_count: i64,
    /// When the organiser blocked them; null while they are not blocked.
    #[schema(format = DateTime, required = true)]
    blocked_at: Option<String>,
}

impl GuestStandingJson {
    fn new(row: &GuestStandingRow) -> Self {
        Self {
            id: row.id,
            display_name: row.display_name.clone(),
            upload_count: row.upload_count,
            blocked_at: row.blocked_at.map(|t| t.to_rfc3339_opts(SecondsFormat::Millis, true)),
        }
    }
}

#[derive(Serialize, ToSchema)]
struct BlockedGuests {
    /// The most recently blocked first; at most 500.
    #[schema(max_items = 500)]
    items: Vec<GuestStandingJson>,
}

/// The event, when the request is its organiser's (a co-organiser's too); the guest's id.
fn organiser_of(event: EventRow, slug: &str, id: Option<&str>) -> ApiResult<(EventRow, Uuid)> {
    if event.slug != slug {
        return Err(ApiError::Forbidden);
    }
    let id = id.map_or(Ok(Uuid::nil()), |id| Uuid::try_parse(id).map_err(|_| ApiError::NotFound))?;
    Ok((event, id))
}

/// One guest (organiser)
///
/// The guest's name, how many photos they sent (not deleted, hidden ones included) and whether they are blocked:
/// what the dashboard says before blocking them.
#[utoipa::path(
    get,
    path = "/api/v1/events/{slug}/guests/{id}",
    operation_id = "getGuestStanding",
    tag = "organiser",
    security(("organiserBearer" = []), ("organiserCookie" = [])),
    params(SlugParam, ("id" = Uuid, Path, description = "The guest's id (`guest.id` of their uploads). Not a UUID: 404 `not_found`.")),
    responses(
        (status = 200, description = "The guest.", body = GuestStandingJson),
        GuestStandingRefusals,
    ),
)]
async fn standing(
    State(state): State<AppState>,
    Organiser(event): Organiser,
    Path((slug, id)): Path<(String, String)>,
) -> ApiResult<Json<GuestStandingJson>> {
    let (event, id) = organiser_of(event, &slug, Some(&id))?;
    let row = state.db.guest_standing(event.id, id).await?.ok_or(ApiError::NotFound)?;
    Ok(Json(GuestStandingJson::new(&row)))
}

/// Blocked guests (organiser)
///
/// The event's blocked guests, the most recently blocked first (at most 500).
#[utoipa::path(
    get,
    path = "/api/v1/events/{slug}/blocked-guests",
    operation_id = "listBlockedGuests",
    tag = "organiser",
    security(("organiserBearer" = []), ("organiserCookie" = [])),
    params(SlugParam),
    responses(
        (status = 200, description = "The blocked guests.", body = BlockedGuests),
        BlockedGuestsRefusals,
    ),
)]
async fn blocked(
    State(state): State<AppState>,
    Organiser(event): Organiser,
    Path(slug): Path<String>,
) -> ApiResult<Json<BlockedGuests>> {
    let (event, _) = organiser_of(event, &slug, None)?;
    let items = state.db.blocked_guests(event.id, MAX_LISTED).await?.iter().map(GuestStandingJson::new).collect();
    Ok(Json(BlockedGuests { items }))
}

/// Block a guest (organiser)
///
/// One action: every upload of the guest that is shown is hidden (each announced as `removed` on the live stream;
/// the organiser and the guest still see them, with status `hidden`), and from now on the guest's new uploads are
/// refused with 403 `guest_blocked`, and so are their likes and comments. A replay of an upload the guest sent before
/// still answers as before (200). Blocking a blocked guest keeps the first `blocked_at` and hides what was shown
/// again since. Takes an `Idempotency-Key` (parameter `IdempotencyKey`): a retry with the same key gets the first
/// attempt's answer without running again.
#[utoipa::path(
    post,
    path = "/api/v1/events/{slug}/guests/{id}/block",
    operation_id = "blockGuest",
    tag = "organiser",
    security(("organiserBearer" = []), ("organiserCookie" = [])),
    params(SlugParam, ("id" = Uuid, Path, description = "The guest's id. Not a UUID: 404 `not_found`."), IdempotencyKeyParam),
    responses(
        (status = 200, description = "Blocked: the guest as they are now. With `Idempotent-Replayed: true`: the recorded answer of an earlier request with the same `Idempotency-Key`; nothing was changed this time.", body = GuestStandingJson, headers(("Idempotent-Replayed" = inline(schemas::True), description = "`true`: this is the recorded answer to an earlier request with the same `Idempotency-Key` (parameter `IdempotencyKey`); the write was not run again. Absent when the write ran."))),
        BlockGuestRefusals,
    ),
)]
async fn block(
    State(state): State<AppState>,
    Organiser(event): Organiser,
    Path((slug, id)): Path<(String, String)>,
    write: Write,
) -> ApiResult<Response> {
    set_blocked(&state, event, &slug, &id, write, Change::Block).await
}

/// Unblock a guest (organiser)
///
/// The guest may upload, like and comment again. The photos that blocking hid stay hidden, unless
/// `show_photos=true`: then every photo of theirs that blocking hid (not one the organiser hid or rejected by hand)
/// is shown again in the same transaction, each ready and approved one announced as `upload` on the live stream.
/// Unblocking a guest who is not blocked changes nothing else and answers 200. Takes an `Idempotency-Key`
/// (parameter `IdempotencyKey`).
#[utoipa::path(
    delete,
    path = "/api/v1/events/{slug}/guests/{id}/block",
    operation_id = "unblockGuest",
    tag = "organiser",
    security(("organiserBearer" = []), ("organiserCookie" = [])),
    params(SlugParam, ("id" = Uuid, Path, description = "The guest's id. Not a UUID: 404 `not_found`."), ("show_photos" = Option<bool>, Query, nullable = false, description = "`true`: show again the photos that blocking hid. Absent or `false`: they stay hidden. Another value: 400 `invalid_request`."), IdempotencyKeyParam),
    responses(
        (status = 200, description = "Not blocked (any more): the guest as they are now. With `Idempotent-Replayed: true`: the recorded answer of an earlier request with the same `Idempotency-Key`.", body = GuestStandingJson, headers(("Idempotent-Replayed" = inline(schemas::True), description = "`true`: this is the recorded answer to an earlier request with the same `Idempotency-Key` (parameter `IdempotencyKey`); the write was not run again. Absent when the write ran."))),
        BlockGuestRefusals,
    ),
)]
async fn unblock(
    State(state): State<AppState>,
    Organiser(event): Organiser,
    Path((slug, id)): Path<(String, String)>,
    query: Result<Query<Unblock>, QueryRejection>,
    write: Write,
) -> ApiResult<Response> {
    let Query(unblock) = query.map_err(|e| ApiError::InvalidRequest(e.body_text()))?;
    let change = if unblock.show_photos.unwrap_or(false) { Change::UnblockAndShow } else { Change::Unblock };
    set_blocked(&state, event, &slug, &id, write, change).await
}

/// What unblocking does besides.
#[derive(Deserialize)]
struct Unblock {
    show_photos: Option<bool>,
}

/// A guest's standing as the organiser changes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Change {
    Block,
    Unblock,
    /// Unblock, and show again the photos the block hid.
    UnblockAndShow,
}

/// Blocks the guest (hiding their shown uploads, each announced as removed) or unblocks them
/// (showing again what the block hid, when asked), and answers the guest as they are now.
async fn set_blocked(
    state: &AppState,
    event: EventRow,
    slug: &str,
    id: &str,
    write: Write,
    change: Change,
) -> ApiResult<Response> {
    let (event, id) = organiser_of(event, slug, Some(id))?;
    let mut tx = write.begin(&state.db).await?;
    let news = match change {
        Change::Block => tx
            .block_guest(event.id, id)
            .await?
            .map(|hidden| hidden.into_iter().map(|upload_id| (LiveKind::Removed, upload_id)).collect::<Vec<_>>()),
        Change::Unblock => tx.unblock_guest(event.id, id).await?.then(Vec::new),
        Change::UnblockAndShow if tx.unblock_guest(event.id, id).await? => Some(
            tx.show_block_hidden(id)
                .await?
                .into_iter()
                .filter(|(_, status, review)| *status == UploadStatus::Ready && *review == Review::Approved)
                .map(|(upload_id, _, _)| (LiveKind::Upload, upload_id))
                .collect(),
        ),
        Change::UnblockAndShow => None,
    };
    let Some(news) = news else {
        tx.rollback().await?;
        return Err(ApiError::NotFound);
    };
    for (kind, upload_id) in &news {
        tx.append_live(event.id, *kind, *upload_id).await?;
    }
    let row = tx.guest_standing(event.id, id).await?.ok_or(ApiError::NotFound)?;
    let response = tx.commit(Json(GuestStandingJson::new(&row)).into_response()).await?;
    if !news.is_empty() {
        state.live.poke();
    }
    tracing::info!(event_id = %event.id, guest_id = %id, ?change, announced = news.len(), "guest blocked or unblocked");
    Ok(response)
}

refusals!(GuestStandingRefusals {
    401 => shared("Unauthenticated"),
    403 => problem("`forbidden`: a guest, or the organiser of another event.", &[Forbidden]),
    404 => problem("Not a UUID, or no such guest of this event.", &[NotFound]),
    500 => shared("Internal"),
});

refusals!(BlockedGuestsRefusals {
    401 => shared("Unauthenticated"),
    403 => problem("`forbidden`: a guest, or the organiser of another event.", &[Forbidden]),
    500 => shared("Internal"),
});

refusals!(BlockGuestRefusals {
    400 => problem("`invalid_idempotency_key`: the `Idempotency-Key` is not 1–255 printable ASCII characters. `invalid_request`: unblocking with a `show_photos` that is not `true` or `false`.", &[InvalidIdempotencyKey, InvalidRequest]),
    401 => shared("Unauthenticated"),
    403 => or_cross_origin("`forbidden`: a guest, or the organiser of another event.", &[Forbidden]),
    404 => problem("Not a UUID, or no such guest of this event.", &[NotFound]),
    409 => shared("IdempotencyKeyInFlight"),
    413 => shared("BodyTooLarge"),
    422 => shared("IdempotencyKeyReused"),
    500 => shared("Internal"),
});
