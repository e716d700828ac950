//! `ApiError`: every way a request can be refused, mapped to a status and a stable `code`
//! in exactly one place each, and rendered as RFC 9457 `application/problem+json`. The HTTP
//! layer's own refusals are its variants; a use case's errors (`IngestError`, `ResumableError`,
//! `EventError`) are held whole and answered as they declare themselves, so the one table from
//! a refusal to the wire is each enum's `coded!` list, and a new refusal is its variant there
//! (and, for a new code, its line in `ErrorCode`).
//! A 5xx keeps its cause for the log; the client only learns that something failed.

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// Declares `ErrorCode` from one list: each code's variant, its text, its status and what it
/// means (for the API reference's table of codes).
macro_rules! error_codes {
    ($($variant:ident = $code:literal, $status:ident, $meaning:literal;)*) => {
        /// Every `code` a problem answer can carry: the one list the server answers from and
        /// the API reference documents (`ErrorCode` schema, `http::openapi`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum ErrorCode {
            $(#[doc = $meaning] $variant,)*
        }

        impl ErrorCode {
            pub const ALL: &[ErrorCode] = &[$(ErrorCode::$variant),*];

            pub fn as_str(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $code,)*
                }
            }

            pub fn status(self) -> StatusCode {
                match self {
                    $(ErrorCode::$variant => StatusCode::$status,)*
                }
            }

            /// When a client gets it, for people.
            pub fn meaning(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $meaning,)*
                }
            }
        }
    };
}

error_codes! {
    Unauthenticated = "unauthenticated", UNAUTHORIZED,
        "No valid guest, organiser or admin credential (missing, unknown, expired or ended, or of the wrong kind); `/metrics` without its token when one is set.";
    InvalidCredentials = "invalid_credentials", UNAUTHORIZED,
        "Organiser login: wrong password.";
    Forbidden = "forbidden", FORBIDDEN,
        "The caller is authenticated but may not do this (organiser-only or admin-only action, another guest's upload, another event's organiser, an organiser liking, commenting or writing in the guestbook).";
    WrongEvent = "wrong_event", FORBIDDEN,
        "The guest joined another event than the one in the path.";
    UploadsClosed = "uploads_closed", FORBIDDEN,
        "The event's organiser closed uploads, or the event's upload window has not begun or has ended (`detail` says when); never answered to a replay.";
    CrossOrigin = "cross_origin", FORBIDDEN,
        "A cookie-authenticated state-changing request (POST, PUT, PATCH, DELETE) whose `Origin` header is present and is not this server's own origin.";
    InvalidJoinToken = "invalid_join_token", FORBIDDEN,
        "Joining: the join token is not this event's.";
    InvalidScreenToken = "invalid_screen_token", FORBIDDEN,
        "Opening a screen: the token is not this event's current screen link (never was, or was replaced or revoked).";
    TooManyAttempts = "too_many_attempts", TOO_MANY_REQUESTS,
        "Organiser login or joining: too many wrong passwords or join tokens from this client for this event (an attempt counts before the secret is checked, so simultaneous guesses do not slip through), or too many joins from this client for this event (100 at once, then one every 2 s); `Retry-After` and `retry_after_s` say when to try again.";
    EventNotFound = "event_not_found", NOT_FOUND,
        "No event with this slug.";
    NotFound = "not_found", NOT_FOUND,
        "No such upload, or not one the caller may see (also: deleted, or another guest's key); a thumbnail or preview that does not exist (yet); a path no route matches.";
    UploadDeleted = "upload_deleted", GONE,
        "The upload named by this client upload id was deleted; it is not stored again.";
    ClientUploadIdConflict = "client_upload_id_conflict", CONFLICT,
        "The client upload id belongs to another guest's upload; nothing about that upload is revealed.";
    ClientUploadIdReused = "client_upload_id_reused", UNPROCESSABLE_ENTITY,
        "The same guest re-used a client upload id with another file name or caption.";
    InvalidMultipart = "invalid_multipart", BAD_REQUEST,
        "The body is not valid `multipart/form-data` (or has more than one `file` part, or a text part that is not UTF-8).";
    MissingFile = "missing_file", BAD_REQUEST,
        "A new upload without a `file` part.";
    InvalidClientUploadId = "invalid_client_upload_id", BAD_REQUEST,
        "A `client_upload_id` (part or path segment) that is not a non-nil UUID.";
    IdempotencyKeyMismatch = "idempotency_key_mismatch", BAD_REQUEST,
        "The `Idempotency-Key` header and the `client_upload_id` part hold different UUIDs.";
    InvalidIdempotencyKey = "invalid_idempotency_key", BAD_REQUEST,
        "A keyed write (not an upload) whose `Idempotency-Key` is not 1–255 printable ASCII characters.";
    IdempotencyKeyInFlight = "idempotency_key_in_flight", CONFLICT,
        "An earlier request with this `Idempotency-Key` is still running (or this attempt's claim on the key was taken over by a retry, and its write rolled back); `Retry-After` says when to try again with the same key.";
    IdempotencyKeyReused = "idempotency_key_reused", UNPROCESSABLE_ENTITY,
        "This `Idempotency-Key` was already used by the same caller on the same method and path for a different request (another body, query or content type).";
    FileTooLarge = "file_too_large", PAYLOAD_TOO_LARGE,
        "The file is larger than `max_upload_bytes` (see `limit_bytes`).";
    QuotaExceeded = "quota_exceeded", PAYLOAD_TOO_LARGE,
        "The file does not fit in the guest's remaining quota (see `quota_bytes`, `remaining_bytes`).";
    UnsupportedMediaType = "unsupported_media_type", UNSUPPORTED_MEDIA_TYPE,
        "The bytes are not a supported image (JPEG, PNG, WebP, GIF, HEIC) or video (MP4, MOV, WebM), whatever the declared type; also a damaged or cut-short file, a video in a codec not taken (H.264, HEVC, AV1, VP8, VP9), and an empty file. `detail` names the format.";
    ImageTooLarge = "image_too_large", PAYLOAD_TOO_LARGE,
        "The image header declares more than `max_image_pixels` pixels (see `pixels`, `limit_pixels`).";
    VideoTooLong = "video_too_long", PAYLOAD_TOO_LARGE,
        "The video's header says it lasts longer than `max_video_seconds` (see `duration_s`, `limit_seconds`).";
    WeakPassword = "weak_password", UNPROCESSABLE_ENTITY,
        "Creating an event: the organiser password has fewer than 8 characters or more than 72 bytes.";
    InvalidDisplayName = "invalid_display_name", UNPROCESSABLE_ENTITY,
        "Joining: the display name is empty (after trimming) or longer than 60 characters.";
    InvalidCaption = "invalid_caption", UNPROCESSABLE_ENTITY,
        "Uploading: the caption is longer than 500 characters.";
    InvalidWebhook = "invalid_webhook", UNPROCESSABLE_ENTITY,
        "Setting the admin's webhook: the URL is not `http://` or `https://` with a host, or is longer than 2000 characters; or the secret is not 16–200 characters.";
    InvalidComment = "invalid_comment", UNPROCESSABLE_ENTITY,
        "Commenting: the text is empty (after trimming) or longer than 1000 characters.";
    InvalidGuestbookMessage = "invalid_guestbook_message", UNPROCESSABLE_ENTITY,
        "Writing in the guestbook: the text is empty (after cleaning and trimming) or longer than 500 characters.";
    InvalidRequest = "invalid_request", BAD_REQUEST,
        "The JSON body is malformed, is not `application/json`, or misses a field; or a field or query value is out of range (empty or over-long event name, negative quota, non-numeric `limit`, a member other than `hidden` or `approved` when changing an upload, an unknown `gallery` mode); or a path segment that is not valid UTF-8, or a query parameter given twice.";
    InvalidCursor = "invalid_cursor", BAD_REQUEST,
        "Listing: the `cursor` is not one this server gave out.";
    InvalidContentHashes = "invalid_content_hashes", BAD_REQUEST,
        "Asking which files are stored already (`POST …/uploads/known`): a `sha256` entry that is not 64 hexadecimal digits, or more than 500 entries.";
    UploadLengthRequired = "upload_length_required", BAD_REQUEST,
        "Resumable upload: created without `Upload-Length` (and not complete with a `Content-Length`).";
    InconsistentUploadLength = "inconsistent_upload_length", BAD_REQUEST,
        "Resumable upload: two lengths that differ, or more (or, at its end, fewer) bytes than the declared length; the upload resource is cancelled.";
    UploadOffsetMismatch = "upload_offset_mismatch", CONFLICT,
        "Resumable upload: the request's `Upload-Offset` is not the resource's; `expected-offset`, `provided-offset` and the `Upload-Offset` header say where to go on.";
    UploadBusy = "upload_busy", CONFLICT,
        "Resumable upload: another request is appending to it or completing it right now (or, for `DELETE`, its photo is being stored); `Upload-Offset` says how far it is, `Retry-After` when to ask again.";
    Internal = "internal", INTERNAL_SERVER_ERROR,
        "Something unexpected failed (database, storage, a panic). Logged on the server; `detail` says nothing more.";
    BodyTooLarge = "body_too_large", PAYLOAD_TOO_LARGE,
        "A JSON body, or the body of any write carrying an `Idempotency-Key`, larger than 64 KiB (see `limit_bytes`).";
    EventStorageFull = "event_storage_full", PAYLOAD_TOO_LARGE,
        "The file does not fit in what is left of the event's storage cap, all guests together (see `cap_bytes`, `remaining_bytes`).";
    InsufficientStorage = "insufficient_storage", INSUFFICIENT_STORAGE,
        "The server's disk is nearly full (below its free-space floor); uploads wait until the operator makes room.";
    RangeNotSatisfiable = "range_not_satisfiable", RANGE_NOT_SATISFIABLE,
        "The `Range` starts at or beyond the end of the file; `Content-Range: bytes */{length}`.";
    MethodNotAllowed = "method_not_allowed", METHOD_NOT_ALLOWED,
        "The path exists but not with this method.";
    NotReady = "not_ready", SERVICE_UNAVAILABLE,
        "`/readyz`: the database or the photo store does not answer; `detail` says which.";
    DownloadsDisabled = "downloads_disabled", FORBIDDEN,
        "The organiser turned guest downloads off: a guest asked for another guest's original.";
    InvalidWelcomeText = "invalid_welcome_text", UNPROCESSABLE_ENTITY,
        "Changing an event: the welcome text is longer than 1000 characters (after cleaning).";
    InvalidCover = "invalid_cover", UNPROCESSABLE_ENTITY,
        "Changing an event: the cover is not an upload of this event that is ready, approved, shown and not deleted.";
    InvalidUploadWindow = "invalid_upload_window", UNPROCESSABLE_ENTITY,
        "Changing an event: an end of the upload window is not an RFC 3339 time, or `uploads_open_from` is not before `uploads_open_until`.";
    GuestBlocked = "guest_blocked", FORBIDDEN,
        "The event's organiser blocked this guest: new uploads, likes, comments and guestbook messages are refused (replays of earlier uploads still answer).";
    CoOrganiserLimit = "co_organiser_limit", CONFLICT,
        "Adding a co-organiser: the event already has 10 that are not revoked.";
    UploadNotDeleted = "upload_not_deleted", CONFLICT,
        "Restoring an upload that is not deleted.";
    SelectionTooLarge = "selection_too_large", UNPROCESSABLE_ENTITY,
        "Moderating several photos at once: more than 200 upload ids in one request.";
    InvalidReason = "invalid_reason", UNPROCESSABLE_ENTITY,
        "Moderating several photos at once: a `reason` longer than 200 characters, or a `reason` with another action than `reject`.";
    UndoExpired = "undo_expired", GONE,
        "Restoring a deleted upload after its undo grace, or once its bytes are being (or were) removed; or one its uploader deleted.";
}

impl serde::Serialize for ErrorCode {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// A string enum of every code, with the table of their statuses and meanings.
impl utoipa::PartialSchema for ErrorCode {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        let mut description = String::from(
            "Every `code` this server can answer. Each operation's error responses list the codes that operation can produce.\n\n| code | status | meaning |\n| --- | --- | --- |",
        );
        for code in ErrorCode::ALL {
            description.push_str(&format!(
                "\n| `{}` | {} | {} |",
                code.as_str(),
                code.status().as_u16(),
                code.meaning()
            ));
        }
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::Type::String)
            .description(Some(description))
            .enum_values(Some(ErrorCode::ALL.iter().map(|code| code.as_str())))
            .into()
    }
}

impl utoipa::ToSchema for ErrorCode {}

/// Declares an error enum whose every variant names its `ErrorCode` right after it
/// (`Variant(fields) => Code,`), and its `code()`: the code of a refusal is written where the
/// refusal is, once. A trailing `wraps { Variant(Error), }` holds another coded error whole
/// (a use case's, inside `ApiError`): its code is the one that error declares. Used by
/// `ApiError` and by the use cases' errors (`ingest::IngestError`, `resumable::ResumableError`).
macro_rules! coded {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $(
                $(#[$vmeta:meta])*
                $variant:ident
                $( ( $( $(#[$tmeta:meta])* $tfield:ty ),* ) )?
                $( { $( $sfield:ident : $sty:ty ),* $(,)? } )?
                => $code:ident,
            )*
        }
        $( wraps {
            $(
                $(#[$wmeta:meta])*
                $wrapper:ident ( $(#[$wtmeta:meta])* $wrapped:ty ),
            )*
        } )?
    ) => {
        $(#[$meta])*
        $vis enum $name {
            $(
                $(#[$vmeta])*
                $variant
                $( ( $( $(#[$tmeta])* $tfield ),* ) )?
                $( { $( $sfield : $sty ),* } )?,
            )*
            $($(
                $(#[$wmeta])*
                $wrapper ( $(#[$wtmeta])* $wrapped ),
            )*)?
        }

        impl $name {
            /// The contract's code for this error.
            pub fn code(&self) -> $crate::error::ErrorCode {
                match self {
                    $( $name::$variant { .. } => $crate::error::ErrorCode::$code, )*
                    $($( $name::$wrapper(wrapped) => wrapped.code(), )*)?
                }
            }
        }
    };
}
pub(crate) use coded;

use crate::domain::{InvalidClientUploadId, InvalidEventSlug, InvalidText, InvalidUploadWindow, WeakPassword};
use crate::events::EventError;
use crate::ingest::IngestError;
use crate::resumable::ResumableError;

coded! {
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("this request needs a guest, organiser or admin token")]
    Unauthenticated => Unauthenticated,
    #[error("this action is for the event's organiser")]
    Forbidden => Forbidden,
    #[error("likes and comments are for the event's guests; organisers moderate")]
    GuestsOnly => Forbidden,
    #[error("the guestbook is for the event's guests; organisers moderate it")]
    GuestbookForGuests => Forbidden,
    #[error("you joined another event")]
    WrongEvent => WrongEvent,
    #[error("a request carrying cookies must come from this server's own pages")]
    CrossOrigin => CrossOrigin,
    #[error("the join token is not this event's")]
    InvalidJoinToken => InvalidJoinToken,
    #[error("this is not the event's current screen link")]
    InvalidScreenToken => InvalidScreenToken,
    #[error("wrong password")]
    InvalidCredentials => InvalidCredentials,
    #[error("too many attempts from this address; try again in {retry_after_s} s")]
    TooManyAttempts { retry_after_s: u64 } => TooManyAttempts,
    #[error("no event with this name")]
    EventNotFound => EventNotFound,
    #[error("not found")]
    NotFound => NotFound,
    #[error("this photo was deleted; it is not stored again")]
    UploadDeleted => UploadDeleted,
    #[error("`client_upload_id` must be a UUID")]
    InvalidClientUploadId => InvalidClientUploadId,
    #[error("{0}")]
    UnsupportedMediaType(String) => UnsupportedMediaType,
    #[error("{0}")]
    WeakPassword(String) => WeakPassword,
    #[error("{0}")]
    InvalidDisplayName(String) => InvalidDisplayName,
    #[error("{0}")]
    InvalidCaption(String) => InvalidCaption,
    #[error("{0}")]
    InvalidComment(String) => InvalidComment,
    #[error("{0}")]
    InvalidWebhook(String) => InvalidWebhook,
    #[error("{0}")]
    InvalidGuestbookMessage(String) => InvalidGuestbookMessage,
    #[error("{0}")]
    InvalidRequest(String) => InvalidRequest,
    #[error("{0}")]
    InvalidCursor(String) => InvalidCursor,
    #[error("{0}")]
    InvalidContentHashes(String) => InvalidContentHashes,
    #[error("the Idempotency-Key must be 1–255 printable ASCII characters")]
    InvalidIdempotencyKey => InvalidIdempotencyKey,
    #[error("an earlier request with this Idempotency-Key is still running; retry in {retry_after_s} s")]
    IdempotencyKeyInFlight { retry_after_s: u64 } => IdempotencyKeyInFlight,
    #[error("this Idempotency-Key was used for a different request")]
    IdempotencyKeyReused => IdempotencyKeyReused,
    #[error("the request body is larger than the limit of {limit_bytes} bytes")]
    BodyTooLarge { limit_bytes: u64 } => BodyTooLarge,
    #[error("the range starts beyond the end of the file ({len} bytes)")]
    RangeNotSatisfiable { len: u64 } => RangeNotSatisfiable,
    #[error("this resource does not allow that method")]
    MethodNotAllowed => MethodNotAllowed,
    /// Which part does not answer, for the operator.
    #[error("{0}")]
    NotReady(String) => NotReady,
    #[error("the organiser has turned off saving other guests' photos")]
    DownloadsDisabled => DownloadsDisabled,
    #[error("{0}")]
    InvalidWelcomeText(String) => InvalidWelcomeText,
    #[error("{0}")]
    InvalidCover(String) => InvalidCover,
    #[error("{0}")]
    InvalidUploadWindow(String) => InvalidUploadWindow,
    #[error("the hosts have stopped your uploads")]
    GuestBlocked => GuestBlocked,
    #[error("this event already has {limit} co-organisers; revoke one first")]
    CoOrganiserLimit { limit: i64 } => CoOrganiserLimit,
    #[error("this photo is not deleted")]
    UploadNotDeleted => UploadNotDeleted,
    #[error("{count} photos selected; at most {limit} are moderated in one request")]
    SelectionTooLarge { count: usize, limit: usize } => SelectionTooLarge,
    #[error("{0}")]
    InvalidReason(String) => InvalidReason,
    #[error("this photo can no longer be restored")]
    UndoExpired => UndoExpired,
    #[error("the upload's length is missing: send Upload-Length")]
    UploadLengthRequired => UploadLengthRequired,
    #[error("{0}")]
    InconsistentUploadLength(String) => InconsistentUploadLength,
    #[error("internal error")]
    Internal(#[from] anyhow::Error) => Internal,
}
// The use cases' errors, answered as they declare them: their code beside each variant,
// their text as the `detail`. A refusal a use case adds needs no line here.
wraps {
    #[error(transparent)]
    Ingest(#[from] IngestError),
    /// Never `ResumableError::Refused`: that one is answered as the `IngestError` it holds.
    #[error(transparent)]
    Resumable(ResumableError),
    #[error(transparent)]
    Event(#[from] EventError),
}
}

/// A resumable upload's refusal, or the upload use case's refusal it carries, as it is.
impl From<ResumableError> for ApiError {
    fn from(e: ResumableError) -> Self {
        match e {
            ResumableError::Refused(refusal) => ApiError::Ingest(refusal),
            e => ApiError::Resumable(e),
        }
    }
}

impl ApiError {
    pub fn status(&self) -> StatusCode {
        self.code().status()
    }

    /// Extra members a client can act on without parsing `detail` (which limit, how much is left).
    fn extensions(&self, problem: &mut Problem) {
        use {IngestError as I, ResumableError as R};
        match *self {
            ApiError::Ingest(I::FileTooLarge { limit_bytes }) | ApiError::BodyTooLarge { limit_bytes } => {
                problem.limit_bytes = Some(limit_bytes);
            }
            ApiError::Ingest(I::EventStorageFull { cap_bytes, remaining_bytes }) => {
                problem.cap_bytes = Some(cap_bytes);
                problem.remaining_bytes = Some(remaining_bytes);
            }
            ApiError::Ingest(I::QuotaExceeded { quota_bytes, remaining_bytes }) => {
                problem.quota_bytes = Some(quota_bytes);
                problem.remaining_bytes = Some(remaining_bytes);
            }
            ApiError::Ingest(I::ImageTooLarge { pixels, limit }) => {
                problem.pixels = Some(pixels);
                problem.limit_pixels = Some(limit);
            }
            ApiError::Ingest(I::VideoTooLong { duration_s, limit_s }) => {
                problem.duration_s = Some(duration_s);
                problem.limit_seconds = Some(limit_s);
            }
            ApiError::TooManyAttempts { retry_after_s } => problem.retry_after_s = Some(retry_after_s),
            ApiError::Resumable(R::UploadOffsetMismatch { expected, provided }) => {
                problem.expected_offset = Some(expected);
                problem.provided_offset = Some(provided);
            }
            _ => {}
        }
    }

    /// Headers a client acts on: when to try again, where a resumable upload stands.
    fn headers(&self, headers: &mut HeaderMap) {
        use ResumableError as R;
        match *self {
            ApiError::TooManyAttempts { retry_after_s } | ApiError::IdempotencyKeyInFlight { retry_after_s } => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(retry_after_s));
            }
            ApiError::Resumable(R::UploadBusy { offset }) => {
                headers.insert("upload-offset", HeaderValue::from(offset));
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            }
            ApiError::Resumable(
                R::UploadOffsetMismatch { expected: offset, .. } | R::InsufficientStorage { offset },
            ) => {
                headers.insert("upload-offset", HeaderValue::from(offset));
            }
            ApiError::RangeNotSatisfiable { len } => {
                if let Ok(value) = HeaderValue::from_str(&format!("bytes */{len}")) {
                    headers.insert(header::CONTENT_RANGE, value);
                }
            }
            _ => {}
        }
    }
}

/// RFC 9457 problem details, as every `/api/v1` error is answered (`Content-Type: application/problem+json`).
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct Problem {
    /// `https://confetti.invalid/problems/{code}`.
    #[serde(rename = "type")]
    #[schema(format = "uri", examples("https://confetti.invalid/problems/quota_exceeded"))]
    pub kind: String,
    /// The status's reason phrase.
    #[schema(examples("Payload Too Large"))]
    pub title: String,
    #[schema(minimum = 400, maximum = 599)]
    pub status: u16,
    /// For people; never branch on it. A 5xx says only that the failure was logged.
    pub detail: String,
    pub code: ErrorCode,
    /// With `file_too_large`: `max_upload_bytes`; with `body_too_large`: the body limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub limit_bytes: Option<u64>,
    /// With `quota_exceeded`: the guest's quota.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub quota_bytes: Option<i64>,
    /// With `event_storage_full`: the event's storage cap.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub cap_bytes: Option<i64>,
    /// With `quota_exceeded`: what is left of it; with `event_storage_full`: what is left of the cap.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub remaining_bytes: Option<i64>,
    /// With `image_too_large`: the pixels the image header declares.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub pixels: Option<u64>,
    /// With `image_too_large`: `max_image_pixels`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub limit_pixels: Option<u64>,
    /// With `video_too_long`: the video's duration as its header says, in whole seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub duration_s: Option<u64>,
    /// With `video_too_long`: `max_video_seconds`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub limit_seconds: Option<u64>,
    /// With `too_many_attempts`: seconds until the next attempt is allowed (as in `Retry-After`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, minimum = 1)]
    pub retry_after_s: Option<u64>,
    /// With `upload_offset_mismatch`: the upload resource's offset.
    #[serde(rename = "expected-offset", skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub expected_offset: Option<u64>,
    /// With `upload_offset_mismatch`: the offset the request named.
    #[serde(rename = "provided-offset", skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub provided_offset: Option<u64>,
}

/// The failures no request can do anything about (the database, the photo store) are each error
/// type's internal error: one rule, for every type that takes an `anyhow::Error` as its internal one.
macro_rules! internal_failures {
    ($($error:ty),* $(,)?) => {
        $(
            impl From<sqlx::Error> for $error {
                fn from(e: sqlx::Error) -> Self {
                    Self::from(anyhow::Error::from(e))
                }
            }

            impl From<object_store::Error> for $error {
                fn from(e: object_store::Error) -> Self {
                    Self::from(anyhow::Error::from(e))
                }
            }
        )*
    };
}

internal_failures!(ApiError, crate::ingest::IngestError, crate::resumable::ResumableError, crate::events::EventError);

/// Values that do not parse, as the contract names them.
impl From<InvalidText> for ApiError {
    fn from(e: InvalidText) -> Self {
        match e {
            InvalidText::DisplayName(why) => ApiError::InvalidDisplayName(why),
            InvalidText::EventName(why) => ApiError::InvalidRequest(why),
            InvalidText::Caption(why) => ApiError::InvalidCaption(why),
            InvalidText::Comment(why) => ApiError::InvalidComment(why),
            InvalidText::GuestbookMessage(why) => ApiError::InvalidGuestbookMessage(why),
            InvalidText::WelcomeText(why) => ApiError::InvalidWelcomeText(why),
            InvalidText::RejectReason(why) => ApiError::InvalidReason(why),
        }
    }
}

impl From<InvalidClientUploadId> for ApiError {
    fn from(_: InvalidClientUploadId) -> Self {
        ApiError::InvalidClientUploadId
    }
}

/// A slug no event can have names no event.
impl From<InvalidEventSlug> for ApiError {
    fn from(_: InvalidEventSlug) -> Self {
        ApiError::EventNotFound
    }
}

impl From<InvalidUploadWindow> for ApiError {
    fn from(e: InvalidUploadWindow) -> Self {
        ApiError::InvalidUploadWindow(e.0)
    }
}

impl From<WeakPassword> for ApiError {
    fn from(e: WeakPassword) -> Self {
        ApiError::WeakPassword(e.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = self.code();
        let status = code.status();
        // A 5xx keeps its cause in the log; only running out of disk is something the guest
        // should read as it is, and which part of the server is not ready (never why: that
        // is in the log) something a load balancer's operator should.
        let detail =
            if status.is_server_error() && !matches!(code, ErrorCode::InsufficientStorage | ErrorCode::NotReady) {
                tracing::error!(error = ?self, "request failed");
                "The server could not complete this request. It has been logged.".to_owned()
            } else {
                self.to_string()
            };
        let mut body = Problem {
            kind: problem_type(code),
            title: status.canonical_reason().unwrap_or("Error").to_owned(),
            status: status.as_u16(),
            detail,
            code,
            limit_bytes: None,
            quota_bytes: None,
            cap_bytes: None,
            remaining_bytes: None,
            pixels: None,
            limit_pixels: None,
            duration_s: None,
            limit_seconds: None,
            retry_after_s: None,
            expected_offset: None,
            provided_offset: None,
        };
        self.extensions(&mut body);
        let mut response = (status, axum::Json(body)).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/problem+json"));
        self.headers(headers);
        response
    }
}

/// The problem type: Confetti's own, or the one the resumable-upload draft registers with IANA.
fn problem_type(code: ErrorCode) -> String {
    match code {
        ErrorCode::UploadOffsetMismatch => {
            "https://iana.org/assignments/http-problem-types#mismatching-upload-offset".into()
        }
        ErrorCode::InconsistentUploadLength => {
            "https://iana.org/assignments/http-problem-types#inconsistent-upload-length".into()
        }
        code => format!("https://confetti.invalid/problems/{}", code.as_str()),
    }
}

pub type ApiResult<T> = Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;

    async fn answer(error: impl Into<ApiError>) -> (StatusCode, HeaderMap, serde_json::Value) {
        let response = error.into().into_response();
        let (parts, body) = response.into_parts();
        let bytes = axum::body::to_bytes(body, 64 * 1024).await.unwrap_or_default();
        (parts.status, parts.headers, serde_json::from_slice(&bytes).unwrap_or_default())
    }

    /// A use case's refusal is answered as its variant declares it: code, status, text and
    /// members, with no table in between.
    #[tokio::test]
    async fn a_use_case_refusal_is_answered_with_its_own_code_text_and_members() {
        let refusal = IngestError::QuotaExceeded { quota_bytes: 10, remaining_bytes: 1 };
        let said = refusal.to_string();
        let (status, headers, body) = answer(refusal).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(headers[header::CONTENT_TYPE], "application/problem+json");
        assert_eq!(body["code"], "quota_exceeded");
        assert_eq!(body["detail"], said.as_str());
        assert_eq!((body["quota_bytes"].as_i64(), body["remaining_bytes"].as_i64()), (Some(10), Some(1)));
    }

    /// The upload use case's refusal inside a resumable upload's error is answered as itself.
    #[tokio::test]
    async fn a_refusal_a_resumable_upload_carries_is_answered_as_the_upload_use_case_s() {
        let error = ApiError::from(ResumableError::Refused(IngestError::ImageTooLarge { pixels: 9, limit: 4 }));
        assert!(matches!(error, ApiError::Ingest(IngestError::ImageTooLarge { .. })));
        let (status, _, body) = answer(error).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!((body["code"].as_str(), body["pixels"].as_u64()), (Some("image_too_large"), Some(9)));
    }

    /// Where a resumable upload stands travels in its headers, the disk's floor included.
    #[tokio::test]
    async fn a_resumable_refusal_says_where_the_upload_stands() {
        let (status, headers, body) = answer(ResumableError::InsufficientStorage { offset: 7 }).await;
        assert_eq!(status, StatusCode::INSUFFICIENT_STORAGE);
        assert_eq!(headers["upload-offset"], "7");
        assert_eq!(body["detail"], ResumableError::InsufficientStorage { offset: 7 }.to_string().as_str());
        let (status, headers, _) = answer(ResumableError::UploadBusy { offset: 3 }).await;
        assert_eq!(status, StatusCode::CONFLICT);
        assert_eq!(headers["upload-offset"], "3");
        assert_eq!(headers[header::RETRY_AFTER], "1");
    }

    /// An internal failure inside a use case says nothing of its cause.
    #[tokio::test]
    async fn a_use_case_s_internal_failure_hides_its_cause() {
        let (status, _, body) = answer(IngestError::Superseded).await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(body["code"], "internal");
        assert_eq!(body["detail"], "The server could not complete this request. It has been logged.");
    }
}
