//! Batch benchmark: 12 photos of 12 MP uploaded to Confetti and made `ready` (thumb and preview,
//! in every format the server makes), against `vipsthumbnail` making the same two sizes of the
//! same 12 files. A harness that prints figures, not a test.
//!
//! ```text
//! apt-get install libvips-tools
//! cargo run --release --example bench_batch -- [--rounds 3] [--photos 12]
//! ```
//!
//! * Confetti: a fresh server in this process (SQLite, default workers), one guest uploading
//!   the photos one after another as a phone's queue does; the wall time runs from the first
//!   upload's first byte until the live stream (opened before) has announced the last photo
//!   `ready`, as the gallery page learns of it.
//! * `vipsthumbnail`: `-s 400` (Q 78) and `-s 2048` (Q 82) of each file, `strip`, one process
//!   after another (libvips uses every core inside one process), and again two files at a time.
//! * Rounds alternate so that drift hits both alike; the ratio is Confetti's median against the
//!   faster of vips' two medians.

#[path = "support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use futures_util::StreamExt;
use reqwest::multipart::Part;
use support::in_process::InProcess;
use support::procfs::Machine;
use support::stats::ms;

#[tokio::main]
async fn main() -> Result<()> {
    let (mut rounds, mut photos) = (3usize, 12usize);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--rounds" => rounds = args.next().context("--rounds N")?.parse()?,
            "--photos" => photos = args.next().context("--photos N")?.parse()?,
            other => bail!("unknown argument {other}"),
        }
    }
    ensure!(rounds > 0 && photos > 0, "--rounds and --photos must be at least 1");
    let vips = Command::new("vipsthumbnail")
        .arg("--version")
        .output()
        .context("vipsthumbnail (apt-get install libvips-tools)")?;
    let machine = Machine::read();
    println!(
        "machine: {} cores, {}; load average {}; {}; {photos} photos, {rounds} rounds",
        machine.cores,
        machine.cpu,
        machine.loadavg,
        String::from_utf8_lossy(&vips.stdout).trim()
    );

    // Twelve different photos of about 12 MP (4000 × 3000 and a few pixels more or less).
    let dir = tempfile::tempdir()?;
    let mut files = Vec::new();
    for i in 0..photos {
        let width = 4000 + 8 * i as u32;
        let bytes = support::photos::photo_like_jpeg(width, 3000)?;
        let file = dir.path().join(format!("photo{i:02}.jpg"));
        std::fs::write(&file, &bytes)?;
        files.push(file);
    }
    let total: u64 = files.iter().map(|f| std::fs::metadata(f).map(|m| m.len())).sum::<std::io::Result<u64>>()?;
    println!("photos: {photos} JPEGs, {:.1} MB in all", total as f64 / 1e6);

    let out = dir.path().join("vips");
    std::fs::create_dir_all(&out)?;
    let (mut ours, mut vips_seq, mut vips_par) = (Vec::new(), Vec::new(), Vec::new());
    // A warm-up of each (page cache, dynamic loading, the server's first connections).
    confetti_batch(&files[..1]).await?;
    vips_batch(&files[..1], &out, 1)?;
    for round in 0..rounds {
        let o = confetti_batch(&files).await?;
        let s = vips_batch(&files, &out, 1)?;
        let p = vips_batch(&files, &out, 2)?;
        println!(
            "round {}: confetti {:.0} ms, vips one at a time {:.0} ms, vips two at a time {:.0} ms",
            round + 1,
            ms(o),
            ms(s),
            ms(p)
        );
        ours.push(o);
        vips_seq.push(s);
        vips_par.push(p);
    }
    let median = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let (o, s, p) = (median(&mut ours), median(&mut vips_seq), median(&mut vips_par));
    println!("\n| | median wall time |\n| --- | --- |");
    println!("| Confetti: {photos} uploads to `ready` | {:.0} ms |", ms(o));
    println!("| `vipsthumbnail` 400 + 2048, one file at a time | {:.0} ms |", ms(s));
    println!("| `vipsthumbnail` 400 + 2048, two files at a time | {:.0} ms |", ms(p));
    println!(
        "| **ratio** against the faster vips | **{:.2}×** (target ≤ 0.5×) |",
        o.as_secs_f64() / s.min(p).as_secs_f64()
    );
    Ok(())
}

/// Uploads every file to a fresh server and waits until each upload is `ready`.
async fn confetti_batch(files: &[PathBuf]) -> Result<Duration> {
    let bytes: Vec<Vec<u8>> = files.iter().map(std::fs::read).collect::<std::io::Result<_>>()?;
    let server = InProcess::start(None, i64::MAX / 2).await?;
    let client = reqwest::Client::new();
    let event = support::api::create_event(&client, &server.base, None).await?;
    let guest = support::api::join(&client, &server.base, &event.slug, &event.join_token, "Bench").await?;
    // Ready uploads as the page learns of them: from the live stream, opened before the first
    // upload (polling every upload's state would take CPU from the media workers).
    let live = client
        .get(format!("{}/api/v1/events/{}/live", server.base, event.slug))
        .bearer_auth(&guest.token)
        .send()
        .await?
        .error_for_status()?;
    let (self_before, workers_before) = (cpu(libc::RUSAGE_SELF), cpu(libc::RUSAGE_CHILDREN));
    let started = Instant::now();
    let mut ids = std::collections::HashSet::new();
    for (i, photo) in bytes.into_iter().enumerate() {
        let part = Part::bytes(photo).file_name(format!("photo{i:02}.jpg")).mime_str("image/jpeg")?;
        let upload = support::api::upload(&client, &server.base, &event.slug, &guest.token, part).await?;
        ids.insert(upload["id"].as_str().context("upload without id")?.to_owned());
    }
    let uploaded = started.elapsed();
    let mut stream = live.bytes_stream();
    let mut text = String::new();
    while !ids.is_empty() {
        let chunk = tokio::time::timeout(Duration::from_secs(120), stream.next())
            .await
            .context("no news of the uploads within 120 s")?
            .context("the live stream ended")??;
        text.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = text.find("\n\n") {
            let message: String = text.drain(..end + 2).collect();
            if let (true, Some(data)) =
                (message.contains("event: upload"), message.lines().find_map(|l| l.strip_prefix("data: ")))
            {
                let upload: serde_json::Value = serde_json::from_str(data)?;
                ensure!(upload["status"] == "ready", "announced but not ready: {upload}");
                ids.remove(upload["id"].as_str().unwrap_or_default());
            }
        }
    }
    let wall = started.elapsed();
    let (own, workers) = (cpu(libc::RUSAGE_SELF) - self_before, cpu(libc::RUSAGE_CHILDREN) - workers_before);
    server.stop().await?;
    println!(
        "  (confetti: the last upload answered after {:.0} ms; CPU of the server and its client {:.0} ms, of the media workers {:.0} ms)",
        ms(uploaded),
        ms(own),
        ms(workers)
    );
    Ok(wall)
}

/// User and system CPU time of this process (`RUSAGE_SELF`) or of its children that ended
/// (`RUSAGE_CHILDREN`: the media workers, one per job).
fn cpu(who: i32) -> Duration {
    // SAFETY: getrusage writes into the zeroed struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut usage);
        usage
    };
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// Both sizes of every file with `vipsthumbnail`, `parallel` files at a time.
fn vips_batch(files: &[PathBuf], out: &Path, parallel: usize) -> Result<Duration> {
    let started = Instant::now();
    for group in files.chunks(parallel) {
        let children = group
            .iter()
            .map(|file| {
                let name = file.file_stem().and_then(|s| s.to_str()).unwrap_or("photo").to_owned();
                let (file, out) = (file.clone(), out.to_path_buf());
                std::thread::spawn(move || -> Result<()> {
                    for (size, quality) in [(400, 78), (2048, 82)] {
                        let status = Command::new("vipsthumbnail")
                            .arg(&file)
                            .args(["-s", &size.to_string(), "-o"])
                            .arg(out.join(format!("{name}-{size}.jpg[Q={quality},strip]")))
                            .status()?;
                        ensure!(status.success(), "vipsthumbnail failed");
                    }
                    Ok(())
                })
            })
            .collect::<Vec<_>>();
        for child in children {
            child.join().map_err(|_| anyhow::anyhow!("vips thread panicked"))??;
        }
    }
    Ok(started.elapsed())
}
