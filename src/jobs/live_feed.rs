//! Forgets live news nobody will read again (older than every poller's window).

use std::time::Duration;

use chrono::Utc;

use crate::app::AppState;

const EVERY: Duration = Duration::from_secs(10 * 60);

pub fn spawn_sweep(state: AppState) {
    super::every(state, EVERY, "live feed sweep", |state| async move {
        let retention = chrono::Duration::from_std(crate::live::RETENTION)?;
        let swept = state.db.sweep_live_feed(Utc::now() - retention).await?;
        if swept > 0 {
            tracing::info!(swept, "old live news forgotten");
        }
        Ok(())
    });
}
