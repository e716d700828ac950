//! The server's side of media workers: processes of this binary (`confetti media-worker`)
//! started ahead of need, so a job does not wait for a process to start; each takes one job.
//! A worker is started with an empty environment, its stdin, stdout and stderr as pipes and
//! nothing else; it asks for `PR_SET_PDEATHSIG` so that it dies with the server, `kill -9`
//! included.
//! The pool enforces the wall-clock limit (the kernel enforces memory and CPU time inside the
//! worker) and tells how a worker that did not answer ended.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, Command};

use super::limits::Limits;
use super::protocol::{self, Derived, Job, MAX_LINE_BYTES, MAX_REPLY_BYTES, Reply, Work};
use crate::media::derive::Derivatives;

/// What is kept of a worker's (or ffmpeg's) messages, for the log.
const MAX_STDERR_BYTES: u64 = 16 * 1024;
/// The original is passed on in pieces of this size.
const CHUNK: usize = 64 * 1024;

/// Why a job got no answer from its worker.
#[derive(Debug, thiserror::Error)]
pub enum WorkerFailure {
    /// The worker died, ran out of memory or time: what the organiser is told.
    #[error("{0}")]
    Died(String),
    /// Reading the original from the store failed: passing, the job is tried again.
    #[error("reading the original: {0}")]
    Store(std::io::Error),
    /// No worker could be started (the binary is gone, no processes left).
    #[error("starting a media worker: {0}")]
    Start(std::io::Error),
}

/// What an executed program (ffmpeg) left.
#[derive(Debug)]
pub struct ExecOutput {
    pub status: ExitStatus,
    /// `None`: it wrote more than the limit.
    pub stdout: Option<Vec<u8>>,
    pub stderr: Vec<u8>,
}

/// The workers of this instance.
#[derive(Debug)]
pub struct MediaWorkers {
    program: PathBuf,
    spares: Mutex<Vec<Child>>,
    keep: usize,
    /// Workers started, and workers that ended without an answer (for `/metrics`).
    pub started: AtomicU64,
    pub died: AtomicU64,
}

impl MediaWorkers {
    /// Workers of `program` (this binary), `keep` of them started ahead of need.
    pub fn new(program: PathBuf, keep: usize) -> Arc<Self> {
        Arc::new(Self {
            program,
            spares: Mutex::new(Vec::new()),
            keep,
            started: AtomicU64::new(0),
            died: AtomicU64::new(0),
        })
    }

    /// This binary's workers: `/proc/self/exe`, which stays right when the file is replaced by
    /// an upgrade while the server runs.
    pub fn of_this_binary(keep: usize) -> Arc<Self> {
        Self::new(PathBuf::from("/proc/self/exe"), keep)
    }

    /// Starts workers until `keep` are waiting.
    pub fn fill(self: &Arc<Self>) {
        let missing = self.keep.saturating_sub(self.spares.lock().map(|s| s.len()).unwrap_or(self.keep));
        for _ in 0..missing {
            match self.spawn() {
                Ok(child) => {
                    if let Ok(mut spares) = self.spares.lock() {
                        spares.push(child);
                    }
                }
                Err(e) => tracing::warn!(error = %e, "could not start a media worker ahead of need"),
            }
        }
    }

    fn spawn(&self) -> std::io::Result<Child> {
        let mut command = Command::new(&self.program);
        command
            .args(["media-worker", "--server", &std::process::id().to_string()])
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // No `pre_exec`: without one the standard library starts the worker with `posix_spawn`
        // (a vfork), which costs the server nothing of its size, where a fork copies its page
        // tables and makes its next writes copy pages. The worker asks for `PR_SET_PDEATHSIG`
        // itself, first thing (`confine::early`).
        let child = command.spawn()?;
        self.started.fetch_add(1, Relaxed);
        Ok(child)
    }

    /// A waiting worker, or a new one; a replacement is started behind it.
    fn take(self: &Arc<Self>) -> Result<Child, WorkerFailure> {
        let spare = loop {
            let Some(mut child) = self.spares.lock().ok().and_then(|mut spares| spares.pop()) else { break None };
            // One that died while it waited (a signal from outside) is replaced.
            if matches!(child.try_wait(), Ok(None)) {
                break Some(child);
            }
        };
        let pool = Arc::clone(self);
        tokio::spawn(async move { pool.fill() });
        match spare {
            Some(child) => Ok(child),
            None => self.spawn().map_err(WorkerFailure::Start),
        }
    }

    /// The derivatives of an original photo of `len` bytes read from `original`;
    /// `Ok(Err(reason))` when the photo itself cannot be made into derivatives.
    pub async fn derive(
        self: &Arc<Self>,
        original: impl AsyncRead + Unpin,
        len: u64,
        max_pixels: u64,
        limits: Limits,
    ) -> Result<Result<Derivatives, String>, WorkerFailure> {
        let job = Job { limits, work: Work::Derive { len, max_pixels } };
        self.all(self.derive_job(job, original).await)
    }

    /// A photo's first phase: its thumb alone where that is much cheaper, else every derivative
    /// (`media::derive::thumb_alone_is_cheaper`); `Ok(Err(reason))` as `derive`.
    pub async fn thumb(
        self: &Arc<Self>,
        original: impl AsyncRead + Unpin,
        len: u64,
        max_pixels: u64,
        limits: Limits,
    ) -> Result<Result<Derived, String>, WorkerFailure> {
        let job = Job { limits, work: Work::Thumb { len, max_pixels } };
        self.derive_job(job, original).await
    }

    /// The derivatives of a video's poster frame (a PNG `ffmpeg` wrote).
    pub async fn derive_png(
        self: &Arc<Self>,
        png: &[u8],
        limits: Limits,
    ) -> Result<Result<Derivatives, String>, WorkerFailure> {
        let job = Job { limits, work: Work::DerivePng { len: png.len() as u64 } };
        self.all(self.derive_job(job, png).await)
    }

    /// A job that asked for every derivative: a thumb alone is no answer to it.
    fn all(
        &self,
        answer: Result<Result<Derived, String>, WorkerFailure>,
    ) -> Result<Result<Derivatives, String>, WorkerFailure> {
        match answer? {
            Ok(Derived::All(made)) => Ok(Ok(made)),
            Ok(Derived::Thumb(_)) => {
                self.died.fetch_add(1, Relaxed);
                Err(WorkerFailure::Died("the media worker answered with a thumb alone".into()))
            }
            Err(reason) => Ok(Err(reason)),
        }
    }

    async fn derive_job(
        self: &Arc<Self>,
        job: Job,
        input: impl AsyncRead + Unpin,
    ) -> Result<Result<Derived, String>, WorkerFailure> {
        let wall = job.limits.wall();
        let (status, stdout, stderr) = self.run(&job, input, MAX_LINE_BYTES + MAX_REPLY_BYTES).await?;
        let answer = stdout.and_then(|stdout| parse(&stdout).ok());
        match answer {
            Some(answer) if status.success() => Ok(answer),
            _ => Err(self.died(status, &stderr, wall)),
        }
    }

    /// Runs `program` (ffmpeg) confined in a worker, reading only `input`; its stdout is kept up
    /// to `max_stdout` bytes.
    pub async fn exec(
        self: &Arc<Self>,
        program: &Path,
        args: Vec<String>,
        input: &Path,
        limits: Limits,
        max_stdout: u64,
    ) -> Result<ExecOutput, WorkerFailure> {
        let job = Job { limits, work: Work::Exec { program: program.to_owned(), args, input: input.to_owned() } };
        let (status, stdout, stderr) = self.run(&job, tokio::io::empty(), max_stdout).await?;
        // A signal is the worker's limits (or a crash), not the program saying no.
        if status.signal().is_some() {
            return Err(self.died(status, &stderr, limits.wall()));
        }
        Ok(ExecOutput { status, stdout, stderr })
    }

    /// Gives a worker `job` and `input`, and collects what it writes until it exits, within the
    /// job's wall-clock limit (past it the worker is killed).
    async fn run(
        self: &Arc<Self>,
        job: &Job,
        mut input: impl AsyncRead + Unpin,
        max_stdout: u64,
    ) -> Result<(ExitStatus, Option<Vec<u8>>, Vec<u8>), WorkerFailure> {
        let started = Instant::now();
        let mut child = self.take()?;
        let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(WorkerFailure::Start(std::io::Error::other("a worker's pipes are missing")));
        };
        let mut line = serde_json::to_vec(job).map_err(|e| WorkerFailure::Start(std::io::Error::other(e)))?;
        line.push(b'\n');
        let work = async {
            let (fed, out, err) = tokio::join!(
                feed(stdin, &line, &mut input),
                read_limited(stdout, max_stdout),
                read_limited(stderr, MAX_STDERR_BYTES)
            );
            fed?;
            let status = child.wait().await.map_err(WorkerFailure::Start)?;
            Ok::<_, WorkerFailure>((status, out.ok().flatten(), err.ok().flatten().unwrap_or_default()))
        };
        let wall = job.limits.wall();
        match tokio::time::timeout(wall, work).await {
            Ok(result) => {
                tracing::debug!(ms = started.elapsed().as_millis(), "media worker done");
                result
            }
            // Dropping `work` drops the child, which kills it.
            Err(_) => {
                self.died.fetch_add(1, Relaxed);
                Err(WorkerFailure::Died(format!("processing took longer than {} s", wall.as_secs())))
            }
        }
    }

    /// How a worker that gave no answer ended, in the organiser's words.
    fn died(&self, status: ExitStatus, stderr: &[u8], wall: std::time::Duration) -> WorkerFailure {
        self.died.fetch_add(1, Relaxed);
        let said = String::from_utf8_lossy(stderr);
        let said = said.trim();
        let reason = match status.signal() {
            Some(libc::SIGXCPU) | Some(libc::SIGKILL) => {
                "processing used up its time or memory and was stopped".to_owned()
            }
            Some(libc::SIGSYS) => "the file made its decoder try something it may not do".to_owned(),
            Some(libc::SIGABRT) => "processing ran out of memory or stopped on an error".to_owned(),
            Some(signal) => format!("the decoder crashed on this file (signal {signal})"),
            None => format!("the media worker failed ({status}): {}", said.chars().take(300).collect::<String>()),
        };
        tracing::warn!(%status, stderr = said, wall_s = wall.as_secs(), reason, "media worker ended without an answer");
        WorkerFailure::Died(reason)
    }
}

/// Writes the job line, then `input` to its end, into the worker's stdin, and closes it. A
/// worker that stops reading (it died, or refused early) ends the feeding, not the job: its
/// exit status tells. Only a failing read of `input` (the store) is an error.
async fn feed(mut stdin: ChildStdin, line: &[u8], input: &mut (impl AsyncRead + Unpin)) -> Result<(), WorkerFailure> {
    if stdin.write_all(line).await.is_err() {
        return Ok(());
    }
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = input.read(&mut buf).await.map_err(WorkerFailure::Store)?;
        if n == 0 || stdin.write_all(&buf[..n]).await.is_err() {
            return Ok(());
        }
    }
}

/// Reads `from` to its end; `None` when it has more than `limit` bytes (the rest is drained
/// and dropped, so the writer is not blocked on a full pipe).
async fn read_limited(mut from: impl AsyncRead + Unpin, limit: u64) -> std::io::Result<Option<Vec<u8>>> {
    let mut buf = Vec::new();
    (&mut from).take(limit + 1).read_to_end(&mut buf).await?;
    if buf.len() as u64 <= limit {
        return Ok(Some(buf));
    }
    tokio::io::copy(&mut from, &mut tokio::io::sink()).await?;
    Ok(None)
}

/// A derive job's reply.
fn parse(stdout: &[u8]) -> std::io::Result<Result<Derived, String>> {
    let mut reader = std::io::BufReader::new(stdout);
    match protocol::read_line(&mut reader)? {
        Reply::Made(parts) => protocol::read_made(&mut reader, parts).map(|made| Ok(Derived::All(made))),
        Reply::Thumb(parts) => protocol::read_thumb(&mut reader, parts).map(|made| Ok(Derived::Thumb(made))),
        Reply::Undecodable(reason) => Ok(Err(reason)),
    }
}
