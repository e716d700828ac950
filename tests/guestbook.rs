//! The guestbook: guests write short messages (keyed like comments: a retry writes nothing more,
//! another body under the same key is refused), bounded and cleaned text, moderated like photos
//! (the review gate, hiding, deleting), blocked guests refused, listed a page at a time, announced
//! on the live stream, and carried into the export as `guestbook.txt`.

mod common;

use common::reading::{next_sse, unzip};
use common::{Backend, Event, Guest, TestApp, assert_problem};
use reqwest::StatusCode;
use serde_json::{Value, json};

both_backends!(
    a_retry_with_the_same_key_writes_one_message_and_another_body_is_refused,
    empty_and_over_long_messages_are_refused_and_nothing_is_stored,
    under_the_review_gate_a_message_waits_for_the_hosts_approval,
    a_hidden_message_is_listed_to_its_writer_and_the_hosts_only,
    a_blocked_guest_an_organiser_and_a_guest_of_another_event_cannot_write,
    the_guestbook_pages_newest_first_with_its_own_cursors,
    the_live_stream_announces_messages_and_their_removal_and_waiting_ones_once_approved,
    the_export_carries_the_guestbook_as_a_text_file,
);

fn path(event: &Event) -> String {
    format!("/api/v1/events/{}/guestbook", event.slug)
}

async fn write(app: &TestApp, event: &Event, guest: &Guest, text: &str, key: Option<&str>) -> reqwest::Response {
    let mut request = app.client.post(app.url(&path(event))).bearer_auth(&guest.token).json(&json!({ "text": text }));
    if let Some(key) = key {
        request = request.header("Idempotency-Key", key);
    }
    request.send().await.expect("POST guestbook")
}

async fn written(app: &TestApp, event: &Event, guest: &Guest, text: &str) -> Value {
    let response = write(app, event, guest, text, None).await;
    assert_eq!(response.status(), StatusCode::CREATED);
    response.json().await.expect("message json")
}

/// The texts a caller reads in the guestbook, newest first.
async fn texts(app: &TestApp, event: &Event, token: &str, query: &str) -> Vec<String> {
    let (status, body) = app.get_json(&format!("{}{query}", path(event)), token).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["items"].as_array().expect("items").iter().map(|m| m["text"].as_str().expect("text").to_owned()).collect()
}

async fn rows(app: &TestApp) -> i64 {
    app.scalar("SELECT COUNT(*) FROM guestbook_messages").await
}

async fn moderate(app: &TestApp, event: &Event, organiser: &str, id: &str, body: Value) -> Value {
    let response = app
        .client
        .patch(app.url(&format!("{}/{id}", path(event))))
        .bearer_auth(organiser)
        .json(&body)
        .send()
        .await
        .expect("PATCH");
    assert_eq!(response.status(), StatusCode::OK);
    response.json().await.expect("message json")
}

async fn a_retry_with_the_same_key_writes_one_message_and_another_body_is_refused(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let anna = app.join(&event, "Anna").await;
    let first = write(&app, &event, &anna, "Alles Gute euch beiden!", Some("gb-1")).await;
    assert_eq!(first.status(), StatusCode::CREATED);
    assert!(first.headers().get("idempotent-replayed").is_none());
    let first: Value = first.json().await.expect("json");
    assert_eq!(first["guest"]["display_name"], "Anna");
    assert_eq!(first["review"], "approved");
    assert_eq!(first["hidden"], false);

    let again = write(&app, &event, &anna, "Alles Gute euch beiden!", Some("gb-1")).await;
    assert_eq!(again.status(), StatusCode::CREATED);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    let again: Value = again.json().await.expect("json");
    assert_eq!(again["id"], first["id"], "the same message");
    assert_eq!(rows(&app).await, 1, "one row");

    let other = write(&app, &event, &anna, "Something else", Some("gb-1")).await;
    assert_problem(other, StatusCode::UNPROCESSABLE_ENTITY, "idempotency_key_reused").await;
    assert_eq!(rows(&app).await, 1, "still one row");
    assert_eq!(texts(&app, &event, &anna.token, "").await, ["Alles Gute euch beiden!"]);
    app.stop().await;
}

async fn empty_and_over_long_messages_are_refused_and_nothing_is_stored(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let anna = app.join(&event, "Anna").await;
    for refused in ["", "   \n\t ", "\u{0}\u{200B}\u{202E}", &"x".repeat(501)] {
        let response = write(&app, &event, &anna, refused, Some(&format!("k{}", refused.len()))).await;
        let problem = assert_problem(response, StatusCode::UNPROCESSABLE_ENTITY, "invalid_guestbook_message").await;
        assert!(problem["detail"].as_str().is_some_and(|d| !d.is_empty()), "{problem}");
    }
    let response = app.client.post(app.url(&path(&event))).bearer_auth(&anna.token).body("{\"text\":").send().await;
    assert_problem(response.expect("POST"), StatusCode::BAD_REQUEST, "invalid_request").await;
    assert_eq!(rows(&app).await, 0, "nothing stored");
    // A refused attempt releases its key: the same key with a good text writes.
    let key = format!("k{}", 501);
    let ok = write(&app, &event, &anna, &"ü".repeat(500), Some(&key)).await;
    assert_eq!(ok.status(), StatusCode::CREATED);
    let cleaned = written(&app, &event, &anna, "  Hoch\u{0} sollt ihr\u{202E} leben!\r\nEure Anna  ").await;
    assert_eq!(cleaned["text"], "Hoch sollt ihr leben!\nEure Anna", "cleaned as comments are, line breaks kept");
    app.stop().await;
}

async fn under_the_review_gate_a_message_waits_for_the_hosts_approval(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let organiser = app.organiser_login(&event).await;
    let anna = app.join(&event, "Anna").await;
    let ben = app.join(&event, "Ben").await;
    app.change_event(&event, &organiser, json!({"review_uploads": true})).await;

    let message = written(&app, &event, &anna, "Wir freuen uns so!").await;
    assert_eq!(message["review"], "pending");
    let id = message["id"].as_str().expect("id").to_owned();
    assert_eq!(texts(&app, &event, &anna.token, "").await, ["Wir freuen uns so!"], "the writer sees it waiting");
    assert!(texts(&app, &event, &ben.token, "").await.is_empty(), "other guests do not");
    assert_eq!(texts(&app, &event, &organiser, "?review=pending").await, ["Wir freuen uns so!"]);
    assert!(texts(&app, &event, &organiser, "?review=approved").await.is_empty());

    let approved = moderate(&app, &event, &organiser, &id, json!({"approved": true})).await;
    assert_eq!(approved["review"], "approved");
    assert_eq!(texts(&app, &event, &ben.token, "").await, ["Wir freuen uns so!"], "approved: everyone reads it");
    assert!(texts(&app, &event, &organiser, "?review=pending").await.is_empty());
    // A guest may not moderate, whatever the body.
    let by_guest = app
        .client
        .patch(app.url(&format!("{}/{id}", path(&event))))
        .bearer_auth(&anna.token)
        .body("not json")
        .send()
        .await;
    assert_problem(by_guest.expect("PATCH"), StatusCode::FORBIDDEN, "forbidden").await;
    app.stop().await;
}

async fn a_hidden_message_is_listed_to_its_writer_and_the_hosts_only(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let organiser = app.organiser_login(&event).await;
    let anna = app.join(&event, "Anna").await;
    let ben = app.join(&event, "Ben").await;
    let message = written(&app, &event, &anna, "Prost!").await;
    let id = message["id"].as_str().expect("id").to_owned();

    let hidden = moderate(&app, &event, &organiser, &id, json!({"hidden": true})).await;
    assert_eq!(hidden["hidden"], true);
    assert!(texts(&app, &event, &ben.token, "").await.is_empty(), "hidden from other guests");
    assert_eq!(texts(&app, &event, &anna.token, "").await, ["Prost!"], "its writer still sees it");
    assert_eq!(texts(&app, &event, &organiser, "").await, ["Prost!"]);
    moderate(&app, &event, &organiser, &id, json!({"hidden": false})).await;
    assert_eq!(texts(&app, &event, &ben.token, "").await, ["Prost!"], "shown again");

    // Another guest may not delete it; its writer and the hosts may.
    let url = app.url(&format!("{}/{id}", path(&event)));
    let by_ben = app.client.delete(&url).bearer_auth(&ben.token).send().await.expect("DELETE");
    assert_problem(by_ben, StatusCode::FORBIDDEN, "forbidden").await;
    let deleted = app.client.delete(&url).bearer_auth(&organiser).header("Idempotency-Key", "d1").send().await;
    assert_eq!(deleted.expect("DELETE").status(), StatusCode::NO_CONTENT);
    let replay = app.client.delete(&url).bearer_auth(&organiser).header("Idempotency-Key", "d1").send().await;
    assert_eq!(replay.expect("DELETE").status(), StatusCode::NO_CONTENT, "a retry with the key");
    let again = app.client.delete(&url).bearer_auth(&organiser).send().await.expect("DELETE");
    assert_problem(again, StatusCode::NOT_FOUND, "not_found").await;
    assert!(texts(&app, &event, &anna.token, "").await.is_empty(), "gone");
    assert_eq!(rows(&app).await, 0);
    app.stop().await;
}

async fn a_blocked_guest_an_organiser_and_a_guest_of_another_event_cannot_write(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let other = app.create_event().await;
    let organiser = app.organiser_login(&event).await;
    let anna = app.join(&event, "Anna").await;
    let olga = app.join(&other, "Olga").await;
    let block = app
        .client
        .post(app.url(&format!("/api/v1/events/{}/guests/{}/block", event.slug, anna.id)))
        .bearer_auth(&organiser)
        .send()
        .await
        .expect("block");
    assert_eq!(block.status(), StatusCode::OK);
    assert_problem(write(&app, &event, &anna, "hi", None).await, StatusCode::FORBIDDEN, "guest_blocked").await;
    assert_problem(write(&app, &event, &olga, "hi", None).await, StatusCode::FORBIDDEN, "wrong_event").await;
    let by_organiser =
        app.client.post(app.url(&path(&event))).bearer_auth(&organiser).json(&json!({"text": "hi"})).send().await;
    assert_problem(by_organiser.expect("POST"), StatusCode::FORBIDDEN, "forbidden").await;
    let anonymous = app.client.post(app.url(&path(&event))).json(&json!({"text": "hi"})).send().await;
    assert_problem(anonymous.expect("POST"), StatusCode::UNAUTHORIZED, "unauthenticated").await;
    assert_eq!(rows(&app).await, 0, "nothing stored");
    let (status, _) = app.get_json(&path(&event), &olga.token).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "another event's guest reads nothing");
    app.stop().await;
}

async fn the_guestbook_pages_newest_first_with_its_own_cursors(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let anna = app.join(&event, "Anna").await;
    for n in 1..=3 {
        written(&app, &event, &anna, &format!("message {n}")).await;
    }
    let (status, first) = app.get_json(&format!("{}?limit=2", path(&event)), &anna.token).await;
    assert_eq!(status, StatusCode::OK);
    let texts_of = |page: &Value| -> Vec<String> {
        page["items"].as_array().expect("items").iter().map(|m| m["text"].as_str().expect("text").to_owned()).collect()
    };
    assert_eq!(texts_of(&first), ["message 3", "message 2"]);
    let cursor = first["next_cursor"].as_str().expect("a next page").to_owned();
    let (_, second) = app.get_json(&format!("{}?limit=2&cursor={cursor}", path(&event)), &anna.token).await;
    assert_eq!(texts_of(&second), ["message 1"]);
    assert_eq!(second["next_cursor"], Value::Null);
    // A gallery cursor is not a guestbook cursor.
    common::upload_ok(&app, &anna, &common::images::jpeg(8, 8)).await;
    common::upload_ok(&app, &anna, &common::images::jpeg(8, 8)).await;
    let (_, photos) = app.get_json(&format!("/api/v1/events/{}/uploads?limit=1", event.slug), &anna.token).await;
    let foreign = photos["next_cursor"].as_str().expect("a gallery cursor").to_owned();
    let response =
        app.client.get(app.url(&format!("{}?cursor={foreign}", path(&event)))).bearer_auth(&anna.token).send().await;
    assert_problem(response.expect("GET"), StatusCode::BAD_REQUEST, "invalid_cursor").await;
    app.stop().await;
}

async fn the_live_stream_announces_messages_and_their_removal_and_waiting_ones_once_approved(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let organiser = app.organiser_login(&event).await;
    let anna = app.join(&event, "Anna").await;
    let ben = app.join(&event, "Ben").await;
    let mut stream = app
        .client
        .get(app.url(&format!("/api/v1/events/{}/live", event.slug)))
        .bearer_auth(&ben.token)
        .send()
        .await
        .expect("live");
    assert_eq!(stream.status(), StatusCode::OK);
    let message = written(&app, &event, &anna, "Auf euch!").await;
    let (kind, data) = next_sse(&mut stream).await;
    assert_eq!(kind, "guestbook");
    assert_eq!(data["id"], message["id"]);
    assert_eq!(data["text"], "Auf euch!");
    assert_eq!(data["guest"]["display_name"], "Anna");
    let id = message["id"].as_str().expect("id");
    moderate(&app, &event, &organiser, id, json!({"hidden": true})).await;
    let (kind, data) = next_sse(&mut stream).await;
    assert_eq!((kind.as_str(), &data), ("guestbook_removed", &json!({"id": id})));

    // Under the review gate a message reaches other guests only once approved.
    app.change_event(&event, &organiser, json!({"review_uploads": true})).await;
    let waiting = written(&app, &event, &anna, "Erst nach der Freigabe").await;
    assert_eq!(waiting["review"], "pending");
    moderate(&app, &event, &organiser, waiting["id"].as_str().expect("id"), json!({"approved": true})).await;
    let (kind, data) = next_sse(&mut stream).await;
    assert_eq!(kind, "guestbook");
    assert_eq!((&data["id"], &data["review"]), (&waiting["id"], &json!("approved")), "not the waiting one: {data}");
    app.stop().await;
}

async fn the_export_carries_the_guestbook_as_a_text_file(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let organiser = app.organiser_login(&event).await;
    let export = |query: &'static str| {
        let (app, organiser, slug) = (&app, organiser.clone(), event.slug.clone());
        async move {
            let response = app
                .client
                .get(app.url(&format!("/api/v1/events/{slug}/export.zip{query}")))
                .bearer_auth(&organiser)
                .send()
                .await
                .expect("export");
            assert_eq!(response.status(), StatusCode::OK);
            unzip(response.bytes().await.expect("zip").to_vec()).await
        }
    };
    assert!(!export("").await.contains_key("guestbook.txt"), "no file while the guestbook is empty");

    let anna = app.join(&event, "Anna Müller").await;
    let ben = app.join(&event, "Ben").await;
    written(&app, &event, &anna, "Alles Liebe!\nEure Anna").await;
    let hidden = written(&app, &event, &ben, "nicht für alle").await;
    moderate(&app, &event, &organiser, hidden["id"].as_str().expect("id"), json!({"hidden": true})).await;

    let entries = export("").await;
    let text = String::from_utf8(entries["guestbook.txt"].clone()).expect("UTF-8");
    assert!(text.starts_with("\u{FEFF}Guestbook · "), "{text}");
    assert!(text.contains(" UTC · Anna Müller\r\n    Alles Liebe!\r\n    Eure Anna\r\n"), "{text}");
    assert!(!text.contains("nicht für alle"), "hidden messages stay out by default: {text}");
    let everything = export("?include_hidden=true").await;
    let text = String::from_utf8(everything["guestbook.txt"].clone()).expect("UTF-8");
    assert!(text.contains(" UTC · Ben [hidden]\r\n    nicht für alle\r\n"), "{text}");
    assert!(text.find("· Anna Müller") < text.find("· Ben [hidden]"), "oldest first: {text}");
    app.stop().await;
}
