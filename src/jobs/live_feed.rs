//! Forgets live news nobody will read again (older than every poller's window).

use std::time::Duration;

use chrono::Utc;

use crate::app::AppState;

const EVERY: Duration = Duration::from_secs(10 * 60);

pub fn spawn_sweep(state: AppState) {
    tokio::spawn(async move {
        let mut rounds = tokio::time::interval(EVERY);
        loop {
            rounds.tick().await;
            if state.db.is_closed() {
                return;
            }
            let Ok(retention) = chrono::Duration::from_std(crate::live::RETENTION) else {
                return;
            };
            match state.db.sweep_live_feed(Utc::now() - retention).await {
                Ok(0) => {}
                Ok(swept) => tracing::info!(swept, "old live news forgotten"),
                Err(e) => tracing::warn!(error = %e, "live feed sweep failed"),
            }
        }
    });
}
