//! The JSON shapes of the contract (API.md): what a client sees of events and uploads.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;
use uuid::Uuid;

use crate::db::comments::CommentRow;
use crate::db::events::EventRow;
use crate::db::uploads::UploadRow;
use crate::domain::UploadStatus;

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

#[derive(Serialize)]
pub struct EventJson {
    pub id: Uuid,
    pub slug: String,
    pub name: String,
    pub join_token: String,
    pub join_url: String,
    pub guest_quota_bytes: i64,
    pub uploads_open: bool,
    pub created_at: String,
    /// All guests' photos together may not pass this.
    pub storage_cap_bytes: i64,
    /// What the event's photos take now (deleted ones are refunded).
    pub used_bytes: i64,
}

impl EventJson {
    pub fn new(event: &EventRow, public_url: &str) -> Self {
        Self {
            id: event.id,
            slug: event.slug.clone(),
            name: event.name.clone(),
            join_token: event.join_token.clone(),
            join_url: crate::events::join_url(public_url, event),
            guest_quota_bytes: event.guest_quota_bytes,
            uploads_open: event.uploads_open,
            created_at: rfc3339(event.created_at),
            storage_cap_bytes: event.storage_cap_bytes,
            used_bytes: event.used_bytes,
        }
    }
}

#[derive(Serialize)]
pub struct GuestRef {
    pub id: Uuid,
    pub display_name: String,
}

#[derive(Serialize)]
pub struct UploadUrls {
    pub original: String,
    pub preview: Option<String>,
    pub thumb: Option<String>,
}

/// The Upload, as every read shows it: live state, relative media URLs.
#[derive(Serialize)]
pub struct UploadJson {
    pub id: Uuid,
    pub event: String,
    pub guest: GuestRef,
    pub client_upload_id: Option<Uuid>,
    pub filename: String,
    pub caption: Option<String>,
    pub content_type: String,
    pub bytes: i64,
    pub sha256: String,
    pub width: i32,
    pub height: i32,
    pub taken_at: Option<String>,
    pub created_at: String,
    pub status: String,
    pub likes: i64,
    pub liked_by_me: bool,
    pub comments: i64,
    pub urls: UploadUrls,
}

impl UploadJson {
    pub fn new(row: &UploadRow) -> Self {
        // Derivatives exist once the worker made them (a hidden upload keeps them).
        let ready = row.status == UploadStatus::Ready;
        Self {
            id: row.id,
            event: row.event_slug.clone(),
            guest: GuestRef { id: row.guest_id, display_name: row.guest_display_name.clone() },
            client_upload_id: row.client_upload_id,
            filename: row.filename.clone(),
            caption: row.caption.clone(),
            content_type: row.content_type.clone(),
            bytes: row.bytes,
            sha256: row.sha256.clone(),
            width: row.width,
            height: row.height,
            taken_at: row.taken_at.map(rfc3339),
            created_at: rfc3339(row.created_at),
            status: if row.hidden { "hidden".into() } else { row.status.as_str().into() },
            likes: row.likes,
            liked_by_me: row.liked_by_me,
            comments: row.comments,
            urls: UploadUrls {
                original: format!("/api/v1/uploads/{}/original", row.id),
                preview: ready.then(|| format!("/api/v1/uploads/{}/preview", row.id)),
                thumb: ready.then(|| format!("/api/v1/uploads/{}/thumb", row.id)),
            },
        }
    }
}

#[derive(Serialize)]
pub struct CommentJson {
    pub id: Uuid,
    pub guest: GuestRef,
    pub text: String,
    pub created_at: String,
}

impl CommentJson {
    pub fn new(row: &CommentRow) -> Self {
        Self {
            id: row.id,
            guest: GuestRef { id: row.guest_id, display_name: row.guest_display_name.clone() },
            text: row.text.clone(),
            created_at: rfc3339(row.created_at),
        }
    }
}
