//! Creating events (from the API and from the command line) and the links guests join by.

use chrono::Utc;
use uuid::Uuid;

use crate::auth;
use crate::blocking::Blocking;
use crate::db::Db;
use crate::db::events::EventRow;
use crate::domain::{EventName, EventSlug, OrganiserPassword};
use crate::error::{ApiError, ApiResult};

pub struct NewEvent {
    pub name: EventName,
    pub password: OrganiserPassword,
    pub guest_quota_bytes: i64,
}

/// Stores a new event with a fresh slug and join token; the password is hashed off the runtime.
pub async fn create_event(db: &Db, blocking: &Blocking, new: NewEvent) -> ApiResult<EventRow> {
    if new.guest_quota_bytes < 0 {
        return Err(ApiError::InvalidRequest("guest_quota_bytes must not be negative".into()));
    }
    let password = new.password.as_str().to_owned();
    let hash = blocking.crypto(move || auth::hash_password(&password)).await??;
    // A slug collision needs the same name and the same random suffix: retry a few times.
    for _ in 0..5 {
        let suffix = auth::random_string(4)?.to_lowercase().replace(['-', '_'], "x");
        let event = EventRow {
            id: Uuid::now_v7(),
            slug: EventSlug::generate(new.name.as_str(), &suffix).as_str().to_owned(),
            name: new.name.as_str().to_owned(),
            join_token: auth::random_string(18)?,
            organiser_password_hash: hash.clone(),
            guest_quota_bytes: new.guest_quota_bytes,
            uploads_open: true,
            created_at: Utc::now(),
        };
        if db.insert_event(&event).await? {
            return Ok(event);
        }
    }
    Err(ApiError::Internal(anyhow::anyhow!("could not find a free slug")))
}

/// The link a QR code carries: opens the page for this event with its join token.
pub fn join_url(public_url: &str, event: &EventRow) -> String {
    format!("{public_url}/e/{}?join={}", event.slug, event.join_token)
}
