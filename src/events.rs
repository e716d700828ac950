//! Creating events (from the API and from the command line) and the links guests join by.

use chrono::Utc;
use uuid::Uuid;

use crate::auth;
use crate::blocking::Blocking;
use crate::db::event_page::EventPageRow;
use crate::db::events::EventRow;
use crate::db::{Db, Tx};
use crate::domain::{EventName, EventSlug, Gallery, OrganiserPassword};
use crate::error::coded;

coded! {
/// Why an event was not created.
#[derive(Debug, thiserror::Error)]
pub enum EventError {
    /// A limit the request gave is not possible; names the field.
    #[error("{0} must not be negative")]
    Negative(&'static str) => InvalidRequest,
    #[error(transparent)]
    Internal(#[from] anyhow::Error) => Internal,
}
}

pub struct NewEvent {
    pub name: EventName,
    pub password: OrganiserPassword,
    pub guest_quota_bytes: i64,
    /// All guests together; `--event-storage-cap-bytes` unless the admin chose another.
    pub storage_cap_bytes: i64,
    /// False for a name the server made up (the demo event): the organiser is asked for one.
    pub name_chosen: bool,
}

/// An event ready to insert: its password already hashed, so no transaction waits for bcrypt.
pub struct PreparedEvent {
    new: NewEvent,
    password_hash: String,
}

/// Checks the new event and hashes its password on the blocking pool.
pub async fn prepare(blocking: &Blocking, new: NewEvent) -> Result<PreparedEvent, EventError> {
    if new.guest_quota_bytes < 0 {
        return Err(EventError::Negative("guest_quota_bytes"));
    }
    if new.storage_cap_bytes < 0 {
        return Err(EventError::Negative("storage_cap_bytes"));
    }
    let password = new.password.as_str().to_owned();
    let password_hash = blocking.crypto(move || auth::hash_password(&password)).await??;
    Ok(PreparedEvent { new, password_hash })
}

/// Stores the event with a fresh slug and join token.
pub async fn insert(tx: &mut Tx, prepared: &PreparedEvent) -> Result<EventRow, EventError> {
    let new = &prepared.new;
    // A slug collision needs the same name and the same random suffix: retry a few times.
    for _ in 0..5 {
        let suffix = auth::random_string(4)?.to_lowercase().replace(['-', '_'], "x");
        let event = EventRow {
            id: Uuid::now_v7(),
            slug: EventSlug::generate(new.name.as_str(), &suffix).as_str().to_owned(),
            name: new.name.as_str().to_owned(),
            join_token: auth::random_string(18)?,
            organiser_password_hash: prepared.password_hash.clone(),
            guest_quota_bytes: new.guest_quota_bytes,
            uploads_open: true,
            created_at: Utc::now(),
            storage_cap_bytes: new.storage_cap_bytes,
            used_bytes: 0,
            page: EventPageRow::default(),
            // The host modes start as the columns' defaults say.
            review_uploads: false,
            gallery: Gallery::Everyone,
            gallery_opens_at: None,
            name_chosen: new.name_chosen,
            screen_link_at: None,
        };
        if tx.insert_event(&event).await? {
            return Ok(event);
        }
    }
    Err(EventError::Internal(anyhow::anyhow!("could not find a free slug")))
}

/// Prepares, inserts and commits: for the command line and the demo event.
pub async fn create_event(db: &Db, blocking: &Blocking, new: NewEvent) -> Result<EventRow, EventError> {
    let prepared = prepare(blocking, new).await?;
    let mut tx = db.begin().await?;
    let event = insert(&mut tx, &prepared).await?;
    tx.commit().await?;
    Ok(event)
}

/// The link a QR code carries: opens the page for this event with its join token.
pub fn join_url(public_url: &str, event: &EventRow) -> String {
    format!("{public_url}/e/{}?join={}", event.slug, event.join_token)
}
