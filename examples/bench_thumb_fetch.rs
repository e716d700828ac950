//! A gallery's thumbs fetched by many guests at once: latency of `GET /api/v1/uploads/{id}/thumb`
//! on a local directory and on an S3 bucket (`s3s-fs`), and the connections the instance holds
//! to the bucket while and after it serves them. A harness that prints figures, not a test.
//!
//! ```text
//! cargo build --release
//! cargo run --release --example bench_thumb_fetch -- [--confetti-bin PATH] [--photos 50] [--fetches 2000] [--clients 32]
//! ```
//!
//! * One `confetti serve` child process per set-up, on SQLite: its photos in the data directory,
//!   then in a fresh `s3s-fs` bucket (`S3S_FS`, or on the `PATH`).
//! * `--photos` generated photos (1600×1200) uploaded by one guest and waited for until `ready`.
//! * `--clients` other guests (at most 90; more clients share them), each client its own HTTP
//!   client (its own keep-alive connection), fetch `--fetches` thumbs in all, as a browser's
//!   `<img>` asks (`Accept` listing AVIF and WebP, no `If-None-Match`: a first visit), each
//!   client walking the gallery from its own offset.
//! * Latency is from the request sent to the last body byte read. Connections to the bucket are
//!   the instance's established TCP connections to the `s3s-fs` port (`/proc/net/tcp`), sampled
//!   every 20 ms during the fetches (peak) and read again 1 s after them (held).
//! * Run it with another build as `--confetti-bin` (e.g. the previous release) for a before/after.

#[path = "support/mod.rs"]
mod support;

#[path = "support/scale_out.rs"]
#[allow(dead_code)]
mod scale_out;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, ensure};
use clap::Parser;
use reqwest::multipart::Part;
use scale_out::S3Fs;
use serde_json::Value;
use support::api;
use support::child::{ChildServer, release_binary};
use support::photos::photo_like_jpeg;
use support::stats::{ms, percentile};

#[derive(Parser, Debug, Clone)]
#[command(about = "Thumb fetch latency on local and S3 storage (run `cargo build --release` first)")]
struct Args {
    /// The confetti binary (default: target/release/confetti of this package).
    #[arg(long)]
    confetti_bin: Option<PathBuf>,
    /// Photos in the gallery.
    #[arg(long, default_value_t = 50)]
    photos: usize,
    /// Thumb fetches in all.
    #[arg(long, default_value_t = 2000)]
    fetches: usize,
    /// Guests fetching at once.
    #[arg(long, default_value_t = 32)]
    clients: usize,
}

/// What a browser's `<img>` sends.
const IMG_ACCEPT: &str = "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8";

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a tokio runtime");
    match runtime.block_on(bench(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn bench(args: Args) -> Result<()> {
    ensure!(args.photos >= 1 && args.clients >= 1 && args.fetches >= args.clients, "nothing to measure");
    let binary = release_binary(args.confetti_bin.clone())?;
    println!("confetti: `{}`", binary.display());
    println!("| storage | fetches | p50 | p99 | max | fetches/s | connections to the bucket: peak / held after |");
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    let local = ChildServer::confetti(&binary, &[]).await?;
    println!("{}", run("local directory", &args, &local, None).await?);
    drop(local);
    let s3 = S3Fs::start()?;
    let mut env = s3.env();
    env.push(("CONFETTI_STORAGE".to_owned(), s3.storage_url()));
    let on_s3 = ChildServer::confetti(&binary, &env).await?;
    let port: u16 = s3.endpoint.rsplit(':').next().context("s3s-fs port")?.parse()?;
    println!("{}", run("S3 (s3s-fs)", &args, &on_s3, Some(port)).await?);
    Ok(())
}

async fn run(name: &str, args: &Args, server: &ChildServer, bucket_port: Option<u16>) -> Result<String> {
    let client = reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(120)).build()?;
    let base = server.base.as_str();
    let event = api::create_event(&client, base, None).await?;
    let uploader = api::join(&client, base, &event.slug, &event.join_token, "Anna").await?;
    let mut ids = Vec::new();
    for i in 0..args.photos {
        let jpeg = photo_like_jpeg(1600 + i as u32, 1200)?;
        let part = Part::bytes(jpeg).file_name(format!("IMG_{i:04}.jpg")).mime_str("image/jpeg")?;
        let upload = api::upload(&client, base, &event.slug, &uploader.token, part).await?;
        ids.push(upload["id"].as_str().context("upload without id")?.to_owned());
    }
    let started = Instant::now();
    for id in &ids {
        loop {
            let upload: Value = client
                .get(format!("{base}/api/v1/uploads/{id}"))
                .bearer_auth(&uploader.token)
                .send()
                .await?
                .json()
                .await?;
            match upload["status"].as_str() {
                Some("ready") => break,
                Some("processing") => {
                    ensure!(started.elapsed() < Duration::from_secs(600), "not ready within 10 min");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                other => return Err(anyhow!("upload {id} is {other:?}")),
            }
        }
    }
    // One address joins at most 100 guests at once (the join budget): past 90 clients, guests
    // are shared by several clients, each with its own connection.
    let mut tokens = Vec::new();
    for i in 0..args.clients.min(90) {
        tokens.push(api::join(&client, base, &event.slug, &event.join_token, &format!("Guest {i}")).await?.token);
    }
    let mut viewers = Vec::new();
    for i in 0..args.clients {
        let viewer = reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(120)).build()?;
        viewers.push((viewer, tokens[i % tokens.len()].clone()));
    }

    let pid = server.pid();
    let peak = Arc::new(AtomicUsize::new(0));
    let sampling = bucket_port.map(|port| {
        let peak = Arc::clone(&peak);
        tokio::spawn(async move {
            loop {
                peak.fetch_max(connections_to(pid, port), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    });
    let ids = Arc::new(ids);
    let per_client = args.fetches / args.clients;
    let began = Instant::now();
    let mut tasks = Vec::new();
    for (i, (viewer, token)) in viewers.into_iter().enumerate() {
        let (ids, base) = (Arc::clone(&ids), base.to_owned());
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(per_client);
            for n in 0..per_client {
                let id = &ids[(i * 7 + n) % ids.len()];
                let sent = Instant::now();
                let response = viewer
                    .get(format!("{base}/api/v1/uploads/{id}/thumb"))
                    .bearer_auth(&token)
                    .header(reqwest::header::ACCEPT, IMG_ACCEPT)
                    .send()
                    .await?;
                ensure!(response.status() == 200, "thumb: {}", response.status());
                let body = response.bytes().await?;
                ensure!(!body.is_empty(), "an empty thumb");
                latencies.push(sent.elapsed());
            }
            anyhow::Ok(latencies)
        }));
    }
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await??);
    }
    let took = began.elapsed();
    if let Some(sampling) = sampling {
        sampling.abort();
    }
    latencies.sort();
    let connections = match bucket_port {
        Some(port) => {
            tokio::time::sleep(Duration::from_secs(1)).await;
            format!("{} / {}", peak.load(Ordering::Relaxed), connections_to(pid, port))
        }
        None => "—".to_owned(),
    };
    Ok(format!(
        "| {name} | {} | {:.1} ms | {:.1} ms | {:.1} ms | {:.0} | {connections} |",
        latencies.len(),
        ms(percentile(&latencies, 50.0)),
        ms(percentile(&latencies, 99.0)),
        ms(percentile(&latencies, 100.0)),
        latencies.len() as f64 / took.as_secs_f64(),
    ))
}

/// Established TCP connections of process `pid` to 127.0.0.1:`port`: the sockets among its
/// open files whose remote end is that port.
fn connections_to(pid: u32, port: u16) -> usize {
    let inodes: std::collections::HashSet<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|fds| {
            fds.flatten()
                .filter_map(|fd| std::fs::read_link(fd.path()).ok())
                .filter_map(|target| {
                    let target = target.to_string_lossy().into_owned();
                    target.strip_prefix("socket:[").and_then(|rest| rest.strip_suffix(']')).map(str::to_owned)
                })
                .collect()
        })
        .unwrap_or_default();
    let table = std::fs::read_to_string(format!("/proc/{pid}/net/tcp")).unwrap_or_default();
    let remote = format!(":{port:04X}");
    table
        .lines()
        .skip(1)
        .filter(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // remote address, state (01: established), inode
            fields.len() > 9 && fields[2].ends_with(&remote) && fields[3] == "01" && inodes.contains(fields[9])
        })
        .count()
}
