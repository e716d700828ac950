//! This instance among the others sharing the database and the photo store.
//!
//! Each instance has a row (`instances`) whose heartbeat it renews every `HEARTBEAT`. One not
//! heard from for `DEAD_AFTER` has died (a `kill -9`, a lost machine): any instance, one at a
//! time, cleans up after it within `REAP_EVERY` — the uploads it was receiving are abandoned
//! (their blob deleted and, on S3, their multipart upload aborted: by the id recorded with
//! them, and every upload open at their key found by listing, for one the store created just
//! before the instance died and whose id it never recorded; a server that cannot list leaves
//! that one to the bucket's lifecycle rule), and the jobs it had claimed
//! are given back, due at once. A stopping instance does the same for itself (`retire`), so a
//! rolling restart delays no photo by a lease.
//!
//! Clocks: heartbeats are written with each instance's own clock, so instances sharing a
//! database need clocks in step to well under `DEAD_AFTER` (NTP gives milliseconds).

use std::time::Duration;

use chrono::Utc;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::blobs::{BlobKey, BlobStore};
use crate::db::Db;

pub const HEARTBEAT: Duration = Duration::from_secs(5);
/// Six missed heartbeats: long enough for a database failover, short against a 2-minute
/// promise to clean up after a crash.
pub const DEAD_AFTER: Duration = Duration::from_secs(30);
pub const REAP_EVERY: Duration = Duration::from_secs(10);

/// This instance: its id, with what cleaning up needs.
#[derive(Clone, Debug)]
pub struct Instance {
    pub id: Uuid,
    db: Db,
    blobs: BlobStore,
    /// Cancelled when the stop begins: workers stop claiming, the heartbeat ends.
    stopping: CancellationToken,
}

/// What cleaning up after an instance did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct CleanedUp {
    /// Uploads it was receiving, abandoned: their blobs and multipart uploads removed.
    pub uploads: usize,
    /// Job claims given back.
    pub claims: u64,
}

impl Instance {
    /// A new instance, registered as alive.
    pub async fn register(db: Db, blobs: BlobStore) -> anyhow::Result<Self> {
        let instance = Self { id: Uuid::new_v4(), db, blobs, stopping: CancellationToken::new() };
        instance.db.register_instance(instance.id).await?;
        Ok(instance)
    }

    /// Renews the heartbeat, and looks for dead instances to clean up after.
    pub fn spawn(&self) {
        let me = self.clone();
        super::every(self.db.clone(), None, HEARTBEAT, "heartbeat", move || {
            let me = me.clone();
            async move {
                if me.stopping.is_cancelled() {
                    return Ok(());
                }
                if !me.db.heartbeat(me.id).await? {
                    tracing::warn!(instance = %me.id, "this instance was taken for dead; registering again");
                    me.db.register_instance(me.id).await?;
                }
                Ok(())
            }
        });
        let me = self.clone();
        super::every(self.db.clone(), Some(self.id), REAP_EVERY, "dead instance cleanup", move || {
            let me = me.clone();
            async move {
                if me.stopping.is_cancelled() {
                    return Ok(());
                }
                me.clean_up_after_the_dead().await.map(|_| ())
            }
        });
    }

    /// Cancelled once this instance begins to stop.
    pub fn stopping(&self) -> CancellationToken {
        self.stopping.clone()
    }

    /// The stop begins: no new job is claimed here from now on.
    pub fn begin_stop(&self) {
        self.stopping.cancel();
    }

    /// One round: cleans up after every instance not heard from for `DEAD_AFTER`.
    pub async fn clean_up_after_the_dead(&self) -> anyhow::Result<CleanedUp> {
        let heard_before = Utc::now() - chrono::Duration::from_std(DEAD_AFTER)?;
        let mut total = CleanedUp::default();
        for dead in self.db.dead_instances(heard_before).await? {
            if dead == self.id {
                continue;
            }
            let cleaned = self.clean_up_after(dead).await?;
            tracing::info!(instance = %dead, uploads = cleaned.uploads, claims = cleaned.claims, "cleaned up after a dead instance");
            total.uploads += cleaned.uploads;
            total.claims += cleaned.claims;
        }
        Ok(total)
    }

    /// A graceful stop, once requests have finished: whatever this instance still holds goes
    /// back, so another instance takes it over at once.
    pub async fn retire(&self) {
        self.stopping.cancel();
        match self.clean_up_after(self.id).await {
            Ok(cleaned) => tracing::info!(claims = cleaned.claims, uploads = cleaned.uploads, "handed back on stop"),
            Err(e) => tracing::warn!(error = %e, "could not hand everything back; another instance will clean up"),
        }
    }

    /// Abandons the instance's staged uploads, gives back its claims and leases, forgets it.
    /// Every step can be repeated, so two instances cleaning up after the same one is harmless.
    async fn clean_up_after(&self, instance: Uuid) -> anyhow::Result<CleanedUp> {
        let mut cleaned = CleanedUp::default();
        for staged in self.db.staged_uploads_of(instance).await? {
            match BlobKey::parse(&object_store::path::Path::from(staged.blob_key.as_str())) {
                // It may have died between the store's answer and the record: whatever is open
                // at the key goes, the recorded id or not.
                Some(key) => self.blobs.abandon(key, staged.multipart_id.as_deref(), true).await?,
                None => tracing::warn!(key = staged.blob_key, "a staged upload names a key Confetti does not write"),
            }
            self.db.unstage_upload(staged.upload_id).await?;
            cleaned.uploads += 1;
        }
        cleaned.claims = self.db.release_claims(instance).await?;
        self.db.drop_leases(instance).await?;
        self.db.forget_instance(instance).await?;
        Ok(cleaned)
    }
}
