//! Watches an upload stream by: after its first bytes, tells a video container from anything
//! else (so the video size limit applies from then on), and walks an MP4's top-level boxes as
//! they pass, so a file that starts like an MP4 but is not one is refused after its first few
//! kilobytes rather than after its last, and the movie header (`moov`) is found wherever it is —
//! at the end, in files from phones that do not write it first. A movie header that comes before
//! the media data (a "fast start" file) and is at most `MAX_STREAMED_MOOV` is kept as it passes,
//! so the video's duration is checked before the rest arrives; otherwise only a few bytes are held.

use super::bmff::{box_header, container_of, plausible_type};
use super::ebml::{EBML_MAGIC, doc_type};
use super::{Container, Span};

/// Top-level boxes of one MP4 (a fragmented file has two per fragment).
const MAX_TOP_BOXES: u64 = 1_000_000;
/// A movie header kept as it streams by: one of a half-hour phone video is about 1 MB.
pub const MAX_STREAMED_MOOV: u64 = 1024 * 1024;
/// An EBML header longer than this is not one a muxer wrote.
const MAX_EBML_HEADER: usize = 4096;

/// What the stream showed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ContainerSniff {
    /// Not a video container: the image probe decides.
    NotVideo,
    /// An ISO BMFF video; where its movie header is, if it has one.
    Bmff { container: Container, moov: Option<Span>, streamed_moov: Option<Vec<u8>> },
    /// A WebM or Matroska video; its headers are at its start.
    Ebml { container: Container },
    /// It started as a video container and then was not one.
    Damaged(String),
}

#[derive(Debug)]
pub struct ContainerWalker {
    state: State,
    /// Bytes seen so far.
    len: u64,
}

#[derive(Debug)]
enum State {
    /// The first bytes (at most 12), until they tell.
    Undecided(Vec<u8>),
    NotVideo,
    Bmff(Boxes),
    /// The EBML header, until its document type is read.
    EbmlHead(Vec<u8>),
    Ebml(Container),
    Damaged(String),
}

impl Default for ContainerWalker {
    fn default() -> Self {
        Self { state: State::Undecided(Vec::with_capacity(12)), len: 0 }
    }
}

#[derive(Debug)]
struct Boxes {
    container: Container,
    /// Where the next top-level box starts.
    next: u64,
    /// Its header, as far as it has arrived.
    header: Vec<u8>,
    count: u64,
    moov: Option<Span>,
    /// The movie header's bytes, header included, while they pass (when it comes before the
    /// media data and is small enough). One at the end is read back from the store instead.
    moov_bytes: Option<Vec<u8>>,
    /// A media data box has passed.
    seen_mdat: bool,
    /// The last box said "to the end of the file".
    to_end: bool,
}

impl ContainerWalker {
    /// Whether the file is a video: `None` until its first bytes tell.
    pub fn is_video(&self) -> Option<bool> {
        match self.state {
            State::Undecided(_) => None,
            State::NotVideo => Some(false),
            State::Bmff(_) | State::EbmlHead(_) | State::Ebml(_) | State::Damaged(_) => Some(true),
        }
    }

    /// The movie header (and its container), once it has passed whole, when it was small
    /// enough to keep.
    pub fn streamed_moov(&self) -> Option<(Container, &[u8])> {
        match &self.state {
            State::Bmff(boxes) => boxes.streamed_moov().map(|moov| (boxes.container, moov)),
            _ => None,
        }
    }

    /// Why the file is refused already, before its end.
    pub fn refusal(&self) -> Option<&str> {
        match &self.state {
            State::Damaged(why) => Some(why),
            _ => None,
        }
    }

    pub fn update(&mut self, chunk: &[u8]) {
        let start = self.len;
        self.len += chunk.len() as u64;
        match &mut self.state {
            State::Undecided(first) => {
                let taken = (12 - first.len()).min(chunk.len());
                first.extend_from_slice(&chunk[..taken]);
                let first = std::mem::take(first);
                self.classify(first, &chunk[taken..], start + taken as u64);
            }
            State::Bmff(boxes) => {
                if let Err(why) = boxes.feed(chunk, start) {
                    self.state = State::Damaged(why);
                }
            }
            State::EbmlHead(head) => {
                let take = (MAX_EBML_HEADER + 16 - head.len()).min(chunk.len());
                head.extend_from_slice(&chunk[..take]);
                let head = std::mem::take(head);
                self.ebml_head(head);
            }
            State::NotVideo | State::Ebml(_) | State::Damaged(_) => {}
        }
    }

    /// Decides from the first bytes (`first`, from offset 0) what the file is; `rest` follows
    /// them at offset `rest_start`.
    fn classify(&mut self, first: Vec<u8>, rest: &[u8], rest_start: u64) {
        if first.starts_with(&EBML_MAGIC) {
            let mut head = first;
            head.extend_from_slice(&rest[..rest.len().min(MAX_EBML_HEADER + 16 - head.len())]);
            return self.ebml_head(head);
        }
        if first.len() < 12 {
            // Too few bytes yet (or a file this short, which the image probe refuses).
            self.state = State::Undecided(first);
            return;
        }
        if &first[4..8] != b"ftyp" {
            self.state = State::NotVideo;
            return;
        }
        let brand = [first[8], first[9], first[10], first[11]];
        let Some(container) = container_of(&brand) else {
            self.state = State::NotVideo;
            return;
        };
        let mut boxes = Boxes {
            container,
            next: 0,
            header: Vec::with_capacity(16),
            count: 0,
            moov: None,
            moov_bytes: None,
            seen_mdat: false,
            to_end: false,
        };
        let fed = boxes.feed(&first, 0).and_then(|()| boxes.feed(rest, rest_start));
        self.state = match fed {
            Ok(()) => State::Bmff(boxes),
            Err(why) => State::Damaged(why),
        };
    }

    fn ebml_head(&mut self, head: Vec<u8>) {
        match doc_type(&head) {
            Ok(Some(container)) => self.state = State::Ebml(container),
            Ok(None) if head.len() < MAX_EBML_HEADER + 16 => self.state = State::EbmlHead(head),
            Ok(None) => self.state = State::Damaged("the EBML header is too long".into()),
            Err(e) => self.state = State::Damaged(e.to_string()),
        }
    }

    /// What the whole stream showed.
    pub fn finish(self) -> ContainerSniff {
        match self.state {
            State::Undecided(_) | State::NotVideo => ContainerSniff::NotVideo,
            State::EbmlHead(head) => match doc_type(&head) {
                Ok(Some(container)) => ContainerSniff::Ebml { container },
                Ok(None) => ContainerSniff::Damaged("the WebM/Matroska file is cut short".into()),
                Err(e) => ContainerSniff::Damaged(e.to_string()),
            },
            State::Ebml(container) => ContainerSniff::Ebml { container },
            State::Damaged(why) => ContainerSniff::Damaged(why),
            State::Bmff(boxes) => boxes.finish(self.len),
        }
    }
}

impl Boxes {
    /// Follows the top-level boxes through `data`, which starts at offset `start`, keeping a
    /// small movie header's bytes as they pass.
    fn feed(&mut self, data: &[u8], start: u64) -> Result<(), String> {
        self.walk(data, start)?;
        if let (Some((at, size)), Some(kept)) = (self.moov, &mut self.moov_bytes) {
            let from = start.max(at + kept.len() as u64);
            let to = (start + data.len() as u64).min(at.saturating_add(size));
            if from < to {
                kept.extend_from_slice(&data[(from - start) as usize..(to - start) as usize]);
            }
        }
        Ok(())
    }

    /// A complete movie header kept as it passed.
    fn streamed_moov(&self) -> Option<&[u8]> {
        let (_, size) = self.moov?;
        self.moov_bytes.as_deref().filter(|kept| kept.len() as u64 == size)
    }

    fn walk(&mut self, data: &[u8], start: u64) -> Result<(), String> {
        let end = start + data.len() as u64;
        loop {
            if self.to_end {
                return Ok(());
            }
            let from = self.next + self.header.len() as u64;
            if from >= end {
                return Ok(());
            }
            // Eight bytes of header; sixteen when the size is in the 64-bit field.
            let large = self.header.len() >= 4 && self.header[..4] == [0, 0, 0, 1];
            let want = if large { 16 } else { 8 };
            let i = (from - start) as usize;
            let take = (want - self.header.len()).min(data.len() - i);
            self.header.extend_from_slice(&data[i..i + take]);
            if self.header.len() < 8 {
                continue;
            }
            let parsed =
                box_header(&self.header).map_err(|why| format!("the {} file is damaged: {why}", self.name()))?;
            let Some((fourcc, _, total)) = parsed else { continue };
            let header = std::mem::replace(&mut self.header, Vec::with_capacity(16));
            if !plausible_type(&fourcc) {
                return Err(format!(
                    "the file starts like {} but is not one: a box at byte {} has no valid type",
                    self.name(),
                    self.next
                ));
            }
            self.count += 1;
            if self.count > MAX_TOP_BOXES {
                return Err(format!("the {} file has too many boxes", self.name()));
            }
            if self.count == 1 && (&fourcc != b"ftyp" || total.is_none_or(|t| !(16..=4096).contains(&t))) {
                return Err(format!("the {} file's type box is damaged", self.name()));
            }
            if &fourcc == b"moov" {
                if self.moov.is_some() {
                    return Err(format!("the {} file has two movie headers", self.name()));
                }
                self.moov = Some((self.next, total.unwrap_or(u64::MAX)));
                if !self.seen_mdat && total.is_some_and(|t| t <= MAX_STREAMED_MOOV) {
                    self.moov_bytes = Some(header);
                }
            }
            self.seen_mdat |= &fourcc == b"mdat";
            match total {
                Some(total) => self.next += total,
                None => self.to_end = true,
            }
        }
    }

    fn name(&self) -> &'static str {
        self.container.name()
    }

    fn finish(self, len: u64) -> ContainerSniff {
        let name = self.name();
        if !self.to_end && self.next != len {
            return ContainerSniff::Damaged(format!("the {name} file is cut short (its last box is incomplete)"));
        }
        // A movie header "to the end of the file" ends where the file does.
        let moov = self.moov.map(|(at, size)| (at, if size == u64::MAX { len - at } else { size }));
        let streamed_moov = self.moov_bytes.filter(|b| moov.is_some_and(|(_, size)| b.len() as u64 == size));
        ContainerSniff::Bmff { container: self.container, moov, streamed_moov }
    }
}

#[cfg(test)]
mod tests;
