//! Keys and slugs that arrive in requests.

use uuid::Uuid;

/// The key a phone's page makes once per queued photo. Any UUID is accepted (the page makes
/// v4 ones from `crypto.getRandomValues`); the nil UUID is refused as it is no one's own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientUploadId(Uuid);

/// A `client_upload_id` that is not a UUID, or is the nil UUID.
#[derive(Debug, thiserror::Error)]
#[error("`client_upload_id` must be a UUID")]
pub struct InvalidClientUploadId;

impl ClientUploadId {
    pub fn parse(raw: &str) -> Result<Self, InvalidClientUploadId> {
        match Uuid::try_parse(raw.trim()) {
            Ok(id) if !id.is_nil() => Ok(Self(id)),
            _ => Err(InvalidClientUploadId),
        }
    }

    /// For the `Idempotency-Key` header: a value that is not a UUID is somebody else's key
    /// (some browsers add their own) and means nothing here.
    pub fn from_header(raw: &str) -> Option<Self> {
        Self::parse(raw).ok()
    }

    pub fn uuid(self) -> Uuid {
        self.0
    }

    /// A key read back from the database (never the nil UUID there).
    pub fn from_uuid(id: Uuid) -> Option<Self> {
        (!id.is_nil()).then_some(Self(id))
    }
}

/// An event's slug in a URL: lower-case letters, digits and dashes, at most 80 characters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventSlug(String);

/// A slug no event can have: no event has this name.
#[derive(Debug, thiserror::Error)]
#[error("no event with this name")]
pub struct InvalidEventSlug;

impl EventSlug {
    pub fn parse(raw: &str) -> Result<Self, InvalidEventSlug> {
        let ok = !raw.is_empty()
            && raw.len() <= 80
            && raw.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if ok { Ok(Self(raw.to_owned())) } else { Err(InvalidEventSlug) }
    }

    /// A new slug for an event name: its ASCII letters and digits, then a random suffix
    /// so that two "Hochzeit" events never collide and slugs cannot be guessed in order.
    pub fn generate(name: &str, random_suffix: &str) -> Self {
        let mut base = String::new();
        for c in name.chars().flat_map(char::to_lowercase) {
            let mapped = match c {
                'ä' => "ae",
                'ö' => "oe",
                'ü' => "ue",
                'ß' => "ss",
                c if c.is_ascii_alphanumeric() => {
                    base.push(c);
                    continue;
                }
                _ => "-",
            };
            base.push_str(mapped);
        }
        let base: String = base.split('-').filter(|p| !p.is_empty()).collect::<Vec<_>>().join("-");
        let base: String = base.chars().take(40).collect();
        let base = base.trim_end_matches('-');
        if base.is_empty() { Self(format!("event-{random_suffix}")) } else { Self(format!("{base}-{random_suffix}")) }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_readable_and_unique() {
        assert_eq!(EventSlug::generate("Anna & Ben's Hochzeit!", "x7k2").as_str(), "anna-ben-s-hochzeit-x7k2");
        assert_eq!(EventSlug::generate("Grüße", "a1").as_str(), "gruesse-a1");
        assert_eq!(EventSlug::generate("🎉", "a1").as_str(), "event-a1");
        assert!(EventSlug::parse("anna-ben-x7k2").is_ok());
        assert!(EventSlug::parse("../etc").is_err());
    }

    #[test]
    fn client_upload_ids_must_be_uuids() {
        assert!(ClientUploadId::parse("0190a5a8-5e2b-7c3d-8e4f-1a2b3c4d5e6f").is_ok());
        assert!(ClientUploadId::parse("not-a-uuid").is_err());
        assert!(ClientUploadId::parse("00000000-0000-0000-0000-000000000000").is_err());
        assert!(ClientUploadId::from_header(":abc:").is_none());
    }
}
