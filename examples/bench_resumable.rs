//! Resumable upload benchmark: a large file sent resumably (creation, then one `PATCH` with
//! `Upload-Complete: ?1`) against the same file in one multipart request, on loopback; and the
//! bytes a client sends again after its connection was cut at half. A harness that prints
//! figures, not a test; they go into `docs/benchmarks.md`.
//!
//! ```text
//! cargo build --release
//! cargo run --release --example bench_resumable -- [--mib 100] [--rounds 5] [--confetti-bin PATH]
//! ```
//!
//! It starts `target/release/confetti serve` as a child process (fresh temp data dir, SQLite,
//! local photo directory, random loopback port, no derivative workers so the figures are the
//! upload's own). The file is a small real JPEG followed by noise (a phone's trailer), so both
//! paths store and probe the same bytes. Rounds alternate between the two paths; medians are
//! printed. The cut: the body of the first `PATCH` fails after half the file; the client then
//! asks `HEAD` for the offset (retrying on `409` while the server records the cut request) and
//! sends only the rest; bytes sent in total are counted on the client.

#[path = "support/mod.rs"]
mod support;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use base64::Engine;
use bytes::Bytes;
use clap::Parser;
use reqwest::multipart::Part;
use reqwest::{Client, StatusCode};
use uuid::Uuid;

use support::api;
use support::child::{ChildServer, release_binary};
use support::procfs::cpu_ms;
use support::stats::median;

#[derive(Parser)]
#[command(about = "Confetti resumable upload benchmark (run `cargo build --release` first)")]
struct Args {
    /// The confetti binary (default: target/release/confetti of this package).
    #[arg(long)]
    confetti_bin: Option<PathBuf>,
    /// Size of the file, in MiB.
    #[arg(long, default_value_t = 100)]
    mib: usize,
    /// Rounds of each path.
    #[arg(long, default_value_t = 5)]
    rounds: usize,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// A small real JPEG and `total` bytes in all.
fn file_of(total: usize) -> Result<Vec<u8>> {
    let mut bytes = support::photos::photo_like_jpeg(64, 48)?;
    let mut state = 0x9e37_79b9_u32;
    while bytes.len() < total {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        bytes.push(state as u8);
    }
    Ok(bytes)
}

struct Target<'a> {
    client: &'a Client,
    base: &'a str,
    slug: &'a str,
    token: &'a str,
}

impl Target<'_> {
    async fn one_request(&self, file: &Bytes) -> Result<()> {
        let part = Part::stream_with_length(reqwest::Body::from(file.clone()), file.len() as u64).file_name("clip.jpg");
        api::upload(self.client, self.base, self.slug, self.token, part).await.map(|_| ())
    }

    /// Creates a resource; its path.
    async fn create(&self, length: usize) -> Result<String> {
        let key = base64::engine::general_purpose::STANDARD.encode(Uuid::new_v4().to_string());
        let name = base64::engine::general_purpose::STANDARD.encode("clip.jpg");
        let response = self
            .client
            .post(format!("{}/api/v1/events/{}/uploads/resumable", self.base, self.slug))
            .bearer_auth(self.token)
            .header("Upload-Complete", "?0")
            .header("Upload-Length", length.to_string())
            .header("Upload-Metadata", format!("client_upload_id {key},filename {name}"))
            .send()
            .await?;
        if response.status() != StatusCode::CREATED {
            bail!("creating: {} {}", response.status(), response.text().await.unwrap_or_default());
        }
        Ok(response.headers().get("location").context("no Location")?.to_str()?.to_owned())
    }

    fn patch(&self, location: &str, offset: usize, body: reqwest::Body) -> reqwest::RequestBuilder {
        self.client
            .patch(format!("{}{location}", self.base))
            .bearer_auth(self.token)
            .header("Content-Type", "application/partial-upload")
            .header("Upload-Offset", offset.to_string())
            .header("Upload-Complete", "?1")
            .body(body)
    }

    async fn resumable(&self, file: &Bytes) -> Result<()> {
        let location = self.create(file.len()).await?;
        let response = self.patch(&location, 0, reqwest::Body::from(file.clone())).send().await?;
        if response.status() != StatusCode::CREATED {
            bail!("appending: {} {}", response.status(), response.text().await.unwrap_or_default());
        }
        Ok(())
    }

    /// Sends half, is cut, asks for the offset, sends the rest; the bytes sent in all.
    async fn cut_at_half(&self, file: &Bytes) -> Result<(usize, usize)> {
        let location = self.create(file.len()).await?;
        let half = file.len() / 2;
        let chunks: Vec<std::io::Result<Bytes>> = (0..half)
            .step_by(256 * 1024)
            .map(|at| Ok(file.slice(at..(at + 256 * 1024).min(half))))
            .chain(std::iter::once(Err(std::io::Error::other("the connection dropped"))))
            .collect();
        let cut = self.patch(&location, 0, reqwest::Body::wrap_stream(futures_util::stream::iter(chunks))).send().await;
        anyhow::ensure!(cut.is_err(), "the first request was not cut");
        let mut sent = half;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let head = self.client.head(format!("{}{location}", self.base)).bearer_auth(self.token).send().await?;
            let offset: usize = head.headers().get("upload-offset").context("no offset")?.to_str()?.parse()?;
            let response = self.patch(&location, offset, reqwest::Body::from(file.slice(offset..))).send().await?;
            sent += file.len() - offset;
            match response.status() {
                StatusCode::CREATED => return Ok((sent, offset)),
                StatusCode::CONFLICT if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(100)).await
                }
                status => bail!("resuming: {status} {}", response.text().await.unwrap_or_default()),
            }
        }
    }
}

async fn run(args: Args) -> Result<()> {
    let bin = release_binary(args.confetti_bin)?;
    // The file is a photo (a JPEG and its trailer): the photo limit is raised to let it in.
    let env = [
        ("CONFETTI_DERIVATIVE_WORKERS".to_owned(), "0".to_owned()),
        ("CONFETTI_MAX_UPLOAD_BYTES".to_owned(), (4u64 << 30).to_string()),
    ];
    let server = ChildServer::confetti(&bin, &env).await?;
    let client = Client::builder().timeout(Duration::from_secs(300)).build()?;
    let event = api::create_event(&client, &server.base, Some(1 << 50)).await?;
    let guest = api::join(&client, &server.base, &event.slug, &event.join_token, "Bench").await?;
    let target = Target { client: &client, base: &server.base, slug: &event.slug, token: &guest.token };
    let file = Bytes::from(file_of(args.mib * 1024 * 1024)?);
    let mb = file.len() as f64 / 1e6;

    // One of each first: the page cache and the connection pool warm up.
    target.one_request(&file).await?;
    target.resumable(&file).await?;
    let (mut single, mut resumable) = (Vec::new(), Vec::new());
    let (mut single_cpu, mut resumable_cpu) = (Vec::new(), Vec::new());
    let pid = server.pid();
    for _ in 0..args.rounds {
        let (started, cpu) = (Instant::now(), cpu_ms(pid)?);
        target.one_request(&file).await?;
        single.push(started.elapsed().as_secs_f64());
        single_cpu.push(cpu_ms(pid)? - cpu);
        let (started, cpu) = (Instant::now(), cpu_ms(pid)?);
        target.resumable(&file).await?;
        resumable.push(started.elapsed().as_secs_f64());
        resumable_cpu.push(cpu_ms(pid)? - cpu);
    }
    let (single, resumable) = (sorted_median(single), sorted_median(resumable));
    let (single_cpu, resumable_cpu) = (sorted_median(single_cpu), sorted_median(resumable_cpu));
    println!("file: {mb:.1} MB, {} rounds each, medians", args.rounds);
    println!("one request:      {:7.0} ms  {:6.0} MB/s", single * 1e3, mb / single);
    println!("resumable:        {:7.0} ms  {:6.0} MB/s", resumable * 1e3, mb / resumable);
    println!("ratio resumable / one request (throughput): {:.2}", single / resumable);
    println!("server CPU per upload: one request {single_cpu:.0} ms, resumable {resumable_cpu:.0} ms");

    let mut resent = Vec::new();
    for _ in 0..3 {
        let (sent, offset) = target.cut_at_half(&file).await?;
        let again = sent as f64 - file.len() as f64;
        println!(
            "cut at half: server kept {offset} of {} bytes sent before the cut; sent in all {sent} ({:.2}% of the file again)",
            file.len() / 2,
            again / file.len() as f64 * 100.0
        );
        resent.push(again / file.len() as f64 * 100.0);
    }
    println!("re-sent after a cut at half, median: {:.2}% of the file", sorted_median(resent));
    Ok(())
}

fn sorted_median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    median(&values)
}
