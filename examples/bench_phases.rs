//! Thumbs first, per photo: the CPU time of phase 1 (the thumb alone and its placeholder) against
//! the whole job (preview, thumb, AVIF thumb, placeholder: what one job made before, and what
//! phase 2 makes now), in process, for a 12 MP JPEG, and the same photo as PNG and HEIC, whose
//! decoders cannot shrink while they decode (`media::derive::thumb_alone_is_cheaper`). A harness
//! that prints figures, not a test; its figures go into `docs/benchmarks.md` ("Thumbs first").
//!
//! ```text
//! cargo run --release --example bench_phases -- [--rounds 15]   (HEIC: apt-get install libheif-examples)
//! ```
//!
//! Times are the thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), so other work on a shared machine
//! changes them less than wall time; medians of `--rounds`, the two kinds of job alternating.

#[path = "support/mod.rs"]
mod support;

use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use confetti::media::derive::{Decode, Timings, derive_thumb_timed, derive_timed, thumb_alone_is_cheaper};
use confetti::media::probe::probe_accepted;
use support::procfs::Machine;
use support::stats::{ms, percentile};

fn thread_cpu() -> Duration {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a valid, writable timespec for the duration of the call.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let mut rounds = 15;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--rounds" => rounds = args.next().context("--rounds N")?.parse()?,
            other => anyhow::bail!("unknown argument {other}"),
        }
    }
    ensure!(rounds > 0, "--rounds must be at least 1");
    let dir = tempfile::tempdir()?;
    let jpeg = support::photos::photo_like_jpeg(4000, 3000)?;
    let jpeg_path = dir.path().join("photo.jpg");
    std::fs::write(&jpeg_path, &jpeg)?;
    let mut files = vec![("JPEG", jpeg.clone())];
    let decoded = image::load_from_memory(&jpeg)?.into_rgb8();
    let mut png = Vec::new();
    decoded.write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)?;
    files.push(("PNG", png));
    let heic_path = dir.path().join("photo.heic");
    match Command::new("heif-enc").args(["-q", "80", "-o"]).arg(&heic_path).arg(&jpeg_path).output() {
        Ok(out) if out.status.success() => files.push(("HEIC", std::fs::read(&heic_path)?)),
        _ => println!("(no heif-enc: HEIC left out)"),
    }
    let machine = Machine::read();
    println!("machine: {} cores, {}; load average {}; rounds: {rounds}", machine.cores, machine.cpu, machine.loadavg);
    println!(
        "\nCPU ms, medians: phase 1 (thumb alone: decode / resize / encode+placeholder = total) | whole job (decode / AVIF / total)"
    );
    for (name, bytes) in &files {
        let probe = probe_accepted(bytes, bytes.len() as u64, u64::MAX)?;
        let (format, orientation) = (probe.format, probe.orientation);
        let (mut thumb_cpu, mut whole_cpu) = (Vec::new(), Vec::new());
        let (mut thumb_parts, mut whole_parts): (Vec<Timings>, Vec<Timings>) = (Vec::new(), Vec::new());
        // One warm-up each, then alternating.
        derive_thumb_timed(bytes, format, orientation)?;
        derive_timed(bytes, format, orientation, Decode::ShrinkOnLoad)?;
        for _ in 0..rounds {
            let started = thread_cpu();
            let (made, t) = derive_thumb_timed(bytes, format, orientation)?;
            thumb_cpu.push(thread_cpu() - started);
            thumb_parts.push(t);
            ensure!(made.thumb.width.max(made.thumb.height) == 400, "a 400 px thumb");
            let started = thread_cpu();
            let (_, t) = derive_timed(bytes, format, orientation, Decode::ShrinkOnLoad)?;
            whole_cpu.push(thread_cpu() - started);
            whole_parts.push(t);
        }
        let median = |v: &mut Vec<Duration>| {
            v.sort();
            ms(percentile(v, 50.0))
        };
        let part = |all: &[Timings], f: fn(&Timings) -> Duration| {
            let mut v: Vec<Duration> = all.iter().map(f).collect();
            median(&mut v)
        };
        let (thumb, whole) = (median(&mut thumb_cpu), median(&mut whole_cpu));
        println!(
            "  {name:4} {:>5.1} MB {}x{}: {:5.1} / {:4.1} / {:4.1} = {:5.1} ms | {:5.1} / {:4.1} / {:5.1} ms | phase 1 is {:.0}% of the whole job; thumb first then the rest: {:.0}% of one job ({})",
            bytes.len() as f64 / 1e6,
            probe.width,
            probe.height,
            part(&thumb_parts, |t| t.decode),
            part(&thumb_parts, |t| t.resize),
            part(&thumb_parts, |t| t.encode + t.placeholder),
            thumb,
            part(&whole_parts, |t| t.decode),
            part(&whole_parts, |t| t.avif_thumb),
            whole,
            thumb / whole * 100.0,
            (thumb + whole) / whole * 100.0,
            if thumb_alone_is_cheaper(format) { "two phases" } else { "one decode for all: everything in phase 1" },
        );
    }
    Ok(())
}
