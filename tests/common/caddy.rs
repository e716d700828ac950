//! The single-server recipe's machine, for tests: the real `confetti` binary started as
//! `deploy/confetti.service` starts it (its `ExecStart=` and `Environment=` lines, then
//! `deploy/confetti.env.example`; only ports, directories, the database and the admin token are
//! a test's own), and Caddy in front, started with `deploy/Caddyfile` (the file the deployment
//! guide describes) given the test's ports through its variables and `tls internal` (Caddy's
//! local CA) in place of Let's Encrypt, its storage in a temporary directory. Clients trust that
//! CA's root certificate and nothing else. Processes are killed when their guards drop, and a
//! failing test prints the tail of their logs.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::{Backend, TestDatabase, fresh_postgres_database};

pub const ADMIN_TOKEN: &str = "deploy-recipe-admin-token";
pub const UNIT: &str = "deploy/confetti.service";
pub const ENV_EXAMPLE: &str = "deploy/confetti.env.example";
/// Where the unit installs the binary; the tests run the one cargo built.
pub const INSTALLED_BINARY: &str = "/usr/local/bin/confetti";
/// systemd's default `PATH` for services.
pub const SERVICE_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

pub fn repo_file(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// The values of every `Key=` line of the unit, in order.
pub fn unit_values(key: &str) -> Vec<String> {
    let unit = std::fs::read_to_string(repo_file(UNIT)).expect("the unit");
    let prefix = format!("{key}=");
    unit.lines().filter_map(|line| line.strip_prefix(&prefix)).map(str::to_owned).collect()
}

pub fn unit_value(key: &str) -> String {
    let values = unit_values(key);
    assert_eq!(values.len(), 1, "one {key}= line in {UNIT}: {values:?}");
    values[0].clone()
}

/// `NAME=value` lines (systemd's `Environment=` values, an `EnvironmentFile=`) as pairs.
pub fn assignments<'a>(lines: impl Iterator<Item = &'a str>) -> BTreeMap<String, String> {
    lines
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| {
            let (name, value) = line.split_once('=').unwrap_or_else(|| panic!("not NAME=value: {line}"));
            (name.to_owned(), value.to_owned())
        })
        .collect()
}

/// The environment the unit gives Confetti: its `Environment=` lines, then the env file's
/// values, which win (as systemd reads them).
pub fn unit_environment() -> BTreeMap<String, String> {
    let mut env = assignments(unit_values("Environment").iter().map(String::as_str));
    env.extend(env_file_example());
    env
}

pub fn env_file_example() -> BTreeMap<String, String> {
    assignments(std::fs::read_to_string(repo_file(ENV_EXAMPLE)).expect("the env file example").lines())
}

/// A child process (`confetti serve`, `caddy run`) writing to its log, killed when dropped;
/// the end of its log is printed when a test fails.
pub struct Process {
    name: &'static str,
    child: Child,
    log: PathBuf,
}

impl Process {
    /// Starts `command` with its output appended to `dir/{name}.log`.
    fn spawn(name: &'static str, command: &mut Command, dir: &Path) -> std::io::Result<Self> {
        let log = dir.join(format!("{name}.log"));
        let file = std::fs::OpenOptions::new().create(true).append(true).open(&log)?;
        let child = command.stdin(Stdio::null()).stdout(file.try_clone()?).stderr(file).spawn()?;
        Ok(Self { name, child, log })
    }

    /// Whether it has exited.
    fn exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    fn last_lines(&self) -> String {
        log_tail(&self.log, 30)
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("---- {} log, last lines ----\n{}", self.name, log_tail(&self.log, 40));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One server as the recipe sets it up: Confetti and Caddy in front. Dropped in this order:
/// the processes, then the database, then the directory.
pub struct Host {
    pub caddy: Caddy,
    confetti: Option<Process>,
    /// Confetti's own address (what only Caddy reaches in production).
    pub direct: SocketAddr,
    pub metrics: SocketAddr,
    /// The environment Confetti runs with.
    pub env: BTreeMap<String, String>,
    pub client: reqwest::Client,
    pub database: Option<TestDatabase>,
    pub data_dir: PathBuf,
    /// Logs, Caddy's storage, the data directory; removed last.
    pub dir: tempfile::TempDir,
}

impl Host {
    pub async fn start(backend: Backend) -> Self {
        let dir = tempfile::Builder::new().prefix("confetti-deploy-").tempdir().expect("temp dir");
        let database = match backend {
            Backend::Sqlite => None,
            Backend::Postgres | Backend::S3 => Some(fresh_postgres_database().await),
        };
        let (direct, metrics) = (loopback(free_port()), loopback(free_port()));
        let https_port = free_port();
        let data_dir = dir.path().join("var-lib-confetti");
        std::fs::create_dir(&data_dir).expect("the state directory");
        let mut env = unit_environment();
        // The host's own: their domain (in place of the example's) and an admin token.
        env.insert("CONFETTI_PUBLIC_URL".into(), format!("https://localhost:{https_port}"));
        env.insert("CONFETTI_ADMIN_TOKEN".into(), ADMIN_TOKEN.into());
        // Where a test differs from the server: ports and directories of its own.
        env.insert("CONFETTI_BIND".into(), direct.to_string());
        env.insert("CONFETTI_METRICS_BIND".into(), metrics.to_string());
        env.insert("CONFETTI_DATA_DIR".into(), data_dir.display().to_string());
        if let Some(url) = &database {
            env.insert("DATABASE_URL".into(), url.to_string());
        }
        let confetti = start_confetti(dir.path(), &env, direct).await;
        let caddy = Caddy::start(dir.path(), https_port, direct).await;
        let client = caddy.client().timeout(Duration::from_secs(120)).build().expect("client");
        Self { caddy, confetti: Some(confetti), direct, metrics, env, client, database, data_dir, dir }
    }

    /// `systemctl stop`: SIGTERM, then at most `TimeoutStopSec` for the exit; its status.
    pub fn stop_confetti(&mut self) -> (std::process::ExitStatus, Duration) {
        let mut confetti = self.confetti.take().expect("a running confetti");
        let pid = i32::try_from(confetti.child.id()).expect("pid");
        // SAFETY: kill(2) on the child this guard owns and has not reaped.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0, "SIGTERM");
        let limit = Duration::from_secs(unit_value("TimeoutStopSec").trim_end_matches('s').parse().expect("seconds"));
        let stopping = Instant::now();
        loop {
            if let Ok(Some(status)) = confetti.child.try_wait() {
                return (status, stopping.elapsed());
            }
            assert!(stopping.elapsed() < limit, "confetti still running {limit:?} after SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub async fn start_confetti_again(&mut self) {
        assert!(self.confetti.is_none(), "stop it first");
        self.confetti = Some(start_confetti(self.dir.path(), &self.env, self.direct).await);
    }

    pub fn url(&self, path: &str) -> String {
        self.caddy.url(path)
    }

    pub async fn create_event(&self) -> Value {
        let response = self
            .client
            .post(self.url("/api/v1/events"))
            .bearer_auth(ADMIN_TOKEN)
            .json(&json!({"name": "Anna & Ben", "organiser_password": "correct horse"}))
            .send()
            .await
            .expect("create event");
        assert_eq!(response.status(), StatusCode::CREATED);
        response.json().await.expect("event")
    }

    pub async fn join(&self, event: &Value) -> (String, String) {
        let response = self
            .client
            .post(self.url(&format!("/api/v1/events/{}/guests", event["slug"].as_str().expect("slug"))))
            .json(&json!({"join_token": event["join_token"], "display_name": "Ada"}))
            .send()
            .await
            .expect("join");
        assert_eq!(response.status(), StatusCode::CREATED);
        let cookie = header(&response, "set-cookie");
        let body: Value = response.json().await.expect("guest");
        (body["token"].as_str().expect("token").to_owned(), cookie)
    }

    pub async fn get(&self, path: &str, token: &str) -> Value {
        let response = self.client.get(self.url(path)).bearer_auth(token).send().await.expect("GET");
        assert_eq!(response.status(), StatusCode::OK, "GET {path}");
        response.json().await.expect("json")
    }

    /// Waits until the upload is no longer `processing`, at most `limit`; returns it.
    pub async fn settled(&self, token: &str, id: &str, limit: Duration) -> Value {
        let started = Instant::now();
        loop {
            let upload = self.get(&format!("/api/v1/uploads/{id}"), token).await;
            if upload["status"] != "processing" {
                return upload;
            }
            assert!(started.elapsed() < limit, "still processing after {limit:?}: {upload}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Upload rows, read from the database itself.
    pub async fn upload_rows(&self) -> i64 {
        let sql = "SELECT COUNT(*) FROM uploads";
        match &self.database {
            Some(url) => {
                let pool = sqlx::PgPool::connect(url).await.expect("the test database");
                let rows = sqlx::query_scalar(sql).fetch_one(&pool).await.expect(sql);
                pool.close().await;
                rows
            }
            None => {
                let url = format!("sqlite://{}?mode=ro", self.data_dir.join("confetti.db").display());
                let pool = sqlx::SqlitePool::connect(&url).await.expect("the SQLite file");
                let rows = sqlx::query_scalar(sql).fetch_one(&pool).await.expect(sql);
                pool.close().await;
                rows
            }
        }
    }
}

pub fn loopback(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

pub fn header(response: &reqwest::Response, name: &str) -> String {
    response.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned()
}

/// `ExecStart=` of the unit, the built binary in place of the installed one, with nothing in
/// its environment but `env` and systemd's `PATH`; waits until it answers `/healthz`.
pub async fn start_confetti(dir: &Path, env: &BTreeMap<String, String>, direct: SocketAddr) -> Process {
    let exec_start = unit_value("ExecStart");
    let mut words = exec_start.split_whitespace();
    assert_eq!(words.next(), Some(INSTALLED_BINARY), "ExecStart={exec_start}");
    let mut command = Command::new(env!("CARGO_BIN_EXE_confetti"));
    command.args(words).env_clear().env("PATH", SERVICE_PATH).envs(env);
    let mut confetti = Process::spawn("confetti", &mut command, dir).expect("confetti serve");
    let client = reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(2)).build().expect("client");
    let started = Instant::now();
    while !client.get(format!("http://{direct}/healthz")).send().await.is_ok_and(|r| r.status().is_success()) {
        assert!(!confetti.exited(), "confetti exited at start:\n{}", confetti.last_lines());
        assert!(started.elapsed() < Duration::from_secs(60), "confetti did not answer within 60 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    confetti
}

// ---- Caddy ---------------------------------------------------------------------------

pub struct Caddy {
    pub https_port: u16,
    pub http_port: u16,
    /// Caddy's local CA, as Caddy wrote it into its data directory.
    pub root_pem: Vec<u8>,
    process: Process,
}

/// A free port on 127.0.0.1 (closed again at once; the child binds it a moment later).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

/// The last `lines` lines of a log file.
pub fn log_tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| format!("({}: {e})", path.display()));
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

impl Caddy {
    /// Starts `caddy run` with `deploy/Caddyfile` on `https://localhost:{https_port}` in front
    /// of `upstream`, its files under `dir`, and waits until it answers over HTTPS (a request
    /// that reaches `upstream`) with a certificate from its local CA.
    pub async fn start(dir: &Path, https_port: u16, upstream: SocketAddr) -> Self {
        let caddyfile = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/Caddyfile");
        let (http_port, admin_port) = (free_port(), free_port());
        // Only what the Caddyfile reads, as a systemd unit gives it: nothing else leaks in.
        let mut command = Command::new("caddy");
        command
            .args(["run", "--adapter", "caddyfile", "--config"])
            .arg(&caddyfile)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", dir)
            .env("XDG_DATA_HOME", dir.join("caddy-data"))
            .env("XDG_CONFIG_HOME", dir.join("caddy-config"))
            .env("CONFETTI_DOMAIN", format!("https://localhost:{https_port}"))
            .env("CONFETTI_TLS", "internal")
            .env("CONFETTI_UPSTREAM", upstream.to_string())
            .env("CONFETTI_HTTP_PORT", http_port.to_string())
            .env("CONFETTI_CADDY_ADMIN", format!("127.0.0.1:{admin_port}"));
        let process = Process::spawn("caddy", &mut command, dir).unwrap_or_else(|e| {
            panic!("caddy could not start ({e}): this test runs the real proxy; scripts/test.sh installs it (apt-get install -y caddy)")
        });
        let root = dir.join("caddy-data/caddy/pki/authorities/local/root.crt");
        let mut caddy = Self { https_port, http_port, root_pem: Vec::new(), process };
        let started = Instant::now();
        loop {
            assert!(!caddy.process.exited(), "caddy exited at start:\n{}", caddy.process.last_lines());
            assert!(started.elapsed() < Duration::from_secs(30), "caddy did not serve https within 30 s");
            if let Ok(pem) = std::fs::read(&root) {
                caddy.root_pem = pem;
                let answered = caddy.client().timeout(Duration::from_secs(2)).build().expect("client");
                if answered.get(caddy.url("/healthz")).send().await.is_ok_and(|r| r.status().is_success()) {
                    return caddy;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The public address, as phones see it.
    pub fn base(&self) -> String {
        format!("https://localhost:{}", self.https_port)
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base())
    }

    /// A client as a phone is, except that it trusts only Caddy's local CA: `localhost` is
    /// 127.0.0.1 (not ::1, so a client bound to another loopback address still connects).
    pub fn client(&self) -> reqwest::ClientBuilder {
        let root = reqwest::Certificate::from_pem(&self.root_pem).expect("Caddy's root certificate");
        reqwest::Client::builder()
            .no_proxy()
            .tls_built_in_root_certs(false)
            .add_root_certificate(root)
            .resolve("localhost", SocketAddr::from(([127, 0, 0, 1], self.https_port)))
    }

    /// A client connecting from another loopback address (127.0.0.x), as a second phone.
    pub fn client_from(&self, address: IpAddr) -> reqwest::Client {
        self.client().local_address(address).timeout(Duration::from_secs(30)).build().expect("client")
    }
}
