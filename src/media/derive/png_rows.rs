//! PNG decoded row by row, so the full image is never held: each row is brought to 8 bits
//! (the `png` crate's EXPAND | STRIP_16), flattened onto white, and averaged into blocks of
//! `factor` × `factor` pixels as it arrives. A 16-bit RGBA PNG of 10000 × 10000 (800 MB
//! decoded whole) becomes a 2500 × 2500 RGB buffer of 19 MB and two rows of the decoder's.
//!
//! Interlaced (Adam7) files deliver their pixels in seven passes over the whole image; each
//! pixel still lands in exactly one block, so the blocks' sums are kept until the last pass.
//!
//! The iCCP chunk's profile (decompressed by the `png` crate) is handed on with the pixels.

use std::io::{BufRead, Read, Seek, SeekFrom};

use super::budget;
use super::{Decoded, DeriveError, Original, Pixels, check_size, undecodable};

/// A stream the `png` decoder reads front to back. Its type asks for `Seek`, which it never
/// uses; a seek anywhere but to the current position is an error, not a buffered file.
struct Forward<'a> {
    source: &'a mut dyn BufRead,
    read: u64,
}

impl Read for Forward<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.source.read(buf)?;
        self.read += n as u64;
        Ok(n)
    }
}

impl BufRead for Forward<'_> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        self.source.fill_buf()
    }

    fn consume(&mut self, amount: usize) {
        self.read += amount as u64;
        self.source.consume(amount);
    }
}

impl Seek for Forward<'_> {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        match to {
            SeekFrom::Current(0) => Ok(self.read),
            SeekFrom::Start(n) if n == self.read => Ok(self.read),
            _ => Err(std::io::Error::new(std::io::ErrorKind::Unsupported, "the original is read as a stream")),
        }
    }
}

/// Adam7 passes: first column, first row, column step, row step.
const PASSES: [(u32, u32, u32, u32); 7] =
    [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)];

/// Decodes, reducing by the largest integer factor that keeps the long edge at least
/// `keep_edge` (no reduction when `keep_edge` is `None` or the image is smaller).
pub(super) fn decode_png(
    original: Original<'_>,
    max_pixels: u64,
    keep_edge: Option<u32>,
    budget: u64,
) -> Result<Decoded, DeriveError> {
    let limits = png::Limits { bytes: usize::try_from(budget).unwrap_or(usize::MAX) };
    let mut decoder = png::Decoder::new_with_limits(Forward { source: original.source, read: 0 }, limits);
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().map_err(undecodable)?;
    let (width, height, interlaced, icc) = {
        let info = reader.info();
        (info.width, info.height, info.interlaced, info.icc_profile.as_ref().map(|icc| icc.to_vec()))
    };
    check_size(width, height, max_pixels)?;
    let (color, depth) = reader.output_color_type();
    if depth != png::BitDepth::Eight {
        return Err(undecodable(format!("unexpected {depth:?}-bit output")));
    }
    let (in_channels, channels) = match color {
        png::ColorType::Grayscale => (1, 1),
        png::ColorType::GrayscaleAlpha => (2, 1),
        png::ColorType::Rgb => (3, 3),
        png::ColorType::Rgba => (4, 3),
        png::ColorType::Indexed => return Err(undecodable("a palette was not expanded")),
    };
    let factor = keep_edge.map_or(1, |edge| (width.max(height) / edge.max(1)).max(1));
    let mut blocks = Blocks::new(width, height, factor, channels, interlaced);
    let line = u64::from(width) * in_channels as u64;
    budget::check(blocks.bytes() + 4 * line, budget)?;
    blocks.allocate();

    // One row, flattened: the decoder's row is borrowed from it until the next.
    let mut flat = Vec::with_capacity(width as usize * channels);
    if !interlaced {
        let mut y = 0;
        while let Some(row) = reader.next_row().map_err(undecodable)? {
            if y >= height {
                return Err(undecodable("more rows than the header says"));
            }
            flatten_row(row.data(), in_channels, &mut flat);
            blocks.add_row(y, &flat);
            y += 1;
        }
        if y != height {
            return Err(undecodable("fewer rows than the header says"));
        }
    } else {
        let mut expected = adam7(width, height);
        while let Some(row) = reader.next_interlaced_row().map_err(undecodable)? {
            let (pass, line) = expected.next().ok_or_else(|| undecodable("more rows than the header says"))?;
            let in_order = match row.interlace() {
                png::InterlaceInfo::Adam7(info) => *info == png::Adam7Info::new(pass, line, width),
                png::InterlaceInfo::Null(_) => false,
            };
            if !in_order {
                return Err(undecodable("interlaced rows out of order"));
            }
            let (x0, y0, dx, dy) = PASSES[usize::from(pass) - 1];
            let y = y0 + line * dy;
            flatten_row(row.data(), in_channels, &mut flat);
            for (i, p) in flat.chunks_exact(channels).enumerate() {
                blocks.add(x0 + i as u32 * dx, y, p);
            }
        }
        if expected.next().is_some() {
            return Err(undecodable("fewer rows than the header says"));
        }
    }
    Ok((blocks.finish(), icc))
}

/// The (pass, line) of every row an Adam7 file holds, in order; passes without pixels are
/// left out, as the decoder does.
fn adam7(width: u32, height: u32) -> impl Iterator<Item = (u8, u32)> {
    PASSES.into_iter().zip(1u8..).flat_map(move |((x0, y0, dx, dy), pass)| {
        let samples = width.saturating_sub(x0).div_ceil(dx);
        let lines = if samples == 0 { 0 } else { height.saturating_sub(y0).div_ceil(dy) };
        (0..lines).map(move |line| (pass, line))
    })
}

/// A row's pixels on white, without their alpha: gray (1 value each) or RGB (3). One loop per
/// layout, so the per-pixel work is a few operations.
fn flatten_row(row: &[u8], in_channels: usize, out: &mut Vec<u8>) {
    fn on_white(c: u8, a: u8) -> u8 {
        ((u32::from(c) * u32::from(a) + 255 * (255 - u32::from(a)) + 127) / 255) as u8
    }
    out.clear();
    match in_channels {
        2 => out.extend(row.chunks_exact(2).map(|p| on_white(p[0], p[1]))),
        4 => {
            for p in row.chunks_exact(4) {
                out.extend_from_slice(&[on_white(p[0], p[3]), on_white(p[1], p[3]), on_white(p[2], p[3])]);
            }
        }
        _ => out.extend_from_slice(row),
    }
}

/// The reduced image being made: sums of `factor` × `factor` blocks.
struct Blocks {
    width: u32,
    height: u32,
    factor: u32,
    channels: usize,
    out_width: u32,
    /// The output; with `factor` 1, pixels are written to it directly.
    out: Vec<u8>,
    /// Sums of one row of blocks (rows arrive in order), or of all of them (interlaced).
    sums: Vec<u32>,
    interlaced: bool,
}

impl Blocks {
    fn new(width: u32, height: u32, factor: u32, channels: usize, interlaced: bool) -> Self {
        let out_width = width.div_ceil(factor);
        Self { width, height, factor, channels, out_width, out: Vec::new(), sums: Vec::new(), interlaced }
    }

    /// Allocates the buffers, once `bytes` was checked against the budget.
    fn allocate(&mut self) {
        self.out = vec![0; self.out_len()];
        self.sums = vec![0; self.sums_len()];
    }

    fn out_len(&self) -> usize {
        self.out_width as usize * self.height.div_ceil(self.factor) as usize * self.channels
    }

    fn sums_len(&self) -> usize {
        match (self.factor, self.interlaced) {
            (1, _) => 0,
            (_, false) => self.out_width as usize * self.channels,
            (_, true) => self.out_len(),
        }
    }

    /// What the output and the sums take.
    fn bytes(&self) -> u64 {
        self.out_len() as u64 + 4 * self.sums_len() as u64
    }

    /// Adds one pixel of an interlaced file.
    fn add(&mut self, x: u32, y: u32, pixel: &[u8]) {
        if x >= self.width || y >= self.height || pixel.len() != self.channels {
            return;
        }
        let n = self.channels;
        if self.factor == 1 {
            let at = (y as usize * self.width as usize + x as usize) * n;
            self.out[at..at + n].copy_from_slice(pixel);
            return;
        }
        let row = (y / self.factor) as usize * self.out_width as usize;
        let at = (row + (x / self.factor) as usize) * n;
        for (sum, &c) in self.sums[at..at + n].iter_mut().zip(pixel) {
            *sum += u32::from(c);
        }
    }

    /// Adds source row `y` of a file whose rows come in order; after the last row of a row of
    /// blocks, writes that out.
    fn add_row(&mut self, y: u32, row: &[u8]) {
        let n = self.channels;
        if y >= self.height || row.len() != self.width as usize * n {
            return;
        }
        if self.factor == 1 {
            let at = y as usize * row.len();
            self.out[at..at + row.len()].copy_from_slice(row);
            return;
        }
        for (sums, block) in self.sums.chunks_exact_mut(n).zip(row.chunks(self.factor as usize * n)) {
            for pixel in block.chunks_exact(n) {
                for (sum, &c) in sums.iter_mut().zip(pixel) {
                    *sum += u32::from(c);
                }
            }
        }
        if y + 1 == self.height || (y + 1).is_multiple_of(self.factor) {
            self.write_row(y / self.factor, 0);
            self.sums.fill(0);
        }
    }

    /// Averages the sums of block row `by` (found at `sums_row` in `sums`) into the output.
    fn write_row(&mut self, by: u32, sums_row: usize) {
        let n = self.channels;
        let rows = (self.height - by * self.factor).min(self.factor);
        for bx in 0..self.out_width {
            let cols = (self.width - bx * self.factor).min(self.factor);
            let count = rows * cols;
            let s = (sums_row + bx as usize) * n;
            let o = (by as usize * self.out_width as usize + bx as usize) * n;
            for c in 0..n {
                self.out[o + c] = ((self.sums[s + c] + count / 2) / count) as u8;
            }
        }
    }

    fn finish(mut self) -> Pixels {
        if self.factor > 1 && self.interlaced {
            for by in 0..self.height.div_ceil(self.factor) {
                self.write_row(by, by as usize * self.out_width as usize);
            }
        }
        let height = self.height.div_ceil(self.factor);
        Pixels { buf: self.out, width: self.out_width, height, channels: self.channels }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(
        width: u32,
        height: u32,
        color: png::ColorType,
        depth: png::BitDepth,
        interlaced: bool,
        data: &[u8],
    ) -> Vec<u8> {
        if interlaced {
            return adam7_png(width, height, color, depth, data);
        }
        let mut bytes = Vec::new();
        let mut encoder = png::Encoder::new(&mut bytes, width, height);
        encoder.set_color(color);
        encoder.set_depth(depth);
        encoder.write_header().unwrap().write_image_data(data).unwrap();
        bytes
    }

    /// The `png` crate writes no interlaced files: the passes by hand, in stored deflate blocks.
    fn adam7_png(width: u32, height: u32, color: png::ColorType, depth: png::BitDepth, data: &[u8]) -> Vec<u8> {
        let bpp = color.samples() * (depth as usize / 8);
        let mut raw = Vec::new();
        for (pass, line) in adam7(width, height) {
            let (x0, y0, dx, dy) = PASSES[usize::from(pass) - 1];
            raw.push(0);
            let y = (y0 + line * dy) as usize;
            for x in (x0..width).step_by(dx as usize) {
                let at = (y * width as usize + x as usize) * bpp;
                raw.extend_from_slice(&data[at..at + bpp]);
            }
        }
        let mut zlib = vec![0x78, 0x01];
        let blocks: Vec<&[u8]> = raw.chunks(65535).collect();
        for (i, block) in blocks.iter().enumerate() {
            zlib.push(u8::from(i + 1 == blocks.len()));
            let len = block.len() as u16;
            zlib.extend_from_slice(&len.to_le_bytes());
            zlib.extend_from_slice(&(!len).to_le_bytes());
            zlib.extend_from_slice(block);
        }
        let (mut a, mut b) = (1u32, 0u32);
        for &byte in &raw {
            a = (a + u32::from(byte)) % 65521;
            b = (b + a) % 65521;
        }
        zlib.extend_from_slice(&((b << 16) | a).to_be_bytes());
        let mut header = width.to_be_bytes().to_vec();
        header.extend_from_slice(&height.to_be_bytes());
        header.extend_from_slice(&[depth as u8, color as u8, 0, 0, 1]);
        let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
        for (kind, body) in [(b"IHDR", &header[..]), (b"IDAT", &zlib[..]), (b"IEND", &[][..])] {
            out.extend_from_slice(&(body.len() as u32).to_be_bytes());
            out.extend_from_slice(kind);
            out.extend_from_slice(body);
            out.extend_from_slice(&crc32(&[&kind[..], body].concat()).to_be_bytes());
        }
        out
    }

    fn crc32(data: &[u8]) -> u32 {
        let mut crc = 0xFFFF_FFFFu32;
        for &b in data {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 == 1 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
            }
        }
        !crc
    }

    fn decode_whole(bytes: &[u8], max_pixels: u64, keep_edge: Option<u32>, budget: u64) -> Result<Pixels, DeriveError> {
        let mut bytes = bytes;
        decode_png(Original::whole(&mut bytes), max_pixels, keep_edge, budget).map(|(pixels, _)| pixels)
    }

    #[test]
    fn rows_are_averaged_into_blocks_the_same_way_interlaced_or_not() {
        // 10 × 7 RGB, reduced by 3: blocks of 3×3, 1×3, 3×1 and 1×1 at the edges.
        let data: Vec<u8> = (0..10 * 7 * 3).map(|i| (i * 37 % 251) as u8).collect();
        let plain = decode_whole(
            &png(10, 7, png::ColorType::Rgb, png::BitDepth::Eight, false, &data),
            1 << 20,
            Some(3),
            1 << 20,
        )
        .unwrap();
        let adam7 = decode_whole(
            &png(10, 7, png::ColorType::Rgb, png::BitDepth::Eight, true, &data),
            1 << 20,
            Some(3),
            1 << 20,
        )
        .unwrap();
        assert_eq!((plain.width, plain.height, plain.channels), (4, 3, 3));
        assert_eq!(plain.buf, adam7.buf);
        let mean = |xs: &[(usize, usize)], c: usize| {
            let sum: u32 = xs.iter().map(|&(x, y)| u32::from(data[(y * 10 + x) * 3 + c])).sum();
            ((sum + xs.len() as u32 / 2) / xs.len() as u32) as u8
        };
        let block = |bx: usize, by: usize| -> Vec<(usize, usize)> {
            (by * 3..(by * 3 + 3).min(7)).flat_map(|y| (bx * 3..(bx * 3 + 3).min(10)).map(move |x| (x, y))).collect()
        };
        for (bx, by) in [(0, 0), (3, 0), (0, 2), (3, 2), (1, 1)] {
            for c in 0..3 {
                assert_eq!(plain.buf[(by * 4 + bx) * 3 + c], mean(&block(bx, by), c), "block ({bx}, {by}) channel {c}");
            }
        }
        // Unreduced, the interlaced file gives back every pixel.
        let whole =
            decode_whole(&png(10, 7, png::ColorType::Rgb, png::BitDepth::Eight, true, &data), 1 << 20, None, 1 << 20)
                .unwrap();
        assert_eq!(whole.buf, data);
    }

    #[test]
    fn sixteen_bit_rgba_is_brought_to_eight_bits_on_white() {
        // Opaque red, then fully transparent: red, then white.
        let data = [[0xFF, 0xFF, 0, 0, 0, 0, 0xFF, 0xFF], [0, 0, 0, 0, 0, 0, 0, 0]].concat();
        let p = decode_whole(
            &png(2, 1, png::ColorType::Rgba, png::BitDepth::Sixteen, false, &data),
            1 << 20,
            None,
            1 << 20,
        )
        .unwrap();
        assert_eq!(p.buf, [255, 0, 0, 255, 255, 255]);
    }

    #[test]
    fn a_reduction_that_would_not_fit_the_budget_is_refused_before_decoding() {
        let data = vec![0u8; 64 * 64];
        let bytes = png(64, 64, png::ColorType::Grayscale, png::BitDepth::Eight, false, &data);
        assert!(matches!(decode_whole(&bytes, 1 << 20, None, 1000), Err(DeriveError::OverBudget { .. })));
        assert!(decode_whole(&bytes, 1 << 20, None, 1 << 20).is_ok());
    }
}
