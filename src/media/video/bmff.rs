//! ISO BMFF (MP4, MOV): the file type box (`ftyp`) and the movie header (`moov`): `mvhd`'s
//! duration and creation time, and of the first video track (`trak` whose `hdlr` is `vide`) its `tkhd` size and
//! display matrix and its sample entry's codec (`stsd`). Every box is checked against its
//! parent's bounds; nesting, boxes visited and tracks are capped.

use super::{Codec, Container, VideoError, VideoProbe, unsupported_codec};
use crate::media::param_sets;

/// The deepest box read is moov/trak/mdia/minf/stbl/stsd (six levels); a few spare.
const MAX_DEPTH: usize = 8;
/// Boxes visited in one movie header.
const MAX_BOXES: usize = 20_000;

/// Brands of HEIF/AVIF still images: an `ftyp` with one of these is a photo, not a video.
const IMAGE_BRANDS: [&[u8; 4]; 9] = [b"heic", b"heix", b"heim", b"heis", b"hevc", b"hevx", b"mif1", b"msf1", b"avif"];

/// The container a file type box names: `None` for a still image (HEIF, AVIF).
pub fn container_of(major_brand: &[u8; 4]) -> Option<Container> {
    if IMAGE_BRANDS.contains(&major_brand) {
        return None;
    }
    Some(if major_brand == b"qt  " { Container::QuickTime } else { Container::Mp4 })
}

/// Whether a top-level box type is plausible: four printable ASCII characters.
pub fn plausible_type(fourcc: &[u8]) -> bool {
    fourcc.len() == 4 && fourcc.iter().all(|b| (0x20..=0x7E).contains(b))
}

/// A box's type, header length and total length (`None`: to the end of the file).
pub type BoxHeader = ([u8; 4], u64, Option<u64>);

/// A box header at the start of `data`: (type, header length, total length), where a total of
/// `None` means "to the end of the file". `Ok(None)`: `data` is too short to tell.
pub fn box_header(data: &[u8]) -> Result<Option<BoxHeader>, &'static str> {
    let Some(head) = data.get(..8) else { return Ok(None) };
    let size = u64::from(u32::from_be_bytes([head[0], head[1], head[2], head[3]]));
    let fourcc = [head[4], head[5], head[6], head[7]];
    match size {
        0 => Ok(Some((fourcc, 8, None))),
        1 => {
            let Some(large) = data.get(8..16) else { return Ok(None) };
            let mut b = [0; 8];
            b.copy_from_slice(large);
            let size = u64::from_be_bytes(b);
            if size < 16 {
                return Err("a box is shorter than its header");
            }
            Ok(Some((fourcc, 16, Some(size))))
        }
        2..=7 => Err("a box is shorter than its header"),
        _ => Ok(Some((fourcc, 8, Some(size)))),
    }
}

/// The children of a box's payload, each (type, payload).
struct Children<'a, 'v> {
    data: &'a [u8],
    visited: &'v mut usize,
}

impl<'a> Iterator for Children<'a, '_> {
    type Item = Result<([u8; 4], &'a [u8]), VideoError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.data.is_empty() {
            return None;
        }
        *self.visited += 1;
        if *self.visited > MAX_BOXES {
            return Some(Err(damaged("it has too many boxes")));
        }
        let parsed = match box_header(self.data) {
            Ok(Some((fourcc, header, total))) => {
                let total = total.unwrap_or(self.data.len() as u64);
                match usize::try_from(total).ok().filter(|t| *t <= self.data.len()) {
                    Some(total) => Ok((fourcc, &self.data[header as usize..total], total)),
                    None => Err(damaged("a box runs past its parent")),
                }
            }
            Ok(None) => Err(damaged("a box header is cut short")),
            Err(why) => Err(damaged(why)),
        };
        match parsed {
            Ok((fourcc, payload, total)) => {
                self.data = &self.data[total..];
                Some(Ok((fourcc, payload)))
            }
            Err(e) => {
                self.data = &[];
                Some(Err(e))
            }
        }
    }
}

fn damaged(why: &str) -> VideoError {
    VideoError::Unsupported(format!("the MP4/MOV file is damaged: {why}"))
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at + 4).map(|s| u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

fn be64(b: &[u8], at: usize) -> Option<u64> {
    b.get(at..at + 8).map(|s| {
        let mut a = [0; 8];
        a.copy_from_slice(s);
        u64::from_be_bytes(a)
    })
}

/// What one track told.
#[derive(Default)]
struct Track {
    video: bool,
    /// From `tkhd`, 16.16 fixed point, before rotation.
    size: Option<(u32, u32)>,
    rotation: u16,
    codec: Option<[u8; 4]>,
    /// The size the decoder allocates: the stream's SPS, else the sample entry's.
    coded: Option<(u32, u32)>,
}

/// Reads a `moov` box's payload.
pub fn parse_moov(moov: &[u8], container: Container) -> Result<VideoProbe, VideoError> {
    let mut visited = 0;
    let mut duration_ms = None;
    let mut created = None;
    let mut found: Option<Track> = None;
    let mut tracks = 0;
    for child in (Children { data: moov, visited: &mut visited }).collect::<Vec<_>>() {
        let (fourcc, payload) = child?;
        match &fourcc {
            b"mvhd" => (duration_ms, created) = (mvhd_duration(payload)?, mvhd_created(payload)),
            b"trak" if found.is_none() => {
                tracks += 1;
                if tracks > 64 {
                    return Err(damaged("it has too many tracks"));
                }
                let mut track = Track::default();
                read_track(payload, 1, &mut visited, &mut track)?;
                if track.video {
                    found = Some(track);
                }
            }
            _ => {}
        }
    }
    let Some(track) = found else {
        return Err(VideoError::Unsupported(format!("the {} file holds no video track", container.name())));
    };
    let fourcc = track.codec.ok_or_else(|| damaged("the video track has no sample description"))?;
    let codec = match &fourcc {
        b"avc1" | b"avc3" => Codec::H264,
        b"hvc1" | b"hev1" => Codec::Hevc,
        b"av01" => Codec::Av1,
        b"vp09" => Codec::Vp9,
        other => return Err(unsupported_codec(container, &String::from_utf8_lossy(other))),
    };
    let (w, h) = track
        .size
        .filter(|(w, h)| *w > 0 && *h > 0)
        .ok_or_else(|| VideoError::Unsupported(format!("the {} header declares an empty picture", container.name())))?;
    let (width, height) = if track.rotation % 180 == 90 { (h, w) } else { (w, h) };
    Ok(VideoProbe {
        container,
        codec,
        width,
        height,
        rotation: track.rotation,
        duration_ms,
        coded: track.coded,
        created,
    })
}

/// `mvhd`: timescale and duration; `None` when it says nothing (0, or all ones).
fn mvhd_duration(p: &[u8]) -> Result<Option<u64>, VideoError> {
    let short = || damaged("the movie header box is cut short");
    let (timescale, duration) = match p.first() {
        Some(1) => (be32(p, 20).ok_or_else(short)?, be64(p, 24).ok_or_else(short)?),
        Some(_) => (be32(p, 12).ok_or_else(short)?, u64::from(be32(p, 16).ok_or_else(short)?)),
        None => return Err(short()),
    };
    if timescale == 0 || duration == 0 || duration == u64::MAX || duration == u64::from(u32::MAX) {
        return Ok(None);
    }
    Ok(Some((u128::from(duration) * 1000 / u128::from(timescale)).min(u128::from(u64::MAX)) as u64))
}

/// Seconds from the `mvhd` epoch (1904-01-01 UTC) to the Unix epoch.
const MAC_EPOCH_TO_UNIX: i64 = 2_082_844_800;

/// `mvhd`: its creation time (UTC seconds since 1904); `None` when unset (0), before 1971 (a
/// clock never set, counted from 1904 or from 1970) or beyond what a date holds.
fn mvhd_created(p: &[u8]) -> Option<chrono::DateTime<chrono::Utc>> {
    let seconds = match p.first()? {
        1 => be64(p, 4)?,
        _ => u64::from(be32(p, 4)?),
    };
    let unix = i64::try_from(seconds).ok()?.checked_sub(MAC_EPOCH_TO_UNIX)?;
    const YEAR_1971: i64 = 31_536_000;
    if unix < YEAR_1971 {
        return None;
    }
    chrono::DateTime::from_timestamp(unix, 0)
}

/// Walks a track's boxes down to its sample description.
fn read_track(data: &[u8], depth: usize, visited: &mut usize, track: &mut Track) -> Result<(), VideoError> {
    if depth > MAX_DEPTH {
        return Err(damaged("its boxes nest too deep"));
    }
    for child in (Children { data, visited: &mut *visited }).collect::<Vec<_>>() {
        let (fourcc, payload) = child?;
        match &fourcc {
            b"tkhd" => tkhd(payload, track)?,
            // A MOV has a second handler (the data handler, `dhlr`) inside `minf`: only the media
            // handler says `vide`.
            b"hdlr" if payload.get(8..12) == Some(b"vide") => track.video = true,
            b"mdia" | b"minf" | b"stbl" => read_track(payload, depth + 1, visited, track)?,
            b"stsd" => {
                // Version and flags, entry count, then the first entry's size and type.
                track.codec = payload.get(12..16).map(|t| [t[0], t[1], t[2], t[3]]);
                track.coded = coded_size(payload);
            }
            _ => {}
        }
    }
    Ok(())
}

/// The first sample entry's coded size: from its `avcC` or `hvcC` (the SPS), else the entry's
/// own width and height (AV1, VP9). `None` when neither says.
fn coded_size(stsd: &[u8]) -> Option<(u32, u32)> {
    let size = usize::try_from(be32(stsd, 8)?).ok()?;
    let entry = stsd.get(16..8usize.checked_add(size)?)?;
    // SampleEntry (8 bytes), then VisualSampleEntry's fields up to byte 78; width and height at 24.
    let labelled = Some((u32::from(be16(entry, 24)?), u32::from(be16(entry, 26)?))).filter(|(w, h)| *w > 0 && *h > 0);
    let mut boxes = entry.get(78..).unwrap_or_default();
    for _ in 0..16 {
        let Ok(Some((fourcc, header, Some(total)))) = box_header(boxes) else { break };
        let Some(body) = usize::try_from(total).ok().and_then(|t| boxes.get(header as usize..t)) else { break };
        let from_sps = match &fourcc {
            b"avcC" => param_sets::avc_coded_size(body),
            b"hvcC" => param_sets::hevc_coded_size(body),
            _ => None,
        };
        if from_sps.is_some() {
            return from_sps;
        }
        boxes = &boxes[total as usize..];
    }
    labelled
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    b.get(at..at + 2).map(|s| u16::from_be_bytes([s[0], s[1]]))
}

/// `tkhd`: the display size and the display matrix's rotation.
fn tkhd(p: &[u8], track: &mut Track) -> Result<(), VideoError> {
    // After version/flags and the times and ids: 8 reserved, layer, group, volume, reserved.
    let matrix_at = match p.first() {
        Some(1) => 4 + 8 + 8 + 4 + 4 + 8 + 8 + 8,
        _ => 4 + 4 + 4 + 4 + 4 + 4 + 8 + 8,
    };
    let short = || damaged("the track header box is cut short");
    let m = |i: usize| be32(p, matrix_at + 4 * i).map(|v| v as i32).ok_or_else(short);
    let (a, b, c, d) = (m(0)?, m(1)?, m(3)?, m(4)?);
    track.rotation = match (a.signum(), b.signum(), c.signum(), d.signum()) {
        (0, 1, -1, 0) => 90,
        (-1, 0, 0, -1) => 180,
        (0, -1, 1, 0) => 270,
        _ => 0,
    };
    let w = be32(p, matrix_at + 36).ok_or_else(short)? >> 16;
    let h = be32(p, matrix_at + 40).ok_or_else(short)? >> 16;
    track.size = Some((w, h));
    Ok(())
}

/// Reads a whole `moov` box, header included.
pub fn parse_moov_box(moov: &[u8], container: Container) -> Result<VideoProbe, VideoError> {
    match box_header(moov) {
        Ok(Some((fourcc, header, _))) if &fourcc == b"moov" => parse_moov(&moov[header as usize..], container),
        _ => Err(damaged("the movie header is not where the file says")),
    }
}
