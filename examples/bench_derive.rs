//! Derivative benchmark: our thumb + preview of a 12 MP JPEG against `vipsthumbnail` making the
//! same two sizes from the same file. A harness that prints figures, not a test.
//!
//! ```text
//! apt-get install libvips-tools
//! cargo run --release --example bench_derive -- [--rounds 15] [--input photo.jpg] [--keep]
//! ```
//!
//! * Whole jobs, alternating round by round: this binary again as a child
//!   (`bench_derive --one FILE OUTDIR`: read, derive both, write both, print its own peak RSS),
//!   wall time measured here; and `vipsthumbnail -s 400` then `-s 2048` on the same file,
//!   wall time of both together. Same JPEG qualities on both sides, metadata stripped.
//! * In process: where the time of one derive goes (decode / resize / encode), with the
//!   DCT-scaled decode and with a full decode, so the gain of shrink-on-load shows.
//!
//! `--heic`: the same photo made a HEIC by `heif-enc -q 80` (apt-get install libheif-examples),
//! and the whole derive of each (thumb, preview, WebP thumb, placeholder) in process, rounds
//! alternating, plus one child job each for its peak RSS. No vipsthumbnail.

#[path = "support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use confetti::media::ImageFormat;
use confetti::media::derive::{Decode, Timings, derive, derive_timed};
use confetti::media::probe::probe_accepted;
use support::procfs::{Machine, ProcStatus};
use support::stats::{ms, percentile};

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--one") {
        let (Some(file), Some(out)) = (args.get(2), args.get(3)) else { bail!("usage: --one FILE OUTDIR") };
        return one(Path::new(file), Path::new(out));
    }
    let mut rounds = 15;
    let mut input = None;
    let mut keep = false;
    let mut heic = false;
    let mut rest = args.iter().skip(1);
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--rounds" => rounds = rest.next().context("--rounds N")?.parse()?,
            "--input" => input = Some(PathBuf::from(rest.next().context("--input FILE")?)),
            "--keep" => keep = true,
            "--heic" => heic = true,
            other => bail!("unknown argument {other}"),
        }
    }
    ensure!(rounds > 0, "--rounds must be at least 1");
    if heic {
        return bench_heic(rounds, input);
    }
    bench(rounds, input, keep)
}

/// The child: one whole derivative job, as the worker does it.
fn one(file: &Path, out: &Path) -> Result<()> {
    let original = std::fs::read(file)?;
    let probe = probe_accepted(&original, original.len() as u64, u64::MAX)?;
    let d = derive(&original, probe.format, probe.orientation)?;
    std::fs::write(out.join("preview.jpg"), &d.preview.bytes)?;
    std::fs::write(out.join("thumb.jpg"), &d.thumb.bytes)?;
    println!(
        "{} {}x{} {}x{}",
        ProcStatus::own()?.hwm_kib,
        d.preview.width,
        d.preview.height,
        d.thumb.width,
        d.thumb.height
    );
    Ok(())
}

fn bench(rounds: usize, input: Option<PathBuf>, keep: bool) -> Result<()> {
    let dir = tempfile::tempdir()?;
    if keep {
        println!("keeping the original and the outputs in {}", dir.path().display());
    }
    let file = match input {
        Some(path) => path,
        None => {
            let started = Instant::now();
            let bytes = support::photos::photo_like_jpeg(4000, 3000)?;
            let path = dir.path().join("photo.jpg");
            std::fs::write(&path, &bytes)?;
            println!("original: generated 4000x3000 JPEG, quality 90, in {:.1} s", started.elapsed().as_secs_f64());
            path
        }
    };
    let original = std::fs::read(&file)?;
    println!("original: {} ({} bytes, {:.2} MB)", file.display(), original.len(), original.len() as f64 / 1e6);
    let machine = Machine::read();
    let vips = Command::new("vipsthumbnail")
        .arg("--version")
        .output()
        .context("vipsthumbnail (apt-get install libvips-tools)")?;
    println!(
        "machine: {} cores, {}; load average {}; {}; rounds: {rounds}",
        machine.cores,
        machine.cpu,
        machine.loadavg,
        String::from_utf8_lossy(&vips.stdout).trim()
    );

    let (ours_dir, vips_dir) = (dir.path().join("ours"), dir.path().join("vips"));
    std::fs::create_dir_all(&ours_dir)?;
    std::fs::create_dir_all(&vips_dir)?;
    let exe = std::env::current_exe()?;
    let ours = || -> Result<(Duration, u64, String)> {
        let started = Instant::now();
        let output = Command::new(&exe).arg("--one").arg(&file).arg(&ours_dir).output()?;
        let wall = started.elapsed();
        ensure!(output.status.success(), "child failed: {}", String::from_utf8_lossy(&output.stderr));
        let line = String::from_utf8(output.stdout)?;
        let (hwm, sizes) = line.trim().split_once(' ').context("child output")?;
        Ok((wall, hwm.parse()?, sizes.to_owned()))
    };
    let vips = || -> Result<Duration> {
        let started = Instant::now();
        for (size, name, quality) in [(400, "thumb", 78), (2048, "preview", 82)] {
            let status = Command::new("vipsthumbnail")
                .arg(&file)
                .args(["-s", &size.to_string(), "-o"])
                .arg(vips_dir.join(format!("{name}.jpg[Q={quality},strip]")))
                .status()?;
            ensure!(status.success(), "vipsthumbnail failed");
        }
        Ok(started.elapsed())
    };

    // One warm-up each (page cache, dynamic loading), then alternate so drift hits both alike.
    let (_, _, sizes) = ours()?;
    vips()?;
    let (mut ours_wall, mut ours_rss, mut vips_wall) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let (wall, hwm, _) = ours()?;
        ours_wall.push(wall);
        ours_rss.push(hwm);
        vips_wall.push(vips()?);
    }
    ours_wall.sort();
    ours_rss.sort();
    vips_wall.sort();
    let (ours_med, vips_med) = (percentile(&ours_wall, 50.0), percentile(&vips_wall, 50.0));
    println!("\nwhole job (process start to exit, read + decode + both sizes + write), {rounds} rounds:");
    println!(
        "  ours   median {:7.1} ms   p90 {:7.1} ms   (preview and thumb: {sizes})",
        ms(ours_med),
        ms(percentile(&ours_wall, 90.0))
    );
    println!(
        "  vips   median {:7.1} ms   p90 {:7.1} ms   (vipsthumbnail -s 400 + -s 2048)",
        ms(vips_med),
        ms(percentile(&vips_wall, 90.0))
    );
    println!("  ratio ours/vips (medians): {:.2}", ms(ours_med) / ms(vips_med));
    println!(
        "  our peak RSS per job (VmHWM): median {:.1} MiB, max {:.1} MiB",
        ours_rss[rounds / 2] as f64 / 1024.0,
        ours_rss[rounds - 1] as f64 / 1024.0
    );
    println!("\noutput files:");
    for (who, dir) in [("ours", &ours_dir), ("vips", &vips_dir)] {
        for name in ["preview", "thumb"] {
            let path = dir.join(format!("{name}.jpg"));
            let bytes = std::fs::read(&path)?;
            let (w, h) = jpeg_size(&bytes)?;
            println!("  {who:4} {name:7} {w:4}x{h:<4} {:8} bytes", bytes.len());
        }
    }

    println!("\nin process, median of {rounds} (decode / resize+orient / encode / total):");
    for (label, decode) in [("shrink-on-load", Decode::ShrinkOnLoad), ("full decode   ", Decode::Full)] {
        let mut all: Vec<Timings> = Vec::new();
        derive_timed(&original, ImageFormat::Jpeg, 1, decode)?;
        for _ in 0..rounds {
            all.push(derive_timed(&original, ImageFormat::Jpeg, 1, decode)?.1);
        }
        let median = |f: fn(&Timings) -> Duration| {
            let mut v: Vec<Duration> = all.iter().map(f).collect();
            v.sort();
            ms(percentile(&v, 50.0))
        };
        println!(
            "  {label}  {:6.1} / {:6.1} / {:6.1} / {:6.1} ms",
            median(|t| t.decode),
            median(|t| t.resize),
            median(|t| t.encode),
            median(|t| t.decode + t.resize + t.encode)
        );
    }
    if keep {
        let _ = dir.keep();
    }
    Ok(())
}

/// A 12 MP JPEG against the same photo as HEIC: the whole derive of each, in process.
fn bench_heic(rounds: usize, input: Option<PathBuf>) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let jpeg_path = match input {
        Some(path) => path,
        None => {
            let path = dir.path().join("photo.jpg");
            std::fs::write(&path, support::photos::photo_like_jpeg(4000, 3000)?)?;
            path
        }
    };
    let heic_path = dir.path().join("photo.heic");
    let started = Instant::now();
    let status = Command::new("heif-enc")
        .args(["-q", "80", "-o"])
        .arg(&heic_path)
        .arg(&jpeg_path)
        .status()
        .context("heif-enc (apt-get install libheif-examples)")?;
    ensure!(status.success(), "heif-enc failed");
    println!("heif-enc -q 80: {:.1} s", started.elapsed().as_secs_f64());
    let machine = Machine::read();
    println!("machine: {} cores, {}; load average {}; rounds: {rounds}", machine.cores, machine.cpu, machine.loadavg);
    let files = [("JPEG", std::fs::read(&jpeg_path)?), ("HEIC", std::fs::read(&heic_path)?)];
    let mut all: Vec<Vec<Timings>> = vec![Vec::new(), Vec::new()];
    for (name, bytes) in &files {
        let probe = probe_accepted(bytes, bytes.len() as u64, u64::MAX)?;
        println!("  {name}: {} bytes, {}x{}", bytes.len(), probe.width, probe.height);
        derive_timed(bytes, probe.format, probe.orientation, Decode::ShrinkOnLoad)?;
    }
    for _ in 0..rounds {
        for (i, (_, bytes)) in files.iter().enumerate() {
            let probe = probe_accepted(bytes, bytes.len() as u64, u64::MAX)?;
            all[i].push(derive_timed(bytes, probe.format, probe.orientation, Decode::ShrinkOnLoad)?.1);
        }
    }
    println!(
        "\nin process, median of {rounds} (decode / resize+orient / JPEG encodes / WebP thumb / AVIF thumb / total):"
    );
    let exe = std::env::current_exe()?;
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out)?;
    for ((name, _), timings) in files.iter().zip(&all) {
        let median = |f: &dyn Fn(&Timings) -> Duration| {
            let mut v: Vec<Duration> = timings.iter().map(f).collect();
            v.sort();
            ms(percentile(&v, 50.0))
        };
        let path = if *name == "JPEG" { &jpeg_path } else { &heic_path };
        let child = Command::new(&exe).arg("--one").arg(path).arg(&out).output()?;
        ensure!(child.status.success(), "child failed: {}", String::from_utf8_lossy(&child.stderr));
        let hwm: f64 = String::from_utf8(child.stdout)?.split(' ').next().context("child output")?.parse()?;
        println!(
            "  {name}  {:6.1} / {:6.1} / {:6.1} / {:6.1} / {:6.1} / {:6.1} ms; one job's peak RSS {:.0} MiB",
            median(&|t| t.decode),
            median(&|t| t.resize),
            median(&|t| t.encode),
            median(&|t| t.webp_thumb),
            median(&|t| t.avif_thumb),
            median(&|t| t.decode + t.resize + t.encode + t.webp_thumb + t.webp_preview + t.avif_thumb + t.placeholder),
            hwm / 1024.0
        );
    }
    Ok(())
}

/// Width and height from a JPEG's frame header.
fn jpeg_size(bytes: &[u8]) -> Result<(u16, u16)> {
    let mut pos = 2;
    while let Some(&[0xFF, marker, hi, lo]) = bytes.get(pos..pos + 4) {
        if matches!(marker, 0xC0..=0xC2) {
            let b = bytes.get(pos + 5..pos + 9).context("short frame header")?;
            return Ok((u16::from_be_bytes([b[2], b[3]]), u16::from_be_bytes([b[0], b[1]])));
        }
        pos += 2 + usize::from(u16::from_be_bytes([hi, lo]));
    }
    bail!("no frame header")
}
