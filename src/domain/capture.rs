//! When a photo or video was taken, as far as the server can tell: the time its file states
//! (EXIF `DateTimeOriginal`, a video's movie header), else the time it was uploaded. A stated
//! time after the upload is no capture time (a camera's clock set wrong): the upload time
//! stands in for it, so no upload is ever dated in the future.

use chrono::{DateTime, Utc};

/// Where an upload's capture time comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaptureSource {
    /// The photo's EXIF (JPEG, HEIC).
    Exif,
    /// The video's container (an MP4's or MOV's movie header).
    Video,
    /// The file states none, or one after its upload: the upload time.
    Upload,
}

impl CaptureSource {
    pub fn as_str(self) -> &'static str {
        match self {
            CaptureSource::Exif => "exif",
            CaptureSource::Video => "video",
            CaptureSource::Upload => "upload",
        }
    }
}

impl TryFrom<String> for CaptureSource {
    type Error = String;

    fn try_from(stored: String) -> Result<Self, String> {
        match stored.as_str() {
            "exif" => Ok(CaptureSource::Exif),
            "video" => Ok(CaptureSource::Video),
            "upload" => Ok(CaptureSource::Upload),
            _ => Err(format!("`{stored}` is not a capture time's source")),
        }
    }
}

/// An upload's capture time, decided once as it is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Captured {
    /// The time the file states, when it is usable (not after the upload); else `None`.
    pub taken_at: Option<DateTime<Utc>>,
    /// `taken_at`, else the upload time.
    pub at: DateTime<Utc>,
    pub source: CaptureSource,
}

impl Captured {
    /// `stated` is the file's own time (from `source`, `Exif` or `Video`); `uploaded` the upload time.
    pub fn decide(stated: Option<DateTime<Utc>>, source: CaptureSource, uploaded: DateTime<Utc>) -> Self {
        match stated.filter(|t| *t <= uploaded) {
            Some(t) if source != CaptureSource::Upload => Captured { taken_at: Some(t), at: t, source },
            _ => Captured { taken_at: None, at: uploaded, source: CaptureSource::Upload },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn a_stated_time_before_the_upload_is_the_capture_time() {
        let c = Captured::decide(Some(at("2026-06-12T14:03:22Z")), CaptureSource::Exif, at("2026-06-13T00:00:00Z"));
        assert_eq!(
            (c.taken_at, c.at, c.source),
            (Some(at("2026-06-12T14:03:22Z")), at("2026-06-12T14:03:22Z"), CaptureSource::Exif)
        );
    }

    #[test]
    fn a_time_after_the_upload_gives_way_to_the_upload_time() {
        let uploaded = at("2026-06-13T00:00:00Z");
        let c = Captured::decide(Some(at("2026-06-13T00:00:01Z")), CaptureSource::Video, uploaded);
        assert_eq!((c.taken_at, c.at, c.source), (None, uploaded, CaptureSource::Upload));
        let none = Captured::decide(None, CaptureSource::Exif, uploaded);
        assert_eq!((none.taken_at, none.at, none.source), (None, uploaded, CaptureSource::Upload));
    }

    #[test]
    fn every_source_reads_back_as_itself() {
        for s in [CaptureSource::Exif, CaptureSource::Video, CaptureSource::Upload] {
            assert_eq!(CaptureSource::try_from(s.as_str().to_owned()), Ok(s));
        }
        assert!(CaptureSource::try_from("camera".to_owned()).is_err());
    }
}
