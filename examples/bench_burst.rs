//! The wedding burst: the moment after a ceremony, as a load test. A harness that prints figures
//! and checks invariants, not a test; its figures go into `docs/benchmarks.md`.
//!
//! ```text
//! cargo build --release --examples
//! cargo run --release --example bench_burst -- [--setups sqlite,postgres,cluster] [--guests 300] [--kill] [--capacity]
//! ```
//!
//! Per set-up, against a fresh server (release binary, default settings):
//! * `--guests` guests join within `--join-window-s`, each from an address of their own (the
//!   join budget is per address; a venue's phones are many), and send `--photos` photos of
//!   about 2.5 MB one after another, each under its own `client_upload_id`. `--cut-percent` of
//!   the uploads are first cut off mid-body and sent again with the same key; `--resend-percent`
//!   are sent again after their success (a lost answer) and must be replays of the same upload.
//! * Every guest polls the gallery every `--poll-s` and fetches the thumbs it has not seen;
//!   the first `--listeners` guests hold the live stream.
//! * Figures: stored / sent, upload p50 / p99, listing p99, thumb fetch p50 / p99, time from
//!   the last upload's answer until every photo was announced `ready` on the live stream (thumbs
//!   first: once its thumb exists), until every derivative (previews, AVIF thumbs) was made (the
//!   instances' `/metrics` counters; "—" when an instance was killed), and stored → announced
//!   p50 / p99 (the first listener to hear of each photo).
//! * Invariants: one upload per key and no other, each guest's `used_bytes` and the event's
//!   equal to what they stored, every upload `ready`; on S3 nothing under `tmp/` and no
//!   multipart upload left open.
//!
//! * `--capacity` instead: every guest joins first, then all send at once, uploads only (no
//!   cuts, re-sends, polls or listeners), against each set-up and against the bare reference
//!   (`bench_upload --bare-server`: the same multipart body streamed to a file and hashed, no
//!   database) in the same run; photos a second and the ratio to the bare reference.
//!
//! Set-ups: `sqlite` (one instance, local directory), `postgres` (one instance, a scratch
//! database on `TEST_DATABASE_URL`, local directory), `cluster` (two instances on PostgreSQL
//! and `s3s-fs` behind haproxy with TLS; `--kill` kills one with SIGKILL at the peak, and
//! clients retry as the page does). Joins go to an instance directly with `X-Forwarded-For`
//! (the instances trust 127.0.0.1 as their proxy): haproxy would make every guest 127.0.0.1.

#[path = "support/mod.rs"]
mod support;

#[path = "support/scale_out.rs"]
#[allow(dead_code)]
mod scale_out;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail, ensure};
use bytes::Bytes;
use clap::Parser;
use futures_util::StreamExt;
use reqwest::multipart::{Form, Part};
use serde_json::{Value, json};
use support::child::{ChildServer, release_binary};
use support::stats::{ms, percentile};
use uuid::Uuid;

#[derive(Parser, Debug, Clone)]
#[command(about = "Confetti's wedding-burst load test (run `cargo build --release` first)")]
struct Args {
    #[arg(long)]
    confetti_bin: Option<PathBuf>,
    /// Any of sqlite, postgres, cluster.
    #[arg(long, value_delimiter = ',', default_value = "sqlite,postgres,cluster")]
    setups: Vec<String>,
    #[arg(long, default_value_t = 300)]
    guests: usize,
    #[arg(long, default_value_t = 3)]
    photos: usize,
    #[arg(long, default_value_t = 2_500_000)]
    jpeg_bytes: usize,
    #[arg(long, default_value_t = 20)]
    join_window_s: u64,
    #[arg(long, default_value_t = 10)]
    cut_percent: u64,
    #[arg(long, default_value_t = 5)]
    resend_percent: u64,
    #[arg(long, default_value_t = 5)]
    poll_s: u64,
    #[arg(long, default_value_t = 100)]
    listeners: usize,
    /// Kill one of the cluster's instances (SIGKILL) when half the uploads are in.
    #[arg(long)]
    kill: bool,
    /// All guests send at once, uploads only, against each set-up and the bare reference.
    #[arg(long)]
    capacity: bool,
    /// How long to wait for every photo to be announced after the last upload.
    #[arg(long, default_value_t = 600)]
    ready_limit_s: u64,
}

/// What every guest, listener and poller records.
#[derive(Default)]
struct Record {
    /// Key → (upload id, bytes, when its first 201 arrived, guest index).
    stored: HashMap<Uuid, (String, u64, Instant, usize)>,
    upload_ms: Vec<Duration>,
    list_ms: Vec<Duration>,
    thumb_ms: Vec<Duration>,
    /// Upload id → when a listener first heard of it.
    announced: HashMap<String, Instant>,
    sent: usize,
    replays_wrong: usize,
    errors: Vec<String>,
}

/// A server set-up: where guests send (through the balancer) and where they join.
struct Setup {
    base: String,
    join_bases: Vec<String>,
    client: reqwest::Client,
    servers: Vec<ChildServer>,
    cluster: Option<scale_out::Cluster>,
    s3: Option<scale_out::S3Fs>,
    _database: Option<scale_out::ScratchDatabase>,
}

impl Setup {
    /// One instance, addressed directly.
    fn one(server: ChildServer, client: reqwest::Client, database: Option<scale_out::ScratchDatabase>) -> Self {
        Setup {
            base: server.base.clone(),
            join_bases: vec![server.base.clone()],
            client,
            servers: vec![server],
            cluster: None,
            s3: None,
            _database: database,
        }
    }
}

fn main() -> Result<()> {
    let args = Args::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        let bin = release_binary(args.confetti_bin.clone())?;
        let photos = (0..args.photos)
            .map(|i| support::photos::jpeg_of_size(args.jpeg_bytes + i * 20_000).map(|j| j.bytes))
            .collect::<Result<Vec<Bytes>>>()?;
        let machine = support::procfs::Machine::read();
        println!(
            "machine: {} cores, {}; load average {}; {} guests × {} photos of about {:.1} MB",
            machine.cores,
            machine.cpu,
            machine.loadavg,
            args.guests,
            args.photos,
            args.jpeg_bytes as f64 / 1e6
        );
        if args.capacity {
            return capacity_runs(&args, &bin, &photos).await;
        }
        println!(
            "\n| set-up | stored / sent | upload p50 / p99 | list p99 | thumb p50 / p99 | last upload → all `ready` | last upload → all derivatives | stored → shown p50 / p99 |"
        );
        println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
        for name in &args.setups {
            let setup = start(name, &bin).await?;
            let outcome = burst(&args, &setup, &photos).await;
            match outcome {
                Ok(line) => println!("| {name} | {line}"),
                Err(e) => println!("| {name} | FAILED: {e:#} |"),
            }
            drop(setup);
        }
        Ok(())
    })
}

async fn start(name: &str, bin: &std::path::Path) -> Result<Setup> {
    let trust = [("CONFETTI_TRUSTED_PROXY".to_owned(), "127.0.0.1".to_owned())];
    let plain =
        reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(120)).pool_max_idle_per_host(64).build()?;
    match name {
        "sqlite" => Ok(Setup::one(ChildServer::confetti(bin, &trust).await?, plain, None)),
        "postgres" => {
            let database = scale_out::ScratchDatabase::create().await?;
            let env = [trust[0].clone(), ("DATABASE_URL".to_owned(), database.url.clone())];
            Ok(Setup::one(ChildServer::confetti(bin, &env).await?, plain, Some(database)))
        }
        "cluster" => {
            let s3 = scale_out::S3Fs::start()?;
            let cluster = scale_out::Cluster::start(bin, &s3, 2, &[]).await?;
            Ok(Setup {
                base: cluster.haproxy.base(),
                join_bases: cluster.instances.iter().map(|i| format!("http://{}", i.addr)).collect(),
                client: scale_out::tls_client(Duration::from_secs(120))?,
                servers: Vec::new(),
                cluster: Some(cluster),
                s3: Some(s3),
                _database: None,
            })
        }
        other => bail!("unknown set-up {other} (sqlite, postgres, cluster)"),
    }
}

/// `--capacity`: the bare reference first, then each set-up, one line each.
async fn capacity_runs(args: &Args, bin: &std::path::Path, photos: &[Bytes]) -> Result<()> {
    println!(
        "\n| set-up | stored / sent | all sent in | photos / s | MB / s | upload p50 / p99 | against the bare reference |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    let bare = start_bare().await?;
    let plain = reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(120)).build()?;
    let reference = capacity(args, &plain, &bare.base, None, photos).await?;
    println!("| bare reference | {} | — |", reference.line());
    drop(bare);
    for name in &args.setups {
        let setup = start(name, bin).await?;
        match capacity(args, &setup.client, &setup.base, Some(&setup.join_bases), photos).await {
            Ok(run) => println!("| {name} | {} | {:.2}× |", run.line(), run.per_second() / reference.per_second()),
            Err(e) => println!("| {name} | FAILED: {e:#} |"),
        }
        drop(setup);
    }
    Ok(())
}

/// The bare reference server: `bench_upload --bare-server`, the example built beside this one.
async fn start_bare() -> Result<ChildServer> {
    let exe = std::env::current_exe()?;
    let bench_upload = exe.with_file_name("bench_upload");
    ensure!(bench_upload.is_file(), "{} is missing: cargo build --release --examples", bench_upload.display());
    let dir = tempfile::Builder::new().prefix("bare-burst-").tempdir()?;
    let addr = support::child::free_loopback_port()?;
    let files = dir.path().join("files");
    std::fs::create_dir_all(&files)?;
    let mut command = std::process::Command::new(bench_upload);
    command.arg("--bare-server").arg(addr.port().to_string()).arg(&files).stdin(std::process::Stdio::piped());
    ChildServer::spawn("bare", command, addr, dir).await
}

/// One capacity run's figures.
struct Capacity {
    stored: usize,
    sent: usize,
    bytes: u64,
    took: Duration,
    upload_ms: Vec<Duration>,
}

impl Capacity {
    fn per_second(&self) -> f64 {
        self.stored as f64 / self.took.as_secs_f64()
    }

    fn line(&self) -> String {
        let mut up = self.upload_ms.clone();
        up.sort();
        format!(
            "{} / {} | {:.1} s | {:.1} | {:.1} | {:.1} / {:.1} ms",
            self.stored,
            self.sent,
            self.took.as_secs_f64(),
            self.per_second(),
            self.bytes as f64 / 1e6 / self.took.as_secs_f64(),
            ms(percentile(&up, 50.0)),
            ms(percentile(&up, 99.0)),
        )
    }
}

/// Every guest joins (on Confetti: `join_bases`; the bare reference takes anyone), then all send
/// their photos at once, one after another each; timed from the first byte to the last answer.
async fn capacity(
    args: &Args,
    client: &reqwest::Client,
    base: &str,
    join_bases: Option<&[String]>,
    photos: &[Bytes],
) -> Result<Capacity> {
    let (slug, tokens) = match join_bases {
        None => ("bare".to_owned(), vec!["bare".to_owned(); args.guests]),
        Some(join_bases) => {
            let event = support::api::create_event(client, base, None).await?;
            let joins =
                (0..args.guests).map(|g| join(&join_bases[g % join_bases.len()], &event.slug, &event.join_token, g));
            let tokens = futures_util::future::try_join_all(joins).await?;
            (event.slug, tokens)
        }
    };
    let started = Instant::now();
    let sends = tokens.into_iter().map(|token| {
        let (client, base, slug) = (client.clone(), base.to_owned(), slug.clone());
        async move {
            let mut sent = Vec::new();
            for photo in photos {
                sent.push(upload_until_stored(&client, &base, &slug, &token, Uuid::new_v4(), photo).await?);
            }
            Ok::<_, anyhow::Error>(sent)
        }
    });
    let sent = futures_util::future::try_join_all(sends).await?;
    let took = started.elapsed();
    let sent: Vec<_> = sent.into_iter().flatten().collect();
    let ids: HashSet<&String> = sent.iter().map(|(id, ..)| id).collect();
    Ok(Capacity {
        stored: ids.len(),
        sent: args.guests * photos.len(),
        bytes: photos.iter().map(|p| p.len() as u64).sum::<u64>() * args.guests as u64,
        took,
        upload_ms: sent.iter().map(|(_, _, took)| *took).collect(),
    })
}

/// Guest `g` joins directly at `join_base`, from an address of its own (`X-Forwarded-For`: the
/// join budget is per address); its token.
async fn join(join_base: &str, slug: &str, join_token: &str, g: usize) -> Result<String> {
    let plain = reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(30)).build()?;
    let joined: Value = plain
        .post(format!("{join_base}/api/v1/events/{slug}/guests"))
        .header("X-Forwarded-For", format!("10.{}.{}.{}", g >> 16 & 255, g >> 8 & 255, g & 255))
        .json(&json!({"join_token": join_token, "display_name": format!("Guest {g}")}))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    Ok(joined["token"].as_str().context("join without token")?.to_owned())
}

/// A small deterministic generator, so each run cuts and re-sends the same uploads.
fn chance(seed: u64, percent: u64) -> bool {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    x ^= x >> 31;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 29;
    x % 100 < percent
}

async fn burst(args: &Args, setup: &Setup, photos: &[Bytes]) -> Result<String> {
    let client = &setup.client;
    let event = support::api::create_event(client, &setup.base, None).await?;
    let record = Arc::new(Mutex::new(Record::default()));
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let started = Instant::now();
    let total = args.guests * args.photos;
    let killed = Arc::new(tokio::sync::Notify::new());
    let mut guests = Vec::new();
    for g in 0..args.guests {
        let (client, base, slug, join_token) =
            (client.clone(), setup.base.clone(), event.slug.clone(), event.join_token.clone());
        let join_base = setup.join_bases[g % setup.join_bases.len()].clone();
        let (record, stop, photos, args, killed) =
            (record.clone(), stop_rx.clone(), photos.to_vec(), args.clone(), killed.clone());
        let at = Duration::from_secs(args.join_window_s).mul_f64(g as f64 / args.guests as f64);
        guests.push(tokio::spawn(async move {
            tokio::time::sleep(at).await;
            let token = join(&join_base, &slug, &join_token, g).await?;
            if g < args.listeners {
                tokio::spawn(listen(
                    client.clone(),
                    base.clone(),
                    slug.clone(),
                    token.clone(),
                    record.clone(),
                    stop.clone(),
                ));
            }
            tokio::spawn(poll(
                client.clone(),
                base.clone(),
                slug.clone(),
                token.clone(),
                record.clone(),
                stop,
                args.poll_s,
            ));
            for (p, photo) in photos.iter().enumerate() {
                let seed = (g * 16 + p) as u64;
                let key = Uuid::new_v4();
                if chance(seed, args.cut_percent) {
                    let _ = cut_upload(&client, &base, &slug, &token, key, photo).await;
                }
                let (id, bytes, took) = upload_until_stored(&client, &base, &slug, &token, key, photo).await?;
                {
                    let mut r = record.lock().map_err(|_| anyhow!("poisoned"))?;
                    r.sent += 1;
                    r.upload_ms.push(took);
                    r.stored.entry(key).or_insert((id.clone(), bytes, Instant::now(), g));
                    if args.kill && r.sent == total / 2 {
                        killed.notify_one();
                    }
                }
                if chance(seed ^ 0xABCD, args.resend_percent) {
                    let (again, _, _) = upload_until_stored(&client, &base, &slug, &token, key, photo).await?;
                    if again != id {
                        record.lock().map_err(|_| anyhow!("poisoned"))?.replays_wrong += 1;
                    }
                }
            }
            Ok::<_, anyhow::Error>((g, token))
        }));
    }
    // The kill at the peak.
    let killer = setup.cluster.as_ref().and(args.kill.then_some(())).map(|()| {
        let killed = killed.clone();
        async move { killed.notified().await }
    });
    let mut kill_pid = None;
    if let (Some(wait), Some(cluster)) = (killer, setup.cluster.as_ref()) {
        let pid = cluster.instances[1].pid();
        let _ = tokio::time::timeout(Duration::from_secs(600), wait).await;
        if let Some(pid) = pid {
            // SAFETY: kill on the pid of a child this process started and has not reaped.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            kill_pid = Some(pid);
            println!("  (killed instance 2, pid {pid}, {:.1} s into the burst)", started.elapsed().as_secs_f64());
        }
    }
    // Progress on stderr, every 5 s.
    let progress = {
        let record = record.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(5)).await;
                if let Ok(r) = record.lock() {
                    eprintln!(
                        "  {:>5.0} s: {} stored, {} announced, {} listings, {} thumbs, {} failed guests",
                        started.elapsed().as_secs_f64(),
                        r.stored.len(),
                        r.announced.len(),
                        r.list_ms.len(),
                        r.thumb_ms.len(),
                        r.errors.len()
                    );
                }
            }
        })
    };
    let mut tokens = Vec::new();
    for guest in guests {
        match guest.await? {
            Ok(done) => tokens.push(done),
            Err(e) => record.lock().map_err(|_| anyhow!("poisoned"))?.errors.push(format!("{e:#}")),
        }
    }
    let last_upload = Instant::now();
    // Until every stored photo was announced.
    let limit = Duration::from_secs(args.ready_limit_s);
    loop {
        let (missing, all) = {
            let r = record.lock().map_err(|_| anyhow!("poisoned"))?;
            (r.stored.values().filter(|(id, ..)| !r.announced.contains_key(id)).count(), r.stored.len())
        };
        if missing == 0 || last_upload.elapsed() > limit {
            ensure!(missing == 0, "{missing} of {all} photos not announced within {limit:?}");
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let drained = last_upload.elapsed();
    // Until every derivative was made (the guests go on polling meanwhile).
    let uploads = {
        let r = record.lock().map_err(|_| anyhow!("poisoned"))?;
        r.stored.values().map(|(id, ..)| id.clone()).collect::<HashSet<_>>().len() as u64
    };
    let all_made = loop {
        if made_total(client, &setup.join_bases).await >= uploads {
            break Some(last_upload.elapsed());
        }
        if last_upload.elapsed() > limit {
            break None;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let _ = stop_tx.send(true);
    progress.abort();
    // Taken out, so that no listener still running waits on the lock while the checks run.
    let r = std::mem::take(&mut *record.lock().map_err(|_| anyhow!("poisoned"))?);
    ensure!(r.errors.is_empty(), "{} guests failed, the first: {}", r.errors.len(), r.errors[0]);
    ensure!(r.replays_wrong == 0, "{} re-sent uploads were not replays of the first", r.replays_wrong);
    check_invariants(setup, &event, &tokens, &r).await?;
    if kill_pid.is_some() {
        println!("  (every invariant held after the kill)");
    }
    let sorted = |v: &[Duration]| {
        let mut v = v.to_vec();
        v.sort();
        v
    };
    let (up, list, thumbs) = (sorted(&r.upload_ms), sorted(&r.list_ms), sorted(&r.thumb_ms));
    let shown = sorted(
        &r.stored
            .values()
            .filter_map(|(id, _, at, _)| r.announced.get(id).map(|seen| seen.saturating_duration_since(*at)))
            .collect::<Vec<_>>(),
    );
    Ok(format!(
        "{} / {} | {:.1} / {:.1} ms | {:.0} ms | {:.0} / {:.0} ms ({} fetches) | {:.1} s | {} | {:.1} / {:.1} s |",
        r.stored.len(),
        total,
        ms(percentile(&up, 50.0)),
        ms(percentile(&up, 99.0)),
        ms(percentile(&list, 99.0)),
        ms(percentile(&thumbs, 50.0)),
        ms(percentile(&thumbs, 99.0)),
        thumbs.len(),
        drained.as_secs_f64(),
        all_made.map_or("—".to_owned(), |d| format!("{:.1} s", d.as_secs_f64())),
        percentile(&shown, 50.0).as_secs_f64(),
        percentile(&shown, 99.0).as_secs_f64(),
    ))
}

/// Uploads whose derivatives the instances at `bases` finished or gave up on, by their
/// `/metrics` counters (an instance that does not answer counts none).
async fn made_total(client: &reqwest::Client, bases: &[String]) -> u64 {
    let mut total = 0;
    for base in bases {
        let Ok(response) = client.get(format!("{base}/metrics")).send().await else { continue };
        let Ok(text) = response.text().await else { continue };
        for line in text.lines() {
            let counter = line
                .strip_prefix("confetti_derivatives_made_total ")
                .or_else(|| line.strip_prefix("confetti_derivatives_failed_total "));
            total += counter.and_then(|v| v.trim().parse::<u64>().ok()).unwrap_or(0);
        }
    }
    total
}

fn form(key: Uuid, part: Part) -> Form {
    Form::new().text("client_upload_id", key.to_string()).part("file", part)
}

/// Sends half of the photo and then breaks the connection, as a phone losing its signal.
async fn cut_upload(
    client: &reqwest::Client,
    base: &str,
    slug: &str,
    token: &str,
    key: Uuid,
    photo: &Bytes,
) -> Result<()> {
    let half = photo.slice(..photo.len() / 2);
    let chunks: Vec<std::io::Result<Bytes>> = vec![Ok(half), Err(std::io::Error::other("signal lost"))];
    let body = reqwest::Body::wrap_stream(futures_util::stream::iter(chunks));
    let part = Part::stream_with_length(body, photo.len() as u64).file_name("IMG.jpg").mime_str("image/jpeg")?;
    let sent = client
        .post(format!("{base}/api/v1/events/{slug}/uploads"))
        .bearer_auth(token)
        .multipart(form(key, part))
        .send()
        .await;
    ensure!(sent.is_err(), "a cut upload was answered");
    Ok(())
}

/// Sends the photo under `key` until it is stored (201) or replayed (200), retrying connection
/// errors, 502, 503 and 409 `upload_in_progress` as the page does; (id, bytes, the last attempt's time).
async fn upload_until_stored(
    client: &reqwest::Client,
    base: &str,
    slug: &str,
    token: &str,
    key: Uuid,
    photo: &Bytes,
) -> Result<(String, u64, Duration)> {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let part = Part::stream_with_length(reqwest::Body::from(photo.clone()), photo.len() as u64)
            .file_name("IMG.jpg")
            .mime_str("image/jpeg")?;
        let started = Instant::now();
        let answer = client
            .post(format!("{base}/api/v1/events/{slug}/uploads"))
            .bearer_auth(token)
            .multipart(form(key, part))
            .send()
            .await;
        let took = started.elapsed();
        match answer {
            Ok(response) if response.status().as_u16() == 201 || response.status().as_u16() == 200 => {
                let upload: Value = response.json().await?;
                let id = upload["id"].as_str().context("upload without id")?.to_owned();
                return Ok((id, upload["bytes"].as_u64().unwrap_or_default(), took));
            }
            Ok(response) if [409, 502, 503].contains(&response.status().as_u16()) => {}
            Ok(response) => bail!("upload: {} {}", response.status(), response.text().await.unwrap_or_default()),
            Err(_) => {}
        }
        ensure!(Instant::now() < deadline, "upload {key} not stored within 300 s");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Holds the live stream (reconnecting when it ends), noting when each upload is first announced.
async fn listen(
    client: reqwest::Client,
    base: String,
    slug: String,
    token: String,
    record: Arc<Mutex<Record>>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    tokio::select! {
        () = hear(&client, &base, &slug, &token, &record) => {}
        _ = stop.wait_for(|stopped| *stopped) => {}
    }
}

async fn hear(client: &reqwest::Client, base: &str, slug: &str, token: &str, record: &Mutex<Record>) {
    loop {
        let Ok(response) = client
            .get(format!("{base}/api/v1/events/{slug}/live"))
            .bearer_auth(token)
            .timeout(Duration::from_secs(3600))
            .send()
            .await
        else {
            tokio::time::sleep(Duration::from_millis(500)).await;
            continue;
        };
        let mut stream = response.bytes_stream();
        let mut text = String::new();
        while let Some(Ok(chunk)) = stream.next().await {
            text.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = text.find("\n\n") {
                let message: String = text.drain(..end + 2).collect();
                if !message.contains("event: upload") {
                    continue;
                }
                let Some(data) = message.lines().find_map(|l| l.strip_prefix("data: ")) else { continue };
                let Ok(upload) = serde_json::from_str::<Value>(data) else { continue };
                if let (Some(id), Ok(mut r)) = (upload["id"].as_str(), record.lock()) {
                    r.announced.entry(id.to_owned()).or_insert_with(Instant::now);
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Reads the gallery's first page every `every_s` seconds and fetches the thumbs not seen yet.
async fn poll(
    client: reqwest::Client,
    base: String,
    slug: String,
    token: String,
    record: Arc<Mutex<Record>>,
    stop: tokio::sync::watch::Receiver<bool>,
    every_s: u64,
) {
    let mut seen = HashSet::new();
    while !*stop.borrow() {
        let started = Instant::now();
        let listing =
            client.get(format!("{base}/api/v1/events/{slug}/uploads?limit=50")).bearer_auth(&token).send().await;
        if let Ok(response) = listing
            && response.status().is_success()
            && let Ok(page) = response.json::<Value>().await
        {
            let took = started.elapsed();
            if let Ok(mut r) = record.lock() {
                r.list_ms.push(took);
            }
            for item in page["items"].as_array().into_iter().flatten() {
                let (Some(id), Some(thumb)) = (item["id"].as_str(), item["urls"]["thumb"].as_str()) else { continue };
                if item["status"] != "ready" || !seen.insert(id.to_owned()) {
                    continue;
                }
                let started = Instant::now();
                if let Ok(response) = client.get(format!("{base}{thumb}")).bearer_auth(&token).send().await
                    && response.status().is_success()
                    && response.bytes().await.is_ok()
                    && let Ok(mut r) = record.lock()
                {
                    r.thumb_ms.push(started.elapsed());
                }
            }
        }
        tokio::time::sleep(Duration::from_secs(every_s)).await;
    }
}

/// One upload per key and no other; quotas and the event's used bytes equal to what is stored;
/// every upload ready; on S3, nothing temporary left.
async fn check_invariants(
    setup: &Setup,
    event: &support::api::Event,
    tokens: &[(usize, String)],
    r: &Record,
) -> Result<()> {
    let client = &setup.client;
    let ids: HashSet<&String> = r.stored.values().map(|(id, ..)| id).collect();
    ensure!(ids.len() == r.stored.len(), "{} keys but {} uploads", r.stored.len(), ids.len());
    for (g, token) in tokens {
        let me: Value = client.get(format!("{}/api/v1/me", setup.base)).bearer_auth(token).send().await?.json().await?;
        let stored: u64 = r.stored.values().filter(|(.., guest)| guest == g).map(|(_, bytes, ..)| bytes).sum();
        ensure!(
            me["used_bytes"].as_u64() == Some(stored),
            "guest {g}: used_bytes {} against {stored} stored",
            me["used_bytes"]
        );
        ensure!(
            me["upload_count"].as_u64() == Some(r.stored.values().filter(|(.., guest)| guest == g).count() as u64),
            "guest {g}: {me}"
        );
    }
    let login: Value = client
        .post(format!("{}/api/v1/events/{}/organiser-sessions", setup.base, event.slug))
        .json(&json!({"password": support::ORGANISER_PASSWORD}))
        .send()
        .await?
        .json()
        .await?;
    let organiser = login["token"].as_str().context("organiser login")?;
    let shown: Value = client
        .get(format!("{}/api/v1/events/{}", setup.base, event.slug))
        .bearer_auth(organiser)
        .send()
        .await?
        .json()
        .await?;
    let total: u64 = r.stored.values().map(|(_, bytes, ..)| bytes).sum();
    ensure!(shown["used_bytes"].as_u64() == Some(total), "event used_bytes {} against {total}", shown["used_bytes"]);
    let (mut listed, mut cursor) = (HashSet::new(), None::<String>);
    loop {
        let mut url = format!("{}/api/v1/events/{}/uploads?limit=100", setup.base, event.slug);
        if let Some(c) = &cursor {
            url.push_str(&format!("&cursor={c}"));
        }
        let page: Value = client.get(url).bearer_auth(organiser).send().await?.json().await?;
        for item in page["items"].as_array().into_iter().flatten() {
            ensure!(item["status"] == "ready", "not ready: {item}");
            ensure!(listed.insert(item["id"].as_str().unwrap_or_default().to_owned()), "listed twice: {item}");
        }
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    ensure!(
        listed.len() == ids.len() && ids.iter().all(|id| listed.contains(*id)),
        "{} listed, {} stored",
        listed.len(),
        ids.len()
    );
    if let Some(s3) = &setup.s3 {
        // The sweeps run every minute or so; a kill's leftovers take a lease's time.
        let until = Instant::now() + Duration::from_secs(180);
        while (s3.open_multipart_uploads() > 0 || s3.temporary_blobs() > 0) && Instant::now() < until {
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        ensure!(s3.open_multipart_uploads() == 0, "{} multipart uploads left open", s3.open_multipart_uploads());
        ensure!(s3.temporary_blobs() == 0, "{} temporary objects left", s3.temporary_blobs());
    }
    let _ = &setup.servers;
    Ok(())
}
