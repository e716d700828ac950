//! The API reference the server serves at `/api/v1/openapi.json`, generated from its code: a
//! valid OpenAPI 3.1 document; every route answers as a route (not the router's fallback);
//! every error a problem with its `code`, every `ErrorCode` of the server documented; the
//! paging bounds the ones the server clamps to; the keyed writes exactly those that take an
//! `Idempotency-Key`; and the Upload exactly as API.md has it.

mod common;

use base64::Engine;

use std::collections::BTreeSet;

use common::{ADMIN_TOKEN, Backend, Options, TestApp, assert_problem, images};
use confetti::error::ErrorCode;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use uuid::Uuid;

/// The document as served, parsed and as text (its text keeps the order of properties).
struct Served {
    doc: Value,
    text: String,
}

async fn served(app: &TestApp) -> Served {
    let response = app.client.get(app.url("/api/v1/openapi.json")).send().await.expect("GET /api/v1/openapi.json");
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "application/json");
    let text = response.text().await.expect("the document");
    let doc = serde_json::from_str(&text).expect("the document is JSON");
    Served { doc, text }
}

/// Checks of the document alone: each runs against the document a fresh server serves.
macro_rules! document_tests {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[tokio::test]
                async fn on_the_served_document() {
                    let app = $crate::common::TestApp::spawn($crate::common::Backend::Sqlite).await;
                    let served = super::served(&app).await;
                    super::$name(&served);
                    app.stop().await;
                }
            }
        )*
    };
}

document_tests!(
    the_document_is_valid_openapi_3_1,
    every_error_code_of_the_server_is_documented,
    every_operation_says_who_may_call_it_and_what_it_answers,
    every_error_response_is_a_problem_with_its_codes,
    the_upload_is_the_one_of_api_md,
    the_upload_form_has_its_parts_in_order,
    the_keyed_writes_document_their_idempotency_key,
    every_write_is_keyed_or_says_why_not,
    likes_and_comments_are_the_ones_of_api_md,
    the_non_json_answers_say_their_media_type,
    the_obvious_chains_are_linked,
    the_live_stream_is_described_by_its_events,
    the_resumable_headers_are_declared,
    no_bound_is_stricter_than_the_server,
    the_introduction_and_info_say_what_the_server_does,
);

both_backends!(
    every_documented_operation_is_a_route_the_server_serves,
    the_paging_bounds_are_the_ones_the_server_clamps_to,
    the_keyed_writes_are_exactly_those_that_take_a_key,
);

/// Error responses that are not problem+json (none: every error is).
const NOT_PROBLEMS: &[(&str, &str, &str)] = &[];

/// The writes that take the general `Idempotency-Key` (their routes are `Keyed`), with their
/// success status: every authenticated POST, PATCH and DELETE except the upload, which has its own key.
const KEYED_WRITES: &[(&str, &str, &str)] = &[
    ("post", "/api/v1/events", "201"),
    ("patch", "/api/v1/events/{slug}", "200"),
    ("post", "/api/v1/events/{slug}/organiser-password", "204"),
    ("delete", "/api/v1/events/{slug}", "204"),
    ("delete", "/api/v1/uploads/{id}", "204"),
    ("patch", "/api/v1/uploads/{id}", "200"),
    ("delete", "/api/v1/uploads/{id}/like", "200"),
    ("post", "/api/v1/uploads/{id}/comments", "201"),
    ("post", "/api/v1/events/{slug}/guestbook", "201"),
    ("patch", "/api/v1/events/{slug}/guestbook/{id}", "200"),
    ("delete", "/api/v1/events/{slug}/guestbook/{id}", "204"),
    ("post", "/api/v1/events/{slug}/co-organisers", "201"),
    ("delete", "/api/v1/events/{slug}/co-organisers/{id}", "204"),
    ("post", "/api/v1/events/{slug}/guests/{id}/block", "200"),
    ("delete", "/api/v1/events/{slug}/guests/{id}/block", "200"),
    ("post", "/api/v1/events/{slug}/uploads/moderation", "200"),
    ("post", "/api/v1/uploads/{id}/restore", "200"),
    ("post", "/api/v1/events/{slug}/screen-link", "201"),
    ("delete", "/api/v1/events/{slug}/screen-link", "204"),
    ("delete", "/api/v1/admin/webhook", "204"),
];

/// Writes that ignore `Idempotency-Key`: joining and organiser login have no principal to
/// scope a key to; logout's key would be scoped to the organiser, not to the session it ends;
/// a PUT is idempotent by its method (the layer handles only POST, PATCH and DELETE).
const UNKEYED_WRITES: &[(&str, &str)] = &[
    ("post", "/api/v1/events/{slug}/guests"),
    ("post", "/api/v1/events/{slug}/organiser-sessions"),
    // Opening a screen has no principal either, as joining.
    ("post", "/api/v1/events/{slug}/screens"),
    ("delete", "/api/v1/events/{slug}/organiser-sessions/current"),
    ("put", "/api/v1/uploads/{id}/like"),
    // Resumable uploads are keyed by `client_upload_id` and their offsets.
    ("post", "/api/v1/events/{slug}/uploads/resumable"),
    ("patch", "/api/v1/events/{slug}/uploads/resumable/{id}"),
    ("delete", "/api/v1/events/{slug}/uploads/resumable/{id}"),
    // Setting the admin's webhook is a PUT; its test delivery changes only what it reports.
    ("put", "/api/v1/admin/webhook"),
    ("post", "/api/v1/admin/webhook/test"),
    // Asking which files are stored already is a read with a body.
    ("post", "/api/v1/events/{slug}/uploads/known"),
];

/// The write with its own key (a UUID `client_upload_id` / `Idempotency-Key`), see
/// `the_upload_form_has_its_parts_in_order`.
const UPLOAD: (&str, &str) = ("post", "/api/v1/events/{slug}/uploads");

/// Answers that are not JSON, with their media type.
const NON_JSON_ANSWERS: &[(&str, &str, &str, &str)] = &[
    ("get", "/api/v1/events/{slug}/export.zip", "200", "application/zip"),
    ("get", "/api/v1/events/{slug}/live", "200", "text/event-stream"),
];

const PROBLEM_REF: &str = "#/components/schemas/Problem";

const HTTP_METHODS: &[&str] = &["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/// The Upload's keys, as docs/api.md lists them.
const UPLOAD_KEYS: &[&str] = &[
    "id",
    "event",
    "guest",
    "client_upload_id",
    "filename",
    "caption",
    "content_type",
    "kind",
    "duration_s",
    "poster",
    "bytes",
    "sha256",
    "width",
    "height",
    "taken_at",
    "captured_at",
    "captured_from",
    "created_at",
    "status",
    "review",
    "likes",
    "liked_by_me",
    "comments",
    "urls",
    "placeholder",
    "failure",
    "rejected",
    "rejected_reason",
];

/// The node a local `$ref` (`#/a/b`) points to.
fn resolve<'a>(doc: &'a Value, reference: &str) -> &'a Value {
    let pointer = reference.strip_prefix('#').unwrap_or_else(|| panic!("{reference} is not a local reference"));
    doc.pointer(pointer).unwrap_or_else(|| panic!("{reference} points to nothing"))
}

/// A node, or what it refers to when it is a `$ref`.
fn deref<'a>(doc: &'a Value, node: &'a Value) -> &'a Value {
    match node.get("$ref").and_then(Value::as_str) {
        Some(reference) => deref(doc, resolve(doc, reference)),
        None => node,
    }
}

/// Every `(method, path, operation)` in the document.
fn operations(doc: &Value) -> Vec<(String, String, &Value)> {
    let paths = doc["paths"].as_object().expect("`paths` is an object");
    let mut found = Vec::new();
    for (path, item) in paths {
        for (method, operation) in item.as_object().expect("a path item is an object") {
            if HTTP_METHODS.contains(&method.as_str()) {
                found.push((method.clone(), path.clone(), operation));
            }
        }
    }
    found
}

/// Whether `node` (or anything it contains, following `$ref`s) refers to `target`.
fn refers_to(doc: &Value, node: &Value, target: &str, depth: usize) -> bool {
    if depth > 32 {
        return false;
    }
    match node {
        Value::Object(map) => map.iter().any(|(key, value)| match (key.as_str(), value.as_str()) {
            ("$ref", Some(reference)) => {
                reference == target || refers_to(doc, resolve(doc, reference), target, depth + 1)
            }
            _ => refers_to(doc, value, target, depth + 1),
        }),
        Value::Array(items) => items.iter().any(|item| refers_to(doc, item, target, depth + 1)),
        _ => false,
    }
}

/// Every string in an `enum` written under `node` (not following `$ref`s, which would reach the
/// full list in `ErrorCode`): the codes a response narrows `code` to.
fn enum_values(node: &Value, out: &mut BTreeSet<String>) {
    match node {
        Value::Object(map) => {
            for (key, value) in map {
                match (key.as_str(), value) {
                    ("enum", Value::Array(values)) => {
                        out.extend(values.iter().filter_map(Value::as_str).map(str::to_owned))
                    }
                    _ => enum_values(value, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| enum_values(item, out)),
        _ => {}
    }
}

/// The `ErrorCode` schema's enum: the document's list of every code.
fn documented_codes(doc: &Value) -> BTreeSet<String> {
    doc.pointer("/components/schemas/ErrorCode/enum")
        .and_then(Value::as_array)
        .expect("components.schemas.ErrorCode has an enum")
        .iter()
        .map(|v| v.as_str().expect("codes are strings").to_owned())
        .collect()
}

fn every_operation_says_who_may_call_it_and_what_it_answers(served: &Served) {
    let doc = &served.doc;
    let schemes = doc["components"]["securitySchemes"].as_object().expect("components.securitySchemes");
    for (method, path, operation) in operations(doc) {
        let security = operation["security"]
            .as_array()
            .unwrap_or_else(|| panic!("{method} {path}: no `security` (use [{{}}] for none)"));
        for requirement in security {
            for scheme in requirement.as_object().expect("a security requirement is an object").keys() {
                assert!(schemes.contains_key(scheme), "{method} {path}: unknown security scheme {scheme}");
            }
        }
        let responses = operation["responses"].as_object().unwrap_or_else(|| panic!("{method} {path}: no responses"));
        assert!(responses.keys().any(|s| s.starts_with('2')), "{method} {path}: no 2xx response");
        assert!(operation["operationId"].is_string(), "{method} {path}: no operationId");
    }
    let cookies: BTreeSet<&str> =
        schemes.values().filter(|s| s["in"] == "cookie").filter_map(|s| s["name"].as_str()).collect();
    assert_eq!(cookies, BTreeSet::from(["confetti_guest", "confetti_organiser", "confetti_screen"]));
}

fn every_error_response_is_a_problem_with_its_codes(served: &Served) {
    let doc = &served.doc;
    let all_codes = documented_codes(doc);
    for (method, path, operation) in operations(doc) {
        for (status, response) in operation["responses"].as_object().expect("responses") {
            if !(status.starts_with('4') || status.starts_with('5')) {
                continue;
            }
            if NOT_PROBLEMS.contains(&(method.as_str(), path.as_str(), status.as_str())) {
                continue;
            }
            let response = deref(doc, response);
            let content = &response["content"]["application/problem+json"];
            assert!(content.is_object(), "{method} {path} {status}: not application/problem+json");
            assert!(
                refers_to(doc, &content["schema"], PROBLEM_REF, 0),
                "{method} {path} {status}: the schema does not refer to {PROBLEM_REF}"
            );
            let mut codes = BTreeSet::new();
            enum_values(&content["schema"], &mut codes);
            assert!(!codes.is_empty(), "{method} {path} {status}: lists no `code`");
            let unknown: Vec<_> = codes.difference(&all_codes).collect();
            assert!(unknown.is_empty(), "{method} {path} {status}: codes not in ErrorCode: {unknown:?}");
        }
    }
}

fn the_upload_is_the_one_of_api_md(served: &Served) {
    let doc = &served.doc;
    let upload = &doc["components"]["schemas"]["Upload"];
    let required: BTreeSet<&str> =
        upload["required"].as_array().expect("Upload.required").iter().map(|v| v.as_str().expect("a key")).collect();
    let properties: BTreeSet<&str> =
        upload["properties"].as_object().expect("Upload.properties").keys().map(String::as_str).collect();
    let expected: BTreeSet<&str> = UPLOAD_KEYS.iter().copied().collect();
    assert_eq!(required, expected, "Upload.required");
    assert_eq!(properties, expected, "Upload.properties");

    let status = deref(doc, &upload["properties"]["status"]);
    let statuses: BTreeSet<&str> =
        status["enum"].as_array().expect("status enum").iter().filter_map(Value::as_str).collect();
    assert_eq!(statuses, BTreeSet::from(["processing", "ready", "failed", "hidden"]));
    let review = deref(doc, &upload["properties"]["review"]);
    let reviews: BTreeSet<&str> =
        review["enum"].as_array().expect("review enum").iter().filter_map(Value::as_str).collect();
    assert_eq!(reviews, BTreeSet::from(["pending", "approved"]));
    let kind = deref(doc, &upload["properties"]["kind"]);
    let kinds: BTreeSet<&str> = kind["enum"].as_array().expect("kind enum").iter().filter_map(Value::as_str).collect();
    assert_eq!(kinds, BTreeSet::from(["photo", "video"]));
    let urls = deref(doc, &upload["properties"]["urls"]);
    let url_keys: BTreeSet<&str> = urls["properties"].as_object().expect("urls").keys().map(String::as_str).collect();
    assert_eq!(url_keys, BTreeSet::from(["original", "preview", "thumb"]));
    let guest = deref(doc, &upload["properties"]["guest"]);
    let guest_keys: BTreeSet<&str> =
        guest["properties"].as_object().expect("guest").keys().map(String::as_str).collect();
    assert_eq!(guest_keys, BTreeSet::from(["id", "display_name"]));
    // The sniffed types, HEIC among them, as docs/api.md lists them.
    let content_type = upload["properties"]["content_type"]["description"].as_str().unwrap_or_default();
    for mime in ["image/jpeg", "image/png", "image/gif", "image/webp", "image/heic"] {
        assert!(content_type.contains(mime), "Upload.content_type names {mime}: {content_type}");
    }
    let post = &doc["paths"]["/api/v1/events/{slug}/uploads"]["post"];
    let refused = deref(doc, &post["responses"]["415"])["description"].as_str().unwrap_or_default();
    assert!(refused.contains("HEIC") && !refused.contains("not supported by this server"), "415: {refused}");
}

fn the_upload_form_has_its_parts_in_order(served: &Served) {
    let doc = &served.doc;
    let post = &doc["paths"]["/api/v1/events/{slug}/uploads"]["post"];
    let form = deref(doc, &post["requestBody"]["content"]["multipart/form-data"]["schema"]);
    let parts: BTreeSet<&str> =
        form["properties"].as_object().expect("UploadForm.properties").keys().map(String::as_str).collect();
    assert_eq!(parts, BTreeSet::from(["client_upload_id", "caption", "file"]));
    assert_eq!(form["required"], serde_json::json!(["file"]), "only the file part is required");
    // serde_json sorts an object's keys, so the order is read from the text: the form's
    // properties are the first `"part":` keys after the schema's name.
    let text = &served.text[served.text.find("\"UploadForm\":").expect("an UploadForm schema")..];
    let position = |part: &str| text.find(&format!("\"{part}\":")).unwrap_or(usize::MAX);
    assert!(
        position("client_upload_id") < position("caption") && position("caption") < position("file"),
        "the UploadForm lists client_upload_id, caption, file in that order"
    );
    let headers: BTreeSet<&str> = post["parameters"]
        .as_array()
        .expect("upload parameters")
        .iter()
        .map(|p| deref(doc, p))
        .filter(|p| p["in"] == "header")
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert!(headers.contains("Idempotency-Key"), "the upload documents Idempotency-Key");
    assert!(post["responses"]["200"]["headers"]["Idempotent-Replayed"].is_object(), "a replay's Idempotent-Replayed");
    assert!(post["responses"]["201"]["headers"]["Location"].is_object(), "a new upload's Location");
}

/// The codes an operation's response lists (following a `$ref` to a shared response).
fn response_codes(doc: &Value, operation: &Value, status: &str) -> BTreeSet<String> {
    let response = deref(doc, &operation["responses"][status]);
    let mut codes = BTreeSet::new();
    enum_values(&response["content"]["application/problem+json"]["schema"], &mut codes);
    codes
}

/// The header parameters an operation (or its path item) declares.
fn header_parameters(doc: &Value, path: &str, operation: &Value) -> BTreeSet<String> {
    let item = &doc["paths"][path];
    [&item["parameters"], &operation["parameters"]]
        .into_iter()
        .filter_map(Value::as_array)
        .flatten()
        .map(|p| deref(doc, p))
        .filter(|p| p["in"] == "header")
        .filter_map(|p| p["name"].as_str().map(str::to_owned))
        .collect()
}

fn the_keyed_writes_document_their_idempotency_key(served: &Served) {
    let doc = &served.doc;
    for (method, path, success) in KEYED_WRITES {
        let operation = &doc["paths"][*path][*method];
        assert!(operation.is_object(), "{method} {path} is documented");
        assert!(
            header_parameters(doc, path, operation).contains("Idempotency-Key"),
            "{method} {path}: documents the Idempotency-Key header"
        );
        assert!(
            deref(doc, &operation["responses"][*success])["headers"]["Idempotent-Replayed"].is_object(),
            "{method} {path} {success}: a replay's Idempotent-Replayed"
        );
        assert!(response_codes(doc, operation, "400").contains("invalid_idempotency_key"), "{method} {path} 400");
        assert!(response_codes(doc, operation, "409").contains("idempotency_key_in_flight"), "{method} {path} 409");
        assert!(
            deref(doc, &operation["responses"]["409"])["headers"]["Retry-After"].is_object(),
            "{method} {path} 409: Retry-After"
        );
        assert!(response_codes(doc, operation, "422").contains("idempotency_key_reused"), "{method} {path} 422");
    }
    for (method, path) in UNKEYED_WRITES {
        let operation = &doc["paths"][*path][*method];
        assert!(
            !header_parameters(doc, path, operation).contains("Idempotency-Key"),
            "{method} {path} ignores Idempotency-Key and does not list it"
        );
        let description = operation["description"].as_str().unwrap_or_default();
        assert!(description.contains("ignores `Idempotency-Key`"), "{method} {path}: says it ignores Idempotency-Key");
    }

    let info = &doc["components"]["schemas"]["Info"];
    let required: BTreeSet<&str> =
        info["required"].as_array().expect("Info.required").iter().filter_map(Value::as_str).collect();
    assert!(required.contains("idempotency"), "Info.idempotency is always sent");
    let idempotency = deref(doc, &info["properties"]["idempotency"]);
    let keys: BTreeSet<&str> =
        idempotency["required"].as_array().expect("idempotency.required").iter().filter_map(Value::as_str).collect();
    assert_eq!(keys, BTreeSet::from(["retention_s", "lease_s"]));
}

fn every_write_is_keyed_or_says_why_not(served: &Served) {
    let doc = &served.doc;
    let keyed: BTreeSet<(&str, &str)> = KEYED_WRITES.iter().map(|(m, p, _)| (*m, *p)).collect();
    let unkeyed: BTreeSet<(&str, &str)> = UNKEYED_WRITES.iter().copied().collect();
    for (method, path, _) in operations(doc) {
        let write = (method.as_str(), path.as_str());
        if !["post", "put", "patch", "delete"].contains(&write.0) || write == UPLOAD {
            continue;
        }
        assert!(
            keyed.contains(&write) != unkeyed.contains(&write),
            "{method} {path}: a write is in exactly one of KEYED_WRITES and UNKEYED_WRITES"
        );
        // The key layer claims keys on POST, PATCH and DELETE only.
        assert!(write.0 != "put" || unkeyed.contains(&write), "{method} {path}: a PUT is never keyed");
    }
}

/// The property names of a schema (following a `$ref`).
fn property_names<'a>(doc: &'a Value, schema: &'a Value) -> BTreeSet<&'a str> {
    deref(doc, schema)["properties"].as_object().expect("properties").keys().map(String::as_str).collect()
}

fn likes_and_comments_are_the_ones_of_api_md(served: &Served) {
    let doc = &served.doc;
    let schemas = &doc["components"]["schemas"];
    assert_eq!(property_names(doc, &schemas["LikeState"]), BTreeSet::from(["likes", "liked_by_me"]));
    let comment = &schemas["Comment"];
    assert_eq!(property_names(doc, comment), BTreeSet::from(["id", "guest", "text", "created_at"]));
    assert_eq!(property_names(doc, &comment["properties"]["guest"]), BTreeSet::from(["id", "display_name"]));
    assert_eq!(property_names(doc, &schemas["CommentList"]), BTreeSet::from(["items"]));

    let answer = |method: &str, path: &str, status: &str| {
        doc["paths"][path][method]["responses"][status]["content"]["application/json"]["schema"]["$ref"]
            .as_str()
            .unwrap_or_else(|| panic!("{method} {path} {status}: a JSON schema reference"))
            .to_owned()
    };
    let like = "/api/v1/uploads/{id}/like";
    let comments = "/api/v1/uploads/{id}/comments";
    assert_eq!(answer("put", like, "200"), "#/components/schemas/LikeState");
    assert_eq!(answer("delete", like, "200"), "#/components/schemas/LikeState");
    assert_eq!(answer("post", comments, "201"), "#/components/schemas/Comment");
    assert_eq!(answer("get", comments, "200"), "#/components/schemas/CommentList");
    assert_eq!(answer("patch", "/api/v1/uploads/{id}", "200"), "#/components/schemas/Upload");
    let post = &doc["paths"][comments]["post"];
    assert!(response_codes(doc, post, "422").contains("invalid_comment"), "post {comments} 422: invalid_comment");
    for (method, path) in [("put", like), ("delete", like), ("post", comments)] {
        assert!(
            response_codes(doc, &doc["paths"][path][method], "403").contains("forbidden"),
            "{method} {path} 403: an organiser is refused with `forbidden`"
        );
    }
}

fn the_non_json_answers_say_their_media_type(served: &Served) {
    let doc = &served.doc;
    for (method, path, status, media_type) in NON_JSON_ANSWERS {
        let response = deref(doc, &doc["paths"][*path][*method]["responses"][*status]);
        let content = response["content"].as_object().unwrap_or_else(|| panic!("{method} {path} {status}: content"));
        assert_eq!(
            content.keys().map(String::as_str).collect::<Vec<_>>(),
            vec![*media_type],
            "{method} {path} {status}: answered as {media_type} only"
        );
    }
    // The thumb is AVIF, WebP or JPEG by `Accept`; the preview is JPEG only.
    for (kind, types) in [("thumb", &["image/avif", "image/jpeg", "image/webp"][..]), ("preview", &["image/jpeg"][..])]
    {
        let path = format!("/api/v1/uploads/{{id}}/{kind}");
        let responses = &doc["paths"][path.as_str()]["get"]["responses"];
        assert!(responses["304"].is_object(), "get {path}: If-None-Match gives 304");
        let content = responses["200"]["content"].as_object().unwrap_or_else(|| panic!("get {path} 200: content"));
        assert_eq!(
            content.keys().map(String::as_str).collect::<BTreeSet<_>>(),
            types.iter().copied().collect::<BTreeSet<_>>(),
            "get {path} 200: its media types"
        );
        for status in ["200", "304"] {
            let vary = responses[status]["headers"]["Vary"].is_object();
            assert_eq!(vary, types.len() > 1, "get {path} {status}: Vary exactly when the format depends on Accept");
        }
        assert!(responses["200"]["headers"]["ETag"].is_object(), "get {path} 200: ETag");
        assert!(responses["200"]["headers"]["Cache-Control"].is_object(), "get {path} 200: Cache-Control");
        assert!(
            response_codes(doc, &doc["paths"][path.as_str()]["get"], "404").contains("not_found"),
            "get {path} 404"
        );
    }
}

/// Every `{name}` in a path template.
fn template_names(path: &str) -> BTreeSet<String> {
    path.split('{').skip(1).filter_map(|rest| rest.split_once('}')).map(|(name, _)| name.to_owned()).collect()
}

/// Every `$ref` under `node`, with where it is.
fn references<'a>(node: &'a Value, at: &str, out: &mut Vec<(String, &'a str)>) {
    match node {
        Value::Object(map) => {
            for (key, value) in map {
                match (key.as_str(), value) {
                    ("$ref", Value::String(reference)) => out.push((at.to_owned(), reference)),
                    _ => references(value, &format!("{at}/{key}"), out),
                }
            }
        }
        Value::Array(items) => {
            items.iter().enumerate().for_each(|(i, item)| references(item, &format!("{at}/{i}"), out))
        }
        _ => {}
    }
}

/// The structural rules of OpenAPI 3.1 a document can break without being invalid JSON.
fn the_document_is_valid_openapi_3_1(served: &Served) {
    let doc = &served.doc;
    let version = doc["openapi"].as_str().expect("`openapi` is a string");
    assert!(version.starts_with("3.1."), "OpenAPI {version}, not 3.1.x");
    assert!(doc["info"]["title"].is_string() && doc["info"]["version"].is_string(), "info.title and info.version");
    assert!(doc["paths"].is_object(), "`paths` is an object");

    let mut found = Vec::new();
    references(doc, "#", &mut found);
    assert!(found.len() > 50, "the operations share schemas and answers by reference");
    for (at, reference) in found {
        let pointer = reference.strip_prefix('#').unwrap_or_else(|| panic!("{at}: {reference} is not local"));
        assert!(doc.pointer(pointer).is_some(), "{at}: {reference} points to nothing");
    }

    let mut operation_ids = BTreeSet::new();
    for (method, path, operation) in operations(doc) {
        let id = operation["operationId"].as_str().unwrap_or_else(|| panic!("{method} {path}: no operationId"));
        assert!(operation_ids.insert(id.to_owned()), "{method} {path}: operationId {id} is used twice");
        let responses = operation["responses"].as_object().unwrap_or_else(|| panic!("{method} {path}: no responses"));
        assert!(!responses.is_empty(), "{method} {path}: no responses");
        for (status, response) in responses {
            assert!(
                status == "default" || status.parse::<u16>().is_ok_and(|s| (100..600).contains(&s)),
                "{method} {path}: response key {status}"
            );
            assert!(deref(doc, response)["description"].is_string(), "{method} {path} {status}: a description");
        }
        let mut declared = BTreeSet::new();
        let parameters = [&doc["paths"][&path]["parameters"], &operation["parameters"]];
        let mut seen = BTreeSet::new();
        for parameter in parameters.into_iter().filter_map(Value::as_array).flatten().map(|p| deref(doc, p)) {
            let name = parameter["name"].as_str().unwrap_or_else(|| panic!("{method} {path}: a parameter's name"));
            let place = parameter["in"].as_str().unwrap_or_else(|| panic!("{method} {path}: where {name} is"));
            assert!(["path", "query", "header", "cookie"].contains(&place), "{method} {path}: {name} in {place}");
            assert!(seen.insert((name, place)), "{method} {path}: {name} in {place} declared twice");
            assert!(parameter["schema"].is_object(), "{method} {path}: {name} has a schema");
            if place == "path" {
                assert_eq!(parameter["required"], true, "{method} {path}: path parameter {name} is required");
                declared.insert(name.to_owned());
            }
        }
        assert_eq!(declared, template_names(&path), "{method} {path}: the path parameters declared");
    }
    assert!(operation_ids.len() >= 27, "every operation of the API: {operation_ids:?}");
}

/// The server answers from `ErrorCode` (`src/error.rs`); the document's `ErrorCode` schema is
/// made from it, and each operation's answers list codes of the status they are answered with.
fn every_error_code_of_the_server_is_documented(served: &Served) {
    let doc = &served.doc;
    let server: BTreeSet<String> = ErrorCode::ALL.iter().map(|c| c.as_str().to_owned()).collect();
    assert!(server.len() >= 30, "the server's codes: {server:?}");
    assert_eq!(documented_codes(doc), server, "the document's ErrorCode is the server's");
    let description = doc["components"]["schemas"]["ErrorCode"]["description"].as_str().expect("ErrorCode.description");
    for code in ErrorCode::ALL {
        let row = format!("| `{}` | {} |", code.as_str(), code.status().as_u16());
        assert!(description.contains(&row), "the table of codes has {row}");
    }
    for (method, path, operation) in operations(doc) {
        for status in operation["responses"].as_object().expect("responses").keys() {
            for code in response_codes(doc, operation, status) {
                let known = ErrorCode::ALL.iter().find(|c| c.as_str() == code);
                let known = known.unwrap_or_else(|| panic!("{method} {path} {status}: `{code}` is no ErrorCode"));
                assert_eq!(
                    known.status().as_u16().to_string(),
                    *status,
                    "{method} {path}: `{code}` is listed under {status}, the server answers it with another status"
                );
            }
        }
    }
}

/// The operation a response links to, and the parameters it fills.
fn link(doc: &Value, operation_id: &str, status: &str, to: &str) -> BTreeSet<String> {
    let (_, _, operation) = operations(doc)
        .into_iter()
        .find(|(_, _, op)| op["operationId"] == operation_id)
        .unwrap_or_else(|| panic!("an operation {operation_id}"));
    let links = deref(doc, &operation["responses"][status])["links"].as_object().cloned().unwrap_or_default();
    let found = links
        .values()
        .find(|l| l["operationId"] == to)
        .unwrap_or_else(|| panic!("{operation_id} {status} links to {to}: {links:?}"));
    found["parameters"].as_object().expect("the link's parameters").keys().cloned().collect()
}

fn the_obvious_chains_are_linked(served: &Served) {
    let doc = &served.doc;
    let slug = BTreeSet::from(["slug".to_owned()]);
    assert_eq!(link(doc, "createEvent", "201", "joinEvent"), slug, "create event → join");
    let join = &deref(doc, &doc["paths"]["/api/v1/events"]["post"]["responses"]["201"])["links"]["joinEvent"];
    assert_eq!(join["requestBody"]["join_token"], "$response.body#/join_token", "the link passes the join token");
    assert!(join["requestBody"]["display_name"].is_string(), "and a display name");
    assert_eq!(link(doc, "joinEvent", "201", "createUpload"), slug, "join → upload");
    let id = BTreeSet::from(["id".to_owned()]);
    assert_eq!(link(doc, "createUpload", "201", "getUpload"), id, "upload → get upload");
    assert_eq!(link(doc, "createUpload", "200", "getUpload"), id, "a replayed upload → get upload");
    // Each link names an operation of the document, with parameters that operation has.
    for (method, path, operation) in operations(doc) {
        for (status, response) in operation["responses"].as_object().expect("responses") {
            for (name, link) in deref(doc, response)["links"].as_object().into_iter().flatten() {
                let target = link["operationId"].as_str().expect("links name their operation");
                let (_, target_path, _) = operations(doc)
                    .into_iter()
                    .find(|(_, _, op)| op["operationId"] == target)
                    .unwrap_or_else(|| panic!("{method} {path} {status}: link {name} to an unknown {target}"));
                for parameter in link["parameters"].as_object().into_iter().flatten().map(|(k, _)| k) {
                    assert!(
                        template_names(&target_path).contains(parameter),
                        "link {name}: {target} has no {parameter}"
                    );
                }
            }
        }
    }
}

/// The operation with this id.
fn operation<'a>(doc: &'a Value, id: &str) -> &'a Value {
    operations(doc).into_iter().find(|(_, _, op)| op["operationId"] == id).map(|(_, _, op)| op).expect(id)
}

fn the_live_stream_is_described_by_its_events(served: &Served) {
    let doc = &served.doc;
    let stream = &operation(doc, "liveEvents")["responses"]["200"]["content"]["text/event-stream"]["schema"];
    assert_eq!(stream["type"], "array", "a sequence of events: {stream}");
    let events: Vec<&Value> =
        stream["items"]["oneOf"].as_array().expect("each item one of the events").iter().collect();
    let mut named = BTreeSet::new();
    for event in events {
        let event = deref(doc, event);
        let name = event["properties"]["event"]["enum"][0].as_str().expect("an event's name");
        named.insert(name.to_owned());
        let required: Vec<&str> =
            event["required"].as_array().expect("required").iter().filter_map(Value::as_str).collect();
        assert_eq!(required, ["event", "data"], "{name}");
        let data = &event["properties"]["data"];
        match name {
            "upload" => assert_eq!(data["$ref"], "#/components/schemas/Upload", "an upload's data is the Upload"),
            "removed" | "guestbook_removed" => {
                assert_eq!(data["required"], json!(["id"]), "a removal's data is its id")
            }
            "guestbook" => {
                assert_eq!(data["$ref"], "#/components/schemas/GuestbookMessage", "a message's data is the message")
            }
            other => panic!("an event the stream does not send: {other}"),
        }
    }
    let expected = ["upload", "removed", "guestbook", "guestbook_removed"].map(str::to_owned);
    assert_eq!(named, BTreeSet::from(expected));
}

/// The header parameters an operation declares, with whether each is required.
fn headers_of(doc: &Value, operation: &Value) -> Vec<(String, bool)> {
    operation["parameters"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| deref(doc, p))
        .filter(|p| p["in"] == "header")
        .map(|p| (p["name"].as_str().expect("a name").to_owned(), p["required"] == true))
        .collect()
}

fn the_resumable_headers_are_declared(served: &Served) {
    let doc = &served.doc;
    let interop = ("Upload-Draft-Interop-Version".to_owned(), false);
    let create = headers_of(doc, operation(doc, "createResumableUpload"));
    for expected in [
        ("Upload-Metadata".to_owned(), true),
        ("Upload-Length".to_owned(), false),
        ("Upload-Complete".to_owned(), false),
        interop.clone(),
    ] {
        assert!(create.contains(&expected), "creation declares {expected:?}: {create:?}");
    }
    let append = headers_of(doc, operation(doc, "appendResumableUpload"));
    for expected in [("Upload-Offset".to_owned(), true), ("Upload-Complete".to_owned(), false), interop.clone()] {
        assert!(append.contains(&expected), "append declares {expected:?}: {append:?}");
    }
    for id in ["getResumableUploadOffset", "cancelResumableUpload", "resumableUploadOptions"] {
        assert!(headers_of(doc, operation(doc, id)).contains(&interop), "{id} declares the interop version");
    }
    // A creation that carried the whole file answers the Upload, and the document says so.
    let created = &operation(doc, "createResumableUpload")["responses"]["201"];
    let body = &created["content"]["application/json"]["schema"]["oneOf"];
    assert_eq!(
        body,
        &json!([{"$ref": "#/components/schemas/UploadResource"}, {"$ref": "#/components/schemas/Upload"}]),
        "the resource or the stored Upload"
    );
    for name in ["Location", "Upload-Offset", "Upload-Complete", "Upload-Limit", "Upload-Draft-Interop-Version"] {
        assert!(created["headers"][name].is_object(), "the creation's 201 declares {name}");
    }
    let offset = &operation(doc, "getResumableUploadOffset")["responses"]["204"]["headers"];
    for name in ["Upload-Offset", "Upload-Complete", "Upload-Length", "Upload-Limit", "Retry-After"] {
        assert!(offset[name].is_object(), "HEAD declares {name}");
    }
}

fn no_bound_is_stricter_than_the_server(served: &Served) {
    let doc = &served.doc;
    let list = operation(doc, "listUploads");
    let parameter = |name: &str| {
        list["parameters"]
            .as_array()
            .expect("parameters")
            .iter()
            .map(|p| deref(doc, p))
            .find(|p| p["name"] == name)
            .expect(name)
    };
    let limit = &parameter("limit")["schema"];
    assert_eq!(limit["oneOf"][0], json!({"type": "integer", "default": 50}), "any whole number: {limit}");
    assert_eq!(limit["oneOf"][1]["enum"], json!([""]), "or empty: {limit}");
    assert_eq!(parameter("review")["schema"]["enum"], json!(["pending", "approved", ""]), "empty is taken too");
    // `{}` is refused (400): the body says it needs a member.
    let change = &operation(doc, "changeUpload")["requestBody"]["content"]["application/json"]["schema"];
    assert_eq!(change["minProperties"], 1, "{change}");
    assert_eq!(change["additionalProperties"], false, "{change}");
    assert!(change.get("maxProperties").is_none(), "{change}");
    // No fixed example key: tools that send examples would reuse it.
    let key = doc["paths"]["/api/v1/events"]["post"]["parameters"]
        .as_array()
        .expect("parameters")
        .iter()
        .map(|p| deref(doc, p))
        .find(|p| p["name"] == "Idempotency-Key")
        .expect("Idempotency-Key");
    assert!(key.get("example").is_none() && key["schema"].get("examples").is_none(), "{key}");
}

fn the_introduction_and_info_say_what_the_server_does(served: &Served) {
    let doc = &served.doc;
    let intro = doc["info"]["description"].as_str().expect("the introduction");
    assert!(intro.contains("604800"), "the organiser cookie's Max-Age is the session's lifetime");
    assert!(!intro.contains("Max-Age=31536000`"), "not the guest's year for both");
    let info = deref(doc, &operation(doc, "getInfo")["responses"]["200"]["content"]["application/json"]["schema"]);
    let capabilities = &info["properties"]["capabilities"];
    assert!(
        capabilities["examples"][0].as_array().expect("an example").contains(&json!("resumable_uploads")),
        "{capabilities}"
    );
    assert!(capabilities["description"].as_str().expect("description").contains("resumable_uploads"));
}

/// A documented path with unknown ids in place of its parameters.
fn with_unknown_ids(path: &str) -> String {
    path.replace("{slug}", "no-such-event")
        .replace("{id}", &Uuid::now_v7().to_string())
        .replace("{client_upload_id}", &Uuid::now_v7().to_string())
}

/// Every operation of the document, asked without credentials and with unknown ids, answers
/// as its route (401, a 404 of its own, 200…), never as the router's fallback (404
/// `not_found` for a path no route matches, 405 for a method a path does not have).
async fn every_documented_operation_is_a_route_the_server_serves(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let served = served(&app).await;
    let fallback = app.client.get(app.url("/api/v1/no-such-route")).send().await.expect("GET");
    assert_problem(fallback, StatusCode::NOT_FOUND, "not_found").await;
    let fallback = app.client.delete(app.url("/api/v1/info")).send().await.expect("DELETE");
    assert_problem(fallback, StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed").await;

    let mut asked = 0;
    for (method, path, _) in operations(&served.doc) {
        let method = Method::from_bytes(method.to_uppercase().as_bytes()).expect("a method");
        let url = app.url(&with_unknown_ids(&path));
        let response = app.client.request(method.clone(), &url).send().await.expect("request");
        let status = response.status();
        let body: Value =
            if status == StatusCode::OK { Value::Null } else { response.json().await.unwrap_or_default() };
        assert_ne!(status, StatusCode::METHOD_NOT_ALLOWED, "{method} {path}: no such method on the route");
        assert!(
            !(status == StatusCode::NOT_FOUND && body["code"] == "not_found"),
            "{method} {path}: answered by the router's fallback ({url}: {body})"
        );
        asked += 1;
    }
    assert!(asked >= 27, "asked every operation ({asked})");
    app.stop().await;
}

/// `limit` of `listUploads` as the document states it: minimum, maximum, default.
fn documented_limit(doc: &Value) -> (u64, u64, u64) {
    let list = &doc["paths"]["/api/v1/events/{slug}/uploads"]["get"];
    let limit = list["parameters"]
        .as_array()
        .expect("listUploads parameters")
        .iter()
        .map(|p| deref(doc, p))
        .find(|p| p["name"] == "limit" && p["in"] == "query")
        .expect("a `limit` query parameter");
    let bound = |name: &str| limit["x-clamp"][name].as_u64().unwrap_or_else(|| panic!("limit's {name}: {limit}"));
    let default = limit["schema"]["oneOf"][0]["default"].as_u64().unwrap_or_else(|| panic!("limit's default: {limit}"));
    (bound("minimum"), bound("maximum"), default)
}

async fn the_paging_bounds_are_the_ones_the_server_clamps_to(backend: Backend) {
    let app = TestApp::spawn_with(backend, Options { derivative_workers: Some(0), ..Options::default() }).await;
    let served = served(&app).await;
    let (minimum, maximum, default) = documented_limit(&served.doc);
    assert!(minimum >= 1 && minimum < default && default < maximum, "bounds {minimum} < {default} < {maximum}");
    let event = app.create_event().await;
    let guest = app.join(&event, "Ann").await;
    let photo = images::jpeg(8, 8);
    // One more photo than the largest page, so the clamping shows in every answer.
    for batch in (0..=maximum).collect::<Vec<_>>().chunks(8) {
        let uploads = batch.iter().map(|_| app.upload(&guest, &photo, Some(Uuid::now_v7())));
        for response in futures_util::future::join_all(uploads).await {
            assert_eq!(response.status(), StatusCode::CREATED, "uploading");
        }
    }
    let page = |limit: Option<&str>| {
        let query = limit.map(|l| format!("?limit={l}")).unwrap_or_default();
        let path = format!("/api/v1/events/{}/uploads{query}", event.slug);
        let app = &app;
        let token = guest.token.clone();
        async move {
            let (status, body) = app.get_json(&path, &token).await;
            assert_eq!(status, StatusCode::OK, "{path}: {body}");
            assert!(body["next_cursor"].is_string(), "{path}: more pages follow");
            body["items"].as_array().expect("items").len() as u64
        }
    };
    assert_eq!(page(Some("0")).await, minimum, "limit=0 is clamped to the documented minimum");
    assert_eq!(page(Some("-5")).await, minimum, "a negative limit is clamped to the documented minimum");
    assert_eq!(page(Some("1000000")).await, maximum, "a huge limit is clamped to the documented maximum");
    assert_eq!(page(None).await, default, "no limit is the documented default");
    app.stop().await;
}

/// A key the layer refuses (longer than 255 characters): a write that takes part answers 400
/// `invalid_idempotency_key`; one that does not ignores it and does its work.
async fn the_keyed_writes_are_exactly_those_that_take_a_key(backend: Backend) {
    let app = TestApp::spawn_with(backend, Options { derivative_workers: Some(0), ..Options::default() }).await;
    let served = served(&app).await;
    let event = app.create_event().await;
    let organiser = app.organiser_login(&event).await;
    let guest = app.join(&event, "Ann").await;
    let response = app.upload(&guest, &images::jpeg(8, 8), Some(Uuid::now_v7())).await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let upload: Value = response.json().await.expect("upload json");
    let upload_id = upload["id"].as_str().expect("id").to_owned();
    let invalid_key = "k".repeat(256);
    let metadata =
        |key: Uuid| format!("client_upload_id {}", base64::engine::general_purpose::STANDARD.encode(key.to_string()));
    let response = app
        .client
        .post(app.url(&format!("/api/v1/events/{}/uploads/resumable", event.slug)))
        .bearer_auth(&guest.token)
        .header("Upload-Length", "1000")
        .header("Upload-Metadata", metadata(Uuid::new_v4()))
        .send()
        .await
        .expect("create");
    let resumable: Value = response.json().await.expect("resource json");
    let resumable_id = resumable["id"].as_str().expect("id").to_owned();
    let link: Value = app
        .client
        .post(app.url(&format!("/api/v1/events/{}/screen-link", event.slug)))
        .bearer_auth(&organiser)
        .send()
        .await
        .expect("screen link")
        .json()
        .await
        .expect("link json");
    let writer = Writer {
        screen_token: link["token"].as_str().expect("token").to_owned(),
        app: &app,
        event: &event,
        organiser: &organiser,
        guest: &guest,
        upload_id: &upload_id,
        resumable_id: &resumable_id,
        new_key: metadata(Uuid::new_v4()),
    };

    for (method, path, _) in KEYED_WRITES {
        let response =
            writer.request(method, path).header("Idempotency-Key", invalid_key.as_str()).send().await.expect("request");
        assert_problem(response, StatusCode::BAD_REQUEST, "invalid_idempotency_key").await;
    }
    for (method, path) in UNKEYED_WRITES.iter().copied().chain([UPLOAD]) {
        let response =
            writer.request(method, path).header("Idempotency-Key", invalid_key.as_str()).send().await.expect("request");
        assert!(response.status().is_success(), "{method} {path} ignores the key: {}", response.status());
    }
    // The lists are the document's.
    for (method, path, _) in KEYED_WRITES {
        assert!(served.doc["paths"][*path][*method].is_object(), "{method} {path} is documented");
    }
    app.stop().await;
}

/// Makes each write of the document as the one who may: the admin, the organiser, the guest.
struct Writer<'a> {
    app: &'a TestApp,
    event: &'a common::Event,
    organiser: &'a str,
    guest: &'a common::Guest,
    upload_id: &'a str,
    /// An open resumable upload of the guest's, 1000 bytes long.
    resumable_id: &'a str,
    /// `Upload-Metadata` with a key not used yet.
    new_key: String,
    /// The event's screen link's token.
    screen_token: String,
}

impl Writer<'_> {
    fn request(&self, method: &str, path: &str) -> reqwest::RequestBuilder {
        let id = if path.contains("/resumable/") { self.resumable_id } else { self.upload_id };
        let url = self.app.url(&path.replace("{slug}", &self.event.slug).replace("{id}", id));
        let builder =
            self.app.client.request(Method::from_bytes(method.to_uppercase().as_bytes()).expect("a method"), url);
        match (method, path) {
            ("post", "/api/v1/events") => {
                builder.bearer_auth(ADMIN_TOKEN).json(&json!({"name": "E", "organiser_password": "correct horse"}))
            }
            ("patch", "/api/v1/events/{slug}") => builder.bearer_auth(self.organiser).json(&json!({"name": "Renamed"})),
            ("post", "/api/v1/events/{slug}/organiser-password") => {
                builder.bearer_auth(ADMIN_TOKEN).json(&json!({"password": "a new password"}))
            }
            ("delete", "/api/v1/events/{slug}") => builder.bearer_auth(ADMIN_TOKEN),
            ("put", "/api/v1/admin/webhook") => {
                builder.bearer_auth(ADMIN_TOKEN).json(&json!({"url": "http://127.0.0.1:9/hook"}))
            }
            ("delete" | "post", "/api/v1/admin/webhook" | "/api/v1/admin/webhook/test") => {
                builder.bearer_auth(ADMIN_TOKEN)
            }
            ("patch", "/api/v1/uploads/{id}") => builder.bearer_auth(self.organiser).json(&json!({"hidden": true})),
            ("post", "/api/v1/uploads/{id}/comments") => {
                builder.bearer_auth(&self.guest.token).json(&json!({"text": "Hi"}))
            }
            ("post", "/api/v1/events/{slug}/guests") => {
                builder.json(&json!({"join_token": self.event.join_token, "display_name": "Ben"}))
            }
            ("post", "/api/v1/events/{slug}/organiser-sessions") => {
                builder.json(&json!({"password": self.event.password}))
            }
            ("post", "/api/v1/events/{slug}/screens") => builder.json(&json!({"token": self.screen_token})),
            ("post" | "delete", "/api/v1/events/{slug}/screen-link") => builder.bearer_auth(self.organiser),
            // Its own session: the organiser's token stays valid for the writes above.
            ("delete", "/api/v1/events/{slug}/organiser-sessions/current") => builder.bearer_auth(self.organiser),
            ("post", "/api/v1/events/{slug}/uploads") => builder
                .bearer_auth(&self.guest.token)
                .multipart(common::upload_form(&images::jpeg(8, 8), None, "photo.jpg", None)),
            ("post", "/api/v1/events/{slug}/uploads/known") => {
                builder.bearer_auth(&self.guest.token).json(&json!({"sha256": ["0".repeat(64)]}))
            }
            ("post", "/api/v1/events/{slug}/uploads/resumable") => builder
                .bearer_auth(&self.guest.token)
                .header("Upload-Length", "1000")
                .header("Upload-Metadata", &self.new_key),
            ("patch", "/api/v1/events/{slug}/uploads/resumable/{id}") => builder
                .bearer_auth(&self.guest.token)
                .header("Content-Type", "application/partial-upload")
                .header("Upload-Offset", "0")
                .header("Upload-Complete", "?0")
                .body(images::jpeg(8, 8)[..10].to_vec()),
            _ => builder.bearer_auth(&self.guest.token),
        }
    }
}
