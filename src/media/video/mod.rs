//! Video containers, read from their headers without decoding a frame: MP4/MOV (ISO BMFF,
//! `bmff`) and WebM/Matroska (EBML, `ebml`). `sniff` watches an upload stream by, tells a video
//! from anything else after its first bytes, refuses a damaged container early, and notes where
//! an MP4's movie header (`moov`) lies, wherever in the file it is. `probe` then reads duration,
//! dimensions, rotation and codec from that header alone.
//!
//! A small reader of our own rather than a crate: the crates that exist parse whole sample
//! tables (allocations sized by what a file declares) and want the whole file behind a `Seek`;
//! Confetti needs a dozen fields, every size checked against its parent, and hard limits on
//! box counts and nesting.

pub mod bmff;
pub mod ebml;
pub mod sniff;

pub use sniff::{ContainerSniff, ContainerWalker};

/// The containers Confetti accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Container {
    Mp4,
    QuickTime,
    WebM,
    Matroska,
}

impl Container {
    pub fn mime(self) -> &'static str {
        match self {
            Container::Mp4 => "video/mp4",
            Container::QuickTime => "video/quicktime",
            Container::WebM => "video/webm",
            Container::Matroska => "video/x-matroska",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Container::Mp4 => "MP4",
            Container::QuickTime => "QuickTime (MOV)",
            Container::WebM => "WebM",
            Container::Matroska => "Matroska",
        }
    }
}

/// The video codecs Confetti accepts (what phones record and browsers play).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Codec {
    H264,
    Hevc,
    Av1,
    Vp8,
    Vp9,
}

/// What a video's header says.
#[derive(Clone, Debug, PartialEq)]
pub struct VideoProbe {
    pub container: Container,
    pub codec: Codec,
    /// As displayed: a rotation of 90° or 270° swaps width and height.
    pub width: u32,
    pub height: u32,
    /// Clockwise degrees a player turns the frames: 0, 90, 180 or 270.
    pub rotation: u16,
    /// `None` when the container does not say (a live WebM recording).
    pub duration_ms: Option<u64>,
    /// The stream's own size, before rotation (an MP4's SPS, or its sample entry's size): what
    /// the decoder allocates, whatever the track header says. `None`: the container does not say.
    pub coded: Option<(u32, u32)>,
    /// When it was recorded, as the container says (an MP4's or MOV's `mvhd` creation time);
    /// `None` when it does not say (0, or a time before 1971: a camera whose clock was never set).
    pub created: Option<chrono::DateTime<chrono::Utc>>,
}

impl VideoProbe {
    /// The pixels a decoder allocates a frame for: the larger of the stream's and the label's.
    pub fn decoded_pixels(&self) -> u64 {
        let labelled = u64::from(self.width) * u64::from(self.height);
        self.coded.map_or(labelled, |(w, h)| labelled.max(u64::from(w) * u64::from(h)))
    }

    /// Whether the stream is far larger than the track header says: more than twice its pixels
    /// after the coding blocks' padding (a non-square pixel shape explains less than that).
    pub fn understates_its_stream(&self) -> bool {
        let padded = |n: u32| u64::from(n).div_ceil(64) * 64;
        self.coded.is_some_and(|(w, h)| u64::from(w) * u64::from(h) > 2 * padded(self.width) * padded(self.height))
    }
}

#[derive(Debug, PartialEq, thiserror::Error)]
pub enum VideoError {
    /// Not a video Confetti accepts, or damaged; the message names the format.
    #[error("{0}")]
    Unsupported(String),
    /// The header runs past the bytes given: read the file's first `0` bytes and probe again.
    #[error("the video header is longer than the probe's window")]
    NeedMore(u64),
}

/// Where a header or box starts and how long it is.
pub type Span = (u64, u64);

/// The message for a codec Confetti does not take.
fn unsupported_codec(container: Container, codec: &str) -> VideoError {
    VideoError::Unsupported(format!(
        "the {} video's codec ({codec}) is not supported (H.264, HEVC, AV1, VP8 or VP9)",
        container.name()
    ))
}

#[cfg(test)]
mod proptests;

#[cfg(test)]
mod tests;
