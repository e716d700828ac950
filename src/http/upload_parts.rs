//! The transport of the one-request upload: its multipart body read as the use case's parts
//! (`MultipartParts`), `Expect: 100-continue`, draining what is not read, and the answer that
//! closes the connection while the body is still arriving.

use std::sync::Arc;

use axum::body::{BodyDataStream, Bytes};
use axum::extract::Request;
use axum::http::{HeaderMap, header};
use futures_util::StreamExt;

use super::multipart::{self, Limits, MultipartError, MultipartReader};
use crate::db::guests::GuestRow;
use crate::domain::{Caption, ClientUploadId, FileName};
use crate::error::{ApiError, ApiResult};
use crate::ingest::{Ingest, IngestError, Ingested, Part, PartsError, UploadParts};

/// Text parts are small; a `client_upload_id` is 36 characters, a caption at most 500.
const MAX_KEY_PART_BYTES: usize = 200;
const MAX_CAPTION_PART_BYTES: usize = 4 * Caption::MAX_CHARS;

/// The answer to an upload request, and the rest of its body when the answer comes before
/// the body ended: the connection must then be closed, or what is still arriving would be
/// read as the next request.
pub struct Outcome {
    pub result: ApiResult<Ingested>,
    pub unread: Option<BodyDataStream>,
}

/// Runs the upload use case on one request's body.
pub async fn ingest(
    ingest: &Arc<Ingest>,
    guest: GuestRow,
    header_key: Option<ClientUploadId>,
    request: Request,
) -> Outcome {
    let max_upload_bytes = ingest.limits().max_file_bytes();
    let limits = Limits::for_upload(max_upload_bytes);
    let (head, body) = request.into_parts();
    let body = body.into_data_stream();
    let expects_continue = expects_continue(&head.headers);
    let upload = match ingest.begin(guest, header_key).await {
        Ok(upload) => upload,
        // The client sends no body unless asked to.
        Err(refusal) if expects_continue => return Outcome { result: Err(refusal.into()), unread: None },
        Err(refusal) => {
            let unread = drain_body(body, limits.body).await;
            return Outcome { result: Err(refusal.into()), unread };
        }
    };
    if expects_continue && let Some(row) = upload.known_replay() {
        return Outcome { result: Ok(Ingested::Replayed(row)), unread: None };
    }
    let boundary = match multipart::boundary(&head.headers) {
        Ok(boundary) => boundary,
        Err(e) => return Outcome { result: Err(multipart_refusal(e, max_upload_bytes)), unread: Some(body) },
    };
    let mut parts = MultipartParts { reader: MultipartReader::new(body, &boundary, limits) };
    let result = upload.run(&mut parts).await.map_err(ApiError::from);
    Outcome { result, unread: parts.finish().await }
}

fn expects_continue(headers: &HeaderMap) -> bool {
    headers.get(header::EXPECT).is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"))
}

/// An upload's parts as a multipart body carries them: `client_upload_id`, `caption` and
/// `file`, in any order; other parts are skipped.
struct MultipartParts {
    reader: MultipartReader<BodyDataStream>,
}

impl UploadParts for MultipartParts {
    async fn next_part(&mut self) -> Result<Option<Part>, PartsError> {
        loop {
            let Some(head) = self.reader.next_part().await.map_err(parts_error)? else {
                return Ok(None);
            };
            let part = match head.name.as_deref().unwrap_or_default() {
                "client_upload_id" => {
                    let text = self.read_text(MAX_KEY_PART_BYTES, PartsError::InvalidKey).await?;
                    Part::Key(ClientUploadId::parse(&text).map_err(|_| PartsError::InvalidKey)?)
                }
                "caption" => {
                    let too_long = format!("the caption may have at most {} characters", Caption::MAX_CHARS);
                    let text = self.read_text(MAX_CAPTION_PART_BYTES, PartsError::InvalidCaption(too_long)).await?;
                    Part::Caption(Caption::parse(&text).map_err(|e| PartsError::InvalidCaption(e.to_string()))?)
                }
                "file" => Part::File(FileName::parse(head.file_name.as_deref())),
                // Skipped by the next `next_part`.
                _ => continue,
            };
            return Ok(Some(part));
        }
    }

    async fn file_chunk(&mut self) -> Result<Option<Bytes>, PartsError> {
        self.reader.chunk().await.map_err(parts_error)
    }
}

impl MultipartParts {
    /// A text part, whole.
    async fn read_text(&mut self, max_bytes: usize, too_long: PartsError) -> Result<String, PartsError> {
        let mut buf = Vec::new();
        while let Some(chunk) = self.reader.chunk().await.map_err(parts_error)? {
            if buf.len() + chunk.len() > max_bytes {
                return Err(too_long);
            }
            buf.extend_from_slice(&chunk);
        }
        String::from_utf8(buf).map_err(|_| PartsError::Malformed("a text part is not UTF-8".into()))
    }

    /// After the answer: reads what is left of the parts, so the client sees the answer
    /// instead of a reset connection (the reader's bounds stop a body that goes on too long);
    /// the rest of a body the reader gave up on.
    async fn finish(mut self) -> Option<BodyDataStream> {
        if self.reader.failure().is_none() {
            while let Ok(Some(_)) = self.reader.next_part().await {}
        }
        (!self.reader.finished()).then(|| self.reader.into_inner())
    }
}

fn parts_error(e: MultipartError) -> PartsError {
    match e {
        MultipartError::TooLarge => PartsError::TooLarge,
        MultipartError::Malformed(why) | MultipartError::Transport(why) => PartsError::Malformed(why),
    }
}

/// A body that is not multipart at all.
fn multipart_refusal(e: MultipartError, max_upload_bytes: u64) -> ApiError {
    match e {
        MultipartError::TooLarge => IngestError::FileTooLarge { limit_bytes: max_upload_bytes }.into(),
        MultipartError::Malformed(why) | MultipartError::Transport(why) => IngestError::InvalidMultipart(why).into(),
    }
}

/// Reads and throws away a body that will not be parsed, up to `budget` bytes; what is left
/// of it when it goes on longer.
async fn drain_body(mut body: BodyDataStream, mut budget: u64) -> Option<BodyDataStream> {
    loop {
        match body.next().await {
            None => return None,
            Some(Ok(chunk)) => match budget.checked_sub(chunk.len() as u64) {
                Some(left) => budget = left,
                None => return Some(body),
            },
            Some(Err(_)) => return Some(body),
        }
    }
}
