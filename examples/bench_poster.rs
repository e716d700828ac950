//! Poster benchmark: the time a video's poster takes on the derivative worker, for a one-minute
//! 1080p H.264 clip as a phone writes it (about 16 Mbit/s, AAC sound, movie header at the end).
//! A harness that prints figures, not a test.
//!
//! ```text
//! apt-get install ffmpeg
//! cargo run --release --example bench_poster -- [--rounds 9] [--input clip.mp4]
//! ```
//!
//! Per round: the frame (`ffmpeg` as the worker runs it: seek to 1 s, decode, turn upright,
//! scale to fit the preview, PNG on stdout) and the derivatives made from it (PNG decode,
//! thumb, preview, WebP thumb, placeholder), each timed; medians printed.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Result, bail, ensure};
use confetti::jobs::poster::{Ffmpeg, Video};
use confetti::media::ImageFormat;
use confetti::media::derive::derive;
use confetti::sandbox::MediaWorkers;

#[path = "support/mod.rs"]
mod support;
use support::in_process;

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

/// The clip: testsrc2 and a sine, one minute, 1920×1080 at 30 fps.
fn make_clip(dir: &Path) -> Result<PathBuf> {
    let out = dir.join("minute-1080p.mp4");
    let status = Command::new("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-y"])
        .args(["-f", "lavfi", "-i", "testsrc2=size=1920x1080:rate=30", "-f", "lavfi", "-i", "sine=frequency=440"])
        .args(["-t", "60", "-c:v", "libx264", "-preset", "veryfast", "-b:v", "16M", "-pix_fmt", "yuv420p"])
        .args(["-c:a", "aac"])
        .arg(&out)
        .status()?;
    ensure!(status.success(), "ffmpeg could not make the clip");
    Ok(out)
}

#[tokio::main]
async fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let mut rounds = 9;
    let mut input = None;
    let mut rest = args.iter().skip(1);
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--rounds" => rounds = rest.next().map(|r| r.parse()).transpose()?.unwrap_or(rounds),
            "--input" => input = rest.next().map(PathBuf::from),
            other => bail!("unknown argument {other}"),
        }
    }
    let dir = tempfile::tempdir()?;
    let clip = match input {
        Some(input) => input,
        None => {
            let started = Instant::now();
            let clip = make_clip(dir.path())?;
            println!("clip made in {:.1} s", started.elapsed().as_secs_f64());
            clip
        }
    };
    let bytes = std::fs::metadata(&clip)?.len();
    println!("clip: {} ({:.1} MB)", clip.display(), bytes as f64 / 1e6);
    let workers = MediaWorkers::new(in_process::confetti_binary()?, 1);
    workers.fill();
    let ffmpeg = Ffmpeg::check(Path::new("ffmpeg"), dir.path().to_owned(), Arc::clone(&workers)).await;
    ensure!(ffmpeg.available(), "ffmpeg is not installed");

    let (mut frames, mut derives, mut totals) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let started = Instant::now();
        let video = Video { content_type: "video/mp4", duration_ms: Some(60_000), pixels: 1920 * 1080 };
        let Some(png) = ffmpeg.poster_of_file(&clip, video).await? else { bail!("no frame") };
        let frame = started.elapsed();
        let png_bytes = png.len();
        let derived = tokio::task::spawn_blocking(move || derive(&png, ImageFormat::Png, 1)).await??;
        let total = started.elapsed();
        if round == 0 {
            println!(
                "frame PNG {png_bytes} bytes; thumb {}×{}, preview {}×{}",
                derived.thumb.width, derived.thumb.height, derived.preview.width, derived.preview.height
            );
        }
        frames.push(frame);
        derives.push(total - frame);
        totals.push(total);
    }
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{rounds} rounds, medians: frame (ffmpeg) {:.0} ms, derivatives {:.0} ms, poster {:.0} ms",
        ms(median(frames)),
        ms(median(derives)),
        ms(median(totals))
    );
    Ok(())
}
