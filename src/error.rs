//! `ApiError`: every way a request can be refused, mapped to a status and a stable `code`
//! in exactly one place each, and rendered as RFC 9457 `application/problem+json`.
//! A 5xx keeps its cause for the log; the client only learns that something failed.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::domain::{InvalidClientUploadId, InvalidEventSlug, InvalidText, WeakPassword};

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("this request needs a guest, organiser or admin token")]
    Unauthenticated,
    #[error("this action is for the event's organiser")]
    Forbidden,
    #[error("you joined another event")]
    WrongEvent,
    #[error("uploads are closed for this event")]
    UploadsClosed,
    #[error("a request carrying cookies must come from this server's own pages")]
    CrossOrigin,
    #[error("the join token is not this event's")]
    InvalidJoinToken,
    #[error("wrong password")]
    InvalidCredentials,
    #[error("too many failed attempts; try again in {retry_after_s} s")]
    TooManyAttempts { retry_after_s: u64 },
    #[error("no event with this name")]
    EventNotFound,
    #[error("not found")]
    NotFound,
    #[error("this photo was deleted; it is not stored again")]
    UploadDeleted,
    #[error("this upload id is already used by another upload")]
    ClientUploadIdConflict,
    #[error("this upload id was used for another file: {0}")]
    ClientUploadIdReused(String),
    #[error("the request body is not valid multipart/form-data: {0}")]
    InvalidMultipart(String),
    #[error("the request has no `file` part")]
    MissingFile,
    #[error("`client_upload_id` must be a UUID")]
    InvalidClientUploadId,
    #[error("the Idempotency-Key header and the `client_upload_id` part name different uploads")]
    IdempotencyKeyMismatch,
    #[error("the file is larger than the limit of {limit_bytes} bytes")]
    FileTooLarge { limit_bytes: u64 },
    #[error("your quota is used up: {remaining_bytes} of {quota_bytes} bytes left")]
    QuotaExceeded { quota_bytes: i64, remaining_bytes: i64 },
    #[error("{0}")]
    UnsupportedMediaType(String),
    #[error("the image declares {pixels} pixels; the limit is {limit}")]
    ImageTooLarge { pixels: u64, limit: u64 },
    #[error("{0}")]
    WeakPassword(String),
    #[error("{0}")]
    InvalidDisplayName(String),
    #[error("{0}")]
    InvalidCaption(String),
    #[error("{0}")]
    InvalidComment(String),
    #[error("{0}")]
    InvalidRequest(String),
    #[error("{0}")]
    InvalidCursor(String),
    #[error("the Idempotency-Key must be 1–255 printable ASCII characters")]
    InvalidIdempotencyKey,
    #[error("an earlier request with this Idempotency-Key is still running; retry in {retry_after_s} s")]
    IdempotencyKeyInFlight { retry_after_s: u64 },
    #[error("this Idempotency-Key was used for a different request")]
    IdempotencyKeyReused,
    #[error("the request body is larger than the limit of {limit_bytes} bytes")]
    BodyTooLarge { limit_bytes: u64 },
    #[error("this event's storage is full: {remaining_bytes} of {cap_bytes} bytes left for all guests together")]
    EventStorageFull { cap_bytes: i64, remaining_bytes: i64 },
    #[error("the server is running out of disk space; uploads are paused until its operator makes room")]
    InsufficientStorage,
    #[error("the range starts beyond the end of the file ({len} bytes)")]
    RangeNotSatisfiable { len: u64 },
    #[error("this resource does not allow that method")]
    MethodNotAllowed,
    #[error("the database does not answer")]
    NotReady,
    #[error("internal error")]
    Internal(#[from] anyhow::Error),
}

impl ApiError {
    pub fn status(&self) -> StatusCode {
        use ApiError::*;
        match self {
            Unauthenticated | InvalidCredentials => StatusCode::UNAUTHORIZED,
            Forbidden | WrongEvent | UploadsClosed | CrossOrigin | InvalidJoinToken => StatusCode::FORBIDDEN,
            TooManyAttempts { .. } => StatusCode::TOO_MANY_REQUESTS,
            EventNotFound | NotFound => StatusCode::NOT_FOUND,
            UploadDeleted => StatusCode::GONE,
            ClientUploadIdConflict => StatusCode::CONFLICT,
            ClientUploadIdReused(_)
            | WeakPassword(_)
            | InvalidDisplayName(_)
            | InvalidCaption(_)
            | InvalidComment(_) => StatusCode::UNPROCESSABLE_ENTITY,
            InvalidMultipart(_)
            | MissingFile
            | InvalidClientUploadId
            | IdempotencyKeyMismatch
            | InvalidRequest(_)
            | InvalidCursor(_) => StatusCode::BAD_REQUEST,
            FileTooLarge { .. }
            | QuotaExceeded { .. }
            | ImageTooLarge { .. }
            | BodyTooLarge { .. }
            | EventStorageFull { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            InsufficientStorage => StatusCode::INSUFFICIENT_STORAGE,
            UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            RangeNotSatisfiable { .. } => StatusCode::RANGE_NOT_SATISFIABLE,
            InvalidIdempotencyKey => StatusCode::BAD_REQUEST,
            IdempotencyKeyInFlight { .. } => StatusCode::CONFLICT,
            IdempotencyKeyReused => StatusCode::UNPROCESSABLE_ENTITY,
            MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            NotReady => StatusCode::SERVICE_UNAVAILABLE,
            Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn code(&self) -> &'static str {
        use ApiError::*;
        match self {
            Unauthenticated => "unauthenticated",
            Forbidden => "forbidden",
            WrongEvent => "wrong_event",
            UploadsClosed => "uploads_closed",
            CrossOrigin => "cross_origin",
            InvalidJoinToken => "invalid_join_token",
            InvalidCredentials => "invalid_credentials",
            TooManyAttempts { .. } => "too_many_attempts",
            EventNotFound => "event_not_found",
            NotFound => "not_found",
            UploadDeleted => "upload_deleted",
            ClientUploadIdConflict => "client_upload_id_conflict",
            ClientUploadIdReused(_) => "client_upload_id_reused",
            InvalidMultipart(_) => "invalid_multipart",
            MissingFile => "missing_file",
            InvalidClientUploadId => "invalid_client_upload_id",
            IdempotencyKeyMismatch => "idempotency_key_mismatch",
            FileTooLarge { .. } => "file_too_large",
            QuotaExceeded { .. } => "quota_exceeded",
            UnsupportedMediaType(_) => "unsupported_media_type",
            ImageTooLarge { .. } => "image_too_large",
            WeakPassword(_) => "weak_password",
            InvalidDisplayName(_) => "invalid_display_name",
            InvalidCaption(_) => "invalid_caption",
            InvalidComment(_) => "invalid_comment",
            InvalidRequest(_) => "invalid_request",
            InvalidCursor(_) => "invalid_cursor",
            BodyTooLarge { .. } => "body_too_large",
            EventStorageFull { .. } => "event_storage_full",
            InsufficientStorage => "insufficient_storage",
            RangeNotSatisfiable { .. } => "range_not_satisfiable",
            InvalidIdempotencyKey => "invalid_idempotency_key",
            IdempotencyKeyInFlight { .. } => "idempotency_key_in_flight",
            IdempotencyKeyReused => "idempotency_key_reused",
            MethodNotAllowed => "method_not_allowed",
            NotReady => "not_ready",
            Internal(_) => "internal",
        }
    }

    /// Extra members a client can act on without parsing `detail` (which limit, how much is left).
    fn extensions(&self) -> serde_json::Value {
        match self {
            ApiError::FileTooLarge { limit_bytes } | ApiError::BodyTooLarge { limit_bytes } => {
                json!({ "limit_bytes": limit_bytes })
            }
            ApiError::EventStorageFull { cap_bytes, remaining_bytes } => {
                json!({ "cap_bytes": cap_bytes, "remaining_bytes": remaining_bytes })
            }
            ApiError::QuotaExceeded { quota_bytes, remaining_bytes } => {
                json!({ "quota_bytes": quota_bytes, "remaining_bytes": remaining_bytes })
            }
            ApiError::ImageTooLarge { pixels, limit } => {
                json!({ "pixels": pixels, "limit_pixels": limit })
            }
            ApiError::TooManyAttempts { retry_after_s } => {
                json!({ "retry_after_s": retry_after_s })
            }
            _ => json!({}),
        }
    }
}

/// Any unexpected failure (database, storage, a panicked blocking task) is an internal error.
impl From<sqlx::Error> for ApiError {
    fn from(e: sqlx::Error) -> Self {
        ApiError::Internal(e.into())
    }
}

impl From<object_store::Error> for ApiError {
    fn from(e: object_store::Error) -> Self {
        ApiError::Internal(e.into())
    }
}

/// Values that do not parse, as the contract names them.
impl From<InvalidText> for ApiError {
    fn from(e: InvalidText) -> Self {
        match e {
            InvalidText::DisplayName(why) => ApiError::InvalidDisplayName(why),
            InvalidText::EventName(why) => ApiError::InvalidRequest(why),
            InvalidText::Caption(why) => ApiError::InvalidCaption(why),
            InvalidText::Comment(why) => ApiError::InvalidComment(why),
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

impl From<WeakPassword> for ApiError {
    fn from(e: WeakPassword) -> Self {
        ApiError::WeakPassword(e.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        // A 5xx keeps its cause in the log; only running out of disk is something the guest
        // should read as it is.
        let detail = if status.is_server_error() && !matches!(self, ApiError::InsufficientStorage) {
            tracing::error!(error = ?self, "request failed");
            "The server could not complete this request. It has been logged.".to_owned()
        } else {
            self.to_string()
        };
        let mut body = json!({
            "type": format!("https://confetti.invalid/problems/{}", self.code()),
            "title": status.canonical_reason().unwrap_or("Error"),
            "status": status.as_u16(),
            "detail": detail,
            "code": self.code(),
        });
        if let (Some(obj), serde_json::Value::Object(ext)) = (body.as_object_mut(), self.extensions()) {
            obj.extend(ext);
        }
        let mut response = (status, axum::Json(body)).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/problem+json"));
        if let ApiError::TooManyAttempts { retry_after_s } | ApiError::IdempotencyKeyInFlight { retry_after_s } = self {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(retry_after_s));
        }
        if let ApiError::RangeNotSatisfiable { len } = self
            && let Ok(value) = HeaderValue::from_str(&format!("bytes */{len}"))
        {
            headers.insert(header::CONTENT_RANGE, value);
        }
        response
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
