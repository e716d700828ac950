//! Forgets live news nobody will read again (older than every poller's window).

use std::time::Duration;

use chrono::Utc;
use uuid::Uuid;

use crate::db::Db;

const EVERY: Duration = Duration::from_secs(10 * 60);

pub fn spawn_sweep(db: Db, instance: Uuid) {
    super::every(db.clone(), Some(instance), EVERY, "live feed sweep", move || {
        let db = db.clone();
        async move {
            let retention = chrono::Duration::from_std(crate::live::RETENTION)?;
            let swept = db.sweep_live_feed(Utc::now() - retention).await?;
            if swept > 0 {
                tracing::info!(swept, "old live news forgotten");
            }
            Ok(())
        }
    });
}
