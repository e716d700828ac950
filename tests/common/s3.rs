//! A real S3-protocol server for the tests: `s3s-fs` (crates.io, 0.14.1) with the one operation
//! it lacks that Confetti uses, ListMultipartUploads (`tests/s3s-fs-uploads`, installed by
//! `scripts/test.sh` with `cargo install --locked --path tests/s3s-fs-uploads`), one process
//! per test on a random loopback port, over a fresh directory. It keeps every object as a plain
//! file under `<root>/<bucket>/<key>`, so a test looks at what the server left in the bucket
//! exactly as it looks at a local photo directory; an open multipart upload is a
//! `.upload-<id>.json` beside it. Plain `s3s-fs` (`$S3S_FS`) serves every test but the one that
//! needs the listing (`tests/orphan_uploads.rs`).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const BUCKET: &str = "confetti";
pub const ACCESS_KEY: &str = "confetti-test";
pub const SECRET_KEY: &str = "confetti-test-secret";
pub const REGION: &str = "us-east-1";

/// One running `s3s-fs`, stopped when dropped.
#[derive(Debug)]
pub struct S3Server {
    pub endpoint: String,
    root: tempfile::TempDir,
    child: Child,
}

/// Whether `binary` is the tests' `s3s-fs-uploads`, which binds the port it is given (0: one the
/// kernel picks) and prints `listening on <address>` once it listens.
fn says_its_port(binary: &Path) -> bool {
    binary.file_name().and_then(|name| name.to_str()).is_some_and(|name| name.starts_with("s3s-fs-uploads"))
}

/// Where the server's binary is: `$S3S_FS`, else `s3s-fs-uploads` (then `s3s-fs`) on the
/// `PATH` or in cargo's bin directory.
pub fn s3s_fs_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("S3S_FS") {
        return path.into();
    }
    let cargo_bin = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo")))
        .map(|home| home.join("bin"));
    let dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .chain(cargo_bin)
        .collect();
    ["s3s-fs-uploads", "s3s-fs"]
        .iter()
        .find_map(|name| dirs.iter().map(|dir| dir.join(name)).find(|candidate| candidate.is_file()))
        .unwrap_or_else(|| "s3s-fs-uploads".into())
}

impl S3Server {
    /// Starts a server with the bucket `BUCKET`, and waits until it accepts connections.
    pub fn start() -> Self {
        let root = tempfile::tempdir().expect("S3 root");
        std::fs::create_dir(root.path().join(BUCKET)).expect("bucket directory");
        let binary = s3s_fs_binary();
        if says_its_port(&binary) {
            Self::start_on_any_port(&binary, root)
        } else {
            Self::start_on_a_free_port(&binary, root)
        }
    }

    fn spawn(binary: &Path, port: u16, root: &Path, stdout: Stdio) -> Child {
        Command::new(binary)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
            .arg(root)
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "the S3 tests need s3s-fs ({}): {e}; scripts/test.sh installs it \
                     (cargo install --locked --path tests/s3s-fs-uploads)",
                    binary.display()
                )
            })
    }

    /// On port 0, reading the port from the server's first line: nothing else can take it. (A
    /// port found free by a probe, then given to the server, can be taken by another process in
    /// between; a probe's connection can then reach that process instead.)
    fn start_on_any_port(binary: &Path, root: tempfile::TempDir) -> Self {
        use std::io::BufRead;
        let mut child = Self::spawn(binary, 0, root.path(), Stdio::piped());
        let stdout = child.stdout.take().expect("the server's stdout");
        let (said, heard) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = std::io::BufReader::new(stdout).lines();
            let _ = said.send(lines.next().and_then(Result::ok));
            // Read on until the server ends, so it never writes into a closed pipe.
            lines.for_each(drop);
        });
        let line = heard.recv_timeout(Duration::from_secs(20)).ok().flatten();
        let address = line.as_deref().and_then(|line| line.strip_prefix("listening on ")).unwrap_or_else(|| {
            let _ = child.kill();
            panic!("{} did not say where it listens within 20 s (it said {line:?})", binary.display())
        });
        S3Server { endpoint: format!("http://{address}"), root, child }
    }

    /// Plain `s3s-fs` says nothing: a port found free, then a connection that tells it listens.
    fn start_on_a_free_port(binary: &Path, mut root: tempfile::TempDir) -> Self {
        for _ in 0..5 {
            let port = free_port();
            let child = Self::spawn(binary, port, root.path(), Stdio::null());
            let mut server = S3Server { endpoint: format!("http://127.0.0.1:{port}"), root, child };
            if server.wait_until_listening(port) {
                return server;
            }
            // Another process took the port between our probe and its bind: try another.
            let _ = server.child.kill();
            let _ = server.child.wait();
            root = std::mem::replace(&mut server.root, tempfile::tempdir().expect("S3 root"));
        }
        panic!("s3s-fs did not start on five ports in a row");
    }

    fn wait_until_listening(&mut self, port: u16) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return false;
            }
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }

    /// The storage URL an instance is started with.
    pub fn storage_url(&self) -> String {
        format!("s3://{BUCKET}")
    }

    /// The environment `object_store` reads an S3 store's settings from, as an operator sets it.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY.to_owned()),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY.to_owned()),
            ("AWS_REGION", REGION.to_owned()),
            ("AWS_ENDPOINT", self.endpoint.clone()),
            ("AWS_ALLOW_HTTP", "true".to_owned()),
        ]
    }

    /// The bucket's directory: every object is a file under it, at its key.
    pub fn bucket_dir(&self) -> PathBuf {
        self.root.path().join(BUCKET)
    }

    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// A client of the bucket, as an instance is.
    pub fn client(&self) -> object_store::aws::AmazonS3 {
        // The S3 client's TLS provider, as the server installs it (unused over plain HTTP).
        let _ = rustls::crypto::ring::default_provider().install_default();
        object_store::aws::AmazonS3Builder::new()
            .with_endpoint(&self.endpoint)
            .with_allow_http(true)
            .with_bucket_name(BUCKET)
            .with_region(REGION)
            .with_access_key_id(ACCESS_KEY)
            .with_secret_access_key(SECRET_KEY)
            .build()
            .expect("S3 client")
    }

    /// Whether the server answers ListMultipartUploads (a signed request, as Confetti's).
    pub async fn lists_open_uploads(&self) -> bool {
        use object_store::signer::{Method, SignedUrlOptions, Signer};
        let options = SignedUrlOptions::new().with_query([("uploads", "")]);
        let path = object_store::path::Path::default();
        let url =
            self.client().signed_url_opts(Method::GET, &path, Duration::from_secs(60), &options).await.expect("sign");
        let response = reqwest::Client::new().get(url.as_str()).send().await.expect("list open uploads");
        response.status().is_success()
    }

    /// Begins a multipart upload at `key` and forgets its id, as a process killed right after
    /// the store's answer does.
    pub async fn leave_multipart_upload_open(&self, key: &str) {
        use object_store::multipart::MultipartStore;
        self.client().create_multipart(&object_store::path::Path::from(key)).await.expect("create multipart upload");
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

    /// Part files of multipart uploads that are still open.
    pub fn open_part_files(&self) -> usize {
        std::fs::read_dir(self.root.path())
            .map(|entries| {
                entries.flatten().filter(|e| e.file_name().to_string_lossy().starts_with(".upload_id-")).count()
            })
            .unwrap_or(0)
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}
