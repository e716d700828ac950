//! What decoding an original will hold in memory, estimated from its header before anything
//! is allocated, so a photo that would need more than a derivative job may use ends `failed`
//! with the reason instead of taking the server's memory.
//!
//! The figures follow the decoders as they are: `jpeg-decoder` keeps a progressive JPEG's
//! whole coefficient buffer (64 × i16 per 8×8 block of every component, padded to whole
//! MCUs) and one plane per component at the output scale; libjpeg-turbo (`libjpeg`) keeps the
//! same coefficients but only strips of the planes, so the same estimate bounds it from above; `image`'s GIF decoder draws the
//! first frame on an RGBA canvas the size of the logical screen; its WebP decoder fills an
//! RGB(A) buffer and keeps a frame of its own while doing it.

use super::DeriveError;

/// Bytes one derivative job's decoder may hold. The decoded pixels are then at most about
/// 4096 px on their long edge for JPEG and PNG (shrink-on-load), so the resizes, the turn
/// upright and the encodes that follow add a few tens of MiB. The conversion to sRGB
/// (`colour`) adds no buffer per pixel: RGB and gray change in place, CMYK becomes the RGB
/// buffer counted with the decode; its tables are fixed in size (about 1 MiB at most).
/// Jobs run on the background threads (one per core), so derivatives need at most
/// cores × this. JPEG and PNG originals stream through the decoder (64 KiB of read
/// buffer); a GIF or WebP original is read whole, and counts against this budget.
pub const MEMORY_BUDGET: u64 = 256 << 20;

/// Refuses a decode needing more than `budget` bytes.
pub fn check(needed: u64, budget: u64) -> Result<(), DeriveError> {
    if needed > budget {
        return Err(DeriveError::OverBudget { needed_mib: needed.div_ceil(1 << 20), budget_mib: budget >> 20 });
    }
    Ok(())
}

/// A JPEG's frame header: what the decoder's buffers depend on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JpegFrame {
    /// The SOFn marker's second byte (0xC0 baseline … 0xCF).
    pub marker: u8,
    /// Bits per sample.
    pub precision: u8,
    pub progressive: bool,
    pub width: u32,
    pub height: u32,
    /// Horizontal and vertical sampling factors, per component.
    pub sampling: Vec<(u32, u32)>,
}

/// Finds the frame header (SOFn) before the first scan. `None`: no usable one (the decoder
/// will say what is wrong).
pub fn jpeg_frame(bytes: &[u8]) -> Option<JpegFrame> {
    let mut pos = 2;
    loop {
        while bytes.get(pos) == Some(&0xFF) {
            pos += 1;
        }
        let marker = *bytes.get(pos)?;
        pos += 1;
        match marker {
            0x01 | 0xD0..=0xD8 => continue,
            0xD9 | 0xDA => return None,
            _ => {}
        }
        let len = usize::from(u16::from_be_bytes([*bytes.get(pos)?, *bytes.get(pos + 1)?]));
        let segment = bytes.get(pos + 2..pos + len.max(2))?;
        if matches!(marker, 0xC0..=0xCF) && !matches!(marker, 0xC4 | 0xC8 | 0xCC) {
            let count = usize::from(*segment.get(5)?);
            let sampling = (0..count)
                .map(|i| segment.get(6 + 3 * i + 1).map(|s| (u32::from(s >> 4), u32::from(s & 0x0F))))
                .collect::<Option<Vec<_>>>()?;
            if sampling.iter().any(|&(h, v)| h == 0 || v == 0) {
                return None;
            }
            return Some(JpegFrame {
                marker,
                precision: *segment.first()?,
                progressive: matches!(marker, 0xC2 | 0xC6 | 0xCA | 0xCE),
                height: u32::from(u16::from_be_bytes([segment[1], segment[2]])),
                width: u32::from(u16::from_be_bytes([segment[3], segment[4]])),
                sampling,
            });
        }
        pos += len;
    }
}

/// Bytes `jpeg-decoder` holds to decode `frame` to `out_width` (its DCT scaling makes each
/// block 1, 2, 4 or 8 pixels wide), with `out_bytes_per_pixel` in its output.
pub fn jpeg_decode_bytes(frame: &JpegFrame, out_width: u32, out_height: u32, out_bytes_per_pixel: u64) -> u64 {
    let h_max = frame.sampling.iter().map(|s| s.0).max().unwrap_or(1);
    let v_max = frame.sampling.iter().map(|s| s.1).max().unwrap_or(1);
    let mcus_x = u64::from(frame.width.div_ceil(8 * h_max));
    let mcus_y = u64::from(frame.height.div_ceil(8 * v_max));
    let blocks: u64 = frame.sampling.iter().map(|&(h, v)| mcus_x * u64::from(h) * mcus_y * u64::from(v)).sum();
    // The scale the decoder chose: the smallest whose output is as wide as asked.
    let block_edge = [1u64, 2, 4, 8]
        .into_iter()
        .find(|&s| (u64::from(frame.width) * s).div_ceil(8) >= u64::from(out_width))
        .unwrap_or(8);
    let planes = blocks * block_edge * block_edge;
    let coefficients = if frame.progressive { blocks * 64 * 2 } else { 0 };
    let output = u64::from(out_width) * u64::from(out_height) * out_bytes_per_pixel;
    coefficients + planes + output
}

/// Bytes libheif and `heic` hold to decode a HEIC of `width` × `height` stored pixels with
/// `luma_bits` per sample to `channels` 8-bit channels: the decoder's picture and libheif's
/// copy of it (YCbCr, counted as 4:4:4, 1 or 2 bytes a sample), libheif's RGB(A) image and
/// `heic`'s copy of that without row padding.
pub fn heic_decode_bytes(width: u32, height: u32, luma_bits: u32, channels: usize) -> u64 {
    let pixels = u64::from(width) * u64::from(height);
    let sample = if luma_bits > 8 { 2 } else { 1 };
    pixels * (2 * 3 * sample + 2 * channels as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_progressive_100_megapixel_jpeg_needs_its_coefficients() {
        let frame = JpegFrame {
            marker: 0xC2,
            precision: 8,
            progressive: true,
            width: 10000,
            height: 10000,
            sampling: vec![(2, 2), (1, 1), (1, 1)],
        };
        let needed = jpeg_decode_bytes(&frame, 2500, 2500, 3);
        // 1250² luma blocks and 625² per chroma component, 128 bytes each, then the planes
        // at a quarter of the size and the RGB output.
        let blocks = 1250 * 1250 + 2 * 625 * 625;
        assert_eq!(needed, blocks * 128 + blocks * 4 + 2500 * 2500 * 3);
        assert!(check(needed, MEMORY_BUDGET).is_err());
        let baseline = JpegFrame { progressive: false, ..frame };
        assert!(check(jpeg_decode_bytes(&baseline, 2500, 2500, 3), MEMORY_BUDGET).is_ok());
    }
}
