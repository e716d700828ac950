//! `IngestError`: every way the upload use case refuses or fails, as values, each named as the
//! contract names it, with its code beside it and its text the problem's `detail`: the API
//! answers it as it is (`ApiError::Ingest`), so a new refusal is its line here (and, for a new
//! code, its line in `ErrorCode`).

use crate::db::guests::UploadsShut;
use crate::domain::rfc3339;
use crate::error::coded;

coded! {
/// Why an upload was not stored (and, for a key already used, why it is not a replay).
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    #[error("uploads are closed for this event")]
    UploadsClosed => UploadsClosed,
    /// The event's upload window begins at this moment.
    #[error("uploads for this event open at {}", rfc3339(*.0))]
    UploadsNotOpenYet(chrono::DateTime<chrono::Utc>) => UploadsClosed,
    /// The event's upload window ended at this moment.
    #[error("uploads for this event closed at {}", rfc3339(*.0))]
    UploadsEnded(chrono::DateTime<chrono::Utc>) => UploadsClosed,
    #[error("the hosts have stopped your uploads")]
    GuestBlocked => GuestBlocked,
    #[error("your quota is used up: {remaining_bytes} of {quota_bytes} bytes left")]
    QuotaExceeded { quota_bytes: i64, remaining_bytes: i64 } => QuotaExceeded,
    #[error("this event's storage is full: {remaining_bytes} of {cap_bytes} bytes left for all guests together")]
    EventStorageFull { cap_bytes: i64, remaining_bytes: i64 } => EventStorageFull,
    #[error("the file is larger than the limit of {limit_bytes} bytes")]
    FileTooLarge { limit_bytes: u64 } => FileTooLarge,
    #[error("{0}")]
    UnsupportedMediaType(String) => UnsupportedMediaType,
    #[error("the image declares {pixels} pixels; the limit is {limit}")]
    ImageTooLarge { pixels: u64, limit: u64 } => ImageTooLarge,
    #[error("the video lasts {duration_s} seconds; the limit is {limit_s} seconds")]
    VideoTooLong { duration_s: u64, limit_s: u64 } => VideoTooLong,
    #[error("the server is running out of disk space; uploads are paused until its operator makes room")]
    InsufficientStorage => InsufficientStorage,
    /// The key is another guest's.
    #[error("this upload id is already used by another upload")]
    ClientUploadIdConflict => ClientUploadIdConflict,
    /// The key is this guest's, for another file or caption.
    #[error("this upload id was used for another file: {0}")]
    ClientUploadIdReused(String) => ClientUploadIdReused,
    /// The key names an upload that was deleted.
    #[error("this photo was deleted; it is not stored again")]
    UploadDeleted => UploadDeleted,
    /// Two different keys in one request.
    #[error("the Idempotency-Key header and the `client_upload_id` part name different uploads")]
    IdempotencyKeyMismatch => IdempotencyKeyMismatch,
    #[error("`client_upload_id` must be a UUID")]
    InvalidClientUploadId => InvalidClientUploadId,
    #[error("{0}")]
    InvalidCaption(String) => InvalidCaption,
    #[error("the request has no `file` part")]
    MissingFile => MissingFile,
    /// The parts cannot be read, or there are two files.
    #[error("the request body is not valid multipart/form-data: {0}")]
    InvalidMultipart(String) => InvalidMultipart,
    /// A resumable upload's lease is no longer the completing request's (taken over,
    /// cancelled, or completed by another request): nothing was committed, the holder decides.
    #[error("another request completes or cancels this upload now")]
    Superseded => Internal,
    #[error("internal error")]
    Internal(#[from] anyhow::Error) => Internal,
}
}

/// The event's switch or window, as a refusal.
impl From<UploadsShut> for IngestError {
    fn from(shut: UploadsShut) -> Self {
        match shut {
            UploadsShut::Closed => IngestError::UploadsClosed,
            UploadsShut::NotYet(opens_at) => IngestError::UploadsNotOpenYet(opens_at),
            UploadsShut::Ended(closed_at) => IngestError::UploadsEnded(closed_at),
        }
    }
}
