//! The API reference (`static/openapi.json`, served at `/api/v1/openapi.json`) against the server:
//! every route documented, every error a problem with its `code`, every `code` of `src/error.rs`
//! documented, and the Upload exactly as API.md has it. No server needed.

use std::collections::BTreeSet;

use serde_json::Value;

const DOCUMENT: &str = include_str!("../static/openapi.json");
const ERROR_RS: &str = include_str!("../src/error.rs");

/// Every route the server has. A route added to `src/http/` without documenting it belongs
/// here too — and then this test says what the document is missing.
const OPERATIONS: &[(&str, &str)] = &[
    ("get", "/healthz"),
    ("get", "/readyz"),
    ("get", "/metrics"),
    ("get", "/api/v1/info"),
    ("get", "/api/v1/openapi.json"),
    ("post", "/api/v1/events"),
    ("get", "/api/v1/events/{slug}"),
    ("patch", "/api/v1/events/{slug}"),
    ("post", "/api/v1/events/{slug}/guests"),
    ("get", "/api/v1/me"),
    ("post", "/api/v1/events/{slug}/organiser-sessions"),
    ("delete", "/api/v1/events/{slug}/organiser-sessions/current"),
    ("post", "/api/v1/events/{slug}/uploads"),
    ("get", "/api/v1/events/{slug}/uploads"),
    ("get", "/api/v1/events/{slug}/uploads/by-client-id/{client_upload_id}"),
    ("get", "/api/v1/events/{slug}/export.zip"),
    ("get", "/api/v1/events/{slug}/live"),
    ("get", "/api/v1/uploads/{id}"),
    ("patch", "/api/v1/uploads/{id}"),
    ("delete", "/api/v1/uploads/{id}"),
    ("put", "/api/v1/uploads/{id}/like"),
    ("delete", "/api/v1/uploads/{id}/like"),
    ("get", "/api/v1/uploads/{id}/comments"),
    ("post", "/api/v1/uploads/{id}/comments"),
    ("get", "/api/v1/uploads/{id}/original"),
    ("get", "/api/v1/uploads/{id}/thumb"),
    ("get", "/api/v1/uploads/{id}/preview"),
];

/// Error responses that are not problem+json (none: every error is).
const NOT_PROBLEMS: &[(&str, &str, &str)] = &[];

/// The writes that take the general `Idempotency-Key` (src/idempotency.rs), with their success
/// status: every authenticated POST, PATCH and DELETE except the upload, which has its own key.
const KEYED_WRITES: &[(&str, &str, &str)] = &[
    ("post", "/api/v1/events", "201"),
    ("patch", "/api/v1/events/{slug}", "200"),
    ("delete", "/api/v1/uploads/{id}", "204"),
    ("patch", "/api/v1/uploads/{id}", "200"),
    ("delete", "/api/v1/uploads/{id}/like", "200"),
    ("post", "/api/v1/uploads/{id}/comments", "201"),
];

/// Writes that ignore `Idempotency-Key`: joining and organiser login have no principal to
/// scope a key to; logout's key would be scoped to the organiser, not to the session it ends;
/// a PUT is idempotent by its method (the layer handles only POST, PATCH and DELETE).
const UNKEYED_WRITES: &[(&str, &str)] = &[
    ("post", "/api/v1/events/{slug}/guests"),
    ("post", "/api/v1/events/{slug}/organiser-sessions"),
    ("delete", "/api/v1/events/{slug}/organiser-sessions/current"),
    ("put", "/api/v1/uploads/{id}/like"),
];

/// The write with its own key (a UUID `client_upload_id` / `Idempotency-Key`), see
/// `the_upload_form_has_its_parts_in_order`.
const UPLOAD: (&str, &str) = ("post", "/api/v1/events/{slug}/uploads");

/// Answers that are not JSON, with their media type.
const NON_JSON_ANSWERS: &[(&str, &str, &str, &str)] = &[
    ("get", "/api/v1/uploads/{id}/thumb", "200", "image/jpeg"),
    ("get", "/api/v1/uploads/{id}/preview", "200", "image/jpeg"),
    ("get", "/api/v1/events/{slug}/export.zip", "200", "application/zip"),
    ("get", "/api/v1/events/{slug}/live", "200", "text/event-stream"),
];

const PROBLEM_REF: &str = "#/components/schemas/Problem";

const HTTP_METHODS: &[&str] = &["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/// The Upload's keys, as API.md lists them.
const UPLOAD_KEYS: &[&str] = &[
    "id",
    "event",
    "guest",
    "client_upload_id",
    "filename",
    "caption",
    "content_type",
    "bytes",
    "sha256",
    "width",
    "height",
    "taken_at",
    "created_at",
    "status",
    "likes",
    "liked_by_me",
    "comments",
    "urls",
];

fn document() -> Value {
    serde_json::from_str(DOCUMENT).expect("static/openapi.json is JSON")
}

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

/// The string literals of `ApiError::code`'s match in src/error.rs: the body of `fn code`,
/// up to the next `fn`, and every `"…"` in it.
fn codes_in_error_rs() -> BTreeSet<String> {
    let start = ERROR_RS.find("fn code(").expect("src/error.rs has `fn code(`");
    let body = &ERROR_RS[start + "fn code(".len()..];
    let body = &body[..body.find("fn ").unwrap_or(body.len())];
    let codes: BTreeSet<String> = body.split('"').skip(1).step_by(2).map(str::to_owned).collect();
    assert!(codes.len() >= 10, "found only {codes:?} in `fn code` of src/error.rs: has its shape changed?");
    for code in &codes {
        assert!(
            !code.is_empty() && code.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
            "`{code}` from src/error.rs is not a snake_case code"
        );
    }
    codes
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

#[test]
fn the_document_is_openapi_3_1() {
    let doc = document();
    let version = doc["openapi"].as_str().expect("`openapi` is a string");
    assert!(version.starts_with("3.1."), "OpenAPI {version}, not 3.1.x");
    assert!(doc["info"]["title"].is_string() && doc["info"]["version"].is_string(), "info.title and info.version");
    assert!(doc["paths"].is_object(), "`paths` is an object");
}

#[test]
fn every_reference_resolves() {
    fn walk(doc: &Value, node: &Value) {
        match node {
            Value::Object(map) => {
                for (key, value) in map {
                    match (key.as_str(), value) {
                        ("$ref", Value::String(reference)) => {
                            resolve(doc, reference);
                        }
                        _ => walk(doc, value),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|item| walk(doc, item)),
            _ => {}
        }
    }
    let doc = document();
    walk(&doc, &doc);
}

#[test]
fn every_route_is_documented_and_nothing_else() {
    let doc = document();
    let documented: BTreeSet<(String, String)> = operations(&doc).into_iter().map(|(m, p, _)| (m, p)).collect();
    let expected: BTreeSet<(String, String)> =
        OPERATIONS.iter().map(|(m, p)| ((*m).to_owned(), (*p).to_owned())).collect();
    let missing: Vec<_> = expected.difference(&documented).collect();
    let unknown: Vec<_> = documented.difference(&expected).collect();
    assert!(missing.is_empty(), "routes the document does not describe: {missing:?}");
    assert!(unknown.is_empty(), "documented operations the server does not have: {unknown:?}");
}

#[test]
fn every_operation_says_who_may_call_it_and_what_it_answers() {
    let doc = document();
    let schemes = doc["components"]["securitySchemes"].as_object().expect("components.securitySchemes");
    for (method, path, operation) in operations(&doc) {
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
    assert_eq!(cookies, BTreeSet::from(["confetti_guest", "confetti_organiser"]));
}

#[test]
fn every_error_response_is_a_problem_with_its_codes() {
    let doc = document();
    let all_codes = documented_codes(&doc);
    for (method, path, operation) in operations(&doc) {
        for (status, response) in operation["responses"].as_object().expect("responses") {
            if !(status.starts_with('4') || status.starts_with('5')) {
                continue;
            }
            if NOT_PROBLEMS.contains(&(method.as_str(), path.as_str(), status.as_str())) {
                continue;
            }
            let response = deref(&doc, response);
            let content = &response["content"]["application/problem+json"];
            assert!(content.is_object(), "{method} {path} {status}: not application/problem+json");
            assert!(
                refers_to(&doc, &content["schema"], PROBLEM_REF, 0),
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

#[test]
fn every_error_code_of_the_server_is_documented() {
    let doc = document();
    let server = codes_in_error_rs();
    let documented = documented_codes(&doc);
    let undocumented: Vec<_> = server.difference(&documented).collect();
    assert!(undocumented.is_empty(), "codes in src/error.rs that the document's ErrorCode lacks: {undocumented:?}");
    let stale: Vec<_> = documented.difference(&server).collect();
    assert!(stale.is_empty(), "codes in the document that src/error.rs does not produce: {stale:?}");
    for code in &server {
        assert!(DOCUMENT.matches(&format!("\"{code}\"")).count() >= 1, "`{code}` does not appear in the document");
    }
}

#[test]
fn the_upload_is_the_one_of_api_md() {
    let doc = document();
    let upload = &doc["components"]["schemas"]["Upload"];
    let required: BTreeSet<&str> =
        upload["required"].as_array().expect("Upload.required").iter().map(|v| v.as_str().expect("a key")).collect();
    let properties: BTreeSet<&str> =
        upload["properties"].as_object().expect("Upload.properties").keys().map(String::as_str).collect();
    let expected: BTreeSet<&str> = UPLOAD_KEYS.iter().copied().collect();
    assert_eq!(required, expected, "Upload.required");
    assert_eq!(properties, expected, "Upload.properties");

    let status = deref(&doc, &upload["properties"]["status"]);
    let statuses: BTreeSet<&str> =
        status["enum"].as_array().expect("status enum").iter().filter_map(Value::as_str).collect();
    assert_eq!(statuses, BTreeSet::from(["processing", "ready", "failed", "hidden"]));
    let urls = deref(&doc, &upload["properties"]["urls"]);
    let url_keys: BTreeSet<&str> = urls["properties"].as_object().expect("urls").keys().map(String::as_str).collect();
    assert_eq!(url_keys, BTreeSet::from(["original", "preview", "thumb"]));
    let guest = deref(&doc, &upload["properties"]["guest"]);
    let guest_keys: BTreeSet<&str> =
        guest["properties"].as_object().expect("guest").keys().map(String::as_str).collect();
    assert_eq!(guest_keys, BTreeSet::from(["id", "display_name"]));
}

#[test]
fn the_upload_form_has_its_parts_in_order() {
    let doc = document();
    let post = &doc["paths"]["/api/v1/events/{slug}/uploads"]["post"];
    let form = deref(&doc, &post["requestBody"]["content"]["multipart/form-data"]["schema"]);
    let parts: BTreeSet<&str> =
        form["properties"].as_object().expect("UploadForm.properties").keys().map(String::as_str).collect();
    assert_eq!(parts, BTreeSet::from(["client_upload_id", "caption", "file"]));
    assert_eq!(form["required"], serde_json::json!(["file"]), "only the file part is required");
    // serde_json sorts an object's keys, so the order is read from the text: the form's
    // properties are the first `"part":` keys after the schema's name.
    let text = &DOCUMENT[DOCUMENT.find("\"UploadForm\":").expect("an UploadForm schema")..];
    let position = |part: &str| text.find(&format!("\"{part}\":")).unwrap_or(usize::MAX);
    assert!(
        position("client_upload_id") < position("caption") && position("caption") < position("file"),
        "the UploadForm lists client_upload_id, caption, file in that order"
    );
    let headers: BTreeSet<&str> = post["parameters"]
        .as_array()
        .expect("upload parameters")
        .iter()
        .map(|p| deref(&doc, p))
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

#[test]
fn the_keyed_writes_document_their_idempotency_key() {
    let doc = document();
    for (method, path, success) in KEYED_WRITES {
        let operation = &doc["paths"][*path][*method];
        assert!(operation.is_object(), "{method} {path} is documented");
        assert!(
            header_parameters(&doc, path, operation).contains("Idempotency-Key"),
            "{method} {path}: documents the Idempotency-Key header"
        );
        assert!(
            deref(&doc, &operation["responses"][*success])["headers"]["Idempotent-Replayed"].is_object(),
            "{method} {path} {success}: a replay's Idempotent-Replayed"
        );
        assert!(response_codes(&doc, operation, "400").contains("invalid_idempotency_key"), "{method} {path} 400");
        assert!(response_codes(&doc, operation, "409").contains("idempotency_key_in_flight"), "{method} {path} 409");
        assert!(
            deref(&doc, &operation["responses"]["409"])["headers"]["Retry-After"].is_object(),
            "{method} {path} 409: Retry-After"
        );
        assert!(response_codes(&doc, operation, "422").contains("idempotency_key_reused"), "{method} {path} 422");
    }
    for (method, path) in UNKEYED_WRITES {
        let operation = &doc["paths"][*path][*method];
        assert!(
            !header_parameters(&doc, path, operation).contains("Idempotency-Key"),
            "{method} {path} ignores Idempotency-Key and does not list it"
        );
        let description = operation["description"].as_str().unwrap_or_default();
        assert!(description.contains("ignores `Idempotency-Key`"), "{method} {path}: says it ignores Idempotency-Key");
    }

    let info = &doc["components"]["schemas"]["Info"];
    let required: BTreeSet<&str> =
        info["required"].as_array().expect("Info.required").iter().filter_map(Value::as_str).collect();
    assert!(required.contains("idempotency"), "Info.idempotency is always sent");
    let idempotency = deref(&doc, &info["properties"]["idempotency"]);
    let keys: BTreeSet<&str> =
        idempotency["required"].as_array().expect("idempotency.required").iter().filter_map(Value::as_str).collect();
    assert_eq!(keys, BTreeSet::from(["retention_s", "lease_s"]));
}

#[test]
fn every_write_is_keyed_or_says_why_not() {
    let doc = document();
    let keyed: BTreeSet<(&str, &str)> = KEYED_WRITES.iter().map(|(m, p, _)| (*m, *p)).collect();
    let unkeyed: BTreeSet<(&str, &str)> = UNKEYED_WRITES.iter().copied().collect();
    for (method, path, _) in operations(&doc) {
        let write = (method.as_str(), path.as_str());
        if !["post", "put", "patch", "delete"].contains(&write.0) || write == UPLOAD {
            continue;
        }
        assert!(
            keyed.contains(&write) != unkeyed.contains(&write),
            "{method} {path}: a write is in exactly one of KEYED_WRITES and UNKEYED_WRITES"
        );
        // src/idempotency.rs claims keys on POST, PATCH and DELETE only.
        assert!(write.0 != "put" || unkeyed.contains(&write), "{method} {path}: a PUT is never keyed");
    }
}

/// The property names of a schema (following a `$ref`).
fn property_names<'a>(doc: &'a Value, schema: &'a Value) -> BTreeSet<&'a str> {
    deref(doc, schema)["properties"].as_object().expect("properties").keys().map(String::as_str).collect()
}

#[test]
fn likes_and_comments_are_the_ones_of_api_md() {
    let doc = document();
    let schemas = &doc["components"]["schemas"];
    assert_eq!(property_names(&doc, &schemas["LikeState"]), BTreeSet::from(["likes", "liked_by_me"]));
    let comment = &schemas["Comment"];
    assert_eq!(property_names(&doc, comment), BTreeSet::from(["id", "guest", "text", "created_at"]));
    assert_eq!(property_names(&doc, &comment["properties"]["guest"]), BTreeSet::from(["id", "display_name"]));
    assert_eq!(property_names(&doc, &schemas["CommentList"]), BTreeSet::from(["items"]));

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
    assert!(response_codes(&doc, post, "422").contains("invalid_comment"), "post {comments} 422: invalid_comment");
    for (method, path) in [("put", like), ("delete", like), ("post", comments)] {
        assert!(
            response_codes(&doc, &doc["paths"][path][method], "403").contains("forbidden"),
            "{method} {path} 403: an organiser is refused with `forbidden`"
        );
    }
}

#[test]
fn the_non_json_answers_say_their_media_type() {
    let doc = document();
    for (method, path, status, media_type) in NON_JSON_ANSWERS {
        let response = deref(&doc, &doc["paths"][*path][*method]["responses"][*status]);
        let content = response["content"].as_object().unwrap_or_else(|| panic!("{method} {path} {status}: content"));
        assert_eq!(
            content.keys().map(String::as_str).collect::<Vec<_>>(),
            vec![*media_type],
            "{method} {path} {status}: answered as {media_type} only"
        );
    }
    for kind in ["thumb", "preview"] {
        let path = format!("/api/v1/uploads/{{id}}/{kind}");
        let responses = &doc["paths"][path.as_str()]["get"]["responses"];
        assert!(responses["304"].is_object(), "get {path}: If-None-Match gives 304");
        assert!(responses["200"]["headers"]["ETag"].is_object(), "get {path} 200: ETag");
        assert!(responses["200"]["headers"]["Cache-Control"].is_object(), "get {path} 200: Cache-Control");
        assert!(
            response_codes(&doc, &doc["paths"][path.as_str()]["get"], "404").contains("not_found"),
            "get {path} 404"
        );
    }
}
