//! The organiser's password as chosen when an event is created.

pub struct OrganiserPassword(String);

/// A password too short to keep an event's photos private, or too long for bcrypt.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct WeakPassword(String);

impl OrganiserPassword {
    pub const MIN_CHARS: usize = 8;
    /// bcrypt reads at most 72 bytes; a longer password would be silently cut.
    pub const MAX_BYTES: usize = 72;

    pub fn parse(raw: &str) -> Result<Self, WeakPassword> {
        if raw.chars().count() < Self::MIN_CHARS {
            return Err(WeakPassword(format!("the organiser password needs at least {} characters", Self::MIN_CHARS)));
        }
        if raw.len() > Self::MAX_BYTES {
            return Err(WeakPassword(format!("the organiser password may have at most {} bytes", Self::MAX_BYTES)));
        }
        Ok(Self(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}
