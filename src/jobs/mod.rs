//! Background work: derivatives, bringing storage back in line after crashes, forgetting old
//! keys and old live news.

pub mod blob_jobs;
pub mod derivatives;
pub mod idempotency_keys;
pub mod live_feed;
pub mod orphans;

use std::future::Future;
use std::time::Duration;

use crate::db::Db;

/// Runs `round` at once and then every `period` until the database is closed. A failed round
/// is logged; the next one tries again.
pub fn every<F, Fut>(db: Db, period: Duration, what: &'static str, round: F)
where
    F: Fn() -> Fut + Send + 'static,
    Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
{
    tokio::spawn(async move {
        let mut rounds = tokio::time::interval(period);
        loop {
            rounds.tick().await;
            if db.is_closed() {
                return;
            }
            if let Err(e) = round().await {
                tracing::warn!(error = %e, what, "background round failed");
            }
        }
    });
}
