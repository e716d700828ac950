//! The admin's webhook for photos waiting for review: set it, see how its deliveries went,
//! send a test, remove it. Admin bearer token only. The deliveries themselves are
//! `jobs::webhooks`.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::extract::{Admin, JsonBody};
use super::idempotency::{Keyed, Write};
use super::openapi::{IdempotencyKeyParam, refusals, schemas};
use crate::db::webhooks::WebhookRow;
use crate::domain::rfc3339;
use crate::error::{ApiError, ApiResult};
use crate::http::AppState;
use crate::jobs::webhooks;

pub fn routes(keyed: &Keyed) -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(get_webhook, put_webhook))
        .routes(keyed.route(routes!(delete_webhook)))
        .routes(routes!(test_webhook))
}

/// The longest webhook URL taken.
const MAX_URL_CHARS: usize = 2000;
/// A secret the admin chooses: long enough not to be guessed, short enough for a header.
const SECRET_CHARS: std::ops::RangeInclusive<usize> = 16..=200;

/// The webhook and how its deliveries went.
#[derive(Serialize, ToSchema)]
struct WebhookJson {
    /// Where deliveries are POSTed.
    url: String,
    #[schema(format = DateTime)]
    created_at: String,
    /// The last attempt (a test included), null before the first.
    #[schema(format = DateTime, required = true)]
    last_attempt_at: Option<String>,
    /// The HTTP status the last attempt got; null when it got no answer (or none was made).
    #[schema(required = true)]
    last_status: Option<i32>,
    /// Why the last attempt failed; null when it succeeded (or none was made).
    #[schema(required = true)]
    last_error: Option<String>,
    /// The last attempt that succeeded (2xx).
    #[schema(format = DateTime, required = true)]
    last_delivered_at: Option<String>,
    /// Deliveries queued and not made yet (one per event at most).
    #[schema(minimum = 0)]
    pending_deliveries: i64,
}

impl WebhookJson {
    async fn read(state: &AppState, row: WebhookRow) -> ApiResult<Self> {
        Ok(Self {
            url: row.url,
            created_at: rfc3339(row.created_at),
            last_attempt_at: row.last_attempt_at.map(rfc3339),
            last_status: row.last_status,
            last_error: row.last_error,
            last_delivered_at: row.last_delivered_at.map(rfc3339),
            pending_deliveries: state.db.pending_webhook_deliveries().await?,
        })
    }
}

/// The webhook as set, with its secret.
#[derive(Serialize, ToSchema)]
struct WebhookWithSecret {
    #[serde(flatten)]
    webhook: WebhookJson,
    /// Signs every delivery (see docs/api.md, "The admin's webhook"). Only this answer shows it.
    secret: String,
}

#[derive(Deserialize, ToSchema)]
#[schema(as = NewWebhook)]
struct NewWebhook {
    /// `http://` or `https://`, with a host, at most 2000 characters; otherwise 422 `invalid_webhook`.
    #[schema(max_length = 2000)]
    url: String,
    /// 16–200 characters (otherwise 422 `invalid_webhook`). Omitted: the current secret is kept, or
    /// a new one is made when there was no webhook.
    #[schema(min_length = 16, max_length = 200)]
    secret: Option<String>,
}

/// The result of a test delivery.
#[derive(Serialize, ToSchema)]
struct TestDelivery {
    /// Whether the receiver answered 2xx.
    delivered: bool,
    /// The receiver's HTTP status; null when it did not answer.
    #[schema(required = true)]
    status: Option<u16>,
    /// Why it failed; null when delivered.
    #[schema(required = true)]
    error: Option<String>,
}

/// See the webhook (admin)
///
/// The webhook that tells of photos waiting for review, and how its deliveries went: the last attempt, its status
/// and error, the last success, and how many deliveries wait. Not its secret. 404 `not_found` when none is set.
/// Only the admin bearer token is accepted.
#[utoipa::path(
    get,
    path = "/api/v1/admin/webhook",
    operation_id = "getWebhook",
    tag = "events",
    security(("adminBearer" = [])),
    responses(
        (status = 200, description = "The webhook and how its deliveries went.", body = WebhookJson),
        GetWebhookRefusals,
    ),
)]
async fn get_webhook(State(state): State<AppState>, _: Admin) -> ApiResult<Response> {
    let row = state.db.webhook().await?.ok_or(ApiError::NotFound)?;
    Ok(Json(WebhookJson::read(&state, row).await?).into_response())
}

/// Set the webhook (admin)
///
/// Sets the instance's webhook (replacing the one set, whose history is cleared): from now on, when a photo starts
/// waiting for review in an event with the review gate on, a signed JSON POST goes to `url` (after a short delay
/// that gathers the photos which follow; see docs/api.md, "The admin's webhook"). The answer shows the secret that
/// signs the deliveries: the one given, else the current one, else a new one. Idempotent as a PUT:
/// it ignores `Idempotency-Key`, and the same body again changes nothing but the history. Only the admin bearer
/// token is accepted.
#[utoipa::path(
    put,
    path = "/api/v1/admin/webhook",
    operation_id = "setWebhook",
    tag = "events",
    security(("adminBearer" = [])),
    request_body = NewWebhook,
    responses(
        (status = 200, description = "The webhook is set; the answer shows its secret.", body = WebhookWithSecret),
        SetWebhookRefusals,
    ),
)]
async fn put_webhook(
    State(state): State<AppState>,
    _: Admin,
    JsonBody(body): JsonBody<NewWebhook>,
) -> ApiResult<Response> {
    let url = parse_url(&body.url)?;
    let secret = match body.secret {
        Some(secret) if SECRET_CHARS.contains(&secret.chars().count()) && !secret.chars().any(char::is_control) => {
            secret
        }
        Some(_) => return Err(ApiError::InvalidWebhook("the secret must be 16–200 characters".into())),
        None => match state.db.webhook().await? {
            Some(current) => current.secret,
            None => webhooks::new_secret()?,
        },
    };
    let mut tx = state.db.begin().await?;
    tx.set_webhook(&url, &secret).await?;
    tx.commit().await?;
    tracing::info!("webhook set by the admin");
    let row = state.db.webhook().await?.ok_or(ApiError::NotFound)?;
    let webhook = WebhookJson::read(&state, row).await?;
    Ok(Json(WebhookWithSecret { webhook, secret }).into_response())
}

/// Remove the webhook (admin)
///
/// Removes the webhook and the deliveries still waiting to be made. 404 `not_found` when none is set. Only the admin
/// bearer token is accepted. Takes an `Idempotency-Key` (parameter `IdempotencyKey`): a retry with the same key gets
/// 204 again.
#[utoipa::path(
    delete,
    path = "/api/v1/admin/webhook",
    operation_id = "deleteWebhook",
    tag = "events",
    security(("adminBearer" = [])),
    params(IdempotencyKeyParam),
    responses(
        (status = 204, description = "Removed. With `Idempotent-Replayed: true`: an earlier request with the same `Idempotency-Key` removed it.", headers(("Idempotent-Replayed" = inline(schemas::True), description = "`true`: this is the recorded answer to an earlier request with the same `Idempotency-Key` (parameter `IdempotencyKey`); the write was not run again. Absent when the write ran."))),
        DeleteWebhookRefusals,
    ),
)]
async fn delete_webhook(State(state): State<AppState>, _: Admin, write: Write) -> ApiResult<Response> {
    let mut tx = write.begin(&state.db).await?;
    if !tx.delete_webhook().await? {
        tx.rollback().await?;
        return Err(ApiError::NotFound);
    }
    let response = tx.commit(StatusCode::NO_CONTENT.into_response()).await?;
    tracing::info!("webhook removed by the admin");
    Ok(response)
}

/// Test the webhook (admin)
///
/// Sends a test delivery now (`"test": true`, no event, `waiting` 0), signed as every delivery, and answers how it
/// went (within 10 s); it counts as the last attempt. 404 `not_found` when no webhook is set.
/// It ignores `Idempotency-Key`: a test changes nothing but the last attempt, and may be repeated. Only the admin bearer token is accepted.
#[utoipa::path(
    post,
    path = "/api/v1/admin/webhook/test",
    operation_id = "testWebhook",
    tag = "events",
    security(("adminBearer" = [])),
    responses(
        (status = 200, description = "The test was sent; `delivered` says whether the receiver took it.", body = TestDelivery),
        TestWebhookRefusals,
    ),
)]
async fn test_webhook(State(state): State<AppState>, _: Admin) -> ApiResult<Response> {
    let webhook = state.db.webhook().await?.ok_or(ApiError::NotFound)?;
    let attempt = state.webhooks.send(&webhook, &state.webhooks.test_payload()).await;
    let delivered = attempt.error.is_none();
    Ok(Json(TestDelivery { delivered, status: attempt.status, error: attempt.error }).into_response())
}

/// The URL, if it is one deliveries can go to: http or https, with a host, not too long.
fn parse_url(text: &str) -> ApiResult<String> {
    let text = text.trim();
    if text.chars().count() > MAX_URL_CHARS {
        return Err(ApiError::InvalidWebhook(format!("the URL is longer than {MAX_URL_CHARS} characters")));
    }
    let url = s3_http::Url::parse(text).map_err(|e| ApiError::InvalidWebhook(format!("not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ApiError::InvalidWebhook("the URL must start with http:// or https://".into()));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(ApiError::InvalidWebhook("the URL has no host".into()));
    }
    Ok(url.to_string())
}

refusals!(GetWebhookRefusals {
    401 => problem("No credential, or a bearer token that is neither the admin token nor a known guest or organiser token.", &[Unauthenticated]),
    403 => problem("A valid guest or organiser credential instead of the admin token.", &[Forbidden]),
    404 => problem("No webhook is set.", &[NotFound]),
    500 => shared("Internal"),
});

refusals!(SetWebhookRefusals {
    400 => problem("Malformed JSON, wrong content type, missing `url`.", &[InvalidRequest]),
    401 => problem("No credential, or a bearer token that is neither the admin token nor a known guest or organiser token.", &[Unauthenticated]),
    403 => or_cross_origin("A valid guest or organiser credential instead of the admin token (`forbidden`).", &[Forbidden]),
    413 => shared("BodyTooLarge"),
    422 => problem("`invalid_webhook`: the URL is not `http://` or `https://` with a host, or is longer than 2000 characters; or the secret is not 16–200 characters.", &[InvalidWebhook]),
    500 => shared("Internal"),
});

refusals!(DeleteWebhookRefusals {
    400 => problem("`invalid_idempotency_key`: the `Idempotency-Key` is not 1–255 printable ASCII characters.", &[InvalidIdempotencyKey, InvalidRequest]),
    401 => problem("No credential, or a bearer token that is neither the admin token nor a known guest or organiser token.", &[Unauthenticated]),
    403 => or_cross_origin("A valid guest or organiser credential instead of the admin token (`forbidden`).", &[Forbidden]),
    404 => problem("No webhook is set.", &[NotFound]),
    409 => shared("IdempotencyKeyInFlight"),
    413 => shared("BodyTooLarge"),
    422 => shared("IdempotencyKeyReused"),
    500 => shared("Internal"),
});

refusals!(TestWebhookRefusals {
    401 => problem("No credential, or a bearer token that is neither the admin token nor a known guest or organiser token.", &[Unauthenticated]),
    403 => or_cross_origin("A valid guest or organiser credential instead of the admin token (`forbidden`).", &[Forbidden]),
    404 => problem("No webhook is set.", &[NotFound]),
    500 => shared("Internal"),
});
