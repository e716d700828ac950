//! `Idempotency-Key`: the key logic on the database, for the writes that take part (their
//! routes say so, `http::idempotency::Keyed`; uploads have their own key, see `ingest`).
//! The HTTP side (reading the header and body, replaying, recording the answer) is
//! `http::idempotency`; this module needs only the database, its counters and the lease.
//!
//! 1. Claim the key before the handler runs: insert (principal, method, path digest, key) with
//!    the request's fingerprint, a fresh claim token and a lease; or take over a claim whose
//!    lease expired (its holder died), fenced by a new claim token.
//! 2. A completed key with the same fingerprint replays the recorded status, `Location`,
//!    content type and body with `Idempotent-Replayed: true`, without running the write.
//!    A live claim answers 409 `idempotency_key_in_flight` with `Retry-After`; another
//!    fingerprint answers 422 `idempotency_key_reused`.
//! 3. The handler does its writes in a `WriteTx` and finishes it with its answer: the answer
//!    is recorded inside the write's own transaction, guarded by the claim token, so "done"
//!    holds exactly when the write committed, and a holder whose lease was taken over records
//!    nothing (its write rolls back).
//! 4. A refused (4xx) or failed (5xx) attempt releases the key. `Set-Cookie` is never recorded.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use axum::http::request::Parts;
use axum::http::{HeaderValue, header};
use chrono::Utc;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::db::idempotency::{KeyScope, RecordedAnswer};
use crate::db::{Db, Tx};
use crate::error::{ApiError, ApiResult};

/// What the mechanism did, for operators (`GET /metrics`).
#[derive(Debug, Default)]
pub struct Metrics {
    pub executions: AtomicU64,
    pub replays: AtomicU64,
    pub mismatches: AtomicU64,
    pub in_flight: AtomicU64,
    pub takeovers: AtomicU64,
    pub released: AtomicU64,
    pub swept: AtomicU64,
}

impl Metrics {
    fn count(counter: &AtomicU64, what: &'static str, scope: &KeyScope) {
        let total = counter.fetch_add(1, Ordering::Relaxed) + 1;
        tracing::info!(what, total, method = %scope.method, principal = %scope.principal, "idempotency key");
    }
}

/// Where keys live and how long a claim holds: all the key logic uses.
#[derive(Clone, Debug)]
pub struct Keys {
    db: Db,
    metrics: Arc<Metrics>,
    lease: chrono::Duration,
}

/// The claim a keyed request holds while its handler runs.
#[derive(Clone, Debug)]
pub struct Claim {
    scope: KeyScope,
    token: Uuid,
    recorded: Arc<AtomicBool>,
}

impl Claim {
    /// Whether the handler's `WriteTx` recorded its answer.
    pub fn recorded(&self) -> bool {
        self.recorded.load(Ordering::SeqCst)
    }

    /// Records `answer` for this claim inside the write's transaction; `false` when the claim
    /// was taken over meanwhile (the caller rolls its write back).
    pub async fn record(&self, tx: &mut Tx, answer: &RecordedAnswer) -> ApiResult<bool> {
        let recorded = tx.record_key(&self.scope, self.token, answer).await?;
        Ok(recorded)
    }

    /// Marks the answer as recorded, once the transaction that recorded it committed.
    pub fn committed(&self) {
        self.recorded.store(true, Ordering::SeqCst);
    }
}

/// What to do with a keyed request.
pub enum Decision {
    /// Run the write, holding this claim.
    Run(Claim),
    /// Answer what the first attempt answered.
    Replay(RecordedAnswer),
}

impl Keys {
    pub fn new(db: Db, metrics: Arc<Metrics>, lease_s: u64) -> Self {
        let lease = chrono::Duration::seconds(i64::try_from(lease_s).unwrap_or(i64::MAX / 2));
        Self { db, metrics, lease }
    }

    pub async fn claim(&self, scope: &KeyScope, fingerprint: &[u8]) -> ApiResult<Decision> {
        let (db, metrics, lease) = (&self.db, &self.metrics, self.lease);
        let token = Uuid::now_v7();
        let run = || Decision::Run(Claim { scope: scope.clone(), token, recorded: Arc::new(AtomicBool::new(false)) });
        // Each round either decides or sees the key change under it (released, taken over).
        for _ in 0..5 {
            if db.claim_key(scope, fingerprint, token, Utc::now() + lease).await? {
                Metrics::count(&metrics.executions, "claimed", scope);
                return Ok(run());
            }
            let Some(row) = db.key_row(scope).await? else { continue };
            if row.fingerprint != fingerprint {
                Metrics::count(&metrics.mismatches, "reused with another request", scope);
                return Err(ApiError::IdempotencyKeyReused);
            }
            if let Some(status) = row.status {
                Metrics::count(&metrics.replays, "replayed", scope);
                return Ok(Decision::Replay(RecordedAnswer {
                    status: u16::try_from(status).unwrap_or(500),
                    location: row.location,
                    content_type: row.content_type,
                    body: row.body.unwrap_or_default(),
                }));
            }
            let now = Utc::now();
            if row.lease_expires_at > now {
                Metrics::count(&metrics.in_flight, "in flight", scope);
                let left = (row.lease_expires_at - now).num_milliseconds().max(0) as u64;
                return Err(ApiError::IdempotencyKeyInFlight { retry_after_s: left.div_ceil(1000).max(1) });
            }
            if db.take_over_key(scope, row.claim_token, token, now + lease).await? {
                Metrics::count(&metrics.takeovers, "taken over from a holder whose lease expired", scope);
                return Ok(run());
            }
        }
        Err(ApiError::Internal(anyhow::anyhow!("the idempotency key kept changing under this request")))
    }

    /// After a refusal or failure: the key is free for a corrected retry.
    pub async fn release(&self, claim: &Claim) {
        if let Err(e) = self.db.release_key(&claim.scope, claim.token).await {
            tracing::warn!(error = %e, "could not release an idempotency key; it frees itself when its lease ends");
        }
        Metrics::count(&self.metrics.released, "released after a refusal or failure", &claim.scope);
    }

    /// Records the answer of a write that did not use a `WriteTx`, after the fact.
    pub async fn record_late(&self, claim: &Claim, answer: &RecordedAnswer) -> ApiResult<()> {
        tracing::warn!(method = %claim.scope.method, "a keyed write answered without a WriteTx; recording its answer after the fact");
        let mut tx = self.db.begin().await?;
        tx.record_key(&claim.scope, claim.token, answer).await?;
        tx.commit().await?;
        Ok(())
    }
}

/// SHA-256 of the method, the path with its query, the content type and the body.
pub fn fingerprint(parts: &Parts, body: &[u8]) -> Vec<u8> {
    let path = parts.uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
    let content_type = parts.headers.get(header::CONTENT_TYPE).map(HeaderValue::as_bytes).unwrap_or_default();
    let mut hash = Sha256::new();
    for field in [parts.method.as_str().as_bytes(), path.as_bytes(), content_type, body] {
        hash.update((field.len() as u64).to_be_bytes());
        hash.update(field);
    }
    hash.finalize().to_vec()
}

/// The key's scope: (principal, method, path without its query, key).
pub fn scope(principal: String, parts: &Parts, key: String) -> KeyScope {
    KeyScope {
        principal,
        method: parts.method.to_string(),
        path_digest: Sha256::digest(parts.uri.path()).to_vec(),
        key,
    }
}
