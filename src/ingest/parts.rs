//! The seam between a transport and the upload use case: the parts of one upload, in the
//! order the client sent them. The one-request upload reads them from a multipart body
//! (`http::upload_parts`); a resumable upload can give the key and caption it was created with
//! and then the file it assembled from its pieces.

use std::future::Future;

use bytes::Bytes;

use crate::domain::{Caption, ClientUploadId, FileName};

/// One part of an upload, already parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    /// The key the client made for this photo.
    Key(ClientUploadId),
    /// The caption (`None`: declared empty).
    Caption(Option<Caption>),
    /// The file, under the name the phone gave it; its bytes follow through `file_chunk`.
    File(FileName),
}

/// Why a source could not give the next part or chunk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PartsError {
    /// The body is longer than any upload may be: the source gives up and nothing more of it
    /// is read.
    TooLarge,
    /// The parts cannot be read (broken framing, a lost connection, text that is not UTF-8).
    Malformed(String),
    /// A key that is not a UUID.
    InvalidKey,
    /// A caption that does not parse, and why.
    InvalidCaption(String),
}

/// Where the parts of one upload come from. The use case reads a file part's bytes with
/// `file_chunk` right after `next_part` gave it, or not at all; the next `next_part` skips
/// whatever of it was not read. The use case stops reading at the first error.
pub trait UploadParts: Send {
    /// The next part, or `None` after the last.
    fn next_part(&mut self) -> impl Future<Output = Result<Option<Part>, PartsError>> + Send;

    /// The current file part's next bytes, or `None` at its end.
    fn file_chunk(&mut self) -> impl Future<Output = Result<Option<Bytes>, PartsError>> + Send;
}
