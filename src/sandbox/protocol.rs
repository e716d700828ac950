//! What passes between the server and a media worker, over the worker's stdin and stdout: one
//! line of JSON saying the job, then the job's bytes; back, one line of JSON saying the
//! result, then its bytes. Every length is checked against a limit before it is read, by both
//! sides: a compromised worker cannot make the server hold more than `MAX_REPLY_BYTES`.

use std::io::{BufRead, Read, Write};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::limits::Limits;
use crate::media::derive::{Derivatives, Encoded, Thumb};

/// A job line is short; anything longer is not a job.
pub const MAX_LINE_BYTES: u64 = 16 * 1024;
/// The derivatives of one photo: a preview of at most 2048 px and its thumbs, well under this.
pub const MAX_REPLY_BYTES: u64 = 64 * 1024 * 1024;

/// One job for one worker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Job {
    pub limits: Limits,
    pub work: Work,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Work {
    /// An original photo of `len` bytes follows: its derivatives. The probe runs again on its
    /// head (the orientation is not stored) with `max_pixels`.
    Derive { len: u64, max_pixels: u64 },
    /// As `Derive`, for the photo's first phase: its thumb alone where that is much cheaper
    /// (`media::derive::thumb_alone_is_cheaper`), else every derivative from one decode.
    Thumb { len: u64, max_pixels: u64 },
    /// A PNG of `len` bytes follows (a video's poster frame, as `ffmpeg` wrote it).
    DerivePng { len: u64 },
    /// `program` (ffmpeg) with `args`, reading nothing but `input`; its stdout is the reply.
    Exec { program: PathBuf, args: Vec<String>, input: PathBuf },
}

/// What a derive job answers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Reply {
    /// The derivatives, whose bytes follow.
    Made(Parts),
    /// The thumb alone, whose bytes follow, then the placeholder's.
    Thumb(ThumbParts),
    /// The photo itself cannot be made into derivatives: why, for the organiser.
    Undecodable(String),
}

/// The derivatives' sizes; their bytes follow in this order: thumb, preview, the optional ones
/// that are present, the placeholder.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Parts {
    pub thumb: Part,
    pub preview: Part,
    pub thumb_webp: Option<Part>,
    pub preview_webp: Option<Part>,
    pub thumb_avif: Option<Part>,
    pub placeholder: u64,
}

/// The sizes of a thumb made alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThumbParts {
    pub thumb: Part,
    pub placeholder: u64,
}

/// What a worker made of a photo: everything, or (first phase) its thumb alone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Derived {
    All(Derivatives),
    Thumb(Thumb),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Part {
    pub width: u32,
    pub height: u32,
    pub len: u64,
}

/// Writes `value` as one line of JSON.
pub fn write_line(out: &mut impl Write, value: &impl Serialize) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(value).map_err(std::io::Error::other)?;
    line.push(b'\n');
    out.write_all(&line)
}

/// Reads one line of JSON, at most `MAX_LINE_BYTES`.
pub fn read_line<T: for<'de> Deserialize<'de>>(input: &mut impl BufRead) -> std::io::Result<T> {
    let mut line = Vec::new();
    input.take(MAX_LINE_BYTES).read_until(b'\n', &mut line)?;
    if line.last() != Some(&b'\n') {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "no complete line"));
    }
    serde_json::from_slice(&line).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// Writes derivatives as a `Reply::Made` and their bytes.
pub fn write_made(out: &mut impl Write, made: &Derivatives) -> std::io::Result<()> {
    let part = |e: &Encoded| Part { width: e.width, height: e.height, len: e.bytes.len() as u64 };
    let reply = Reply::Made(Parts {
        thumb: part(&made.thumb),
        preview: part(&made.preview),
        thumb_webp: made.thumb_webp.as_ref().map(part),
        preview_webp: made.preview_webp.as_ref().map(part),
        thumb_avif: made.thumb_avif.as_ref().map(part),
        placeholder: made.placeholder.len() as u64,
    });
    write_line(out, &reply)?;
    let optional = [&made.thumb_webp, &made.preview_webp, &made.thumb_avif];
    for encoded in [Some(&made.thumb), Some(&made.preview)].into_iter().chain(optional.map(Option::as_ref)).flatten() {
        out.write_all(&encoded.bytes)?;
    }
    out.write_all(&made.placeholder)?;
    out.flush()
}

/// The derivatives a `Reply::Made` announced, read from what follows it; `Err` when the bytes
/// are fewer than announced or more than `MAX_REPLY_BYTES` together.
pub fn read_made(input: &mut impl Read, parts: Parts) -> std::io::Result<Derivatives> {
    let Parts { thumb, preview, thumb_webp, preview_webp, thumb_avif, placeholder } = parts;
    let parts = [Some(thumb), Some(preview), thumb_webp, preview_webp, thumb_avif];
    let total = parts.iter().flatten().map(|p| p.len).fold(placeholder, u64::saturating_add);
    if total > MAX_REPLY_BYTES {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "the reply is larger than any derivatives"));
    }
    let mut read = |len: u64| read_exactly(input, len);
    let mut encoded = |part: Option<Part>| -> std::io::Result<Option<Encoded>> {
        part.map(|p| Ok(Encoded { bytes: read(p.len)?, width: p.width, height: p.height })).transpose()
    };
    let (thumb, preview) = (encoded(Some(thumb))?, encoded(Some(preview))?);
    let (thumb_webp, preview_webp, thumb_avif) = (encoded(thumb_webp)?, encoded(preview_webp)?, encoded(thumb_avif)?);
    let (Some(thumb), Some(preview)) = (thumb, preview) else {
        return Err(std::io::Error::other("thumb and preview are always read"));
    };
    Ok(Derivatives { thumb, preview, thumb_webp, preview_webp, thumb_avif, placeholder: read(placeholder)? })
}

/// Writes a thumb made alone as a `Reply::Thumb` and its bytes.
pub fn write_thumb(out: &mut impl Write, made: &Thumb) -> std::io::Result<()> {
    let thumb = Part { width: made.thumb.width, height: made.thumb.height, len: made.thumb.bytes.len() as u64 };
    write_line(out, &Reply::Thumb(ThumbParts { thumb, placeholder: made.placeholder.len() as u64 }))?;
    out.write_all(&made.thumb.bytes)?;
    out.write_all(&made.placeholder)?;
    out.flush()
}

/// The thumb a `Reply::Thumb` announced, read from what follows it, within `MAX_REPLY_BYTES`.
pub fn read_thumb(input: &mut impl Read, parts: ThumbParts) -> std::io::Result<Thumb> {
    let ThumbParts { thumb, placeholder } = parts;
    if thumb.len.saturating_add(placeholder) > MAX_REPLY_BYTES {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "the reply is larger than any thumb"));
    }
    let bytes = read_exactly(input, thumb.len)?;
    let thumb = Encoded { bytes, width: thumb.width, height: thumb.height };
    Ok(Thumb { thumb, placeholder: read_exactly(input, placeholder)? })
}

/// `len` bytes of `input`; `Err` when it has fewer.
fn read_exactly(input: &mut impl Read, len: u64) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(len as usize);
    input.take(len).read_to_end(&mut bytes)?;
    if bytes.len() as u64 != len {
        return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "the reply ended early"));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(n: u8, len: usize) -> Encoded {
        Encoded { bytes: vec![n; len], width: u32::from(n), height: 2 }
    }

    #[test]
    fn derivatives_come_back_as_they_were_written() {
        let made = Derivatives {
            thumb: encoded(1, 10),
            preview: encoded(2, 30),
            thumb_webp: None,
            preview_webp: None,
            thumb_avif: Some(encoded(3, 5)),
            placeholder: vec![9; 7],
        };
        let mut wire = Vec::new();
        write_made(&mut wire, &made).unwrap();
        let mut input = std::io::BufReader::new(&wire[..]);
        let Reply::Made(parts) = read_line(&mut input).unwrap() else {
            panic!("a Made reply");
        };
        let back = read_made(&mut input, parts).unwrap();
        assert_eq!(back, made);
    }

    #[test]
    fn a_thumb_made_alone_comes_back_as_it_was_written() {
        let made = Thumb { thumb: encoded(4, 12), placeholder: vec![8; 5] };
        let mut wire = Vec::new();
        write_thumb(&mut wire, &made).unwrap();
        let mut input = std::io::BufReader::new(&wire[..]);
        let Reply::Thumb(parts) = read_line(&mut input).unwrap() else {
            panic!("a Thumb reply");
        };
        assert_eq!(read_thumb(&mut input, parts).unwrap(), made);
        assert!(read_thumb(&mut &wire[..3], parts).is_err(), "fewer bytes than announced");
    }

    #[test]
    fn a_reply_announcing_more_than_it_sends_or_too_much_is_refused() {
        let part = Part { width: 1, height: 1, len: 100 };
        let parts = Parts {
            thumb: part,
            preview: part,
            thumb_webp: None,
            preview_webp: None,
            thumb_avif: None,
            placeholder: 0,
        };
        assert!(read_made(&mut &[0u8; 50][..], parts).is_err());
        let huge = Parts { thumb: Part { len: MAX_REPLY_BYTES, ..part }, ..parts };
        assert!(read_made(&mut &[0u8; 10][..], huge).is_err());
    }

    #[test]
    fn a_line_without_its_end_or_too_long_is_no_job() {
        assert!(read_line::<Job>(&mut &b"{\"limits\""[..]).is_err());
        let long = vec![b' '; MAX_LINE_BYTES as usize + 10];
        assert!(read_line::<Job>(&mut &long[..]).is_err());
    }
}
