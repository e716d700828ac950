//! A guest's first visit to a join link, in one response: on a phone network each round trip
//! costs about half a second, so the page a new visitor gets already shows the event's name and
//! the name form, styled by the stylesheet carried inline, before any module has arrived. The
//! modules then take the form over (`guest.js`), keeping what the guest typed meanwhile.
//!
//! Only for a visitor who is not yet one of the event's guests and came with the join token in
//! the link (`?join=…`): without the token the page shows what is missing instead, which is the
//! modules' to say. A guest who has joined gets the plain page; its stylesheet is cached by then.
//! The form's button waits for the modules (`disabled`): a form sent before them could not join.

use std::sync::LazyLock;

use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use sha2::{Digest, Sha256};

use super::pages::{FILES, INDEX};
use super::security_headers::CSP;

/// The stylesheet, as the page carries it inline.
static STYLE: LazyLock<&'static str> = LazyLock::new(|| {
    FILES
        .iter()
        .find(|f| f.name == "style.css")
        .and_then(|f| std::str::from_utf8(f.raw).ok())
        // `</style` cannot occur in a stylesheet that parses, but the element must not end early.
        .filter(|css| !css.to_ascii_lowercase().contains("</style"))
        .unwrap_or_default()
});

/// The content security policy with the inline stylesheet's hash: that one `<style>` and no other.
static POLICY: LazyLock<String> = LazyLock::new(|| {
    let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(STYLE.as_bytes()));
    CSP.replacen("style-src 'self'", &format!("style-src 'self' 'sha256-{hash}'"), 1)
});

/// The words the page shows before the modules arrive: the same as `static/i18n.js` has for
/// `switch_to` (the language button), `your_name`, `join_hint` and `join`
/// (`tests/static_files.rs` keeps them equal).
struct Words {
    lang: &'static str,
    switch_to: &'static str,
    your_name: &'static str,
    join_hint: &'static str,
    join: &'static str,
}

const GERMAN: Words = Words {
    lang: "de",
    switch_to: "English",
    your_name: "Dein Name",
    join_hint: "Damit alle sehen, von wem die Fotos sind. Kein Konto, keine App.",
    join: "Los geht’s",
};

const ENGLISH: Words = Words {
    lang: "en",
    switch_to: "Deutsch",
    your_name: "Your name",
    join_hint: "So everyone sees who took the photos. No account, no app.",
    join: "Let’s go",
};

/// The page's language as the modules will pick it when nothing is saved on the phone: the first
/// of the browser's languages the page has (`Accept-Language`, in order of preference), else English.
fn words(headers: &HeaderMap) -> &'static Words {
    let Some(value) = headers.get(header::ACCEPT_LANGUAGE).and_then(|v| v.to_str().ok()) else { return &ENGLISH };
    let mut tags: Vec<(f32, usize, &str)> = value
        .split(',')
        .take(32)
        .enumerate()
        .filter_map(|(i, item)| {
            let mut parts = item.split(';');
            let tag = parts.next()?.trim();
            let q = parts.find_map(|p| p.trim().strip_prefix("q=")).and_then(|q| q.trim().parse().ok()).unwrap_or(1.0);
            (q > 0.0).then_some((q, i, tag))
        })
        .collect();
    tags.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    for (_, _, tag) in tags {
        match tag.split('-').next().map(str::to_ascii_lowercase).as_deref() {
            Some("de") => return &GERMAN,
            Some("en") => return &ENGLISH,
            _ => {}
        }
    }
    &ENGLISH
}

/// Text as HTML element content or a quoted attribute value.
fn escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The page for a new visitor of `event_name`: `boot` (the `<script id="boot">` element) in its
/// head, the stylesheet inline, the name and the form in place. `None` when the page as built
/// does not have the places this fills (a test catches that).
pub fn page(event_name: &str, boot: &str, headers: &HeaderMap) -> Option<String> {
    let page = std::str::from_utf8(INDEX.raw).ok()?;
    let w = words(headers);
    let name = escaped(event_name);
    let stylesheet = page.lines().find(|l| l.contains("rel=\"stylesheet\""))?;
    let form = format!(
        "<section class=\"card join\" data-first-visit>\
         <form class=\"join-form\" data-testid=\"join\">\
         <label for=\"display_name\">{}</label>\
         <input name=\"display_name\" id=\"display_name\" type=\"text\" maxlength=\"60\" required autocomplete=\"nickname\" enterkeyhint=\"go\" autofocus>\
         <p class=\"hint\">{}</p>\
         <button type=\"submit\" disabled>{}</button>\
         </form></section>\n    ",
        w.your_name, w.join_hint, w.join
    );
    let filled = page
        .replacen("<html lang=\"en\">", &format!("<html lang=\"{}\">", w.lang), 1)
        .replacen("<title>Confetti</title>", &format!("<title>{name} · Confetti</title>"), 1)
        .replacen(stylesheet, &format!("  <style>{}</style>", *STYLE), 1)
        .replacen("</head>", &format!("{boot}</head>"), 1)
        .replacen("<h1 id=\"event-name\"></h1>", &format!("<h1 id=\"event-name\">{name}</h1>"), 1)
        .replacen("data-action=\"lang\"></button>", &format!("data-action=\"lang\">{}</button>", w.switch_to), 1)
        .replacen("<noscript>", &format!("{form}<noscript>"), 1);
    let complete = filled.contains("<style>") && filled.contains("data-first-visit") && filled.contains("id=\"boot\"");
    complete.then_some(filled)
}

/// The page, gzipped when the browser takes it (the stylesheet makes it about 45 KB, 10 KB
/// gzipped; compressed on the blocking pool), with the policy that allows its inline stylesheet.
/// `None` if the compression could not run.
pub async fn respond(page: String, headers: &HeaderMap) -> Option<Response> {
    let (body, encoding) = if super::pages::takes_gzip(headers) {
        let compressed = tokio::task::spawn_blocking(move || {
            use std::io::Write;
            let mut e = flate2::write::GzEncoder::new(Vec::with_capacity(16 * 1024), flate2::Compression::default());
            e.write_all(page.as_bytes()).and_then(|()| e.finish())
        })
        .await
        .ok()?
        .ok()?;
        (compressed, Some("gzip"))
    } else {
        (page.into_bytes(), None)
    };
    let mut response = (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(INDEX.content_type)),
            (header::CACHE_CONTROL, HeaderValue::from_static("private, no-cache")),
            (header::VARY, HeaderValue::from_static("cookie, accept-encoding, accept-language")),
        ],
        body,
    )
        .into_response();
    if let Some(encoding) = encoding {
        response.headers_mut().insert(header::CONTENT_ENCODING, HeaderValue::from_static(encoding));
    }
    response.headers_mut().insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_str(&POLICY).ok()?);
    Some(response)
}
