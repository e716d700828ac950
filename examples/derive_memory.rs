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

use std::io::Write;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use serde_json::{Value, json};

const ADMIN_TOKEN: &str = "derive-memory-admin-token";

#[tokio::main]
async fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let bin = match args.iter().position(|a| a == "--confetti-bin") {
        Some(i) => PathBuf::from(args.get(i + 1).context("--confetti-bin PATH")?),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/release/confetti"),
    };
    ensure!(bin.exists(), "{} does not exist: run `cargo build --release` first", bin.display());
    let originals = [
        ("16-bit RGBA PNG 10000²", png16_rgba(10_000, 10_000)?),
        ("progressive JPEG 10000²", progressive_jpeg(10_000, 10_000)?),
        ("progressive JPEG 8000×6000", progressive_jpeg(8_000, 6_000)?),
    ];
    println!("| original | bytes | status | settled after | slowest GET meanwhile | VmRSS before | VmHWM |");
    println!("|---|---|---|---|---|---|---|");
    for (name, bytes) in originals {
        let server = Server::start(&bin)?;
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

async fn measure(server: &Server, original: &[u8]) -> Result<Measured> {
    let client = reqwest::Client::new();
    let base = &server.base;
    let event: Value = client
        .post(format!("{base}/api/v1/events"))
        .bearer_auth(ADMIN_TOKEN)
        .json(&json!({"name": "Memory", "organiser_password": "memory-password", "guest_quota_bytes": 1_i64 << 40}))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let slug = event["slug"].as_str().context("slug")?;
    let guest: Value = client
        .post(format!("{base}/api/v1/events/{slug}/guests"))
        .json(&json!({"join_token": event["join_token"], "display_name": "Measurer"}))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let token = guest["token"].as_str().context("token")?;

    let rss_before_kib = proc_field(server.pid(), "VmRSS:")?;
    std::fs::write(format!("/proc/{}/clear_refs", server.pid()), "5").context("resetting VmHWM")?;
    let part = reqwest::multipart::Part::bytes(original.to_vec())
        .file_name("original")
        .mime_str("application/octet-stream")?;
    let form =
        reqwest::multipart::Form::new().text("client_upload_id", uuid::Uuid::new_v4().to_string()).part("file", part);
    let response =
        client.post(format!("{base}/api/v1/events/{slug}/uploads")).bearer_auth(token).multipart(form).send().await?;
    ensure!(response.status() == 201, "upload: {} {}", response.status(), response.text().await.unwrap_or_default());
    let created: Value = response.json().await?;
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
        hwm_kib: proc_field(server.pid(), "VmHWM:")?,
    })
}

fn proc_field(pid: u32, name: &str) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .with_context(|| format!("no {name} for {pid}"))
}

struct Server {
    child: Child,
    base: String,
    _dir: tempfile::TempDir,
}

impl Server {
    fn start(bin: &std::path::Path) -> Result<Self> {
        let dir = tempfile::Builder::new().prefix("confetti-derive-memory-").tempdir()?;
        let addr = TcpListener::bind("127.0.0.1:0")?.local_addr()?;
        let data = dir.path().join("data");
        std::fs::create_dir_all(&data)?;
        let log = std::fs::File::create(dir.path().join("server.log"))?;
        let child = Command::new(bin)
            .args(["serve", "--no-demo", "--bind"])
            .arg(addr.to_string())
            .arg("--data-dir")
            .arg(&data)
            .env("CONFETTI_ADMIN_TOKEN", ADMIN_TOKEN)
            .env("CONFETTI_PUBLIC_URL", format!("http://{addr}"))
            .env_remove("DATABASE_URL")
            .env_remove("CONFETTI_STORAGE")
            .env_remove("CONFETTI_DATA_DIR")
            .env_remove("CONFETTI_BIND")
            .env_remove("CONFETTI_DERIVATIVE_WORKERS")
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        let server = Server { child, base: format!("http://{addr}"), _dir: dir };
        for _ in 0..200 {
            if std::net::TcpStream::connect(addr).is_ok() {
                return Ok(server);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        bail!("the server did not start")
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
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
