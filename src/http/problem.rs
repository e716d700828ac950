//! The last word on error answers: every 4xx and 5xx leaves the server as problem+json.
//!
//! Handlers answer errors with `ApiError`. What reaches this layer otherwise is axum's own
//! rejection of a request one of its extractors could not read (a repeated query parameter,
//! invalid UTF-8 in a path segment, a body over axum's default limit…), written as text/plain.
//! One response-mapping layer catches them all, for every extractor and every route added
//! later, where wrapping each extractor would need every handler to remember to use the
//! wrapper. The rejection's text becomes the problem's `detail`; the status picks the `code`.

use axum::body::{Body, to_bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use http_body::Body as _;
use serde_json::json;

use crate::error::ApiError;

/// axum's rejections are one sentence; a longer body is not one of them and is not echoed.
const MAX_DETAIL_BYTES: usize = 4096;

/// The limit axum applies to bodies its own extractors buffer, unless a route sets another
/// (Confetti's routes read their bodies themselves: `JsonBody`, the upload's multipart reader).
const AXUM_DEFAULT_BODY_LIMIT: u64 = 2_097_152;

/// Turns an error answer that is not problem+json into one; every other answer passes as is.
pub async fn ensure(response: Response) -> Response {
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) || is_problem(&response) {
        return response;
    }
    let (parts, body) = response.into_parts();
    // Only a body known to be complete and small is read: an error answer never waits on a stream.
    let detail = match body.size_hint().exact() {
        Some(n) if n <= MAX_DETAIL_BYTES as u64 => to_bytes(body, MAX_DETAIL_BYTES)
            .await
            .ok()
            .map(|b| String::from_utf8_lossy(&b).trim().to_owned())
            .filter(|d| !d.is_empty()),
        _ => None,
    };
    tracing::debug!(
        status = status.as_u16(),
        detail = detail.as_deref().unwrap_or(""),
        "error answer made problem+json"
    );
    let mut problem = problem_for(status, detail);
    // What else the answer said stays (`Allow`, `Retry-After`, `WWW-Authenticate`…).
    let headers = problem.headers_mut();
    for (name, value) in &parts.headers {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH && !headers.contains_key(name) {
            headers.append(name.clone(), value.clone());
        }
    }
    problem
}

fn is_problem(response: &Response) -> bool {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(';').next().is_some_and(|t| t.trim().eq_ignore_ascii_case("application/problem+json")))
}

/// The `ApiError` with this status where there is one; any other status keeps its number and
/// gets a code named after it.
fn problem_for(status: StatusCode, detail: Option<String>) -> Response {
    let reason = || status.canonical_reason().unwrap_or("Error").to_owned();
    let error = match status {
        StatusCode::BAD_REQUEST => ApiError::InvalidRequest(detail.unwrap_or_else(reason)),
        StatusCode::UNAUTHORIZED => ApiError::Unauthenticated,
        StatusCode::FORBIDDEN => ApiError::Forbidden,
        StatusCode::NOT_FOUND => ApiError::NotFound,
        StatusCode::METHOD_NOT_ALLOWED => ApiError::MethodNotAllowed,
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::BodyTooLarge { limit_bytes: AXUM_DEFAULT_BODY_LIMIT },
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ApiError::UnsupportedMediaType(detail.unwrap_or_else(reason)),
        StatusCode::INTERNAL_SERVER_ERROR => {
            ApiError::Internal(anyhow::anyhow!(detail.unwrap_or_else(|| "an empty 500 answer".into())))
        }
        _ => return other_problem(status, detail),
    };
    error.into_response()
}

/// The same document `ApiError` writes, for a status no `ApiError` has (a 5xx keeps its
/// cause for the log, as there).
fn other_problem(status: StatusCode, detail: Option<String>) -> Response {
    let reason = status.canonical_reason().unwrap_or("Error");
    let code = reason.to_ascii_lowercase().replace(|c: char| !c.is_ascii_alphanumeric(), "_");
    let detail = if status.is_server_error() {
        tracing::error!(status = status.as_u16(), detail = detail.as_deref().unwrap_or(""), "request failed");
        "The server could not complete this request. It has been logged.".to_owned()
    } else {
        detail.unwrap_or_else(|| reason.to_owned())
    };
    let body = json!({
        "type": format!("https://confetti.invalid/problems/{code}"),
        "title": reason,
        "status": status.as_u16(),
        "detail": detail,
        "code": code,
    });
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/problem+json"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn problem(response: Response) -> (StatusCode, String, serde_json::Value) {
        let response = ensure(response).await;
        let content_type = response.headers()[header::CONTENT_TYPE].to_str().unwrap_or_default().to_owned();
        let status = response.status();
        let body = to_bytes(response.into_body(), 1 << 16).await.unwrap_or_default();
        (status, content_type, serde_json::from_slice(&body).unwrap_or_default())
    }

    #[tokio::test]
    async fn a_text_rejection_becomes_a_problem_with_its_text_as_detail() {
        let rejection = (StatusCode::BAD_REQUEST, "Failed to deserialize query string: duplicate field `limit`");
        let (status, content_type, body) = problem(rejection.into_response()).await;
        assert_eq!((status, content_type.as_str()), (StatusCode::BAD_REQUEST, "application/problem+json"));
        assert_eq!(body["code"], "invalid_request");
        assert_eq!(body["detail"], "Failed to deserialize query string: duplicate field `limit`");
    }

    #[tokio::test]
    async fn a_status_without_an_api_error_keeps_its_number() {
        let (status, content_type, body) = problem(StatusCode::REQUEST_TIMEOUT.into_response()).await;
        assert_eq!((status, content_type.as_str()), (StatusCode::REQUEST_TIMEOUT, "application/problem+json"));
        assert_eq!(body["code"], "request_timeout");
        let (status, _, body) = problem(StatusCode::PAYLOAD_TOO_LARGE.into_response()).await;
        assert_eq!((status, &body["code"]), (StatusCode::PAYLOAD_TOO_LARGE, &json!("body_too_large")));
    }

    #[tokio::test]
    async fn problems_and_successes_pass_unchanged() {
        let already = ApiError::WrongEvent.into_response();
        let (status, _, body) = problem(already).await;
        assert_eq!((status, &body["code"]), (StatusCode::FORBIDDEN, &json!("wrong_event")));
        let fine = ensure((StatusCode::OK, "hello").into_response()).await;
        assert_eq!(fine.headers()[header::CONTENT_TYPE], "text/plain; charset=utf-8");
    }
}
