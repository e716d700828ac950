//! Security headers on every response: a Content-Security-Policy that allows only this
//! server's own scripts (no inline script, no inline style attribute), no MIME sniffing,
//! no referrer to other sites, and no framing by other sites.

use axum::http::{HeaderValue, header};
use axum::response::Response;

/// `img-src blob:` shows a queued photo before it is sent; `data:` carries the placeholders the
/// page decodes from each Upload's ThumbHash (a small PNG drawn behind a loading thumb), and
/// browsers' own UI (broken-image icons) uses it. `connect-src 'self'` covers the API and the
/// live event stream. `worker-src` and `manifest-src` name what the installable page needs (the
/// service worker at `/sw.js`, each event's manifest), though `default-src` allows them too.
pub const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; \
                   connect-src 'self'; font-src 'self'; worker-src 'self'; manifest-src 'self'; \
                   object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

pub async fn add(mut response: Response) -> Response {
    let h = response.headers_mut();
    // A response may carry a stricter or a more specific one of its own (a guest's first visit
    // allows its one inline stylesheet by hash: `http::first_visit`).
    h.entry(header::CONTENT_SECURITY_POLICY).or_insert(HeaderValue::from_static(CSP));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}
