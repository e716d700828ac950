//! Scale-out benchmark: several instances behind haproxy, against one instance on its own.
//! A harness that prints figures, not a test; they are recorded in `docs/benchmarks.md`.
//!
//! ```text
//! cargo build --release
//! cargo run --release --example bench_scale_out -- [--uploads 64] [--rounds 3] [--skip crash,restart] ...
//! ```
//!
//! Needs `s3s-fs`, `haproxy`, `openssl` and a PostgreSQL server (`TEST_DATABASE_URL`, default
//! `postgres://postgres@127.0.0.1:5432/postgres`). Everything runs on this machine, on
//! loopback; every child process is killed at the end, on error and on Ctrl-C; every wait is
//! bounded.
//!
//! * Throughput — fresh uploads of one ~5 MB JPEG (a new `client_upload_id` each) by
//!   `--concurrency` clients (8), each client a guest of its own, against three set-ups in
//!   alternating rounds: (a) two instances on one S3 bucket (`s3s-fs`) and one PostgreSQL
//!   database behind haproxy with `deploy/haproxy.cfg` (TLS, HTTP/1.1 from this client);
//!   (a1) one of those two instances addressed directly (plain HTTP), to tell haproxy and TLS
//!   apart from S3; (b) one instance on a local directory and SQLite (the default set-up),
//!   directly. No derivative workers (`CONFETTI_DERIVATIVE_WORKERS=0`): ingest alone. MB/s
//!   (10^6 bytes), photos/s, p50/p95 latency; stored photos are removed and `sync` waits for
//!   the write-back before every run.
//! * Crash — 8 uploads of a 12 MB photo sent slowly through haproxy (~7 s per body); one
//!   instance is killed with SIGKILL while they arrive, once their multipart uploads are open. Time until haproxy takes it out, and until the bucket is
//!   clean: nothing under `tmp/`, no multipart upload left open. Measured with the survivor
//!   alone first; if not clean by `--clean-limit-s`, the killed instance is started again and
//!   the wait repeated.
//! * Rolling restart — a new pair of instances with their default derivative workers. A
//!   batch of `--restart-photos` uploads at concurrency 8 through haproxy, then waiting until
//!   every upload's status is `ready` (`GET /api/v1/uploads/{id}`): once undisturbed (the
//!   baseline), once with the first instance stopped by SIGTERM when half the batch is in and
//!   started again as soon as it has exited (a rolling restart's step). Clients retry
//!   connection errors, 502 and 503 with the same `client_upload_id`, as the page does.

#[path = "support/mod.rs"]
mod support;

#[path = "support/scale_out.rs"]
#[allow(dead_code)]
mod scale_out;

use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail, ensure};
use bytes::Bytes;
use clap::Parser;
use reqwest::multipart::{Form, Part};
use scale_out::{Cluster, S3Fs, tls_client};
use serde_json::Value;
use support::api;
use support::child::{ChildServer, release_binary};
use support::photos::jpeg_of_size;
use support::procfs::Machine;
use support::stats::{median, ms, percentile};
use uuid::Uuid;

#[derive(Parser, Debug, Clone)]
#[command(about = "Confetti scale-out benchmark (run `cargo build --release` first)")]
struct Args {
    /// The confetti binary (default: target/release/confetti of this package).
    #[arg(long)]
    confetti_bin: Option<PathBuf>,

    /// Target size of the generated JPEG, in bytes.
    #[arg(long, default_value_t = 5_000_000)]
    jpeg_bytes: usize,

    /// Size of the photo of the crash figure: past one 5 MiB part, so each arriving upload
    /// has a multipart upload open in the bucket when the kill lands (a photo within one part
    /// is sent in one PUT at its end, and a crash leaves nothing of it in the store).
    #[arg(long, default_value_t = 12_000_000)]
    crash_jpeg_bytes: usize,

    /// Concurrent clients for the throughput and the rolling restart.
    #[arg(long, default_value_t = 8)]
    concurrency: usize,

    /// Measured uploads per round and set-up.
    #[arg(long, default_value_t = 64)]
    uploads: usize,

    /// Rounds of the throughput figure (set-ups alternate within each round).
    #[arg(long, default_value_t = 3)]
    rounds: usize,

    /// Uploads in each batch of the rolling-restart figure.
    #[arg(long, default_value_t = 24)]
    restart_photos: usize,

    /// How long the crash figure waits for a clean temporary area, each time.
    #[arg(long, default_value_t = 150)]
    clean_limit_s: u64,

    /// How long the rolling-restart figure waits for every upload to be ready.
    #[arg(long, default_value_t = 300)]
    ready_limit_s: u64,

    /// Skip figures: any of throughput, crash, restart.
    #[arg(long, value_delimiter = ',')]
    skip: Vec<String>,
}

const MB: f64 = 1_000_000.0;
const FILE_NAME: &str = "IMG_0001.jpg";
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// How long one photo keeps being retried after connection errors, 502 and 503.
const RETRY_FOR: Duration = Duration::from_secs(120);

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a tokio runtime");
    let outcome = runtime.block_on(async {
        tokio::select! {
            result = bench(args) => result,
            _ = tokio::signal::ctrl_c() => Err(anyhow!("interrupted")),
        }
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench_scale_out: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Where a set-up's measured uploads go, and who sends them.
struct Target {
    name: &'static str,
    client: reqwest::Client,
    url: String,
    tokens: Vec<String>,
}

struct Run {
    /// Sorted.
    latencies: Vec<Duration>,
    wall: Duration,
}

impl Run {
    fn per_s(&self) -> f64 {
        self.latencies.len() as f64 / self.wall.as_secs_f64()
    }
    fn mb_per_s(&self, size: usize) -> f64 {
        self.per_s() * size as f64 / MB
    }
    fn p(&self, pct: f64) -> Duration {
        percentile(&self.latencies, pct)
    }
}

async fn bench(args: Args) -> Result<()> {
    let skip = |f: &str| args.skip.iter().any(|s| s.eq_ignore_ascii_case(f));
    ensure!(args.concurrency >= 1 && args.rounds >= 1 && args.restart_photos >= 2, "nothing to measure");
    let binary = release_binary(args.confetti_bin.clone())?;
    let machine = Machine::read();
    let started_at = chrono::Utc::now();
    eprintln!("machine: {} cores, {}; load average {}", machine.cores, machine.cpu, machine.loadavg);
    let jpeg = jpeg_of_size(args.jpeg_bytes)?;
    let body = jpeg.bytes.clone();
    eprintln!("JPEG: {}x{}, {} bytes", jpeg.width, jpeg.height, body.len());

    let mut report = String::new();
    let mut line = |s: String| {
        report.push_str(&s);
        report.push('\n');
    };
    line("# Confetti scale-out benchmark\n".into());
    line(format!(
        "- date: {}\n- machine: {} cores, CPU `{}`, {} MiB RAM; load average at start {}\n- JPEG: {}x{}, {} bytes\n- confetti: `{}`\n- everything (client, haproxy, s3s-fs, PostgreSQL, instances) on this machine, loopback\n",
        started_at.format("%Y-%m-%d %H:%M UTC"),
        machine.cores,
        machine.cpu,
        machine.mem_mib,
        machine.loadavg,
        jpeg.width,
        jpeg.height,
        body.len(),
        binary.display(),
    ));

    let s3 = S3Fs::start()?;

    if !skip("throughput") || !skip("crash") {
        let no_workers = [("CONFETTI_DERIVATIVE_WORKERS".to_owned(), "0".to_owned())];
        let mut cluster = Cluster::start(&binary, &s3, 2, &no_workers).await?;
        if !skip("throughput") {
            line(throughput(&args, &binary, &s3, &cluster, &body).await?);
        }
        if !skip("crash") {
            let large = jpeg_of_size(args.crash_jpeg_bytes)?.bytes;
            line(crash(&args, &s3, &mut cluster, &large).await?);
        }
    }
    if !skip("restart") {
        s3.empty_bucket()?;
        let mut cluster = Cluster::start(&binary, &s3, 2, &[]).await?;
        line(rolling_restart(&args, &mut cluster, &body).await?);
    }
    line(format!(
        "load average at end: {}; wall time {:.0} s",
        Machine::read().loadavg,
        (chrono::Utc::now() - started_at).num_milliseconds() as f64 / 1000.0
    ));
    println!("{report}");
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Throughput

async fn throughput(
    args: &Args,
    binary: &std::path::Path,
    s3: &S3Fs,
    cluster: &Cluster,
    body: &Bytes,
) -> Result<String> {
    let c = args.concurrency;
    let plain = reqwest::Client::builder().no_proxy().timeout(REQUEST_TIMEOUT).pool_max_idle_per_host(64).build()?;
    let tls = tls_client(REQUEST_TIMEOUT)?;

    // (a) and (a1) share the cluster's database and event.
    let lb = cluster.haproxy.base();
    let event = api::create_event(&tls, &lb, Some(1 << 50)).await?;
    let mut tokens = Vec::new();
    for i in 0..c {
        tokens.push(api::join(&tls, &lb, &event.slug, &event.join_token, &format!("Guest {i}")).await?.token);
    }
    let direct = format!("http://{}", cluster.instances[0].addr);
    // (b) the default set-up: SQLite and photos in the data directory.
    let single = ChildServer::confetti(binary, &[("CONFETTI_DERIVATIVE_WORKERS".to_owned(), "0".to_owned())]).await?;
    let single_event = api::create_event(&plain, &single.base, Some(1 << 50)).await?;
    let mut single_tokens = Vec::new();
    for i in 0..c {
        single_tokens.push(
            api::join(&plain, &single.base, &single_event.slug, &single_event.join_token, &format!("Guest {i}"))
                .await?
                .token,
        );
    }
    let single_photos = single.dir().join("data/blobs/originals");

    let targets = [
        Target {
            name: "(a) 2 instances, S3 + PostgreSQL, behind haproxy (TLS)",
            client: tls.clone(),
            url: format!("{lb}/api/v1/events/{}/uploads", event.slug),
            tokens: tokens.clone(),
        },
        Target {
            name: "(a1) 1 of those instances, S3 + PostgreSQL, direct",
            client: plain.clone(),
            url: format!("{direct}/api/v1/events/{}/uploads", event.slug),
            tokens,
        },
        Target {
            name: "(b) 1 instance, local directory + SQLite, direct",
            client: plain.clone(),
            url: format!("{}/api/v1/events/{}/uploads", single.base, single_event.slug),
            tokens: single_tokens,
        },
    ];
    let clean = || -> Result<()> {
        s3.empty_bucket()?;
        match std::fs::remove_dir_all(&single_photos) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
            _ => {}
        }
        let status = Command::new("sync").status().context("running sync")?;
        ensure!(status.success(), "sync failed");
        Ok(())
    };

    let mut rows = String::new();
    let mut best: Vec<Option<Run>> = targets.iter().map(|_| None).collect();
    let mut rates: Vec<Vec<f64>> = targets.iter().map(|_| Vec::new()).collect();
    for round in 1..=args.rounds {
        for (i, target) in targets.iter().enumerate() {
            clean()?;
            // Warm-up: connections (and TLS sessions) open; not measured.
            run_uploads(target, body, c, c).await?;
            let run = run_uploads(target, body, args.uploads, c).await?;
            let (mb_s, per_s, p50, p95) = (run.mb_per_s(body.len()), run.per_s(), ms(run.p(50.0)), ms(run.p(95.0)));
            eprintln!(
                "throughput round {round}: {} — {mb_s:.1} MB/s, {per_s:.1} photos/s, p50 {p50:.0} ms, p95 {p95:.0} ms",
                target.name
            );
            rows.push_str(&format!("| {round} | {} | {mb_s:.1} | {per_s:.1} | {p50:.0} | {p95:.0} |\n", target.name));
            rates[i].push(mb_s);
            if best[i].as_ref().is_none_or(|b| run.wall < b.wall) {
                best[i] = Some(run);
            }
        }
    }
    clean()?;

    let mut out = String::new();
    out.push_str(&format!(
        "## Upload throughput, concurrency {c}, {:.1} MB photos\n\n{} uploads per run after a warm-up of {c}; best of {} rounds (set-ups alternate within a round), and the median MB/s of the rounds. No derivative workers: ingest alone.\n\n",
        body.len() as f64 / MB,
        args.uploads,
        args.rounds
    ));
    out.push_str("| set-up | MB/s | photos/s | p50 ms | p95 ms | median MB/s of rounds |\n| --- | ---: | ---: | ---: | ---: | ---: |\n");
    for (i, target) in targets.iter().enumerate() {
        let run = best[i].as_ref().context("no round ran")?;
        rates[i].sort_by(f64::total_cmp);
        out.push_str(&format!(
            "| {} | **{:.1}** | {:.1} | {:.0} | {:.0} | {:.1} |\n",
            target.name,
            run.mb_per_s(body.len()),
            run.per_s(),
            ms(run.p(50.0)),
            ms(run.p(95.0)),
            median(&rates[i])
        ));
    }
    out.push_str("\nEvery round:\n\n| round | set-up | MB/s | photos/s | p50 ms | p95 ms |\n| ---: | --- | ---: | ---: | ---: | ---: |\n");
    out.push_str(&rows);
    Ok(out)
}

/// `total` fresh uploads by `concurrency` clients; every answer must be 201.
async fn run_uploads(target: &Target, body: &Bytes, total: usize, concurrency: usize) -> Result<Run> {
    ensure!(target.tokens.len() >= concurrency, "not enough guests");
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    for w in 0..concurrency {
        let (client, url, token, body, next) =
            (target.client.clone(), target.url.clone(), target.tokens[w].clone(), body.clone(), next.clone());
        workers.spawn(async move {
            let mut latencies = Vec::new();
            while next.fetch_add(1, Ordering::Relaxed) < total {
                let started = Instant::now();
                let response =
                    client.post(&url).bearer_auth(&token).multipart(form(Uuid::new_v4(), body.clone())).send().await?;
                let status = response.status();
                let answer = response.bytes().await?;
                ensure!(
                    status == 201,
                    "POST {url} → {status}: {}",
                    String::from_utf8_lossy(&answer[..answer.len().min(300)])
                );
                latencies.push(started.elapsed());
            }
            anyhow::Ok(latencies)
        });
    }
    let mut latencies = Vec::with_capacity(total);
    while let Some(joined) = workers.join_next().await {
        latencies.extend(joined.context("an upload worker panicked")??);
    }
    latencies.sort();
    Ok(Run { latencies, wall: start.elapsed() })
}

fn form(key: Uuid, body: Bytes) -> Form {
    let len = body.len() as u64;
    let file = Part::stream_with_length(reqwest::Body::from(body), len).file_name(FILE_NAME).mime_str("image/jpeg");
    Form::new().text("client_upload_id", key.to_string()).part("file", file.expect("a valid MIME type"))
}

/// The same form with the file sent in 64 KiB chunks `pause` apart, as a slow phone sends it.
fn paced_form(key: Uuid, body: Bytes, pause: Duration) -> Form {
    use futures_util::StreamExt;
    const CHUNK: usize = 64 * 1024;
    let len = body.len() as u64;
    let chunks: Vec<Bytes> =
        (0..body.len()).step_by(CHUNK).map(|i| body.slice(i..(i + CHUNK).min(body.len()))).collect();
    let stream = futures_util::stream::iter(chunks).then(move |chunk| async move {
        tokio::time::sleep(pause).await;
        Ok::<Bytes, std::io::Error>(chunk)
    });
    let file =
        Part::stream_with_length(reqwest::Body::wrap_stream(stream), len).file_name(FILE_NAME).mime_str("image/jpeg");
    Form::new().text("client_upload_id", key.to_string()).part("file", file.expect("a valid MIME type"))
}

// ---------------------------------------------------------------------------------------------
// Crash: kill -9 mid-body, then time to a clean temporary area

async fn crash(args: &Args, s3: &S3Fs, cluster: &mut Cluster, body: &Bytes) -> Result<String> {
    s3.empty_bucket()?;
    let lb = cluster.haproxy.base();
    let client = tls_client(REQUEST_TIMEOUT)?;
    let event = api::create_event(&client, &lb, Some(1 << 50)).await?;
    let url = format!("{lb}/api/v1/events/{}/uploads", event.slug);
    // Guests first, then all uploads at once: round robin then sends half of them to each
    // instance (joins interleaved with uploads would all land on one, the uploads on the other).
    let mut tokens = Vec::new();
    for i in 0..8 {
        tokens.push(api::join(&client, &lb, &event.slug, &event.join_token, &format!("Slow {i}")).await?.token);
    }
    let mut senders = tokio::task::JoinSet::new();
    for token in tokens {
        let (client, url, body) = (client.clone(), url.clone(), body.clone());
        // 64 KiB chunks 40 ms apart: about 7 s for a 12 MB body, its first part full after 3.3 s.
        senders.spawn(async move {
            let sent = client
                .post(&url)
                .bearer_auth(&token)
                .multipart(paced_form(Uuid::new_v4(), body, Duration::from_millis(40)))
                .send()
                .await;
            sent.map(|r| r.status().as_u16()).unwrap_or(0)
        });
    }
    let began = Instant::now();
    while s3.open_multipart_uploads() < 8 && began.elapsed() < Duration::from_secs(6) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(700)).await;
    let open_at_kill = s3.open_multipart_uploads();
    let killed = cluster.instances[0].name;
    cluster.instances[0].kill9();
    let killed_at = Instant::now();
    eprintln!("crash: killed {killed} with {open_at_kill} multipart uploads open");

    let mut taken_out = None;
    let mut clean_after = None;
    let limit = Duration::from_secs(args.clean_limit_s);
    let (mut open, mut temporary) = (open_at_kill, 0);
    while killed_at.elapsed() < limit {
        if taken_out.is_none() && cluster.haproxy.server_state(killed)?.0 == "DOWN" {
            taken_out = Some(killed_at.elapsed());
        }
        (open, temporary) = (s3.open_multipart_uploads(), s3.temporary_blobs());
        if open == 0 && temporary == 0 {
            clean_after = Some(killed_at.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut statuses = Vec::new();
    while let Some(status) = tokio::time::timeout(Duration::from_secs(60), senders.join_next())
        .await
        .context("the slow uploads did not end within 60 s")?
    {
        statuses.push(status.unwrap_or(0));
    }
    statuses.sort();

    let mut out = format!(
        "## A crash: kill -9 of one of two instances while 8 uploads arrive\n\n8 uploads of a {:.1} MB photo through haproxy, each body sent in 64 KiB chunks 40 ms apart (about 7 s); `{killed}` killed with SIGKILL {:.1} s in, with {open_at_kill} multipart uploads open in the bucket. Answers the senders got: {statuses:?} (0: connection error).\n\n| | seconds after the kill |\n| --- | ---: |\n",
        body.len() as f64 / MB,
        (killed_at - began).as_secs_f64(),
    );
    out.push_str(&format!(
        "| haproxy's health check takes it out (`DOWN`) | {} |\n",
        taken_out.map_or("not seen".to_owned(), |d| format!("{:.1}", d.as_secs_f64()))
    ));
    match clean_after {
        Some(d) => out.push_str(&format!(
            "| temporary area clean (no `tmp/` object, no open multipart upload), survivor alone | **{:.1}** |\n",
            d.as_secs_f64()
        )),
        None => {
            out.push_str(&format!(
                "| temporary area clean, survivor alone | **not within {} s**: {open} multipart uploads open, {temporary} objects under `tmp/` |\n",
                args.clean_limit_s
            ));
            // The killed instance comes back, as a service manager restarts it.
            cluster.restart(0).await?;
            let restarted = Instant::now();
            let mut after_restart = None;
            while restarted.elapsed() < limit {
                (open, temporary) = (s3.open_multipart_uploads(), s3.temporary_blobs());
                if open == 0 && temporary == 0 {
                    after_restart = Some(restarted.elapsed());
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            out.push_str(&match after_restart {
                Some(d) => format!("| … after the killed instance was started again | {:.1} after its restart |\n", d.as_secs_f64()),
                None => format!(
                    "| … after the killed instance was started again | **not within {} s of its restart**: {open} multipart uploads open, {temporary} objects under `tmp/` |\n",
                    args.clean_limit_s
                ),
            });
        }
    }
    eprintln!("crash: done");
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Rolling restart: SIGTERM the instance making derivatives mid-batch

struct Batch {
    /// From the first upload sent to the last one answered.
    uploads: Duration,
    /// From the last upload answered to every upload ready.
    drain: Duration,
    /// From the first upload sent to every upload ready.
    total: Duration,
    failed: usize,
    retried: usize,
    restart: Option<RestartStep>,
}

struct RestartStep {
    claimed_at_sigterm: i64,
    exit_after: Duration,
    serving_again_after: Duration,
    /// From SIGTERM to every upload ready.
    ready_after_sigterm: Duration,
}

async fn rolling_restart(args: &Args, cluster: &mut Cluster, body: &Bytes) -> Result<String> {
    let baseline = batch(args, cluster, body, false).await?;
    let rolling = batch(args, cluster, body, true).await?;
    let step = rolling.restart.as_ref().context("the restart did not happen")?;
    let mut out = format!(
        "## A rolling restart's queued photos\n\nTwo instances (each with its default derivative workers, cores − 1, and the default derivative lease of {} s), {} uploads of the {:.1} MB photo at concurrency {} through haproxy, then polling `GET /api/v1/uploads/{{id}}` until each is `ready`. In the second batch `confetti1` gets SIGTERM once half the batch is answered and is started again as soon as it has exited.\n\n",
        120,
        args.restart_photos,
        body.len() as f64 / MB,
        args.concurrency
    );
    out.push_str("| batch | uploads answered in s | last answer → all ready, s | first upload → all ready, s | retried tries | failed |\n| --- | ---: | ---: | ---: | ---: | ---: |\n");
    for (name, b) in [("undisturbed", &baseline), ("with a rolling restart of confetti1", &rolling)] {
        out.push_str(&format!(
            "| {name} | {:.1} | **{:.1}** | {:.1} | {} | {} |\n",
            b.uploads.as_secs_f64(),
            b.drain.as_secs_f64(),
            b.total.as_secs_f64(),
            b.retried,
            b.failed
        ));
    }
    out.push_str(&format!(
        "\nThe restart step: {} derivative jobs were claimed (by either instance) at SIGTERM; confetti1 exited {:.1} s after SIGTERM and, started again at once, answered `/healthz` {:.1} s after it; every upload was ready **{:.1} s** after SIGTERM.\n",
        step.claimed_at_sigterm,
        step.exit_after.as_secs_f64(),
        step.serving_again_after.as_secs_f64(),
        step.ready_after_sigterm.as_secs_f64()
    ));
    Ok(out)
}

async fn batch(args: &Args, cluster: &mut Cluster, body: &Bytes, restart: bool) -> Result<Batch> {
    let lb = cluster.haproxy.base();
    let client = tls_client(REQUEST_TIMEOUT)?;
    let event = api::create_event(&client, &lb, Some(1 << 50)).await?;
    let mut tokens = Vec::new();
    for i in 0..args.concurrency {
        tokens.push(api::join(&client, &lb, &event.slug, &event.join_token, &format!("Guest {i}")).await?.token);
    }
    let url = format!("{lb}/api/v1/events/{}/uploads", event.slug);
    let n = args.restart_photos;
    let next = Arc::new(AtomicUsize::new(0));
    let answered = Arc::new(AtomicUsize::new(0));
    let began = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    for token in tokens {
        let (client, url, body, next, answered) =
            (client.clone(), url.clone(), body.clone(), next.clone(), answered.clone());
        workers.spawn(async move {
            let mut stored = Vec::new();
            let mut retried = 0;
            while next.fetch_add(1, Ordering::Relaxed) < n {
                let key = Uuid::new_v4();
                let first_try = Instant::now();
                loop {
                    let sent = client.post(&url).bearer_auth(&token).multipart(form(key, body.clone())).send().await;
                    match sent {
                        Ok(r) if r.status().is_success() => {
                            let upload: Value = r.json().await?;
                            stored
                                .push((upload["id"].as_str().context("upload without id")?.to_owned(), token.clone()));
                            break;
                        }
                        Ok(r) if !matches!(r.status().as_u16(), 502 | 503) => {
                            bail!("an upload was answered {}: {}", r.status(), r.text().await.unwrap_or_default())
                        }
                        _ => {
                            retried += 1;
                            ensure!(first_try.elapsed() < RETRY_FOR, "an upload kept failing for {RETRY_FOR:?}");
                            tokio::time::sleep(Duration::from_millis(200)).await;
                        }
                    }
                }
                answered.fetch_add(1, Ordering::Relaxed);
            }
            anyhow::Ok((stored, retried))
        });
    }

    let mut step = None;
    if restart {
        while answered.load(Ordering::Relaxed) < n / 2 {
            ensure!(began.elapsed() < RETRY_FOR, "half the batch was not answered within {RETRY_FOR:?}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let pg = sqlx::PgPool::connect(&cluster.database.url).await?;
        let claimed: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM derivative_jobs WHERE claim IS NOT NULL").fetch_one(&pg).await?;
        pg.close().await;
        let sigterm = Instant::now();
        eprintln!("rolling restart: SIGTERM to confetti1 with {claimed} derivative jobs claimed");
        let exit_after = cluster.instances[0].terminate(Duration::from_secs(60)).await?;
        cluster.restart(0).await?;
        let serving_after = sigterm.elapsed();
        // Usually haproxy never saw it down: it was back before the next two checks failed.
        cluster.haproxy.wait_for("confetti1", true, Duration::from_secs(60)).await?;
        step = Some((sigterm, claimed, exit_after, serving_after));
        eprintln!("rolling restart: confetti1 serving again after {:.1} s", serving_after.as_secs_f64());
    }

    let mut stored = Vec::new();
    let mut retried = 0;
    while let Some(joined) = workers.join_next().await {
        let (s, r) = joined.context("an upload worker panicked")??;
        stored.extend(s);
        retried += r;
    }
    let uploads = began.elapsed();
    let last_answer = Instant::now();

    // Every upload's status, until none is `processing`.
    let limit = Duration::from_secs(args.ready_limit_s);
    let mut pending = stored;
    let mut failed = 0;
    while !pending.is_empty() {
        ensure!(
            last_answer.elapsed() < limit,
            "{} uploads not ready {limit:?} after the last was answered",
            pending.len()
        );
        let mut still = Vec::new();
        for (id, token) in pending {
            let status = match client.get(format!("{lb}/api/v1/uploads/{id}")).bearer_auth(&token).send().await {
                Ok(r) if r.status().is_success() => {
                    r.json::<Value>().await.ok().and_then(|u| u["status"].as_str().map(str::to_owned))
                }
                _ => None,
            };
            match status.as_deref() {
                Some("ready") => {}
                Some("failed") => failed += 1,
                _ => still.push((id, token)),
            }
        }
        pending = still;
        if !pending.is_empty() {
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
    let drain = last_answer.elapsed();
    let restart = step.map(|(sigterm, claimed_at_sigterm, exit_after, serving_again_after)| RestartStep {
        claimed_at_sigterm,
        exit_after,
        serving_again_after,
        ready_after_sigterm: sigterm.elapsed(),
    });
    eprintln!(
        "batch{}: uploads {:.1} s, then all ready after {:.1} s",
        if restart.is_some() { " with a rolling restart" } else { "" },
        uploads.as_secs_f64(),
        drain.as_secs_f64()
    );
    Ok(Batch { uploads, drain, total: began.elapsed(), failed, retried, restart })
}
