//! What `Idempotency-Key` costs on a small write, and what a replay costs — a benchmark, not a
//! test: it prints figures for docs/benchmarks.md.
//!
//! cargo run --release --example bench_idempotency -- [samples]
//!
//! Runs Confetti in-process (the same `serve` as production) on 127.0.0.1, once on SQLite and,
//! when TEST_DATABASE_URL names a PostgreSQL server, once on a fresh database there. For each
//! backend, sequentially (one request in flight): a PATCH of the event without a key, the same
//! PATCH with a new key each time (claim + record in the write's transaction), and replays of
//! one completed key.

#[path = "support/mod.rs"]
mod support;

use std::time::Instant;

use serde_json::{Value, json};
use support::in_process::{InProcess, on_each_backend};
use support::stats::{mean, ms, percentile};
use support::{ORGANISER_PASSWORD, api};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let samples: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1000);
    println!("Idempotency-Key on a small write (PATCH /api/v1/events/{{slug}}), {samples} sequential samples each\n");
    println!("| backend | request | p50 ms | p99 ms | mean ms |");
    println!("| --- | --- | --- | --- | --- |");
    on_each_backend(async |backend, database_url| run(backend, database_url, samples).await).await
}

async fn run(backend: &str, database_url: Option<String>, samples: usize) -> anyhow::Result<()> {
    let server = InProcess::start(database_url, 1 << 30).await?;
    let client = reqwest::Client::new();
    let base = &server.base;
    let slug = api::create_event(&client, base, None).await?.slug;
    let session: Value = client
        .post(format!("{base}/api/v1/events/{slug}/organiser-sessions"))
        .json(&json!({"password": ORGANISER_PASSWORD}))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let token = session["token"].as_str().unwrap_or_default().to_owned();
    let url = format!("{base}/api/v1/events/{slug}");
    let patch = |key: Option<String>| {
        let mut request = client.patch(&url).bearer_auth(&token).json(&json!({"uploads_open": true}));
        if let Some(key) = key {
            request = request.header("Idempotency-Key", key);
        }
        async move {
            let started = Instant::now();
            let response = request.send().await?;
            anyhow::ensure!(response.status().is_success(), "PATCH answered {}", response.status());
            response.bytes().await?;
            anyhow::Ok(started.elapsed())
        }
    };
    // Warm up connections and caches.
    for i in 0..50 {
        patch(Some(format!("warm-{i}"))).await?;
        patch(None).await?;
    }
    let mut without = Vec::with_capacity(samples);
    let mut with_key = Vec::with_capacity(samples);
    let mut replays = Vec::with_capacity(samples);
    patch(Some("replayed".into())).await?;
    // Interleaved, so drift on the machine affects all three alike.
    for i in 0..samples {
        without.push(patch(None).await?);
        with_key.push(patch(Some(format!("key-{i}"))).await?);
        replays.push(patch(Some("replayed".into())).await?);
    }
    for (name, mut times) in [("no key", without), ("new key (executes)", with_key), ("replay", replays)] {
        times.sort();
        println!(
            "| {backend} | {name} | {:.2} | {:.2} | {:.2} |",
            ms(percentile(&times, 50.0)),
            ms(percentile(&times, 99.0)),
            ms(mean(&times))
        );
    }
    server.stop().await
}
