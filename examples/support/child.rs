use std::io::BufRead;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use super::ADMIN_TOKEN;
use super::procfs::exited;

/// The release binary of this package, checked to exist.
pub fn release_binary(given: Option<PathBuf>) -> Result<PathBuf> {
    let bin = given.unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/confetti"));
    anyhow::ensure!(
        bin.is_file(),
        "{} does not exist: run `cargo build --release` first (or pass --confetti-bin)",
        bin.display()
    );
    Ok(bin)
}

/// A server child process with its own temp directory (log, data). Killed and reaped on drop,
/// before its temp directory is removed, so no run leaves a server behind.
pub struct ChildServer {
    pub name: &'static str,
    child: Child,
    /// Held open for servers that exit when they read end-of-file on stdin.
    _stdin: Option<ChildStdin>,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    log: PathBuf,
    dir: tempfile::TempDir,
}

impl ChildServer {
    /// `confetti serve --no-demo` on a free loopback port with a fresh data directory (SQLite
    /// and local blobs) and [`ADMIN_TOKEN`]; the operator's own `DATABASE_URL` and storage
    /// settings are not inherited. `env` comes last, so it can set anything else
    /// (`CONFETTI_DERIVATIVE_WORKERS` is the default unless given).
    pub async fn confetti(bin: &Path, env: &[(String, String)]) -> Result<Self> {
        let dir = tempfile::Builder::new().prefix("confetti-bench-").tempdir()?;
        let addr = free_loopback_port()?;
        let data = dir.path().join("data");
        std::fs::create_dir_all(&data)?;
        let mut command = Command::new(bin);
        command
            .args(["serve", "--no-demo", "--bind"])
            .arg(addr.to_string())
            .arg("--data-dir")
            .arg(&data)
            .env("CONFETTI_ADMIN_TOKEN", ADMIN_TOKEN)
            .env("CONFETTI_PUBLIC_URL", format!("http://{addr}"));
        for name in
            ["DATABASE_URL", "CONFETTI_STORAGE", "CONFETTI_DATA_DIR", "CONFETTI_BIND", "CONFETTI_DERIVATIVE_WORKERS"]
        {
            command.env_remove(name);
        }
        command.envs(env.iter().map(|(k, v)| (k, v))).stdin(Stdio::null());
        Self::spawn("confetti", command, addr, dir).await
    }

    /// Starts `command`, which must serve `/healthz` on `addr`, logging into `dir`; returns
    /// once it answers there.
    pub async fn spawn(
        name: &'static str,
        mut command: Command,
        addr: SocketAddr,
        dir: tempfile::TempDir,
    ) -> Result<Self> {
        let log = dir.path().join("server.log");
        let log_file = std::fs::File::create(&log)?;
        let mut child = command
            .stdout(log_file.try_clone()?)
            .stderr(log_file)
            .spawn()
            .with_context(|| format!("starting the {name} server"))?;
        let stdin = child.stdin.take();
        let server = Self { name, child, _stdin: stdin, base: format!("http://{addr}"), log, dir };
        server.wait_healthy().await?;
        Ok(server)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server's temp directory (`data/` below it for Confetti).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Polls `/healthz` for at most 60 s.
    async fn wait_healthy(&self) -> Result<()> {
        let client = reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(2)).build()?;
        let url = format!("{}/healthz", self.base);
        for _ in 0..600 {
            if let Ok(r) = client.get(&url).send().await
                && r.status().is_success()
            {
                return Ok(());
            }
            // Borrowing `child` mutably is not possible here; /proc tells whether it lives.
            if exited(self.pid()) {
                bail!("the {} server exited before serving; its log:\n{}", self.name, tail(&self.log, 40));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        bail!("the {} server did not answer {url} within 60 s; its log:\n{}", self.name, tail(&self.log, 40))
    }
}

impl Drop for ChildServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A free port on 127.0.0.1 (closed again right away; the child binds it a moment later).
pub fn free_loopback_port() -> Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?)
}

/// The last `lines` lines of a log file.
fn tail(path: &Path, lines: usize) -> String {
    let Ok(file) = std::fs::File::open(path) else {
        return String::new();
    };
    let all: Vec<String> = std::io::BufReader::new(file).lines().map_while(Result::ok).collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
