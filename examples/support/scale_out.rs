//! Several Confetti instances as `docs/deploy.md` deploys them, for benchmarks: an S3-protocol
//! server (`s3s-fs`), a scratch PostgreSQL database, `confetti serve` child processes on fixed
//! ports (so one can be killed or stopped and started again behind the same haproxy line),
//! and haproxy with `deploy/haproxy.cfg` over TLS. Every process is killed and reaped when its
//! guard drops; the scratch database is dropped too.
//!
//! Included by a benchmark with `#[path = "support/scale_out.rs"] mod scale_out;` next to
//! `mod support;` (it uses `support::child`).

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};

use crate::support::ADMIN_TOKEN;
use crate::support::child::{ChildServer, free_loopback_port};
use crate::support::procfs::exited;

const BUCKET: &str = "confetti";
const ACCESS_KEY: &str = "confetti-bench";
const SECRET_KEY: &str = "confetti-bench-secret";

/// A child process killed and reaped on drop.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Where an executable is: on the `PATH`, the sbin directories, or cargo's bin directory.
pub fn find_executable(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let cargo_bin = std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo/bin"));
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/usr/local/sbin", "/sbin"].map(PathBuf::from))
        .chain(cargo_bin)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// `s3s-fs` on a free loopback port over a fresh directory: every object is a plain file at
/// `<root>/<bucket>/<key>`, an open multipart upload a `.upload-<id>.json` in the root.
pub struct S3Fs {
    pub endpoint: String,
    root: tempfile::TempDir,
    _process: Guard,
}

impl S3Fs {
    pub fn start() -> Result<Self> {
        let binary = std::env::var_os("S3S_FS")
            .map(PathBuf::from)
            .or_else(|| find_executable("s3s-fs"))
            .context("s3s-fs is needed: cargo install s3s-fs@0.14.1 --locked --features binary")?;
        let root = tempfile::Builder::new().prefix("confetti-bench-s3-").tempdir()?;
        std::fs::create_dir(root.path().join(BUCKET))?;
        let port = free_loopback_port()?.port();
        let child = Command::new(binary)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
            .arg(root.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting s3s-fs")?;
        let process = Guard(child);
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            ensure!(started.elapsed() < Duration::from_secs(10), "s3s-fs did not listen within 10 s");
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(Self { endpoint: format!("http://127.0.0.1:{port}"), root, _process: process })
    }

    /// An instance's `--storage`.
    pub fn storage_url(&self) -> String {
        format!("s3://{BUCKET}")
    }

    /// The `AWS_*` environment an operator gives each instance.
    pub fn env(&self) -> Vec<(String, String)> {
        [
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY),
            ("AWS_REGION", "us-east-1"),
            ("AWS_ENDPOINT", &self.endpoint),
            ("AWS_ALLOW_HTTP", "true"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
    }

    pub fn bucket_dir(&self) -> PathBuf {
        self.root.path().join(BUCKET)
    }

    /// Multipart uploads begun and neither completed nor aborted.
    pub fn open_multipart_uploads(&self) -> usize {
        std::fs::read_dir(self.root.path())
            .map(|entries| {
                entries
                    .flatten()
                    .filter(|e| {
                        let name = e.file_name();
                        let name = name.to_string_lossy();
                        name.starts_with(".upload-") && name.ends_with(".json")
                    })
                    .count()
            })
            .unwrap_or(0)
    }

    /// Objects under the bucket's temporary area, `tmp/`.
    pub fn temporary_blobs(&self) -> usize {
        count_files(&self.bucket_dir().join("tmp"))
    }

    /// Removes every stored object (between benchmark runs; s3s-fs keeps them as plain files).
    pub fn empty_bucket(&self) -> Result<()> {
        for entry in std::fs::read_dir(self.bucket_dir())? {
            let path = entry?.path();
            if path.is_dir() { std::fs::remove_dir_all(&path)? } else { std::fs::remove_file(&path)? }
        }
        Ok(())
    }
}

fn count_files(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|entries| entries.flatten().map(|e| if e.path().is_dir() { count_files(&e.path()) } else { 1 }).sum())
        .unwrap_or(0)
}

/// A fresh database on the PostgreSQL server `TEST_DATABASE_URL` names (default the local
/// one), dropped again on drop.
pub struct ScratchDatabase {
    pub url: String,
    server: String,
    name: String,
}

impl ScratchDatabase {
    pub async fn create() -> Result<Self> {
        let server = std::env::var("TEST_DATABASE_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned());
        let name = format!("bench_{}", uuid::Uuid::new_v4().simple());
        let admin = sqlx::PgPool::connect(&server).await.with_context(|| format!("PostgreSQL at {server}"))?;
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}"))).execute(&admin).await?;
        admin.close().await;
        let base = server.rsplit_once('/').map(|(b, _)| b).unwrap_or(&server);
        Ok(Self { url: format!("{base}/{name}"), server, name })
    }
}

impl Drop for ScratchDatabase {
    fn drop(&mut self) {
        let (server, statement) = (self.server.clone(), format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name));
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().ok()?;
            runtime.block_on(async {
                let admin = sqlx::PgPool::connect(&server).await.ok()?;
                let done = sqlx::query(sqlx::AssertSqlSafe(statement)).execute(&admin).await.ok();
                admin.close().await;
                done
            })
        })
        .join();
        if !matches!(dropped, Ok(Some(_))) {
            eprintln!("could not drop the scratch database {}", self.name);
        }
    }
}

/// One `confetti serve` on a fixed port with a data directory that outlives its process.
pub struct Instance {
    pub name: &'static str,
    pub addr: std::net::SocketAddr,
    data_dir: PathBuf,
    env: Vec<(String, String)>,
    server: Option<ChildServer>,
}

impl Instance {
    /// `env` comes on top of the shared settings (database, bucket, public URL, trusted proxy).
    pub fn new(name: &'static str, parent: &Path, env: Vec<(String, String)>) -> Result<Self> {
        let data_dir = parent.join(name);
        std::fs::create_dir_all(&data_dir)?;
        Ok(Self { name, addr: free_loopback_port()?, data_dir, env, server: None })
    }

    /// Starts the process and waits until it answers `/healthz` (at most 60 s).
    pub async fn start(&mut self, binary: &Path) -> Result<()> {
        ensure!(self.server.is_none(), "{} is already running", self.name);
        let log_dir = tempfile::Builder::new().prefix("confetti-bench-log-").tempdir()?;
        let mut command = Command::new(binary);
        command
            .args(["serve", "--no-demo", "--min-free-bytes", "0", "--bind"])
            .arg(self.addr.to_string())
            .arg("--data-dir")
            .arg(&self.data_dir)
            .env("CONFETTI_ADMIN_TOKEN", ADMIN_TOKEN)
            .env("RUST_LOG", "warn");
        for name in
            ["DATABASE_URL", "CONFETTI_STORAGE", "CONFETTI_DATA_DIR", "CONFETTI_BIND", "CONFETTI_DERIVATIVE_WORKERS"]
        {
            command.env_remove(name);
        }
        command.envs(self.env.iter().map(|(k, v)| (k, v))).stdin(Stdio::null());
        self.server = Some(ChildServer::spawn(self.name, command, self.addr, log_dir).await?);
        Ok(())
    }

    pub fn pid(&self) -> Option<u32> {
        self.server.as_ref().map(ChildServer::pid)
    }

    /// `kill -9`.
    pub fn kill9(&mut self) {
        // The guard sends SIGKILL and reaps.
        self.server = None;
    }

    /// SIGTERM, as a service manager stops it; waits until it exits (at most `limit`) and
    /// returns how long that took.
    pub async fn terminate(&mut self, limit: Duration) -> Result<Duration> {
        let pid = self.pid().context("not running")?;
        let started = Instant::now();
        // SAFETY: `kill` on the pid of a child this process has not reaped yet.
        unsafe {
            libc::kill(pid as libc::pid_t, libc::SIGTERM);
        }
        while !exited(pid) {
            if started.elapsed() > limit {
                bail!("{} did not exit within {limit:?} of SIGTERM", self.name);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let took = started.elapsed();
        self.server = None;
        Ok(took)
    }
}

/// haproxy with `deploy/haproxy.cfg`, on a free loopback port, with a self-signed certificate.
pub struct Haproxy {
    pub https_port: u16,
    admin_socket: PathBuf,
    _dir: tempfile::TempDir,
    _process: Guard,
}

impl Haproxy {
    pub fn start(backends: &[std::net::SocketAddr]) -> Result<Self> {
        let binary = find_executable("haproxy").context("haproxy is needed: apt-get install -y haproxy")?;
        let dir = tempfile::Builder::new().prefix("confetti-bench-lb-").tempdir()?;
        let (cert, key, pem) = (dir.path().join("cert.pem"), dir.path().join("key.pem"), dir.path().join("lb.pem"));
        let made = Command::new("openssl")
            .args(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2"])
            .args(["-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1"])
            .arg("-keyout")
            .arg(&key)
            .arg("-out")
            .arg(&cert)
            .output()
            .context("running openssl")?;
        ensure!(made.status.success(), "openssl req: {}", String::from_utf8_lossy(&made.stderr));
        std::fs::write(&pem, [std::fs::read(&cert)?, std::fs::read(&key)?].concat())?;
        let https_port = free_loopback_port()?.port();
        let admin_socket = dir.path().join("admin.sock");
        let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/haproxy.cfg");
        let mut command = Command::new(binary);
        command
            .arg("-db")
            .arg("-f")
            .arg(config)
            .env("LB_TLS_PEM", &pem)
            .env("LB_HTTPS_BIND", format!("127.0.0.1:{https_port}"))
            .env("LB_HTTP_BIND", format!("127.0.0.1:{}", free_loopback_port()?.port()))
            .env("LB_ADMIN_SOCKET", &admin_socket)
            .env("LB_UNPRIVILEGED", "1")
            .stdin(Stdio::null())
            // Its request log would be a line per upload: only warnings matter here.
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        for (i, backend) in backends.iter().enumerate() {
            command.env(format!("LB_BACKEND_{}", i + 1), backend.to_string());
        }
        let process = Guard(command.spawn().context("starting haproxy")?);
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", https_port)).is_err() || !admin_socket.exists() {
            ensure!(started.elapsed() < Duration::from_secs(10), "haproxy did not listen within 10 s");
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(Self { https_port, admin_socket, _dir: dir, _process: process })
    }

    pub fn base(&self) -> String {
        format!("https://127.0.0.1:{}", self.https_port)
    }

    /// The status haproxy gives a server of `backend confetti` (`UP`, `DOWN`, `UP 1/2`, …)
    /// and its last check (`L7OK`, `L4CON`, …).
    pub fn server_state(&self, server: &str) -> Result<(String, String)> {
        let mut stream = UnixStream::connect(&self.admin_socket)?;
        stream.set_read_timeout(Some(Duration::from_secs(5)))?;
        stream.write_all(b"show stat\n")?;
        let mut stat = String::new();
        stream.read_to_string(&mut stat)?;
        let header: Vec<&str> = stat.lines().next().unwrap_or_default().trim_start_matches("# ").split(',').collect();
        let column = |name: &str| header.iter().position(|h| *h == name).context("a column of show stat");
        let (status, check) = (column("status")?, column("check_status")?);
        stat.lines()
            .map(|line| line.split(',').collect::<Vec<_>>())
            .find(|f| f.first() == Some(&"confetti") && f.get(1) == Some(&server))
            .map(|f| (f[status].to_owned(), f[check].to_owned()))
            .with_context(|| format!("haproxy has no server {server}"))
    }

    /// Waits until haproxy's checks have `server` up (`UP`, check passed) or down; returns
    /// how long that took.
    pub async fn wait_for(&self, server: &str, up: bool, limit: Duration) -> Result<Duration> {
        let started = Instant::now();
        loop {
            let (status, check) = self.server_state(server)?;
            if (up && status == "UP" && check == "L7OK") || (!up && status == "DOWN") {
                return Ok(started.elapsed());
            }
            ensure!(
                started.elapsed() < limit,
                "{server} not {} in haproxy within {limit:?}",
                if up { "UP" } else { "DOWN" }
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Instances sharing one database and one bucket, behind haproxy.
pub struct Cluster {
    pub instances: Vec<Instance>,
    pub haproxy: Haproxy,
    pub database: ScratchDatabase,
    binary: PathBuf,
    _dir: tempfile::TempDir,
}

impl Cluster {
    /// `count` instances on `s3` and a fresh database, each with `env` added; ready behind
    /// haproxy when this returns.
    pub async fn start(binary: &Path, s3: &S3Fs, count: usize, env: &[(String, String)]) -> Result<Self> {
        const NAMES: [&str; 4] = ["confetti1", "confetti2", "confetti3", "confetti4"];
        ensure!(count <= NAMES.len(), "at most {} instances", NAMES.len());
        let dir = tempfile::Builder::new().prefix("confetti-bench-cluster-").tempdir()?;
        let database = ScratchDatabase::create().await?;
        // haproxy's address must be known to the instances (public URL) and theirs to it:
        // ports first, processes after.
        let mut instances = Vec::new();
        for name in &NAMES[..count] {
            instances.push(Instance::new(name, dir.path(), Vec::new())?);
        }
        let haproxy = Haproxy::start(&instances.iter().map(|i| i.addr).collect::<Vec<_>>())?;
        for instance in &mut instances {
            instance.env = [
                ("DATABASE_URL".to_owned(), database.url.clone()),
                ("CONFETTI_STORAGE".to_owned(), s3.storage_url()),
                ("CONFETTI_PUBLIC_URL".to_owned(), haproxy.base()),
                ("CONFETTI_TRUSTED_PROXY".to_owned(), "127.0.0.1".to_owned()),
            ]
            .into_iter()
            .chain(s3.env())
            .chain(env.iter().cloned())
            .collect();
            // One after the other: each runs the migrations at start.
            instance.start(binary).await?;
        }
        for instance in &instances {
            haproxy.wait_for(instance.name, true, Duration::from_secs(30)).await?;
        }
        Ok(Self { instances, haproxy, database, binary: binary.to_owned(), _dir: dir })
    }

    /// Starts instance `i` again on its port and data directory.
    pub async fn restart(&mut self, i: usize) -> Result<()> {
        let binary = self.binary.clone();
        self.instances[i].start(&binary).await
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Instances before the database they hold connections to.
        for instance in &mut self.instances {
            instance.kill9();
        }
    }
}

/// A client of haproxy (TLS, self-signed certificate), with `timeout` per request.
pub fn tls_client(timeout: Duration) -> Result<reqwest::Client> {
    Ok(reqwest::Client::builder()
        .no_proxy()
        .danger_accept_invalid_certs(true)
        .timeout(timeout)
        .pool_max_idle_per_host(64)
        .build()?)
}
