//! Colour management of derivatives: decoded pixels are converted to sRGB through the ICC
//! profile the original embeds, so a photo tagged Display P3 (every recent iPhone) or Adobe RGB
//! (cameras) looks in its thumb and preview as the original does in a colour-managed browser,
//! instead of washed out. The derivatives then carry no profile at all (untagged is sRGB on
//! the web), keeping the promise that no metadata of the original reaches them.
//!
//! Any decoder can use it: it hands over its pixels — gray, RGB, or CMYK as the profile
//! describes them (0 = no ink) — and the profile it found, if any. The engine is `qcms`,
//! Firefox's colour management in pure Rust (see docs/benchmarks.md, "Colour conversion").
//!
//! qcms converts gray and RGB matrix/curve profiles, and table-based (lut, mAB) RGB and CMYK
//! profiles; CMYK through the perceptual table (A2B0) without black-point scaling, as Chrome and
//! Firefox show it. Gray profiles whose curve gives lightness (PCS Lab) it reads as luminance;
//! `lightness_table` corrects that.
//!
//! A profile must never cost a photo its derivatives: one that cannot be read, does not match
//! the pixels or cannot be converted from leaves the pixels as they were decoded (as before
//! colour management), said at debug level. A profile that maps every colour to itself within
//! one step (sRGB, which many phones tag) is found by converting a few hundred probe colours,
//! and the image is then left alone.
//!
//! Memory: RGB is converted in place and gray through a 256-entry table; CMYK (4 bytes a pixel
//! in, 3 out) is converted row chunk by row chunk into the output buffer the decoder's budget
//! already counts. The transforms' own tables are fixed in size (at most 17⁴ grid points for
//! CMYK, about 1 MiB), whatever the image.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;

use qcms::{DataType, Intent, Profile, Transform};

use super::Pixels;

/// What happened to the pixels; said by the bench and the tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Converted to sRGB through the profile.
    Converted,
    /// The profile is sRGB (or as good as): the pixels are already right.
    AlreadySrgb,
    /// No usable profile: the pixels are as decoded (CMYK: converted naively).
    Unmanaged,
}

/// The colour space an ICC profile's header declares for its device values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Space {
    Gray,
    Rgb,
    Cmyk,
}

fn space(icc: &[u8]) -> Option<Space> {
    match icc.get(16..20)? {
        b"GRAY" => Some(Space::Gray),
        b"RGB " => Some(Space::Rgb),
        b"CMYK" => Some(Space::Cmyk),
        _ => None,
    }
}

/// The output profile, with its inverse curves computed once for the process.
fn srgb() -> &'static Profile {
    static SRGB: OnceLock<Box<Profile>> = OnceLock::new();
    SRGB.get_or_init(|| {
        let mut srgb = Profile::new_sRGB();
        srgb.precache_output_transform();
        srgb
    })
}

/// Makes `pixels` sRGB: gray (1 channel) and RGB (3) in place, CMYK (4) into RGB.
/// Never fails: see the module's comment.
pub(super) fn to_srgb(pixels: &mut Pixels, icc: Option<&[u8]>) -> Outcome {
    if pixels.channels == 4 {
        let (rgb, outcome) = cmyk_to_srgb(&pixels.buf, icc);
        pixels.buf = rgb;
        pixels.channels = 3;
        return outcome;
    }
    match icc {
        Some(icc) => convert_in_place(&mut pixels.buf, pixels.channels, icc),
        None => Outcome::Unmanaged,
    }
}

/// Converts gray (`channels` 1) or RGB (3) pixels to sRGB in place through `icc`.
pub fn convert_in_place(buf: &mut [u8], channels: usize, icc: &[u8]) -> Outcome {
    // The engine is fuzzed in Firefox, but it reads untrusted bytes: a panic in it is an
    // unusable profile, not a lost photo.
    match catch_unwind(AssertUnwindSafe(|| try_convert_in_place(buf, channels, icc))) {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(reason)) => unmanaged(reason),
        Err(_) => unmanaged("the colour engine failed on it"),
    }
}

fn unmanaged(reason: &str) -> Outcome {
    tracing::debug!(reason, "embedded ICC profile not used; derivatives keep the decoded colours");
    Outcome::Unmanaged
}

fn try_convert_in_place(buf: &mut [u8], channels: usize, icc: &[u8]) -> Result<Outcome, &'static str> {
    let expected = match channels {
        1 => Space::Gray,
        3 => Space::Rgb,
        _ => return Err("pixels that are neither gray nor RGB"),
    };
    if space(icc) != Some(expected) {
        return Err("the profile is for another colour space than the pixels");
    }
    let profile = Profile::new_from_slice(icc, false).ok_or("the profile could not be read")?;
    if expected == Space::Gray {
        // 256 gray levels through the profile give a table; gray profiles map to neutral
        // sRGB, so green (the middle of the three) is the level.
        let transform = Transform::new_to(&profile, srgb(), DataType::Gray8, DataType::RGB8, Intent::Perceptual)
            .ok_or("no transform from this gray profile")?;
        let levels: Vec<u8> = (0..=255).collect();
        let mut rgb = [0u8; 256 * 3];
        transform.convert(&levels, &mut rgb);
        let mut table: Vec<u8> = rgb.chunks_exact(3).map(|p| p[1]).collect();
        if icc.get(20..24) == Some(b"Lab ") {
            lightness_table(&mut table);
        }
        if table.iter().zip(&levels).all(|(&to, &from)| to.abs_diff(from) <= 1) {
            return Ok(Outcome::AlreadySrgb);
        }
        buf.iter_mut().for_each(|v| *v = table[usize::from(*v)]);
        return Ok(Outcome::Converted);
    }
    let transform = Transform::new(&profile, srgb(), DataType::RGB8, Intent::Perceptual)
        .ok_or("no transform from this RGB profile")?;
    if is_identity(&transform) {
        return Ok(Outcome::AlreadySrgb);
    }
    transform.apply(buf);
    Ok(Outcome::Converted)
}

/// qcms reads every gray profile's curve as luminance (Y, the PCS of XYZ profiles); in a
/// profile whose PCS is Lab (an "L*" gray) the curve gives lightness, L*/100. Such a table
/// holds sRGB(curve); this decodes each entry back to the curve's value and makes it sRGB of
/// the luminance of that lightness. The 8-bit round trip costs less than one step of output.
fn lightness_table(table: &mut [u8]) {
    for v in table.iter_mut() {
        let curve = srgb_to_linear(f64::from(*v) / 255.0);
        let l = curve * 100.0;
        // CIE 1976 lightness, inverted.
        let y = if l > 8.0 { ((l + 16.0) / 116.0).powi(3) } else { l / 903.3 };
        *v = (linear_to_srgb(y) * 255.0).round() as u8;
    }
}

fn srgb_to_linear(v: f64) -> f64 {
    if v <= 0.04045 { v / 12.92 } else { ((v + 0.055) / 1.055).powf(2.4) }
}

fn linear_to_srgb(v: f64) -> f64 {
    let v = v.clamp(0.0, 1.0);
    if v <= 0.003_130_8 { v * 12.92 } else { 1.055 * v.powf(1.0 / 2.4) - 0.055 }
}

/// Whether `transform` leaves every probe colour within one step of itself: a 9-level grid
/// of the RGB cube (steps of 32, edges included) and every gray level, 985 colours. Taking the
/// transform for one step costs microseconds; converting a 3-megapixel image, milliseconds.
fn is_identity(transform: &Transform) -> bool {
    let levels = [0u8, 32, 64, 96, 128, 160, 192, 224, 255];
    let mut probe: Vec<u8> = Vec::with_capacity((9 * 9 * 9 + 256) * 3);
    for r in levels {
        for g in levels {
            for b in levels {
                probe.extend_from_slice(&[r, g, b]);
            }
        }
    }
    probe.extend((0..=255u8).flat_map(|v| [v, v, v]));
    let mut converted = probe.clone();
    transform.apply(&mut converted);
    probe.iter().zip(&converted).all(|(a, b)| a.abs_diff(*b) <= 1)
}

/// Plain CMYK (0 = no ink; a decoder undoes Adobe's inverted storage) to sRGB: through `icc`
/// when it is a usable CMYK profile, else by the naive formula every CMYK JPEG had before.
pub fn cmyk_to_srgb(cmyk: &[u8], icc: Option<&[u8]>) -> (Vec<u8>, Outcome) {
    let managed = icc.and_then(|icc| match catch_unwind(AssertUnwindSafe(|| cmyk_transform(icc))) {
        Ok(Ok(transform)) => Some(transform),
        Ok(Err(reason)) => {
            unmanaged(reason);
            None
        }
        Err(_) => {
            unmanaged("the colour engine failed on it");
            None
        }
    });
    let mut rgb = vec![0; cmyk.len() / 4 * 3];
    match managed {
        Some(transform) => {
            // A few thousand pixels at a time: the engine's work stays in cache.
            const CHUNK: usize = 4096;
            for (from, to) in cmyk.chunks(CHUNK * 4).zip(rgb.chunks_mut(CHUNK * 3)) {
                transform.convert(&from[..from.len() / 4 * 4], to);
            }
            (rgb, Outcome::Converted)
        }
        None => {
            for (from, to) in cmyk.chunks_exact(4).zip(rgb.chunks_exact_mut(3)) {
                let k = 255 - u32::from(from[3]);
                for c in 0..3 {
                    to[c] = ((255 - u32::from(from[c])) * k / 255) as u8;
                }
            }
            (rgb, Outcome::Unmanaged)
        }
    }
}

fn cmyk_transform(icc: &[u8]) -> Result<Transform, &'static str> {
    if space(icc) != Some(Space::Cmyk) {
        return Err("the profile is for another colour space than the pixels");
    }
    let profile = Profile::new_from_slice(icc, false).ok_or("the profile could not be read")?;
    Transform::new_to(&profile, srgb(), DataType::CMYK, DataType::RGB8, Intent::Perceptual)
        .ok_or("no transform from this CMYK profile")
}

#[cfg(test)]
mod tests;
