//! Who is asking: extractors for the three principals. A bearer token wins over cookies;
//! the token's prefix says whose it is. A state-changing request authenticated by a cookie
//! must come from this server's own pages (`Origin` check), since browsers attach cookies
//! to requests other sites start.

use std::time::Duration;

use axum::body::{Body, BodyDataStream, Bytes};
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method, header};
use bytes::BytesMut;
use futures_util::StreamExt;

use crate::app::AppState;
use crate::auth::{self, GUEST_COOKIE, GUEST_PREFIX, ORGANISER_COOKIE, ORGANISER_PREFIX};
use crate::db::events::EventRow;
use crate::db::guests::GuestRow;
use crate::error::ApiError;

/// A guest of some event (handlers check which).
pub struct Guest(pub GuestRow);

/// The organiser of one event.
pub struct Organiser(pub EventRow);

/// The instance admin.
pub struct Admin;

/// Whoever may read an event's photos: one of its guests or its organiser (or both, when a
/// browser holds both cookies).
pub struct Viewer {
    pub guest: Option<GuestRow>,
    pub organiser: Option<EventRow>,
}

impl Viewer {
    pub fn can_see_event(&self, event_id: uuid::Uuid) -> bool {
        self.is_organiser_of(event_id) || self.guest.as_ref().is_some_and(|g| g.event_id == event_id)
    }

    pub fn is_organiser_of(&self, event_id: uuid::Uuid) -> bool {
        self.organiser.as_ref().is_some_and(|e| e.id == event_id)
    }

    pub fn guest_id(&self) -> Option<uuid::Uuid> {
        self.guest.as_ref().map(|g| g.id)
    }
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// Refuses a cookie-authenticated write started by another site's page.
fn check_origin(parts: &Parts, state: &AppState) -> Result<(), ApiError> {
    if matches!(parts.method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return Ok(());
    }
    let Some(origin) = parts.headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let origin = origin.to_str().unwrap_or_default();
    let origin_authority = origin.split_once("://").map(|(_, a)| a).unwrap_or_default();
    let host = parts.headers.get(header::HOST).and_then(|h| h.to_str().ok());
    let public_authority = state.settings.public_url.split_once("://").map(|(_, a)| a);
    if !origin_authority.is_empty() && (Some(origin_authority) == host || Some(origin_authority) == public_authority) {
        Ok(())
    } else {
        Err(ApiError::CrossOrigin)
    }
}

async fn guest_by_token(state: &AppState, token: &str) -> Result<Option<GuestRow>, ApiError> {
    if !token.starts_with(GUEST_PREFIX) {
        return Ok(None);
    }
    Ok(state.db.guest_by_token_hash(&auth::token_digest(token)).await?)
}

async fn organiser_by_token(state: &AppState, token: &str) -> Result<Option<EventRow>, ApiError> {
    if !token.starts_with(ORGANISER_PREFIX) {
        return Ok(None);
    }
    Ok(state.db.organiser_event(&auth::token_digest(token)).await?)
}

impl FromRequestParts<AppState> for Guest {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let (token, by_cookie) = match bearer(&parts.headers) {
            Some(token) => (token, false),
            None => (cookie(&parts.headers, GUEST_COOKIE).ok_or(ApiError::Unauthenticated)?, true),
        };
        let guest = guest_by_token(state, token).await?.ok_or(ApiError::Unauthenticated)?;
        if by_cookie {
            check_origin(parts, state)?;
        }
        Ok(Guest(guest))
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

    /// 401 unless at least one valid guest or organiser credential is present.
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let viewer = match bearer(&parts.headers) {
            Some(token) => Viewer {
                guest: guest_by_token(state, token).await?,
                organiser: organiser_by_token(state, token).await?,
            },
            None => {
                let guest = match cookie(&parts.headers, GUEST_COOKIE) {
                    Some(token) => guest_by_token(state, token).await?,
                    None => None,
                };
                let organiser = match cookie(&parts.headers, ORGANISER_COOKIE) {
                    Some(token) => organiser_by_token(state, token).await?,
                    None => None,
                };
                if guest.is_some() || organiser.is_some() {
                    check_origin(parts, state)?;
                }
                Viewer { guest, organiser }
            }
        };
        if viewer.guest.is_none() && viewer.organiser.is_none() {
            return Err(ApiError::Unauthenticated);
        }
        Ok(viewer)
    }
}

impl FromRequestParts<AppState> for Admin {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        match bearer(&parts.headers) {
            Some(token) if auth::constant_time_eq(token.as_bytes(), state.admin_token.as_bytes()) => Ok(Admin),
            _ => match Viewer::from_request_parts(parts, state).await {
                Ok(_) => Err(ApiError::Forbidden),
                Err(e) => Err(e),
            },
        }
    }
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

/// Who a keyed write belongs to, for scoping its `Idempotency-Key`: the admin, a guest, an
/// event's organiser (all of that organiser's sessions share one scope). `None` when the
/// request carries no valid credential.
pub async fn principal(parts: &mut Parts, state: &AppState) -> Option<String> {
    if bearer(&parts.headers).is_some_and(|t| auth::constant_time_eq(t.as_bytes(), state.admin_token.as_bytes())) {
        return Some("admin".to_owned());
    }
    let viewer = Viewer::from_request_parts(parts, state).await.ok()?;
    let guest = viewer.guest.map(|g| format!("guest:{}", g.id));
    let organiser = viewer.organiser.map(|e| format!("organiser:{}", e.id));
    Some([guest, organiser].into_iter().flatten().collect::<Vec<_>>().join("+"))
}
