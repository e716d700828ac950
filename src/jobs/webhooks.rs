//! The admin's webhook: a signed JSON POST telling how many photos of an event wait for review,
//! so hosts can wire a phone notification (Gotify, ntfy through a relay) or a chat room.
//!
//! A delivery is queued in the transaction that puts a photo up for review
//! (`Tx::queue_webhook_delivery`), due after a short delay so a burst of photos makes one POST.
//! A worker claims it, counts the event's waiting photos at that moment (none left: nothing to
//! send), and POSTs. A 2xx answer ends it; anything else is tried again, backing off from
//! `webhook_retry` doubling up to 30 minutes, and given up a day after it was queued. How the
//! last attempt went is kept with the webhook for the admin page.
//!
//! Signature: `X-Confetti-Signature: sha256=<hex>`, the HMAC-SHA256, keyed with the secret's
//! UTF-8 bytes, of `<X-Confetti-Timestamp>.<body>` (the timestamp in Unix seconds, a dot, the
//! body's bytes as sent): a receiver checks it, and refuses timestamps more than a few minutes
//! old, so a recorded delivery cannot be replayed.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::db::Db;
use crate::db::webhooks::{WebhookDelivery, WebhookRow};
use crate::domain::rfc3339;

/// How long a holder has before another worker may take its delivery over: well beyond one
/// attempt's timeout.
const LEASE: Duration = Duration::from_secs(2 * 60);
/// How often an idle worker looks for due deliveries.
const POLL: Duration = Duration::from_secs(1);
/// Failed attempts wait `webhook_retry`, doubling, up to this.
const MAX_BACKOFF: Duration = Duration::from_secs(30 * 60);
/// A delivery not made within this of being queued is given up (its error stays on show).
const GIVE_UP: Duration = Duration::from_secs(24 * 60 * 60);
/// Connecting to the receiver, and the whole attempt.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const TIMEOUT: Duration = Duration::from_secs(10);
/// The most of a refusal's body kept as its error.
const ERROR_BODY_CHARS: usize = 200;

/// What a delivery tells; its JSON is the POST's body.
#[derive(Debug, Serialize)]
pub struct Payload {
    /// None for the admin's test.
    pub event: Option<EventRef>,
    pub waiting: i64,
    /// The organiser's page, where the photos are reviewed.
    pub dashboard_url: Option<String>,
    /// A short sentence and title, in the members Gotify reads.
    pub title: String,
    pub message: String,
    pub sent_at: String,
    /// True for the admin's test.
    pub test: bool,
}

#[derive(Debug, Serialize)]
pub struct EventRef {
    pub slug: String,
    pub name: String,
}

/// How an attempt went: the answer's status, and why it failed (none: delivered).
#[derive(Debug)]
pub struct Attempt {
    pub status: Option<u16>,
    pub error: Option<String>,
}

/// Sends webhook deliveries.
#[derive(Clone, Debug)]
pub struct Webhooks {
    db: Db,
    client: s3_http::Client,
    public_url: String,
    /// Coalescing delay: a delivery is due this long after the photo that queued it.
    delay: Duration,
    /// The first retry's wait.
    retry: Duration,
    instance: Uuid,
    stopping: CancellationToken,
}

impl Webhooks {
    pub fn new(
        db: Db,
        public_url: &str,
        (delay, retry): (Duration, Duration),
        instance: Uuid,
        stopping: CancellationToken,
    ) -> anyhow::Result<Self> {
        crate::blobs::tls::install_provider();
        // No redirects: the admin names the receiver, and a 3xx is a refusal to look into.
        let client = s3_http::Client::builder()
            .redirect(s3_http::redirect::Policy::none())
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(TIMEOUT)
            .user_agent(concat!("Confetti/", env!("CARGO_PKG_VERSION"), " webhook"))
            .build()?;
        Ok(Self { db, client, public_url: public_url.to_owned(), delay, retry, instance, stopping })
    }

    /// When a delivery queued now is due.
    pub fn due(&self) -> DateTime<Utc> {
        Utc::now() + chrono::TimeDelta::from_std(self.delay).unwrap_or_default()
    }

    /// POSTs `payload` to the webhook, signed, and records how it went.
    pub async fn send(&self, webhook: &WebhookRow, payload: &Payload) -> Attempt {
        let attempt = self.post(webhook, payload).await;
        let status = attempt.status.map(i32::from);
        if let Err(e) = self.db.record_webhook_attempt(status, attempt.error.as_deref()).await {
            tracing::warn!(error = %e, "could not record a webhook attempt");
        }
        attempt
    }

    async fn post(&self, webhook: &WebhookRow, payload: &Payload) -> Attempt {
        let body = match serde_json::to_vec(payload) {
            Ok(body) => body,
            Err(e) => return Attempt { status: None, error: Some(e.to_string()) },
        };
        let timestamp = Utc::now().timestamp().to_string();
        let signature = sign(&webhook.secret, &timestamp, &body);
        let sent = self
            .client
            .post(&webhook.url)
            .header("content-type", "application/json")
            .header("x-confetti-timestamp", &timestamp)
            .header("x-confetti-signature", format!("sha256={signature}"))
            .body(body)
            .send()
            .await;
        let mut response = match sent {
            Ok(response) => response,
            Err(e) => return Attempt { status: None, error: Some(describe(&e)) },
        };
        let status = response.status();
        if status.is_success() {
            return Attempt { status: Some(status.as_u16()), error: None };
        }
        // The start of the refusal's body, at most one chunk of it, says why.
        let said = match tokio::time::timeout(CONNECT_TIMEOUT, response.chunk()).await {
            Ok(Ok(Some(chunk))) => String::from_utf8_lossy(&chunk).chars().take(ERROR_BODY_CHARS).collect(),
            _ => String::new(),
        };
        let error = format!("HTTP {status}{}{}", if said.trim().is_empty() { "" } else { ": " }, said.trim());
        Attempt { status: Some(status.as_u16()), error: Some(error) }
    }

    /// What a delivery about `event_id` says now; none when the event is gone or nothing waits.
    async fn payload(&self, event_id: Uuid) -> sqlx::Result<Option<Payload>> {
        let Some(w) = self.db.waiting_for_review(event_id).await? else { return Ok(None) };
        if w.waiting == 0 {
            return Ok(None);
        }
        let message = match w.waiting {
            1 => format!("1 photo waits for review in “{}”", w.name),
            n => format!("{n} photos wait for review in “{}”", w.name),
        };
        Ok(Some(Payload {
            dashboard_url: Some(format!("{}/e/{}/organiser", self.public_url, w.slug)),
            event: Some(EventRef { slug: w.slug, name: w.name.clone() }),
            waiting: w.waiting,
            title: format!("Confetti: {}", w.name),
            message,
            sent_at: rfc3339(Utc::now()),
            test: false,
        }))
    }

    /// The admin's test: a delivery about no event.
    pub fn test_payload(&self) -> Payload {
        Payload {
            event: None,
            waiting: 0,
            dashboard_url: None,
            title: "Confetti".into(),
            message: "Test: this webhook works".into(),
            sent_at: rfc3339(Utc::now()),
            test: true,
        }
    }

    /// Makes a claimed delivery and ends it: done, or given back to be tried again later.
    #[tracing::instrument(skip_all, fields(event_id = %d.event_id, attempt = d.attempts))]
    async fn run(&self, d: WebhookDelivery) -> sqlx::Result<()> {
        let Some(webhook) = self.db.webhook().await? else {
            return self.db.drop_webhook_delivery(&d).await;
        };
        let Some(payload) = self.payload(d.event_id).await? else {
            return self.db.finish_webhook_delivery(&d, self.due()).await;
        };
        let attempt = self.send(&webhook, &payload).await;
        let Some(error) = attempt.error else {
            tracing::info!(waiting = payload.waiting, "webhook delivered");
            return self.db.finish_webhook_delivery(&d, self.due()).await;
        };
        let given_up = Utc::now() - d.created_at > chrono::TimeDelta::from_std(GIVE_UP).unwrap_or_default();
        if given_up {
            tracing::warn!(error, "webhook delivery given up after a day of failures");
            return self.db.drop_webhook_delivery(&d).await;
        }
        let backoff = self.retry.saturating_mul(1 << (d.attempts.clamp(1, 16) - 1)).min(MAX_BACKOFF);
        tracing::warn!(error, retry_in_s = backoff.as_secs(), "webhook delivery failed; will retry");
        let at = Utc::now() + chrono::TimeDelta::from_std(backoff).unwrap_or_default();
        self.db.retry_webhook_delivery(&d, at, &error).await
    }

    /// Starts a worker for due deliveries.
    pub fn spawn_worker(&self) {
        let hooks = self.clone();
        tokio::spawn(async move { hooks.work_loop().await });
    }

    async fn work_loop(&self) {
        while !self.db.is_closed() && !self.stopping.is_cancelled() {
            let claim = (self.instance, Utc::now() + LEASE);
            let outcome = match self.db.claim_webhook_delivery(claim).await {
                Ok(Some(d)) => self.run(d).await.map(|()| true),
                Ok(None) => Ok(false),
                Err(e) => Err(e),
            };
            match outcome {
                Ok(true) => continue,
                Ok(false) => {}
                Err(e) => tracing::warn!(error = %e, "webhook worker: database error"),
            }
            tokio::select! {
                () = self.stopping.cancelled() => {}
                () = tokio::time::sleep(POLL) => {}
            }
        }
    }
}

/// The hex HMAC-SHA256 of `<timestamp>.<body>`, keyed with the secret.
pub fn sign(secret: &str, timestamp: &str, body: &[u8]) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes());
    let mut ctx = ring::hmac::Context::with_key(&key);
    ctx.update(timestamp.as_bytes());
    ctx.update(b".");
    ctx.update(body);
    hex::encode(ctx.sign().as_ref())
}

/// A failed request, said briefly (timeouts and refused connections by name).
fn describe(e: &s3_http::Error) -> String {
    use std::error::Error as _;
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "could not connect"
    } else {
        "request failed"
    };
    // The innermost causes say most ("Connection refused"); each said once.
    let mut said = vec![kind.to_owned()];
    let mut source = e.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !said.iter().any(|s| s.contains(&text)) {
            said.push(text);
        }
        source = cause.source();
    }
    said.join(": ")
}

/// A new secret: `whsec_` and 32 random bytes (URL-safe base64).
pub fn new_secret() -> anyhow::Result<String> {
    Ok(format!("whsec_{}", crate::auth::random_string(32)?))
}
