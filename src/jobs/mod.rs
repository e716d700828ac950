//! Background work: derivatives, bringing storage back in line after crashes, forgetting old
//! keys and old live news.

pub mod blob_jobs;
pub mod derivatives;
pub mod idempotency_keys;
pub mod instances;
pub mod live_feed;
pub mod orphans;
pub mod poster;
pub mod resumable_sweep;
pub mod webhooks;

use std::future::Future;
use std::time::Duration;

use chrono::Utc;
use uuid::Uuid;

use crate::db::Db;
use crate::db::instances::LEASES;

/// Runs `round` at once and then every `period` until the database is closed. A failed round
/// is logged; the next one tries again.
///
/// With `one_at_a_time: Some(instance)`, only the instance holding the lease named `what`
/// runs the round (the sweeps: instances sharing a store would otherwise do the same work
/// at once). The holder renews it each round; should it die, the lease ends after two
/// periods, or as soon as another instance cleans up after it.
pub fn every<F, Fut>(db: Db, one_at_a_time: Option<Uuid>, period: Duration, what: &'static str, round: F)
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
            if let Some(instance) = one_at_a_time {
                let until = Utc::now() + chrono::Duration::from_std(period * 2).unwrap_or(chrono::Duration::MAX);
                match db.take_lease(&LEASES, what, instance, until).await {
                    Ok(true) => {}
                    Ok(false) => continue,
                    Err(e) => {
                        tracing::warn!(error = %e, what, "could not take the lease of a background round");
                        continue;
                    }
                }
            }
            if let Err(e) = round().await {
                tracing::warn!(error = %e, what, "background round failed");
            }
        }
    });
}
