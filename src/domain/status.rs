//! Where an upload's derivatives stand: the values of `uploads.status`. Whether an upload is
//! hidden is a flag of its own; the API shows `hidden` in place of the status (`http::views`).

/// An upload's status as stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UploadStatus {
    /// Stored; its thumb and preview are not made yet.
    Processing,
    /// Thumb and preview exist.
    Ready,
    /// The original could not be decoded; it stays downloadable.
    Failed,
}

impl UploadStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            UploadStatus::Processing => "processing",
            UploadStatus::Ready => "ready",
            UploadStatus::Failed => "failed",
        }
    }
}

/// Read from the database, which holds the text.
impl TryFrom<String> for UploadStatus {
    type Error = String;

    fn try_from(stored: String) -> Result<Self, String> {
        match stored.as_str() {
            "processing" => Ok(UploadStatus::Processing),
            "ready" => Ok(UploadStatus::Ready),
            "failed" => Ok(UploadStatus::Failed),
            _ => Err(format!("`{stored}` is not an upload status")),
        }
    }
}

/// What an upload is: `uploads.kind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MediaKind {
    Photo,
    Video,
}

impl MediaKind {
    pub fn as_str(self) -> &'static str {
        match self {
            MediaKind::Photo => "photo",
            MediaKind::Video => "video",
        }
    }
}

impl TryFrom<String> for MediaKind {
    type Error = String;

    fn try_from(stored: String) -> Result<Self, String> {
        match stored.as_str() {
            "photo" => Ok(MediaKind::Photo),
            "video" => Ok(MediaKind::Video),
            _ => Err(format!("`{stored}` is not an upload kind")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_reads_back_as_itself() {
        for status in [UploadStatus::Processing, UploadStatus::Ready, UploadStatus::Failed] {
            assert_eq!(UploadStatus::try_from(status.as_str().to_owned()), Ok(status));
        }
        assert!(UploadStatus::try_from("hidden".to_owned()).is_err(), "hidden is a flag, not a status");
    }
}
