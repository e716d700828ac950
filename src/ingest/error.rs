//! `IngestError`: every way the upload use case refuses or fails, as values. The HTTP layer
//! maps each to the contract's problem in one place (`http::upload_parts`).

use crate::db::guests::UploadsShut;

/// Why an upload was not stored (and, for a key already used, why it is not a replay).
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    #[error("uploads are closed for this event")]
    UploadsClosed,
    /// The event's upload window begins at this moment.
    #[error("uploads for this event open at {0}")]
    UploadsNotOpenYet(chrono::DateTime<chrono::Utc>),
    /// The event's upload window ended at this moment.
    #[error("uploads for this event closed at {0}")]
    UploadsEnded(chrono::DateTime<chrono::Utc>),
    #[error("the hosts have stopped this guest's uploads")]
    GuestBlocked,
    #[error("the guest's quota is used up: {remaining_bytes} of {quota_bytes} bytes left")]
    QuotaExceeded { quota_bytes: i64, remaining_bytes: i64 },
    #[error("the event's storage is full: {remaining_bytes} of {cap_bytes} bytes left")]
    EventStorageFull { cap_bytes: i64, remaining_bytes: i64 },
    #[error("the file is larger than the limit of {limit_bytes} bytes")]
    TooLarge { limit_bytes: u64 },
    #[error("{0}")]
    UnsupportedMediaType(String),
    #[error("the image declares {pixels} pixels; the limit is {limit}")]
    TooManyPixels { pixels: u64, limit: u64 },
    #[error("the video lasts {duration_s} s; the limit is {limit_s} s")]
    VideoTooLong { duration_s: u64, limit_s: u64 },
    #[error("the photo store's disk is below its free-space floor")]
    InsufficientStorage,
    /// The key is another guest's.
    #[error("this upload id is already used by another upload")]
    KeyConflict,
    /// The key is this guest's, for another file or caption.
    #[error("this upload id was used for another file: {0}")]
    KeyReused(String),
    /// The key names an upload that was deleted.
    #[error("this photo was deleted; it is not stored again")]
    UploadDeleted,
    /// Two different keys in one request.
    #[error("the request names two different upload ids")]
    KeyMismatch,
    #[error("`client_upload_id` must be a UUID")]
    InvalidKey,
    #[error("{0}")]
    InvalidCaption(String),
    #[error("the upload has no file")]
    MissingFile,
    /// The parts cannot be read, or there are two files.
    #[error("the upload's parts cannot be read: {0}")]
    InvalidMultipart(String),
    /// A resumable upload's lease is no longer the completing request's (taken over,
    /// cancelled, or completed by another request): nothing was committed, the holder decides.
    #[error("another request completes or cancels this upload now")]
    Superseded,
    #[error("internal error")]
    Internal(#[from] anyhow::Error),
}

/// The database and the blob store failing are internal errors.
impl From<sqlx::Error> for IngestError {
    fn from(e: sqlx::Error) -> Self {
        IngestError::Internal(e.into())
    }
}

impl From<object_store::Error> for IngestError {
    fn from(e: object_store::Error) -> Self {
        IngestError::Internal(e.into())
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
