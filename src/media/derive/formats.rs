//! Which formats each derivative is made in beside its JPEG, with the settings measured for
//! them (`examples/bench_thumbs.rs`, docs/benchmarks.md "Lighter galleries"). The metric
//! throughout: SSIM on luma (Gaussian 11×11) against a Lanczos3 downscale of the full decode,
//! median and mean over 50 photos, compared with the JPEG thumbs' (quality 78).

use super::avif::AvifSettings;
use super::webp::WebpSettings;

/// The formats made beside the JPEGs, and how.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Formats {
    /// `None`: no WebP thumb.
    pub webp_thumb: Option<WebpSettings>,
    /// `None`: no WebP preview.
    pub webp_preview: Option<WebpSettings>,
    /// `None`: no AVIF thumb.
    pub avif_thumb: Option<AvifSettings>,
}

/// What every upload gets.
///
/// * AVIF thumb: libheif quality 58 (aom's quantizer 26), speed 6, without rectangular
///   partitions. The lowest quality whose SSIM, median and mean, reached the JPEG thumbs' on the
///   real photographs: 57.5% of their bytes (0.9748 / 0.9723 against 0.9734 / 0.9683), 50 ms a
///   thumb. Speed 8 took 26 ms but needed quality 60 and 61.1% for the same SSIM; speed 6 became
///   affordable when libjpeg-turbo took over the JPEG decode and encodes (`libjpeg`): the batch
///   of 12 photos is at 0.41–0.42× `vipsthumbnail` with it. On the set with textures (grass,
///   gravel, brick) the same settings give 64.8% at an SSIM well above the JPEG's.
/// * No WebP thumb any more: every current phone browser decodes AVIF, and making both cost the
///   batch its target (0.54–0.57× `vipsthumbnail` against 0.46–0.53× with AVIF alone, both
///   measured with the pure-Rust JPEG decoder and encoder). Browsers
///   that take WebP but not AVIF (Safari 14–15) get the JPEG of new uploads; uploads derived
///   before keep their WebP (`WEBP_THUMB_MEASURED`).
/// * No WebP preview: none measured was worth its time. At method 0 (60 ms a 2000×1500 preview
///   on a busy machine) quality 88 gave 88% of the JPEG's bytes at a lower SSIM (0.985 against
///   0.993); the smaller files of method 4 (49% at quality 80) took 380 ms, longer than the rest
///   of the job. A preview is looked at one at a time; the gallery's 50 thumbs are what weigh.
/// * No AVIF preview: a 2000×1500 one takes 1.35 s at speed 6, 0.51 s at speed 8 and 0.25 s at
///   speed 9 (`heif-enc`, one thread, its PNG read included), against 48 ms for the decode,
///   both resizes and both JPEGs of the whole job.
pub const FORMATS: Formats = Formats {
    webp_thumb: None,
    webp_preview: None,
    avif_thumb: Some(AvifSettings { quality: 58, speed: 6, rect_partitions: false }),
};

/// The WebP thumb's settings until AVIF replaced it: quality 78, method 4 (libwebp's default),
/// about 11 ms a thumb; `examples/bench_thumbs.rs` still compares them.
pub const WEBP_THUMB_MEASURED: WebpSettings = WebpSettings { quality: 78.0, method: 4 };

/// The WebP preview settings measured (and not taken): `examples/bench_thumbs.rs` shows them.
pub const PREVIEW_MEASURED: WebpSettings = WebpSettings { quality: 88.0, method: 0 };
