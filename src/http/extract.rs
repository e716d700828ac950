//! Who is asking: extractors for the three principals, read from the request's `Credentials`
//! (resolved once per request, `http::credentials`); and the request-body readers every JSON
//! route shares.

use std::time::Duration;

use axum::body::{Body, BodyDataStream, Bytes};
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, header};
use bytes::BytesMut;
use futures_util::StreamExt;

use super::credentials::{Credentials, Screen, bearer, cookie};
use crate::auth::{ORGANISER_COOKIE, ORGANISER_PREFIX};
use crate::db::events::EventRow;
use crate::db::guests::GuestRow;
use crate::error::ApiError;
use crate::http::AppState;

/// A guest of some event (handlers check which).
pub struct Guest(pub GuestRow);

/// The organiser of one event.
pub struct Organiser(pub EventRow);

/// The instance admin.
pub struct Admin;

/// Who may change an event: the instance admin (any event) or an organiser (their own).
pub enum Manager {
    Admin,
    Organiser(Box<EventRow>),
}

impl Manager {
    /// The event `slug` names, if this principal may manage it: for the admin the event with
    /// that slug (404 `event_not_found` when there is none); for an organiser their own event,
    /// and 403 `forbidden` for any other slug, known or not.
    pub async fn event(self, state: &AppState, slug: &str) -> Result<EventRow, ApiError> {
        match self {
            Manager::Organiser(event) if event.slug == slug => Ok(*event),
            Manager::Organiser(_) => Err(ApiError::Forbidden),
            Manager::Admin => {
                let slug = crate::domain::EventSlug::parse(slug)?;
                state.db.event_by_slug(slug.as_str()).await?.ok_or(ApiError::EventNotFound)
            }
        }
    }
}

/// Whoever may read an event's photos: one of its guests or its organiser (or both, when a
/// browser holds both cookies), or its venue screen, which sees what every guest sees and
/// has no photos of its own.
pub struct Viewer {
    pub guest: Option<GuestRow>,
    pub organiser: Option<EventRow>,
    pub screen: Option<Screen>,
}

impl Viewer {
    pub fn can_see_event(&self, event_id: uuid::Uuid) -> bool {
        self.is_organiser_of(event_id)
            || self.guest.as_ref().is_some_and(|g| g.event_id == event_id)
            || self.is_screen_of(event_id)
    }

    pub fn is_screen_of(&self, event_id: uuid::Uuid) -> bool {
        self.screen.as_ref().is_some_and(|s| s.event_id == event_id)
    }

    pub fn is_organiser_of(&self, event_id: uuid::Uuid) -> bool {
        self.organiser.as_ref().is_some_and(|e| e.id == event_id)
    }

    pub fn guest_id(&self) -> Option<uuid::Uuid> {
        self.guest.as_ref().map(|g| g.id)
    }

    /// 401 unless at least one valid guest, organiser or screen credential is present; 403
    /// `cross_origin` when it is a cookie on another site's write.
    fn of(credentials: Credentials) -> Result<Self, ApiError> {
        let viewer = match credentials {
            Credentials::Bearer { guest, organiser, screen, .. } => Viewer { guest, organiser, screen },
            Credentials::Cookies { guest, organiser, screen, cross_origin } => {
                if (guest.is_some() || organiser.is_some() || screen.is_some()) && cross_origin {
                    return Err(ApiError::CrossOrigin);
                }
                Viewer { guest, organiser, screen }
            }
        };
        if viewer.guest.is_none() && viewer.organiser.is_none() && viewer.screen.is_none() {
            return Err(ApiError::Unauthenticated);
        }
        Ok(viewer)
    }
}

impl FromRequestParts<AppState> for Guest {
    type Rejection = ApiError;

    /// The bearer token when there is one, else the guest cookie; never the organiser's.
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        match Credentials::of(parts, state).await? {
            Credentials::Bearer { guest, .. } => guest.map(Guest).ok_or(ApiError::Unauthenticated),
            Credentials::Cookies { guest, cross_origin, .. } => {
                let guest = guest.ok_or(ApiError::Unauthenticated)?;
                if cross_origin {
                    return Err(ApiError::CrossOrigin);
                }
                Ok(Guest(guest))
            }
        }
    }
}

impl FromRequestParts<AppState> for Organiser {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let viewer = Viewer::from_request_parts(parts, state).await?;
        viewer.organiser.map(Organiser).ok_or(ApiError::Forbidden)
    }
}

impl FromRequestParts<AppState> for Viewer {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        Viewer::of(Credentials::of(parts, state).await?)
    }
}

impl FromRequestParts<AppState> for Admin {
    type Rejection = ApiError;

    /// The admin token as bearer; any other valid credential is 403, none 401.
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        match Credentials::of(parts, state).await? {
            Credentials::Bearer { admin: true, .. } => Ok(Admin),
            credentials => Viewer::of(credentials).and(Err(ApiError::Forbidden)),
        }
    }
}

impl FromRequestParts<AppState> for Manager {
    type Rejection = ApiError;

    /// The admin token as bearer, else an organiser as `Organiser` finds one; a guest is 403.
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        match Credentials::of(parts, state).await? {
            Credentials::Bearer { admin: true, .. } => Ok(Manager::Admin),
            credentials => Viewer::of(credentials)?
                .organiser
                .map(|event| Manager::Organiser(Box::new(event)))
                .ok_or(ApiError::Forbidden),
        }
    }
}

/// Who a keyed write belongs to, for scoping its `Idempotency-Key`: the admin, a guest, an
/// event's organiser (all of that organiser's sessions share one scope). `None` when the
/// request carries no valid credential (the handler refuses it as it would without a key).
pub async fn principal(parts: &mut Parts, state: &AppState) -> Option<String> {
    let credentials = Credentials::of(parts, state).await.ok()?;
    if let Credentials::Bearer { admin: true, .. } = credentials {
        return Some("admin".to_owned());
    }
    let viewer = Viewer::of(credentials).ok()?;
    let guest = viewer.guest.map(|g| format!("guest:{}", g.id));
    let organiser = viewer.organiser.map(|e| format!("organiser:{}", e.id));
    let screen = viewer.screen.map(|s| format!("screen:{}", s.event_id));
    Some([guest, organiser, screen].into_iter().flatten().collect::<Vec<_>>().join("+"))
}

/// The organiser token a request authenticates with, chosen as `Organiser` chooses: a bearer
/// token wins; without one, the organiser cookie.
pub fn organiser_token(headers: &HeaderMap) -> Option<&str> {
    let token = match bearer(headers) {
        Some(token) => token,
        None => cookie(headers, ORGANISER_COOKIE)?,
    };
    token.starts_with(ORGANISER_PREFIX).then_some(token)
}

/// The largest JSON body any route takes. The biggest document Confetti reads is a comment
/// of 1000 characters, at most 12 bytes each when escaped as a surrogate pair; 64 KiB leaves
/// room for any well-meant client and bounds what a request can make the server hold.
pub const MAX_JSON_BODY: usize = 64 * 1024;

/// How much of a refused body is still read (and thrown away) before the answer, and for how
/// long: a client that is still sending when the server answers and closes gets a reset,
/// which can destroy the answer before it is read. Past this the connection is closed.
const DRAIN_BYTES: u64 = 1024 * 1024;
const DRAIN_TIME: Duration = Duration::from_secs(5);

/// Reads a whole request body of at most `limit` bytes. A larger one is refused with 413
/// `body_too_large` as soon as that is known: when `Content-Length` says so, else at the
/// chunk that passes the limit. Only `limit` bytes are ever held.
pub async fn read_body(headers: &HeaderMap, body: Body, limit: usize) -> Result<Bytes, ApiError> {
    let too_large = || ApiError::BodyTooLarge { limit_bytes: limit as u64 };
    let declared = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        // A client waiting for `100 Continue` sends nothing more once it has the answer.
        let waits = headers.get(header::EXPECT).is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
        if !waits && declared.is_some_and(|n| n <= DRAIN_BYTES) {
            discard_body(body).await;
        }
        return Err(too_large());
    }
    let mut chunks = body.into_data_stream();
    let mut read = BytesMut::with_capacity(declared.map_or(0, |n| n as usize));
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|e| ApiError::InvalidRequest(format!("the request body could not be read: {e}")))?;
        if read.len() + chunk.len() > limit {
            let consumed = (read.len() + chunk.len()) as u64;
            drop(read);
            discard(chunks, DRAIN_BYTES.saturating_sub(consumed)).await;
            return Err(too_large());
        }
        read.extend_from_slice(&chunk);
    }
    Ok(read.freeze())
}

/// Reads and throws away what is left of a body the handler refuses, up to `DRAIN_BYTES`
/// and `DRAIN_TIME`, so its answer reaches the client (see `DRAIN_BYTES`).
pub async fn discard_body(body: Body) {
    discard(body.into_data_stream(), DRAIN_BYTES).await;
}

async fn discard(mut chunks: BodyDataStream, budget: u64) {
    let drain = async {
        let mut left = budget;
        while left > 0
            && let Some(Ok(chunk)) = chunks.next().await
        {
            left = left.saturating_sub(chunk.len() as u64);
        }
    };
    let _ = tokio::time::timeout(DRAIN_TIME, drain).await;
}

/// A JSON body of at most `MAX_JSON_BODY` bytes whose rejections are problem+json like every
/// other error: 413 `body_too_large` when larger, 400 `invalid_request` when it is not JSON of
/// the expected shape (with axum's explanation as the detail).
pub struct JsonBody<T>(pub T);

impl<T, S> axum::extract::FromRequest<S> for JsonBody<T>
where
    T: serde::de::DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(request: axum::extract::Request, state: &S) -> Result<Self, ApiError> {
        let (parts, body) = request.into_parts();
        let body = read_body(&parts.headers, body, MAX_JSON_BODY).await?;
        let request = axum::extract::Request::from_parts(parts, Body::from(body));
        match axum::Json::<T>::from_request(request, state).await {
            Ok(axum::Json(value)) => Ok(JsonBody(value)),
            Err(rejection) => Err(ApiError::InvalidRequest(rejection.body_text())),
        }
    }
}
