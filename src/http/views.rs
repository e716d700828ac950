//! The JSON shapes of the contract (API.md): what a client sees of events and uploads.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use chrono::Utc;
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::db::comments::CommentRow;
use crate::db::events::EventRow;
use crate::db::uploads::UploadRow;
use crate::domain::{MediaKind, UploadStatus, rfc3339};

#[derive(Serialize, ToSchema)]
#[schema(as = Event)]
pub struct EventJson {
    pub id: Uuid,
    /// The event's name in URLs: its name's letters and digits and a random suffix.
    #[schema(pattern = "^[a-z0-9-]{1,80}$", examples("hochzeit-anna-ben-x7k2"))]
    pub slug: String,
    #[schema(min_length = 1, max_length = 120)]
    pub name: String,
    /// What a guest needs to join.
    pub join_token: String,
    /// `{public_url}/e/{slug}?join={join_token}`: the link a QR code carries; opens the web page for this event.
    #[schema(format = "uri")]
    pub join_url: String,
    /// Each guest's quota (default 1 GiB).
    #[schema(minimum = 0)]
    pub guest_quota_bytes: i64,
    pub uploads_open: bool,
    #[schema(format = DateTime)]
    pub created_at: String,
    /// The event's storage, all guests together (default `--event-storage-cap-bytes`, 100 GiB). Uploads that
    /// would pass it are refused with 413 `event_storage_full`.
    #[schema(minimum = 0)]
    pub storage_cap_bytes: i64,
    /// Bytes of originals stored in the event (deleted photos refunded).
    #[schema(minimum = 0)]
    pub used_bytes: i64,
    // The guests' page (`http::event_page`).
    /// Shown under the event's name on the guests' page, as plain text with its line breaks; null: none.
    #[schema(required = true, max_length = 1000)]
    pub welcome_text: Option<String>,
    /// The upload shown as the page's cover; null when there is none, or while that upload is hidden or deleted.
    #[schema(required = true)]
    pub cover_upload_id: Option<Uuid>,
    /// `/api/v1/events/{slug}/cover`, the cover's preview, served without credentials; null when there is no cover.
    #[schema(required = true, examples("/api/v1/events/hochzeit-anna-ben-x7k2/cover"))]
    pub cover_url: Option<String>,
    /// false: guests may not save other guests' originals (403 `downloads_disabled`); their own, and thumbs and
    /// previews, still load.
    pub guest_downloads: bool,
    /// New uploads are refused (403 `uploads_closed`) before this time; null: no start.
    #[schema(required = true, format = DateTime)]
    pub uploads_open_from: Option<String>,
    /// New uploads are refused (403 `uploads_closed`) from this time on; null: no end.
    #[schema(required = true, format = DateTime)]
    pub uploads_open_until: Option<String>,
    #[serde(flatten)]
    pub modes: HostModesJson,
    /// false while the event carries the name the server gave it (the demo event a fresh server makes): the
    /// organiser's page asks for a name. true for an event created with a name, and from the first `name` set by
    /// `PATCH /api/v1/events/{slug}` on.
    pub name_chosen: bool,
    /// When the event's screen link was made (`POST /api/v1/events/{slug}/screen-link`); null while it has none.
    /// The link itself is shown only to whoever made it.
    #[schema(required = true, format = DateTime)]
    pub screen_link_at: Option<String>,
}

/// Whose photos an event's guests see: `everyone` (every approved, shown photo) or `own_uploads` (a "drop box":
/// each guest sees their own photos only; the organiser sees all).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum HostGallery {
    Everyone,
    OwnUploads,
}

/// The event's host modes, in the whole event and in its public view. Whatever they say, a guest always sees their
/// own photos and the organiser sees all.
#[derive(Serialize, ToSchema)]
#[schema(as = HostModes)]
pub struct HostModesJson {
    /// New uploads wait for the organiser's approval (their `review` is `pending`) before other guests see them.
    pub review_uploads: bool,
    #[schema(value_type = HostGallery)]
    pub gallery: &'static str,
    /// Until then guests see their own photos only; null: no such time.
    #[schema(required = true, format = DateTime)]
    pub gallery_opens_at: Option<String>,
    /// Whether the event's guests see each other's photos now, by the server's clock: `gallery` is `everyone` and
    /// `gallery_opens_at` is null or past.
    pub gallery_open: bool,
}

impl HostModesJson {
    pub fn new(event: &EventRow) -> Self {
        Self {
            review_uploads: event.review_uploads,
            gallery: event.gallery.as_str(),
            gallery_opens_at: event.gallery_opens_at.map(rfc3339),
            gallery_open: event.gallery.shared(event.gallery_opens_at, Utc::now()),
        }
    }
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
            welcome_text: event.page.welcome_text.clone(),
            cover_upload_id: event.page.cover_upload_id,
            cover_url: cover_url(event),
            guest_downloads: event.page.guest_downloads,
            uploads_open_from: event.page.uploads_open_from.map(rfc3339),
            uploads_open_until: event.page.uploads_open_until.map(rfc3339),
            modes: HostModesJson::new(event),
            name_chosen: event.name_chosen,
            screen_link_at: event.screen_link_at.map(rfc3339),
        }
    }
}

/// Where the event's cover is served, when it has one.
pub fn cover_url(event: &EventRow) -> Option<String> {
    event.page.cover_upload_id.map(|_| format!("/api/v1/events/{}/cover", event.slug))
}

#[derive(Serialize, ToSchema)]
pub struct GuestRef {
    pub id: Uuid,
    pub display_name: String,
}

/// Media URLs, relative to the server. Served to the same principals as the Upload, by cookie as well as by
/// bearer token.
#[derive(Serialize, ToSchema)]
pub struct UploadUrls {
    /// `/api/v1/uploads/{id}/original`.
    #[schema(examples("/api/v1/uploads/0190a5a8-5e2b-7c3d-8e4f-1a2b3c4d5e6f/original"))]
    pub original: String,
    /// `/api/v1/uploads/{id}/preview`: a JPEG 1600–2048 px on its long edge (never larger than the original: a
    /// smaller original keeps its size), pixels turned upright, without any EXIF. Null until it exists: set once
    /// the upload is `ready` (and kept while it is hidden); stays null when processing `failed`.
    #[schema(required = true, examples("/api/v1/uploads/0190a5a8-5e2b-7c3d-8e4f-1a2b3c4d5e6f/preview"))]
    pub preview: Option<String>,
    /// `/api/v1/uploads/{id}/thumb`: an AVIF or a WebP (to clients whose `Accept` lists `image/avif` or `image/webp`) or a JPEG 400 px on its long edge (the contract allows 320–512; a smaller
    /// original is not enlarged), pixels turned upright, without any EXIF. Null until it exists: set once the
    /// upload is `ready` (and kept while it is hidden); stays null when processing `failed`.
    #[schema(required = true, examples("/api/v1/uploads/0190a5a8-5e2b-7c3d-8e4f-1a2b3c4d5e6f/thumb"))]
    pub thumb: Option<String>,
}

/// One photo, as every read shows it: its live state at the time of the request (status, derivatives, likes and
/// comments). Exception: a replay of a keyed write (`Idempotent-Replayed: true`, e.g. `changeUpload`) repeats the
/// recorded answer.
#[derive(Serialize, ToSchema)]
#[schema(as = Upload)]
pub struct UploadJson {
    /// UUIDv7.
    pub id: Uuid,
    /// The event's slug.
    pub event: String,
    /// Who uploaded it.
    pub guest: GuestRef,
    /// The key it was uploaded with; null when it had none.
    #[schema(required = true)]
    pub client_upload_id: Option<Uuid>,
    #[schema(min_length = 1, max_length = 255)]
    pub filename: String,
    #[schema(required = true, max_length = 500)]
    pub caption: Option<String>,
    /// Sniffed from the bytes: `image/jpeg`, `image/png`, `image/gif`, `image/webp` or `image/heic` for a photo; `video/mp4`,
    /// `video/quicktime`, `video/webm` or `video/x-matroska` for a video. The original is served as this type.
    #[schema(examples("image/jpeg"))]
    pub content_type: String,
    /// `photo` or `video`, from the bytes.
    #[schema(schema_with = upload_kind)]
    pub kind: &'static str,
    /// A video's duration in seconds (milliseconds precision) as its container's header says; null for a photo,
    /// and for a video whose container does not say (a live WebM recording).
    #[schema(required = true, minimum = 0, examples(12.48))]
    pub duration_s: Option<f64>,
    /// A video's poster: true once a frame of it was made into its `thumb` and `preview` (upright). false while it is
    /// `processing`, and for a video that is `ready` without one (the server has no `ffmpeg`, or it could not read a
    /// frame): the video is stored and plays (`urls.original`), `urls.thumb` and `urls.preview` stay null. Null for a
    /// photo.
    #[schema(required = true)]
    pub poster: Option<bool>,
    #[schema(minimum = 0)]
    pub bytes: i64,
    /// Of the original's bytes, lower-case hex.
    #[schema(pattern = "^[0-9a-f]{64}$")]
    pub sha256: String,
    /// As displayed (EXIF orientation applied).
    #[schema(minimum = 0)]
    pub width: i32,
    /// As displayed (EXIF orientation applied).
    #[schema(minimum = 0)]
    pub height: i32,
    /// When it was taken, as its file says: a photo's EXIF `DateTimeOriginal` (with `OffsetTimeOriginal`, else
    /// `OffsetTime`; without either it is read as UTC), a video's movie header (MP4, MOV). Null when the file says
    /// nothing, or a time after its upload.
    #[schema(required = true, format = DateTime)]
    pub taken_at: Option<String>,
    /// When it was taken as far as the server can tell: `taken_at`, else the upload time (`created_at`); never after
    /// the upload. The order of `order=taken` listings.
    #[schema(format = DateTime)]
    pub captured_at: String,
    #[schema(schema_with = captured_from)]
    pub captured_from: &'static str,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(schema_with = upload_status)]
    pub status: String,
    #[schema(schema_with = upload_review)]
    pub review: &'static str,
    /// How many guests like it, counted live at the time of the request.
    #[schema(minimum = 0)]
    pub likes: i64,
    /// Whether the calling guest likes it, live; always false for an organiser (organisers do not like).
    pub liked_by_me: bool,
    /// How many comments it has, counted live at the time of the request.
    #[schema(minimum = 0)]
    pub comments: i64,
    pub urls: UploadUrls,
    /// A ThumbHash (https://evanw.github.io/thumbhash/) of the thumb, base64 with padding (about 25 bytes, 36
    /// characters): a page decodes it into a blurred picture of the photo at its aspect ratio and draws it while the
    /// thumb loads. Null until the derivatives are made (set with `ready`, kept while hidden), when processing
    /// `failed`, and for photos whose derivatives were made before placeholders existed.
    #[schema(required = true, format = Byte, min_length = 8, max_length = 88, examples("3OcRJYB4d3h/iIeHeEh3eIhw+j2w"))]
    pub placeholder: Option<String>,
    /// Why processing `failed`, in the server's words (the file could not be decoded, or its decoder crashed or ran
    /// out of its memory or time twice); null otherwise.
    #[schema(required = true, max_length = 500, examples("the decoder crashed on this file (signal 11)"))]
    pub failure: Option<String>,
    /// Whether the organiser rejected it: hidden (`status` `hidden`) with a reason for its uploader. Showing or
    /// approving it again lifts the rejection. Only the organiser and its uploader ever see a hidden upload.
    pub rejected: bool,
    /// Why the organiser rejected it, for its uploader's eyes; null when it is not rejected or was rejected without
    /// a reason.
    #[schema(required = true, max_length = 200, examples("Please no photos of the children"))]
    pub rejected_reason: Option<String>,
}

/// `status`: the processing states, and `hidden` over them.
fn upload_status() -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::Type::String)
        .enum_values(Some(["processing", "ready", "failed", "hidden"]))
        .description(Some(
            "`processing` from the upload until the derivative worker is done with it; then `ready` (its `thumb` and `preview` exist, see `urls`) or `failed` (the image could not be decoded; the original is kept and still served, and there are no derivatives). `hidden` whenever the organiser has hidden it, whatever its processing state (`urls.thumb` tells whether its derivatives exist); a hidden upload is shown to the organiser and its uploader only.",
        ))
        .build()
}

fn upload_kind() -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::Type::String)
        .enum_values(Some(["photo", "video"]))
        .description(Some("`photo` or `video`, sniffed from the bytes."))
        .build()
}

fn captured_from() -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::Type::String)
        .enum_values(Some(["exif", "video", "upload"]))
        .description(Some("Where `captured_at` comes from: `exif` (the photo's EXIF), `video` (the video's movie header), `upload` (the file says nothing usable: the upload time)."))
        .build()
}

fn upload_review() -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::Type::String)
        .enum_values(Some(["pending", "approved"]))
        .description(Some("`pending`: uploaded while the event's review gate (`review_uploads`) was on and not approved yet; only its uploader and the organiser see it. `approved`: seen by whoever sees the event's gallery."))
        .build()
}

impl UploadJson {
    pub fn new(row: &UploadRow) -> Self {
        // Derivatives exist once the worker made them (a hidden upload keeps them); a video's
        // only when a poster frame could be made.
        let video = row.kind == MediaKind::Video;
        let ready = row.status == UploadStatus::Ready && (!video || row.poster);
        Self {
            id: row.id,
            event: row.event_slug.clone(),
            guest: GuestRef { id: row.guest_id, display_name: row.guest_display_name.clone() },
            client_upload_id: row.client_upload_id,
            filename: row.filename.clone(),
            caption: row.caption.clone(),
            content_type: row.content_type.clone(),
            kind: row.kind.as_str(),
            duration_s: row.duration_ms.filter(|_| video).map(|ms| ms as f64 / 1000.0),
            poster: video.then_some(row.poster && row.status == UploadStatus::Ready),
            bytes: row.bytes,
            sha256: row.sha256.clone(),
            width: row.width,
            height: row.height,
            taken_at: row.taken_at.map(rfc3339),
            captured_at: rfc3339(row.captured_at),
            captured_from: row.captured_from.as_str(),
            created_at: rfc3339(row.created_at),
            status: if row.hidden { "hidden".into() } else { row.status.as_str().into() },
            review: row.review.as_str(),
            likes: row.likes,
            liked_by_me: row.liked_by_me,
            comments: row.comments,
            urls: UploadUrls {
                original: format!("/api/v1/uploads/{}/original", row.id),
                preview: ready.then(|| format!("/api/v1/uploads/{}/preview", row.id)),
                thumb: ready.then(|| format!("/api/v1/uploads/{}/thumb", row.id)),
            },
            placeholder: row.placeholder.as_deref().filter(|_| ready).map(|hash| STANDARD.encode(hash)),
            failure: row.failure.clone().filter(|_| row.status == UploadStatus::Failed),
            rejected: row.rejected_reason.is_some(),
            rejected_reason: row.rejected_reason.clone().filter(|reason| !reason.is_empty()),
        }
    }
}

#[derive(Serialize, ToSchema)]
#[schema(as = Comment)]
pub struct CommentJson {
    /// UUIDv7.
    pub id: Uuid,
    /// Who wrote it.
    pub guest: GuestRef,
    /// As stored: trimmed.
    #[schema(min_length = 1, max_length = 1000)]
    pub text: String,
    #[schema(format = DateTime)]
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
