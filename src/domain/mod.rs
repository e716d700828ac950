//! Values that parse: once constructed, a name, caption or key is known to be valid.
//! Handlers turn raw input into these at the edge and the rest of the code never re-checks.
//! A value that does not parse is a domain error of its own; the HTTP edge maps it to a
//! problem (`crate::error`), the command line prints it.

mod capture;
mod host_modes;
mod ids;
mod password;
mod status;
mod text;
mod upload_window;

pub use capture::{CaptureSource, Captured};
pub use host_modes::{Gallery, Review};
pub use ids::{ClientUploadId, EventSlug, InvalidClientUploadId, InvalidEventSlug};
pub use password::{OrganiserPassword, WeakPassword};
pub use status::{MediaKind, UploadStatus};
pub use text::{
    Caption, CommentText, DisplayName, EventName, FileName, GuestbookText, InvalidText, RejectReason, WelcomeText,
    is_format,
};
pub use upload_window::{InvalidUploadWindow, UploadWindow, WindowState, parse_window_end, rfc3339};
