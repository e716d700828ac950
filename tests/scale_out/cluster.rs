//! Several `confetti serve` processes (the real binary) on one PostgreSQL database and one
//! S3 bucket (`s3s-fs`), behind haproxy started with `deploy/haproxy.cfg` — the file the
//! deployment guide describes, given this test's ports and a self-signed certificate through
//! its `LB_*` variables. Every child process is killed and reaped when its guard drops, and a
//! failing test prints the tail of every log.

use std::io::{BufRead, Read, Write};
use std::net::TcpListener;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::s3::S3Server;

pub const ADMIN_TOKEN: &str = "scale-out-admin-token";

/// A child process, killed (SIGKILL) and reaped when dropped.
pub struct ChildGuard {
    child: Child,
}

impl ChildGuard {
    fn spawn(command: &mut Command, what: &str) -> Self {
        let child = command.spawn().unwrap_or_else(|e| panic!("starting {what}: {e}"));
        Self { child }
    }

    /// Whether the process has exited.
    pub fn exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    /// `kill -9`: no chance to finish anything.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A free port on 127.0.0.1 (closed again at once; the child binds it a moment later).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

/// Where an executable is on the `PATH` (or the usual sbin directories, where Debian puts
/// haproxy and which a non-root `PATH` may lack).
pub fn find_executable(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/usr/local/sbin", "/sbin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// One Confetti instance: its port, data directory and log survive a restart.
pub struct Instance {
    pub name: &'static str,
    pub port: u16,
    pub data_dir: PathBuf,
    pub log: PathBuf,
    pub process: Option<ChildGuard>,
}

/// What every instance shares: the database, the bucket, the public URL.
pub struct InstanceSettings {
    pub database_url: String,
    pub public_url: String,
    pub s3_env: Vec<(&'static str, String)>,
    pub storage_url: String,
    /// Extra `KEY=VALUE` environment (e.g. `CONFETTI_DERIVATIVE_WORKERS`).
    pub extra_env: Vec<(String, String)>,
}

impl Instance {
    pub fn new(name: &'static str, dir: &Path) -> Self {
        let data_dir = dir.join(name);
        std::fs::create_dir_all(&data_dir).expect("instance data directory");
        Self { name, port: free_port(), log: dir.join(format!("{name}.log")), data_dir, process: None }
    }

    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Starts `confetti serve` (the real binary) as an operator would behind haproxy: the
    /// shared database and bucket, `--trusted-proxy` naming haproxy's address, the public URL
    /// of the load balancer. Does not wait: see `wait_healthy`.
    pub fn start(&mut self, binary: &Path, settings: &InstanceSettings) {
        assert!(self.process.is_none(), "{} is already running", self.name);
        let log = std::fs::OpenOptions::new().create(true).append(true).open(&self.log).expect("instance log");
        let mut command = Command::new(binary);
        command
            .args(["serve", "--no-demo", "--bind", &self.addr(), "--min-free-bytes", "0"])
            .arg("--data-dir")
            .arg(&self.data_dir)
            .args(["--database-url", &settings.database_url, "--storage", &settings.storage_url])
            .args(["--public-url", &settings.public_url, "--trusted-proxy", "127.0.0.1"])
            .env("CONFETTI_ADMIN_TOKEN", ADMIN_TOKEN)
            .env("RUST_LOG", "info,sqlx=warn")
            .env("NO_COLOR", "1");
        for name in [
            "DATABASE_URL",
            "CONFETTI_STORAGE",
            "CONFETTI_DATA_DIR",
            "CONFETTI_BIND",
            "CONFETTI_DERIVATIVE_WORKERS",
            "CONFETTI_TRUSTED_PROXY",
        ] {
            command.env_remove(name);
        }
        command
            .envs(settings.s3_env.iter().map(|(k, v)| (*k, v.as_str())))
            .envs(settings.extra_env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log handle"))
            .stderr(log);
        self.process = Some(ChildGuard::spawn(&mut command, self.name));
    }

    /// Polls the instance's own `/healthz` (not through haproxy), at most `limit`.
    pub async fn wait_healthy(&mut self, limit: Duration) {
        let client = reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(2)).build().expect("client");
        let url = format!("http://{}/healthz", self.addr());
        let started = Instant::now();
        loop {
            if let Ok(response) = client.get(&url).send().await
                && response.status().is_success()
            {
                return;
            }
            let process = self.process.as_mut().expect("a started instance");
            assert!(!process.exited(), "{} exited before serving; its log:\n{}", self.name, tail(&self.log, 30));
            assert!(
                started.elapsed() < limit,
                "{} did not answer /healthz within {limit:?}; its log:\n{}",
                self.name,
                tail(&self.log, 30)
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub fn kill9(&mut self) {
        if let Some(mut process) = self.process.take() {
            process.kill9();
        }
    }
}

/// haproxy with `deploy/haproxy.cfg`.
pub struct Haproxy {
    pub https_port: u16,
    pub admin_socket: PathBuf,
    pub log: PathBuf,
    _process: ChildGuard,
}

/// The haproxy configuration the deployment guide documents.
pub fn haproxy_config() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/haproxy.cfg")
}

impl Haproxy {
    /// Starts haproxy in the foreground on free loopback ports, balancing over `backends`
    /// (`LB_BACKEND_1`, `LB_BACKEND_2`, …), and waits until it accepts connections.
    pub fn start(dir: &Path, backends: &[String]) -> Self {
        let binary = find_executable("haproxy").unwrap_or_else(|| {
            panic!(
                "haproxy is not installed: the scale-out test runs the real load balancer. \
                 scripts/test.sh installs it (apt-get install -y haproxy)"
            )
        });
        let pem = crate::common::tls::self_signed_pem(dir);
        let https_port = free_port();
        let admin_socket = dir.join("haproxy-admin.sock");
        let log = dir.join("haproxy.log");
        let log_file = std::fs::File::create(&log).expect("haproxy log");
        let mut command = Command::new(binary);
        command
            .arg("-db")
            .arg("-f")
            .arg(haproxy_config())
            .env("LB_TLS_PEM", &pem)
            .env("LB_HTTPS_BIND", format!("127.0.0.1:{https_port}"))
            .env("LB_HTTP_BIND", format!("127.0.0.1:{}", free_port()))
            .env("LB_ADMIN_SOCKET", &admin_socket)
            .env("LB_UNPRIVILEGED", "1")
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().expect("log handle"))
            .stderr(log_file);
        for (i, backend) in backends.iter().enumerate() {
            command.env(format!("LB_BACKEND_{}", i + 1), backend);
        }
        let mut process = ChildGuard::spawn(&mut command, "haproxy");
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", https_port)).is_err() || !admin_socket.exists() {
            assert!(!process.exited(), "haproxy exited at start; its log:\n{}", tail(&log, 30));
            assert!(started.elapsed() < Duration::from_secs(10), "haproxy did not listen within 10 s");
            std::thread::sleep(Duration::from_millis(20));
        }
        Self { https_port, admin_socket, log, _process: process }
    }

    pub fn base(&self) -> String {
        format!("https://127.0.0.1:{}", self.https_port)
    }

    /// haproxy's view of one server of `backend confetti`: its status and last check.
    pub fn server_state(&self, server: &str) -> (String, String) {
        server_state(&self.admin_socket, server)
    }

    /// Waits until haproxy's health checks say `server` is `UP` (with `up`) or `DOWN`; returns
    /// how long that took.
    pub async fn wait_for_state(&self, server: &str, up: bool, limit: Duration) -> Duration {
        let started = Instant::now();
        loop {
            let (status, check) = self.server_state(server);
            let reached = if up { status == "UP" && check == "L7OK" } else { status == "DOWN" };
            if reached {
                return started.elapsed();
            }
            assert!(
                started.elapsed() < limit,
                "haproxy did not see {server} {} within {limit:?}: status {status}, check {check}",
                if up { "UP" } else { "DOWN" }
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// One command on haproxy's runtime API at `socket`; its whole answer.
pub fn admin(socket: &Path, command: &str) -> String {
    let mut stream = UnixStream::connect(socket).expect("haproxy admin socket");
    stream.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
    stream.set_write_timeout(Some(Duration::from_secs(5))).expect("timeout");
    stream.write_all(format!("{command}\n").as_bytes()).expect("admin command");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("admin answer");
    answer
}

/// haproxy's view of one server of `backend confetti` (admin socket at `socket`): its status
/// (`UP`, `DOWN`, `MAINT`, `UP 1/2` while changing…) and the last health check's result
/// (`L7OK`, `L4CON`, `L7STS`…).
pub fn server_state(socket: &Path, server: &str) -> (String, String) {
    let stat = admin(socket, "show stat");
    let header: Vec<&str> = stat.lines().next().unwrap_or_default().trim_start_matches("# ").split(',').collect();
    let column = |name: &str| header.iter().position(|h| *h == name).expect("a column of show stat");
    let (status, check) = (column("status"), column("check_status"));
    stat.lines()
        .map(|line| line.split(',').collect::<Vec<_>>())
        .find(|fields| fields.first() == Some(&"confetti") && fields.get(1) == Some(&server))
        .map(|fields| (fields[status].to_owned(), fields[check].to_owned()))
        .unwrap_or_else(|| panic!("haproxy has no server {server}:\n{stat}"))
}

/// The last `lines` lines of a log file.
pub fn tail(path: &Path, lines: usize) -> String {
    let Ok(file) = std::fs::File::open(path) else {
        return format!("({} is missing)", path.display());
    };
    let all: Vec<String> = std::io::BufReader::new(file).lines().map_while(Result::ok).collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// The whole set-up: S3, the database, the instances and haproxy. Prints every log's tail
/// when a test fails while it is alive.
pub struct Cluster {
    pub s3: S3Server,
    pub database_url: crate::common::TestDatabase,
    pub instances: Vec<Instance>,
    pub haproxy: Haproxy,
    pub settings: InstanceSettings,
    /// Data directories, logs, the certificate; removed last.
    _dir: tempfile::TempDir,
}

impl Cluster {
    /// `count` instances behind haproxy, each ready (haproxy's check says `UP`).
    pub async fn start(count: usize, extra_env: Vec<(String, String)>) -> Self {
        const NAMES: [&str; 4] = ["confetti1", "confetti2", "confetti3", "confetti4"];
        assert!(count <= NAMES.len());
        // Checked first, so a machine without haproxy fails here with the reason, not later.
        if find_executable("haproxy").is_none() {
            panic!(
                "haproxy is not installed: the scale-out test runs the real load balancer. \
                 scripts/test.sh installs it (apt-get install -y haproxy)"
            );
        }
        let dir = tempfile::Builder::new().prefix("confetti-scale-out-").tempdir().expect("temp dir");
        let s3 = S3Server::start();
        let database_url = crate::common::fresh_postgres_database().await;
        let mut instances: Vec<Instance> = NAMES[..count].iter().map(|name| Instance::new(name, dir.path())).collect();
        let haproxy = Haproxy::start(dir.path(), &instances.iter().map(Instance::addr).collect::<Vec<_>>());
        let settings = InstanceSettings {
            database_url: database_url.to_string(),
            public_url: haproxy.base(),
            s3_env: s3.env(),
            storage_url: s3.storage_url(),
            extra_env,
        };
        let binary = Path::new(env!("CARGO_BIN_EXE_confetti"));
        // One after the other: both run the migrations at start.
        for instance in &mut instances {
            instance.start(binary, &settings);
            instance.wait_healthy(Duration::from_secs(60)).await;
        }
        let cluster = Self { s3, database_url, instances, haproxy, settings, _dir: dir };
        for instance in &cluster.instances {
            cluster.haproxy.wait_for_state(instance.name, true, Duration::from_secs(30)).await;
        }
        cluster
    }

    /// Starts instance `i` again (same port, same data directory), after `kill9`.
    pub async fn restart(&mut self, i: usize) {
        let binary = Path::new(env!("CARGO_BIN_EXE_confetti"));
        self.instances[i].start(binary, &self.settings);
        self.instances[i].wait_healthy(Duration::from_secs(60)).await;
    }

    /// A client of the load balancer, as a phone is: TLS (the certificate is self-signed).
    pub fn client(&self) -> reqwest::Client {
        reqwest::Client::builder()
            .no_proxy()
            .danger_accept_invalid_certs(true)
            .timeout(Duration::from_secs(60))
            .build()
            .expect("client")
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.haproxy.base())
    }

    pub async fn pg(&self) -> sqlx::PgPool {
        sqlx::postgres::PgPoolOptions::new()
            .max_connections(2)
            .acquire_timeout(Duration::from_secs(10))
            .connect(&self.database_url)
            .await
            .expect("the test database")
    }

    /// Files under the bucket's temporary area (`tmp/`).
    pub fn temporary_blobs(&self) -> Vec<PathBuf> {
        crate::common::all_files(&self.s3.bucket_dir().join("tmp"))
    }

    /// The upload ids of the originals in the bucket (`originals/<event>/<upload>`).
    pub fn originals(&self) -> Vec<String> {
        crate::common::all_files(&self.s3.bucket_dir().join("originals"))
            .iter()
            .filter_map(|p| Some(p.file_name()?.to_string_lossy().into_owned()))
            .collect()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if std::thread::panicking() {
            for instance in &self.instances {
                eprintln!(
                    "---- {} ({}) log, last lines ----\n{}",
                    instance.name,
                    instance.addr(),
                    tail(&instance.log, 40)
                );
            }
            eprintln!("---- haproxy log, last lines ----\n{}", tail(&self.haproxy.log, 40));
        }
        // Instances first (their guards), then haproxy, then S3 and the database.
        for instance in &mut self.instances {
            instance.kill9();
        }
    }
}
