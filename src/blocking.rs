//! The one way to run CPU-bound or blocking work: on tokio's blocking pool, inside the
//! caller's tracing span, and capped by a semaphore so a burst of uploads cannot occupy
//! every thread (media work gets cores − 1 permits, password hashing its own few).

use std::sync::Arc;

use anyhow::Context;
use tokio::sync::Semaphore;

#[derive(Clone, Debug)]
pub struct Blocking {
    media: Arc<Semaphore>,
    crypto: Arc<Semaphore>,
}

impl Blocking {
    pub fn new() -> Self {
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
        Self {
            media: Arc::new(Semaphore::new(cores.saturating_sub(1).max(1))),
            crypto: Arc::new(Semaphore::new(cores.max(2))),
        }
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
