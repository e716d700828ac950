//! A bounded, streaming reader of `multipart/form-data` request bodies (RFC 7578 over the
//! framing of RFC 2046): the parts in order, each part's data as `Bytes` cut from the
//! connection's own chunks. Whatever a client sends, the reader holds at most one incoming
//! chunk plus the longer of the boundary and the header bound, and it refuses a body at once
//! when the preamble, a part's headers, the number of parts or the whole body exceeds its
//! `Limits` — a body whose boundary never comes is not kept waiting for it. `linger` reads
//! what is left of a refused body for a moment, so that the client sees the refusal.

use bytes::{Buf, Bytes, BytesMut};
use futures_util::{Stream, StreamExt};
use memchr::memmem;

mod headers;
#[cfg(test)]
mod tests;

pub use headers::boundary;
use headers::parse_head;

/// How much of a body the reader accepts before refusing it.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Bytes before the first boundary (clients send none).
    pub preamble: usize,
    /// One part's header block, from the end of its boundary line to its blank line.
    pub part_headers: usize,
    /// Parts in one body (an upload has three).
    pub parts: usize,
    /// The whole body.
    pub body: u64,
}

impl Limits {
    /// Room for the framing, headers and text parts around a file of `max_upload_bytes`.
    pub const UPLOAD_OVERHEAD: u64 = 64 * 1024;

    pub fn for_upload(max_upload_bytes: u64) -> Self {
        Self {
            preamble: 4 * 1024,
            part_headers: 8 * 1024,
            parts: 16,
            body: max_upload_bytes.saturating_add(Self::UPLOAD_OVERHEAD),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MultipartError {
    /// Not `multipart/form-data`, broken framing, or over a bound other than the body's size.
    Malformed(String),
    /// The body is longer than `Limits::body`.
    TooLarge,
    /// The body could not be read: the client went away or stalled.
    Transport(String),
}

/// What a part's headers say about it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PartHead {
    pub name: Option<String>,
    pub file_name: Option<String>,
    pub content_type: Option<String>,
}

/// After a refusal sent before the body ended: reads and throws away what the client is still
/// sending, for at most `LINGER_BYTES`, and holds the connection open until `LINGER` has passed,
/// so its TCP stack does not reset the connection (and lose the refusal) while it is still
/// writing: a client that sent `LINGER_BYTES` within milliseconds then waits on its full socket
/// buffers, and reads the answer. Then the body is dropped and the connection closes. Holds one
/// chunk at a time.
pub fn linger<S, E>(mut body: S)
where
    S: Stream<Item = Result<Bytes, E>> + Unpin + Send + 'static,
{
    tokio::spawn(async move {
        let until = tokio::time::Instant::now() + LINGER;
        let mut left = LINGER_BYTES;
        let _ = tokio::time::timeout_at(until, async {
            while let Some(Ok(chunk)) = body.next().await {
                left = left.saturating_sub(chunk.len() as u64);
                if left == 0 {
                    break;
                }
            }
        })
        .await;
        tokio::time::sleep_until(until).await;
        drop(body);
    });
}

const LINGER: std::time::Duration = std::time::Duration::from_secs(2);
const LINGER_BYTES: u64 = 4 * 1024 * 1024;

/// Reads parts from a body's data stream. `next_part` moves to the next part (skipping what is
/// left of the current one); `chunk` reads the current part's data.
pub struct MultipartReader<S> {
    parser: Parser,
    stream: S,
}

impl<S, E> MultipartReader<S>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
    E: std::fmt::Display,
{
    pub fn new(stream: S, boundary: &str, limits: Limits) -> Self {
        Self { parser: Parser::new(boundary, limits), stream }
    }

    /// The next part's head, or `None` after the closing boundary.
    pub async fn next_part(&mut self) -> Result<Option<PartHead>, MultipartError> {
        loop {
            match self.event().await? {
                Event::Part(head) => return Ok(Some(head)),
                Event::End => return Ok(None),
                Event::Data(_) | Event::PartEnd | Event::NeedData => {}
            }
        }
    }

    /// The current part's next chunk of data, or `None` at its end.
    pub async fn chunk(&mut self) -> Result<Option<Bytes>, MultipartError> {
        // After a failure the stage stays as it was, and `event` repeats the failure.
        if self.parser.stage != Stage::Data {
            return Ok(None);
        }
        match self.event().await? {
            Event::Data(data) => Ok(Some(data)),
            _ => Ok(None),
        }
    }

    /// Whether the closing boundary was read: the rest of the body is an epilogue to ignore.
    pub fn finished(&self) -> bool {
        matches!(self.parser.stage, Stage::End)
    }

    /// Why the body was refused, if it was: the rest of it will not be read.
    pub fn failure(&self) -> Option<&MultipartError> {
        self.parser.failed.as_ref()
    }

    /// The body stream, where the reader stopped.
    pub fn into_inner(self) -> S {
        self.stream
    }

    async fn event(&mut self) -> Result<Event, MultipartError> {
        loop {
            match self.parser.next_event()? {
                Event::NeedData => match self.stream.next().await {
                    Some(Ok(chunk)) => self.parser.push(chunk),
                    Some(Err(e)) => {
                        return Err(self
                            .parser
                            .fail(MultipartError::Transport(format!("reading the body failed: {e}"))));
                    }
                    None => self.parser.eof = true,
                },
                event => return Ok(event),
            }
        }
    }
}

/// What the parser found in what it was given so far.
#[derive(Debug, PartialEq, Eq)]
enum Event {
    /// Nothing more can be said without the next chunk (or the end of the body).
    NeedData,
    Part(PartHead),
    Data(Bytes),
    PartEnd,
    End,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// Before the first `--boundary`.
    Preamble,
    /// Just after a `--boundary`: `--` ends the body, else padding and CRLF start a part.
    AfterBoundary,
    /// `buf` starts with the boundary line's CRLF; the part's headers follow up to a blank line.
    Headers,
    /// A part's data, up to the next CRLF `--boundary`.
    Data,
    /// After the closing boundary.
    End,
}

/// The synchronous core: chunks in, events out. Unconsumed bytes stay in `buf`, which never
/// holds more than one chunk plus `Parser::bound()` bytes kept from earlier chunks.
struct Parser {
    /// `--boundary`, which opens the first part.
    dash_boundary: Vec<u8>,
    /// CRLF `--boundary`, which ends every part.
    delimiter: Vec<u8>,
    /// Searches every data chunk for `delimiter`; built once per body.
    find_delimiter: memmem::Finder<'static>,
    limits: Limits,
    stage: Stage,
    buf: Bytes,
    eof: bool,
    received: u64,
    preamble: usize,
    /// Transport padding after the current boundary.
    padding: usize,
    parts: usize,
    failed: Option<MultipartError>,
}

impl Parser {
    fn new(boundary: &str, limits: Limits) -> Self {
        let dash_boundary = [b"--", boundary.as_bytes()].concat();
        let delimiter = [b"\r\n", &dash_boundary[..]].concat();
        Self {
            find_delimiter: memmem::Finder::new(&delimiter).into_owned(),
            dash_boundary,
            delimiter,
            limits,
            stage: Stage::Preamble,
            buf: Bytes::new(),
            eof: false,
            received: 0,
            preamble: 0,
            padding: 0,
            parts: 0,
            failed: None,
        }
    }

    /// The most the parser keeps from earlier chunks while it waits for the next.
    fn bound(&self) -> usize {
        self.limits.part_headers.max(self.delimiter.len())
    }

    fn push(&mut self, chunk: Bytes) {
        self.received += chunk.len() as u64;
        if self.received > self.limits.body {
            self.fail(MultipartError::TooLarge);
            return;
        }
        debug_assert!(self.buf.len() < self.bound(), "the parser kept {} bytes", self.buf.len());
        if self.buf.is_empty() {
            self.buf = chunk;
        } else if !chunk.is_empty() {
            // Only the few bytes kept from the last chunk (a boundary's start, a header's
            // start) make this copy; data usually passes through uncopied.
            let mut joined = BytesMut::with_capacity(self.buf.len() + chunk.len());
            joined.extend_from_slice(&self.buf);
            joined.extend_from_slice(&chunk);
            self.buf = joined.freeze();
        }
    }

    fn fail(&mut self, error: MultipartError) -> MultipartError {
        self.buf = Bytes::new();
        self.failed.get_or_insert(error).clone()
    }

    fn malformed(&mut self, why: impl Into<String>) -> Result<Event, MultipartError> {
        Err(self.fail(MultipartError::Malformed(why.into())))
    }

    fn next_event(&mut self) -> Result<Event, MultipartError> {
        if let Some(error) = &self.failed {
            return Err(error.clone());
        }
        loop {
            match self.stage {
                Stage::Preamble => {
                    let found = memmem::find(&self.buf, &self.dash_boundary);
                    // Without a boundary, all but its possible start is preamble.
                    let skip = found.unwrap_or(self.buf.len().saturating_sub(self.dash_boundary.len() - 1));
                    self.preamble += skip;
                    if self.preamble > self.limits.preamble {
                        return self.malformed(format!("no boundary in the first {} bytes", self.limits.preamble));
                    }
                    self.buf.advance(skip);
                    if found.is_none() {
                        if self.eof {
                            return self.malformed("the body has no boundary");
                        }
                        return Ok(Event::NeedData);
                    }
                    self.buf.advance(self.dash_boundary.len());
                    self.stage = Stage::AfterBoundary;
                    self.padding = 0;
                }
                Stage::AfterBoundary => {
                    if self.padding == 0 && self.buf.starts_with(b"--") {
                        // The rest is an epilogue, which nobody reads.
                        self.buf = Bytes::new();
                        self.stage = Stage::End;
                        continue;
                    }
                    let padding = self.buf.iter().take_while(|&&b| b == b' ' || b == b'\t').count();
                    self.padding += padding;
                    self.buf.advance(padding);
                    if self.padding > self.limits.part_headers {
                        return self.malformed("a boundary line is too long");
                    }
                    if self.buf.starts_with(b"\r\n") {
                        self.parts += 1;
                        if self.parts > self.limits.parts {
                            return self.malformed(format!("the body has more than {} parts", self.limits.parts));
                        }
                        self.stage = Stage::Headers;
                        continue;
                    }
                    let may_continue = match &self.buf[..] {
                        [] | [b'\r'] => true,
                        [b'-'] => self.padding == 0,
                        _ => false,
                    };
                    if !may_continue {
                        return self.malformed("a boundary must be followed by CRLF or `--`");
                    }
                    if self.eof {
                        return self.malformed("the body ends after a boundary");
                    }
                    return Ok(Event::NeedData);
                }
                Stage::Headers => {
                    let Some(at) = memmem::find(&self.buf, b"\r\n\r\n") else {
                        if self.buf.len() >= self.limits.part_headers {
                            return self.malformed(format!(
                                "a part's headers are longer than {} bytes",
                                self.limits.part_headers
                            ));
                        }
                        if self.eof {
                            return self.malformed("the body ends inside a part's headers");
                        }
                        return Ok(Event::NeedData);
                    };
                    if at + 4 > self.limits.part_headers {
                        return self
                            .malformed(format!("a part's headers are longer than {} bytes", self.limits.part_headers));
                    }
                    // `buf` starts with the boundary line's CRLF; `at` is where the last header
                    // line ends (0 when there are none).
                    let head = match parse_head(self.buf.get(2..at).unwrap_or_default()) {
                        Ok(head) => head,
                        Err(why) => return self.malformed(why),
                    };
                    self.buf.advance(at + 4);
                    self.stage = Stage::Data;
                    return Ok(Event::Part(head));
                }
                Stage::Data => {
                    if let Some(at) = self.find_delimiter.find(&self.buf) {
                        if at > 0 {
                            return Ok(Event::Data(self.buf.split_to(at)));
                        }
                        self.buf.advance(self.delimiter.len());
                        self.stage = Stage::AfterBoundary;
                        self.padding = 0;
                        return Ok(Event::PartEnd);
                    }
                    if self.eof {
                        return self.malformed("the body ends inside a part");
                    }
                    let keep = partial_suffix(&self.buf, &self.delimiter);
                    if self.buf.len() > keep {
                        return Ok(Event::Data(self.buf.split_to(self.buf.len() - keep)));
                    }
                    return Ok(Event::NeedData);
                }
                Stage::End => return Ok(Event::End),
            }
        }
    }
}

/// The length of the longest end of `buf` that could be the start of `delimiter`, which
/// begins with CR: those bytes wait for the next chunk to tell.
fn partial_suffix(buf: &[u8], delimiter: &[u8]) -> usize {
    let window = buf.len().saturating_sub(delimiter.len() - 1);
    memchr::memchr_iter(b'\r', &buf[window..])
        .map(|i| window + i)
        .find(|&start| delimiter.starts_with(&buf[start..]))
        .map_or(0, |start| buf.len() - start)
}
