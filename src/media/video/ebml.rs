//! EBML (WebM, Matroska): the EBML header's `DocType`, then inside the `Segment` the `Info`
//! (`TimestampScale`, `Duration`) and `Tracks` (the first video track's `CodecID`, `PixelWidth`,
//! `PixelHeight`), which muxers write before the first `Cluster`. Reading stops at the first
//! `Cluster`; an element running past the bytes given asks for more (`NeedMore`), up to the
//! caller's bound.

use super::{Codec, Container, VideoError, VideoProbe, unsupported_codec};

pub const EBML_MAGIC: [u8; 4] = [0x1A, 0x45, 0xDF, 0xA3];
const SEGMENT: u32 = 0x1853_8067;
const INFO: u32 = 0x1549_A966;
const TRACKS: u32 = 0x1654_AE6B;
const CLUSTER: u32 = 0x1F43_B675;
const TRACK_ENTRY: u32 = 0xAE;
const VIDEO: u32 = 0xE0;
/// Elements inside the Segment read before giving up on finding `Info` and `Tracks`.
const MAX_ELEMENTS: usize = 10_000;

/// An element header: (id, header length, payload length; `None` for "unknown").
type Header = (u32, usize, Option<u64>);

/// A variable-length integer at the start of `data`: (value with the marker bit, length), or
/// `Ok(None)` when `data` is too short.
fn vint(data: &[u8], max_len: usize, keep_marker: bool) -> Result<Option<(u64, usize)>, &'static str> {
    let Some(&first) = data.first() else { return Ok(None) };
    let len = first.leading_zeros() as usize + 1;
    if len > max_len {
        return Err("an element header is invalid");
    }
    let Some(bytes) = data.get(..len) else { return Ok(None) };
    let mut value = u64::from(if keep_marker { first } else { first & (0xFFu16 >> len) as u8 });
    for b in &bytes[1..] {
        value = value << 8 | u64::from(*b);
    }
    Ok(Some((value, len)))
}

/// An element header at the start of `data`.
pub fn element_header(data: &[u8]) -> Result<Option<Header>, &'static str> {
    let Some((id, id_len)) = vint(data, 4, true)? else { return Ok(None) };
    let Some((size, size_len)) = vint(&data[id_len..], 8, false)? else { return Ok(None) };
    let unknown = size == (1u64 << (7 * size_len)) - 1;
    Ok(Some((id as u32, id_len + size_len, (!unknown).then_some(size))))
}

fn damaged(why: &str) -> VideoError {
    VideoError::Unsupported(format!("the WebM/Matroska file is damaged: {why}"))
}

/// The EBML header's `DocType`: `Ok(None)` while `head` is too short to tell.
pub fn doc_type(head: &[u8]) -> Result<Option<Container>, VideoError> {
    let Some((id, header, size)) = element_header(head).map_err(damaged)? else { return Ok(None) };
    if id != u32::from_be_bytes(EBML_MAGIC) {
        return Err(damaged("it does not start with an EBML header"));
    }
    let size = size.filter(|s| *s <= 4096).ok_or_else(|| damaged("the EBML header's size is invalid"))? as usize;
    let Some(body) = head.get(header..header + size) else { return Ok(None) };
    let mut at = 0;
    while at < body.len() {
        let (id, h, size) =
            element_header(&body[at..]).map_err(damaged)?.ok_or_else(|| damaged("the EBML header is cut short"))?;
        let size = size.ok_or_else(|| damaged("the EBML header is invalid"))? as usize;
        let value = body.get(at + h..at + h + size).ok_or_else(|| damaged("the EBML header is cut short"))?;
        if id == 0x4282 {
            let doc = String::from_utf8_lossy(value);
            return match doc.trim_end_matches('\0') {
                "webm" => Ok(Some(Container::WebM)),
                "matroska" => Ok(Some(Container::Matroska)),
                other => Err(VideoError::Unsupported(format!("EBML documents of type “{other}” are not videos"))),
            };
        }
        at += h + size;
    }
    Err(damaged("the EBML header names no document type"))
}

/// The length of the EBML header element, once `doc_type` accepted it.
fn ebml_header_len(head: &[u8]) -> Result<usize, VideoError> {
    match element_header(head).map_err(damaged)? {
        Some((_, h, Some(size))) => Ok(h + size as usize),
        _ => Err(damaged("the EBML header is invalid")),
    }
}

/// Reads duration, codec and size from the file's first bytes (`head`, of a file `file_len` long).
pub fn probe(head: &[u8], file_len: u64) -> Result<VideoProbe, VideoError> {
    let container = doc_type(head)?.ok_or_else(|| damaged("the EBML header is cut short"))?;
    let mut at = ebml_header_len(head)?;
    let need = |end: u64| {
        if (head.len() as u64) < file_len {
            VideoError::NeedMore(end.min(file_len))
        } else {
            damaged("it is cut short")
        }
    };
    // Elements before the Segment (Void, say) are skipped.
    let segment_start = loop {
        let (id, h, size) =
            element_header(&head[at.min(head.len())..]).map_err(damaged)?.ok_or_else(|| need(at as u64 + 16))?;
        if id == SEGMENT {
            break at + h;
        }
        let size = size.ok_or_else(|| damaged("an element before the Segment has no size"))?;
        at = at.checked_add(h + size as usize).ok_or_else(|| damaged("an element is too large"))?;
    };
    let (mut info, mut tracks) = (None, None);
    let mut at = segment_start;
    for _ in 0..MAX_ELEMENTS {
        if info.is_some() && tracks.is_some() {
            break;
        }
        let rest = head.get(at..).unwrap_or_default();
        let Some((id, h, size)) = element_header(rest).map_err(damaged)? else {
            return Err(need(at as u64 + 16));
        };
        if id == CLUSTER {
            break;
        }
        let size = size.ok_or_else(|| damaged("a Segment element has no size"))?;
        let end = (at as u64).saturating_add(h as u64).saturating_add(size);
        if id == INFO || id == TRACKS {
            let body = head.get(at + h..end as usize).ok_or_else(|| need(end))?;
            if id == INFO {
                info = Some(read_info(body)?);
            } else {
                tracks = Some(read_tracks(body, container)?);
            }
        }
        if end > file_len {
            return Err(damaged("it is cut short"));
        }
        at = end as usize;
    }
    let (codec, (w, h)) = tracks.ok_or_else(|| {
        VideoError::Unsupported(format!("the {} file holds no video track before its first cluster", container.name()))
    })?;
    let duration_ms = info.flatten();
    Ok(VideoProbe { container, codec, width: w, height: h, rotation: 0, duration_ms, coded: None, created: None })
}

/// The children of a master element's body: (id, value).
fn children(body: &[u8]) -> impl Iterator<Item = Result<(u32, &[u8]), VideoError>> {
    let mut at = 0;
    std::iter::from_fn(move || {
        if at >= body.len() {
            return None;
        }
        let parsed = element_header(&body[at..]).map_err(damaged).and_then(|header| {
            let (id, h, size) = header.ok_or_else(|| damaged("an element header is cut short"))?;
            let size = size.ok_or_else(|| damaged("an element has no size"))? as usize;
            let value = body.get(at + h..at + h + size).ok_or_else(|| damaged("an element runs past its parent"))?;
            at += h + size;
            Ok((id, value))
        });
        if parsed.is_err() {
            at = body.len();
        }
        Some(parsed)
    })
}

fn uint(value: &[u8]) -> u64 {
    value.iter().take(8).fold(0, |n, b| n << 8 | u64::from(*b))
}

/// `Info`: the duration in milliseconds (`Duration` × `TimestampScale`), when it says.
fn read_info(body: &[u8]) -> Result<Option<u64>, VideoError> {
    let (mut scale, mut duration) = (1_000_000u64, None);
    for child in children(body) {
        let (id, value) = child?;
        match id {
            0x2A_D7B1 => scale = uint(value).max(1),
            0x4489 => {
                duration = match value.len() {
                    4 => Some(f64::from(f32::from_be_bytes([value[0], value[1], value[2], value[3]]))),
                    8 => Some(f64::from_be_bytes(value.try_into().map_err(|_| damaged("a duration is invalid"))?)),
                    _ => None,
                }
            }
            _ => {}
        }
    }
    Ok(duration.filter(|d| d.is_finite() && *d > 0.0).map(|d| (d * scale as f64 / 1e6) as u64))
}

/// `Tracks`: the first video track's codec and size.
fn read_tracks(body: &[u8], container: Container) -> Result<(Codec, (u32, u32)), VideoError> {
    for child in children(body) {
        let (id, entry) = child?;
        if id != TRACK_ENTRY {
            continue;
        }
        let (mut video, mut codec, mut size) = (false, None, (0, 0));
        for field in children(entry) {
            let (id, value) = field?;
            match id {
                0x83 => video = uint(value) == 1,
                0x86 => codec = Some(String::from_utf8_lossy(value).trim_end_matches('\0').to_owned()),
                VIDEO => {
                    for v in children(value) {
                        let (id, value) = v?;
                        let n = u32::try_from(uint(value)).unwrap_or(u32::MAX);
                        match id {
                            0xB0 => size.0 = n,
                            0xBA => size.1 = n,
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        if !video {
            continue;
        }
        let codec = match codec.as_deref() {
            Some("V_VP8") => Codec::Vp8,
            Some("V_VP9") => Codec::Vp9,
            Some("V_AV1") => Codec::Av1,
            other => return Err(unsupported_codec(container, other.unwrap_or("none"))),
        };
        if size.0 == 0 || size.1 == 0 {
            return Err(VideoError::Unsupported(format!("the {} header declares an empty picture", container.name())));
        }
        return Ok((codec, size));
    }
    Err(VideoError::Unsupported(format!("the {} file holds no video track", container.name())))
}
