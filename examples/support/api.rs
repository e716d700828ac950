use anyhow::{Context, Result, ensure};
use reqwest::multipart::{Form, Part};
use serde_json::{Value, json};
use uuid::Uuid;

use super::{ADMIN_TOKEN, ORGANISER_PASSWORD};

/// An event as its creation answered it.
pub struct Event {
    pub id: Uuid,
    pub slug: String,
    pub join_token: String,
}

/// A guest who joined an event.
pub struct Guest {
    pub id: Uuid,
    pub token: String,
}

/// Creates an event as the admin, organised with [`ORGANISER_PASSWORD`]; `guest_quota_bytes`
/// overrides the server's default quota.
pub async fn create_event(client: &reqwest::Client, base: &str, guest_quota_bytes: Option<i64>) -> Result<Event> {
    let mut body = json!({"name": "Benchmark", "organiser_password": ORGANISER_PASSWORD});
    if let Some(quota) = guest_quota_bytes {
        body["guest_quota_bytes"] = quota.into();
    }
    let response = client.post(format!("{base}/api/v1/events")).bearer_auth(ADMIN_TOKEN).json(&body).send().await?;
    let event = created(response, "creating the event").await?;
    Ok(Event {
        id: event["id"].as_str().context("event without id")?.parse()?,
        slug: event["slug"].as_str().context("event without slug")?.to_owned(),
        join_token: event["join_token"].as_str().context("event without join_token")?.to_owned(),
    })
}

/// Joins `slug` as a guest called `name`.
pub async fn join(client: &reqwest::Client, base: &str, slug: &str, join_token: &str, name: &str) -> Result<Guest> {
    let response = client
        .post(format!("{base}/api/v1/events/{slug}/guests"))
        .json(&json!({"join_token": join_token, "display_name": name}))
        .send()
        .await?;
    let joined = created(response, "joining").await?;
    Ok(Guest {
        id: joined["guest"]["id"].as_str().context("join without guest id")?.parse()?,
        token: joined["token"].as_str().context("join without token")?.to_owned(),
    })
}

/// Uploads `file` as the guest with `token`, with a fresh `client_upload_id` part before it;
/// returns the stored upload.
pub async fn upload(client: &reqwest::Client, base: &str, slug: &str, token: &str, file: Part) -> Result<Value> {
    let form = Form::new().text("client_upload_id", Uuid::new_v4().to_string()).part("file", file);
    let response =
        client.post(format!("{base}/api/v1/events/{slug}/uploads")).bearer_auth(token).multipart(form).send().await?;
    created(response, "uploading").await
}

/// The JSON body of a 201 answer; anything else is an error that shows the answer.
async fn created(response: reqwest::Response, what: &str) -> Result<Value> {
    let status = response.status();
    ensure!(status == 201, "{what}: {status} {}", response.text().await.unwrap_or_default());
    Ok(response.json().await?)
}
