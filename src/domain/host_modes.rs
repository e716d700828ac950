//! The host modes of an event: who besides its uploader and the organiser sees a guest's photo.
//! A photo waits for the organiser's approval while the event's review gate is on
//! (`uploads.review`); an event's gallery is shared with every guest, or private ("drop box":
//! each guest sees their own photos), and a shared gallery may open only at a set time.

use chrono::{DateTime, Utc};

/// Whether an upload waits for the organiser's approval: the values of `uploads.review`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Review {
    /// Uploaded while the event's review gate was on; seen by its uploader and the organiser only.
    Pending,
    /// Seen by whoever may see the event's gallery.
    Approved,
}

impl Review {
    pub fn as_str(self) -> &'static str {
        match self {
            Review::Pending => "pending",
            Review::Approved => "approved",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        match raw {
            "pending" => Some(Review::Pending),
            "approved" => Some(Review::Approved),
            _ => None,
        }
    }
}

/// Read from the database, which holds the text.
impl TryFrom<String> for Review {
    type Error = String;

    fn try_from(stored: String) -> Result<Self, String> {
        Review::parse(&stored).ok_or_else(|| format!("`{stored}` is not a review state"))
    }
}

/// Whose photos an event's guests see: the values of `events.gallery`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gallery {
    /// Every guest sees every (approved, shown) photo.
    Everyone,
    /// Each guest sees their own photos only; the organiser sees all ("drop box").
    OwnUploads,
}

impl Gallery {
    pub fn as_str(self) -> &'static str {
        match self {
            Gallery::Everyone => "everyone",
            Gallery::OwnUploads => "own_uploads",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        match raw {
            "everyone" => Some(Gallery::Everyone),
            "own_uploads" => Some(Gallery::OwnUploads),
            _ => None,
        }
    }

    /// Whether the event's guests see each other's photos at `now`: the gallery is shared and,
    /// when it opens at a set time, that time has come (by the server's clock).
    pub fn shared(self, opens_at: Option<DateTime<Utc>>, now: DateTime<Utc>) -> bool {
        self == Gallery::Everyone && opens_at.is_none_or(|at| at <= now)
    }
}

/// Read from the database, which holds the text.
impl TryFrom<String> for Gallery {
    type Error = String;

    fn try_from(stored: String) -> Result<Self, String> {
        Gallery::parse(&stored).ok_or_else(|| format!("`{stored}` is not a gallery mode"))
    }
}

#[cfg(test)]
mod tests {
    use chrono::Duration;

    use super::*;

    #[test]
    fn a_gallery_opens_at_its_time_and_a_private_one_never() {
        let now = Utc::now();
        assert!(Gallery::Everyone.shared(None, now));
        assert!(Gallery::Everyone.shared(Some(now), now));
        assert!(Gallery::Everyone.shared(Some(now - Duration::seconds(1)), now));
        assert!(!Gallery::Everyone.shared(Some(now + Duration::seconds(1)), now));
        assert!(!Gallery::OwnUploads.shared(None, now));
        assert!(!Gallery::OwnUploads.shared(Some(now - Duration::days(1)), now));
    }

    #[test]
    fn stored_values_read_back() {
        for review in [Review::Pending, Review::Approved] {
            assert_eq!(Review::try_from(review.as_str().to_owned()), Ok(review));
        }
        for gallery in [Gallery::Everyone, Gallery::OwnUploads] {
            assert_eq!(Gallery::try_from(gallery.as_str().to_owned()), Ok(gallery));
        }
        assert!(Review::try_from("hidden".to_owned()).is_err());
        assert!(Gallery::try_from("".to_owned()).is_err());
    }
}
