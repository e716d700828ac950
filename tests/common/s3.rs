//! A real S3-protocol server for the tests: `s3s-fs` (crates.io, installed by `scripts/test.sh`
//! with `cargo install s3s-fs@0.14.1 --locked --features binary`), one process per test on a
//! random loopback port, over a fresh directory. It keeps every object as a plain file under
//! `<root>/<bucket>/<key>`, so a test looks at what the server left in the bucket exactly as it
//! looks at a local photo directory; an open multipart upload is a `.upload-<id>.json` beside it.

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

/// Where the `s3s-fs` binary is: `$S3S_FS`, else on the `PATH`, else in cargo's bin directory.
pub fn s3s_fs_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("S3S_FS") {
        return path.into();
    }
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join("s3s-fs"))
        .find(|candidate| candidate.is_file());
    let in_cargo = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo")))
        .map(|home| home.join("bin").join("s3s-fs"));
    on_path.or(in_cargo).unwrap_or_else(|| "s3s-fs".into())
}

impl S3Server {
    /// Starts a server with the bucket `BUCKET`, and waits until it accepts connections.
    pub fn start() -> Self {
        let mut root = tempfile::tempdir().expect("S3 root");
        std::fs::create_dir(root.path().join(BUCKET)).expect("bucket directory");
        let binary = s3s_fs_binary();
        for _ in 0..5 {
            let port = free_port();
            let child = Command::new(&binary)
                .args(["--host", "127.0.0.1", "--port", &port.to_string()])
                .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
                .arg(root.path())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| {
                    panic!(
                        "the S3 tests need s3s-fs ({}): {e}; scripts/test.sh installs it \
                         (cargo install s3s-fs@0.14.1 --locked --features binary)",
                        binary.display()
                    )
                });
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
