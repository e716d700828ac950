//! `Idempotency-Key` for every authenticated POST, PATCH and DELETE (uploads have their own
//! key, see `ingest`; joining and organiser login have no principal to scope a key to).
//!
//! One layer does it for every write route, so a new write endpoint needs no code of its own:
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

use axum::body::{Body, Bytes, to_bytes};
use axum::extract::{FromRequestParts, MatchedPath, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::app::AppState;
use crate::db::idempotency::{KeyScope, RecordedAnswer};
use crate::db::{Db, Tx};
use crate::error::{ApiError, ApiResult};
use crate::http::IDEMPOTENT_REPLAYED;
use crate::http::extract::{MAX_JSON_BODY, read_body};

/// Writes that do not take part, with the reason.
const EXEMPT: &[(Method, &str)] = &[
    // Uploads are deduplicated by their own `client_upload_id` / UUID `Idempotency-Key`.
    (Method::POST, "/api/v1/events/{slug}/uploads"),
    // No principal yet: a replay must never hand one client another client's token.
    (Method::POST, "/api/v1/events/{slug}/guests"),
    (Method::POST, "/api/v1/events/{slug}/organiser-sessions"),
    // Logout ends the session of the token it carries, which the key's scope (the organiser,
    // all sessions together) does not name: a replay could answer 204 to a session still
    // alive. Ending a session twice leaves the same state anyway.
    (Method::DELETE, "/api/v1/events/{slug}/organiser-sessions/current"),
];

/// Response bodies of these writes are small JSON documents. (Request bodies are held to the
/// same limit as everywhere else, `MAX_JSON_BODY`, so a key changes nothing about which
/// bodies are taken.)
const MAX_RESPONSE_BODY: usize = 1024 * 1024;

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

/// The claim a keyed request holds while its handler runs.
#[derive(Clone, Debug)]
pub struct Claim {
    scope: KeyScope,
    token: Uuid,
    recorded: Arc<AtomicBool>,
}

/// The layer, applied to every route (`route_layer`, so the matched route is known).
pub async fn layer(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let route = request.extensions().get::<MatchedPath>().map(|p| p.as_str().to_owned()).unwrap_or_default();
    let takes_part = matches!(method, Method::POST | Method::PATCH | Method::DELETE)
        && !EXEMPT.iter().any(|(m, r)| *m == method && *r == route);
    let Some(raw_key) = request.headers().get("idempotency-key").cloned().filter(|_| takes_part) else {
        return next.run(request).await;
    };
    let (mut parts, body) = request.into_parts();
    let principal = match crate::http::extract::principal(&mut parts, &state).await {
        Some(principal) => principal,
        // Unauthenticated: the handler refuses it as it would without a key.
        None => return next.run(Request::from_parts(parts, body)).await,
    };
    let key = match parse_key(&raw_key) {
        Ok(key) => key,
        Err(e) => return e.into_response(),
    };
    let body = match read_body(&parts.headers, body, MAX_JSON_BODY).await {
        Ok(body) => body,
        Err(refusal) => return refusal.into_response(),
    };
    let scope =
        KeyScope { principal, method: method.to_string(), path_digest: Sha256::digest(parts.uri.path()).to_vec(), key };
    let fingerprint = fingerprint(&parts, &body);
    match claim(&state, &scope, &fingerprint).await {
        Err(refusal) => refusal.into_response(),
        Ok(Decision::Replay(answer)) => replay(answer),
        Ok(Decision::Run(claim)) => {
            parts.extensions.insert(claim.clone());
            let response = next.run(Request::from_parts(parts, Body::from(body))).await;
            finish(&state, claim, response).await
        }
    }
}

/// 1–255 printable ASCII characters.
fn parse_key(raw: &HeaderValue) -> ApiResult<String> {
    let bytes = raw.as_bytes();
    if (1..=255).contains(&bytes.len()) && bytes.iter().all(|b| (0x21..=0x7E).contains(b) || *b == b' ') {
        Ok(String::from_utf8_lossy(bytes).into_owned())
    } else {
        Err(ApiError::InvalidIdempotencyKey)
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

enum Decision {
    Run(Claim),
    Replay(RecordedAnswer),
}

async fn claim(state: &AppState, scope: &KeyScope, fingerprint: &[u8]) -> ApiResult<Decision> {
    let db = &state.db;
    let metrics = &state.idempotency_metrics;
    let lease = chrono::Duration::seconds(i64::try_from(state.settings.idempotency_lease_s).unwrap_or(i64::MAX / 2));
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

fn replay(answer: RecordedAnswer) -> Response {
    let mut response = Response::new(Body::from(answer.body));
    *response.status_mut() = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    headers.insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
    for (name, value) in [(header::LOCATION, answer.location), (header::CONTENT_TYPE, answer.content_type)] {
        if let Some(value) = value.and_then(|v| HeaderValue::from_str(&v).ok()) {
            headers.insert(name, value);
        }
    }
    response
}

/// After the handler: a refusal or failure releases the key; a success was recorded by its
/// `WriteTx` (or, for a handler that wrote without one, is recorded now).
async fn finish(state: &AppState, claim: Claim, response: Response) -> Response {
    let status = response.status();
    if status.is_client_error() || status.is_server_error() {
        if let Err(e) = state.db.release_key(&claim.scope, claim.token).await {
            tracing::warn!(error = %e, "could not release an idempotency key; it frees itself when its lease ends");
        }
        Metrics::count(&state.idempotency_metrics.released, "released after a refusal or failure", &claim.scope);
        return response;
    }
    if claim.recorded.load(Ordering::SeqCst) {
        return response;
    }
    tracing::warn!(method = %claim.scope.method, "a keyed write answered without a WriteTx; recording its answer after the fact");
    let recorded = async {
        let (answer, response) = capture(response).await?;
        let mut tx = state.db.begin().await?;
        tx.record_key(&claim.scope, claim.token, &answer).await?;
        tx.commit().await?;
        ApiResult::Ok(response)
    };
    recorded.await.unwrap_or_else(IntoResponse::into_response)
}

/// Splits a response into what is recorded (never `Set-Cookie`) and the response to send.
async fn capture(response: Response) -> ApiResult<(RecordedAnswer, Response)> {
    let (parts, body) = response.into_parts();
    let bytes: Bytes =
        to_bytes(body, MAX_RESPONSE_BODY).await.map_err(|e| anyhow::anyhow!("reading a response to record: {e}"))?;
    let header_text = |name| parts.headers.get(name).and_then(|v: &HeaderValue| v.to_str().ok()).map(str::to_owned);
    let answer = RecordedAnswer {
        status: parts.status.as_u16(),
        location: header_text(header::LOCATION),
        content_type: header_text(header::CONTENT_TYPE),
        body: bytes.to_vec(),
    };
    Ok((answer, Response::from_parts(parts, Body::from(bytes))))
}

/// The write a handler is about to make, with the request's claim if it carries a key.
/// `begin` starts its transaction; `WriteTx::commit` finishes it with the answer.
pub struct Write(Option<Claim>);

impl<S: Send + Sync> FromRequestParts<S> for Write {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Write(parts.extensions.get::<Claim>().cloned()))
    }
}

impl Write {
    pub async fn begin(self, db: &Db) -> ApiResult<WriteTx> {
        Ok(WriteTx { tx: db.begin().await?, claim: self.0 })
    }
}

/// A write's transaction. Committing it with the answer records the answer for its key in
/// the same transaction.
pub struct WriteTx {
    tx: Tx,
    claim: Option<Claim>,
}

impl std::ops::Deref for WriteTx {
    type Target = Tx;
    fn deref(&self) -> &Tx {
        &self.tx
    }
}

impl std::ops::DerefMut for WriteTx {
    fn deref_mut(&mut self) -> &mut Tx {
        &mut self.tx
    }
}

impl WriteTx {
    pub async fn commit(mut self, response: Response) -> ApiResult<Response> {
        let Some(claim) = self.claim.take() else {
            self.tx.commit().await?;
            return Ok(response);
        };
        let (answer, response) = capture(response).await?;
        if !self.tx.record_key(&claim.scope, claim.token, &answer).await? {
            // Our lease ran out and another attempt took the key over: it does the write.
            self.tx.rollback().await?;
            return Err(ApiError::IdempotencyKeyInFlight { retry_after_s: 1 });
        }
        self.tx.commit().await?;
        claim.recorded.store(true, Ordering::SeqCst);
        Ok(response)
    }

    pub async fn rollback(self) -> ApiResult<()> {
        Ok(self.tx.rollback().await?)
    }
}
