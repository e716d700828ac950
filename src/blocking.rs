//! The one way to run CPU-bound or blocking work: on tokio's blocking pool, inside the
//! caller's tracing span, and capped by a semaphore so a burst of uploads cannot occupy
//! every thread (media work gets cores − 1 permits, password hashing its own few).
//! Work nobody waits for (derivatives) runs on threads of its own at a lower CPU priority,
//! so guests' requests stay quick while photos are processed.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, mpsc};

use anyhow::Context;
use tokio::sync::Semaphore;

#[derive(Clone, Debug)]
pub struct Blocking {
    media: Arc<Semaphore>,
    media_limit: usize,
    background_threads: usize,
    crypto: Arc<Semaphore>,
    background: mpsc::Sender<Job>,
}

type Job = Box<dyn FnOnce() + Send>;

/// The nice value of background threads: under contention they get about a tenth of the CPU
/// a request thread gets, and all of it when the machine is otherwise idle.
const BACKGROUND_NICE: i32 = 10;

impl Blocking {
    pub fn new() -> Self {
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
        let media_limit = cores.saturating_sub(1).max(1);
        Self {
            media: Arc::new(Semaphore::new(media_limit)),
            media_limit,
            background_threads: cores,
            crypto: Arc::new(Semaphore::new(cores.max(2))),
            // One per core: at their low priority they take only what requests leave, and a
            // batch of photos is made on every core (`examples/bench_batch.rs`).
            background: spawn_background_threads(cores),
        }
    }

    /// Background image work (derivatives) on the low-priority threads, one per core. The threads end when the last `Blocking` is dropped.
    pub async fn background<R: Send + 'static>(&self, f: impl FnOnce() -> R + Send + 'static) -> anyhow::Result<R> {
        let (done, result) = tokio::sync::oneshot::channel();
        let span = tracing::Span::current();
        let job: Job = Box::new(move || {
            // A panic drops `done`: the caller sees an error, the thread lives on.
            if let Ok(value) = catch_unwind(AssertUnwindSafe(|| span.in_scope(f))) {
                let _ = done.send(value);
            }
        });
        self.background.send(job).map_err(|_| anyhow::anyhow!("background threads stopped"))?;
        result.await.context("background task panicked")
    }

    /// How many background jobs run at once (one per core).
    pub fn background_threads(&self) -> usize {
        self.background_threads
    }

    /// How many media jobs run at once (cores − 1, at least one).
    pub fn media_permits(&self) -> usize {
        self.media_limit
    }

    /// Image probing, decoding and encoding.
    pub async fn media<R: Send + 'static>(&self, f: impl FnOnce() -> R + Send + 'static) -> anyhow::Result<R> {
        run(&self.media, f).await
    }

    /// bcrypt hashing and verification.
    pub async fn crypto<R: Send + 'static>(&self, f: impl FnOnce() -> R + Send + 'static) -> anyhow::Result<R> {
        run(&self.crypto, f).await
    }
}

impl Default for Blocking {
    fn default() -> Self {
        Self::new()
    }
}

async fn run<R: Send + 'static>(permits: &Semaphore, f: impl FnOnce() -> R + Send + 'static) -> anyhow::Result<R> {
    let _permit = permits.acquire().await.context("blocking pool closed")?;
    let span = tracing::Span::current();
    tokio::task::spawn_blocking(move || span.in_scope(f)).await.context("blocking task panicked")
}

fn spawn_background_threads(count: usize) -> mpsc::Sender<Job> {
    let (sender, receiver) = mpsc::channel::<Job>();
    let receiver = Arc::new(Mutex::new(receiver));
    for i in 0..count {
        let receiver = Arc::clone(&receiver);
        let spawned = std::thread::Builder::new().name(format!("confetti-background-{i}")).spawn(move || {
            lower_priority();
            loop {
                let job = match receiver.lock() {
                    Ok(receiver) => receiver.recv(),
                    Err(_) => return,
                };
                match job {
                    Ok(job) => job(),
                    Err(_) => return,
                }
            }
        });
        if let Err(e) = spawned {
            tracing::error!(error = %e, "could not start a background thread");
        }
    }
    sender
}

/// Lowers this thread's CPU priority (Linux keeps the nice value per thread).
fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid and setpriority only read their arguments and touch no memory of ours.
        let result = unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, BACKGROUND_NICE) };
        if result != 0 {
            tracing::warn!(error = %std::io::Error::last_os_error(), "background work runs at normal priority");
        }
    }
}
