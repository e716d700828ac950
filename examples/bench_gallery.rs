//! The gallery's listing under size and under load — a benchmark, not a test: it prints
//! figures for docs/benchmarks.md.
//!
//! cargo run --release --example bench_gallery -- [uploads] [samples]
//!
//! Runs Confetti in-process (the same `serve` as production) on 127.0.0.1, on SQLite and, when
//! TEST_DATABASE_URL names a PostgreSQL server, on a fresh database there. For each backend:
//! 1. `uploads` rows (default 100,000) in one event, written straight into the database (one
//!    guest, every tenth photo liked, every twentieth commented), then `samples` sequential
//!    `GET /api/v1/events/{slug}/uploads` as a guest: the first page, and pages reached through
//!    cursors spread over the whole event.
//! 2. In a fresh event: the first page while nothing else runs, then while 8 guests upload
//!    12-megapixel photos in a loop and the derivative workers turn them into thumbs and
//!    previews. The ratio of the two p99s is the figure.

#[path = "support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use confetti::db::Db;
use futures_util::StreamExt;
use serde_json::Value;
use support::api;
use support::in_process::{InProcess, on_each_backend};
use support::stats::{ms, percentile};
use uuid::Uuid;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let uploads: i64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let samples: usize = std::env::args().nth(2).and_then(|s| s.parse().ok()).unwrap_or(1000);
    let photo = support::photos::photo_like_jpeg(4000, 3000)?;
    println!(
        "Listing with {uploads} uploads in one event; {samples} sequential requests per row; load photo {} bytes\n",
        photo.len()
    );
    println!("| backend | listing | p50 ms | p99 ms | max ms |");
    println!("| --- | --- | --- | --- | --- |");
    on_each_backend(async |backend, database_url| run(backend, database_url, uploads, samples, &photo).await).await
}

/// A guest's first listing page, or the page after `cursor`; returns how long it took.
async fn list(
    client: &reqwest::Client,
    base: &str,
    slug: &str,
    token: &str,
    cursor: Option<&str>,
) -> anyhow::Result<Duration> {
    let mut url = format!("{base}/api/v1/events/{slug}/uploads?limit=50");
    if let Some(cursor) = cursor {
        url.push_str(&format!("&cursor={cursor}"));
    }
    let started = Instant::now();
    let response = client.get(url).bearer_auth(token).send().await?;
    anyhow::ensure!(response.status().is_success(), "listing answered {}", response.status());
    let page: Value = response.json().await?;
    anyhow::ensure!(page["items"].as_array().is_some_and(|items| !items.is_empty()), "an empty page");
    Ok(started.elapsed())
}

async fn run(
    backend: &str,
    database_url: Option<String>,
    uploads: i64,
    samples: usize,
    photo: &[u8],
) -> anyhow::Result<()> {
    let server = InProcess::start(database_url, 1 << 40).await?;
    let client = reqwest::Client::new();
    let base = &server.base;

    // 1. A large event.
    let event = api::create_event(&client, base, None).await?;
    let slug = &event.slug;
    let anna = api::join(&client, base, slug, &event.join_token, "Anna").await?;
    let started = Instant::now();
    let ids = fill(&server.db, event.id, anna.id, uploads).await?;
    eprintln!("{backend}: {uploads} uploads written in {:.1} s", started.elapsed().as_secs_f64());
    for _ in 0..50 {
        list(&client, base, slug, &anna.token, None).await?;
    }
    let mut first = Vec::with_capacity(samples);
    let mut deep = Vec::with_capacity(samples);
    for i in 0..samples {
        first.push(list(&client, base, slug, &anna.token, None).await?);
        let at = ids[60 + (i * 7919) % (ids.len() - 60)];
        deep.push(list(&client, base, slug, &anna.token, Some(&URL_SAFE_NO_PAD.encode(at.as_bytes()))).await?);
    }
    print_row(backend, &format!("first page, {uploads} uploads"), first);
    print_row(backend, &format!("a page deep inside, {uploads} uploads"), deep);

    // 2. Idle against 8 uploads with their derivatives.
    let event = api::create_event(&client, base, None).await?;
    let slug = &event.slug;
    let ben = api::join(&client, base, slug, &event.join_token, "Ben").await?;
    let mut uploaders = Vec::new();
    for i in 0..8 {
        uploaders.push(api::join(&client, base, slug, &event.join_token, &format!("Guest {i}")).await?.token);
    }
    for _ in 0..3 {
        upload(&client, base, slug, &uploaders[0], photo, None).await?;
    }
    let mut idle = Vec::with_capacity(samples);
    for _ in 0..samples {
        idle.push(list(&client, base, slug, &ben.token, None).await?);
        tokio::time::sleep(PACE).await;
    }
    let idle_p99 = print_row(backend, "first page, idle", idle);
    for (label, rate) in
        [("8 guests uploading at 2 MB/s each", Some(2_000_000)), ("8 uploads as fast as loopback allows", None)]
    {
        let load = Load { client: &client, base, slug, uploaders: &uploaders, photo, rate };
        let loaded = under_load(&server.db, load, &ben.token, samples, backend).await?;
        let loaded_p99 = print_row(backend, &format!("first page, {label}, derivatives running"), loaded);
        println!("| {backend} | p99 {label} / idle | {:.2}× | | |", loaded_p99 / idle_p99);
    }
    server.stop().await
}

/// Pause between two listing requests, so the samples spread over the load.
const PACE: Duration = Duration::from_millis(10);

/// Guests uploading in a loop: one task per guest in `uploaders`, each sending `photo` at `rate`
/// bytes per second (as fast as it can without).
struct Load<'a> {
    client: &'a reqwest::Client,
    base: &'a str,
    slug: &'a str,
    uploaders: &'a [String],
    photo: &'a [u8],
    rate: Option<u64>,
}

/// Listing samples as the guest with `token` while the `load` runs (and derivatives are made).
async fn under_load(
    db: &Db,
    load: Load<'_>,
    token: &str,
    samples: usize,
    backend: &str,
) -> anyhow::Result<Vec<Duration>> {
    let busy = tokio::sync::watch::channel(true);
    let mut tasks = Vec::new();
    for guest in load.uploaders {
        let (client, base, slug, photo, running, guest, rate) = (
            load.client.clone(),
            load.base.to_owned(),
            load.slug.to_owned(),
            load.photo.to_vec(),
            busy.1.clone(),
            guest.clone(),
            load.rate,
        );
        tasks.push(tokio::spawn(async move {
            let mut sent = 0usize;
            while *running.borrow() {
                upload(&client, &base, &slug, &guest, &photo, rate).await?;
                sent += 1;
            }
            anyhow::Ok(sent)
        }));
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let started = Instant::now();
    let made_before = derivatives_done(db).await?;
    let mut loaded = Vec::with_capacity(samples);
    for _ in 0..samples {
        loaded.push(list(load.client, load.base, load.slug, token, None).await?);
        tokio::time::sleep(PACE).await;
    }
    let elapsed = started.elapsed();
    let made = derivatives_done(db).await? - made_before;
    busy.0.send_replace(false);
    let mut sent = 0;
    for task in tasks {
        sent += task.await??;
    }
    eprintln!(
        "{backend}: {sent} uploads sent; {made} derivative pairs made during the {:.1} s measured",
        elapsed.as_secs_f64()
    );
    Ok(loaded)
}

/// One upload; with `rate` (bytes per second) the body is sent at that pace, as a phone on the
/// event's Wi-Fi sends it.
async fn upload(
    client: &reqwest::Client,
    base: &str,
    slug: &str,
    token: &str,
    photo: &[u8],
    rate: Option<u64>,
) -> anyhow::Result<()> {
    let part = match rate {
        None => reqwest::multipart::Part::bytes(photo.to_vec()),
        Some(rate) => {
            const CHUNK: usize = 64 * 1024;
            let pause = Duration::from_secs_f64(CHUNK as f64 / rate as f64);
            let chunks: Vec<bytes::Bytes> = photo.chunks(CHUNK).map(bytes::Bytes::copy_from_slice).collect();
            let stream = futures_util::stream::iter(chunks).then(move |chunk| async move {
                tokio::time::sleep(pause).await;
                Ok::<_, std::io::Error>(chunk)
            });
            reqwest::multipart::Part::stream_with_length(reqwest::Body::wrap_stream(stream), photo.len() as u64)
        }
    };
    api::upload(client, base, slug, token, part.file_name("IMG.jpg").mime_str("image/jpeg")?).await?;
    Ok(())
}

async fn derivatives_done(db: &Db) -> anyhow::Result<i64> {
    let sql = "SELECT COUNT(*) FROM uploads WHERE status = 'ready'";
    Ok(match db {
        Db::Sqlite(pool) => sqlx::query_scalar(sql).fetch_one(pool).await?,
        Db::Postgres(pool) => sqlx::query_scalar(sql).fetch_one(pool).await?,
    })
}

/// Writes `n` ready uploads of one guest, with likes and comments; returns their ids, oldest first.
async fn fill(db: &Db, event_id: Uuid, guest_id: Uuid, n: i64) -> anyhow::Result<Vec<Uuid>> {
    let start = chrono::Utc::now() - chrono::Duration::days(1);
    let mut ids = Vec::with_capacity(n as usize);
    for chunk in 0..(n + 999) / 1000 {
        let mut tx = match db {
            Db::Sqlite(pool) => Tx::Sqlite(pool.begin().await?),
            Db::Postgres(pool) => Tx::Postgres(pool.begin().await?),
        };
        for i in chunk * 1000..((chunk + 1) * 1000).min(n) {
            let created = start + chrono::Duration::milliseconds(i * 500);
            let ts = uuid::Timestamp::from_unix(
                uuid::NoContext,
                created.timestamp() as u64,
                created.timestamp_subsec_nanos(),
            );
            let id = Uuid::new_v7(ts);
            ids.push(id);
            let insert =
                "INSERT INTO uploads (id, event_id, guest_id, client_upload_id, filename, content_type, bytes, sha256,
                                               width, height, created_at, captured_at, status, hidden)
                          VALUES ($1, $2, $3, $4, 'IMG.jpg', 'image/jpeg', 3000000, 'x', 4000, 3000, $5, $5, 'ready', $6)";
            let like = "INSERT INTO likes (upload_id, guest_id, created_at) VALUES ($1, $2, $3)";
            let comment =
                "INSERT INTO comments (id, upload_id, guest_id, text, created_at) VALUES ($1, $2, $3, 'Schön!', $4)";
            macro_rules! write {
                ($conn:expr) => {{
                    sqlx::query(insert)
                        .bind(id)
                        .bind(event_id)
                        .bind(guest_id)
                        .bind(Uuid::new_v4())
                        .bind(created)
                        .bind(i % 100 == 0)
                        .execute(&mut *$conn)
                        .await?;
                    if i % 10 == 0 {
                        sqlx::query(like).bind(id).bind(guest_id).bind(created).execute(&mut *$conn).await?;
                    }
                    if i % 20 == 0 {
                        sqlx::query(comment)
                            .bind(Uuid::now_v7())
                            .bind(id)
                            .bind(guest_id)
                            .bind(created)
                            .execute(&mut *$conn)
                            .await?;
                    }
                }};
            }
            match &mut tx {
                Tx::Sqlite(t) => write!(&mut **t),
                Tx::Postgres(t) => write!(&mut **t),
            }
        }
        match tx {
            Tx::Sqlite(t) => t.commit().await?,
            Tx::Postgres(t) => t.commit().await?,
        }
    }
    match db {
        Db::Sqlite(pool) => {
            sqlx::query("ANALYZE").execute(pool).await?;
        }
        Db::Postgres(pool) => {
            sqlx::query("ANALYZE").execute(pool).await?;
        }
    }
    Ok(ids)
}

enum Tx {
    Sqlite(sqlx::Transaction<'static, sqlx::Sqlite>),
    Postgres(sqlx::Transaction<'static, sqlx::Postgres>),
}

/// Prints a table row; returns the p99 in ms.
fn print_row(backend: &str, what: &str, mut times: Vec<Duration>) -> f64 {
    times.sort();
    let max = times.last().map(|d| ms(*d)).unwrap_or_default();
    let p99 = ms(percentile(&times, 99.0));
    println!("| {backend} | {what} | {:.2} | {p99:.2} | {max:.2} |", ms(percentile(&times, 50.0)));
    p99
}
