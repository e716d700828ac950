//! Media workers as an operator's machine sees them: every decode runs in a separate, confined
//! process of the server's binary; a worker that crashes or is killed mid-decode costs that one
//! job (tried twice, then `failed` with its reason), is replaced, and takes nothing else with it;
//! workers die with their server, `kill -9` included.

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{Backend, TestApp, settled_within, upload_ok};
use reqwest::StatusCode;

/// These tests look for this process's media workers in `/proc`: one test at a time.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A 10000×10000 PNG of about 300 KB: a worker takes seconds over it, row by row.
fn slow_png() -> Vec<u8> {
    let (w, h) = (10_000u32, 10_000u32);
    let mut bytes = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut bytes, w, h);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().expect("png header");
        let mut stream = writer.stream_writer().expect("png stream");
        let row: Vec<u8> = (0..w * 3).map(|i| (i % 7) as u8).collect();
        for _ in 0..h {
            std::io::Write::write_all(&mut stream, &row).expect("png row");
        }
        stream.finish().expect("png end");
    }
    bytes
}

/// A process's `/proc/<pid>/status` field.
fn status_field(pid: u32, field: &str) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|line| line.strip_prefix(field)?.strip_prefix(':').map(|v| v.trim().to_owned()))
}

/// The children of `parent` that run `confetti media-worker`.
fn workers_of(parent: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| status_field(pid, "PPid").as_deref() == Some(&parent.to_string()))
        .filter(|&pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|cmd| cmd.split(|&b| b == 0).any(|arg| arg == b"media-worker"))
        })
        .collect()
}

/// A worker of this process that has its job (its seccomp filter is in: spares have none yet).
async fn busy_worker(limit: Duration) -> u32 {
    let started = Instant::now();
    loop {
        let busy = workers_of(std::process::id())
            .into_iter()
            .find(|&pid| status_field(pid, "Seccomp").as_deref() == Some("2"));
        if let Some(pid) = busy {
            return pid;
        }
        assert!(started.elapsed() < limit, "no media worker took the job within {limit:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn kill(pid: u32, signal: i32) {
    // SAFETY: kill reads no memory; the pid is a child of this test process.
    assert_eq!(unsafe { libc::kill(pid as i32, signal) }, 0, "kill {pid}");
}

/// What the kernel holds a worker to, read from outside while it works: an empty environment,
/// stdin, stdout and stderr only, no capabilities, no new privileges, a seccomp filter, limits
/// on memory, CPU time, file size and core dumps.
async fn a_busy_worker_is_confined(backend: Backend) {
    let _one = ONE_AT_A_TIME.lock().await;
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Ada").await;
    let upload = upload_ok(&app, &guest, &slow_png()).await;
    let pid = busy_worker(Duration::from_secs(20)).await;

    let environ = std::fs::read(format!("/proc/{pid}/environ")).expect("environ");
    assert!(environ.is_empty(), "a worker's environment is empty, got {} bytes", environ.len());
    let mut fds: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("fds")
        .filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().into_owned()))
        .collect();
    fds.sort();
    assert_eq!(fds, ["0", "1", "2"], "a worker holds stdin, stdout and stderr only");
    assert_eq!(status_field(pid, "NoNewPrivs").as_deref(), Some("1"));
    assert_eq!(status_field(pid, "Seccomp").as_deref(), Some("2"));
    assert_eq!(status_field(pid, "CapEff").as_deref(), Some("0000000000000000"));
    assert_eq!(status_field(pid, "CapBnd").as_deref(), Some("0000000000000000"));
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).expect("limits");
    let limit = |name: &str| {
        let line = limits.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("{name} in {limits}"));
        line[name.len()..].split_whitespace().next().unwrap_or_default().to_owned()
    };
    assert_eq!(limit("Max core file size"), "0");
    assert_eq!(limit("Max file size"), "0");
    assert_ne!(limit("Max address space"), "unlimited");
    assert_ne!(limit("Max cpu time"), "unlimited");
    let token = app.organiser_login(&event).await;
    let done = settled_within(&app, &token, upload["id"].as_str().expect("id"), Duration::from_secs(120)).await;
    assert_eq!(done["status"], "ready", "{done}");
}

/// Kills the worker of one upload at both its attempts with `signal`: the upload ends `failed`
/// with the reason, another guest's photo is ready afterwards, and the server never stopped.
async fn killed_twice_mid_decode(backend: Backend, signal: i32, reason: &str) {
    let _one = ONE_AT_A_TIME.lock().await;
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Ada").await;
    let token = app.organiser_login(&event).await;
    let upload = upload_ok(&app, &guest, &slow_png()).await;
    let id = upload["id"].as_str().expect("id");
    for attempt in 1..=2 {
        let pid = busy_worker(Duration::from_secs(30)).await;
        kill(pid, signal);
        let killed = Instant::now();
        // The job's worker is gone; a fresh one waits for the next job.
        while workers_of(std::process::id()).contains(&pid) {
            assert!(killed.elapsed() < Duration::from_secs(5), "worker {pid} still there");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let (status, body) = app.get_json(&format!("/api/v1/uploads/{id}"), &token).await;
        assert_eq!(status, StatusCode::OK);
        if attempt == 1 {
            assert_eq!(body["status"], "processing", "one crash is tried again: {body}");
        }
        let replaced = Instant::now();
        while workers_of(std::process::id()).is_empty() {
            assert!(replaced.elapsed() < Duration::from_secs(5), "no worker replaced the killed one");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        println!("signal {signal}, attempt {attempt}: a worker waits again {:?} after the kill", killed.elapsed());
    }
    let failed = settled_within(&app, &token, id, Duration::from_secs(30)).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert!(failed["failure"].as_str().is_some_and(|f| f.contains(reason)), "{failed}");
    assert!(failed["urls"]["thumb"].is_null());
    // The original is kept, the server serves on, and the next photo is made as usual.
    let original = app.client.get(app.url(&format!("/api/v1/uploads/{id}/original"))).bearer_auth(&token).send().await;
    assert_eq!(original.expect("original").status(), StatusCode::OK);
    let other = app.join(&event, "Grace").await;
    let next = upload_ok(&app, &other, &common::images::jpeg(640, 480)).await;
    let next = settled_within(&app, &token, next["id"].as_str().expect("id"), Duration::from_secs(30)).await;
    assert_eq!(next["status"], "ready", "{next}");
    assert!(next["failure"].is_null());
    assert_eq!(app.db.pending_derivative_jobs().await.expect("jobs"), 0, "the failed job is not claimed again");
}

async fn a_worker_that_segfaults_twice_fails_the_upload_with_its_reason(backend: Backend) {
    killed_twice_mid_decode(backend, libc::SIGSEGV, "crashed on this file (signal 11)").await;
}

async fn a_worker_killed_twice_fails_the_upload_with_its_reason(backend: Backend) {
    killed_twice_mid_decode(backend, libc::SIGKILL, "used up its time or memory").await;
}

both_backends!(
    a_busy_worker_is_confined,
    a_worker_that_segfaults_twice_fails_the_upload_with_its_reason,
    a_worker_killed_twice_fails_the_upload_with_its_reason,
);

/// The server as an operator runs it, killed with SIGKILL: its waiting workers go with it (the
/// kernel's parent-death signal), none is left running as an orphan.
#[tokio::test]
async fn workers_die_with_their_server_even_on_kill_9() {
    let _one = ONE_AT_A_TIME.lock().await;
    let data = tempfile::tempdir().expect("tempdir");
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("port").local_addr().expect("addr").port();
    let mut server = std::process::Command::new(env!("CARGO_BIN_EXE_confetti"))
        .args(["serve", "--no-demo", "--bind", &format!("127.0.0.1:{port}")])
        .env("CONFETTI_DATA_DIR", data.path())
        .env("CONFETTI_ADMIN_TOKEN", "t")
        .env("CONFETTI_DERIVATIVE_WORKERS", "2")
        .env("CONFETTI_MIN_FREE_BYTES", "0")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start confetti");
    let started = Instant::now();
    let workers = loop {
        let workers = workers_of(server.id());
        if workers.len() == 2 {
            break workers;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "the server started no workers");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    server.kill().expect("kill -9");
    server.wait().expect("reaped");
    let killed = Instant::now();
    while workers.iter().any(|pid| {
        Path::new(&format!("/proc/{pid}")).exists() && status_field(*pid, "State").is_some_and(|s| !s.starts_with('Z'))
    }) {
        assert!(killed.elapsed() < Duration::from_secs(5), "workers {workers:?} outlived their server");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
