//! Lighter galleries: the bytes of a page of thumbs as JPEG (what every upload had) against AVIF
//! and WebP, at equal or better SSIM against a reference downscale, and what their encodes cost.
//! A harness that prints figures, not a test.
//!
//! ```text
//! apt-get install libavif-bin   # avifdec, to score the AVIF thumbs
//! cargo run --release --features webp-encode --example bench_thumbs -- DIR [--thumb Q/M] [--preview Q/M] [--sweep] [--avif]
//!     [--thumbs Q,Q,...] [--avif-thumbs Q,Q,... [--avif-speed S] [--avif-rect]]
//! ```
//!
//! * `DIR`: the photos (`*.jpg`, read in name order, the first 50). No photos ship with Confetti;
//!   docs/benchmarks.md ("Lighter galleries") says how the published figures' two sets were made
//!   from photographs in Debian packages and Python packages.
//! * Each photo goes through the derivative pipeline as an upload does (`derive_timed_with`): the
//!   JPEG thumb and preview (qualities 78 and 82), the AVIF thumb, and the WebP thumb and preview
//!   (`--thumb`/`--preview` quality/method; otherwise `confetti::media::derive::FORMATS`).
//! * The reference: the original decoded at full size (`image`), downscaled with Lanczos3 to the
//!   derivative's size, on the sRGB values as stored (the pipeline resizes the same way).
//! * SSIM (Wang et al. 2004): on luma (BT.601 from the 8-bit sRGB values), Gaussian window 11×11
//!   with σ 1.5, K1 0.01, K2 0.03, L 255, averaged over every window that fits in the image.
//! * `--sweep`: the thumbs at WebP qualities 50–90 (method as given), and the preview at methods
//!   0–4, to choose the settings: the lowest quality whose SSIM, median and mean, is at least JPEG's.
//! * `--thumbs Q,Q,...`: only the thumbs, at those WebP qualities: bytes (all photos and without
//!   the texture samples), SSIM, and the WebP thumb's encode time; nothing else is reported.
//! * `--avif-thumbs Q,Q,...`: only the thumbs, as AVIF at those libheif qualities and aom speed
//!   `--avif-speed` (default: the server's), with aom's rectangular partitions when `--avif-rect`
//!   (the server goes without), as the server encodes them: bytes, SSIM, encode time.
//! * `--avif`: `avifenc` (libavif, aom) at speeds 6, 8 and 10 on the reference pixels (PNG), at the
//!   lowest quantizer step whose thumbs' SSIM is at least the JPEG's: bytes and encode time.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use confetti::media::ImageFormat;
use confetti::media::derive::{
    AvifSettings, Decode, Derivatives, Encoded, FORMATS, Formats, PREVIEW_MEASURED, Timings, WEBP_THUMB_MEASURED,
    WebpSettings, derive_timed_with,
};
use fast_image_resize::{FilterType, PixelType, ResizeAlg, ResizeOptions, Resizer, images::Image, images::ImageRef};

const PHOTOS: usize = 50;

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let mut dir = None;
    // The server makes no WebP (`FORMATS`); the thumb and preview it measured are shown.
    let (mut choice, mut sweep, mut avif) = (
        Formats { webp_thumb: Some(WEBP_THUMB_MEASURED), webp_preview: Some(PREVIEW_MEASURED), ..FORMATS },
        false,
        false,
    );
    let mut thumbs = Vec::new();
    let served = FORMATS.avif_thumb.context("the server makes an AVIF thumb")?;
    let (mut avif_thumbs, mut avif_speed, mut avif_rect) = (Vec::new(), served.speed, served.rect_partitions);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--thumb" => choice.webp_thumb = Some(settings(&args.next().context("--thumb Q/M")?)?),
            "--preview" => choice.webp_preview = Some(settings(&args.next().context("--preview Q/M")?)?),
            "--sweep" => sweep = true,
            "--avif" => avif = true,
            "--thumbs" => {
                let list = args.next().context("--thumbs Q,Q,...")?;
                thumbs = list.split(',').map(str::parse).collect::<Result<Vec<f32>, _>>()?;
            }
            "--avif-thumbs" => {
                let list = args.next().context("--avif-thumbs Q,Q,...")?;
                avif_thumbs = list.split(',').map(str::parse).collect::<Result<Vec<i32>, _>>()?;
            }
            "--avif-speed" => avif_speed = args.next().context("--avif-speed S")?.parse()?,
            "--avif-rect" => avif_rect = true,
            other if !other.starts_with('-') && dir.is_none() => dir = Some(PathBuf::from(other)),
            other => bail!("unknown argument {other}"),
        }
    }
    let dir =
        dir.context("usage: bench_thumbs DIR [--thumb Q/M] [--preview Q/M] [--sweep] [--avif] [--thumbs Q,Q,...] [--avif-thumbs Q,Q,... [--avif-speed S] [--avif-rect]]")?;
    let photos = load(&dir)?;
    let loadavg = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("{} photos from {}; load average {}", photos.len(), dir.display(), loadavg.trim());

    if !thumbs.is_empty() {
        return thumb_qualities(&photos, choice, &thumbs);
    }
    if !avif_thumbs.is_empty() {
        return avif_thumb_qualities(&photos, choice, avif_speed, avif_rect, &avif_thumbs);
    }
    let runs: Vec<Run> = photos.iter().map(|p| Run::of(p, choice)).collect::<Result<_>>()?;
    report(&runs, choice);
    if sweep {
        sweep_settings(&photos, choice)?;
    }
    if avif {
        avif_figures(&photos, &runs)?;
    }
    Ok(())
}

/// `quality/method`, e.g. `75/4`.
fn settings(text: &str) -> Result<WebpSettings> {
    let (quality, method) = text.split_once('/').context("quality/method, e.g. 75/4")?;
    Ok(WebpSettings { quality: quality.parse()?, method: method.parse()? })
}

/// One photo: its bytes and the reference pixels of each derivative size, once known.
struct Photo {
    name: String,
    bytes: Vec<u8>,
    /// The original's pixels, RGB.
    full: Rgb,
}

#[derive(Clone)]
struct Rgb {
    buf: Vec<u8>,
    width: u32,
    height: u32,
}

impl Rgb {
    fn decode(bytes: &[u8]) -> Result<Self> {
        let image = image::load_from_memory(bytes)?.into_rgb8();
        let (width, height) = image.dimensions();
        Ok(Self { buf: image.into_raw(), width, height })
    }

    /// Lanczos3, as the pipeline resizes.
    fn resized(&self, width: u32, height: u32) -> Result<Self> {
        let from = ImageRef::new(self.width, self.height, &self.buf, PixelType::U8x3)?;
        let mut to = Image::new(width, height, PixelType::U8x3);
        let options = ResizeOptions::new().resize_alg(ResizeAlg::Convolution(FilterType::Lanczos3));
        Resizer::new().resize(&from, &mut to, &options)?;
        Ok(Self { buf: to.into_vec(), width, height })
    }

    fn luma(&self) -> Vec<f64> {
        self.buf
            .chunks_exact(3)
            .map(|p| 0.299 * f64::from(p[0]) + 0.587 * f64::from(p[1]) + 0.114 * f64::from(p[2]))
            .collect()
    }

    fn png(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        let mut encoder = png::Encoder::new(&mut out, self.width, self.height);
        encoder.set_color(png::ColorType::Rgb);
        encoder.write_header()?.write_image_data(&self.buf)?;
        Ok(out)
    }
}

fn load(dir: &Path) -> Result<Vec<Photo>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e.eq_ignore_ascii_case("jpg") || e.eq_ignore_ascii_case("jpeg")))
        .collect();
    files.sort();
    files.truncate(PHOTOS);
    ensure!(!files.is_empty(), "no *.jpg in {}", dir.display());
    files
        .into_iter()
        .map(|path| {
            let bytes = std::fs::read(&path)?;
            let full = Rgb::decode(&bytes)?;
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            Ok(Photo { name, bytes, full })
        })
        .collect()
}

/// What the pipeline made of one photo, with its SSIMs.
struct Run {
    derivatives: Derivatives,
    timings: Timings,
    ssim: Ssims,
}

#[derive(Clone, Copy)]
struct Ssims {
    thumb_jpeg: f64,
    thumb_webp: f64,
    preview_jpeg: f64,
    preview_webp: f64,
    thumb_avif: f64,
}

impl Run {
    fn of(photo: &Photo, choice: Formats) -> Result<Self> {
        // The photos carry no EXIF orientation: 1.
        let (derivatives, timings) =
            derive_timed_with(&photo.bytes, ImageFormat::Jpeg, 1, Decode::ShrinkOnLoad, choice)
                .with_context(|| photo.name.clone())?;
        let d = &derivatives;
        let thumb_ref = photo.full.resized(d.thumb.width, d.thumb.height)?.luma();
        let preview_ref = photo.full.resized(d.preview.width, d.preview.height)?.luma();
        let score = |bytes: &[u8], reference: &[f64], width: u32| -> Result<f64> {
            Ok(ssim(&Rgb::decode(bytes)?.luma(), reference, width as usize))
        };
        let ssim = Ssims {
            thumb_jpeg: score(&d.thumb.bytes, &thumb_ref, d.thumb.width)?,
            thumb_webp: score(&webp_thumb(d).bytes, &thumb_ref, d.thumb.width)?,
            preview_jpeg: score(&d.preview.bytes, &preview_ref, d.preview.width)?,
            preview_webp: score(&webp_preview(d).bytes, &preview_ref, d.preview.width)?,
            thumb_avif: match &d.thumb_avif {
                Some(avif) => ssim(&avif_pixels(&avif.bytes)?.luma(), &thumb_ref, d.thumb.width as usize),
                None => f64::NAN,
            },
        };
        Ok(Self { derivatives, timings, ssim })
    }
}

/// The WebP thumb this program always asks for (`--thumb`, else `WEBP_THUMB_MEASURED`).
fn webp_thumb(d: &Derivatives) -> &Encoded {
    d.thumb_webp.as_ref().unwrap_or(&d.thumb)
}

fn thumb_settings(choice: Formats) -> WebpSettings {
    choice.webp_thumb.unwrap_or(WEBP_THUMB_MEASURED)
}

/// The WebP preview this program always asks for (`--preview`, else `PREVIEW_MEASURED`).
fn webp_preview(d: &Derivatives) -> &Encoded {
    d.preview_webp.as_ref().unwrap_or(&d.preview)
}

fn report(runs: &[Run], choice: Formats) {
    let total = |f: fn(&Derivatives) -> usize| runs.iter().map(|r| f(&r.derivatives)).sum::<usize>();
    let (thumb_jpeg, thumb_webp) = (total(|d| d.thumb.bytes.len()), total(|d| webp_thumb(d).bytes.len()));
    let thumb_avif = total(|d| d.thumb_avif.as_ref().map_or(0, |a| a.bytes.len()));
    let (preview_jpeg, preview_webp) =
        (total(|d| d.preview.bytes.len()), total(|d| d.preview_webp.as_ref().map_or(0, |p| p.bytes.len())));
    let ssims = |f: fn(&Ssims) -> f64| runs.iter().map(|r| f(&r.ssim)).collect::<Vec<_>>();
    let t = thumb_settings(choice);
    let p = choice.webp_preview.unwrap_or(PREVIEW_MEASURED);
    println!(
        "\nWebP thumb quality {} method {}, preview quality {} method {}\n",
        t.quality, t.method, p.quality, p.method
    );
    println!(
        "| {} photos | JPEG bytes | WebP bytes | WebP / JPEG | SSIM JPEG median / mean | SSIM WebP median / mean |",
        runs.len()
    );
    println!("| --- | ---: | ---: | ---: | --- | --- |");
    for (name, jpeg, webp, sj, sw) in [
        ("thumbs (the page)", thumb_jpeg, thumb_webp, ssims(|s| s.thumb_jpeg), ssims(|s| s.thumb_webp)),
        ("previews", preview_jpeg, preview_webp, ssims(|s| s.preview_jpeg), ssims(|s| s.preview_webp)),
        (
            "thumbs as AVIF (in the WebP columns)",
            thumb_jpeg,
            thumb_avif,
            ssims(|s| s.thumb_jpeg),
            ssims(|s| s.thumb_avif),
        ),
    ] {
        println!(
            "| {name} | {jpeg} | {webp} | **{:.1}%** | {:.4} / {:.4} | {:.4} / {:.4} |",
            100.0 * webp as f64 / jpeg as f64,
            median(&sj),
            mean(&sj),
            median(&sw),
            mean(&sw)
        );
    }
    let worse = runs.iter().filter(|r| r.ssim.thumb_webp < r.ssim.thumb_jpeg).count();
    println!("\nthumbs whose WebP SSIM is below their JPEG's: {worse} of {}", runs.len());
    let worse = runs.iter().filter(|r| r.ssim.thumb_avif < r.ssim.thumb_jpeg).count();
    println!("thumbs whose AVIF SSIM is below their JPEG's: {worse} of {}", runs.len());
    let hashes: Vec<usize> = runs.iter().map(|r| r.derivatives.placeholder.len()).collect();
    println!(
        "placeholders (ThumbHash): {}–{} bytes",
        hashes.iter().min().copied().unwrap_or(0),
        hashes.iter().max().copied().unwrap_or(0)
    );
    let ms = |f: fn(&Timings) -> Duration| {
        let mut all: Vec<f64> = runs.iter().map(|r| f(&r.timings).as_secs_f64() * 1e3).collect();
        all.sort_by(f64::total_cmp);
        (median(&all), all[all.len() * 9 / 10])
    };
    println!("\nper photo, in process (median / p90 ms): the preview is about 2000 px on its long edge, the thumb 400");
    println!("| decode | resize | JPEG both | WebP thumb | WebP preview | AVIF thumb | placeholder |");
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    let cells: Vec<String> = [
        ms(|t| t.decode),
        ms(|t| t.resize),
        ms(|t| t.encode),
        ms(|t| t.webp_thumb),
        ms(|t| t.webp_preview),
        ms(|t| t.avif_thumb),
        ms(|t| t.placeholder),
    ]
    .iter()
    .map(|(m, p)| format!("{m:.1} / {p:.1}"))
    .collect();
    println!("| {} |", cells.join(" | "));
}

fn sweep_settings(photos: &[Photo], choice: Formats) -> Result<()> {
    println!(
        "\nsweep: thumbs (method {}), WebP bytes / JPEG bytes and SSIM median / mean",
        thumb_settings(choice).method
    );
    println!("| WebP quality | WebP / JPEG | SSIM JPEG | SSIM WebP |");
    println!("| ---: | ---: | --- | --- |");
    for quality in (50..=90).step_by(5) {
        let choice =
            Formats { webp_thumb: Some(WebpSettings { quality: quality as f32, ..thumb_settings(choice) }), ..choice };
        let runs: Vec<Run> = photos.iter().map(|p| Run::of(p, choice)).collect::<Result<_>>()?;
        let bytes = |f: fn(&Derivatives) -> usize| runs.iter().map(|r| f(&r.derivatives)).sum::<usize>() as f64;
        let (sj, sw): (Vec<f64>, Vec<f64>) = runs.iter().map(|r| (r.ssim.thumb_jpeg, r.ssim.thumb_webp)).unzip();
        println!(
            "| {quality} | {:.1}% | {:.4} / {:.4} | {:.4} / {:.4} |",
            100.0 * bytes(|d| webp_thumb(d).bytes.len()) / bytes(|d| d.thumb.bytes.len()),
            median(&sj),
            mean(&sj),
            median(&sw),
            mean(&sw)
        );
    }
    println!("\nsweep: previews, WebP bytes / JPEG bytes, SSIM median / mean, encode median ms");
    println!("| method | quality | WebP / JPEG | SSIM JPEG | SSIM WebP | WebP preview ms |");
    println!("| ---: | ---: | ---: | --- | --- | ---: |");
    for method in 0..=4 {
        for quality in [75.0, 80.0, 85.0] {
            let choice = Formats { webp_preview: Some(WebpSettings { quality, method }), ..choice };
            let runs: Vec<Run> = photos.iter().map(|p| Run::of(p, choice)).collect::<Result<_>>()?;
            let bytes = |f: fn(&Derivatives) -> usize| runs.iter().map(|r| f(&r.derivatives)).sum::<usize>() as f64;
            let (sj, sw): (Vec<f64>, Vec<f64>) =
                runs.iter().map(|r| (r.ssim.preview_jpeg, r.ssim.preview_webp)).unzip();
            let mut took: Vec<f64> = runs.iter().map(|r| r.timings.webp_preview.as_secs_f64() * 1e3).collect();
            took.sort_by(f64::total_cmp);
            println!(
                "| {method} | {quality} | {:.1}% | {:.4} / {:.4} | {:.4} / {:.4} | {:.1} |",
                100.0 * bytes(|d| d.preview_webp.as_ref().map_or(0, |p| p.bytes.len()))
                    / bytes(|d| d.preview.bytes.len()),
                median(&sj),
                mean(&sj),
                median(&sw),
                mean(&sw),
                median(&took)
            );
        }
    }
    Ok(())
}

/// `--thumbs`: the thumbs only, at the given WebP qualities (method as given): bytes against the
/// JPEG thumbs on all photos and without the three texture samples, SSIM median / mean, how
/// many fall below their JPEG, and the WebP thumb's encode time.
fn thumb_qualities(photos: &[Photo], choice: Formats, qualities: &[f32]) -> Result<()> {
    let texture = |name: &str| ["brick", "gravel", "grass"].iter().any(|t| name.contains(t));
    println!(
        "\nthumbs (method {}): WebP / JPEG bytes, all and without textures; SSIM median / mean",
        thumb_settings(choice).method
    );
    println!(
        "| WebP quality | WebP / JPEG | without textures | SSIM JPEG | SSIM WebP | below JPEG | WebP thumb ms median / p90 |"
    );
    println!("| ---: | ---: | ---: | --- | --- | ---: | --- |");
    // Per photo, the smallest WebP thumb of these qualities whose SSIM reaches that photo's own
    // JPEG thumb's: the best a per-image quality search could do with them.
    let mut best: Vec<Option<usize>> = vec![None; photos.len()];
    let mut jpeg_of = vec![0usize; photos.len()];
    for &quality in qualities {
        let choice = Formats { webp_thumb: Some(WebpSettings { quality, ..thumb_settings(choice) }), ..choice };
        let (mut jpeg, mut webp, mut jpeg_nt, mut webp_nt) = (0usize, 0usize, 0usize, 0usize);
        let (mut sj, mut sw, mut took) = (Vec::new(), Vec::new(), Vec::new());
        for (i, photo) in photos.iter().enumerate() {
            let (d, timings) = derive_timed_with(&photo.bytes, ImageFormat::Jpeg, 1, Decode::ShrinkOnLoad, choice)
                .with_context(|| photo.name.clone())?;
            let reference = photo.full.resized(d.thumb.width, d.thumb.height)?.luma();
            sj.push(ssim(&Rgb::decode(&d.thumb.bytes)?.luma(), &reference, d.thumb.width as usize));
            sw.push(ssim(&Rgb::decode(&webp_thumb(&d).bytes)?.luma(), &reference, d.thumb.width as usize));
            jpeg_of[i] = d.thumb.bytes.len();
            if sw[i] >= sj[i] && best[i].is_none_or(|b| webp_thumb(&d).bytes.len() < b) {
                best[i] = Some(webp_thumb(&d).bytes.len());
            }
            took.push(timings.webp_thumb.as_secs_f64() * 1e3);
            jpeg += d.thumb.bytes.len();
            webp += webp_thumb(&d).bytes.len();
            if !texture(&photo.name) {
                jpeg_nt += d.thumb.bytes.len();
                webp_nt += webp_thumb(&d).bytes.len();
            }
        }
        took.sort_by(f64::total_cmp);
        let below = sj.iter().zip(&sw).filter(|(j, w)| w < j).count();
        println!(
            "| {quality} | {:.1}% | {:.1}% | {} | {} | {below} | {:.1} / {:.1} |",
            100.0 * webp as f64 / jpeg as f64,
            100.0 * webp_nt as f64 / jpeg_nt as f64,
            median_mean(&sj),
            median_mean(&sw),
            median(&took),
            took[took.len() * 9 / 10]
        );
    }
    let reached: Vec<(usize, usize)> = best.iter().zip(&jpeg_of).filter_map(|(b, j)| b.map(|b| (b, *j))).collect();
    let (webp, jpeg) = reached.iter().fold((0, 0), |(w, j), (b, jb)| (w + b, j + jb));
    println!(
        "\nper-image best (each photo at the lowest of these qualities that reaches its own JPEG thumb's SSIM): {:.1}% of those photos' JPEG thumb bytes; {} of {} photos reach it",
        100.0 * webp as f64 / jpeg.max(1) as f64,
        reached.len(),
        photos.len()
    );
    Ok(())
}

/// `--avif-thumbs`: the thumbs only, as the server makes them (libheif, aom, `--avif-speed`), at
/// the given libheif qualities: bytes against the JPEG thumbs on all photos and without the three
/// texture samples, SSIM median / mean, how many fall below their JPEG, and the encode time.
fn avif_thumb_qualities(photos: &[Photo], choice: Formats, speed: i32, rect: bool, qualities: &[i32]) -> Result<()> {
    let texture = |name: &str| ["brick", "gravel", "grass"].iter().any(|t| name.contains(t));
    println!(
        "\nAVIF thumbs (libheif, aom speed {speed}, rectangular partitions {rect}): AVIF / JPEG bytes, all and without textures; SSIM median / mean"
    );
    println!(
        "| quality | 50 thumbs JPEG → AVIF | AVIF / JPEG | without textures | AVIF / WebP | SSIM JPEG | SSIM WebP | SSIM AVIF | below JPEG | AVIF thumb ms median / p90 |"
    );
    println!("| ---: | ---: | ---: | ---: | ---: | --- | --- | --- | ---: | --- |");
    let mut best: Vec<Option<usize>> = vec![None; photos.len()];
    let mut jpeg_of = vec![0usize; photos.len()];
    for &quality in qualities {
        let choice = Formats {
            webp_preview: None,
            avif_thumb: Some(AvifSettings { quality, speed, rect_partitions: rect }),
            ..choice
        };
        let (mut jpeg, mut webp, mut avif, mut jpeg_nt, mut avif_nt) = (0usize, 0usize, 0usize, 0usize, 0usize);
        let (mut sj, mut sw, mut sa, mut took) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (i, photo) in photos.iter().enumerate() {
            let (d, timings) = derive_timed_with(&photo.bytes, ImageFormat::Jpeg, 1, Decode::ShrinkOnLoad, choice)
                .with_context(|| photo.name.clone())?;
            let a = d.thumb_avif.as_ref().context("no AVIF thumb")?;
            let reference = photo.full.resized(d.thumb.width, d.thumb.height)?.luma();
            let width = d.thumb.width as usize;
            sj.push(ssim(&Rgb::decode(&d.thumb.bytes)?.luma(), &reference, width));
            sw.push(ssim(&Rgb::decode(&webp_thumb(&d).bytes)?.luma(), &reference, width));
            sa.push(ssim(&avif_pixels(&a.bytes)?.luma(), &reference, width));
            jpeg_of[i] = d.thumb.bytes.len();
            if sa[i] >= sj[i] && best[i].is_none_or(|b| a.bytes.len() < b) {
                best[i] = Some(a.bytes.len());
            }
            took.push(timings.avif_thumb.as_secs_f64() * 1e3);
            jpeg += d.thumb.bytes.len();
            webp += webp_thumb(&d).bytes.len();
            avif += a.bytes.len();
            if !texture(&photo.name) {
                jpeg_nt += d.thumb.bytes.len();
                avif_nt += a.bytes.len();
            }
        }
        took.sort_by(f64::total_cmp);
        let below = sj.iter().zip(&sa).filter(|(j, a)| a < j).count();
        println!(
            "| {quality} | {jpeg} → {avif} B | {:.1}% | {:.1}% | {:.1}% | {} | {} | {} | {below} | {:.1} / {:.1} |",
            100.0 * avif as f64 / jpeg as f64,
            100.0 * avif_nt as f64 / jpeg_nt.max(1) as f64,
            100.0 * avif as f64 / webp as f64,
            median_mean(&sj),
            median_mean(&sw),
            median_mean(&sa),
            median(&took),
            took[took.len() * 9 / 10]
        );
    }
    let reached: Vec<(usize, usize)> = best.iter().zip(&jpeg_of).filter_map(|(b, j)| b.map(|b| (b, *j))).collect();
    let (avif, jpeg) = reached.iter().fold((0, 0), |(a, j), (b, jb)| (a + b, j + jb));
    println!(
        "\nper-image best: {:.1}% of those photos' JPEG thumb bytes; {} of {} photos reach their JPEG's SSIM",
        100.0 * avif as f64 / jpeg.max(1) as f64,
        reached.len(),
        photos.len()
    );
    Ok(())
}

/// AVIF through `avifenc` (aom), on the reference pixels written as PNG: the lowest quantizer
/// step where the thumbs' SSIM (median and mean) reaches the JPEG's, at speeds 6, 8 and 10, with
/// the time of `avifenc` per image (its process, PNG read included) for thumb and preview.
fn avif_figures(photos: &[Photo], runs: &[Run]) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let version = Command::new("avifenc").arg("--version").output().context("avifenc (apt-get install libavif-bin)")?;
    println!("\nAVIF: {}", String::from_utf8_lossy(&version.stdout).lines().next().unwrap_or("").trim());
    let (jpeg_median, jpeg_mean) = {
        let s: Vec<f64> = runs.iter().map(|r| r.ssim.thumb_jpeg).collect();
        (median(&s), mean(&s))
    };
    let jpeg_bytes: usize = runs.iter().map(|r| r.derivatives.thumb.bytes.len()).sum();
    let webp_bytes: usize = runs.iter().map(|r| webp_thumb(&r.derivatives).bytes.len()).sum();
    // Written once: each photo's reference thumb and preview, as lossless PNG.
    let mut inputs = Vec::new();
    for (i, (photo, run)) in photos.iter().zip(runs).enumerate() {
        let d = &run.derivatives;
        let thumb = photo.full.resized(d.thumb.width, d.thumb.height)?;
        let preview = photo.full.resized(d.preview.width, d.preview.height)?;
        let (t, p) = (dir.path().join(format!("{i}-thumb.png")), dir.path().join(format!("{i}-preview.png")));
        std::fs::write(&t, thumb.png()?)?;
        std::fs::write(&p, preview.png()?)?;
        inputs.push((t, thumb.luma(), p, thumb.width));
    }
    println!(
        "| speed | quantizer | AVIF / JPEG thumbs | AVIF / WebP thumbs | SSIM median / mean | avifenc thumb ms | avifenc preview ms |"
    );
    println!("| ---: | ---: | ---: | ---: | --- | ---: | ---: |");
    for speed in [6, 8, 10] {
        let mut found = None;
        for quantizer in (20..=44).rev().step_by(4) {
            let (mut bytes, mut scores, mut took) = (0usize, Vec::new(), Vec::new());
            for (i, (png, reference, _, width)) in inputs.iter().enumerate() {
                let out = dir.path().join(format!("{i}-thumb.avif"));
                let started = Instant::now();
                avifenc(png, &out, speed, quantizer)?;
                took.push(started.elapsed().as_secs_f64() * 1e3);
                bytes += std::fs::metadata(&out)?.len() as usize;
                let decoded = dir.path().join(format!("{i}-thumb-avif.png"));
                let status = Command::new("avifdec").arg(&out).arg(&decoded).output()?;
                ensure!(status.status.success(), "avifdec failed");
                scores.push(ssim(&Rgb::decode(&std::fs::read(&decoded)?)?.luma(), reference, *width as usize));
            }
            if median(&scores) >= jpeg_median && mean(&scores) >= jpeg_mean {
                took.sort_by(f64::total_cmp);
                found = Some((quantizer, bytes, scores, median(&took)));
                break;
            }
        }
        let Some((quantizer, bytes, scores, thumb_ms)) = found else {
            println!("| {speed} | — | no quantizer from 44 to 20 reached the JPEG's SSIM | | | | |");
            continue;
        };
        let mut preview_ms = Vec::new();
        for (i, (_, _, png, _)) in inputs.iter().enumerate().take(10) {
            let started = Instant::now();
            avifenc(png, &dir.path().join(format!("{i}-preview.avif")), speed, quantizer)?;
            preview_ms.push(started.elapsed().as_secs_f64() * 1e3);
        }
        preview_ms.sort_by(f64::total_cmp);
        println!(
            "| {speed} | {quantizer} | {:.1}% | {:.1}% | {:.4} / {:.4} | {thumb_ms:.1} | {:.1} |",
            100.0 * bytes as f64 / jpeg_bytes as f64,
            100.0 * bytes as f64 / webp_bytes as f64,
            median(&scores),
            mean(&scores),
            median(&preview_ms)
        );
    }
    println!("(preview time: the median of the first 10 photos; avifenc on one thread)");
    Ok(())
}

/// An AVIF file's pixels, through `avifdec` (libavif with dav1d: what browsers decode with).
fn avif_pixels(bytes: &[u8]) -> Result<Rgb> {
    let dir = tempfile::tempdir()?;
    let (file, png) = (dir.path().join("t.avif"), dir.path().join("t.png"));
    std::fs::write(&file, bytes)?;
    let status =
        Command::new("avifdec").arg(&file).arg(&png).output().context("avifdec (apt-get install libavif-bin)")?;
    ensure!(status.status.success(), "avifdec failed: {}", String::from_utf8_lossy(&status.stderr));
    Rgb::decode(&std::fs::read(&png)?)
}

fn avifenc(input: &Path, output: &Path, speed: u32, quantizer: u32) -> Result<()> {
    let q = quantizer.to_string();
    let status = Command::new("avifenc")
        .args(["-s", &speed.to_string(), "-j", "1", "-y", "420", "--min", &q, "--max", &q])
        .arg(input)
        .arg(output)
        .output()?;
    ensure!(status.status.success(), "avifenc failed: {}", String::from_utf8_lossy(&status.stderr));
    Ok(())
}

/// Mean SSIM of two luma planes of `width` columns: Gaussian 11×11 window (σ 1.5), every window
/// that fits ("valid"), K1 0.01, K2 0.03, L 255.
fn ssim(a: &[f64], b: &[f64], width: usize) -> f64 {
    const N: usize = 11;
    let height = a.len() / width;
    if width < N || height < N || a.len() != b.len() {
        return f64::NAN;
    }
    let kernel: Vec<f64> = {
        let k: Vec<f64> = (0..N).map(|i| (-((i as f64 - 5.0).powi(2)) / (2.0 * 1.5 * 1.5)).exp()).collect();
        let sum: f64 = k.iter().sum();
        k.into_iter().map(|v| v / sum).collect()
    };
    let (ow, oh) = (width - N + 1, height - N + 1);
    // Separable: rows first (ow × height), then columns (ow × oh).
    let blur = |plane: &[f64]| -> Vec<f64> {
        let mut rows = vec![0.0; ow * height];
        for y in 0..height {
            for x in 0..ow {
                rows[y * ow + x] = (0..N).map(|k| kernel[k] * plane[y * width + x + k]).sum();
            }
        }
        let mut out = vec![0.0; ow * oh];
        for y in 0..oh {
            for x in 0..ow {
                out[y * ow + x] = (0..N).map(|k| kernel[k] * rows[(y + k) * ow + x]).sum();
            }
        }
        out
    };
    let product = |p: &[f64], q: &[f64]| p.iter().zip(q).map(|(x, y)| x * y).collect::<Vec<f64>>();
    let (mu_a, mu_b) = (blur(a), blur(b));
    let (aa, bb, ab) = (blur(&product(a, a)), blur(&product(b, b)), blur(&product(a, b)));
    let (c1, c2) = ((0.01f64 * 255.0).powi(2), (0.03f64 * 255.0).powi(2));
    let sum: f64 = (0..ow * oh)
        .map(|i| {
            let (ma, mb) = (mu_a[i], mu_b[i]);
            let (va, vb, cov) = (aa[i] - ma * ma, bb[i] - mb * mb, ab[i] - ma * mb);
            ((2.0 * ma * mb + c1) * (2.0 * cov + c2)) / ((ma * ma + mb * mb + c1) * (va + vb + c2))
        })
        .sum();
    sum / (ow * oh) as f64
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// `median / mean`, four decimals.
fn median_mean(values: &[f64]) -> String {
    format!("{:.4} / {:.4}", median(values), mean(values))
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}
