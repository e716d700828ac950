//! `Idempotency-Key` over HTTP, for the write routes that take part: a resource module wraps
//! such a route in `Keyed::route` (the others never meet the layer, so an upload's multipart
//! body is never buffered by it, whatever its path). The layer reads the header, the caller's
//! principal (`Credentials`, resolved once for the handler too) and the body, asks
//! `crate::idempotency` what to do, and replays, refuses or runs the handler; `Write` and
//! `WriteTx` let the handler record its answer in its own transaction.

use axum::body::{Body, Bytes, to_bytes};
use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use utoipa_axum::router::{UtoipaMethodRouter, UtoipaMethodRouterExt};

use super::IDEMPOTENT_REPLAYED;
use super::extract::{MAX_JSON_BODY, principal, read_body};
use crate::db::idempotency::RecordedAnswer;
use crate::db::{Db, Tx};
use crate::error::{ApiError, ApiResult};
use crate::http::AppState;
use crate::idempotency::{Claim, Decision, Keys};

/// Response bodies of these writes are small JSON documents. (Request bodies are held to the
/// same limit as everywhere else, `MAX_JSON_BODY`, so a key changes nothing about which
/// bodies are taken.)
const MAX_RESPONSE_BODY: usize = 1024 * 1024;

/// What the layer needs: the application (to authenticate the caller) and the keys.
#[derive(Clone)]
pub struct Keyed {
    state: AppState,
    keys: Keys,
}

impl Keyed {
    pub fn new(state: &AppState) -> Self {
        let keys = Keys::new(state.db.clone(), state.idempotency_metrics.clone(), state.settings.idempotency_lease_s);
        Self { state: state.clone(), keys }
    }

    /// The writes of `routes` take an `Idempotency-Key` (POST, PATCH and DELETE: a PUT is
    /// idempotent by its method). Only the handlers given here meet the layer.
    pub fn route(&self, routes: UtoipaMethodRouter<AppState>) -> UtoipaMethodRouter<AppState> {
        let layer = axum::middleware::from_fn_with_state(self.clone(), layer);
        routes.map(|method_router| method_router.route_layer(layer))
    }
}

async fn layer(State(keyed): State<Keyed>, request: Request, next: Next) -> Response {
    let takes_part = matches!(*request.method(), Method::POST | Method::PATCH | Method::DELETE);
    let Some(raw_key) = request.headers().get("idempotency-key").cloned().filter(|_| takes_part) else {
        return next.run(request).await;
    };
    let (mut parts, body) = request.into_parts();
    let principal = match principal(&mut parts, &keyed.state).await {
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
    let scope = crate::idempotency::scope(principal, &parts, key);
    let fingerprint = crate::idempotency::fingerprint(&parts, &body);
    match keyed.keys.claim(&scope, &fingerprint).await {
        Err(refusal) => refusal.into_response(),
        Ok(Decision::Replay(answer)) => replay(answer),
        Ok(Decision::Run(claim)) => {
            parts.extensions.insert(claim.clone());
            let response = next.run(Request::from_parts(parts, Body::from(body))).await;
            finish(&keyed.keys, claim, response).await
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
async fn finish(keys: &Keys, claim: Claim, response: Response) -> Response {
    let status = response.status();
    if status.is_client_error() || status.is_server_error() {
        keys.release(&claim).await;
        return response;
    }
    if claim.recorded() {
        return response;
    }
    let recorded = async {
        let (answer, response) = capture(response).await?;
        keys.record_late(&claim, &answer).await?;
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
        if !claim.record(&mut self.tx, &answer).await? {
            // Our lease ran out and another attempt took the key over: it does the write.
            self.tx.rollback().await?;
            return Err(ApiError::IdempotencyKeyInFlight { retry_after_s: 1 });
        }
        self.tx.commit().await?;
        claim.committed();
        Ok(response)
    }

    pub async fn rollback(self) -> ApiResult<()> {
        Ok(self.tx.rollback().await?)
    }
}
