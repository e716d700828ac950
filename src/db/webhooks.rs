//! The admin's webhook for photos waiting for review, and its delivery queue.
//!
//! A delivery is written in the transaction that puts a photo up for review, when a webhook is
//! set: at most one pending per event (its primary key), due after the coalescing delay, so a
//! burst of photos makes one POST. Workers claim due deliveries under a lease (`claim`, with the
//! lease's end in `run_after`, as for blob jobs); every final write is fenced by the claim.
//! A photo arriving while its event's delivery is being sent sets `again`: the delivery is then
//! due once more instead of done, and the next POST counts that photo too.
//!
//! The queue is a `lease::Queue`: claim, renew, retry and the fenced final writes are
//! `db::lease`'s; only finishing (which may make the delivery due again) is written here.

use std::marker::PhantomData;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::lease::{Job, KeyPart, LeaseKey, LeaseTable, Queue, lease_write};
use super::{Db, Tx, on_db, on_tx};

/// The queue: the delivery due first goes first.
pub const DELIVERIES: Queue<WebhookDelivery> = Queue {
    lease: LeaseTable { table: "webhook_deliveries", key: &["event_id"], token: "claim", until: "run_after" },
    from: "webhook_deliveries j",
    due: "j.run_after <= $3",
    order: "j.run_after",
    job: PhantomData,
};

/// The webhook the admin set, and how its last delivery went.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct WebhookRow {
    pub url: String,
    /// Signs every delivery (HMAC-SHA256); shown to the admin once.
    pub secret: String,
    pub created_at: DateTime<Utc>,
    pub last_attempt_at: Option<DateTime<Utc>>,
    /// The HTTP status of the last attempt; none when it got no answer.
    pub last_status: Option<i32>,
    /// Why the last attempt failed; none when it succeeded.
    pub last_error: Option<String>,
    pub last_delivered_at: Option<DateTime<Utc>>,
}

/// A delivery its holder may send until its lease ends.
#[derive(Clone, Copy, Debug)]
pub struct WebhookDelivery {
    pub event_id: Uuid,
    /// Including this one.
    pub attempts: i32,
    /// When the first photo it tells of came in (or when it was due again): retries give up a
    /// day after.
    pub created_at: DateTime<Utc>,
    pub claim: Uuid,
}

impl LeaseKey for WebhookDelivery {
    fn parts(&self) -> Vec<KeyPart<'_>> {
        vec![KeyPart::Uuid(self.event_id)]
    }
}

impl Job for WebhookDelivery {
    const RETURNING: &'static str = "event_id, attempts, created_at";
    type Row = (Uuid, i32, DateTime<Utc>);

    fn from_row((event_id, attempts, created_at): Self::Row, claim: Uuid) -> Option<Self> {
        Some(WebhookDelivery { event_id, attempts, created_at, claim })
    }

    fn claim(&self) -> Uuid {
        self.claim
    }
}

/// What a delivery tells of: the event, and how many of its photos wait for review.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct Waiting {
    pub slug: String,
    pub name: String,
    pub waiting: i64,
}

impl Tx {
    /// Sets the webhook (replacing any), its history cleared.
    pub async fn set_webhook(&mut self, url: &str, secret: &str) -> sqlx::Result<()> {
        on_tx!(self, tx => sqlx::query(
            "INSERT INTO webhook (id, url, secret, created_at) VALUES (1, $1, $2, $3)
             ON CONFLICT (id) DO UPDATE SET url = excluded.url, secret = excluded.secret,
                 created_at = excluded.created_at, last_attempt_at = NULL, last_status = NULL,
                 last_error = NULL, last_delivered_at = NULL",
        )
        .bind(url)
        .bind(secret)
        .bind(Utc::now())
        .execute(&mut **tx)
        .await
        .map(|r| r.rows_affected()))?;
        Ok(())
    }

    /// Removes the webhook and the deliveries still pending. `false`: none was set.
    pub async fn delete_webhook(&mut self) -> sqlx::Result<bool> {
        on_tx!(self, tx => sqlx::query("DELETE FROM webhook_deliveries").execute(&mut **tx).await.map(|r| r.rows_affected()))?;
        let removed =
            on_tx!(self, tx => sqlx::query("DELETE FROM webhook").execute(&mut **tx).await.map(|r| r.rows_affected()))?;
        Ok(removed > 0)
    }

    /// Queues a delivery for the event, due at `run_after`, if a webhook is set. One already
    /// pending stays as it is (coalesced); one being sent is marked to be sent again.
    pub async fn queue_webhook_delivery(&mut self, event_id: Uuid, run_after: DateTime<Utc>) -> sqlx::Result<()> {
        on_tx!(self, tx => sqlx::query(
            "INSERT INTO webhook_deliveries (event_id, run_after, created_at)
             SELECT $1, $2, $3 WHERE EXISTS (SELECT 1 FROM webhook)
             ON CONFLICT (event_id) DO UPDATE
                 SET again = webhook_deliveries.again OR webhook_deliveries.claim IS NOT NULL",
        )
        .bind(event_id)
        .bind(run_after)
        .bind(Utc::now())
        .execute(&mut **tx)
        .await
        .map(|r| r.rows_affected()))?;
        Ok(())
    }
}

impl Db {
    /// The webhook, if the admin set one.
    pub async fn webhook(&self) -> sqlx::Result<Option<WebhookRow>> {
        on_db!(self, pool => sqlx::query_as(
            "SELECT url, secret, created_at, last_attempt_at, last_status, last_error, last_delivered_at
             FROM webhook WHERE id = 1",
        )
        .fetch_optional(pool)
        .await)
    }

    /// Records how an attempt went: `status` the answer's (none: no answer), `error` why it
    /// failed (none: delivered). Does nothing when the webhook was removed meanwhile.
    pub async fn record_webhook_attempt(&self, status: Option<i32>, error: Option<&str>) -> sqlx::Result<()> {
        let now = Utc::now();
        on_db!(self, pool => sqlx::query(
            "UPDATE webhook SET last_attempt_at = $1, last_status = $2, last_error = $3,
                 last_delivered_at = CASE WHEN $4 THEN $1 ELSE last_delivered_at END
             WHERE id = 1",
        )
        .bind(now)
        .bind(status)
        .bind(error)
        .bind(error.is_none())
        .execute(pool)
        .await
        .map(|r| r.rows_affected()))?;
        Ok(())
    }

    /// The event's name and how many of its photos wait for review now; none when the event
    /// is gone.
    pub async fn waiting_for_review(&self, event_id: Uuid) -> sqlx::Result<Option<Waiting>> {
        on_db!(self, pool => sqlx::query_as(
            "SELECT e.slug, e.name,
                    (SELECT COUNT(*) FROM uploads u
                     WHERE u.event_id = e.id AND u.review = 'pending' AND u.deleted_at IS NULL) AS waiting
             FROM events e WHERE e.id = $1 AND e.deleted_at IS NULL",
        )
        .bind(event_id)
        .fetch_optional(pool)
        .await)
    }

    /// Claims the delivery due first, if any, for instance `by` until `lease_until`.
    pub async fn claim_webhook_delivery(&self, claim: (Uuid, DateTime<Utc>)) -> sqlx::Result<Option<WebhookDelivery>> {
        self.claim_job(&DELIVERIES, claim).await
    }

    /// Ends a delivery that is done, unless a photo came in while it was sent: then it is due
    /// again at `again_after`, as a new delivery. Does nothing if the lease was lost meanwhile.
    pub async fn finish_webhook_delivery(&self, d: &WebhookDelivery, again_after: DateTime<Utc>) -> sqlx::Result<()> {
        let lease = &DELIVERIES.lease;
        if lease_write!(db self, lease.fenced_delete("NOT again"), d, d.claim)? == 0 {
            let set = "claim = NULL, claimed_by = NULL, again = FALSE, attempts = 0, run_after = $3, created_at = $4,
                       last_error = NULL";
            lease_write!(db self, lease.fenced(set, ""), d, d.claim, again_after, Utc::now())?;
        }
        Ok(())
    }

    /// Removes a delivery that is given up on (or has nothing to tell), whatever came in
    /// meanwhile. Does nothing if the lease was lost meanwhile.
    pub async fn drop_webhook_delivery(&self, d: &WebhookDelivery) -> sqlx::Result<()> {
        self.finish_job(&DELIVERIES, d).await.map(drop)
    }

    /// Gives a delivery back to be tried again after `run_after`. Does nothing if the lease
    /// was lost meanwhile.
    pub async fn retry_webhook_delivery(
        &self,
        d: &WebhookDelivery,
        run_after: DateTime<Utc>,
        error: &str,
    ) -> sqlx::Result<()> {
        self.retry_job(&DELIVERIES, d, run_after, error).await
    }

    /// Deliveries not made yet, due or not (for tests and the admin page).
    pub async fn pending_webhook_deliveries(&self) -> sqlx::Result<i64> {
        on_db!(self, pool => sqlx::query_scalar("SELECT COUNT(*) FROM webhook_deliveries").fetch_one(pool).await)
    }
}
