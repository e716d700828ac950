//! User-provided text: display names, event names, captions and file names.
//! Lengths count characters (what a person typed), not bytes.

use crate::error::ApiError;

fn clean(raw: &str) -> String {
    raw.trim().chars().filter(|c| !c.is_control()).collect()
}

/// A guest's name as shown beside their photos: 1–60 characters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DisplayName(String);

impl DisplayName {
    pub const MAX_CHARS: usize = 60;

    pub fn parse(raw: &str) -> Result<Self, ApiError> {
        let name = clean(raw);
        match name.chars().count() {
            0 => Err(ApiError::InvalidDisplayName("the display name must not be empty".into())),
            n if n > Self::MAX_CHARS => Err(ApiError::InvalidDisplayName(format!(
                "the display name has {n} characters; at most {} are allowed",
                Self::MAX_CHARS
            ))),
            _ => Ok(Self(name)),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// An event's name: 1–120 characters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventName(String);

impl EventName {
    pub const MAX_CHARS: usize = 120;

    pub fn parse(raw: &str) -> Result<Self, ApiError> {
        let name = clean(raw);
        match name.chars().count() {
            0 => Err(ApiError::InvalidRequest("the event name must not be empty".into())),
            n if n > Self::MAX_CHARS => Err(ApiError::InvalidRequest(format!(
                "the event name has {n} characters; at most {} are allowed",
                Self::MAX_CHARS
            ))),
            _ => Ok(Self(name)),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A photo's caption: at most 500 characters; an empty caption is no caption.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caption(String);

impl Caption {
    pub const MAX_CHARS: usize = 500;

    pub fn parse(raw: &str) -> Result<Option<Self>, ApiError> {
        let text = raw.trim();
        match text.chars().count() {
            0 => Ok(None),
            n if n > Self::MAX_CHARS => Err(ApiError::InvalidCaption(format!(
                "the caption has {n} characters; at most {} are allowed",
                Self::MAX_CHARS
            ))),
            _ => Ok(Some(Self(text.to_owned()))),
        }
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

/// A comment on a photo: 1–1000 characters after trimming.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommentText(String);

impl CommentText {
    pub const MAX_CHARS: usize = 1000;

    pub fn parse(raw: &str) -> Result<Self, ApiError> {
        let text = raw.trim();
        match text.chars().count() {
            0 => Err(ApiError::InvalidComment("the comment is empty".into())),
            n if n > Self::MAX_CHARS => Err(ApiError::InvalidComment(format!(
                "the comment has {n} characters; at most {} are allowed",
                Self::MAX_CHARS
            ))),
            _ => Ok(Self(text.to_owned())),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The file name a phone sent, without any directory part, at most 255 characters.
/// A missing or empty name becomes `photo`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileName(String);

impl FileName {
    const MAX_CHARS: usize = 255;

    pub fn parse(raw: Option<&str>) -> Self {
        let raw = raw.unwrap_or_default();
        let base = raw.rsplit(['/', '\\']).next().unwrap_or_default();
        let name: String = clean(base).chars().take(Self::MAX_CHARS).collect();
        if name.is_empty() || name == "." || name == ".." { Self("photo".into()) } else { Self(name) }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_are_trimmed_and_bounded() {
        assert_eq!(DisplayName::parse("  Anna ").map(|n| n.0).ok(), Some("Anna".to_owned()));
        assert!(DisplayName::parse("   ").is_err());
        assert!(DisplayName::parse(&"ä".repeat(60)).is_ok());
        assert!(DisplayName::parse(&"ä".repeat(61)).is_err());
    }

    #[test]
    fn file_names_lose_their_directories() {
        assert_eq!(FileName::parse(Some("C:\\Users\\a\\IMG_1.jpg")).as_str(), "IMG_1.jpg");
        assert_eq!(FileName::parse(Some("../../etc/passwd")).as_str(), "passwd");
        assert_eq!(FileName::parse(None).as_str(), "photo");
        assert_eq!(FileName::parse(Some("dir/")).as_str(), "photo");
    }

    #[test]
    fn empty_captions_are_no_caption() {
        assert!(matches!(Caption::parse("  "), Ok(None)));
        assert!(Caption::parse(&"x".repeat(501)).is_err());
    }
}
