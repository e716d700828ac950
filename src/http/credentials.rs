//! Who a request's credentials name, resolved once per request: the first extractor or layer
//! that asks (the `Idempotency-Key` layer, then the handler's `Guest`, `Organiser`, `Viewer`
//! or `Admin`) looks the tokens up and keeps the answer in the request's extensions, where
//! every later one reads it instead of asking the database again.
//!
//! The rules: a bearer token wins over cookies, and its prefix says whose it is (so one
//! lookup answers). Without one, the guest and organiser cookies. A state-changing request
//! authenticated by a cookie must come from this server's own pages (`Origin` check), since
//! browsers attach cookies to requests other sites start.

use axum::http::request::Parts;
use axum::http::{HeaderMap, Method, header};

use crate::auth::{self, GUEST_COOKIE, GUEST_PREFIX, ORGANISER_COOKIE, ORGANISER_PREFIX, SCREEN_COOKIE, SCREEN_PREFIX};
use crate::db::events::EventRow;
use crate::db::guests::GuestRow;
use crate::error::ApiError;
use crate::http::AppState;

/// What a request's credentials turned out to name.
#[derive(Clone, Debug)]
pub enum Credentials {
    /// An `Authorization: Bearer` token: the admin's, or a guest's, an organiser's or a
    /// screen's (by its prefix), or nobody's.
    Bearer { admin: bool, guest: Option<GuestRow>, organiser: Option<EventRow>, screen: Option<Screen> },
    /// No bearer token: whatever the cookies name. `cross_origin` when the request is a
    /// write whose `Origin` is not this server's (refused once a cookie is found valid).
    Cookies { guest: Option<GuestRow>, organiser: Option<EventRow>, screen: Option<Screen>, cross_origin: bool },
}

/// A venue screen (`http::screens`): the event whose current screen link it opened, and that
/// link's digest (a live stream checks it is still the current one).
#[derive(Clone, Debug)]
pub struct Screen {
    pub event_id: uuid::Uuid,
    pub token_hash: Vec<u8>,
}

impl Credentials {
    /// The request's credentials, looked up on the first call and read from the request's
    /// extensions after that. A failed lookup (the database) is not kept: the request ends
    /// with it.
    pub async fn of(parts: &mut Parts, state: &AppState) -> Result<Credentials, ApiError> {
        if let Some(known) = parts.extensions.get::<Credentials>() {
            return Ok(known.clone());
        }
        let mut lookups = 0u32;
        let credentials = match bearer(&parts.headers) {
            Some(token) if auth::constant_time_eq(token.as_bytes(), state.admin_token.as_bytes()) => {
                Credentials::Bearer { admin: true, guest: None, organiser: None, screen: None }
            }
            Some(token) => Credentials::Bearer {
                admin: false,
                guest: guest_by_token(state, token, &mut lookups).await?,
                organiser: organiser_by_token(state, token, &mut lookups).await?,
                screen: screen_by_token(state, token, &mut lookups).await?,
            },
            None => {
                let guest = match cookie(&parts.headers, GUEST_COOKIE) {
                    Some(token) => guest_by_token(state, token, &mut lookups).await?,
                    None => None,
                };
                let organiser = match cookie(&parts.headers, ORGANISER_COOKIE) {
                    Some(token) => organiser_by_token(state, token, &mut lookups).await?,
                    None => None,
                };
                let screen = match cookie(&parts.headers, SCREEN_COOKIE) {
                    Some(token) => screen_by_token(state, token, &mut lookups).await?,
                    None => None,
                };
                Credentials::Cookies { guest, organiser, screen, cross_origin: is_cross_origin(parts, state) }
            }
        };
        // Operators (and the tests of this rule) see that a request asked the database once.
        tracing::debug!(token_lookups = lookups, "credentials resolved");
        parts.extensions.insert(credentials.clone());
        Ok(credentials)
    }
}

pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// Whether this is a write started by another site's page: its `Origin` is neither the
/// `Host` it was sent to nor the public URL's.
fn is_cross_origin(parts: &Parts, state: &AppState) -> bool {
    if matches!(parts.method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return false;
    }
    let Some(origin) = parts.headers.get(header::ORIGIN) else {
        return false;
    };
    let origin = origin.to_str().unwrap_or_default();
    let origin_authority = origin.split_once("://").map(|(_, a)| a).unwrap_or_default();
    let host = parts.headers.get(header::HOST).and_then(|h| h.to_str().ok());
    let public_authority = state.settings.public_url.split_once("://").map(|(_, a)| a);
    !(!origin_authority.is_empty() && (Some(origin_authority) == host || Some(origin_authority) == public_authority))
}

async fn guest_by_token(state: &AppState, token: &str, lookups: &mut u32) -> Result<Option<GuestRow>, ApiError> {
    if !token.starts_with(GUEST_PREFIX) {
        return Ok(None);
    }
    *lookups += 1;
    Ok(state.db.guest_by_token_hash(&auth::token_digest(token)).await?)
}

async fn organiser_by_token(state: &AppState, token: &str, lookups: &mut u32) -> Result<Option<EventRow>, ApiError> {
    if !token.starts_with(ORGANISER_PREFIX) {
        return Ok(None);
    }
    *lookups += 1;
    Ok(state.db.organiser_event(&auth::token_digest(token)).await?)
}

async fn screen_by_token(state: &AppState, token: &str, lookups: &mut u32) -> Result<Option<Screen>, ApiError> {
    if !token.starts_with(SCREEN_PREFIX) {
        return Ok(None);
    }
    *lookups += 1;
    let token_hash = auth::token_digest(token);
    Ok(state.db.screen_event(&token_hash).await?.map(|event| Screen { event_id: event.id, token_hash }))
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::domain::{EventName, OrganiserPassword};
    use crate::events::NewEvent;

    /// A request's credentials are looked up once: after the first extractor resolved them,
    /// later ones read the request's extensions, whatever its headers say by then.
    #[tokio::test]
    async fn credentials_are_looked_up_once_per_request() -> anyhow::Result<()> {
        let data = tempfile::tempdir()?;
        let settings = crate::settings::Settings::new(data.path(), "http://confetti.test");
        let state = AppState::open(settings, "admin-token".into()).await?;
        let new = NewEvent {
            name: EventName::parse("Anna & Ben")?,
            password: OrganiserPassword::parse("correct horse")?,
            guest_quota_bytes: 1 << 20,
            storage_cap_bytes: 1 << 30,
            name_chosen: true,
        };
        let prepared = crate::events::prepare(&state.blocking, new).await?;
        let mut tx = state.db.begin().await?;
        let event = crate::events::insert(&mut tx, &prepared).await?;
        tx.commit().await?;
        let (token, digest) = auth::new_token(GUEST_PREFIX)?;
        let guest_id = uuid::Uuid::now_v7();
        state.db.insert_guest(guest_id, event.id, "Ann", &digest).await?;

        let request = axum::http::Request::post("/api/v1/uploads/x/comments")
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .body(())?;
        let (mut parts, ()) = request.into_parts();
        let first = Credentials::of(&mut parts, &state).await?;
        assert!(matches!(&first, Credentials::Bearer { guest: Some(g), .. } if g.id == guest_id), "{first:?}");
        // Another token now: a second lookup would find nobody.
        parts.headers.insert(header::AUTHORIZATION, "Bearer g_nobody".parse()?);
        let second = Credentials::of(&mut parts, &state).await?;
        assert!(matches!(&second, Credentials::Bearer { guest: Some(g), .. } if g.id == guest_id), "{second:?}");
        // A request of its own asks the database.
        let (mut other, ()) =
            axum::http::Request::get("/").header(header::AUTHORIZATION, "Bearer g_nobody").body(())?.into_parts();
        let third = Credentials::of(&mut other, &state).await?;
        assert!(matches!(third, Credentials::Bearer { guest: None, organiser: None, admin: false, .. }), "{third:?}");
        Ok(())
    }
}
