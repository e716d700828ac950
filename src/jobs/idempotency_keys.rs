//! The Idempotency-Key sweep: forgets completed keys older than the retention, and claims
//! abandoned longer ago than that. A live claim is never touched.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use chrono::Utc;
use uuid::Uuid;

use crate::db::Db;
use crate::idempotency::Metrics;

const EVERY: Duration = Duration::from_secs(10 * 60);

pub fn spawn_sweep(db: Db, metrics: Arc<Metrics>, retention_s: u64, instance: Uuid) {
    super::every(db.clone(), Some(instance), EVERY, "idempotency key sweep", move || {
        let (db, metrics) = (db.clone(), Arc::clone(&metrics));
        async move { sweep(&db, &metrics, retention_s).await.map(|_| ()) }
    });
}

/// Forgets keys older than `retention_s`; returns how many.
pub async fn sweep(db: &Db, metrics: &Metrics, retention_s: u64) -> anyhow::Result<u64> {
    let retention = chrono::Duration::seconds(i64::try_from(retention_s)?);
    let swept = db.sweep_keys(Utc::now() - retention).await?;
    if swept > 0 {
        let total = metrics.swept.fetch_add(swept, Ordering::Relaxed) + swept;
        tracing::info!(swept, total, "idempotency keys swept");
    }
    Ok(swept)
}
