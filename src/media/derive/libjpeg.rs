//! JPEG through libjpeg-turbo's code, as the `mozjpeg` crate builds it (SIMD included):
//!
//! * the decode of ordinary camera and phone JPEGs — 8-bit, Huffman-coded baseline or
//!   progressive, gray or YCbCr: at half scale a 12 MP photo takes 34 ms against 47 ms for
//!   `jpeg-decoder`. CMYK, 12-bit, lossless and arithmetic-coded JPEGs stay with
//!   `jpeg-decoder` (`decode_jpeg`);
//! * the encode of every JPEG derivative, in libjpeg-turbo's own mode (baseline, standard
//!   Huffman tables, 4:2:0 by averaging): a 2000×1500 preview takes 11 ms against 38 ms for
//!   `jpeg-encoder`, in the same bytes give or take a few (docs/benchmarks.md "Derivatives").
//!
//! libjpeg reports a fatal error by unwinding (the crate's error manager); the caller's
//! `catch_unwind` makes that a refused photo. A file that ends before its image does is an
//! error too: libjpeg would draw the rest gray and only warn.

use std::io::{self, BufRead, Read};
use std::panic::{AssertUnwindSafe, catch_unwind};

use super::budget::JpegFrame;
use super::{DeriveError, Encoded, Pixels, undecodable};

/// Whether libjpeg decodes this frame here: 8 bits, Huffman baseline, extended or progressive
/// (SOF0–SOF2), one or three components.
pub(super) fn takes(frame: &JpegFrame) -> bool {
    frame.precision == 8 && matches!(frame.marker, 0xC0..=0xC2) && matches!(frame.sampling.len(), 1 | 3)
}

/// Decodes at `scale`/8 (1, 2, 4 or 8), to gray or RGB. Also returns the ICC profile of its APP2
/// segments, joined (`None` when chunks are missing or repeated).
pub(super) fn decode(
    source: &mut dyn BufRead,
    scale: u8,
    width: u32,
    height: u32,
) -> Result<(Pixels, Option<Vec<u8>>), DeriveError> {
    let mut source = Ended { inner: source, ended: false };
    let mut decoder = mozjpeg::Decompress::builder()
        .with_markers(&[mozjpeg::Marker::APP(2)])
        .from_reader(&mut source)
        .map_err(undecodable)?;
    let icc = icc_profile(decoder.markers().filter(|m| m.marker == mozjpeg::Marker::APP(2)).map(|m| m.data));
    decoder.scale(scale);
    let (mut started, channels) = match decoder.color_space() {
        mozjpeg::ColorSpace::JCS_GRAYSCALE => (decoder.grayscale().map_err(undecodable)?, 1),
        _ => (decoder.rgb().map_err(undecodable)?, 3),
    };
    if (started.width(), started.height()) != (width as usize, height as usize) {
        return Err(undecodable("the decoder chose another size than the frame's at this scale"));
    }
    let buf = started.read_scanlines::<u8>().map_err(undecodable)?;
    started.finish().map_err(undecodable)?;
    if source.ended {
        return Err(undecodable("the file ends before its image does"));
    }
    if buf.len() != width as usize * height as usize * channels {
        return Err(undecodable("the decoded pixels do not match the frame size"));
    }
    Ok((Pixels { buf, width, height, channels }, icc))
}

/// Encodes gray or RGB pixels as a baseline interleaved JPEG (4:2:0 by averaging for RGB) with a
/// JFIF header and nothing else. Standard Huffman tables, not optimised ones: optimising took 3×
/// as long for 0.7% fewer bytes on a preview, and the plainest file decodes everywhere.
pub(super) fn encode(p: &Pixels, quality: u8) -> Result<Encoded, DeriveError> {
    let space = if p.channels == 1 { mozjpeg::ColorSpace::JCS_GRAYSCALE } else { mozjpeg::ColorSpace::JCS_RGB };
    let internal = |e: &dyn std::fmt::Display| DeriveError::Internal(format!("JPEG encode: {e}"));
    // libjpeg unwinds on an error; none is expected for pixels this module made.
    catch_unwind(AssertUnwindSafe(|| {
        let mut compress = mozjpeg::Compress::new(space);
        compress.set_fastest_defaults();
        compress.set_quality(f32::from(quality));
        compress.set_size(p.width as usize, p.height as usize);
        let mut started = compress.start_compress(Vec::with_capacity(p.buf.len() / 8))?;
        started.write_scanlines(&p.buf)?;
        started.finish()
    }))
    .map_err(|_| internal(&"libjpeg failed"))?
    .map(|bytes| Encoded { bytes, width: p.width, height: p.height })
    .map_err(|e| internal(&e))
}

/// The smallest scale (1, 2, 4 or 8 eighths) whose long edge is at least `request`.
pub(super) fn scale_for(frame: &JpegFrame, request: u32) -> u8 {
    [1, 2, 4, 8]
        .into_iter()
        .find(|&s| {
            let (width, height) = scaled(frame, s);
            width.max(height) >= request
        })
        .unwrap_or(8)
}

/// The output size at `scale`/8, as libjpeg rounds it.
pub(super) fn scaled(frame: &JpegFrame, scale: u8) -> (u32, u32) {
    let by = |edge: u32| (u64::from(edge) * u64::from(scale)).div_ceil(8) as u32;
    (by(frame.width), by(frame.height))
}

/// Joins the `ICC_PROFILE` chunks of APP2 segments in their sequence order.
fn icc_profile<'a>(segments: impl Iterator<Item = &'a [u8]>) -> Option<Vec<u8>> {
    const TAG: &[u8] = b"ICC_PROFILE\0";
    let mut chunks: Vec<(u8, u8, &[u8])> = segments
        .filter_map(|s| s.strip_prefix(TAG))
        .filter_map(|s| Some((*s.first()?, *s.get(1)?, s.get(2..)?)))
        .collect();
    let count = chunks.first()?.1;
    chunks.sort_by_key(|c| c.0);
    let in_order = chunks.iter().enumerate().all(|(i, c)| usize::from(c.0) == i + 1 && c.1 == count);
    (in_order && chunks.len() == usize::from(count)).then(|| chunks.iter().flat_map(|c| c.2).copied().collect())
}

/// A source that remembers whether it ran out: libjpeg asks for more only when the image is
/// not yet complete.
struct Ended<'a> {
    inner: &'a mut dyn BufRead,
    ended: bool,
}

impl Read for Ended<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.ended |= n == 0 && !buf.is_empty();
        Ok(n)
    }
}

impl BufRead for Ended<'_> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        let buf = self.inner.fill_buf()?;
        self.ended |= buf.is_empty();
        Ok(buf)
    }

    fn consume(&mut self, amount: usize) {
        self.inner.consume(amount);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segment(seq: u8, count: u8, data: &[u8]) -> Vec<u8> {
        [b"ICC_PROFILE\0".as_slice(), &[seq, count], data].concat()
    }

    /// A flat-coloured 4:2:0 JPEG from libjpeg itself, progressive or not.
    fn flat_jpeg(width: usize, height: usize, rgb: [u8; 3], progressive: bool) -> Vec<u8> {
        let mut compress = mozjpeg::Compress::new(mozjpeg::ColorSpace::JCS_RGB);
        compress.set_fastest_defaults();
        if progressive {
            compress.set_progressive_mode();
        }
        compress.set_quality(90.0);
        compress.set_size(width, height);
        let mut started = compress.start_compress(Vec::new()).expect("start");
        started.write_scanlines(&rgb.repeat(width * height)).expect("rows");
        started.finish().expect("finish")
    }

    fn frame(bytes: &[u8]) -> JpegFrame {
        super::super::budget::jpeg_frame(bytes).expect("a frame header")
    }

    #[test]
    fn baseline_and_progressive_jpegs_decode_at_the_scale_asked() {
        for progressive in [false, true] {
            let bytes = flat_jpeg(803, 601, [200, 60, 30], progressive);
            let frame = frame(&bytes);
            assert!(takes(&frame) && frame.progressive == progressive);
            let (width, height) = scaled(&frame, 2);
            assert_eq!((width, height), (201, 151), "803 × 601 at 2/8, rounded up");
            let (pixels, icc) = decode(&mut bytes.as_slice(), 2, width, height).expect("decodes");
            assert_eq!((pixels.width, pixels.height, pixels.channels, icc), (201, 151, 3, None));
            let middle = &pixels.buf[(75 * 201 + 100) * 3..][..3];
            assert!(middle.iter().zip([200, 60, 30]).all(|(&a, b)| a.abs_diff(b) <= 3), "{middle:?}");
        }
    }

    #[test]
    fn a_jpeg_cut_short_is_an_error_not_a_gray_bottom() {
        for progressive in [false, true] {
            let bytes = flat_jpeg(640, 480, [10, 120, 240], progressive);
            let cut = &bytes[..bytes.len() * 2 / 3];
            let (width, height) = scaled(&frame(cut), 8);
            let decoded = catch_unwind(AssertUnwindSafe(|| decode(&mut &cut[..], 8, width, height)));
            assert!(matches!(decoded, Ok(Err(DeriveError::Undecodable(_))) | Err(_)), "progressive {progressive}");
        }
    }

    #[test]
    fn cmyk_and_twelve_bit_frames_are_left_to_the_other_decoder() {
        let mut f = frame(&flat_jpeg(16, 16, [0, 0, 0], false));
        assert!(takes(&f));
        f.sampling.push((1, 1));
        assert!(!takes(&f), "four components");
        f.sampling.pop();
        f.precision = 12;
        assert!(!takes(&f), "12 bits");
        f.precision = 8;
        f.marker = 0xC9;
        assert!(!takes(&f), "arithmetic coding");
    }

    #[test]
    fn icc_chunks_are_joined_in_sequence_order() {
        let (a, b) = (segment(1, 2, b"abc"), segment(2, 2, b"de"));
        assert_eq!(icc_profile([b.as_slice(), a.as_slice()].into_iter()), Some(b"abcde".to_vec()));
    }

    #[test]
    fn missing_or_repeated_icc_chunks_give_no_profile() {
        let (a, b) = (segment(1, 3, b"abc"), segment(2, 3, b"de"));
        assert_eq!(icc_profile([a.as_slice(), b.as_slice()].into_iter()), None, "the third is missing");
        let a2 = segment(1, 2, b"abc");
        assert_eq!(icc_profile([a2.as_slice(), a2.as_slice()].into_iter()), None, "repeated");
        assert_eq!(icc_profile([b"Exif\0\0".as_slice()].into_iter()), None, "not ICC");
    }
}
