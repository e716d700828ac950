//! Moderating several photos at once, on SQLite and PostgreSQL: each action answered per photo
//! and told to the live stream, a retry with the same `Idempotency-Key` replayed without a
//! second effect, the selection bounded, another event's photos never touched, a rejection's
//! reason seen by its uploader alone, and unblocking a guest that shows their photos again.

mod common;

use common::{Backend, Event, TestApp, assert_problem, images, settled, upload_ok};
use reqwest::StatusCode;
use serde_json::{Value, json};
use uuid::Uuid;

both_backends!(
    each_action_changes_the_selected_photos_and_answers_per_photo,
    a_retry_with_the_same_key_is_replayed_and_another_body_refused,
    the_selection_is_bounded_and_only_the_organiser_moderates,
    another_events_photos_are_never_touched,
    a_rejected_photo_tells_its_uploader_why_and_nobody_else,
    unblocking_can_show_again_the_photos_the_block_hid,
);

/// `POST …/uploads/moderation` with `body`, by `token`, with an `Idempotency-Key` where given.
async fn moderate(app: &TestApp, event: &Event, token: &str, body: Value, key: Option<&str>) -> reqwest::Response {
    let mut request = app
        .client
        .post(app.url(&format!("/api/v1/events/{}/uploads/moderation", event.slug)))
        .bearer_auth(token)
        .json(&body);
    if let Some(key) = key {
        request = request.header("Idempotency-Key", key);
    }
    request.send().await.expect("moderate")
}

/// The answer of a moderation that went through.
async fn done(response: reqwest::Response) -> Value {
    assert_eq!(response.status(), StatusCode::OK, "moderated");
    response.json().await.expect("json")
}

/// Each item's `result`, in order.
fn results(answer: &Value) -> Vec<String> {
    answer["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i["result"].as_str().expect("result").to_owned())
        .collect()
}

fn id_of(upload: &Value) -> String {
    upload["id"].as_str().expect("id").to_owned()
}

/// The ids a listing of the event shows to `token`.
async fn listed(app: &TestApp, event: &Event, token: &str) -> Vec<String> {
    let (status, page) = app.get_json(&format!("/api/v1/events/{}/uploads?limit=100", event.slug), token).await;
    assert_eq!(status, StatusCode::OK);
    page["items"].as_array().expect("items").iter().map(id_of).collect()
}

/// A ready photo of `guest`.
async fn ready_photo(app: &TestApp, guest: &common::Guest, size: u32) -> String {
    let id = id_of(&upload_ok(app, guest, &images::jpeg(size, size)).await);
    assert_eq!(settled(app, &guest.token, &id).await["status"], "ready");
    id
}

async fn feed(app: &TestApp, kind: &str) -> i64 {
    match kind {
        "upload" => app.scalar("SELECT COUNT(*) FROM live_feed WHERE kind = 'upload'").await,
        _ => app.scalar("SELECT COUNT(*) FROM live_feed WHERE kind = 'removed'").await,
    }
}

async fn each_action_changes_the_selected_photos_and_answers_per_photo(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let organiser = app.organiser_login(&event).await;
    app.change_event(&event, &organiser, json!({"review_uploads": true})).await;
    let anna = app.join(&event, "Anna").await;
    let ben = app.join(&event, "Ben").await;
    let a = ready_photo(&app, &anna, 20).await;
    let b = ready_photo(&app, &anna, 22).await;
    let c = ready_photo(&app, &anna, 24).await;
    let unknown = Uuid::new_v4().to_string();
    assert_eq!(listed(&app, &event, &ben.token).await, Vec::<String>::new(), "all three wait for review");

    // Approve: everyone sees them, and the live stream hears of each.
    let uploads_before = feed(&app, "upload").await;
    let approved = done(
        moderate(&app, &event, &organiser, json!({"action": "approve", "upload_ids": [a, b, unknown, a]}), None).await,
    )
    .await;
    assert_eq!(approved["action"], "approve");
    assert_eq!(results(&approved), ["changed", "changed", "not_found"], "one answer per distinct id: {approved}");
    assert_eq!(approved["items"][0]["upload"]["review"], "approved");
    assert_eq!(approved["items"][2]["upload"], Value::Null);
    assert_eq!(feed(&app, "upload").await - uploads_before, 2, "each approval announced");
    let mut seen = listed(&app, &event, &ben.token).await;
    seen.sort();
    let mut expected = vec![a.clone(), b.clone()];
    expected.sort();
    assert_eq!(seen, expected);
    let again =
        done(moderate(&app, &event, &organiser, json!({"action": "approve", "upload_ids": [a]}), None).await).await;
    assert_eq!(results(&again), ["unchanged"]);

    // Hide, then show.
    let removed_before = feed(&app, "removed").await;
    let hidden =
        done(moderate(&app, &event, &organiser, json!({"action": "hide", "upload_ids": [a, c]}), None).await).await;
    assert_eq!(results(&hidden), ["changed", "changed"]);
    assert_eq!(hidden["items"][0]["upload"]["status"], "hidden");
    assert_eq!(hidden["items"][0]["upload"]["rejected"], false);
    assert_eq!(feed(&app, "removed").await - removed_before, 2);
    assert_eq!(listed(&app, &event, &ben.token).await, vec![b.clone()]);
    let shown =
        done(moderate(&app, &event, &organiser, json!({"action": "show", "upload_ids": [a]}), None).await).await;
    assert_eq!(results(&shown), ["changed"]);
    assert_eq!(shown["items"][0]["upload"]["status"], "ready");

    // Reject hides with the reason; approving lifts the rejection.
    let body = json!({"action": "reject", "upload_ids": [b], "reason": "  Blurry  "});
    let rejected = done(moderate(&app, &event, &organiser, body, None).await).await;
    assert_eq!(results(&rejected), ["changed"]);
    let upload = &rejected["items"][0]["upload"];
    assert_eq!((upload["status"].as_str(), upload["rejected"].as_bool()), (Some("hidden"), Some(true)));
    assert_eq!(upload["rejected_reason"], "Blurry", "trimmed");
    assert!(!listed(&app, &event, &ben.token).await.contains(&b));
    let lifted =
        done(moderate(&app, &event, &organiser, json!({"action": "approve", "upload_ids": [b]}), None).await).await;
    assert_eq!(results(&lifted), ["changed"]);
    assert_eq!(lifted["items"][0]["upload"]["status"], "ready");
    assert_eq!(lifted["items"][0]["upload"]["rejected"], false);
    assert_eq!(lifted["items"][0]["upload"]["rejected_reason"], Value::Null);

    // Delete: gone for everyone, the quota refunded, the bytes' removal queued (undoable).
    let used = app.used_bytes(&anna).await;
    let deleted =
        done(moderate(&app, &event, &organiser, json!({"action": "delete", "upload_ids": [c, a]}), None).await).await;
    assert_eq!(results(&deleted), ["changed", "changed"]);
    assert_eq!(deleted["items"][0]["upload"], Value::Null);
    assert!(app.used_bytes(&anna).await < used, "quota refunded");
    assert_eq!(listed(&app, &event, &organiser).await, vec![b.clone()]);
    assert_eq!(app.scalar("SELECT COUNT(*) FROM blob_jobs WHERE kind = 'delete'").await, 2, "each delete's job");
    let twice =
        done(moderate(&app, &event, &organiser, json!({"action": "delete", "upload_ids": [c]}), None).await).await;
    assert_eq!(results(&twice), ["not_found"], "a deleted photo is no longer found");
    let restored = app
        .client
        .post(app.url(&format!("/api/v1/uploads/{c}/restore")))
        .bearer_auth(&organiser)
        .send()
        .await
        .expect("restore");
    assert_eq!(restored.status(), StatusCode::OK, "a bulk delete is undone like a single one");
}

async fn a_retry_with_the_same_key_is_replayed_and_another_body_refused(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let organiser = app.organiser_login(&event).await;
    let anna = app.join(&event, "Anna").await;
    let ben = app.join(&event, "Ben").await;
    let a = ready_photo(&app, &anna, 20).await;
    let b = ready_photo(&app, &anna, 22).await;

    let body = json!({"action": "hide", "upload_ids": [a, b]});
    let first = moderate(&app, &event, &organiser, body.clone(), Some("hide-1")).await;
    assert!(first.headers().get("idempotent-replayed").is_none());
    let first = done(first).await;
    assert_eq!(results(&first), ["changed", "changed"]);
    let removed = feed(&app, "removed").await;

    // Shown again by hand; the retry must not hide them a second time.
    for id in [&a, &b] {
        let shown = app
            .client
            .patch(app.url(&format!("/api/v1/uploads/{id}")))
            .bearer_auth(&organiser)
            .json(&json!({"hidden": false}))
            .send()
            .await
            .expect("show");
        assert_eq!(shown.status(), StatusCode::OK);
    }
    let retry = moderate(&app, &event, &organiser, body, Some("hide-1")).await;
    assert_eq!(retry.headers().get("idempotent-replayed").map(|v| v.as_bytes()), Some(&b"true"[..]));
    assert_eq!(done(retry).await, first, "the same answer");
    assert_eq!(listed(&app, &event, &ben.token).await.len(), 2, "no second effect");
    assert_eq!(feed(&app, "removed").await, removed, "nothing announced again");

    let other = json!({"action": "delete", "upload_ids": [a, b]});
    let reused = moderate(&app, &event, &organiser, other, Some("hide-1")).await;
    assert_problem(reused, StatusCode::UNPROCESSABLE_ENTITY, "idempotency_key_reused").await;
    assert_eq!(listed(&app, &event, &ben.token).await.len(), 2, "nothing deleted");
}

async fn the_selection_is_bounded_and_only_the_organiser_moderates(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let other = app.create_event().await;
    let organiser = app.organiser_login(&event).await;
    let others_organiser = app.organiser_login(&other).await;
    let anna = app.join(&event, "Anna").await;
    let a = ready_photo(&app, &anna, 20).await;

    let mut ids: Vec<String> = (0..200).map(|_| Uuid::new_v4().to_string()).collect();
    ids.push(a.clone());
    let too_many = moderate(&app, &event, &organiser, json!({"action": "hide", "upload_ids": ids}), Some("big-1"));
    assert_problem(too_many.await, StatusCode::UNPROCESSABLE_ENTITY, "selection_too_large").await;
    ids.truncate(199);
    ids.push(a.clone());
    let at_the_bound =
        done(moderate(&app, &event, &organiser, json!({"action": "approve", "upload_ids": ids}), None).await).await;
    assert_eq!(results(&at_the_bound).iter().filter(|r| *r == "not_found").count(), 199, "200 ids are taken");

    let refusals = [
        (json!({"action": "hide", "upload_ids": []}), StatusCode::BAD_REQUEST, "invalid_request"),
        (json!({"action": "hide", "upload_ids": ["nope"]}), StatusCode::BAD_REQUEST, "invalid_request"),
        (json!({"action": "burn", "upload_ids": [a]}), StatusCode::BAD_REQUEST, "invalid_request"),
        (json!({"action": "hide", "upload_ids": [a], "extra": 1}), StatusCode::BAD_REQUEST, "invalid_request"),
        (
            json!({"action": "hide", "upload_ids": [a], "reason": "why"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_reason",
        ),
        (
            json!({"action": "reject", "upload_ids": [a], "reason": "x".repeat(201)}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_reason",
        ),
    ];
    for (body, status, code) in refusals {
        assert_problem(moderate(&app, &event, &organiser, body, Some("refused")).await, status, code).await;
    }
    let by_guest = moderate(&app, &event, &anna.token, json!({"action": "delete", "upload_ids": [a]}), Some("g-1"));
    assert_problem(by_guest.await, StatusCode::FORBIDDEN, "forbidden").await;
    let by_other = moderate(&app, &event, &others_organiser, json!({"action": "delete", "upload_ids": [a]}), None);
    assert_problem(by_other.await, StatusCode::FORBIDDEN, "forbidden").await;
    let nobody = app
        .client
        .post(app.url(&format!("/api/v1/events/{}/uploads/moderation", event.slug)))
        .json(&json!({"action": "delete", "upload_ids": [a]}))
        .send()
        .await
        .expect("anonymous");
    assert_problem(nobody, StatusCode::UNAUTHORIZED, "unauthenticated").await;
    let (_, upload) = app.get_json(&format!("/api/v1/uploads/{a}"), &anna.token).await;
    assert_eq!(upload["status"], "ready", "no refused request changed anything: {upload}");
    // A refused request released its key: the same key runs a good request.
    let after =
        done(moderate(&app, &event, &organiser, json!({"action": "hide", "upload_ids": [a]}), Some("refused")).await)
            .await;
    assert_eq!(results(&after), ["changed"]);
}

async fn another_events_photos_are_never_touched(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let other = app.create_event().await;
    let organiser = app.organiser_login(&event).await;
    let anna = app.join(&event, "Anna").await;
    let zoe = app.join(&other, "Zoe").await;
    let mine = ready_photo(&app, &anna, 20).await;
    let theirs = ready_photo(&app, &zoe, 22).await;

    for action in ["hide", "reject", "delete"] {
        let body = json!({"action": action, "upload_ids": [theirs, mine]});
        let answer = done(moderate(&app, &event, &organiser, body, None).await).await;
        assert_eq!(answer["items"][0]["result"], "not_found", "{action}: {answer}");
        assert_eq!(answer["items"][0]["upload"], Value::Null, "nothing about it is revealed");
        if action != "delete" {
            done(moderate(&app, &event, &organiser, json!({"action": "show", "upload_ids": [mine]}), None).await).await;
        }
    }
    let (status, upload) = app.get_json(&format!("/api/v1/uploads/{theirs}"), &zoe.token).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!((upload["status"].as_str(), upload["rejected"].as_bool()), (Some("ready"), Some(false)));
    assert_eq!(listed(&app, &other, &zoe.token).await, vec![theirs]);
}

async fn a_rejected_photo_tells_its_uploader_why_and_nobody_else(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let organiser = app.organiser_login(&event).await;
    let anna = app.join(&event, "Anna").await;
    let ben = app.join(&event, "Ben").await;
    let a = ready_photo(&app, &anna, 20).await;
    let b = ready_photo(&app, &anna, 22).await;

    let body = json!({"action": "reject", "upload_ids": [a], "reason": "Please no photos of the children"});
    done(moderate(&app, &event, &organiser, body, None).await).await;
    let without = json!({"action": "reject", "upload_ids": [b]});
    done(moderate(&app, &event, &organiser, without, None).await).await;

    let (status, own) = app.get_json(&format!("/api/v1/uploads/{a}"), &anna.token).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!((own["status"].as_str(), own["rejected"].as_bool()), (Some("hidden"), Some(true)));
    assert_eq!(own["rejected_reason"], "Please no photos of the children");
    let (_, page) = app.get_json(&format!("/api/v1/events/{}/uploads", event.slug), &anna.token).await;
    let in_list = page["items"].as_array().expect("items").iter().find(|u| u["id"] == a.as_str()).expect("listed");
    assert_eq!(in_list["rejected_reason"], "Please no photos of the children", "on her own tile");
    let (_, plain) = app.get_json(&format!("/api/v1/uploads/{b}"), &anna.token).await;
    assert_eq!((plain["rejected"].as_bool(), &plain["rejected_reason"]), (Some(true), &Value::Null));

    let (status, _) = app.get_json(&format!("/api/v1/uploads/{a}"), &ben.token).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "another guest does not see it, nor why");
    assert_eq!(listed(&app, &event, &ben.token).await, Vec::<String>::new());

    // Shown again: the rejection is lifted, the reason gone.
    done(moderate(&app, &event, &organiser, json!({"action": "show", "upload_ids": [a]}), None).await).await;
    let (_, own) = app.get_json(&format!("/api/v1/uploads/{a}"), &anna.token).await;
    assert_eq!((own["rejected"].as_bool(), &own["rejected_reason"]), (Some(false), &Value::Null));
    assert_eq!(listed(&app, &event, &ben.token).await, vec![a]);
}

async fn unblocking_can_show_again_the_photos_the_block_hid(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let organiser = app.organiser_login(&event).await;
    let anna = app.join(&event, "Anna").await;
    let ben = app.join(&event, "Ben").await;
    let by_hand = ready_photo(&app, &anna, 20).await;
    let rejected = ready_photo(&app, &anna, 22).await;
    let shown = ready_photo(&app, &anna, 24).await;
    let shown_too = ready_photo(&app, &anna, 26).await;
    done(moderate(&app, &event, &organiser, json!({"action": "hide", "upload_ids": [by_hand]}), None).await).await;
    let reject = json!({"action": "reject", "upload_ids": [rejected], "reason": "no"});
    done(moderate(&app, &event, &organiser, reject, None).await).await;

    let block = format!("/api/v1/events/{}/guests/{}/block", event.slug, anna.id);
    let blocked = app.client.post(app.url(&block)).bearer_auth(&organiser).send().await.expect("block");
    assert_eq!(blocked.status(), StatusCode::OK);
    assert_eq!(listed(&app, &event, &ben.token).await, Vec::<String>::new());

    let odd = app.client.delete(app.url(&format!("{block}?show_photos=maybe"))).bearer_auth(&organiser).send();
    assert_problem(odd.await.expect("unblock"), StatusCode::BAD_REQUEST, "invalid_request").await;
    let announced = feed(&app, "upload").await;
    let unblocked = app
        .client
        .delete(app.url(&format!("{block}?show_photos=true")))
        .bearer_auth(&organiser)
        .header("Idempotency-Key", "unblock-1")
        .send()
        .await
        .expect("unblock");
    assert_eq!(unblocked.status(), StatusCode::OK);
    let standing: Value = unblocked.json().await.expect("json");
    assert_eq!(standing["blocked_at"], Value::Null);
    let mut seen = listed(&app, &event, &ben.token).await;
    seen.sort();
    let mut expected = vec![shown, shown_too];
    expected.sort();
    assert_eq!(seen, expected, "the photos the block hid, not those hidden or rejected by hand");
    assert_eq!(feed(&app, "upload").await - announced, 2, "each announced");
    let (_, still) = app.get_json(&format!("/api/v1/uploads/{rejected}"), &anna.token).await;
    assert_eq!((still["status"].as_str(), still["rejected_reason"].as_str()), (Some("hidden"), Some("no")));

    // Blocked and unblocked plainly: the photos stay hidden, as before.
    app.client.post(app.url(&block)).bearer_auth(&organiser).send().await.expect("block again");
    let plain = app.client.delete(app.url(&block)).bearer_auth(&organiser).send().await.expect("unblock");
    assert_eq!(plain.status(), StatusCode::OK);
    assert_eq!(listed(&app, &event, &ben.token).await, Vec::<String>::new());
}
