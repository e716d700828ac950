//! The page's files on a weak network: compressed at build time (brotli, else gzip, else as
//! they are, as `Accept-Encoding` allows), and named under the build's version so a browser
//! keeps them for good (`immutable`) and a return visit asks for none of them again. The plain
//! names still answer, revalidated every time.

mod common;

use common::{Backend, TestApp};
use reqwest::StatusCode;
use serde_json::Value;

both_backends!(the_page_and_its_files_come_compressed_and_versioned_files_are_kept_for_good);
both_backends!(a_guests_event_page_carries_what_it_would_ask_first);
both_backends!(a_new_visitors_page_shows_the_name_form_before_any_file_arrives);

async fn get(app: &TestApp, path: &str, encoding: Option<&str>) -> reqwest::Response {
    let mut request = app.client.get(app.url(path));
    if let Some(encoding) = encoding {
        request = request.header("Accept-Encoding", encoding);
    }
    request.send().await.expect("GET")
}

fn header<'a>(response: &'a reqwest::Response, name: &str) -> Option<&'a str> {
    response.headers().get(name).and_then(|v| v.to_str().ok())
}

async fn the_page_and_its_files_come_compressed_and_versioned_files_are_kept_for_good(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let page = get(&app, "/", Some("identity")).await;
    assert_eq!(page.status(), StatusCode::OK);
    assert_eq!(header(&page, "cache-control"), Some("no-cache"), "the page itself is revalidated");
    let html = page.text().await.expect("html");
    let app_js = html
        .split('"')
        .find(|s| s.starts_with("/static/v-") && s.ends_with("/app.js"))
        .expect("app.js under a version");
    let version = app_js.trim_end_matches("/app.js").to_owned();
    assert!(
        html.contains(&format!("<link rel=\"modulepreload\" href=\"{version}/util.js\">")),
        "every module is asked for at once"
    );
    assert!(html.contains(&format!("{version}/style.css")));

    let plain = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/static/util.js")).expect("static/util.js");
    let raw = get(&app, &format!("{version}/util.js"), None).await;
    assert_eq!(header(&raw, "cache-control"), Some("public, max-age=31536000, immutable"));
    assert_eq!(header(&raw, "content-encoding"), None);
    assert_eq!(header(&raw, "vary"), Some("accept-encoding"));
    assert_eq!(raw.bytes().await.expect("bytes").as_ref(), plain.as_slice(), "as it is without Accept-Encoding");

    let br = get(&app, &format!("{version}/util.js"), Some("gzip, deflate, br, zstd")).await;
    assert_eq!(header(&br, "content-encoding"), Some("br"));
    assert!(header(&br, "content-type").is_some_and(|t| t.starts_with("text/javascript")));
    let br_etag = header(&br, "etag").expect("etag").to_owned();
    let br_len = br.bytes().await.expect("bytes").len();
    assert!(br_len * 2 < plain.len(), "brotli: {br_len} of {} bytes", plain.len());

    let gz = get(&app, &format!("{version}/util.js"), Some("br;q=0, gzip")).await;
    assert_eq!(header(&gz, "content-encoding"), Some("gzip"));
    assert_ne!(header(&gz, "etag"), Some(br_etag.as_str()), "each form its own ETag");
    assert_eq!(&gz.bytes().await.expect("bytes")[..2], &[0x1f, 0x8b], "a gzip stream");

    // The page compressed as well; a revalidation of it is a 304.
    let page = get(&app, "/", Some("br")).await;
    assert_eq!(header(&page, "content-encoding"), Some("br"));
    let etag = header(&page, "etag").expect("etag").to_owned();
    let again = app
        .client
        .get(app.url("/"))
        .header("Accept-Encoding", "br")
        .header("If-None-Match", &etag)
        .send()
        .await
        .expect("GET");
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);

    // Plain names (pages from before, tools) answer, revalidated; another version too.
    let old = get(&app, "/static/util.js", Some("gzip")).await;
    assert_eq!((old.status(), header(&old, "cache-control")), (StatusCode::OK, Some("no-cache")));
    let other = get(&app, "/static/v-000000000000/util.js", None).await;
    assert_eq!((other.status(), header(&other, "cache-control")), (StatusCode::OK, Some("no-cache")));
    assert_eq!(get(&app, &format!("{version}/nothing.js"), None).await.status(), StatusCode::NOT_FOUND);
}

/// What a guest's event page carries in `#boot` (parsed as the page does), with the response.
async fn boot(app: &TestApp, slug: &str, token: Option<&str>) -> (Option<String>, Option<Value>) {
    let mut request = app.client.get(app.url(&format!("/e/{slug}")));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let page = request.send().await.expect("GET page");
    assert_eq!(page.status(), StatusCode::OK);
    let cache = header(&page, "cache-control").map(str::to_owned);
    let html = page.text().await.expect("html");
    let boot = html.split_once("<script type=\"application/json\" id=\"boot\">").map(|(_, rest)| {
        let (json, _) = rest.split_once("</script>").expect("the boot element ends");
        serde_json::from_str(json).expect("boot is JSON")
    });
    (cache, boot)
}

/// The guest's page carries the event, the server's limits and (for one of the event's guests)
/// the guest, as the three requests it spares would answer; a name that would end the script
/// element stays inside it; nothing of it is for a shared cache; an unknown event's page carries
/// nothing.
async fn a_guests_event_page_carries_what_it_would_ask_first(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let name = "Anna & Ben</script><script>alert(1)</script>";
    let event = app.create_event_named(name).await;

    let (cache, visitor) = boot(&app, &event.slug, None).await;
    assert_eq!(cache.as_deref(), Some("private, no-cache"), "personal: never in a shared cache");
    let visitor = visitor.expect("a visitor's page carries the event");
    let (_, shown) = app.get_json(&format!("/api/v1/events/{}", event.slug), "").await;
    assert_eq!(visitor["event"], shown, "the event as GET /events/{{slug}} shows it to a visitor");
    assert_eq!(visitor["event"]["name"], name, "the name intact, inside the element");
    assert!(visitor["event"].get("join_token").is_none(), "a visitor is not shown the join token");
    assert!(visitor["me"].is_null(), "a visitor is no guest yet: the page asks for a name");
    let info: Value = app.client.get(app.url("/api/v1/info")).send().await.expect("info").json().await.expect("json");
    assert_eq!(visitor["info"], info);

    let guest = app.join(&event, "Carla").await;
    let (_, joined) = boot(&app, &event.slug, Some(&guest.token)).await;
    let joined = joined.expect("a guest's page carries the guest");
    let (_, me) = app.get_json("/api/v1/me", &guest.token).await;
    assert_eq!(joined["me"], me);
    assert_eq!(joined["me"]["display_name"], "Carla");

    let other = app.create_event().await;
    let (_, elsewhere) = boot(&app, &other.slug, Some(&guest.token)).await;
    assert!(elsewhere.expect("the other event's page")["me"].is_null(), "a guest of one event is not another's");

    let (_, unknown) = boot(&app, "no-such-event", None).await;
    assert!(unknown.is_none(), "an unknown event's page asks for itself");
}

/// The words of `static/i18n.js` for `key` in `lang` (the first definition in that language's block).
fn word(lang: &str, key: &str) -> String {
    let words = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/static/i18n.js")).expect("i18n.js");
    let block = words.split_once(&format!("\n  {lang}: {{\n")).expect("the language's block").1;
    let line = block.lines().find(|l| l.trim_start().starts_with(&format!("{key}: "))).expect("the word");
    line.split_once(": '").expect("a quoted word").1.trim_end().trim_end_matches(',').trim_end_matches('\'').to_owned()
}

/// A new visitor who came with the join link gets one response that shows the event's name and
/// the name form: the stylesheet inline (allowed by its hash, and only it), the form's words as
/// the page's modules would say them in the browser's language, its button waiting for the
/// modules, gzipped. Without the token, or as a guest already, the plain page.
async fn a_new_visitors_page_shows_the_name_form_before_any_file_arrives(backend: Backend) {
    use base64::Engine;
    use sha2::Digest;
    use std::io::Read;

    let app = TestApp::spawn(backend).await;
    let event = app.create_event_named("Anna & Ben</h1><script>alert(1)</script>").await;
    let link = format!("/e/{}?join={}", event.slug, event.join_token);

    let page = app
        .client
        .get(app.url(&link))
        .header("Accept-Encoding", "gzip, deflate, br")
        .header("Accept-Language", "fr-FR, de-DE;q=0.9, en;q=0.8")
        .send()
        .await
        .expect("GET page");
    assert_eq!(page.status(), StatusCode::OK);
    assert_eq!(header(&page, "content-encoding"), Some("gzip"));
    assert_eq!(header(&page, "cache-control"), Some("private, no-cache"));
    let policy = header(&page, "content-security-policy").expect("a policy").to_owned();
    let gzipped = page.bytes().await.expect("body");
    let mut html = String::new();
    flate2::read::GzDecoder::new(&gzipped[..]).read_to_string(&mut html).expect("gzip");
    assert!(gzipped.len() * 3 < html.len(), "{} bytes gzipped from {}", gzipped.len(), html.len());

    let style = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/static/style.css")).expect("style.css");
    assert!(html.contains(&format!("<style>{style}</style>")), "the stylesheet inline");
    assert!(!html.contains("rel=\"stylesheet\""), "and not asked for again");
    let hash = base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(style.as_bytes()));
    assert!(policy.contains(&format!("style-src 'self' 'sha256-{hash}';")), "{policy}");
    assert!(policy.contains("script-src 'self';"), "no inline script allowed: {policy}");

    assert!(html.contains("<html lang=\"de\">"), "the first language the page has");
    let escaped = "Anna &amp; Ben&lt;/h1&gt;&lt;script&gt;alert(1)&lt;/script&gt;";
    assert!(html.contains(&format!("<h1 id=\"event-name\">{escaped}</h1>")), "the name, as text");
    assert!(html.contains(&format!("<title>{escaped} · Confetti</title>")));
    assert!(!html.contains("<script>alert"), "no markup from the name");
    for key in ["switch_to", "your_name", "join_hint", "join"] {
        assert!(html.contains(&format!(">{}<", word("de", key))), "{key} as i18n.js says it");
    }
    assert!(html.contains("<button type=\"submit\" disabled>"), "the button waits for the modules");
    assert!(html.contains("id=\"boot\""), "and the page still carries the boot data");

    let english = app.client.get(app.url(&link)).header("Accept-Language", "en-GB").send().await.expect("GET");
    assert_eq!(header(&english, "content-encoding"), None, "not gzipped when not asked");
    let english = english.text().await.expect("html");
    for key in ["switch_to", "your_name", "join_hint", "join"] {
        assert!(english.contains(&format!(">{}<", word("en", key))), "{key} in English");
    }

    let without_token = get(&app, &format!("/e/{}", event.slug), Some("gzip")).await;
    assert!(header(&without_token, "content-security-policy").is_some_and(|p| p.contains("style-src 'self';")));
    let guest = app.join(&event, "Carla").await;
    let joined = app.client.get(app.url(&link)).bearer_auth(&guest.token).send().await.expect("GET");
    let joined = joined.text().await.expect("html");
    assert!(
        joined.contains("rel=\"stylesheet\"") && !joined.contains("data-first-visit"),
        "a guest gets the plain page"
    );
}
