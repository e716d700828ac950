//! The Idempotency-Key sweep: forgets completed keys older than the retention, and claims
//! abandoned longer ago than that. A live claim is never touched.

use std::sync::atomic::Ordering;
use std::time::Duration;

use chrono::Utc;

use crate::app::AppState;

const EVERY: Duration = Duration::from_secs(10 * 60);

pub fn spawn_sweep(state: AppState) {
    super::every(state.db.clone(), EVERY, "idempotency key sweep", move || {
        let state = state.clone();
        async move { sweep(&state).await.map(|_| ()) }
    });
}

/// Returns how many keys were forgotten.
pub async fn sweep(state: &AppState) -> anyhow::Result<u64> {
    let retention = chrono::Duration::seconds(i64::try_from(state.settings.idempotency_retention_s)?);
    let swept = state.db.sweep_keys(Utc::now() - retention).await?;
    if swept > 0 {
        let total = state.idempotency_metrics.swept.fetch_add(swept, Ordering::Relaxed) + swept;
        tracing::info!(swept, total, "idempotency keys swept");
    }
    Ok(swept)
}
