//! The one way to run CPU-bound or blocking work in the server: on tokio's blocking pool, inside
//! the caller's tracing span, and capped by a semaphore so a burst of uploads cannot occupy
//! every thread (header probes get cores − 1 permits, password hashing its own few). Decoding
//! and encoding guests' files is not done here but in media worker processes (`sandbox`).

use std::sync::Arc;

use anyhow::Context;
use tokio::sync::Semaphore;

#[derive(Clone, Debug)]
pub struct Blocking {
    media: Arc<Semaphore>,
    media_limit: usize,
    cores: usize,
    crypto: Arc<Semaphore>,
}

impl Blocking {
    pub fn new() -> Self {
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
        let media_limit = cores.saturating_sub(1).max(1);
        Self {
            media: Arc::new(Semaphore::new(media_limit)),
            media_limit,
            cores,
            crypto: Arc::new(Semaphore::new(cores.max(2))),
        }
    }

    /// The machine's cores: the default number of derivative workers (each hands its jobs to a
    /// media worker process at a low CPU priority, so a batch of photos is made on every core
    /// while requests stay quick; `examples/bench_batch.rs`).
    pub fn cores(&self) -> usize {
        self.cores
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
