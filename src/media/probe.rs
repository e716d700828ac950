//! Header-only image probe.
//!
//! While an upload streams, `Sniffer` keeps its first bytes (the header), its last bytes and,
//! for JPEG, where the last end-of-image marker was seen. `probe` then decides from those
//! alone: the format from magic bytes (never the declared type), the dimensions from the
//! header, a pixel bomb refused before anything is decoded, and a file cut short refused by
//! its structure (a JPEG without an end-of-image marker after its scan, a PNG without IEND,
//! a WebP shorter than its RIFF header says). A GIF's frames are counted wherever they lie
//! (`gif_walk`): the largest of them, not the logical screen, is what a decoder allocates. A
//! HEIC is read by `heif_header` (its `ispe`, `irot`/`imir`, EXIF, and whether its items' data
//! is all there).

use chrono::{DateTime, NaiveDate, Utc};

use super::gif_walk::{GifFrames, GifWalker};
use super::heif_header::{self, HeifError};

/// How much of the start of a file is kept for the probe. JPEG headers with large EXIF
/// blocks and ICC profiles can run past this; then the probe asks for more (`NeedMore`) and
/// the caller reads it back from storage, so memory per upload stays small.
pub const HEAD_BYTES: usize = 64 * 1024;
const TAIL_BYTES: usize = 32;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageFormat {
    Jpeg,
    Png,
    Gif,
    WebP,
    /// HEIC: HEVC images in a HEIF container (`heif_header`).
    Heic,
}

impl ImageFormat {
    pub fn mime(self) -> &'static str {
        match self {
            ImageFormat::Jpeg => "image/jpeg",
            ImageFormat::Png => "image/png",
            ImageFormat::Gif => "image/gif",
            ImageFormat::WebP => "image/webp",
            ImageFormat::Heic => "image/heic",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Probe {
    pub format: ImageFormat,
    /// As displayed: EXIF orientations 5–8 swap width and height.
    pub width: u32,
    pub height: u32,
    /// EXIF orientation, 1 (upright) when absent.
    pub orientation: u16,
    /// EXIF DateTimeOriginal; with OffsetTimeOriginal (else OffsetTime) when the camera wrote
    /// one, else read as UTC (the server knows no time zone of its own).
    pub taken_at: Option<DateTime<Utc>>,
}

#[derive(Debug, PartialEq, thiserror::Error)]
pub enum ProbeError {
    #[error("{0}")]
    Unsupported(String),
    #[error("the image declares {pixels} pixels; the limit is {limit}")]
    TooManyPixels { pixels: u64, limit: u64 },
    /// The header runs past the bytes kept; probe again with the first `0` bytes.
    #[error("the image header is longer than the probe's window")]
    NeedMore(usize),
}

/// What the stream told about the file besides its head.
#[derive(Clone, Debug, Default)]
pub struct Sniffed {
    pub head: Vec<u8>,
    pub tail: Vec<u8>,
    pub len: u64,
    /// Offset of the last `FF D9` (JPEG end of image) seen anywhere in the file.
    pub last_jpeg_eoi: Option<u64>,
    /// For a GIF, its frames as the whole file showed them.
    pub gif: Option<GifFrames>,
}

static EOI: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(&[0xFF, 0xD9]));

/// Watches the bytes of an upload go by.
#[derive(Debug, Default)]
pub struct Sniffer {
    sniffed: Sniffed,
    previous_was_ff: bool,
    gif: GifWalker,
}

impl Sniffer {
    pub fn update(&mut self, chunk: &[u8]) {
        let s = &mut self.sniffed;
        if s.head.len() < HEAD_BYTES {
            let take = (HEAD_BYTES - s.head.len()).min(chunk.len());
            s.head.extend_from_slice(&chunk[..take]);
        }
        if chunk.len() >= TAIL_BYTES {
            s.tail.clear();
            s.tail.extend_from_slice(&chunk[chunk.len() - TAIL_BYTES..]);
        } else {
            s.tail.extend_from_slice(chunk);
            let excess = s.tail.len().saturating_sub(TAIL_BYTES);
            s.tail.drain(..excess);
        }
        // Only the last marker matters. The SIMD pair search skips the stuffed `FF 00`s of
        // compressed data (a plain search for 0xFF stops at each; a reverse search has no
        // SIMD path — both measured at ~16% of the server's CPU on 5 MB photos).
        if let Some(i) = EOI.find_iter(chunk).last() {
            s.last_jpeg_eoi = Some(s.len + i as u64);
        } else if self.previous_was_ff && chunk.first() == Some(&0xD9) {
            s.last_jpeg_eoi = Some(s.len - 1);
        }
        self.previous_was_ff = chunk.last() == Some(&0xFF);
        s.len += chunk.len() as u64;
        // Stops for good after the first 13 bytes of anything but a GIF.
        self.gif.update(chunk);
    }

    pub fn finish(mut self) -> Sniffed {
        self.sniffed.gif = self.gif.frames();
        self.sniffed
    }
}

const NOT_AN_IMAGE: &str = "the file is not a supported photo (JPEG, PNG, WebP, GIF, HEIC) or video (MP4, MOV, WebM)";

/// Decides from the head (and tail) of a file whether it is an image Confetti accepts.
/// `head` may be longer than `sniffed.head` when the caller re-read more after `NeedMore`.
pub fn probe(head: &[u8], sniffed: &Sniffed, max_pixels: u64) -> Result<Probe, ProbeError> {
    let header = header(head, sniffed.len, max_pixels)?;
    if header.format == ImageFormat::Gif {
        gif_frames(sniffed.gif, max_pixels)?;
    }
    let complete = match (header.format, header.jpeg_scan) {
        (ImageFormat::Jpeg, Some(sos)) => sniffed.last_jpeg_eoi.is_some_and(|eoi| eoi > sos as u64),
        (ImageFormat::Png, _) => memchr::memmem::find(&sniffed.tail, b"IEND").is_some(),
        (ImageFormat::WebP, _) => {
            let riff_len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as u64;
            sniffed.len >= riff_len + 8
        }
        _ => true,
    };
    if !complete {
        return Err(ProbeError::Unsupported(format!("the {:?} file is cut short (incomplete)", header.format)));
    }
    Ok(header.probe())
}

/// The probe of an original accepted at upload (so whole), of `file_len` bytes, from its
/// head alone: what a derivative job needs before it decodes the rest as it streams in.
pub fn probe_accepted(head: &[u8], file_len: u64, max_pixels: u64) -> Result<Probe, ProbeError> {
    header(head, file_len, max_pixels).map(Header::probe)
}

/// What a file's header says, before its EXIF is read.
struct Header<'a> {
    format: ImageFormat,
    width: u32,
    height: u32,
    /// The EXIF block (TIFF data), if any.
    exif: Option<&'a [u8]>,
    /// For a JPEG: where its first scan starts.
    jpeg_scan: Option<usize>,
    /// For a HEIC whose `irot`/`imir` say how it is shown: that, as an EXIF orientation
    /// (its EXIF orientation is then ignored).
    transform: Option<u16>,
}

fn header(head: &[u8], file_len: u64, max_pixels: u64) -> Result<Header<'_>, ProbeError> {
    let (mut exif, mut jpeg_scan, mut transform) = (None, None, None);
    let (format, width, height) = if head.starts_with(&[0xFF, 0xD8, 0xFF]) {
        let jpeg = jpeg_header(head, file_len)?;
        (exif, jpeg_scan) = (jpeg.exif, Some(jpeg.sos_offset));
        (ImageFormat::Jpeg, jpeg.width, jpeg.height)
    } else if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        let (w, h) = png_size(head)?;
        (ImageFormat::Png, w, h)
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        let (w, h) = gif_size(head)?;
        (ImageFormat::Gif, w, h)
    } else if head.len() >= 12 && &head[0..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        let (w, h) = webp_size(head)?;
        (ImageFormat::WebP, w, h)
    } else if heif_header::is_heif(head) {
        let heif = heif_header::read(head, file_len, max_pixels).map_err(|e| match e {
            HeifError::Unsupported(why) => ProbeError::Unsupported(why),
            HeifError::NeedMore(want) => ProbeError::NeedMore(want),
            HeifError::TooManyPixels(pixels) => ProbeError::TooManyPixels { pixels, limit: max_pixels },
        })?;
        (exif, transform) = (heif.exif, heif.transformed.then_some(heif.orientation));
        (ImageFormat::Heic, heif.width, heif.height)
    } else {
        return Err(ProbeError::Unsupported(NOT_AN_IMAGE.into()));
    };

    if width == 0 || height == 0 {
        return Err(ProbeError::Unsupported(format!("the {format:?} header declares an empty image")));
    }
    let pixels = u64::from(width) * u64::from(height);
    if pixels > max_pixels {
        return Err(ProbeError::TooManyPixels { pixels, limit: max_pixels });
    }
    Ok(Header { format, width, height, exif, jpeg_scan, transform })
}

impl Header<'_> {
    fn probe(self) -> Probe {
        let (orientation, taken_at) = self.exif.map_or((1, None), read_exif);
        let orientation = self.transform.unwrap_or(orientation);
        let (width, height) =
            if (5..=8).contains(&orientation) { (self.height, self.width) } else { (self.width, self.height) };
        Probe { format: self.format, width, height, orientation, taken_at }
    }
}

struct JpegHeader<'a> {
    width: u32,
    height: u32,
    exif: Option<&'a [u8]>,
    sos_offset: usize,
}

/// Walks the JPEG marker segments up to the first scan.
fn jpeg_header(head: &[u8], file_len: u64) -> Result<JpegHeader<'_>, ProbeError> {
    let cut_short = || {
        if (head.len() as u64) < file_len {
            ProbeError::NeedMore(head.len().saturating_mul(8).min(file_len as usize))
        } else {
            ProbeError::Unsupported("the JPEG file is cut short (incomplete header)".into())
        }
    };
    let corrupt = || ProbeError::Unsupported("the JPEG header is damaged".into());
    let mut pos = 2;
    let mut size = None;
    let mut exif = None;
    loop {
        if *head.get(pos).ok_or_else(cut_short)? != 0xFF {
            return Err(corrupt());
        }
        while head.get(pos) == Some(&0xFF) {
            pos += 1;
        }
        let marker = *head.get(pos).ok_or_else(cut_short)?;
        pos += 1;
        match marker {
            0x01 | 0xD0..=0xD8 => continue,
            0xD9 => return Err(corrupt()),
            0xDA => {
                let (width, height) = size.ok_or_else(corrupt)?;
                return Ok(JpegHeader { width, height, exif, sos_offset: pos - 2 });
            }
            _ => {}
        }
        let len_bytes = head.get(pos..pos + 2).ok_or_else(cut_short)?;
        let len = usize::from(u16::from_be_bytes([len_bytes[0], len_bytes[1]]));
        if len < 2 {
            return Err(corrupt());
        }
        let segment = head.get(pos + 2..pos + len).ok_or_else(cut_short)?;
        match marker {
            0xC0..=0xCF if !matches!(marker, 0xC4 | 0xC8 | 0xCC) => {
                if segment.len() < 5 {
                    return Err(corrupt());
                }
                let height = u32::from(u16::from_be_bytes([segment[1], segment[2]]));
                let width = u32::from(u16::from_be_bytes([segment[3], segment[4]]));
                size = Some((width, height));
            }
            0xE1 if exif.is_none() && segment.starts_with(b"Exif\0\0") => exif = Some(&segment[6..]),
            _ => {}
        }
        pos += len;
    }
}

fn png_size(head: &[u8]) -> Result<(u32, u32), ProbeError> {
    match head.get(8..24) {
        Some(ihdr) if &ihdr[4..8] == b"IHDR" => Ok((
            u32::from_be_bytes([ihdr[8], ihdr[9], ihdr[10], ihdr[11]]),
            u32::from_be_bytes([ihdr[12], ihdr[13], ihdr[14], ihdr[15]]),
        )),
        _ => Err(ProbeError::Unsupported("the PNG header is damaged".into())),
    }
}

fn gif_size(head: &[u8]) -> Result<(u32, u32), ProbeError> {
    match head.get(6..10) {
        Some(s) => Ok((u32::from(u16::from_le_bytes([s[0], s[1]])), u32::from(u16::from_le_bytes([s[2], s[3]])))),
        None => Err(ProbeError::Unsupported("the GIF header is damaged".into())),
    }
}

/// Every frame counts against the pixel limit, through the canvas that holds the screen and
/// all frames. A frame reaching outside the logical screen is allowed (decoders clip it, and
/// old encoders write such files); it enlarges the canvas counted here instead.
fn gif_frames(frames: Option<GifFrames>, max_pixels: u64) -> Result<(), ProbeError> {
    let Some(frames) = frames else {
        return Err(ProbeError::Unsupported("the GIF file is cut short (incomplete header)".into()));
    };
    let pixels = frames.canvas_pixels();
    if pixels > max_pixels {
        return Err(ProbeError::TooManyPixels { pixels, limit: max_pixels });
    }
    if frames.damaged {
        return Err(ProbeError::Unsupported("the GIF file is damaged".into()));
    }
    if frames.frames == 0 {
        return Err(ProbeError::Unsupported("the GIF file holds no image (cut short)".into()));
    }
    Ok(())
}

fn webp_size(head: &[u8]) -> Result<(u32, u32), ProbeError> {
    let damaged = || ProbeError::Unsupported("the WebP header is damaged".into());
    let chunk = head.get(12..16).ok_or_else(damaged)?;
    let u24 = |b: &[u8]| u32::from(b[0]) | u32::from(b[1]) << 8 | u32::from(b[2]) << 16;
    match chunk {
        b"VP8X" => {
            let b = head.get(24..30).ok_or_else(damaged)?;
            Ok((u24(&b[0..3]) + 1, u24(&b[3..6]) + 1))
        }
        b"VP8L" => {
            let b = head.get(20..25).ok_or_else(damaged)?;
            if b[0] != 0x2F {
                return Err(damaged());
            }
            let bits = u32::from_le_bytes([b[1], b[2], b[3], b[4]]);
            Ok(((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1))
        }
        b"VP8 " => {
            let b = head.get(23..30).ok_or_else(damaged)?;
            if b[0..3] != [0x9D, 0x01, 0x2A] {
                return Err(damaged());
            }
            Ok((
                u32::from(u16::from_le_bytes([b[3], b[4]]) & 0x3FFF),
                u32::from(u16::from_le_bytes([b[5], b[6]]) & 0x3FFF),
            ))
        }
        _ => Err(damaged()),
    }
}

/// Orientation and capture time from a JPEG's EXIF block; a damaged block is ignored
/// (the photo is still a photo).
fn read_exif(raw: &[u8]) -> (u16, Option<DateTime<Utc>>) {
    use exif::{In, Tag, Value};
    let Ok(exif) = exif::Reader::new().read_raw(raw.to_vec()) else {
        return (1, None);
    };
    let orientation = exif
        .get_field(Tag::Orientation, In::PRIMARY)
        .and_then(|f| f.value.get_uint(0))
        .and_then(|o| u16::try_from(o).ok())
        .filter(|o| (1..=8).contains(o))
        .unwrap_or(1);
    let ascii = |tag| match exif.get_field(tag, In::PRIMARY).map(|f| &f.value) {
        Some(Value::Ascii(v)) => v.first().cloned(),
        _ => None,
    };
    let taken_at =
        ascii(Tag::DateTimeOriginal).and_then(|raw| {
            let mut dt = exif::DateTime::from_ascii(&raw).ok()?;
            // The offset of the original's time, else the one of the file's time (cameras that
            // write only one write the same for both).
            if let Some(offset) = ascii(Tag::OffsetTimeOriginal).or_else(|| ascii(Tag::OffsetTime)) {
                let _ = dt.parse_offset(&offset);
            }
            let naive = NaiveDate::from_ymd_opt(i32::from(dt.year), u32::from(dt.month), u32::from(dt.day))?
                .and_hms_opt(u32::from(dt.hour), u32::from(dt.minute), u32::from(dt.second))?;
            let offset_minutes = i64::from(dt.offset.unwrap_or(0));
            Some(naive.and_utc() - chrono::Duration::minutes(offset_minutes))
        });
    (orientation, taken_at)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod proptests;
