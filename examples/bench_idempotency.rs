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

use std::time::{Duration, Instant};

use confetti::app::{self, AppState};
use confetti::settings::Settings;
use serde_json::{Value, json};

const ADMIN: &str = "bench-admin";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let samples: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1000);
    println!("Idempotency-Key on a small write (PATCH /api/v1/events/{{slug}}), {samples} sequential samples each\n");
    println!("| backend | request | p50 ms | p99 ms | mean ms |");
    println!("| --- | --- | --- | --- | --- |");
    run("sqlite", None, samples).await?;
    if let Ok(server) = std::env::var("TEST_DATABASE_URL") {
        let name = format!("bench_{}", uuid::Uuid::new_v4().simple());
        let admin = sqlx::PgPool::connect(&server).await?;
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}"))).execute(&admin).await?;
        let base = server.rsplit_once('/').map(|(b, _)| b).unwrap_or(&server);
        run("postgres", Some(format!("{base}/{name}")), samples).await?;
        sqlx::query(sqlx::AssertSqlSafe(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")))
            .execute(&admin)
            .await?;
    } else {
        println!("\n(set TEST_DATABASE_URL to measure PostgreSQL too)");
    }
    Ok(())
}

async fn run(backend: &str, database_url: Option<String>, samples: usize) -> anyhow::Result<()> {
    let data = tempfile::tempdir()?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let settings = Settings {
        database_url,
        guest_quota_bytes: 1 << 30,
        min_free_bytes: 0,
        ..Settings::new(data.path(), &format!("http://{addr}"))
    };
    let state = AppState::open(settings, ADMIN.into()).await?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(app::serve(listener, state, async {
        let _ = stopped.await;
    }));
    let client = reqwest::Client::new();
    let base = format!("http://{addr}");
    let event: Value = client
        .post(format!("{base}/api/v1/events"))
        .bearer_auth(ADMIN)
        .json(&json!({"name": "Bench", "organiser_password": "correct horse"}))
        .send()
        .await?
        .json()
        .await?;
    let slug = event["slug"].as_str().unwrap_or_default().to_owned();
    let session: Value = client
        .post(format!("{base}/api/v1/events/{slug}/organiser-sessions"))
        .json(&json!({"password": "correct horse"}))
        .send()
        .await?
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
        let at = |q: f64| ms(times[((times.len() as f64 * q) as usize).min(times.len() - 1)]);
        let mean = ms(times.iter().sum::<Duration>()) / times.len() as f64;
        println!("| {backend} | {name} | {:.2} | {:.2} | {mean:.2} |", at(0.50), at(0.99));
    }
    let _ = stop.send(());
    let _ = server.await;
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
