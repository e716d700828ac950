//! Values that parse: once constructed, a name, caption or key is known to be valid.
//! Handlers turn raw input into these at the edge and the rest of the code never re-checks.

mod ids;
mod password;
mod status;
mod text;

pub use ids::{ClientUploadId, EventSlug};
pub use password::OrganiserPassword;
pub use status::UploadStatus;
pub use text::{Caption, CommentText, DisplayName, EventName, FileName, is_format};
