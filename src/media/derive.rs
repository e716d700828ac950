//! Derivatives of an original: a `preview` (1600–2048 px on its long edge, never larger than the
//! original) and a `thumb` (about 400 px), each as a baseline JPEG, the thumb also as a lossy
//! AVIF (`avif`; WebP, `webp`, is measured but no longer made) — which formats, and why, is
//! `formats` —
//! upright, and carrying no metadata at all — they are made from pixels, so nothing of the
//! original's EXIF (location included), XMP or ICC blocks can reach them. With them, the
//! `placeholder`: a ThumbHash of the thumb, which the page draws while the thumb loads.
//!
//! One decode per original. A JPEG is shrunk while it is decoded (DCT-domain 1/2, 1/4, 1/8
//! scaling, as libvips does) to the smallest size still at least the preview's minimum, so a
//! 12 MP photo is never decoded at full size: ordinary JPEGs by libjpeg-turbo's decoder
//! (`libjpeg`, which also encodes every JPEG derivative), CMYK and rarer ones by
//! `jpeg-decoder`. The preview is resized from that, turned upright (after resizing: fewer
//! pixels to move), and the thumb is resized from the upright preview. A PNG is read row by row and averaged down by an integer factor as it
//! arrives (`png_rows`), so its full size is never held either. GIF (first frame) and WebP go
//! through the `image` crate, HEIC through libheif (`heic`), at full size (HEVC has no
//! shrink-on-load). Transparency is flattened onto white. The decoded pixels are
//! then converted to sRGB through the ICC profile the original embeds, if any (`colour`).
//!
//! Every decode first estimates, from the header, what it will hold (`budget`); an original
//! needing more than `MEMORY_BUDGET` is refused before its buffers are allocated.
//!
//! JPEG and PNG originals are read as a stream (`derive_streamed`): the decoder takes the bytes
//! as they come from storage, so the original is never held whole. GIF, WebP and HEIC decoders
//! need the whole file; it is read into memory within the budget.

use std::io::{BufRead, Cursor, Read};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use fast_image_resize::{FilterType, PixelType, ResizeAlg, ResizeOptions, Resizer, images::Image, images::ImageRef};

use super::probe::ImageFormat;

mod avif;
mod budget;
pub mod colour;
mod formats;
mod heic;
mod libjpeg;
mod placeholder;
mod png_rows;
mod webp;
mod ycbcr;

pub use avif::AvifSettings;
pub use budget::MEMORY_BUDGET;
pub use formats::{FORMATS, Formats, PREVIEW_MEASURED, WEBP_THUMB_MEASURED};
pub use webp::WebpSettings;

/// Long edge of the thumb (the contract allows 320–512).
pub const THUMB_EDGE: u32 = 400;
/// The preview's long edge is at most this…
pub const PREVIEW_MAX_EDGE: u32 = 2048;
/// …and at least this, unless the original is smaller.
pub const PREVIEW_MIN_EDGE: u32 = 1600;
/// A video's poster frame is at most this large (`ffmpeg` scales it to the preview's edge).
pub const MAX_POSTER_PIXELS: u64 = (PREVIEW_MAX_EDGE as u64) * (PREVIEW_MAX_EDGE as u64);

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
    /// A complete JPEG or WebP file.
    pub bytes: Vec<u8>,
    pub width: u32,
    pub height: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Derivatives {
    pub thumb: Encoded,
    pub preview: Encoded,
    /// The same pixels as AVIF and WebP, for the browsers that accept them, when the formats
    /// ask for them (`FORMATS`: the thumb as AVIF only).
    pub thumb_webp: Option<Encoded>,
    pub preview_webp: Option<Encoded>,
    pub thumb_avif: Option<Encoded>,
    /// The thumb's ThumbHash.
    pub placeholder: Vec<u8>,
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum DeriveError {
    #[error("the image could not be decoded: {0}")]
    Undecodable(String),
    #[error("the image has {pixels} pixels; the limit is {limit}")]
    TooManyPixels { pixels: u64, limit: u64 },
    /// Decoding would hold more memory than a derivative job may use.
    #[error("decoding this image needs about {needed_mib} MiB; a derivative may use {budget_mib} MiB")]
    OverBudget { needed_mib: u64, budget_mib: u64 },
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
    /// The decode and the conversion to sRGB (`colour`).
    pub decode: Duration,
    /// Both resizes, the flattening of transparency and the turn upright.
    pub resize: Duration,
    /// Both JPEG encodes.
    pub encode: Duration,
    /// The WebP and AVIF encodes, each.
    pub webp_thumb: Duration,
    pub webp_preview: Duration,
    pub avif_thumb: Duration,
    /// The ThumbHash.
    pub placeholder: Duration,
}

/// Makes the thumb and the preview of an original whose format the probe found.
/// `orientation` is the EXIF orientation (1–8; anything else is taken as 1).
pub fn derive(original: &[u8], format: ImageFormat, orientation: u16) -> Result<Derivatives, DeriveError> {
    derive_streamed(original, original, format, orientation, MEMORY_BUDGET)
}

/// `derive`, reading the original from `source` as it arrives. `head` is its start as far as
/// the probe read it (a JPEG's frame header is in it). Its decoder may hold `budget` bytes (a
/// media worker's share of its memory limit; `MEMORY_BUDGET` elsewhere).
pub fn derive_streamed(
    mut source: impl BufRead,
    head: &[u8],
    format: ImageFormat,
    orientation: u16,
    budget: u64,
) -> Result<Derivatives, DeriveError> {
    let original = Original { source: &mut source, head };
    run_within(original, format, orientation, Decode::ShrinkOnLoad, MAX_PIXELS, budget, FORMATS)
        .map(|(derivatives, _)| derivatives)
}

/// The thumb alone and its placeholder: what a photo needs to be shown, made before any
/// photo's preview (`jobs::derivatives`, phase 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Thumb {
    pub thumb: Encoded,
    /// The thumb's ThumbHash.
    pub placeholder: Vec<u8>,
}

/// Whether making the thumb alone is much cheaper than making every derivative: a JPEG is
/// decoded at the smallest DCT scale still at least the thumb (1/8 for a 12 MP photo, where
/// the preview needs 1/2), so the thumb first and the rest later cost little more than all at
/// once. Other formats are decoded whole (HEIC, GIF, WebP) or inflated whole (PNG) whatever
/// is made: for them one decode makes everything (docs/benchmarks.md "Thumbs first").
pub fn thumb_alone_is_cheaper(format: ImageFormat) -> bool {
    format == ImageFormat::Jpeg
}

/// `derive_streamed` for the thumb alone.
pub fn derive_thumb_streamed(
    mut source: impl BufRead,
    head: &[u8],
    format: ImageFormat,
    orientation: u16,
    budget: u64,
) -> Result<Thumb, DeriveError> {
    let original = Original { source: &mut source, head };
    thumb_within(original, format, orientation, MAX_PIXELS, budget).map(|(thumb, _)| thumb)
}

/// The thumb alone, telling where the time went (`examples/bench_derive.rs`).
pub fn derive_thumb_timed(
    original: &[u8],
    format: ImageFormat,
    orientation: u16,
) -> Result<(Thumb, Timings), DeriveError> {
    let mut original = original;
    thumb_within(Original::whole(&mut original), format, orientation, MAX_PIXELS, MEMORY_BUDGET)
}

/// An original being read: the decoders take `source` from its first byte.
struct Original<'a> {
    source: &'a mut dyn BufRead,
    head: &'a [u8],
}

impl<'a> Original<'a> {
    fn whole<'b: 'a>(bytes: &'a mut &'b [u8]) -> Self {
        let head = *bytes;
        Original { source: bytes, head }
    }
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

/// `derive_timed` with other formats than `FORMATS` (to choose them: `examples/bench_thumbs.rs`).
pub fn derive_timed_with(
    original: &[u8],
    format: ImageFormat,
    orientation: u16,
    decode: Decode,
    formats: Formats,
) -> Result<(Derivatives, Timings), DeriveError> {
    let mut original = original;
    run_within(Original::whole(&mut original), format, orientation, decode, MAX_PIXELS, MEMORY_BUDGET, formats)
}

fn run(
    mut original: &[u8],
    format: ImageFormat,
    orientation: u16,
    decode: Decode,
    max_pixels: u64,
) -> Result<(Derivatives, Timings), DeriveError> {
    run_within(Original::whole(&mut original), format, orientation, decode, max_pixels, MEMORY_BUDGET, FORMATS)
}

fn run_within(
    original: Original<'_>,
    format: ImageFormat,
    orientation: u16,
    decode: Decode,
    max_pixels: u64,
    budget: u64,
    formats: Formats,
) -> Result<(Derivatives, Timings), DeriveError> {
    let mut timings = Timings::default();
    let started = Instant::now();
    let head = original.head;
    let shrink = match decode {
        // Averaging a PNG down to no less than the preview's largest size keeps it as sharp as
        // resizing from the full image would.
        Decode::ShrinkOnLoad => Some(Shrink { jpeg_edge: PREVIEW_MIN_EDGE, png_edge: PREVIEW_MAX_EDGE }),
        Decode::Full => None,
    };
    let decoded = decode_pixels(original, format, max_pixels, shrink, budget)?;
    let thumb_size = thumb_size(head, format, &decoded, orientation);
    timings.decode = started.elapsed();

    let started = Instant::now();
    let (width, height) = fit(decoded.width, decoded.height, PREVIEW_MAX_EDGE);
    let preview = if (width, height) == (decoded.width, decoded.height) {
        decoded
    } else {
        let preview = resize(&decoded, width, height)?;
        // The decoded pixels go as soon as the preview exists.
        drop(decoded);
        preview
    };
    let preview = orient(preview, orientation);
    let thumb = if thumb_size == (preview.width, preview.height) {
        preview.clone()
    } else {
        resize(&preview, thumb_size.0, thumb_size.1)?
    };
    timings.resize = started.elapsed();

    let started = Instant::now();
    let (preview_jpeg, thumb_jpeg) =
        (libjpeg::encode(&preview, PREVIEW_QUALITY)?, libjpeg::encode(&thumb, THUMB_QUALITY)?);
    timings.encode = started.elapsed();
    let started = Instant::now();
    let preview_webp = formats.webp_preview.map(|settings| webp::encode(&preview, settings)).transpose()?;
    timings.webp_preview = started.elapsed();
    let started = Instant::now();
    let thumb_webp = formats.webp_thumb.map(|settings| webp::encode(&thumb, settings)).transpose()?;
    timings.webp_thumb = started.elapsed();
    let started = Instant::now();
    // The AVIF is a lighter extra: a libheif built without an AV1 encoder, or one that fails,
    // leaves the thumb as JPEG and WebP rather than failing the photo.
    let thumb_avif = formats.avif_thumb.and_then(|settings| {
        avif::encode(&thumb, settings)
            .inspect_err(|e| tracing::warn!(error = %e, "no AVIF thumb; JPEG and WebP are served"))
            .ok()
    });
    timings.avif_thumb = started.elapsed();
    let started = Instant::now();
    let placeholder = placeholder::thumbhash(&thumb)?;
    timings.placeholder = started.elapsed();
    let derivatives =
        Derivatives { preview: preview_jpeg, thumb: thumb_jpeg, preview_webp, thumb_webp, thumb_avif, placeholder };
    Ok((derivatives, timings))
}

/// The thumb alone: decoded at the smallest DCT scale still at least the thumb's edge (a 12 MP
/// JPEG at 1/8), resized, turned upright (after resizing: fewer pixels to move), encoded, with
/// its placeholder. Its size is the one `run_within` gives the thumb, so the AVIF made later
/// from the preview's pixels has the same.
fn thumb_within(
    original: Original<'_>,
    format: ImageFormat,
    orientation: u16,
    max_pixels: u64,
    budget: u64,
) -> Result<(Thumb, Timings), DeriveError> {
    let mut timings = Timings::default();
    let started = Instant::now();
    let head = original.head;
    let shrink = Shrink { jpeg_edge: THUMB_EDGE, png_edge: THUMB_EDGE };
    let decoded = decode_pixels(original, format, max_pixels, Some(shrink), budget)?;
    let (width, height) = thumb_size(head, format, &decoded, orientation);
    timings.decode = started.elapsed();

    let started = Instant::now();
    // Resized before it is turned upright: the size asked for is the upright one.
    let (width, height) = if (5..=8).contains(&orientation) { (height, width) } else { (width, height) };
    let thumb =
        if (width, height) == (decoded.width, decoded.height) { decoded } else { resize(&decoded, width, height)? };
    let thumb = orient(thumb, orientation);
    timings.resize = started.elapsed();

    let started = Instant::now();
    let jpeg = libjpeg::encode(&thumb, THUMB_QUALITY)?;
    timings.encode = started.elapsed();
    let started = Instant::now();
    let placeholder = placeholder::thumbhash(&thumb)?;
    timings.placeholder = started.elapsed();
    Ok((Thumb { thumb: jpeg, placeholder }, timings))
}

/// How far a decoder may shrink while it decodes: a JPEG to the smallest DCT scale whose long
/// edge is still at least `jpeg_edge`, a PNG by the largest integer factor keeping `png_edge`.
#[derive(Clone, Copy)]
struct Shrink {
    jpeg_edge: u32,
    png_edge: u32,
}

/// Decodes the original (shrinking as `shrink` allows) and converts it to sRGB.
fn decode_pixels(
    original: Original<'_>,
    format: ImageFormat,
    max_pixels: u64,
    shrink: Option<Shrink>,
    budget: u64,
) -> Result<Pixels, DeriveError> {
    // Decoders see untrusted bytes; a panic in one must be a refused photo, not a lost worker.
    let (mut decoded, icc) = catch_unwind(AssertUnwindSafe(|| match format {
        ImageFormat::Jpeg => decode_jpeg(original, max_pixels, shrink.map(|s| s.jpeg_edge), budget),
        ImageFormat::Png => png_rows::decode_png(original, max_pixels, shrink.map(|s| s.png_edge), budget),
        ImageFormat::Gif | ImageFormat::WebP => decode_other(original, format, max_pixels, budget),
        ImageFormat::Heic => heic::decode_heic(original, max_pixels, budget),
    }))
    .map_err(|_| DeriveError::Undecodable("the decoder failed on this file".into()))??;
    colour::to_srgb(&mut decoded, icc.as_deref());
    Ok(decoded)
}

/// The thumb's upright size: the original's (a JPEG's frame, whatever scale it was decoded at;
/// else what was decoded) fitted into `THUMB_EDGE`, so that thumbs made at different decode
/// scales have the same size.
fn thumb_size(head: &[u8], format: ImageFormat, decoded: &Pixels, orientation: u16) -> (u32, u32) {
    let frame = (format == ImageFormat::Jpeg).then(|| budget::jpeg_frame(head)).flatten();
    let (width, height) = frame.map_or((decoded.width, decoded.height), |f| (f.width, f.height));
    let (width, height) = fit(width, height, THUMB_EDGE);
    if (5..=8).contains(&orientation) { (height, width) } else { (width, height) }
}

/// Decoded pixels: 8-bit gray (1 channel) or RGB (3 channels), rows without padding; CMYK
/// (4 channels, 0 = no ink) only between a decoder and `colour::to_srgb`.
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

    /// The pixels as RGB, for encoders that take only that (libwebp): gray is copied into three
    /// channels.
    #[cfg(feature = "webp-encode")]
    fn rgb(&self) -> std::borrow::Cow<'_, [u8]> {
        match self.channels {
            1 => self.buf.iter().flat_map(|&g| [g, g, g]).collect::<Vec<u8>>().into(),
            _ => self.buf.as_slice().into(),
        }
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
/// still at least `min_edge` (or the whole original, when that is smaller). Also returns the
/// ICC profile of its APP2 segments, joined (`None` when chunks are missing or repeated).
fn decode_jpeg(
    original: Original<'_>,
    max_pixels: u64,
    min_edge: Option<u32>,
    budget: u64,
) -> Result<Decoded, DeriveError> {
    use jpeg_decoder::PixelFormat;
    let frame = budget::jpeg_frame(original.head).ok_or_else(|| undecodable("no frame header"))?;
    if libjpeg::takes(&frame) {
        check_size(frame.width, frame.height, max_pixels)?;
        let long = frame.width.max(frame.height);
        let request = min_edge.map_or(long, |edge| edge.min(long));
        let scale = libjpeg::scale_for(&frame, request);
        let (width, height) = libjpeg::scaled(&frame, scale);
        let channels = frame.sampling.len() as u64;
        budget::check(budget::jpeg_decode_bytes(&frame, width, height, channels), budget)?;
        return libjpeg::decode(original.source, scale, width, height);
    }
    let mut decoder = jpeg_decoder::Decoder::new(original.source);
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
    // A progressive JPEG's coefficients are held whole; the output of a CMYK one is
    // converted into another buffer (`colour::to_srgb`).
    let out_bytes_per_pixel = match info.pixel_format {
        PixelFormat::L8 => 1,
        PixelFormat::L16 => 2,
        PixelFormat::RGB24 => 3,
        PixelFormat::CMYK32 => 4 + 3,
    };
    budget::check(budget::jpeg_decode_bytes(&frame, width, height, out_bytes_per_pixel), budget)?;
    decoder.set_max_decoding_buffer_size(pixels.saturating_mul(4));
    let raw = decoder.decode().map_err(undecodable)?;
    let (buf, channels) = match info.pixel_format {
        PixelFormat::L8 => (raw, 1),
        // Lossless JPEGs of 9–16 bits come from medical and lab equipment, not from cameras;
        // the decoder does not say their precision, so no honest 8-bit picture can be made.
        PixelFormat::L16 => return Err(undecodable("lossless JPEGs of more than 8 bits are not supported")),
        PixelFormat::RGB24 => (raw, 3),
        // The decoder hands out plain CMYK (Adobe's inverted storage already undone).
        PixelFormat::CMYK32 => (raw, 4),
    };
    if buf.len() != pixels * channels {
        return Err(undecodable("the decoded pixels do not match the frame size"));
    }
    Ok((Pixels { buf, width, height, channels }, decoder.icc_profile()))
}

/// What a decoder hands on: its pixels and the ICC profile the original embeds, if any.
type Decoded = (Pixels, Option<Vec<u8>>);

fn decode_other(
    original: Original<'_>,
    format: ImageFormat,
    max_pixels: u64,
    budget: u64,
) -> Result<Decoded, DeriveError> {
    use image::ImageDecoder;
    // These decoders need the whole file; it counts against the budget like their buffers.
    let mut bytes = Vec::new();
    original.source.take(budget.saturating_add(1)).read_to_end(&mut bytes).map_err(undecodable)?;
    let file = bytes.len() as u64;
    budget::check(file, budget)?;
    let budget = budget - file;
    let format = match format {
        ImageFormat::Png => image::ImageFormat::Png,
        ImageFormat::Gif => image::ImageFormat::Gif,
        ImageFormat::WebP => image::ImageFormat::WebP,
        ImageFormat::Jpeg | ImageFormat::Heic => return Err(undecodable("not a format for the image crate")),
    };
    let mut reader = image::ImageReader::with_format(Cursor::new(&bytes[..]), format);
    let mut limits = image::Limits::default();
    limits.max_alloc = Some(budget);
    reader.limits(limits);
    let mut decoder = reader.into_decoder().map_err(undecodable)?;
    let (width, height) = decoder.dimensions();
    check_size(width, height, max_pixels)?;
    // The decoded buffer, the flattened copy when there is alpha, and the decoder's own:
    // the GIF decoder's frame when it differs from the screen (bounded by what is left, below),
    // the WebP decoder's frame while it converts (taken as 4 bytes a pixel).
    let pixels = u64::from(width) * u64::from(height);
    let flattened = if decoder.color_type().has_alpha() { pixels * 3 } else { 0 };
    let own = if format == image::ImageFormat::WebP { pixels * 4 } else { 0 };
    let held = decoder.total_bytes().saturating_add(flattened).saturating_add(own);
    budget::check(held, budget)?;
    let mut limits = image::Limits::default();
    limits.max_alloc = Some((budget - held).max(1));
    decoder.set_limits(limits).map_err(undecodable)?;
    // WebP's ICCP chunk; GIF has none. A profile that cannot be read is only a lost profile.
    let icc = decoder.icc_profile().ok().flatten();
    let image = image::DynamicImage::from_decoder(decoder).map_err(undecodable)?;
    let color = image.color();
    let (buf, channels) = match (color.has_color(), color.has_alpha()) {
        (true, true) => (flatten::<4>(image.into_rgba8().as_raw()), 3),
        (false, true) => (flatten::<2>(image.into_luma_alpha8().as_raw()), 1),
        (true, false) => (image.into_rgb8().into_raw(), 3),
        (false, false) => (image.into_luma8().into_raw(), 1),
    };
    Ok((Pixels { buf, width, height, channels }, icc))
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

#[cfg(test)]
mod tests;
