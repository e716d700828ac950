//! Upload benchmark: peak server memory, throughput against a bare streaming handler, and the
//! latency of an idempotent replay. A harness that prints figures, not a test; the figures
//! and the command that produced them are recorded in `docs/benchmarks.md`.
//!
//! ```text
//! cargo build --release
//! cargo run --release --example bench_upload -- [--rounds 3] [--uploads 64,256,256] [--confetti-bin PATH] ...
//! ```
//!
//! It starts `target/release/confetti serve` as a child process (fresh temp data dir, SQLite,
//! random loopback port, `--no-demo`, one event with a practically unlimited guest quota, one
//! guest per concurrent client), and this same example binary again in `--bare-server PORT DIR`
//! mode: a bare axum handler that reads the same multipart body through the same `Multipart`
//! extractor, streams the file part to a file (256 KiB buffered writes, then a rename) while
//! hashing it with SHA-256 and answers 201 — the raw limit of this machine. All traffic goes to
//! 127.0.0.1; every loop is bounded; both children are killed at the end, on error and on Ctrl-C
//! (the bare server also exits when its stdin, held by the harness, closes). Before every run
//! (figure A, and each server's turn in every round of figure B) the photos both servers stored
//! are removed and `sync` waits for the kernel's write-back, so no run pays for an earlier
//! run's dirty pages.
//!
//! * Figure A — peak RSS (`VmHWM`) of the freshly started server while 32 clients upload the
//!   same ~5 MB JPEG (256 uploads by default; the peak is reset through `/proc/<pid>/clear_refs`
//!   first), then the same against the bare server for reference; `VmRSS` before and after.
//! * Figure B — throughput (MB/s with MB = 10^6 bytes, uploads/s) at concurrency 1, 8, 32,
//!   each upload with a fresh `client_upload_id` part sent before the file part; the same
//!   against the bare server, alternating between the two servers round by round; the ratio
//!   confetti / bare of the best rounds and the median of the per-round ratios; the server's
//!   own CPU time per upload (from `/proc/<pid>/stat`), which the shared machine disturbs less.
//! * Figure C — p50/p99 latency at concurrency 1 of a fresh upload versus a replay of an
//!   already stored upload with its key in `Idempotency-Key` (the whole 5 MB body is sent
//!   anyway, as a phone retrying would), and the same replay with the key only in the part.

#[path = "support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail, ensure};
use bytes::Bytes;
use clap::Parser;
use support::api;
use support::child::{ChildServer, free_loopback_port, release_binary};
use support::photos::jpeg_of_size;
use support::procfs::{Machine, MachineCpu, ProcStatus, cpu_ms, kib_to_mib, reset_peak};
use support::stats::{mean, median, ms, percentile};
use uuid::Uuid;

#[derive(Parser, Debug, Clone)]
#[command(about = "Confetti upload benchmark (run `cargo build --release` first)")]
struct Args {
    /// The confetti binary (default: target/release/confetti of this package).
    #[arg(long)]
    confetti_bin: Option<PathBuf>,

    /// Target size of the generated JPEG, in bytes.
    #[arg(long, default_value_t = 5_000_000)]
    jpeg_bytes: usize,

    /// Concurrency levels of figure B.
    #[arg(long, value_delimiter = ',', default_value = "1,8,32")]
    concurrency: Vec<usize>,

    /// Measured uploads per round at each concurrency level of figure B (same order).
    #[arg(long, value_delimiter = ',', default_value = "64,256,256")]
    uploads: Vec<usize>,

    /// Rounds of figure B; each round measures confetti then the bare server. The best round
    /// of each is reported (the machine is shared and noisy), every round is listed.
    #[arg(long, default_value_t = 3)]
    rounds: usize,

    /// Concurrent uploads of figure A.
    #[arg(long, default_value_t = 32)]
    rss_concurrency: usize,

    /// Uploads of figure A (spread over `rss_concurrency` clients).
    #[arg(long, default_value_t = 256)]
    rss_uploads: usize,

    /// Samples of figure C, for fresh uploads and for replays each.
    #[arg(long, default_value_t = 200)]
    latency_samples: usize,

    /// Skip the figure(s): any of a, b, c.
    #[arg(long, value_delimiter = ',')]
    skip: Vec<String>,

    /// Extra environment for the confetti server only, as KEY=VALUE (repeatable): to compare
    /// settings such as glibc's `MALLOC_MMAP_THRESHOLD_` against the same bare server.
    #[arg(long = "confetti-env", value_parser = parse_env)]
    confetti_env: Vec<(String, String)>,

    /// Also write the generated JPEG to this file (to replay by hand with curl).
    #[arg(long)]
    save_jpeg: Option<PathBuf>,

    /// Internal: run as the bare reference server on 127.0.0.1:PORT, storing files in DIR.
    #[arg(long, num_args = 2, value_names = ["PORT", "DIR"], hide = true)]
    bare_server: Option<Vec<String>>,
}

fn parse_env(s: &str) -> Result<(String, String), String> {
    s.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())).ok_or_else(|| format!("{s:?} is not KEY=VALUE"))
}

const FILE_NAME: &str = "IMG_0001.jpg";
const MB: f64 = 1_000_000.0;
/// Requests that get no answer in this long fail the benchmark instead of hanging it.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(bare) = &args.bare_server {
        return match bare::run(&bare[0], Path::new(&bare[1])) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("bare server: {e:#}");
                ExitCode::FAILURE
            }
        };
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a tokio runtime");
    let outcome = runtime.block_on(async {
        tokio::select! {
            result = bench(args) => result,
            _ = tokio::signal::ctrl_c() => Err(anyhow!("interrupted")),
        }
    });
    // `bench` dropped its children (killed, reaped) and temp dirs by now.
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench_upload: {e:#}");
            ExitCode::FAILURE
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The benchmark

async fn bench(args: Args) -> Result<()> {
    ensure!(args.concurrency.len() == args.uploads.len(), "--concurrency and --uploads need as many entries each");
    ensure!(args.concurrency.iter().all(|&c| c >= 1) && args.rounds >= 1, "concurrency and rounds must be at least 1");
    let skip = |f: &str| args.skip.iter().any(|s| s.eq_ignore_ascii_case(f));
    let confetti_bin = release_binary(args.confetti_bin.clone())?;
    let machine = Machine::read();
    let started_at = chrono::Utc::now();
    eprintln!("machine: {} cores, {}; load average {}", machine.cores, machine.cpu, machine.loadavg);

    let t = Instant::now();
    let jpeg = jpeg_of_size(args.jpeg_bytes)?;
    eprintln!(
        "JPEG: {}x{}, {} bytes ({:.2} MB), quality 92, generated in {:.1} s",
        jpeg.width,
        jpeg.height,
        jpeg.bytes.len(),
        jpeg.bytes.len() as f64 / MB,
        t.elapsed().as_secs_f64()
    );

    if let Some(path) = &args.save_jpeg {
        std::fs::write(path, &jpeg.bytes).with_context(|| format!("writing {}", path.display()))?;
    }

    let max_workers = args.concurrency.iter().copied().chain([args.rss_concurrency, 1]).max().unwrap_or(1);

    // Ingest alone, as the bare handler does: derivatives are measured on their own.
    let mut confetti_env = vec![("CONFETTI_DERIVATIVE_WORKERS".to_owned(), "0".to_owned())];
    confetti_env.extend(args.confetti_env.iter().cloned());
    // Children are killed and reaped when these guards drop, before their temp dirs go.
    let confetti = ChildServer::confetti(&confetti_bin, &confetti_env).await?;
    let bare = start_bare().await?;
    let client = reqwest::Client::builder().no_proxy().timeout(REQUEST_TIMEOUT).pool_max_idle_per_host(256).build()?;
    let event = api::create_event(&client, &confetti.base, Some(1 << 50)).await?;
    let mut guest_tokens = Vec::with_capacity(max_workers);
    for i in 0..max_workers {
        guest_tokens.push(
            api::join(&client, &confetti.base, &event.slug, &event.join_token, &format!("Bench guest {i}"))
                .await?
                .token,
        );
    }
    let confetti_target = Target {
        name: "confetti",
        pid: confetti.pid(),
        url: format!("{}/api/v1/events/{}/uploads", confetti.base, event.slug),
        tokens: guest_tokens.clone(),
        stored: confetti.dir().join("data/blobs/originals"),
    };
    let bare_target = Target {
        name: "bare",
        pid: bare.pid(),
        url: format!("{}/api/v1/events/{}/uploads", bare.base, event.slug),
        tokens: guest_tokens.clone(),
        stored: bare.dir().join(BARE_FILES),
    };

    let mut report = String::new();
    let line = |report: &mut String, s: String| {
        report.push_str(&s);
        report.push('\n');
    };
    line(&mut report, "# Confetti upload benchmark\n".into());
    line(
        &mut report,
        format!(
            "- date: {}\n- machine: {} cores (`nproc`), CPU `{}`, {} MiB RAM; load average at start {}\n- JPEG: {}x{}, {} bytes, quality 92\n- confetti: `{}`, built {}; SQLite and blobs in a fresh temp dir; loopback\n",
            started_at.format("%Y-%m-%d %H:%M UTC"),
            machine.cores,
            machine.cpu,
            machine.mem_mib,
            machine.loadavg,
            jpeg.width,
            jpeg.height,
            jpeg.bytes.len(),
            confetti_bin.display(),
            modified(&confetti_bin)
        ),
    );
    if !args.confetti_env.is_empty() {
        let env: Vec<String> = args.confetti_env.iter().map(|(k, v)| format!("`{k}={v}`")).collect();
        line(&mut report, format!("- confetti's extra environment: {}\n", env.join(" ")));
    }

    let body = jpeg.bytes.clone();

    // Figure A: first, on a fresh server, so nothing earlier inflates the peak.
    if !skip("a") {
        eprintln!("figure A: {} uploads at concurrency {}", args.rss_uploads, args.rss_concurrency);
        line(&mut report, "## Figure A — peak server RSS\n".into());
        line(
            &mut report,
            format!(
                "{} uploads of the {:.2} MB JPEG by {} concurrent clients, on a freshly started server; then the \
                 same against the bare server, which reads the body through the same axum `Multipart` (multer).\n",
                args.rss_uploads,
                body.len() as f64 / MB,
                args.rss_concurrency,
            ),
        );
        line(
            &mut report,
            "| server | VmRSS before (idle) | **VmHWM (peak RSS) during the run** | VmRSS after | run |".into(),
        );
        line(&mut report, "| --- | ---: | ---: | ---: | ---: |".into());
        let mut confetti_peak_kib = 0;
        for target in [&confetti_target, &bare_target] {
            clean_disk(&[&confetti_target, &bare_target])?;
            let before = ProcStatus::of(target.pid)?;
            let reset = reset_peak(target.pid);
            let run = run_uploads(&client, target, &body, args.rss_uploads, args.rss_concurrency).await?;
            let after = ProcStatus::of(target.pid)?;
            if target.name == "confetti" {
                confetti_peak_kib = after.hwm_kib;
            }
            eprintln!(
                "figure A: {:<8} peak RSS {:.1} MiB ({:.1} s, {:.1} MB/s)",
                target.name,
                kib_to_mib(after.hwm_kib),
                run.wall.as_secs_f64(),
                run.mb_per_s(body.len())
            );
            line(
                &mut report,
                format!(
                    "| {} | {:.1} MiB | **{:.1} MiB** ({:.1} MB){} | {:.1} MiB | {:.1} s, {:.1} MB/s |",
                    target.name,
                    kib_to_mib(before.rss_kib),
                    kib_to_mib(after.hwm_kib),
                    after.hwm_kib as f64 * 1024.0 / MB,
                    if reset { "" } else { ", peak not reset: since start" },
                    kib_to_mib(after.rss_kib),
                    run.wall.as_secs_f64(),
                    run.mb_per_s(body.len())
                ),
            );
        }
        let verdict = if (confetti_peak_kib as f64 * 1024.0) < 100.0 * MB { "met" } else { "MISSED" };
        line(&mut report, format!("\nTarget: confetti's peak under 100 MB — {verdict}.\n"));
    }

    // Figure B: alternating servers round by round, so drift in background load hits both.
    if !skip("b") {
        line(&mut report, "## Figure B — upload throughput on loopback\n".into());
        line(
            &mut report,
            "Best round of each server (rounds alternate confetti, bare); MB = 10^6 bytes; latency per request \
             (send to full answer). The ratio of each round pairs the two adjacent runs; server CPU is \
             user + system time of the server process per upload, the least over the rounds.\n"
                .into(),
        );
        line(
            &mut report,
            "| concurrency | uploads | confetti MB/s | confetti uploads/s | confetti p50 / p99 ms | bare MB/s | bare uploads/s | bare p50 / p99 ms | ratio confetti/bare (best rounds) | ratio, median of rounds | server CPU ms/upload, least: confetti / bare |".into(),
        );
        line(&mut report, "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |".into());
        let mut all_rounds = String::new();
        let mut ratio_at_8 = None;
        for (&c, &n) in args.concurrency.iter().zip(&args.uploads) {
            let mut best: [Option<Run>; 2] = [None, None];
            let mut least_cpu = [f64::INFINITY; 2];
            let mut round_ratios = Vec::with_capacity(args.rounds);
            for round in 1..=args.rounds {
                let mut walls = [0.0f64; 2];
                for (i, target) in [&confetti_target, &bare_target].into_iter().enumerate() {
                    clean_disk(&[&confetti_target, &bare_target])?;
                    // Warm-up: one upload per client, connections open; not measured.
                    reset_peak(target.pid);
                    run_uploads(&client, target, &body, c, c).await?;
                    let cpu_before = cpu_ms(target.pid)?;
                    let busy_before = MachineCpu::read();
                    let run = run_uploads(&client, target, &body, n, c).await?;
                    let server_cpu = (cpu_ms(target.pid)? - cpu_before) / n as f64;
                    let machine_busy = MachineCpu::read().busy_since(&busy_before);
                    let peak = ProcStatus::of(target.pid)?.hwm_kib;
                    let (name, mb_s, per_s) = (target.name, run.mb_per_s(body.len()), run.per_s());
                    let (p50, p99) = (ms(run.p(50.0)), ms(run.p(99.0)));
                    let (peak_mib, busy_pct) = (kib_to_mib(peak), machine_busy * 100.0);
                    eprintln!(
                        "figure B: c={c} round {round} {name:<8} {mb_s:7.1} MB/s {per_s:6.1} uploads/s p50 {p50:.1} ms \
                         p99 {p99:.1} ms; server CPU {server_cpu:.1} ms/upload; peak RSS {peak_mib:.1} MiB; machine busy \
                         {busy_pct:.0}%"
                    );
                    all_rounds.push_str(&format!(
                        "| {c} | {round} | {name} | {mb_s:.1} | {per_s:.1} | {p50:.1} / {p99:.1} | {server_cpu:.1} | \
                         {peak_mib:.1} | {busy_pct:.0}% |\n"
                    ));
                    least_cpu[i] = least_cpu[i].min(server_cpu);
                    walls[i] = run.wall.as_secs_f64();
                    if best[i].as_ref().is_none_or(|b| run.wall < b.wall) {
                        best[i] = Some(run);
                    }
                }
                round_ratios.push(walls[1] / walls[0]);
            }
            round_ratios.sort_by(f64::total_cmp);
            let median_ratio = median(&round_ratios);
            let [Some(cf), Some(bs)] = best else { unreachable!("at least one round ran") };
            let ratio = bs.wall.as_secs_f64() / cf.wall.as_secs_f64();
            if c == 8 {
                ratio_at_8 = Some((ratio, median_ratio));
            }
            line(
                &mut report,
                format!(
                    "| {c} | {n} | {:.1} | {:.1} | {:.1} / {:.1} | {:.1} | {:.1} | {:.1} / {:.1} | **{:.2}** | {:.2} | {:.1} / {:.1} |",
                    cf.mb_per_s(body.len()),
                    cf.per_s(),
                    ms(cf.p(50.0)),
                    ms(cf.p(99.0)),
                    bs.mb_per_s(body.len()),
                    bs.per_s(),
                    ms(bs.p(50.0)),
                    ms(bs.p(99.0)),
                    ratio,
                    median_ratio,
                    least_cpu[0],
                    least_cpu[1]
                ),
            );
        }
        if let Some((best, median)) = ratio_at_8 {
            line(
                &mut report,
                format!(
                    "\nTarget at concurrency 8: ratio at least 0.80 — {} (best rounds {best:.2}, median of rounds {median:.2}).\n",
                    if best >= 0.8 { "met" } else { "MISSED" }
                ),
            );
        } else {
            line(&mut report, String::new());
        }
        line(&mut report, "Every round:\n".into());
        line(
            &mut report,
            "Server CPU: user + system time of the server process (all its threads) per measured upload. \
             Peak RSS: `VmHWM` over the warm-up and the measured run. Machine busy: share of all cores \
             not idle during the measured run (this harness, both servers and whatever else runs).\n"
                .into(),
        );
        line(
            &mut report,
            "| concurrency | round | server | MB/s | uploads/s | p50 / p99 ms | server CPU ms/upload | peak RSS MiB | machine busy |"
                .into(),
        );
        line(&mut report, "| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |".into());
        report.push_str(&all_rounds);
        line(&mut report, String::new());
    }

    // Figure C: fresh upload vs replay, interleaved at concurrency 1.
    if !skip("c") {
        let n = args.latency_samples;
        eprintln!("figure C: {n} fresh uploads and {n} replays, interleaved, concurrency 1");
        let token = &confetti_target.tokens[0];
        // Warm-up, not measured.
        for _ in 0..3 {
            let key = Uuid::new_v4();
            upload_once(&client, &confetti_target.url, token, &body, Some(key), Some(key)).await?;
            upload_once(&client, &confetti_target.url, token, &body, Some(key), Some(key)).await?;
        }
        let mut fresh = Vec::with_capacity(n);
        let mut replay = Vec::with_capacity(n);
        let mut replay_part = Vec::with_capacity(n);
        for _ in 0..n {
            let key = Uuid::new_v4();
            let (status, replayed, d) =
                upload_once(&client, &confetti_target.url, token, &body, Some(key), Some(key)).await?;
            ensure!(status == 201 && !replayed, "a fresh upload was answered {status}");
            fresh.push(d);
            let (status, replayed, d) =
                upload_once(&client, &confetti_target.url, token, &body, Some(key), Some(key)).await?;
            ensure!(status == 200 && replayed, "a replay was answered {status} (Idempotent-Replayed: {replayed})");
            replay.push(d);
            // The same replay with the key only in the `client_upload_id` part (before the file).
            let (status, replayed, d) =
                upload_once(&client, &confetti_target.url, token, &body, Some(key), None).await?;
            ensure!(
                status == 200 && replayed,
                "a replay (key in the part) was answered {status} (Idempotent-Replayed: {replayed})"
            );
            replay_part.push(d);
        }
        let fresh = Run::new(fresh, Duration::ZERO);
        let replay = Run::new(replay, Duration::ZERO);
        let replay_part = Run::new(replay_part, Duration::ZERO);
        line(&mut report, "## Figure C — replay versus fresh upload, concurrency 1\n".into());
        line(
            &mut report,
            format!(
                "{n} samples each, interleaved (fresh, replay, replay, fresh, …); the fresh upload and the first replay carry the key in `Idempotency-Key` and in a `client_upload_id` part before the file; the last row is the same replay without the header. Every request sends the whole {:.2} MB body.\n",
                body.len() as f64 / MB
            ),
        );
        line(&mut report, "| request | answer | p50 ms | p99 ms | mean ms |".into());
        line(&mut report, "| --- | --- | ---: | ---: | ---: |".into());
        for (name, answer, run) in [
            ("fresh upload (new key, header and part)", "201", &fresh),
            ("**replay, key in `Idempotency-Key`** (and part)", "200, Idempotent-Replayed", &replay),
            ("replay, key only in the part", "200, Idempotent-Replayed", &replay_part),
        ] {
            line(
                &mut report,
                format!(
                    "| {name} | {answer} | {:.1} | {:.1} | {:.1} |",
                    ms(run.p(50.0)),
                    ms(run.p(99.0)),
                    ms(run.mean())
                ),
            );
        }
        line(&mut report, String::new());
    }

    // Whole-run peaks, for context.
    let confetti_end = ProcStatus::of(confetti.pid())?;
    let bare_end = ProcStatus::of(bare.pid())?;
    line(&mut report, "## Peaks over the whole run\n".into());
    line(&mut report, "| process | VmHWM | VmRSS at end |".into());
    line(&mut report, "| --- | ---: | ---: |".into());
    for (name, s) in [("confetti", &confetti_end), ("bare", &bare_end)] {
        line(&mut report, format!("| {name} | {:.1} MiB | {:.1} MiB |", kib_to_mib(s.hwm_kib), kib_to_mib(s.rss_kib)));
    }
    line(
        &mut report,
        format!(
            "\nload average at end: {}; wall time {:.0} s",
            Machine::read().loadavg,
            (chrono::Utc::now() - started_at).num_milliseconds() as f64 / 1000.0
        ),
    );

    println!("{report}");
    drop(bare);
    drop(confetti);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Driving uploads

struct Target {
    name: &'static str,
    /// The server's process id, for its memory and CPU time.
    pid: u32,
    url: String,
    /// One guest per concurrent client.
    tokens: Vec<String>,
    /// Where the server keeps the photos it stored; emptied before every run.
    stored: PathBuf,
}

struct Run {
    /// Sorted.
    latencies: Vec<Duration>,
    wall: Duration,
}

impl Run {
    fn new(mut latencies: Vec<Duration>, wall: Duration) -> Self {
        latencies.sort();
        Self { latencies, wall }
    }
    fn per_s(&self) -> f64 {
        self.latencies.len() as f64 / self.wall.as_secs_f64()
    }
    fn mb_per_s(&self, size: usize) -> f64 {
        self.per_s() * size as f64 / MB
    }
    /// Nearest-rank percentile.
    fn p(&self, pct: f64) -> Duration {
        percentile(&self.latencies, pct)
    }
    fn mean(&self) -> Duration {
        mean(&self.latencies)
    }
}

/// `total` fresh uploads by `concurrency` clients, each with a new `client_upload_id` part
/// before the file part; every answer must be 201.
async fn run_uploads(
    client: &reqwest::Client,
    target: &Target,
    body: &Bytes,
    total: usize,
    concurrency: usize,
) -> Result<Run> {
    ensure!(target.tokens.len() >= concurrency, "not enough guests for concurrency {concurrency}");
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    for w in 0..concurrency {
        let client = client.clone();
        let url = target.url.clone();
        let token = target.tokens[w].clone();
        let body = body.clone();
        let next = next.clone();
        workers.spawn(async move {
            let mut latencies = Vec::new();
            while next.fetch_add(1, Ordering::Relaxed) < total {
                let (status, _, d) = upload_once(&client, &url, &token, &body, Some(Uuid::new_v4()), None).await?;
                ensure!(status == 201, "an upload to {url} was answered {status}");
                latencies.push(d);
            }
            anyhow::Ok(latencies)
        });
    }
    let mut latencies = Vec::with_capacity(total);
    while let Some(joined) = workers.join_next().await {
        latencies.extend(joined.context("an upload worker panicked")??);
    }
    Ok(Run::new(latencies, start.elapsed()))
}

/// One upload; returns the status, whether it was marked as a replay, and its latency
/// (from sending to having read the whole answer).
async fn upload_once(
    client: &reqwest::Client,
    url: &str,
    token: &str,
    body: &Bytes,
    part_key: Option<Uuid>,
    header_key: Option<Uuid>,
) -> Result<(u16, bool, Duration)> {
    use reqwest::multipart::{Form, Part};
    let mut form = Form::new();
    if let Some(key) = part_key {
        form = form.text("client_upload_id", key.to_string());
    }
    let file = Part::stream_with_length(reqwest::Body::from(body.clone()), body.len() as u64)
        .file_name(FILE_NAME)
        .mime_str("image/jpeg")?;
    form = form.part("file", file);
    let mut request = client.post(url).bearer_auth(token).multipart(form);
    if let Some(key) = header_key {
        request = request.header("Idempotency-Key", key.to_string());
    }
    let start = Instant::now();
    let response = request.send().await.with_context(|| format!("POST {url}"))?;
    let status = response.status().as_u16();
    let replayed = response.headers().get("idempotent-replayed").is_some_and(|v| v == "true");
    let answer = response.bytes().await?;
    let elapsed = start.elapsed();
    if !(200..300).contains(&status) {
        bail!("POST {url} → {status}: {}", String::from_utf8_lossy(&answer[..answer.len().min(500)]));
    }
    Ok((status, replayed, elapsed))
}

// ---------------------------------------------------------------------------------------------
// Child processes

/// Where the bare server keeps the files it stored, below its temp directory.
const BARE_FILES: &str = "files";

/// This same program again as the bare reference server (see `bare::run`), holding its stdin
/// open: it exits when that closes, should this process die without killing it.
async fn start_bare() -> Result<ChildServer> {
    let dir = tempfile::Builder::new().prefix("bare-bench-").tempdir()?;
    let addr = free_loopback_port()?;
    let files = dir.path().join(BARE_FILES);
    std::fs::create_dir_all(&files)?;
    let mut command = Command::new(std::env::current_exe()?);
    command.arg("--bare-server").arg(addr.port().to_string()).arg(&files).stdin(Stdio::piped());
    ChildServer::spawn("bare", command, addr, dir).await
}

/// Removes the photos both servers stored and waits until the kernel has written back
/// what is dirty, so that every run starts from the same page cache: otherwise the gigabytes
/// written by earlier runs are flushed during later ones, slowing whichever server runs then.
fn clean_disk(targets: &[&Target]) -> Result<()> {
    for target in targets {
        match std::fs::remove_dir_all(&target.stored) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(e).with_context(|| format!("emptying {}", target.stored.display()));
            }
            _ => std::fs::create_dir_all(&target.stored)?,
        }
    }
    let status = Command::new("sync").status().context("running sync")?;
    ensure!(status.success(), "sync failed: {status}");
    Ok(())
}

/// When a file was last modified, in UTC.
fn modified(path: &Path) -> String {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .map(|t| chrono::DateTime::<chrono::Utc>::from(t).format("%Y-%m-%d %H:%M:%S UTC").to_string())
        .unwrap_or_else(|_| "at an unknown time".into())
}

// ---------------------------------------------------------------------------------------------
// The bare reference server

mod bare {
    use std::path::{Path, PathBuf};
    use std::sync::Arc;

    use anyhow::{Context, Result};
    use axum::Router;
    use axum::extract::{DefaultBodyLimit, Multipart, State};
    use axum::http::StatusCode;
    use axum::response::{IntoResponse, Response};
    use axum::routing::{get, post};
    use sha2::{Digest, Sha256};
    use tokio::io::AsyncWriteExt;
    use uuid::Uuid;

    /// Serves `POST /api/v1/events/{slug}/uploads` (any slug, no auth) on 127.0.0.1:`port`:
    /// reads the multipart body in order, streams the `file` part through a 256 KiB buffer to
    /// `DIR/<id>.part` while hashing it, renames it to `DIR/<id>` and answers 201. The same
    /// runtime configuration as confetti's (`#[tokio::main]`: one worker per core).
    pub fn run(port: &str, dir: &Path) -> Result<()> {
        let port: u16 = port.parse().context("PORT")?;
        // Exit when the harness goes away (its end of our stdin closes).
        std::thread::spawn(|| {
            let mut sink = [0u8; 64];
            let mut stdin = std::io::stdin();
            while matches!(std::io::Read::read(&mut stdin, &mut sink), Ok(n) if n > 0) {}
            std::process::exit(0);
        });
        let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
        let dir = Arc::new(dir.to_path_buf());
        runtime.block_on(async move {
            let app = Router::new()
                .route("/healthz", get(|| async { "ok" }))
                .route("/api/v1/events/{slug}/uploads", post(upload).layer(DefaultBodyLimit::disable()))
                .with_state(dir);
            let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
            axum::serve(listener, app).await?;
            anyhow::Ok(())
        })
    }

    async fn upload(State(dir): State<Arc<PathBuf>>, multipart: Multipart) -> Response {
        match store(&dir, multipart).await {
            Ok(body) => (StatusCode::CREATED, axum::Json(body)).into_response(),
            Err(e) => (StatusCode::BAD_REQUEST, format!("{e:#}")).into_response(),
        }
    }

    async fn store(dir: &Path, mut multipart: Multipart) -> Result<serde_json::Value> {
        let mut key = None;
        let mut stored = None;
        while let Some(mut field) = multipart.next_field().await? {
            match field.name().unwrap_or_default() {
                "client_upload_id" => key = Some(Uuid::try_parse(&field.text().await?)?),
                "file" => {
                    let id = Uuid::now_v7();
                    let part = dir.join(format!("{id}.part"));
                    let mut file =
                        tokio::io::BufWriter::with_capacity(256 * 1024, tokio::fs::File::create(&part).await?);
                    let mut hasher = Sha256::new();
                    let mut bytes = 0u64;
                    while let Some(chunk) = field.chunk().await? {
                        bytes += chunk.len() as u64;
                        hasher.update(&chunk);
                        file.write_all(&chunk).await?;
                    }
                    file.flush().await?;
                    drop(file);
                    tokio::fs::rename(&part, dir.join(id.to_string())).await?;
                    stored = Some((id, bytes, hex::encode(hasher.finalize())));
                }
                _ => while field.chunk().await?.is_some() {},
            }
        }
        let (id, bytes, sha256) = stored.context("no file part")?;
        Ok(serde_json::json!({
            "id": id, "client_upload_id": key, "bytes": bytes, "sha256": sha256,
        }))
    }
}
