//! Hostile files, as an attacker with the join link would send them: 512 files mutated from
//! valid seeds of every kind the server takes (JPEG baseline and progressive, PNG, GIF, WebP,
//! HEIC, MP4, MOV, WebM) by byte flips, truncation and targeted changes to the fields decoders
//! trust (frame and image dimensions, box sizes, the HEVC parameter sets, repeated scans), with
//! a fixed seed so every run sends the same files. Each one is refused at the door with a
//! problem, or stored and then `ready` or `failed` with a reason; the server never fails a
//! request and never restarts, and its memory stays bounded (decoding happens in the workers).

mod common;

use std::collections::BTreeMap;
use std::io::Cursor;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{Backend, TestApp, settled_within, upload_form};
use image::{Rgb, RgbImage, Rgba, RgbaImage};

const MUTANTS_PER_SEED: usize = 64;

/// xorshift64*: the same files on every run and machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn picture(w: u32, h: u32) -> RgbImage {
    RgbImage::from_fn(w, h, |x, y| Rgb([(x * 5) as u8, (y * 3) as u8, ((x ^ y) * 7) as u8]))
}

fn encoded(write: impl FnOnce(&mut Cursor<Vec<u8>>)) -> Vec<u8> {
    let mut out = Cursor::new(Vec::new());
    write(&mut out);
    out.into_inner()
}

fn ffmpeg_clip(dir: &Path, name: &str, args: &[&str]) -> Vec<u8> {
    let path = dir.join(name);
    let input = ["-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=96x64:rate=10", "-t", "0.5"];
    let status = Command::new("ffmpeg").args(input).args(args).arg(&path).status().expect("ffmpeg is needed");
    assert!(status.success(), "ffmpeg {name}");
    std::fs::read(path).expect("clip")
}

/// One valid file of every kind.
fn seeds(dir: &Path) -> Vec<(&'static str, Vec<u8>)> {
    let img = picture(96, 64);
    let jpeg = encoded(|out| img.write_to(out, image::ImageFormat::Jpeg).expect("jpeg"));
    let mut progressive = Vec::new();
    let mut encoder = jpeg_encoder::Encoder::new(&mut progressive, 80);
    encoder.set_progressive(true);
    encoder.encode(img.as_raw(), 96, 64, jpeg_encoder::ColorType::Rgb).expect("progressive");
    let png = encoded(|out| img.write_to(out, image::ImageFormat::Png).expect("png"));
    let rgba = RgbaImage::from_fn(96, 64, |x, y| Rgba([(x * 5) as u8, (y * 3) as u8, 90, 255]));
    let gif = encoded(|out| rgba.write_to(out, image::ImageFormat::Gif).expect("gif"));
    let webp = encoded(|out| rgba.write_to(out, image::ImageFormat::WebP).expect("webp"));
    let png_path = dir.join("seed.png");
    std::fs::write(&png_path, &png).expect("png");
    let heic_path = dir.join("seed.heic");
    let status = Command::new("heif-enc")
        .args(["-q", "50"])
        .arg(&png_path)
        .arg("-o")
        .arg(&heic_path)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("heif-enc is needed");
    assert!(status.success(), "heif-enc");
    let heic = std::fs::read(&heic_path).expect("heic");
    let h264 = ["-c:v", "libx264", "-pix_fmt", "yuv420p"];
    let mp4 = ffmpeg_clip(dir, "seed.mp4", &[&h264[..], &["-f", "mp4"]].concat());
    let mov = ffmpeg_clip(dir, "seed.mov", &[&h264[..], &["-f", "mov"]].concat());
    let webm = ffmpeg_clip(dir, "seed.webm", &["-c:v", "libvpx-vp9", "-f", "webm"]);
    vec![
        ("jpeg", jpeg),
        ("progressive jpeg", progressive),
        ("png", png),
        ("gif", gif),
        ("webp", webp),
        ("heic", heic),
        ("mp4", mp4),
        ("mov", mov),
        ("webm", webm),
    ]
}

/// Where the fields decoders trust sit in `seed`: JPEG frame headers, PNG's IHDR, GIF's screen,
/// ISO boxes' sizes and dimensions (`ispe`, `tkhd`, `hvcC` with the HEVC SPS, `stsz`, `mdat`),
/// WebM's element sizes.
fn targets(seed: &[u8]) -> Vec<usize> {
    let mut at = Vec::new();
    for marker in [[0xFFu8, 0xC0], [0xFF, 0xC2], [0xFF, 0xDA], [0xFF, 0xC4], [0xFF, 0xDB]] {
        at.extend(seed.windows(2).enumerate().filter(|(_, w)| *w == marker).map(|(i, _)| i + 5));
    }
    for name in [&b"IHDR"[..], b"ispe", b"tkhd", b"hvcC", b"stsz", b"stco", b"mdat", b"moov", b"VP8 ", b"VP8L"] {
        // Box sizes sit before the name; dimensions and parameter sets after it.
        at.extend(
            seed.windows(4)
                .enumerate()
                .filter(|(_, w)| *w == name)
                .flat_map(|(i, _)| [i.saturating_sub(4), i + 4, i + 12, i + 20]),
        );
    }
    if seed.starts_with(b"GIF") {
        at.push(6);
    }
    if seed.starts_with(&[0x1A, 0x45, 0xDF, 0xA3]) {
        at.extend((0..seed.len()).step_by(97));
    }
    at.retain(|&i| i + 4 <= seed.len());
    at
}

fn mutate(seed: &[u8], rng: &mut Rng) -> (&'static str, Vec<u8>) {
    let mut bytes = seed.to_vec();
    let targets = targets(seed);
    match rng.below(5) {
        0 => {
            for _ in 0..1 + rng.below(8) {
                let i = rng.below(bytes.len());
                bytes[i] ^= 1 << rng.below(8);
            }
            ("byte flips", bytes)
        }
        1 => {
            bytes.truncate(1 + rng.below(seed.len() - 1));
            ("truncated", bytes)
        }
        2 | 3 if !targets.is_empty() => {
            let at = targets[rng.below(targets.len())];
            // A large value, a zero or a random one, in a field decoders read.
            let value: [u8; 4] = match rng.below(3) {
                0 => [0xFF, 0xFF, 0xFF, 0xF0],
                1 => [0, 0, 0, 0],
                _ => (rng.next() as u32).to_be_bytes(),
            };
            let width = 1 + rng.below(4);
            bytes[at..at + width].copy_from_slice(&value[..width]);
            ("targeted field", bytes)
        }
        _ => {
            // A stretch repeated: for a JPEG its scans, elsewhere boxes or chunks read twice.
            let start = rng.below(bytes.len());
            let len = (1 + rng.below(256)).min(bytes.len() - start);
            let stretch = bytes[start..start + len].to_vec();
            for _ in 0..1 + rng.below(40) {
                bytes.splice(start..start, stretch.iter().copied());
            }
            ("repeated stretch", bytes)
        }
    }
}

/// The resident memory of this process (the server runs in it), in MiB.
fn rss_mib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    kib / 1024
}

async fn every_hostile_file_is_refused_or_ends_ready_or_failed_with_a_reason(backend: Backend) {
    let dir = tempfile::tempdir().expect("tempdir");
    let seeds = seeds(dir.path());
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let token = app.organiser_login(&event).await;
    let rss_before = rss_mib();
    let mut rng = Rng(0x5EED_C0FF_EE15_600D);
    let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
    let mut stored = Vec::new();
    let started = Instant::now();
    let mut sent = 0;
    for (kind, seed) in &seeds {
        // A guest per seed: the queue serves guests in turn, as at an event.
        let guest = app.join(&event, kind).await;
        for _ in 0..MUTANTS_PER_SEED {
            let (how, bytes) = mutate(seed, &mut rng);
            sent += 1;
            let form = upload_form(&bytes, Some(uuid::Uuid::new_v4()), "file", None);
            let response = app.upload_form(&guest, form, None).await;
            let status = response.status();
            assert!(!status.is_server_error(), "{kind}, {how}: {status}");
            let body: serde_json::Value = response.json().await.expect("json");
            if status == reqwest::StatusCode::CREATED {
                stored.push((*kind, how, body["id"].as_str().expect("id").to_owned()));
            } else {
                let code =
                    body["code"].as_str().unwrap_or_else(|| panic!("{kind}, {how}: a problem has a code: {body}"));
                *outcomes.entry(format!("{kind}: refused ({code})")).or_default() += 1;
            }
        }
    }
    assert!(sent >= 500, "{sent} files");
    let mut peak = rss_mib();
    for (kind, how, id) in &stored {
        let upload = settled_within(&app, &token, id, Duration::from_secs(120)).await;
        peak = peak.max(rss_mib());
        let status = upload["status"].as_str().expect("status");
        match status {
            "ready" => {}
            "failed" => assert!(upload["failure"].as_str().is_some_and(|f| !f.is_empty()), "{kind}, {how}: {upload}"),
            other => panic!("{kind}, {how}: {other}"),
        }
        *outcomes.entry(format!("{kind}: {status}")).or_default() += 1;
    }
    let health = app.client.get(app.url("/healthz")).send().await.expect("healthz");
    assert_eq!(health.status(), reqwest::StatusCode::OK, "the server still serves");
    println!(
        "{sent} hostile files in {:.0} s; server RSS {rss_before} MiB before, {peak} MiB at most",
        started.elapsed().as_secs_f64()
    );
    for (outcome, n) in &outcomes {
        println!("  {outcome}: {n}");
    }
    assert!(peak < rss_before + 512, "the server's memory stayed bounded: {rss_before} → {peak} MiB");
    assert!(outcomes.keys().any(|k| k.ends_with("failed")), "some mutants reach a decoder and fail there");
    assert!(outcomes.keys().any(|k| k.ends_with("ready")), "some mutants are still photos");
}

both_backends!(every_hostile_file_is_refused_or_ends_ready_or_failed_with_a_reason);
