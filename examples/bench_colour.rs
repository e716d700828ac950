//! Colour conversion benchmark: the two engines Confetti could convert derivatives to sRGB
//! with — `qcms` (Firefox's, pure Rust; the one Confetti uses) and Little CMS (`lcms2`,
//! Debian's liblcms2, a dev-dependency here) — on the preview-sized decode of a 12 MP photo.
//! A harness that prints figures, not a test.
//!
//! ```text
//! apt-get install liblcms2-dev colord-data icc-profiles-free libgs-common
//! cargo run --release --example bench_colour -- [--rounds 15]
//! ```
//!
//! * Time per image (median and p90 of `rounds`), transform made anew each time as a
//!   derivative job does: a 2000×1500 RGB buffer from Adobe RGB (colord's profile) and Display
//!   P3 (made by `tests/common/icc.rs`), a 2000×1500 gray buffer from an L* profile, a
//!   2000×1500 CMYK buffer from Ghostscript's default CMYK profile (a table-based one).
//!   Then Confetti's own step (`colour::convert_in_place`) on the same inputs, and on an
//!   sRGB-tagged buffer, which it detects and skips.
//! * Accuracy: every colour of a 16-level grid of the RGB cube (4096) through each engine,
//!   against the analytic sRGB (primaries' matrices, transfer functions, clipped, unrounded);
//!   for gray, the 256 levels against the L* formula; for CMYK, where only the profile's table
//!   knows the answer, qcms against Little CMS.

#[path = "../tests/common/icc.rs"]
mod icc;
#[path = "support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use confetti::media::derive::colour;
use support::stats::{ms, percentile};

const WIDTH: usize = 2000;
const HEIGHT: usize = 1500;

fn main() -> Result<()> {
    let mut rounds = 15;
    let mut rest = std::env::args().skip(1);
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--rounds" => rounds = rest.next().context("--rounds N")?.parse()?,
            other => bail!("unknown argument {other}"),
        }
    }
    ensure!(rounds > 0, "--rounds must be at least 1");

    let adobe = icc::system(icc::ADOBE_RGB_PATH);
    let p3 = icc::display_p3();
    let grey = icc::system(icc::GREY_LSTAR_PATH);
    let cmyk = icc::system(icc::CMYK_PATH);
    let srgb = icc::srgb();
    let rgb = photo_like(3);
    let gray = photo_like(1);
    let cmyk_pixels = photo_like(4);
    println!("{WIDTH}x{HEIGHT} pixels, {rounds} rounds, transform made anew each round; ms per image (median / p90)");

    println!("\nengine alone:");
    println!("  {:24} {:>17} {:>17}", "from", "qcms", "Little CMS");
    for (name, profile, pixels, kind) in [
        ("Adobe RGB -> sRGB", &adobe, &rgb, Kind::Rgb),
        ("Display P3 -> sRGB", &p3, &rgb, Kind::Rgb),
        ("gray L* -> sRGB (RGB out)", &grey, &gray, Kind::Gray),
        ("CMYK -> sRGB", &cmyk, &cmyk_pixels, Kind::Cmyk),
    ] {
        let q = time(rounds, || qcms_convert(profile, pixels, kind));
        let l = time(rounds, || lcms_convert(profile, pixels, kind));
        println!("  {name:24} {} {}", figures(&q), figures(&l));
    }
    let q = time(rounds, || {
        let started = Instant::now();
        drop(qcms_transform(&cmyk, Kind::Cmyk));
        started.elapsed()
    });
    let l = time(rounds, || {
        let started = Instant::now();
        drop(lcms_transform(&cmyk, Kind::Cmyk));
        started.elapsed()
    });
    println!("  {:24} {} {}", "CMYK: making the transform", figures(&q), figures(&l));

    println!("\nConfetti's step (qcms; gray through a 256-entry table; sRGB probed and skipped):");
    for (name, profile, pixels, channels) in [
        ("Adobe RGB", &adobe, &rgb, 3),
        ("Display P3", &p3, &rgb, 3),
        ("gray L*", &grey, &gray, 1),
        ("sRGB", &srgb, &rgb, 3),
    ] {
        let mut outcome = None;
        let t = time(rounds, || {
            let mut buf = pixels.clone();
            let started = Instant::now();
            outcome = Some(colour::convert_in_place(&mut buf, channels, profile));
            started.elapsed()
        });
        println!("  {name:24} {}  {:?}", figures(&t), outcome.context("no round")?);
    }
    let t = time(rounds, || {
        let started = Instant::now();
        let _ = colour::cmyk_to_srgb(&cmyk_pixels, Some(&cmyk));
        started.elapsed()
    });
    println!("  {:24} {}  (into a new RGB buffer)", "CMYK", figures(&t));
    let t = time(rounds, || {
        let started = Instant::now();
        let _ = colour::cmyk_to_srgb(&cmyk_pixels, None);
        started.elapsed()
    });
    println!("  {:24} {}  (no profile: the naive formula)", "CMYK, naive", figures(&t));

    println!("\naccuracy against the analytic sRGB, 8-bit steps (max / mean / share off by more than 1):");
    let grid: Vec<u8> = (0..16u8)
        .flat_map(|r| (0..16u8).flat_map(move |g| (0..16u8).flat_map(move |b| [r, g, b].map(|c| c * 17))))
        .collect();
    for (name, profile, primaries, to_linear) in [
        ("Adobe RGB", &adobe, &icc::ADOBE_RGB, icc::adobe_to_linear as fn(f64) -> f64),
        ("Display P3", &p3, &icc::DISPLAY_P3, icc::srgb_to_linear),
    ] {
        let want: Vec<f64> =
            grid.chunks(3).flat_map(|p| icc::expected_srgb([p[0], p[1], p[2]], primaries, to_linear)).collect();
        let mut q = grid.clone();
        qcms_transform(profile, Kind::Rgb).apply(&mut q);
        let mut l = grid.clone();
        lcms_transform(profile, Kind::Rgb).transform_in_place(&mut l);
        println!("  {name:12} qcms {}   Little CMS {}", error(&q, &want), error(&l, &want));
    }
    let levels: Vec<u8> = (0..=255).collect();
    let want: Vec<f64> = levels.iter().flat_map(|&v| [icc::lstar_to_srgb(f64::from(v) / 255.0 * 100.0); 3]).collect();
    let mut q = vec![0; 256 * 3];
    qcms_transform(&grey, Kind::Gray).convert(&levels, &mut q);
    let mut l = vec![0; 256 * 3];
    lcms_transform(&grey, Kind::Gray).transform_pixels(&levels, &mut l);
    println!("  {:12} qcms {}   Little CMS {}", "gray L*", error(&q, &want), error(&l, &want));
    let mut c = levels.clone();
    colour::convert_in_place(&mut c, 1, &grey);
    let c: Vec<u8> = c.into_iter().flat_map(|v| [v; 3]).collect();
    println!("  {:12} Confetti's step (qcms, L* corrected) {}", "gray L*", error(&c, &want));

    const INK: [u8; 9] = [0, 32, 64, 96, 128, 160, 192, 224, 255];
    const BLACK: [u8; 5] = [0, 64, 128, 192, 255];
    let cmyk_grid: Vec<u8> = INK
        .into_iter()
        .flat_map(|c| INK.into_iter().flat_map(move |m| INK.into_iter().flat_map(move |y| BLACK.map(|k| [c, m, y, k]))))
        .flatten()
        .collect();
    let mut q = vec![0; cmyk_grid.len() / 4 * 3];
    qcms_transform(&cmyk, Kind::Cmyk).convert(&cmyk_grid, &mut q);
    for (name, intent) in
        [("perceptual", lcms2::Intent::Perceptual), ("relative colorimetric", lcms2::Intent::RelativeColorimetric)]
    {
        let mut l = vec![0u8; q.len()];
        lcms_transform_with(&cmyk, Kind::Cmyk, intent).transform_pixels(&cmyk_grid, &mut l);
        let reference: Vec<f64> = l.iter().map(|&v| f64::from(v)).collect();
        println!("  {:12} qcms against Little CMS {name}: {}  ({} inks)", "CMYK", error(&q, &reference), q.len() / 3);
    }
    Ok(())
}

#[derive(Clone, Copy)]
enum Kind {
    Rgb,
    Gray,
    Cmyk,
}

/// A buffer with the spread of values of a photo: gradients and some noise.
fn photo_like(channels: usize) -> Vec<u8> {
    let mut state = 0x9e37_79b9_u32;
    let mut buf = Vec::with_capacity(WIDTH * HEIGHT * channels);
    for y in 0..HEIGHT {
        for x in 0..WIDTH {
            for c in 0..channels {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                let base = (x * 255 / WIDTH + y * 255 / HEIGHT * (c + 1)) / (c + 2);
                buf.push((base + (state % 24) as usize).min(255) as u8);
            }
        }
    }
    buf
}

fn srgb() -> Box<qcms::Profile> {
    let mut srgb = qcms::Profile::new_sRGB();
    srgb.precache_output_transform();
    srgb
}

fn qcms_transform(profile: &[u8], kind: Kind) -> qcms::Transform {
    let input = qcms::Profile::new_from_slice(profile, false).expect("qcms reads the profile");
    let (from, to) = match kind {
        Kind::Rgb => (qcms::DataType::RGB8, qcms::DataType::RGB8),
        Kind::Gray => (qcms::DataType::Gray8, qcms::DataType::RGB8),
        Kind::Cmyk => (qcms::DataType::CMYK, qcms::DataType::RGB8),
    };
    qcms::Transform::new_to(&input, &srgb(), from, to, qcms::Intent::Perceptual).expect("a qcms transform")
}

fn lcms_transform(profile: &[u8], kind: Kind) -> lcms2::Transform<u8, u8> {
    lcms_transform_with(profile, kind, lcms2::Intent::Perceptual)
}

fn lcms_transform_with(profile: &[u8], kind: Kind, intent: lcms2::Intent) -> lcms2::Transform<u8, u8> {
    let input = lcms2::Profile::new_icc(profile).expect("Little CMS reads the profile");
    let from = match kind {
        Kind::Rgb => lcms2::PixelFormat::RGB_8,
        Kind::Gray => lcms2::PixelFormat::GRAY_8,
        Kind::Cmyk => lcms2::PixelFormat::CMYK_8,
    };
    lcms2::Transform::new(&input, from, &lcms2::Profile::new_srgb(), lcms2::PixelFormat::RGB_8, intent)
        .expect("a Little CMS transform")
}

/// Converts a copy of `pixels` (the copy is not timed) with a transform `make` makes:
/// `apply(transform, in, out)` converts RGB in place (`out` empty), gray and CMYK into RGB.
fn convert<T>(
    pixels: &[u8],
    kind: Kind,
    make: impl FnOnce() -> T,
    apply: impl FnOnce(&T, &mut [u8], &mut [u8]),
) -> Duration {
    let mut buf = pixels.to_vec();
    let mut out = match kind {
        Kind::Rgb => Vec::new(),
        Kind::Gray => vec![0; pixels.len() * 3],
        Kind::Cmyk => vec![0; pixels.len() / 4 * 3],
    };
    let started = Instant::now();
    apply(&make(), &mut buf, &mut out);
    started.elapsed()
}

fn qcms_convert(profile: &[u8], pixels: &[u8], kind: Kind) -> Duration {
    convert(
        pixels,
        kind,
        || qcms_transform(profile, kind),
        |t, buf, out| match kind {
            Kind::Rgb => t.apply(buf),
            Kind::Gray | Kind::Cmyk => t.convert(buf, out),
        },
    )
}

fn lcms_convert(profile: &[u8], pixels: &[u8], kind: Kind) -> Duration {
    convert(
        pixels,
        kind,
        || lcms_transform(profile, kind),
        |t, buf, out| match kind {
            Kind::Rgb => t.transform_in_place(buf),
            Kind::Gray | Kind::Cmyk => t.transform_pixels(buf, out),
        },
    )
}

fn time(rounds: usize, mut one: impl FnMut() -> Duration) -> Vec<Duration> {
    one(); // warm up
    let mut times: Vec<Duration> = (0..rounds).map(|_| one()).collect();
    times.sort();
    times
}

fn figures(sorted: &[Duration]) -> String {
    format!("{:7.2} / {:7.2}", ms(percentile(sorted, 50.0)), ms(percentile(sorted, 90.0)))
}

fn error(got: &[u8], want: &[f64]) -> String {
    let errors: Vec<f64> = got.iter().zip(want).map(|(&g, w)| (f64::from(g) - w).abs()).collect();
    let max = errors.iter().copied().fold(0.0, f64::max);
    let mean = errors.iter().sum::<f64>() / errors.len() as f64;
    let off = errors.iter().filter(|&&e| e > 1.0).count() as f64 / errors.len() as f64;
    format!("{max:5.2} / {mean:4.2} / {:5.1}%", off * 100.0)
}
