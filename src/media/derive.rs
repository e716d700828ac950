//! Derivatives of an original: a `preview` (1600–2048 px on its long edge, never larger than the
//! original) and a `thumb` (about 400 px), both baseline JPEG, upright, and carrying no metadata
//! at all — they are made from pixels, so nothing of the original's EXIF (location included),
//! XMP or ICC blocks can reach them.
//!
//! One decode per original. A JPEG is shrunk while it is decoded (`jpeg-decoder`'s DCT-domain
//! 1/2, 1/4, 1/8 scaling, as libvips does) to the smallest size still at least the preview's
//! minimum, so a 12 MP photo is never decoded at full size. The preview is resized from that,
//! turned upright (after resizing: fewer pixels to move), and the thumb is resized from the
//! upright preview. PNG, GIF (first frame) and WebP go through the `image` crate, with
//! transparency flattened onto white.

use std::io::Cursor;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use fast_image_resize::{FilterType, PixelType, ResizeAlg, ResizeOptions, Resizer, images::Image, images::ImageRef};

use super::probe::ImageFormat;

/// Long edge of the thumb (the contract allows 320–512).
pub const THUMB_EDGE: u32 = 400;
/// The preview's long edge is at most this…
pub const PREVIEW_MAX_EDGE: u32 = 2048;
/// …and at least this, unless the original is smaller.
pub const PREVIEW_MIN_EDGE: u32 = 1600;

/// JPEG qualities. The preview is looked at full screen, one at a time: 82 keeps gradients
/// (skies, skin) free of banding. Thumbs are shown small and many at once on a phone's
/// connection, where bytes matter more than detail nobody can see at that size: 78.
const PREVIEW_QUALITY: u8 = 82;
const THUMB_QUALITY: u8 = 78;

/// Images larger than this (16384 × 16384) are refused before their pixels are allocated,
/// whatever the probe let through. The probe applies the operator's `max_image_pixels`
/// (100 million by default) from the same header first; this is the last guard.
pub const MAX_PIXELS: u64 = 1 << 28;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Encoded {
    /// A complete JPEG file.
    pub bytes: Vec<u8>,
    pub width: u32,
    pub height: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Derivatives {
    pub thumb: Encoded,
    pub preview: Encoded,
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum DeriveError {
    #[error("the image could not be decoded: {0}")]
    Undecodable(String),
    #[error("the image has {pixels} pixels; the limit is {limit}")]
    TooManyPixels { pixels: u64, limit: u64 },
    /// A resize or encode failure: a bug here, not a property of the photo.
    #[error("the derivative could not be made: {0}")]
    Internal(String),
}

/// How the original is decoded; `Full` exists to measure what shrink-on-load saves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decode {
    /// JPEG: scale in the DCT domain while decoding, as far as the preview allows.
    ShrinkOnLoad,
    /// Decode every pixel of the original.
    Full,
}

/// Where the time of one `derive` went.
#[derive(Clone, Copy, Debug, Default)]
pub struct Timings {
    pub decode: Duration,
    /// Both resizes, the flattening of transparency and the turn upright.
    pub resize: Duration,
    /// Both encodes.
    pub encode: Duration,
}

/// Makes the thumb and the preview of an original whose format the probe found.
/// `orientation` is the EXIF orientation (1–8; anything else is taken as 1).
pub fn derive(original: &[u8], format: ImageFormat, orientation: u16) -> Result<Derivatives, DeriveError> {
    run(original, format, orientation, Decode::ShrinkOnLoad, MAX_PIXELS).map(|(derivatives, _)| derivatives)
}

/// `derive`, telling where the time went.
pub fn derive_timed(
    original: &[u8],
    format: ImageFormat,
    orientation: u16,
    decode: Decode,
) -> Result<(Derivatives, Timings), DeriveError> {
    run(original, format, orientation, decode, MAX_PIXELS)
}

fn run(
    original: &[u8],
    format: ImageFormat,
    orientation: u16,
    decode: Decode,
    max_pixels: u64,
) -> Result<(Derivatives, Timings), DeriveError> {
    let mut timings = Timings::default();
    let started = Instant::now();
    let min_edge = match decode {
        Decode::ShrinkOnLoad => Some(PREVIEW_MIN_EDGE),
        Decode::Full => None,
    };
    // Decoders see untrusted bytes; a panic in one must be a refused photo, not a lost worker.
    let decoded = catch_unwind(AssertUnwindSafe(|| match format {
        ImageFormat::Jpeg => decode_jpeg(original, max_pixels, min_edge),
        ImageFormat::Png | ImageFormat::Gif | ImageFormat::WebP => decode_other(original, format, max_pixels),
    }))
    .map_err(|_| DeriveError::Undecodable("the decoder failed on this file".into()))??;
    timings.decode = started.elapsed();

    let started = Instant::now();
    let (width, height) = fit(decoded.width, decoded.height, PREVIEW_MAX_EDGE);
    let preview =
        if (width, height) == (decoded.width, decoded.height) { decoded } else { resize(&decoded, width, height)? };
    let preview = orient(preview, orientation);
    let (width, height) = fit(preview.width, preview.height, THUMB_EDGE);
    let thumb = if (width, height) == (preview.width, preview.height) {
        preview.clone()
    } else {
        resize(&preview, width, height)?
    };
    timings.resize = started.elapsed();

    let started = Instant::now();
    let derivatives =
        Derivatives { preview: encode(&preview, PREVIEW_QUALITY)?, thumb: encode(&thumb, THUMB_QUALITY)? };
    timings.encode = started.elapsed();
    Ok((derivatives, timings))
}

/// Decoded pixels: 8-bit gray (1 channel) or RGB (3 channels), rows without padding.
#[derive(Clone)]
struct Pixels {
    buf: Vec<u8>,
    width: u32,
    height: u32,
    channels: usize,
}

impl Pixels {
    fn pixel_type(&self) -> PixelType {
        if self.channels == 1 { PixelType::U8 } else { PixelType::U8x3 }
    }
}

fn check_size(width: u32, height: u32, max_pixels: u64) -> Result<(), DeriveError> {
    let pixels = u64::from(width) * u64::from(height);
    if pixels > max_pixels {
        return Err(DeriveError::TooManyPixels { pixels, limit: max_pixels });
    }
    if pixels == 0 {
        return Err(DeriveError::Undecodable("the image is empty".into()));
    }
    Ok(())
}

fn undecodable(e: impl std::fmt::Display) -> DeriveError {
    DeriveError::Undecodable(e.to_string())
}

/// With `min_edge`, decodes at the smallest DCT scale (1/8, 1/4, 1/2, 1) whose long edge is
/// still at least `min_edge` (or the whole original, when that is smaller).
fn decode_jpeg(bytes: &[u8], max_pixels: u64, min_edge: Option<u32>) -> Result<Pixels, DeriveError> {
    use jpeg_decoder::PixelFormat;
    let mut decoder = jpeg_decoder::Decoder::new(bytes);
    decoder.read_info().map_err(undecodable)?;
    let info = decoder.info().ok_or_else(|| undecodable("no frame header"))?;
    check_size(u32::from(info.width), u32::from(info.height), max_pixels)?;
    let (width, height) = match min_edge {
        Some(min_edge) => {
            // `scale` picks the smallest factor that gives at least the request on one axis;
            // asking the same of both axes means: on the long one.
            let long = info.width.max(info.height);
            let request = u16::try_from(min_edge).unwrap_or(u16::MAX).min(long);
            decoder.scale(request, request).map_err(undecodable)?
        }
        None => (info.width, info.height),
    };
    let (width, height) = (u32::from(width), u32::from(height));
    let pixels = width as usize * height as usize;
    decoder.set_max_decoding_buffer_size(pixels.saturating_mul(4));
    let raw = decoder.decode().map_err(undecodable)?;
    let (buf, channels) = match info.pixel_format {
        PixelFormat::L8 => (raw, 1),
        // Lossless JPEGs of 9–16 bits come from medical and lab equipment, not from cameras;
        // the decoder does not say their precision, so no honest 8-bit picture can be made.
        PixelFormat::L16 => return Err(undecodable("lossless JPEGs of more than 8 bits are not supported")),
        PixelFormat::RGB24 => (raw, 3),
        // The decoder hands out plain CMYK (Adobe's inverted storage already undone).
        PixelFormat::CMYK32 => (
            raw.chunks_exact(4)
                .flat_map(|p| {
                    let k = 255 - u32::from(p[3]);
                    [p[0], p[1], p[2]].map(|c| ((255 - u32::from(c)) * k / 255) as u8)
                })
                .collect(),
            3,
        ),
    };
    if buf.len() != pixels * channels {
        return Err(undecodable("the decoded pixels do not match the frame size"));
    }
    Ok(Pixels { buf, width, height, channels })
}

fn decode_other(bytes: &[u8], format: ImageFormat, max_pixels: u64) -> Result<Pixels, DeriveError> {
    use image::ImageDecoder;
    let format = match format {
        ImageFormat::Png => image::ImageFormat::Png,
        ImageFormat::Gif => image::ImageFormat::Gif,
        ImageFormat::WebP => image::ImageFormat::WebP,
        ImageFormat::Jpeg => image::ImageFormat::Jpeg,
    };
    let mut reader = image::ImageReader::with_format(Cursor::new(bytes), format);
    let mut limits = image::Limits::default();
    // RGBA at 16 bits per channel is the widest a PNG decodes to; the decoders also need a
    // little working memory of their own.
    limits.max_alloc = Some(max_pixels.saturating_mul(8).saturating_add(64 << 20));
    reader.limits(limits);
    let decoder = reader.into_decoder().map_err(undecodable)?;
    let (width, height) = decoder.dimensions();
    check_size(width, height, max_pixels)?;
    let image = image::DynamicImage::from_decoder(decoder).map_err(undecodable)?;
    let color = image.color();
    let (buf, channels) = match (color.has_color(), color.has_alpha()) {
        (true, true) => (flatten::<4>(image.into_rgba8().as_raw()), 3),
        (false, true) => (flatten::<2>(image.into_luma_alpha8().as_raw()), 1),
        (true, false) => (image.into_rgb8().into_raw(), 3),
        (false, false) => (image.into_luma8().into_raw(), 1),
    };
    Ok(Pixels { buf, width, height, channels })
}

/// Composites pixels whose last channel is alpha onto white, dropping the alpha channel.
fn flatten<const N: usize>(src: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(src.len() / N * (N - 1));
    for p in src.chunks_exact(N) {
        let a = u32::from(p[N - 1]);
        out.extend(p[..N - 1].iter().map(|&c| ((u32::from(c) * a + 255 * (255 - a) + 127) / 255) as u8));
    }
    out
}

/// The size that fits `(width, height)` into `edge` on its long side, keeping the aspect ratio;
/// never larger than it was.
fn fit(width: u32, height: u32, edge: u32) -> (u32, u32) {
    let long = width.max(height);
    if long <= edge {
        return (width, height);
    }
    let scale = |side: u32| ((u64::from(side) * u64::from(edge) + u64::from(long) / 2) / u64::from(long)).max(1) as u32;
    (scale(width), scale(height))
}

/// Lanczos3 for both sizes: the sharpest of the usual filters when shrinking, and at these
/// sizes its cost is small next to the decode (see `examples/bench_derive.rs`).
fn resize(src: &Pixels, width: u32, height: u32) -> Result<Pixels, DeriveError> {
    let internal = |e: &dyn std::fmt::Display| DeriveError::Internal(format!("resize: {e}"));
    let from = ImageRef::new(src.width, src.height, &src.buf, src.pixel_type()).map_err(|e| internal(&e))?;
    let mut to = Image::new(width, height, src.pixel_type());
    let options = ResizeOptions::new().resize_alg(ResizeAlg::Convolution(FilterType::Lanczos3));
    Resizer::new().resize(&from, &mut to, &options).map_err(|e| internal(&e))?;
    Ok(Pixels { buf: to.into_vec(), width, height, channels: src.channels })
}

/// Turns pixels upright for an EXIF orientation: 2–4 mirror or turn half way, 5–8 swap the axes.
fn orient(src: Pixels, orientation: u16) -> Pixels {
    if !(2..=8).contains(&orientation) {
        return src;
    }
    let (sw, sh) = (src.width as usize, src.height as usize);
    let (dw, dh) = if orientation >= 5 { (sh, sw) } else { (sw, sh) };
    // The source pixel of destination (x, y), as (column, row).
    let source = |x: usize, y: usize| match orientation {
        2 => (sw - 1 - x, y),
        3 => (sw - 1 - x, sh - 1 - y),
        4 => (x, sh - 1 - y),
        5 => (y, x),
        6 => (y, sh - 1 - x),
        7 => (sw - 1 - y, sh - 1 - x),
        _ => (sw - 1 - y, x),
    };
    let n = src.channels;
    let mut buf = vec![0; src.buf.len()];
    // In tiles, so that the reads of a quarter turn (one source row apart) stay in cache.
    const TILE: usize = 64;
    for ty in (0..dh).step_by(TILE) {
        for tx in (0..dw).step_by(TILE) {
            for y in ty..(ty + TILE).min(dh) {
                for x in tx..(tx + TILE).min(dw) {
                    let (sx, sy) = source(x, y);
                    let (d, s) = ((y * dw + x) * n, (sy * sw + sx) * n);
                    buf[d..d + n].copy_from_slice(&src.buf[s..s + n]);
                }
            }
        }
    }
    Pixels { buf, width: dw as u32, height: dh as u32, channels: n }
}

/// Baseline interleaved JPEG, averaged 4:2:0 chroma, no APP segment but the encoder's JFIF
/// header. Not `set_optimized_huffman_tables`: with it the encoder writes one scan per
/// component, which saved only 2% on a photo, took longer, and which `zune-jpeg` 0.5 (the
/// `image` crate's decoder) decodes to wrong colours — the plainest file decodes everywhere.
fn encode(p: &Pixels, quality: u8) -> Result<Encoded, DeriveError> {
    let internal = |e: &dyn std::fmt::Display| DeriveError::Internal(format!("encode: {e}"));
    let (Ok(width), Ok(height)) = (u16::try_from(p.width), u16::try_from(p.height)) else {
        return Err(DeriveError::Internal(format!("encode: {}×{} is too large for JPEG", p.width, p.height)));
    };
    let color = if p.channels == 1 { jpeg_encoder::ColorType::Luma } else { jpeg_encoder::ColorType::Rgb };
    let mut bytes = Vec::with_capacity(p.buf.len() / 8);
    let mut encoder = jpeg_encoder::Encoder::new(&mut bytes, quality);
    encoder.set_chroma_subsampling_method(jpeg_encoder::ChromaSubsamplingMethod::Average);
    encoder.encode(&p.buf, width, height, color).map_err(|e| internal(&e))?;
    Ok(Encoded { bytes, width: p.width, height: p.height })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Something like a photo: smooth gradients with a fine texture over them.
    fn photo(width: u32, height: u32) -> image::RgbImage {
        image::RgbImage::from_fn(width, height, |x, y| {
            let t = ((x * 7 + y * 13) % 17) as u8;
            image::Rgb([(x * 255 / width) as u8 ^ t, (y * 255 / height) as u8, 128u8.wrapping_add(t)])
        })
    }

    fn jpeg(image: &image::DynamicImage) -> Vec<u8> {
        encoded(image, image::ImageFormat::Jpeg)
    }

    fn encoded(image: &image::DynamicImage, format: image::ImageFormat) -> Vec<u8> {
        let mut bytes = Vec::new();
        image.write_to(&mut Cursor::new(&mut bytes), format).unwrap();
        bytes
    }

    fn size(e: &Encoded) -> (u32, u32) {
        let decoded = image::load_from_memory_with_format(&e.bytes, image::ImageFormat::Jpeg).unwrap();
        assert_eq!((decoded.width(), decoded.height()), (e.width, e.height), "the file says what the struct says");
        (e.width, e.height)
    }

    /// The APPn and COM markers before the first scan.
    fn metadata_markers(jpeg: &[u8]) -> Vec<u8> {
        assert_eq!(jpeg[..2], [0xFF, 0xD8]);
        let (mut pos, mut found) = (2, Vec::new());
        while jpeg[pos] == 0xFF && jpeg[pos + 1] != 0xDA {
            let marker = jpeg[pos + 1];
            if (0xE0..=0xEF).contains(&marker) || marker == 0xFE {
                found.push(marker);
            }
            pos += 2 + usize::from(u16::from_be_bytes([jpeg[pos + 2], jpeg[pos + 3]]));
        }
        assert_eq!(jpeg[pos + 1], 0xDA, "walked to the scan");
        found
    }

    #[test]
    fn sizes_follow_the_contract_and_never_exceed_the_original() {
        // (original, orientation, decode, preview, thumb)
        let cases = [
            // 1/2 DCT scale gives 2000 px, within 1600–2048: no resize for the preview.
            ((4000, 3000), 1, Decode::ShrinkOnLoad, (2000, 1500), (400, 300)),
            ((4000, 3000), 1, Decode::Full, (2048, 1536), (400, 300)),
            ((4000, 3000), 6, Decode::ShrinkOnLoad, (1500, 2000), (300, 400)),
            ((3000, 2000), 8, Decode::ShrinkOnLoad, (1365, 2048), (267, 400)),
            ((1800, 1000), 1, Decode::ShrinkOnLoad, (1800, 1000), (400, 222)),
            ((300, 200), 1, Decode::ShrinkOnLoad, (300, 200), (300, 200)),
        ];
        for ((w, h), orientation, decode, preview, thumb) in cases {
            let original = jpeg(&photo(w, h).into());
            let (d, _) = derive_timed(&original, ImageFormat::Jpeg, orientation, decode).unwrap();
            assert_eq!((size(&d.preview), size(&d.thumb)), (preview, thumb), "{w}×{h}, {orientation}, {decode:?}");
        }
    }

    #[test]
    fn each_orientation_moves_the_top_left_corner_where_it_is_displayed() {
        // Red top-left quarter on blue; where the red lands in the upright thumb, per orientation.
        let original = image::RgbImage::from_fn(800, 600, |x, y| {
            if x < 400 && y < 300 { image::Rgb([255, 0, 0]) } else { image::Rgb([0, 0, 255]) }
        });
        let original = encoded(&original.into(), image::ImageFormat::Png);
        // (column, row) of the red corner: 0 = left/top, 1 = right/bottom.
        let expected =
            [(1, (0, 0)), (2, (1, 0)), (3, (1, 1)), (4, (0, 1)), (5, (0, 0)), (6, (1, 0)), (7, (1, 1)), (8, (0, 1))];
        for (orientation, (cx, cy)) in expected {
            let thumb = derive(&original, ImageFormat::Png, orientation).unwrap().thumb;
            let image = image::load_from_memory(&thumb.bytes).unwrap().into_rgb8();
            let (w, h) = image.dimensions();
            assert_eq!((w > h), orientation < 5, "orientation {orientation}: {w}×{h}");
            let x = if cx == 0 { w / 8 } else { w - w / 8 };
            let y = if cy == 0 { h / 8 } else { h - h / 8 };
            let p = image.get_pixel(x, y);
            assert!(p[0] > 200 && p[2] < 60, "orientation {orientation}: {p:?} at ({x}, {y})");
        }
    }

    #[test]
    fn outputs_carry_no_exif_or_other_metadata() {
        let mut original = jpeg(&photo(2400, 1600).into());
        // An APP1 EXIF block (with a GPS tag's id in it) right after SOI.
        let exif = b"Exif\0\0MM\0\x2a\0\0\0\x08\0\x01\x88\x25\0\x04\0\0\0\x01\0\0\0\0\0\0\0\0";
        let mut segment = vec![0xFF, 0xE1];
        segment.extend_from_slice(&(exif.len() as u16 + 2).to_be_bytes());
        segment.extend_from_slice(exif);
        original.splice(2..2, segment);
        assert!(metadata_markers(&original).contains(&0xE1));

        let d = derive(&original, ImageFormat::Jpeg, 1).unwrap();
        for e in [&d.preview, &d.thumb] {
            assert_eq!(metadata_markers(&e.bytes), [0xE0], "only the JFIF header");
            assert!(memchr::memmem::find(&e.bytes, b"Exif").is_none());
        }
    }

    #[test]
    fn a_transparent_png_is_flattened_onto_white() {
        let original = image::RgbaImage::from_fn(1000, 500, |x, _| {
            if x < 500 { image::Rgba([0, 0, 0, 0]) } else { image::Rgba([0, 128, 0, 255]) }
        });
        let original = encoded(&original.into(), image::ImageFormat::Png);
        let d = derive(&original, ImageFormat::Png, 1).unwrap();
        assert_eq!(size(&d.preview), (1000, 500));
        let thumb = image::load_from_memory(&d.thumb.bytes).unwrap().into_rgb8();
        assert_eq!(thumb.dimensions(), (400, 200));
        let (clear, green) = (thumb.get_pixel(50, 100), thumb.get_pixel(350, 100));
        assert!(clear.0.iter().all(|&c| c > 245), "{clear:?}");
        assert!(green[1] > 100 && green[0] < 30, "{green:?}");
    }

    #[test]
    fn gif_and_webp_originals_work() {
        let original: image::DynamicImage =
            image::RgbaImage::from_pixel(640, 480, image::Rgba([200, 30, 30, 255])).into();
        for (format, ours) in
            [(image::ImageFormat::Gif, ImageFormat::Gif), (image::ImageFormat::WebP, ImageFormat::WebP)]
        {
            let d = derive(&encoded(&original, format), ours, 1).unwrap();
            assert_eq!(size(&d.preview), (640, 480), "{format:?}");
            assert_eq!(size(&d.thumb), (400, 300), "{format:?}");
        }
    }

    #[test]
    fn grayscale_and_cmyk_jpegs_work() {
        let gray = jpeg(&image::DynamicImage::ImageRgb8(photo(3000, 2000)).grayscale());
        let d = derive(&gray, ImageFormat::Jpeg, 1).unwrap();
        assert_eq!(size(&d.preview), (2048, 1365));
        assert_eq!(size(&d.thumb), (400, 267));

        // A CMYK JPEG as a print workflow writes it: pure cyan, no black.
        let cyan: Vec<u8> = [255, 0, 0, 0].repeat(900 * 600);
        let mut cmyk = Vec::new();
        jpeg_encoder::Encoder::new(&mut cmyk, 90).encode(&cyan, 900, 600, jpeg_encoder::ColorType::Cmyk).unwrap();
        let d = derive(&cmyk, ImageFormat::Jpeg, 1).unwrap();
        assert_eq!(size(&d.thumb), (400, 267));
        let thumb = image::load_from_memory(&d.thumb.bytes).unwrap().into_rgb8();
        let p = thumb.get_pixel(200, 130);
        assert!(p[0] < 40 && p[1] > 215 && p[2] > 215, "cyan, got {p:?}");
    }

    #[test]
    fn garbage_and_truncated_files_are_errors() {
        let garbage: Vec<u8> = (0..5000u32).map(|i| (i * 31 % 251) as u8).collect();
        for format in [ImageFormat::Jpeg, ImageFormat::Png, ImageFormat::Gif, ImageFormat::WebP] {
            assert!(derive(&garbage, format, 1).is_err(), "{format:?}");
        }
        let mut with_soi = vec![0xFF, 0xD8, 0xFF];
        with_soi.extend_from_slice(&garbage);
        assert!(derive(&with_soi, ImageFormat::Jpeg, 1).is_err());

        let whole = jpeg(&photo(1200, 900).into());
        for cut in [10, 200, whole.len() / 2] {
            assert!(derive(&whole[..cut], ImageFormat::Jpeg, 1).is_err(), "cut at {cut}");
        }
        let png = encoded(&photo(600, 400).into(), image::ImageFormat::Png);
        assert!(derive(&png[..png.len() / 2], ImageFormat::Png, 1).is_err());
    }

    #[test]
    fn an_image_over_the_pixel_limit_is_refused_before_decoding() {
        let original = jpeg(&photo(400, 300).into());
        assert_eq!(
            run(&original, ImageFormat::Jpeg, 1, Decode::ShrinkOnLoad, 100_000).map(|_| ()),
            Err(DeriveError::TooManyPixels { pixels: 120_000, limit: 100_000 })
        );
        let png = encoded(&photo(400, 300).into(), image::ImageFormat::Png);
        assert!(matches!(
            run(&png, ImageFormat::Png, 1, Decode::ShrinkOnLoad, 100_000),
            Err(DeriveError::TooManyPixels { .. })
        ));
    }
}
