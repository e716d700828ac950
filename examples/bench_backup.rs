//! Backup and restore benchmark: `confetti backup` of an instance holding N photos (with their
//! derivatives), the same backup run again with nothing new and with 10 new photos, and
//! `confetti restore` of it into an empty data directory; times and sizes. A harness that
//! prints figures, not a test; they go into `docs/benchmarks.md`.
//!
//! ```text
//! cargo build --release
//! cargo run --release --example bench_backup -- [--photos 1000] [--confetti-bin PATH]
//! ```
//!
//! It starts `target/release/confetti serve` as a child process (fresh temp data dir, local
//! photo directory; SQLite, then, when TEST_DATABASE_URL names a PostgreSQL server, a fresh
//! database there), uploads the photos through the API (8 at a time, 10 guests) and waits
//! until every thumb and preview is made. Each command runs as its own process, as a host
//! runs it from cron; the times are wall-clock times of that process. On PostgreSQL the
//! database is kept by `pg_dump` (timed too) and restored by `pg_restore` before the photos.
//! When `S3S_FS` names the `s3s-fs` binary, the first backup is also made to an S3-protocol
//! server on loopback (and restored from it, on SQLite).

#[path = "support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Parser;
use futures_util::StreamExt;
use reqwest::Client;
use reqwest::multipart::Part;
use serde_json::Value;

use support::api;
use support::child::{ChildServer, release_binary};
use support::photos::photo_like_jpeg;

#[derive(Parser)]
#[command(about = "Confetti backup and restore benchmark (run `cargo build --release` first)")]
struct Args {
    /// The confetti binary (default: target/release/confetti of this package).
    #[arg(long)]
    confetti_bin: Option<PathBuf>,
    /// Photos in the instance before the first backup.
    #[arg(long, default_value_t = 1000)]
    photos: usize,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let run = async {
        let bin = release_binary(args.confetti_bin.clone())?;
        let photo = photo_like_jpeg(1600, 1200)?;
        println!(
            "Backup and restore of {} photos (1600×1200 JPEG, {:.0} KB each, with their derivatives), local photo store\n",
            args.photos,
            photo.len() as f64 / 1000.0
        );
        println!("| backend | step | time s | files | size MB |");
        println!("| --- | --- | --- | --- | --- |");
        measure(&bin, "sqlite", None, &photo, args.photos).await?;
        match std::env::var("TEST_DATABASE_URL") {
            Ok(server) => {
                let database = Scratch::create(&server)?;
                let measured = measure(&bin, "postgres", Some(&database.url), &photo, args.photos).await;
                database.drop_it();
                measured
            }
            Err(_) => {
                println!("\n(set TEST_DATABASE_URL to measure PostgreSQL too)");
                Ok(())
            }
        }
    };
    let outcome = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(anyhow::Error::from);
    match outcome.and_then(|runtime| runtime.block_on(run)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn measure(bin: &Path, backend: &str, database_url: Option<&str>, photo: &[u8], photos: usize) -> Result<()> {
    let env: Vec<(String, String)> = database_url.map(|url| ("DATABASE_URL".into(), url.into())).into_iter().collect();
    let server = ChildServer::confetti(bin, &env).await?;
    let data = server.dir().join("data");
    let site = Site { bin, data: &data, database_url };
    let client = Client::new();
    let event = api::create_event(&client, &server.base, None).await?;
    let mut guests = Vec::new();
    for n in 0..10 {
        guests
            .push(api::join(&client, &server.base, &event.slug, &event.join_token, &format!("Guest {n}")).await?.token);
    }
    let upload = |n: usize| {
        let (client, base, slug, token) = (&client, &server.base, &event.slug, &guests[n % guests.len()]);
        let part = Part::bytes(photo.to_vec()).file_name(format!("IMG_{n}.jpg")).mime_str("image/jpeg");
        async move { api::upload(client, base, slug, token, part?).await }
    };
    let uploaded: Vec<Result<Value>> =
        futures_util::stream::iter(0..photos).map(upload).buffer_unordered(8).collect().await;
    uploaded.into_iter().collect::<Result<Vec<_>>>()?;
    site.wait_for_derivatives().await?;
    let row = |step: &str, took: Duration, dir: &Path| {
        let (files, bytes) = tree_size(dir);
        println!("| {backend} | {step} | {:.2} | {files} | {:.1} |", took.as_secs_f64(), bytes as f64 / 1e6);
    };
    let (files, bytes) = tree_size(&data);
    println!("| {backend} | the instance's data directory | | {files} | {:.1} |", bytes as f64 / 1e6);

    let work = tempfile::Builder::new().prefix("confetti-bench-backup-").tempdir()?;
    let (backup, dump) = (work.path().join("backup"), work.path().join("confetti.dump"));
    if let Some(url) = database_url {
        let took = timed(Command::new("pg_dump").args(["--format=custom", "--file"]).arg(&dump).arg(url))?;
        println!("| {backend} | pg_dump | {:.2} | 1 | {:.1} |", took.as_secs_f64(), file_size(&dump) as f64 / 1e6);
    }
    let took = site.backup(&backup)?;
    let manifest: Value = serde_json::from_slice(&std::fs::read(backup.join("manifest.json"))?)?;
    let database = manifest["database"]["bytes"].as_f64().map(|b| format!(", database {:.1} MB", b / 1e6));
    row(&format!("first backup{}", database.unwrap_or_default()), took, &backup);
    row("again, nothing new", site.backup(&backup)?, &backup);
    for n in 0..10 {
        upload(photos + n).await?;
    }
    site.wait_for_derivatives().await?;
    let took = site.backup(&backup)?;
    let manifest: Value = serde_json::from_slice(&std::fs::read(backup.join("manifest.json"))?)?;
    row(&format!("again, 10 new photos ({} files copied)", manifest["copied_blobs"]), took, &backup);
    if let Some(s3) = S3::start()? {
        let took = timed(site.command("backup").arg("--to").arg("s3://backups/confetti").envs(s3.env()))?;
        row("first backup to S3 (s3s-fs on loopback)", took, &s3.root.path().join("backups"));
        let restored = work.path().join("restored-from-s3");
        let mut restore = Command::new(bin);
        restore.args(["restore", "--from", "s3://backups/confetti", "--data-dir"]).arg(&restored).envs(s3.env());
        if database_url.is_none() {
            row("restore from S3", timed(restore.env_remove("DATABASE_URL"))?, &restored);
        }
    }
    drop(server);

    let restored = work.path().join("restored");
    let restore_db = match database_url {
        Some(url) => {
            let database = Scratch::create(url)?;
            let took = timed(Command::new("pg_restore").args(["--no-owner", "--dbname", &database.url]).arg(&dump))?;
            println!("| {backend} | pg_restore | {:.2} | | |", took.as_secs_f64());
            Some(database)
        }
        None => None,
    };
    let mut restore = Command::new(bin);
    restore.arg("restore").arg("--from").arg(&backup).arg("--data-dir").arg(&restored).env_remove("DATABASE_URL");
    if let Some(database) = &restore_db {
        restore.arg("--database-url").arg(&database.url);
    }
    row("restore into an empty data directory", timed(&mut restore)?, &restored);
    if let Some(database) = restore_db {
        database.drop_it();
    }
    Ok(())
}

/// How `confetti` commands reach the benchmark's instance.
struct Site<'a> {
    bin: &'a Path,
    data: &'a Path,
    database_url: Option<&'a str>,
}

impl Site<'_> {
    fn command(&self, subcommand: &str) -> Command {
        let mut command = Command::new(self.bin);
        command.arg(subcommand).arg("--data-dir").arg(self.data).env_remove("CONFETTI_STORAGE");
        match self.database_url {
            Some(url) => command.arg("--database-url").arg(url),
            None => command.env_remove("DATABASE_URL"),
        };
        command
    }

    fn backup(&self, to: &Path) -> Result<Duration> {
        timed(self.command("backup").arg("--to").arg(to))
    }

    /// Waits (at most 30 minutes) until no derivative job is left.
    async fn wait_for_derivatives(&self) -> Result<()> {
        let db = confetti::db::Db::connect(self.database_url, self.data).await?;
        let started = Instant::now();
        let left = loop {
            let left: i64 = match &db {
                confetti::db::Db::Sqlite(pool) => {
                    sqlx::query_scalar("SELECT COUNT(*) FROM derivative_jobs").fetch_one(pool).await?
                }
                confetti::db::Db::Postgres(pool) => {
                    sqlx::query_scalar("SELECT COUNT(*) FROM derivative_jobs").fetch_one(pool).await?
                }
            };
            if left == 0 || started.elapsed() > Duration::from_secs(1800) {
                break left;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        };
        db.close().await;
        anyhow::ensure!(left == 0, "{left} derivative jobs left after 30 minutes");
        Ok(())
    }
}

/// Runs a command to its end; its wall-clock time, or its stderr when it fails.
fn timed(command: &mut Command) -> Result<Duration> {
    let started = Instant::now();
    let output = command.output().with_context(|| format!("running {command:?}"))?;
    let took = started.elapsed();
    if !output.status.success() {
        bail!("{command:?} failed: {}", String::from_utf8_lossy(&output.stderr));
    }
    Ok(took)
}

/// Files under `dir` and their bytes.
fn tree_size(dir: &Path) -> (u64, u64) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return (0, 0);
    };
    entries.flatten().fold((0, 0), |(files, bytes), entry| match entry.file_type() {
        Ok(kind) if kind.is_dir() => {
            let (f, b) = tree_size(&entry.path());
            (files + f, bytes + b)
        }
        _ => (files + 1, bytes + entry.metadata().map(|m| m.len()).unwrap_or(0)),
    })
}

fn file_size(file: &Path) -> u64 {
    std::fs::metadata(file).map(|m| m.len()).unwrap_or(0)
}

/// `s3s-fs` (an S3-protocol server keeping objects as files) on loopback with a bucket
/// `backups`, when `S3S_FS` names its binary; stopped when dropped.
struct S3 {
    child: std::process::Child,
    endpoint: String,
    root: tempfile::TempDir,
}

impl S3 {
    fn start() -> Result<Option<Self>> {
        let Some(binary) = std::env::var_os("S3S_FS") else {
            return Ok(None);
        };
        let root = tempfile::Builder::new().prefix("confetti-bench-s3-").tempdir()?;
        std::fs::create_dir(root.path().join("backups"))?;
        let addr = support::child::free_loopback_port()?;
        let child = Command::new(binary)
            .args(["--host", "127.0.0.1", "--port", &addr.port().to_string(), "--access-key", "bench", "--secret-key"])
            .args(["bench-secret"])
            .arg(root.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()?;
        let s3 = Self { child, endpoint: format!("http://{addr}"), root };
        for _ in 0..100 {
            if std::net::TcpStream::connect(addr).is_ok() {
                return Ok(Some(s3));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        bail!("s3s-fs did not listen on {addr}")
    }

    /// The `AWS_*` settings a host would give.
    fn env(&self) -> [(&'static str, &str); 5] {
        [
            ("AWS_ACCESS_KEY_ID", "bench"),
            ("AWS_SECRET_ACCESS_KEY", "bench-secret"),
            ("AWS_REGION", "us-east-1"),
            ("AWS_ENDPOINT", &self.endpoint),
            ("AWS_ALLOW_HTTP", "true"),
        ]
    }
}

impl Drop for S3 {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A scratch PostgreSQL database beside the one `server` names, dropped by `drop_it`.
struct Scratch {
    server: String,
    name: String,
    url: String,
}

impl Scratch {
    fn create(server: &str) -> Result<Self> {
        let name = format!("bench_{}", uuid::Uuid::new_v4().simple());
        psql(server, &format!("CREATE DATABASE {name}"))?;
        let base = server.rsplit_once('/').map(|(b, _)| b).unwrap_or(server);
        Ok(Self { server: server.to_owned(), url: format!("{base}/{name}"), name })
    }

    fn drop_it(self) {
        if let Err(e) = psql(&self.server, &format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name)) {
            eprintln!("could not drop {}: {e}", self.name);
        }
    }
}

fn psql(url: &str, sql: &str) -> Result<()> {
    timed(Command::new("psql").args([url, "-qtAc", sql])).map(|_| ())
}
