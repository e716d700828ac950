//! The page's files on a weak network: compressed at build time (brotli, else gzip, else as
//! they are, as `Accept-Encoding` allows), and named under the build's version so a browser
//! keeps them for good (`immutable`) and a return visit asks for none of them again. The plain
//! names still answer, revalidated every time.

mod common;

use common::{Backend, TestApp};
use reqwest::StatusCode;

both_backends!(the_page_and_its_files_come_compressed_and_versioned_files_are_kept_for_good);

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
