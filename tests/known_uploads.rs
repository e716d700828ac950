//! Re-picked photos (`POST …/uploads/known`): a guest's client asks, with the SHA-256 of each
//! picked file, which the guest has stored already, and sends nothing for those. Only the guest's
//! own uploads that are not deleted are found; the server answers from the hashes it made of
//! what it stored; the input is bounded.

mod common;

use common::{Backend, Event, Guest, TestApp, assert_problem, images, upload_ok};
use reqwest::StatusCode;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

both_backends!(
    a_guests_own_photos_are_known_by_their_bytes_and_nothing_is_stored_or_charged,
    another_guests_photos_and_deleted_ones_are_never_known,
    the_same_bytes_stored_twice_are_answered_by_the_oldest_upload,
    the_input_is_bounded_and_refusals_are_problems,
);

fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

async fn ask(app: &TestApp, event: &Event, token: &str, body: Value) -> reqwest::Response {
    app.client
        .post(app.url(&format!("/api/v1/events/{}/uploads/known", event.slug)))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .expect("POST uploads/known")
}

/// The known uploads for these hashes, as `(sha256, id)` sorted.
async fn known(app: &TestApp, event: &Event, guest: &Guest, hashes: &[String]) -> Vec<(String, String)> {
    let response = ask(app, event, &guest.token, json!({ "sha256": hashes })).await;
    assert_eq!(response.status(), StatusCode::OK);
    let body: Value = response.json().await.expect("known json");
    let mut found: Vec<(String, String)> = body["known"]
        .as_array()
        .expect("known")
        .iter()
        .map(|u| (u["sha256"].as_str().expect("sha256").to_owned(), u["id"].as_str().expect("id").to_owned()))
        .collect();
    found.sort();
    found
}

async fn a_guests_own_photos_are_known_by_their_bytes_and_nothing_is_stored_or_charged(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let ann = app.join(&event, "Ann").await;
    let (a, b, c) = (images::jpeg(16, 16), images::jpeg(24, 16), images::jpeg(32, 16));
    let first = upload_ok(&app, &ann, &a).await;
    let second = upload_ok(&app, &ann, &b).await;
    let rows = app.upload_rows().await;
    let used = app.used_bytes(&ann).await;

    // Upper case, a repeat and a file never sent: each stored hash once, the new one absent.
    let asked = [sha256(&a).to_uppercase(), sha256(&b), sha256(&b), sha256(&c)];
    let mut expected = vec![
        (sha256(&a), first["id"].as_str().expect("id").to_owned()),
        (sha256(&b), second["id"].as_str().expect("id").to_owned()),
    ];
    expected.sort();
    assert_eq!(known(&app, &event, &ann, &asked).await, expected);
    assert_eq!(app.upload_rows().await, rows, "asking stores nothing");
    assert_eq!(app.used_bytes(&ann).await, used, "asking charges nothing");

    // Nothing asked, nothing known; a file not stored is simply absent.
    assert!(known(&app, &event, &ann, &[]).await.is_empty());
    assert!(known(&app, &event, &ann, &[sha256(&c)]).await.is_empty());

    // Hidden by the hosts (and so for rejected ones): still the guest's stored photo.
    let organiser = app.organiser_login(&event).await;
    let id = first["id"].as_str().expect("id");
    let response = app
        .client
        .patch(app.url(&format!("/api/v1/uploads/{id}")))
        .bearer_auth(&organiser)
        .json(&json!({"hidden": true}))
        .send()
        .await
        .expect("hide");
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(known(&app, &event, &ann, &[sha256(&a)]).await.len(), 1, "a hidden photo is still known");

    // The capability is listed.
    let info: Value = app.client.get(app.url("/api/v1/info")).send().await.expect("info").json().await.expect("json");
    assert!(info["capabilities"].as_array().expect("capabilities").contains(&json!("known_uploads")));
    app.stop().await;
}

async fn another_guests_photos_and_deleted_ones_are_never_known(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let ann = app.join(&event, "Ann").await;
    let ben = app.join(&event, "Ben").await;
    let (bens, deleted) = (images::jpeg(16, 24), images::jpeg(24, 24));
    upload_ok(&app, &ben, &bens).await;
    assert!(known(&app, &event, &ann, &[sha256(&bens)]).await.is_empty(), "another guest's photo is not revealed");
    assert_eq!(known(&app, &event, &ben, &[sha256(&bens)]).await.len(), 1);

    let upload = upload_ok(&app, &ann, &deleted).await;
    let id = upload["id"].as_str().expect("id");
    let response = app
        .client
        .delete(app.url(&format!("/api/v1/uploads/{id}")))
        .bearer_auth(&ann.token)
        .send()
        .await
        .expect("delete");
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    assert!(known(&app, &event, &ann, &[sha256(&deleted)]).await.is_empty(), "a deleted photo is sent again");
    // And sent again it is stored again, as a new upload.
    let again = upload_ok(&app, &ann, &deleted).await;
    assert_ne!(again["id"], upload["id"]);
    assert_eq!(
        known(&app, &event, &ann, &[sha256(&deleted)]).await,
        vec![(sha256(&deleted), again["id"].as_str().expect("id").to_owned())]
    );

    // A guest of another event asking about this one: refused; about their own event: nothing of Ann's.
    let other = app.create_event().await;
    let cleo = app.join(&other, "Cleo").await;
    let response = ask(&app, &event, &cleo.token, json!({"sha256": [sha256(&deleted)]})).await;
    assert_problem(response, StatusCode::FORBIDDEN, "wrong_event").await;
    assert!(known(&app, &other, &cleo, &[sha256(&deleted)]).await.is_empty());
    app.stop().await;
}

async fn the_same_bytes_stored_twice_are_answered_by_the_oldest_upload(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let ann = app.join(&event, "Ann").await;
    let bytes = images::jpeg(20, 20);
    // Two keys for the same bytes (a client that did not ask): two uploads; the key deduplicates, not the hash.
    let first = upload_ok(&app, &ann, &bytes).await;
    let second = upload_ok(&app, &ann, &bytes).await;
    assert_ne!(first["id"], second["id"]);
    assert_eq!(
        known(&app, &event, &ann, &[sha256(&bytes)]).await,
        vec![(sha256(&bytes), first["id"].as_str().expect("id").to_owned())]
    );
    app.stop().await;
}

async fn the_input_is_bounded_and_refusals_are_problems(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let ann = app.join(&event, "Ann").await;
    let hash = sha256(b"x");

    let many: Vec<String> = (0..501).map(|i| sha256(format!("{i}").as_bytes())).collect();
    assert_problem(
        ask(&app, &event, &ann.token, json!({"sha256": many})).await,
        StatusCode::BAD_REQUEST,
        "invalid_content_hashes",
    )
    .await;
    // 500 is the bound, not over it.
    assert!(known(&app, &event, &ann, &many[..500]).await.is_empty());
    for bad in [json!("abc"), json!(format!("{}g", &hash[..63])), json!(format!("{hash}0")), json!(7)] {
        let response = ask(&app, &event, &ann.token, json!({"sha256": [bad]})).await;
        let status = response.status();
        let problem: Value = response.json().await.expect("problem");
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {problem}");
        assert!(
            ["invalid_content_hashes", "invalid_request"].contains(&problem["code"].as_str().unwrap_or_default()),
            "{bad}: {problem}"
        );
    }
    for body in [json!({}), json!({"sha256": [hash], "more": 1}), json!([hash])] {
        assert_problem(ask(&app, &event, &ann.token, body).await, StatusCode::BAD_REQUEST, "invalid_request").await;
    }
    // Over 64 KiB of JSON.
    let huge = json!({"sha256": ["0".repeat(70_000)]});
    assert_problem(ask(&app, &event, &ann.token, huge).await, StatusCode::PAYLOAD_TOO_LARGE, "body_too_large").await;
    // No guest credential.
    let response = app
        .client
        .post(app.url(&format!("/api/v1/events/{}/uploads/known", event.slug)))
        .json(&json!({"sha256": [hash]}))
        .send()
        .await
        .expect("no credential");
    assert_problem(response, StatusCode::UNAUTHORIZED, "unauthenticated").await;
    // A guest's cookie from another origin.
    let response = app
        .client
        .post(app.url(&format!("/api/v1/events/{}/uploads/known", event.slug)))
        .header("Cookie", format!("confetti_guest={}", ann.token))
        .header("Origin", "https://elsewhere.example")
        .json(&json!({"sha256": [hash]}))
        .send()
        .await
        .expect("cross origin");
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    app.stop().await;
}
