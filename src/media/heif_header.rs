//! The header of a HEIC/HEIF photo, read in pure Rust: an ISOBMFF box walker over the `ftyp`
//! and `meta` boxes, so that no C code sees the bytes before the probe's limits are checked.
//!
//! What it gives the probe: the primary item's stored size (`ispe`), its orientation as an EXIF
//! orientation (1–8) composed from its `irot`/`imir` properties, its EXIF block (when the
//! photo's `Exif` item lies within the first `MAX_EXIF_END` bytes), and whether the file holds
//! all the bytes its items point at (a file cut short is refused here, not by the decoder).
//! Every `ispe` in the file counts against the pixel limit, not just the primary's: tiles,
//! thumbnails and alpha planes are decoded too.
//!
//! Orientation: a file whose primary item has `irot` or `imir` is shown as those say, and its
//! EXIF orientation is ignored (HEIF's rule; iPhones write both, consistently). A file with
//! neither (`heif-enc` copies a JPEG's EXIF as it is, orientation included) is turned by its
//! EXIF orientation, as a JPEG would be.
//!
//! AVIF (AV1 in the same container) is not accepted: only HEVC (`hvc1`) images and grids.

use super::param_sets;

/// Brands of HEIF files with HEVC images (ISO/IEC 23008-12 annex B) and the generic ones.
const BRANDS: [&[u8; 4]; 8] = [b"heic", b"heix", b"heim", b"heis", b"hevc", b"hevx", b"mif1", b"msf1"];

/// The `Exif` item is read only when it ends within this many bytes of the file's start.
const MAX_EXIF_END: u64 = 1 << 20;

/// Whether `head` starts like a HEIF file (an `ftyp` box naming a HEIF or AVIF brand).
pub fn is_heif(head: &[u8]) -> bool {
    head.len() >= 12
        && &head[4..8] == b"ftyp"
        && (BRANDS.iter().any(|b| &head[8..12] == *b) || matches!(&head[8..12], b"avif" | b"avis"))
}

#[derive(Debug, PartialEq)]
pub enum HeifError {
    /// Not a HEIC this server takes, or damaged; the message says which.
    Unsupported(String),
    /// The boxes run past the bytes at hand: read the first `0` bytes.
    NeedMore(usize),
    /// The largest `ispe` in the file.
    TooManyPixels(u64),
}

#[derive(Debug, PartialEq)]
pub struct HeifHeader<'a> {
    /// As stored (before `irot`/`imir`).
    pub width: u32,
    pub height: u32,
    /// From `irot`/`imir` when present (`transformed`), else 1.
    pub orientation: u16,
    pub transformed: bool,
    /// The TIFF data of the EXIF block (what follows `Exif\0\0`).
    pub exif: Option<&'a [u8]>,
}

/// A box: its type, where its payload starts and where it ends (within the file).
#[derive(Clone, Copy, Debug)]
struct BoxAt {
    kind: [u8; 4],
    body: usize,
    end: u64,
}

/// What went wrong reading a box in a header that is all there.
fn damaged(what: &str) -> HeifError {
    HeifError::Unsupported(format!("the HEIC header is damaged ({what})"))
}

/// The box starting at `pos` of `bytes`; `limit` is where its parent ends.
fn box_at(bytes: &[u8], pos: usize, limit: u64) -> Option<Result<BoxAt, HeifError>> {
    let header = bytes.get(pos..pos + 8)?;
    let size = u64::from(u32::from_be_bytes([header[0], header[1], header[2], header[3]]));
    let kind = [header[4], header[5], header[6], header[7]];
    let (size, body) = match size {
        0 => (limit.saturating_sub(pos as u64), pos + 8),
        1 => {
            let large = bytes.get(pos + 8..pos + 16)?;
            (u64::from_be_bytes(large.try_into().ok()?), pos + 16)
        }
        n => (n, pos + 8),
    };
    let end = (pos as u64).saturating_add(size);
    if size < (body - pos) as u64 || end > limit {
        return Some(Err(HeifError::Unsupported("the HEIC file is cut short (a box runs past its end)".into())));
    }
    Some(Ok(BoxAt { kind, body, end }))
}

/// A child box: its type and payload.
type Child<'a> = (&'a [u8; 4], &'a [u8]);

/// Reads big-endian integers from a box's payload.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes, pos: 0 }
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], HeifError> {
        let out = self.bytes.get(self.pos..self.pos + n).ok_or_else(|| damaged("a box is shorter than its fields"))?;
        self.pos += n;
        Ok(out)
    }
    fn uint(&mut self, n: usize) -> Result<u64, HeifError> {
        Ok(self.take(n)?.iter().fold(0, |v, &b| v << 8 | u64::from(b)))
    }
    fn u8(&mut self) -> Result<u8, HeifError> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, HeifError> {
        Ok(self.uint(2)? as u16)
    }
    fn u32(&mut self) -> Result<u32, HeifError> {
        Ok(self.uint(4)? as u32)
    }
    /// A full box's version (its flags are dropped).
    fn version(&mut self) -> Result<u8, HeifError> {
        let v = self.u8()?;
        self.take(3)?;
        Ok(v)
    }
    /// The children of a container whose payload this is.
    fn children(&self) -> Result<Vec<Child<'a>>, HeifError> {
        let rest = &self.bytes[self.pos..];
        let mut out = Vec::new();
        let mut pos = 0;
        while pos < rest.len() {
            let b = box_at(rest, pos, rest.len() as u64).ok_or_else(|| damaged("a box header is cut"))?;
            let b = b.map_err(|_| damaged("a box runs past its container"))?;
            let kind = rest[pos + 4..pos + 8].try_into().map_err(|_| damaged("a box type"))?;
            out.push((kind, &rest[b.body..b.end as usize]));
            pos = b.end as usize;
        }
        Ok(out)
    }
}

/// One extent of an item's data in the file.
#[derive(Clone, Copy, Debug)]
struct Extent {
    offset: u64,
    length: u64,
}

#[derive(Default)]
struct Meta<'a> {
    primary: Option<u32>,
    /// Item id and type, from `iinf`.
    items: Vec<(u32, [u8; 4])>,
    /// Item id, construction method and extents, from `iloc`.
    locations: Vec<(u32, u16, Vec<Extent>)>,
    /// The `ipco` property boxes, in order (indices in `ipma` count from 1).
    properties: Vec<Child<'a>>,
    /// Item id and its property indices, in order.
    associations: Vec<(u32, Vec<u16>)>,
}

/// Reads the header of a file that `is_heif`, `head` being its first bytes and `file_len` its
/// length.
pub fn read(head: &[u8], file_len: u64, max_pixels: u64) -> Result<HeifHeader<'_>, HeifError> {
    let need_more = |end: u64| {
        if (head.len() as u64) < file_len {
            HeifError::NeedMore(end.clamp(head.len() as u64 + 1, file_len) as usize)
        } else {
            HeifError::Unsupported("the HEIC file is cut short (incomplete header)".into())
        }
    };
    // The top-level boxes up to `meta`; a box that ends past the file means a file cut short.
    let mut pos = 0u64;
    let mut brands_ok = false;
    let meta = loop {
        let at = usize::try_from(pos).map_err(|_| damaged("box offset"))?;
        let b = match box_at(head, at, file_len) {
            Some(b) => b?,
            None => return Err(need_more(pos + 16)),
        };
        match &b.kind {
            b"ftyp" if pos == 0 => {
                let body = head.get(b.body..b.end as usize).ok_or_else(|| need_more(b.end))?;
                let mut brands = body.chunks_exact(4).enumerate().filter(|(i, _)| *i != 1).map(|(_, b)| b);
                brands_ok = brands.any(|b| BRANDS.iter().any(|ok| b == *ok));
            }
            b"meta" => break b,
            _ if pos == 0 => return Err(damaged("no ftyp box")),
            _ => {}
        }
        pos = b.end;
        if pos >= file_len {
            return Err(HeifError::Unsupported("the HEIF file holds no image (no meta box)".into()));
        }
    };
    if !brands_ok {
        return Err(HeifError::Unsupported("AVIF images are not supported; HEIC is".into()));
    }
    let body = head.get(meta.body..meta.end as usize).ok_or_else(|| need_more(meta.end))?;
    let mut r = Reader::new(body);
    r.version()?;
    let meta = parse_meta(r.children()?)?;

    let primary = meta.primary.ok_or_else(|| damaged("no primary item"))?;
    let kind_of = |id: u32| meta.items.iter().find(|(i, _)| *i == id).map(|(_, k)| k);
    match kind_of(primary) {
        Some(b"hvc1" | b"grid") => {}
        Some(b"av01") => return Err(HeifError::Unsupported("AVIF images are not supported; HEIC is".into())),
        Some(other) => {
            return Err(HeifError::Unsupported(format!(
                "the HEIF file's image is of a kind not supported ({})",
                String::from_utf8_lossy(other)
            )));
        }
        None => return Err(damaged("the primary item is not described")),
    }
    if meta.items.iter().any(|(_, k)| k == b"av01") {
        return Err(HeifError::Unsupported("AVIF images are not supported; HEIC is".into()));
    }

    // Every image in the file counts, the largest against the limit.
    let mut largest = 0u64;
    for (kind, body) in &meta.properties {
        if *kind == b"ispe" {
            let (w, h) = ispe(body)?;
            largest = largest.max(u64::from(w) * u64::from(h));
        }
    }
    if largest > max_pixels {
        return Err(HeifError::TooManyPixels(largest));
    }
    streams_fit_their_labels(&meta)?;

    // Every byte an item points at must be in the file.
    for (_, method, extents) in &meta.locations {
        if *method == 0 && extents.iter().any(|e| e.offset.saturating_add(e.length) > file_len) {
            return Err(HeifError::Unsupported("the HEIC file is cut short (its image data is missing)".into()));
        }
    }
    if !meta.locations.iter().any(|(id, _, _)| *id == primary) && kind_of(primary) == Some(b"hvc1") {
        return Err(damaged("the primary image has no data"));
    }

    let mut size = None;
    let mut orientation = Orientation::UPRIGHT;
    let mut transformed = false;
    let associated = meta.associations.iter().find(|(id, _)| *id == primary).map(|(_, p)| p.as_slice()).unwrap_or(&[]);
    for &index in associated {
        let Some((kind, body)) = usize::from(index).checked_sub(1).and_then(|i| meta.properties.get(i)) else {
            return Err(damaged("a property index past the list"));
        };
        match *kind {
            b"ispe" => size = Some(ispe(body)?),
            b"irot" => {
                let angle = body.first().ok_or_else(|| damaged("irot"))? & 3;
                orientation = orientation.then(Orientation::anticlockwise(angle));
                transformed = true;
            }
            b"imir" => {
                let axis = body.first().ok_or_else(|| damaged("imir"))? & 1;
                orientation = orientation.then(Orientation::mirror(axis));
                transformed = true;
            }
            _ => {}
        }
    }
    let (width, height) = size.ok_or_else(|| damaged("the primary image has no size (ispe)"))?;

    // The EXIF block: an `Exif` item's data starts with the offset of its TIFF header.
    let exif_extent = meta.items.iter().filter(|(_, k)| k == b"Exif").find_map(|(id, _)| {
        meta.locations.iter().find(|(i, m, e)| i == id && *m == 0 && e.len() == 1).map(|(_, _, e)| e[0])
    });
    let exif = match exif_extent {
        Some(e) if e.length > 4 && e.offset + e.length <= MAX_EXIF_END => {
            let end = e.offset + e.length;
            let block = head.get(e.offset as usize..end as usize).ok_or_else(|| need_more(end))?;
            let skip = u32::from_be_bytes([block[0], block[1], block[2], block[3]]) as usize;
            block.get(4 + skip..)
        }
        _ => None,
    };

    Ok(HeifHeader { width, height, orientation: orientation.exif(), transformed, exif })
}

/// The decoder allocates what each image's HEVC stream says (its SPS), not what its `ispe`
/// says: an item whose stream is larger than its label (past the coding block padding of up to
/// 64 samples a side) is refused, so the pixel limit checked above is the decoder's.
fn streams_fit_their_labels(meta: &Meta<'_>) -> Result<(), HeifError> {
    for (_, indices) in &meta.associations {
        let property = |kind: &[u8; 4]| {
            indices
                .iter()
                .filter_map(|&i| usize::from(i).checked_sub(1).and_then(|i| meta.properties.get(i)))
                .find(|(k, _)| *k == kind)
                .map(|(_, body)| *body)
        };
        let (Some(ispe_body), Some(hvcc)) = (property(b"ispe"), property(b"hvcC")) else { continue };
        let (w, h) = ispe(ispe_body)?;
        let Some((coded_w, coded_h)) = param_sets::hevc_coded_size(hvcc) else { continue };
        let padded = |n: u32| u64::from(n).div_ceil(64) * 64;
        if u64::from(coded_w) > padded(w) || u64::from(coded_h) > padded(h) {
            return Err(HeifError::Unsupported(format!(
                "the HEIC file's image stream ({coded_w}×{coded_h}) is larger than its header says ({w}×{h})"
            )));
        }
    }
    Ok(())
}

fn parse_meta<'a>(children: Vec<Child<'a>>) -> Result<Meta<'a>, HeifError> {
    let mut meta = Meta::default();
    for (kind, body) in children {
        let mut r = Reader::new(body);
        match kind {
            b"pitm" => {
                let v = r.version()?;
                meta.primary = Some(if v == 0 { u32::from(r.u16()?) } else { r.u32()? });
            }
            b"iinf" => {
                let v = r.version()?;
                let _count = if v == 0 { u32::from(r.u16()?) } else { r.u32()? };
                for (kind, body) in r.children()? {
                    if kind != b"infe" {
                        continue;
                    }
                    let mut e = Reader::new(body);
                    let v = e.version()?;
                    if v < 2 {
                        continue;
                    }
                    let id = if v == 2 { u32::from(e.u16()?) } else { e.u32()? };
                    e.u16()?;
                    let item_type: [u8; 4] = e.take(4)?.try_into().map_err(|_| damaged("infe"))?;
                    meta.items.push((id, item_type));
                }
            }
            b"iloc" => meta.locations = iloc(&mut r)?,
            b"iprp" => {
                for (kind, body) in r.children()? {
                    let mut p = Reader::new(body);
                    match kind {
                        b"ipco" => meta.properties = p.children()?,
                        b"ipma" => meta.associations.extend(ipma(&mut p)?),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    Ok(meta)
}

fn iloc(r: &mut Reader<'_>) -> Result<Vec<(u32, u16, Vec<Extent>)>, HeifError> {
    let v = r.version()?;
    let sizes = r.u16()?;
    let (offset_size, length_size, base_size) =
        (usize::from(sizes >> 12), usize::from(sizes >> 8 & 15), usize::from(sizes >> 4 & 15));
    let index_size = if v >= 1 { usize::from(sizes & 15) } else { 0 };
    if [offset_size, length_size, base_size, index_size].iter().any(|s| ![0, 4, 8].contains(s)) {
        return Err(damaged("iloc field sizes"));
    }
    let count = if v < 2 { u32::from(r.u16()?) } else { r.u32()? };
    let mut out = Vec::new();
    for _ in 0..count {
        let id = if v < 2 { u32::from(r.u16()?) } else { r.u32()? };
        let method = if v >= 1 { r.u16()? & 15 } else { 0 };
        let data_reference = r.u16()?;
        let base = r.uint(base_size)?;
        let extents = r.u16()?;
        let mut list = Vec::new();
        for _ in 0..extents {
            r.uint(index_size)?;
            let offset = base.saturating_add(r.uint(offset_size)?);
            list.push(Extent { offset, length: r.uint(length_size)? });
        }
        // Data in another file (a data reference) is not this file's to check.
        let method = if data_reference != 0 { u16::MAX } else { method };
        out.push((id, method, list));
    }
    Ok(out)
}

fn ipma(r: &mut Reader<'_>) -> Result<Vec<(u32, Vec<u16>)>, HeifError> {
    let v = r.u8()?;
    let flags = r.uint(3)?;
    let count = r.u32()?;
    let mut out = Vec::new();
    for _ in 0..count {
        let id = if v < 1 { u32::from(r.u16()?) } else { r.u32()? };
        let n = r.u8()?;
        let mut indices = Vec::with_capacity(usize::from(n));
        for _ in 0..n {
            indices.push(if flags & 1 == 1 { r.u16()? & 0x7FFF } else { u16::from(r.u8()? & 0x7F) });
        }
        out.push((id, indices));
    }
    Ok(out)
}

fn ispe(body: &[u8]) -> Result<(u32, u32), HeifError> {
    let mut r = Reader::new(body);
    r.version()?;
    Ok((r.u32()?, r.u32()?))
}

/// A turn and mirror of the picture, as the matrix that takes a stored pixel's (x, y), y going
/// down, to where it is shown; composing them is multiplying the matrices.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Orientation([[i8; 2]; 2]);

/// The matrices of EXIF orientations 1–8, in order.
const EXIF: [[[i8; 2]; 2]; 8] = [
    [[1, 0], [0, 1]],
    [[-1, 0], [0, 1]],
    [[-1, 0], [0, -1]],
    [[1, 0], [0, -1]],
    [[0, 1], [1, 0]],
    [[0, -1], [1, 0]],
    [[0, -1], [-1, 0]],
    [[0, 1], [-1, 0]],
];

impl Orientation {
    const UPRIGHT: Orientation = Orientation(EXIF[0]);

    /// `irot`: `quarters` quarter turns anticlockwise.
    fn anticlockwise(quarters: u8) -> Self {
        Orientation(EXIF[[0, 7, 2, 5][usize::from(quarters & 3)]])
    }

    /// `imir`: axis 0 is the vertical axis (left and right swap), 1 the horizontal one.
    fn mirror(axis: u8) -> Self {
        Orientation(EXIF[if axis == 0 { 1 } else { 3 }])
    }

    /// This, then `next`.
    fn then(self, next: Orientation) -> Self {
        let (a, b) = (next.0, self.0);
        let m = |i: usize, j: usize| a[i][0] * b[0][j] + a[i][1] * b[1][j];
        Orientation([[m(0, 0), m(0, 1)], [m(1, 0), m(1, 1)]])
    }

    fn exif(self) -> u16 {
        EXIF.iter().position(|m| *m == self.0).map_or(1, |i| i as u16 + 1)
    }
}

#[cfg(test)]
mod tests;
