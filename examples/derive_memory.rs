//! Peak memory of the release server while it makes the derivatives of hard originals, and how
//! quickly it answers meanwhile. A harness that prints figures, not a test.
//!
//! ```text
//! cargo build --release && cargo run --release --example derive_memory -- [--confetti-bin PATH]
//! ```
//!
//! For each original: a fresh `confetti serve` (SQLite, its own data directory, default
//! derivative workers), one event and guest, the upload, then `GET /api/v1/uploads/{id}` every
//! 50 ms until its status is decided; the server's `VmRSS` before the upload and `VmHWM` (peak
//! RSS, reset after start-up) at the end. The originals: a 16-bit RGBA PNG of 10000 × 10000
//! (800 MB decoded, under 1 MB on disk), and progressive 4:2:0 JPEGs of 10000 × 10000 and of
//! 8000 × 6000 (the largest phone sensors).

#[path = "support/mod.rs"]
mod support;

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::Value;
use support::api;
use support::child::{ChildServer, release_binary};
use support::procfs::{ProcStatus, reset_peak};

#[tokio::main]
async fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let given = args
        .iter()
        .position(|a| a == "--confetti-bin")
        .map(|i| args.get(i + 1).map(PathBuf::from).context("--confetti-bin PATH"))
        .transpose()?;
    let bin = release_binary(given)?;
    let originals = [
        ("16-bit RGBA PNG 10000²", png16_rgba(10_000, 10_000)?),
        ("progressive JPEG 10000²", progressive_jpeg(10_000, 10_000)?),
        ("progressive JPEG 8000×6000", progressive_jpeg(8_000, 6_000)?),
    ];
    println!("| original | bytes | status | settled after | slowest GET meanwhile | VmRSS before | VmHWM |");
    println!("|---|---|---|---|---|---|---|");
    for (name, bytes) in originals {
        // The default derivative workers: the job is what is measured.
        let server = ChildServer::confetti(&bin, &[]).await?;
        let outcome = measure(&server, &bytes).await;
        drop(server);
        let m = outcome.with_context(|| format!("measuring {name}"))?;
        println!(
            "| {name} | {} | {} | {:.1} s | {} ms | {} MiB | **{} MiB** |",
            bytes.len(),
            m.status,
            m.settled.as_secs_f64(),
            m.slowest.as_millis(),
            m.rss_before_kib / 1024,
            m.hwm_kib / 1024
        );
    }
    Ok(())
}

struct Measured {
    status: String,
    settled: Duration,
    slowest: Duration,
    rss_before_kib: u64,
    hwm_kib: u64,
}

async fn measure(server: &ChildServer, original: &[u8]) -> Result<Measured> {
    let client = reqwest::Client::new();
    let base = &server.base;
    let event = api::create_event(&client, base, Some(1 << 40)).await?;
    let guest = api::join(&client, base, &event.slug, &event.join_token, "Measurer").await?;
    let token = &guest.token;

    let rss_before_kib = ProcStatus::of(server.pid())?.rss_kib;
    anyhow::ensure!(reset_peak(server.pid()), "resetting VmHWM");
    let part = reqwest::multipart::Part::bytes(original.to_vec())
        .file_name("original")
        .mime_str("application/octet-stream")?;
    let created = api::upload(&client, base, &event.slug, token, part).await?;
    let id = created["id"].as_str().context("id")?;

    let (started, mut slowest) = (Instant::now(), Duration::ZERO);
    let status = loop {
        let asked = Instant::now();
        let upload: Value = client
            .get(format!("{base}/api/v1/uploads/{id}"))
            .bearer_auth(token)
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        slowest = slowest.max(asked.elapsed());
        if upload["status"] != "processing" {
            break upload["status"].as_str().unwrap_or("?").to_owned();
        }
        if started.elapsed() > Duration::from_secs(600) {
            bail!("still processing after 10 minutes");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    Ok(Measured {
        status,
        settled: started.elapsed(),
        slowest,
        rss_before_kib,
        hwm_kib: ProcStatus::of(server.pid())?.hwm_kib,
    })
}

/// One semi-transparent orange, written row by row.
fn png16_rgba(w: u32, h: u32) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut bytes, w, h);
        encoder.set_color(png::ColorType::Rgba);
        encoder.set_depth(png::BitDepth::Sixteen);
        encoder.set_compression(png::Compression::High);
        let mut writer = encoder.write_header()?;
        let mut stream = writer.stream_writer()?;
        let row = [0xFF, 0xFF, 0x80, 0x00, 0x00, 0x00, 0x80, 0x00].repeat(w as usize);
        for _ in 0..h {
            stream.write_all(&row)?;
        }
        stream.finish()?;
    }
    Ok(bytes)
}

/// A smooth gradient, progressive, 4:2:0 (what photo software exports).
fn progressive_jpeg(w: u16, h: u16) -> Result<Vec<u8>> {
    let (wu, hu) = (usize::from(w), usize::from(h));
    let mut pixels = vec![0u8; wu * hu * 3];
    for (i, p) in pixels.chunks_exact_mut(3).enumerate() {
        let (x, y) = (i % wu, i / wu);
        p.copy_from_slice(&[(x * 255 / wu) as u8, (y * 255 / hu) as u8, 128]);
    }
    let mut bytes = Vec::new();
    let mut encoder = jpeg_encoder::Encoder::new(&mut bytes, 80);
    encoder.set_progressive(true);
    encoder.set_sampling_factor(jpeg_encoder::SamplingFactor::R_4_2_0);
    encoder.encode(&pixels, w, h, jpeg_encoder::ColorType::Rgb)?;
    Ok(bytes)
}
