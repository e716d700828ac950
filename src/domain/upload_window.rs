//! The time in which an event takes new uploads, as its organiser set it: from a moment, until
//! a moment, both, or neither (always). It adds to the organiser's switch (`uploads_open`):
//! both must allow an upload.

use chrono::{DateTime, SecondsFormat, Utc};

/// A window whose ends are out of order, or an end that is no RFC 3339 time.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct InvalidUploadWindow(pub String);

/// When uploads are open: `from` (inclusive) until `until` (exclusive); a missing end is open.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UploadWindow {
    pub from: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
}

/// Where a moment lies in the window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowState {
    /// Uploads open at this moment.
    NotYet(DateTime<Utc>),
    Open,
    /// Uploads closed at this moment.
    Ended(DateTime<Utc>),
}

impl UploadWindow {
    /// A window whose ends are in order (`from` before `until`, when both are set).
    pub fn new(from: Option<DateTime<Utc>>, until: Option<DateTime<Utc>>) -> Result<Self, InvalidUploadWindow> {
        if let (Some(from), Some(until)) = (from, until)
            && from >= until
        {
            return Err(InvalidUploadWindow(format!(
                "uploads_open_from ({}) must be before uploads_open_until ({})",
                rfc3339(from),
                rfc3339(until)
            )));
        }
        Ok(Self { from, until })
    }

    pub fn at(&self, now: DateTime<Utc>) -> WindowState {
        match (self.from, self.until) {
            (Some(from), _) if now < from => WindowState::NotYet(from),
            (_, Some(until)) if now >= until => WindowState::Ended(until),
            _ => WindowState::Open,
        }
    }
}

/// One end of the window as a client sent it: an RFC 3339 time with its offset.
pub fn parse_window_end(field: &str, raw: &str) -> Result<DateTime<Utc>, InvalidUploadWindow> {
    DateTime::parse_from_rfc3339(raw.trim()).map(|t| t.with_timezone(&Utc)).map_err(|_| {
        InvalidUploadWindow(format!("{field} must be an RFC 3339 time such as 2026-06-14T14:00:00Z, or null"))
    })
}

/// As the API writes times: RFC 3339 UTC, milliseconds, `Z`.
pub fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        parse_window_end("t", s).expect("time")
    }

    #[test]
    fn a_window_is_open_from_its_start_until_just_before_its_end() {
        let w =
            UploadWindow::new(Some(t("2026-06-14T14:00:00Z")), Some(t("2026-06-15T02:00:00+02:00"))).expect("window");
        assert_eq!(w.at(t("2026-06-14T13:59:59Z")), WindowState::NotYet(t("2026-06-14T14:00:00Z")));
        assert_eq!(w.at(t("2026-06-14T14:00:00Z")), WindowState::Open);
        assert_eq!(w.at(t("2026-06-14T23:59:59Z")), WindowState::Open);
        assert_eq!(w.at(t("2026-06-15T00:00:00Z")), WindowState::Ended(t("2026-06-15T00:00:00Z")));
        assert_eq!(UploadWindow::default().at(t("2000-01-01T00:00:00Z")), WindowState::Open);
    }

    #[test]
    fn ends_out_of_order_or_not_rfc_3339_are_refused() {
        let at = Some(t("2026-06-14T14:00:00Z"));
        assert!(UploadWindow::new(at, at).is_err());
        assert!(UploadWindow::new(Some(t("2026-06-15T00:00:00Z")), at).is_err());
        assert!(UploadWindow::new(None, at).is_ok());
        assert!(parse_window_end("uploads_open_from", "2026-06-14 14:00").is_err());
        assert!(parse_window_end("uploads_open_from", "tomorrow").is_err());
    }
}
