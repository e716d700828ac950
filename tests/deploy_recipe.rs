//! The single-server recipe of `docs/deploy.md` as a host follows it: the real `confetti` binary
//! started as `deploy/confetti.service` starts it, behind Caddy started with `deploy/Caddyfile`
//! (`tls internal` in place of Let's Encrypt; the client trusts Caddy's local root CA, read from
//! Caddy's data directory, and no other); see `common/caddy.rs`. Through Caddy: the join link
//! and QR code carry the https address, a guest joins and uploads a photo, a 200 MB video cut in
//! the middle resumes from the server's offset and is stored once byte for byte, the throttle
//! counts each phone by its own address, the live stream opens at once and arrives as it
//! happens, a page requested during a restart waits for Confetti. The unit passes
//! `systemd-analyze verify` and agrees with the Caddyfile; the Caddyfile, given a real domain,
//! asks Let's Encrypt for its certificate.
//!
//! Needs Debian's `caddy`, `ffmpeg` and `systemd` (for `systemd-analyze`); scripts/test.sh
//! installs them.

#[path = "common/caddy.rs"]
mod caddy;
mod common;

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use base64::Engine;
use bytes::Bytes;
use caddy::{
    ADMIN_TOKEN, Host, INSTALLED_BINARY, SERVICE_PATH, UNIT, assignments, env_file_example, header, repo_file,
    unit_value, unit_values,
};
use common::{Backend, images, reading::next_sse, upload_form};
use futures_util::StreamExt;
use reqwest::StatusCode;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use uuid::Uuid;

both_backends!(
    a_hosts_first_event_runs_behind_caddy_with_https_links,
    a_200_mb_video_cut_halfway_resumes_through_caddy_and_is_stored_once_byte_for_byte,
    through_caddy_the_throttle_counts_each_phone_by_its_own_address,
    the_live_stream_reaches_the_projector_through_caddy_as_it_happens,
    restarting_confetti_is_a_pause_for_phones_not_an_error,
);

/// The join link as the server's QR code draws it (the same renderer and settings): equal
/// SVGs mean the code carries this link.
fn qr_svg(url: &str) -> String {
    use qrcode::render::svg;
    let code = qrcode::QrCode::new(url.as_bytes()).expect("QR code");
    code.render::<svg::Color>()
        .min_dimensions(320, 320)
        .dark_color(svg::Color("#000000"))
        .light_color(svg::Color("#ffffff"))
        .build()
}

async fn upload_photo(host: &Host, token: &str, slug: &str) -> Value {
    let form = upload_form(&images::jpeg(640, 480), Some(Uuid::new_v4()), "IMG_0001.jpg", None);
    let response = host
        .client
        .post(host.url(&format!("/api/v1/events/{slug}/uploads")))
        .bearer_auth(token)
        .multipart(form)
        .send()
        .await
        .expect("upload");
    assert_eq!(response.status(), StatusCode::CREATED);
    response.json().await.expect("upload")
}

async fn a_hosts_first_event_runs_behind_caddy_with_https_links(backend: Backend) {
    let host = Host::start(backend).await;
    let base = host.caddy.base();

    let ready = host.client.get(host.url("/readyz")).send().await.expect("readyz");
    assert_eq!(ready.status(), StatusCode::OK);
    assert_eq!(header(&ready, "strict-transport-security"), "max-age=31536000");
    assert_eq!(ready.text().await.expect("body"), "ready");
    // Plain http only redirects to the https address.
    let plain = reqwest::Client::builder().no_proxy().redirect(reqwest::redirect::Policy::none()).build();
    let plain = plain.expect("client").get(format!("http://localhost:{}/readyz", host.caddy.http_port));
    let redirect = plain.send().await.expect("http");
    assert_eq!(redirect.status(), StatusCode::PERMANENT_REDIRECT);
    assert_eq!(header(&redirect, "location"), format!("{base}/readyz"));

    // The admin page's event: its join link and QR code carry the public https address.
    let event = host.create_event().await;
    let slug = event["slug"].as_str().expect("slug");
    let join_url = format!("{base}/e/{slug}?join={}", event["join_token"].as_str().expect("join token"));
    assert_eq!(event["join_url"], join_url.as_str());
    let qr = host.client.get(host.url(&format!("/e/{slug}/qr.svg"))).bearer_auth(ADMIN_TOKEN).send().await;
    let qr = qr.expect("QR code");
    assert_eq!(qr.status(), StatusCode::OK);
    assert_eq!(qr.text().await.expect("svg"), qr_svg(&join_url), "the QR code carries {join_url}");

    // The command line's event, as docs/deploy.md runs it: the env file and the state directory.
    let mut cli_env = env_file_example();
    for name in ["CONFETTI_PUBLIC_URL", "DATABASE_URL"] {
        cli_env.extend(host.env.get(name).map(|value| (name.to_owned(), value.clone())));
    }
    let printed = Command::new(env!("CARGO_BIN_EXE_confetti"))
        .args(["event", "create", "--name", "Garden party", "--password", "correct horse", "--data-dir"])
        .arg(&host.data_dir)
        .env_clear()
        .env("PATH", SERVICE_PATH)
        .envs(&cli_env)
        .output()
        .expect("confetti event create");
    let stdout = String::from_utf8_lossy(&printed.stdout);
    assert!(printed.status.success(), "{stdout}{}", String::from_utf8_lossy(&printed.stderr));
    assert!(stdout.contains(&format!("Guests join at: {base}/e/garden-party")), "{stdout}");
    assert!(stdout.contains(&format!("Organiser page: {base}/e/garden-party")), "{stdout}");

    // A guest joins and uploads; cookies are Secure behind https.
    let (token, cookie) = host.join(&event).await;
    assert!(cookie.contains("; Secure"), "{cookie}");
    let upload = upload_photo(&host, &token, slug).await;
    let id = upload["id"].as_str().expect("id");
    let upload = host.settled(&token, id, Duration::from_secs(60)).await;
    assert_eq!(upload["status"], "ready", "{upload}");
    let thumb = host.client.get(host.url(upload["urls"]["thumb"].as_str().expect("thumb")));
    let thumb = thumb.bearer_auth(&token).header("accept-encoding", "gzip, br, zstd").send().await.expect("thumb");
    assert_eq!(thumb.status(), StatusCode::OK);
    assert_eq!(header(&thumb, "content-encoding"), "", "nothing is compressed again");
    assert_eq!(host.upload_rows().await, 1);

    // /metrics stays on the machine.
    let metrics = host.client.get(host.url("/metrics")).send().await.expect("metrics");
    assert_eq!(metrics.status(), StatusCode::NOT_FOUND);
    let local = reqwest::get(format!("http://{}/metrics", host.metrics)).await.expect("local metrics");
    assert_eq!(local.status(), StatusCode::OK);
}

// ---- the resumable upload --------------------------------------------------------------

const VIDEO_BYTES: usize = 200 * 1000 * 1000;
/// The first attempt stops after this many bytes: the phone's Wi-Fi drops.
const CUT_AFTER: usize = 100 * 1000 * 1000;
const CHUNK: usize = 1 << 20;

/// A real 2 s H.264 clip (ffmpeg), padded to `total` bytes with a `free` box of noise at its
/// end: a valid MP4 of a phone video's size whose poster is quick to make.
fn video_of(dir: &Path, total: usize) -> Vec<u8> {
    let clip = dir.join("clip.mp4");
    let status = Command::new("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30"])
        .args(["-t", "2", "-c:v", "libx264", "-pix_fmt", "yuv420p"])
        .arg(&clip)
        .status()
        .expect("ffmpeg runs (scripts/test.sh installs it: apt-get install -y ffmpeg)");
    assert!(status.success(), "ffmpeg made no clip");
    let mut bytes = std::fs::read(&clip).expect("the clip");
    let padding = total - bytes.len();
    bytes.extend_from_slice(&u32::try_from(padding).expect("a 32-bit box").to_be_bytes());
    bytes.extend_from_slice(b"free");
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    bytes.extend((0..padding - 8).map(|_| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 24) as u8
    }));
    bytes
}

/// The bytes of `file` from `from`, sent in chunks; with `cut_at`, the body fails there (the
/// connection drops) although its `Content-Length` promised the rest.
fn body_from(file: &Bytes, from: usize, cut_at: Option<usize>) -> reqwest::Body {
    let end = cut_at.unwrap_or(file.len());
    let chunks: Vec<Result<Bytes, std::io::Error>> = (from..end)
        .step_by(CHUNK)
        .map(|start| Ok(file.slice(start..(start + CHUNK).min(end))))
        .chain(cut_at.map(|_| Err(std::io::Error::other("the venue's Wi-Fi dropped"))))
        .collect();
    reqwest::Body::wrap_stream(futures_util::stream::iter(chunks))
}

/// A resumable upload's requests, through `base`.
struct Resumable<'a> {
    client: &'a reqwest::Client,
    base: String,
    token: &'a str,
}

impl Resumable<'_> {
    /// Creates the resource (careful creation: no body); its path.
    async fn create(&self, slug: &str, key: Uuid, length: usize) -> String {
        let b64 = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
        let response = self
            .client
            .post(format!("{}/api/v1/events/{slug}/uploads/resumable", self.base))
            .bearer_auth(self.token)
            .header("Upload-Complete", "?0")
            .header("Upload-Length", length.to_string())
            .header(
                "Upload-Metadata",
                format!("client_upload_id {},filename {}", b64(&key.to_string()), b64("party.mp4")),
            )
            .send()
            .await
            .expect("create");
        assert_eq!(response.status(), StatusCode::CREATED);
        header(&response, "location")
    }

    /// Appends the rest of `file` from `offset` (with `cut_at`, failing there).
    async fn append(
        &self,
        location: &str,
        file: &Bytes,
        offset: usize,
        cut_at: Option<usize>,
        complete: bool,
    ) -> reqwest::Result<reqwest::Response> {
        self.client
            .patch(format!("{}{location}", self.base))
            .bearer_auth(self.token)
            .header("Content-Type", "application/partial-upload")
            .header("Content-Length", (file.len() - offset).to_string())
            .header("Upload-Offset", offset.to_string())
            .header("Upload-Complete", if complete { "?1" } else { "?0" })
            .body(body_from(file, offset, cut_at))
            .send()
            .await
    }

    async fn offset(&self, location: &str) -> usize {
        let response = self.client.head(format!("{}{location}", self.base)).bearer_auth(self.token).send().await;
        let response = response.expect("HEAD");
        assert_eq!(response.status(), StatusCode::NO_CONTENT);
        header(&response, "upload-offset").parse().expect("Upload-Offset")
    }
}

async fn a_200_mb_video_cut_halfway_resumes_through_caddy_and_is_stored_once_byte_for_byte(backend: Backend) {
    let host = Host::start(backend).await;
    let event = host.create_event().await;
    let slug = event["slug"].as_str().expect("slug");
    let (token, _) = host.join(&event).await;
    let file = Bytes::from(video_of(host.dir.path(), VIDEO_BYTES));
    let through_caddy = Resumable { client: &host.client, base: host.caddy.base(), token: &token };

    let location = through_caddy.create(slug, Uuid::new_v4(), file.len()).await;
    let cut = through_caddy.append(&location, &file, 0, Some(CUT_AFTER), true).await;
    assert!(cut.is_err(), "the first attempt was cut: {cut:?}");
    // Caddy streamed the body as it came: what reached Confetti before the cut is kept.
    let offset = through_caddy.offset(&location).await;
    assert!((CUT_AFTER / 2..=CUT_AFTER).contains(&offset), "kept {offset} of the {CUT_AFTER} bytes sent");
    assert_eq!(host.upload_rows().await, 0, "nothing stored before the last byte");

    let started = Instant::now();
    let resumed = through_caddy.append(&location, &file, offset, None, true).await.expect("the rest");
    let through_caddy_took = started.elapsed();
    assert_eq!(resumed.status(), StatusCode::CREATED);
    let upload: Value = resumed.json().await.expect("upload");
    let expected_sha256 = hex::encode(Sha256::digest(&file));
    assert_eq!(
        (upload["kind"].as_str(), upload["bytes"].as_u64()),
        (Some("video"), Some(file.len() as u64)),
        "{upload}"
    );
    assert_eq!(upload["sha256"], expected_sha256.as_str());
    assert_eq!(host.upload_rows().await, 1, "exactly one row");

    // The original comes back through Caddy, byte for byte.
    let id = upload["id"].as_str().expect("id");
    let original = host.client.get(host.url(&format!("/api/v1/uploads/{id}/original"))).bearer_auth(&token);
    let mut original = original.send().await.expect("original").bytes_stream();
    let (mut hasher, mut length) = (Sha256::new(), 0);
    while let Some(chunk) = original.next().await {
        let chunk = chunk.expect("the original's bytes");
        length += chunk.len();
        hasher.update(&chunk);
    }
    assert_eq!((length, hex::encode(hasher.finalize())), (file.len(), expected_sha256));
    let upload = host.settled(&token, id, Duration::from_secs(60)).await;
    assert_eq!((upload["status"].as_str(), upload["poster"].as_bool()), (Some("ready"), Some(true)), "{upload}");

    // For comparison, 100 MB appended through Caddy and straight to Confetti, each to an
    // upload then cancelled: nothing more is stored.
    let direct = Resumable { client: &host.client, base: format!("http://{}", host.direct), token: &token };
    let caddy_rate = timed_append(&through_caddy, slug, &file).await;
    let direct_rate = timed_append(&direct, slug, &file).await;
    assert_eq!(host.upload_rows().await, 1);
    eprintln!(
        "{backend:?}: the cut upload resumed through Caddy in {through_caddy_took:.2?}; \
         100 MB appended through Caddy (TLS, HTTP/1.1) at {caddy_rate:.0} MB/s, straight to Confetti at {direct_rate:.0} MB/s"
    );
}

/// Appends the first 100 MB of `file` to a new upload and cancels it; MB/s.
async fn timed_append(to: &Resumable<'_>, slug: &str, file: &Bytes) -> f64 {
    let location = to.create(slug, Uuid::new_v4(), file.len()).await;
    let started = Instant::now();
    let sent = to.append(&location, &file.slice(..CUT_AFTER), 0, None, false).await.expect("append");
    let took = started.elapsed();
    assert_eq!(sent.status(), StatusCode::NO_CONTENT);
    let cancelled = to.client.delete(format!("{}{location}", to.base)).bearer_auth(to.token).send().await;
    assert_eq!(cancelled.expect("DELETE").status(), StatusCode::NO_CONTENT);
    CUT_AFTER as f64 / 1e6 / took.as_secs_f64()
}

// ---- the client's address --------------------------------------------------------------

async fn join_from(client: &reqwest::Client, host: &Host, slug: &str, join_token: &str, forwarded: &str) -> StatusCode {
    let response = client
        .post(host.url(&format!("/api/v1/events/{slug}/guests")))
        .header("x-forwarded-for", forwarded)
        .json(&json!({"join_token": join_token, "display_name": "Mallory"}))
        .send()
        .await
        .expect("join");
    response.status()
}

async fn through_caddy_the_throttle_counts_each_phone_by_its_own_address(backend: Backend) {
    let host = Host::start(backend).await;
    let event = host.create_event().await;
    let (slug, join_token) = (event["slug"].as_str().expect("slug"), event["join_token"].as_str().expect("token"));
    // Two phones: 127.0.0.2 guesses join tokens, inventing a new X-Forwarded-For each time.
    let guesser = host.caddy.client_from(IpAddr::from([127, 0, 0, 2]));
    for i in 0..5 {
        let status = join_from(&guesser, &host, slug, &format!("guess-{i}"), &format!("198.51.100.{i}")).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "guess {i}");
    }
    let locked = join_from(&guesser, &host, slug, join_token, "198.51.100.99").await;
    assert_eq!(locked, StatusCode::TOO_MANY_REQUESTS, "the guesser is known by its own address");
    // 127.0.0.3 is another phone, not Caddy's 127.0.0.1: it joins.
    let guest = host.caddy.client_from(IpAddr::from([127, 0, 0, 3]));
    assert_eq!(join_from(&guest, &host, slug, join_token, "203.0.113.1").await, StatusCode::CREATED);
}

// ---- the live stream -------------------------------------------------------------------

async fn the_live_stream_reaches_the_projector_through_caddy_as_it_happens(backend: Backend) {
    let host = Host::start(backend).await;
    let event = host.create_event().await;
    let slug = event["slug"].as_str().expect("slug");
    let (token, _) = host.join(&event).await;
    let live = host.client.get(host.url(&format!("/api/v1/events/{slug}/live"))).bearer_auth(&token);
    let opened = Instant::now();
    let mut live = live.header("accept-encoding", "gzip, br, zstd").send().await.expect("live");
    let opening = opened.elapsed();
    // Confetti answers at once; a proxy that waits for the first bytes before it sends the
    // headers (as Caddy's `encode` does) leaves the projector waiting up to the 15 s keep-alive.
    assert!(opening < Duration::from_secs(5), "the stream opened after {opening:?}");
    assert_eq!(live.status(), StatusCode::OK);
    assert_eq!(header(&live, "content-type"), "text/event-stream");
    assert_eq!(header(&live, "content-encoding"), "");

    let upload = upload_photo(&host, &token, slug).await;
    let stored = Instant::now();
    let (kind, announced) = next_sse(&mut live).await;
    assert_eq!((kind.as_str(), &announced["id"]), ("upload", &upload["id"]));
    eprintln!("{backend:?}: announced through Caddy {:.2?} after the upload's answer", stored.elapsed());
}

// ---- a restart -------------------------------------------------------------------------

async fn restarting_confetti_is_a_pause_for_phones_not_an_error(backend: Backend) {
    let mut host = Host::start(backend).await;
    let event = host.create_event().await;
    // `systemctl restart confetti`: SIGTERM (KillSignal=), a clean exit well within
    // TimeoutStopSec=, and a new process.
    let (status, took) = host.stop_confetti();
    assert!(status.success(), "{status}");
    eprintln!("{backend:?}: stopped {took:.2?} after SIGTERM");
    // A phone opens the event's page while nothing listens: Caddy keeps trying to connect
    // (lb_try_duration) and answers once Confetti is back.
    let page = host.client.get(host.url(&format!("/e/{}", event["slug"].as_str().expect("slug"))));
    let page = tokio::spawn(page.send());
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(!page.is_finished(), "the page waits for Confetti");
    host.start_confetti_again().await;
    assert_eq!(page.await.expect("task").expect("page").status(), StatusCode::OK);
}

// ---- the files themselves --------------------------------------------------------------

fn systemd_analyze() -> Command {
    let found = Command::new("systemd-analyze").arg("--version").output().is_ok_and(|o| o.status.success());
    assert!(found, "systemd-analyze is missing: install Debian's `systemd` package (scripts/test.sh does)");
    Command::new("systemd-analyze")
}

/// The unit with the built binary in place of `/usr/local/bin/confetti`, which `verify`
/// wants to exist.
fn unit_for_this_machine(dir: &Path) -> PathBuf {
    let unit = std::fs::read_to_string(repo_file(UNIT)).expect("the unit");
    let path = dir.join("confetti.service");
    std::fs::write(&path, unit.replace(INSTALLED_BINARY, env!("CARGO_BIN_EXE_confetti"))).expect("unit copy");
    path
}

#[test]
fn the_unit_passes_systemd_analyze_verify_and_its_security_review() {
    let dir = tempfile::tempdir().expect("dir");
    let unit = unit_for_this_machine(dir.path());
    let verify = systemd_analyze().arg("verify").arg(&unit).output().expect("systemd-analyze verify");
    let complaints = String::from_utf8_lossy(&verify.stderr);
    assert!(verify.status.success() && complaints.trim().is_empty(), "systemd-analyze verify: {complaints}");

    let review = systemd_analyze().args(["security", "--offline=yes", "--threshold=30"]).arg(&unit).output();
    let review = review.expect("systemd-analyze security");
    let text = String::from_utf8_lossy(&review.stdout);
    let overall = text.lines().find(|l| l.contains("Overall exposure level")).unwrap_or_default();
    eprintln!("{}", overall.trim());
    assert!(review.status.success(), "exposure above 3.0: {text}");

    // The system calls Confetti's confined workers restrict themselves with stay allowed.
    let filter = unit_value("SystemCallFilter");
    let refused = filter.strip_prefix('~').expect("a list of what is refused");
    let expanded = systemd_analyze().arg("syscall-filter").args(refused.split_whitespace()).output();
    let expanded = String::from_utf8_lossy(&expanded.expect("systemd-analyze syscall-filter").stdout).into_owned();
    let refused_calls: Vec<&str> = expanded.lines().map(str::trim).filter(|l| !l.starts_with(['@', '#'])).collect();
    for call in
        ["seccomp", "prctl", "landlock_create_ruleset", "landlock_restrict_self", "setrlimit", "prlimit64", "execve"]
    {
        assert!(!refused_calls.contains(&call), "{call} is refused by SystemCallFilter={filter}");
    }
}

#[test]
fn the_unit_the_env_file_and_the_caddyfile_agree() {
    let env = assignments(unit_values("Environment").iter().map(String::as_str));
    assert_eq!(env["CONFETTI_BIND"], "127.0.0.1:8080", "only Caddy, on this machine, reaches Confetti");
    assert_eq!(env["CONFETTI_TRUSTED_PROXY"], "127.0.0.1", "Caddy's X-Forwarded-For is believed");
    assert_eq!(env["CONFETTI_DATA_DIR"], format!("/var/lib/{}", unit_value("StateDirectory")));
    assert_eq!(unit_value("EnvironmentFile"), "/etc/confetti/confetti.env");
    assert!(env_file_example()["CONFETTI_PUBLIC_URL"].starts_with("https://"));
    let caddyfile = std::fs::read_to_string(repo_file("deploy/Caddyfile")).expect("Caddyfile");
    assert!(caddyfile.contains(&format!("reverse_proxy {{$CONFETTI_UPSTREAM:{}}}", env["CONFETTI_BIND"])));
    // systemd waits for the shutdown grace (30 s by default) before it kills.
    assert_eq!(unit_value("KillSignal"), "SIGTERM");
    let stop: u64 = unit_value("TimeoutStopSec").trim_end_matches('s').parse().expect("seconds");
    let grace = env.get("CONFETTI_SHUTDOWN_GRACE_S").map_or(30, |s| s.parse().expect("seconds"));
    assert!(stop > grace, "TimeoutStopSec={stop}s is not above the {grace} s grace");
}

/// The first object in `value` whose `handler` is `name`.
fn handler<'a>(value: &'a Value, name: &str) -> Option<&'a Value> {
    match value {
        Value::Object(map) if map.get("handler").is_some_and(|h| h == name) => Some(value),
        Value::Object(map) => map.values().find_map(|v| handler(v, name)),
        Value::Array(items) => items.iter().find_map(|v| handler(v, name)),
        _ => None,
    }
}

#[test]
fn the_caddyfile_given_a_real_domain_asks_lets_encrypt_for_its_certificate() {
    let home = tempfile::tempdir().expect("dir");
    let adapted = Command::new("caddy")
        .args(["adapt", "--adapter", "caddyfile", "--config"])
        .arg(repo_file("deploy/Caddyfile"))
        .env_clear()
        .env("HOME", home.path())
        .env("CONFETTI_DOMAIN", "photos.example.org")
        .env("CONFETTI_TLS", "host@example.org")
        .output()
        .expect("caddy adapt (scripts/test.sh installs caddy: apt-get install -y caddy)");
    assert!(adapted.status.success(), "{}", String::from_utf8_lossy(&adapted.stderr));
    let config: Value = serde_json::from_slice(&adapted.stdout).expect("JSON");
    let policy = &config["apps"]["tls"]["automation"]["policies"][0];
    assert_eq!(policy["subjects"], json!(["photos.example.org"]));
    assert_eq!(policy["issuers"][0], json!({"module": "acme", "email": "host@example.org"}), "{policy}");
    let http = &config["apps"]["http"];
    assert_eq!(http["http_port"], 80);
    assert_eq!(http["servers"]["srv0"]["listen"], json!([":443"]));
    let proxy = handler(http, "reverse_proxy").expect("a reverse_proxy");
    assert_eq!(proxy["upstreams"], json!([{"dial": "127.0.0.1:8080"}]));
    assert_eq!(proxy["flush_interval"], -1);
    assert!(proxy.get("buffer_requests").is_none(), "request bodies are streamed: {proxy}");
    assert!(handler(http, "encode").is_none(), "nothing is compressed");
    assert!(handler(http, "request_body").is_none(), "no body limit below Confetti's own");
}
