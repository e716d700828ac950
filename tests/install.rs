//! The guest's page as an installable app: each event's web app manifest (its name, the
//! event's page as start and scope, icons the server has, the share target), linked from the
//! event's page; the service worker at `/sw.js` naming this build's files; a share that reaches
//! the server (no worker on that phone) opens the event's page.

mod common;

use common::{Backend, TestApp, assert_problem};
use reqwest::StatusCode;
use serde_json::{Value, json};

both_backends!(an_events_manifest_carries_its_name_and_opens_its_page);
both_backends!(an_unknown_events_manifest_is_a_problem);
both_backends!(the_service_worker_names_this_builds_files_and_a_share_without_it_opens_the_page);

async fn an_events_manifest_carries_its_name_and_opens_its_page(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let name = "Anna & Ben \"im Garten\" 🎉";
    let event = app.create_event_named(name).await;

    let page = app.client.get(app.url(&format!("/e/{}", event.slug))).send().await.expect("page");
    let html = page.text().await.expect("html");
    let href = format!("/e/{}/manifest.webmanifest", event.slug);
    assert!(html.contains(&format!("<link rel=\"manifest\" href=\"{href}\">")), "the event's page links its manifest");

    let response = app.client.get(app.url(&href)).send().await.expect("manifest");
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers().get("content-type").and_then(|v| v.to_str().ok()), Some("application/manifest+json"));
    let manifest: Value = response.json().await.expect("json");
    let page = format!("/e/{}", event.slug);
    assert_eq!(manifest["name"], name, "the event's name, as the organiser wrote it");
    assert_eq!(manifest["start_url"], page.as_str());
    assert_eq!(manifest["scope"], page.as_str());
    assert_eq!(manifest["display"], "standalone");
    let share = &manifest["share_target"];
    assert_eq!(share["action"], format!("{page}/share").as_str());
    assert_eq!((share["method"].as_str(), share["enctype"].as_str()), (Some("POST"), Some("multipart/form-data")));
    assert_eq!(share["params"]["files"][0]["accept"], json!(["image/*", "video/*"]));

    let icons = manifest["icons"].as_array().expect("icons");
    assert!(icons.iter().any(|i| i["purpose"] == "maskable"), "a maskable icon: {icons:?}");
    for icon in icons {
        let src = icon["src"].as_str().expect("src");
        let got = app.client.get(app.url(src)).send().await.expect("icon");
        assert_eq!(got.status(), StatusCode::OK, "{src}");
        assert_eq!(got.headers().get("content-type").and_then(|v| v.to_str().ok()), icon["type"].as_str(), "{src}");
        let bytes = got.bytes().await.expect("bytes");
        if let Some((w, h)) = icon["sizes"].as_str().and_then(|s| s.split_once('x')) {
            // A PNG's size is in its IHDR chunk: width at bytes 16..20, height at 20..24.
            assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{src} is a PNG");
            let dim =
                |at: usize| u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]).to_string();
            assert_eq!((dim(16), dim(20)), (w.to_owned(), h.to_owned()), "{src} is as large as it says");
        }
    }
}

async fn an_unknown_events_manifest_is_a_problem(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    for slug in ["no-such-event", "Not_A_Slug"] {
        let response =
            app.client.get(app.url(&format!("/e/{slug}/manifest.webmanifest"))).send().await.expect("manifest");
        assert_problem(response, StatusCode::NOT_FOUND, "event_not_found").await;
    }
}

async fn the_service_worker_names_this_builds_files_and_a_share_without_it_opens_the_page(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let html = app.client.get(app.url("/")).send().await.expect("page").text().await.expect("html");
    let version = html
        .split('"')
        .find_map(|s| s.strip_prefix("/static/").and_then(|s| s.strip_suffix("/app.js")))
        .expect("app.js under a version")
        .to_owned();

    let worker = app.client.get(app.url("/sw.js")).send().await.expect("sw.js");
    assert_eq!(worker.status(), StatusCode::OK);
    let header = |name: &str| worker.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    assert!(header("content-type").is_some_and(|t| t.starts_with("text/javascript")));
    assert_eq!(header("cache-control").as_deref(), Some("no-cache"), "checked for a new version on every visit");
    let csp = header("content-security-policy").expect("CSP");
    assert!(csp.contains("worker-src 'self'") && csp.contains("manifest-src 'self'"), "{csp}");
    let script = worker.text().await.expect("script");
    assert!(script.contains(&format!("const VERSION = '{version}';")), "the build's version is written in");
    assert!(!script.contains(" from './"), "imports resolve under /static/{version}/, not /");
    assert!(script.contains(&format!(" from '/static/{version}/queue-lock.js'")));
    for file in ["app.js", "guest.js", "queue-scheduler.js", "upload-view.js", "style.css", "icon-192.png"] {
        assert!(script.contains(&format!("\"/static/{version}/{file}\"")), "keeps the guest's {file} at once");
    }
    for file in ["admin.js", "organiser.js"] {
        assert!(
            !script.contains(&format!("/static/{version}/{file}")),
            "{file}: kept once used, not fetched on a guest's phone"
        );
    }
    assert!(!script.contains(&format!("/static/{version}/sw.js")), "not itself");

    let no_follow = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");
    let form = reqwest::multipart::Form::new().part(
        "files",
        reqwest::multipart::Part::bytes(vec![0xff, 0xd8, 0xff])
            .file_name("a.jpg")
            .mime_str("image/jpeg")
            .expect("mime"),
    );
    let shared =
        no_follow.post(app.url(&format!("/e/{}/share", event.slug))).multipart(form).send().await.expect("share");
    assert_eq!(shared.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        shared.headers().get("location").and_then(|v| v.to_str().ok()),
        Some(format!("/e/{}", event.slug).as_str())
    );
    assert_eq!(app.upload_rows().await, 0, "nothing is stored from a share the worker did not take");
}
