//! Several instances behind a load balancer, as `docs/deploy.md` deploys them: two `confetti
//! serve` processes (the real binary) on one PostgreSQL database and one S3 bucket (`s3s-fs`),
//! behind haproxy started with `deploy/haproxy.cfg` over TLS. Guests upload a burst of photos,
//! each sent three times at once with the same `client_upload_id`, while one instance is
//! killed with SIGKILL mid-body; clients retry what failed, as the page does. Then: one row per
//! photo, quota charged once, every original intact, the survivor serving alone, and once the
//! dead instance is back, nothing left in the bucket's temporary area.
//!
//! Needs haproxy (`apt-get install -y haproxy`; scripts/test.sh installs it), openssl,
//! s3s-fs and PostgreSQL (`TEST_DATABASE_URL`).

#[path = "scale_out/cluster.rs"]
mod cluster;
mod common;

use std::collections::{HashMap, HashSet};
use std::io::Cursor;
use std::time::{Duration, Instant};

use bytes::Bytes;
use cluster::{ADMIN_TOKEN, Cluster};
use futures_util::StreamExt;
use reqwest::StatusCode;
use reqwest::multipart::{Form, Part};
use serde_json::{Value, json};
use uuid::Uuid;

const PHOTOS: usize = 24;
const ATTEMPTS_PER_PHOTO: usize = 3;
const GUESTS: usize = 4;
/// Bodies are sent in chunks of this size with `CHUNK_PAUSE` between them, as a phone on
/// venue Wi-Fi does, so the kill lands while bodies are arriving.
const CHUNK: usize = 16 * 1024;
const CHUNK_PAUSE: Duration = Duration::from_millis(25);
/// How long an attempt keeps retrying connection errors, 502 and 503 (the page retries too).
const RETRY_FOR: Duration = Duration::from_secs(60);

/// A real JPEG of about `bytes` bytes, different for every `seed` (noise compresses badly).
fn photo(seed: u32, bytes: usize) -> Vec<u8> {
    let side = ((bytes as f64 / 1.2).sqrt() as u32).max(16);
    let mut state = 0x2545_f491_u32 ^ seed.wrapping_mul(0x9E37_79B9);
    let img = image::RgbImage::from_fn(side, side, |_, _| {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        image::Rgb([state as u8, (state >> 8) as u8, (state >> 16) as u8])
    });
    let mut out = Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Jpeg).expect("encode jpeg");
    out.into_inner()
}

/// The upload's multipart body, with the key before the file and the file sent slowly.
fn paced_form(key: Uuid, name: &str, bytes: Bytes) -> Form {
    let len = bytes.len() as u64;
    let chunks: Vec<Bytes> =
        (0..bytes.len()).step_by(CHUNK).map(|i| bytes.slice(i..(i + CHUNK).min(bytes.len()))).collect();
    let stream = futures_util::stream::iter(chunks).then(|chunk| async move {
        tokio::time::sleep(CHUNK_PAUSE).await;
        Ok::<Bytes, std::io::Error>(chunk)
    });
    let file = Part::stream_with_length(reqwest::Body::wrap_stream(stream), len)
        .file_name(name.to_owned())
        .mime_str("image/jpeg")
        .expect("mime");
    Form::new().text("client_upload_id", key.to_string()).part("file", file)
}

/// One attempt at one photo, retried as the page retries: after a connection error, a 502 or
/// a 503, until an answer comes (at most `RETRY_FOR`). Returns the final status and body, and
/// how many tries it took.
async fn attempt(
    client: reqwest::Client,
    url: String,
    token: String,
    key: Uuid,
    name: String,
    bytes: Bytes,
) -> (StatusCode, Value, usize) {
    let started = Instant::now();
    let mut tries = 0;
    loop {
        tries += 1;
        let sent = client.post(&url).bearer_auth(&token).multipart(paced_form(key, &name, bytes.clone())).send().await;
        let retry_reason = match sent {
            Ok(response) if matches!(response.status().as_u16(), 502 | 503) => format!("{}", response.status()),
            Ok(response) => {
                let status = response.status();
                let body = response.json().await.unwrap_or(Value::Null);
                return (status, body, tries);
            }
            Err(e) => format!("{e}"),
        };
        assert!(
            started.elapsed() < RETRY_FOR,
            "photo {key}: still failing after {RETRY_FOR:?} ({tries} tries), last: {retry_reason}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

struct Guest {
    id: Uuid,
    token: String,
}

async fn create_event(cluster: &Cluster, client: &reqwest::Client) -> (String, String) {
    let response = client
        .post(cluster.url("/api/v1/events"))
        .bearer_auth(ADMIN_TOKEN)
        .json(&json!({"name": "Anna & Ben", "organiser_password": "correct horse"}))
        .send()
        .await
        .expect("create event");
    assert_eq!(response.status(), StatusCode::CREATED, "creating the event through haproxy");
    let event: Value = response.json().await.expect("event json");
    (event["slug"].as_str().expect("slug").to_owned(), event["join_token"].as_str().expect("join token").to_owned())
}

async fn join(cluster: &Cluster, client: &reqwest::Client, slug: &str, join_token: &str, name: &str) -> Guest {
    let response = client
        .post(cluster.url(&format!("/api/v1/events/{slug}/guests")))
        .json(&json!({"join_token": join_token, "display_name": name}))
        .send()
        .await
        .expect("join");
    assert_eq!(response.status(), StatusCode::CREATED, "joining through haproxy");
    let joined: Value = response.json().await.expect("guest json");
    Guest {
        id: joined["guest"]["id"].as_str().expect("guest id").parse().expect("uuid"),
        token: joined["token"].as_str().expect("token").to_owned(),
    }
}

/// Reads the live stream until `needle` appears in it, at most `limit`; returns what was read.
async fn read_stream_until(response: &mut reqwest::Response, needle: &str, limit: Duration) -> String {
    let mut seen = String::new();
    let deadline = tokio::time::Instant::now() + limit;
    while !seen.contains(needle) {
        match tokio::time::timeout_at(deadline, response.chunk()).await {
            Ok(Ok(Some(chunk))) => seen.push_str(&String::from_utf8_lossy(&chunk)),
            Ok(Ok(None)) => panic!("the live stream ended; it said:\n{seen}"),
            Ok(Err(e)) => panic!("the live stream broke: {e}; it said:\n{seen}"),
            Err(_) => panic!("{needle:?} did not come through haproxy within {limit:?}; the stream said:\n{seen}"),
        }
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn behind_haproxy_a_burst_of_retried_uploads_survives_an_instance_killed_mid_body() {
    let test_started = Instant::now();
    let mut cluster = Cluster::start(2, Vec::new()).await;
    let client = cluster.client();
    eprintln!("two instances ready behind haproxy after {:.1} s", test_started.elapsed().as_secs_f64());

    // Through the load balancer, over TLS: ready, an event, guests.
    let ready = client.get(cluster.url("/readyz")).send().await.expect("readyz through haproxy");
    assert_eq!(ready.status(), StatusCode::OK, "/readyz through haproxy");
    let (slug, join_token) = create_event(&cluster, &client).await;
    let mut guests = Vec::new();
    for g in 0..GUESTS {
        guests.push(join(&cluster, &client, &slug, &join_token, &format!("Guest {g}")).await);
    }
    let upload_url = cluster.url(&format!("/api/v1/events/{slug}/uploads"));

    // The live stream goes through haproxy unbuffered: a photo that becomes ready is told at
    // once, whichever instance holds the stream and whichever made the derivatives.
    {
        let mut live = client
            .get(cluster.url(&format!("/api/v1/events/{slug}/live")))
            .bearer_auth(&guests[0].token)
            .send()
            .await
            .expect("live stream");
        assert_eq!(live.status(), StatusCode::OK, "the live stream through haproxy");
        let content_type = live.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
        assert!(content_type.starts_with("text/event-stream"), "live stream content type {content_type}");
        let first = Bytes::from(photo(1000, 60_000));
        let (status, body, _) = attempt(
            client.clone(),
            upload_url.clone(),
            guests[0].token.clone(),
            Uuid::new_v4(),
            "first.jpg".into(),
            first,
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "the first upload: {body}");
        let id = body["id"].as_str().expect("upload id").to_owned();
        let seen = read_stream_until(&mut live, &id, Duration::from_secs(30)).await;
        assert!(seen.contains("event: upload"), "the stream told of the upload as an `upload` event:\n{seen}");
    }

    // The burst: every photo three times at once, each attempt with the photo's key.
    let photos: Vec<(Uuid, Bytes)> =
        (0..PHOTOS).map(|i| (Uuid::new_v4(), Bytes::from(photo(i as u32, 250_000 + i * 5_000)))).collect();
    let mut attempts = tokio::task::JoinSet::new();
    for (i, (key, bytes)) in photos.iter().enumerate() {
        let guest = &guests[i % GUESTS];
        for _ in 0..ATTEMPTS_PER_PHOTO {
            let (client, url, token, bytes) = (client.clone(), upload_url.clone(), guest.token.clone(), bytes.clone());
            let (key, name) = (*key, format!("IMG_{i:04}.jpg"));
            attempts.spawn(async move { (key, attempt(client, url, token, key, name, bytes).await) });
        }
    }
    // Mid-burst: bodies are arriving at both instances (each takes about half a second to
    // send), each recorded as staged while it arrives. Kill one the way a crash does.
    let pg = cluster.pg().await;
    let staged = || async {
        sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM staged_uploads").fetch_one(&pg).await.expect("staged")
    };
    let burst_started = Instant::now();
    while burst_started.elapsed() < Duration::from_secs(5) && staged().await < 8 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(150)).await;
    let staged_at_kill = staged().await;
    cluster.instances[0].kill9();
    let killed_at = Instant::now();
    // When haproxy's health check takes it out, watched while the burst goes on.
    let taken_out = {
        let (socket, name) = (cluster.haproxy.admin_socket.clone(), cluster.instances[0].name);
        tokio::task::spawn_blocking(move || {
            while killed_at.elapsed() < Duration::from_secs(30) {
                if cluster::server_state(&socket, name).0 == "DOWN" {
                    return Some(killed_at.elapsed());
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            None
        })
    };
    eprintln!(
        "killed {} with SIGKILL {:.2} s into the burst, with {staged_at_kill} uploads being received",
        cluster.instances[0].name,
        burst_started.elapsed().as_secs_f64()
    );
    assert!(
        staged_at_kill >= 2,
        "the kill must land while bodies arrive: {staged_at_kill} uploads were being received"
    );

    let mut answers: HashMap<Uuid, Vec<(StatusCode, Value)>> = HashMap::new();
    let mut retried = 0;
    while let Some(joined) = tokio::time::timeout(Duration::from_secs(90), attempts.join_next())
        .await
        .expect("the burst did not end within 90 s")
    {
        let (key, (status, body, tries)) = joined.expect("an upload attempt panicked");
        retried += tries - 1;
        answers.entry(key).or_default().push((status, body));
    }
    eprintln!(
        "burst of {} attempts done in {:.1} s; {retried} tries were retried after a connection error, 502 or 503",
        PHOTOS * ATTEMPTS_PER_PHOTO,
        burst_started.elapsed().as_secs_f64()
    );

    // Every attempt got a 2xx, and all attempts at one photo name the same upload.
    let mut upload_of: HashMap<Uuid, String> = HashMap::new();
    for (key, bytes) in &photos {
        let got = &answers[key];
        assert_eq!(got.len(), ATTEMPTS_PER_PHOTO);
        for (status, body) in got {
            assert!(status.is_success(), "photo {key}: an attempt ended {status}: {body}");
        }
        let ids: HashSet<&str> = got.iter().map(|(_, body)| body["id"].as_str().expect("upload id")).collect();
        assert_eq!(ids.len(), 1, "photo {key}: the attempts named different uploads: {ids:?}");
        let created = got.iter().filter(|(status, _)| *status == StatusCode::CREATED).count();
        assert!(created <= 1, "photo {key}: {created} attempts were answered 201");
        for (_, body) in got {
            assert_eq!(body["bytes"].as_u64(), Some(bytes.len() as u64), "photo {key}: size in the answer");
        }
        upload_of.insert(*key, ids.into_iter().next().expect("one id").to_owned());
    }

    // In the database: exactly one row per photo, the one the answers named; quota charged once.
    for (key, bytes) in &photos {
        let rows: Vec<(Uuid, i64)> = sqlx::query_as("SELECT id, bytes FROM uploads WHERE client_upload_id = $1")
            .bind(key)
            .fetch_all(&pg)
            .await
            .expect("upload rows");
        assert_eq!(rows.len(), 1, "photo {key}: {} upload rows", rows.len());
        assert_eq!(rows[0].0.to_string(), upload_of[key], "photo {key}: the row is the upload the answers named");
        assert_eq!(rows[0].1, bytes.len() as i64, "photo {key}: bytes in the row");
    }
    for guest in &guests {
        let (used, stored): (i64, i64) = sqlx::query_as(
            "SELECT g.used_bytes, COALESCE((SELECT SUM(u.bytes) FROM uploads u \
               WHERE u.guest_id = g.id AND u.deleted_at IS NULL), 0)::BIGINT \
             FROM guests g WHERE g.id = $1",
        )
        .bind(guest.id)
        .fetch_one(&pg)
        .await
        .expect("quota");
        assert_eq!(used, stored, "guest {}: used_bytes is the sum of their uploads (charged once)", guest.id);
    }
    let total_rows: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM uploads").fetch_one(&pg).await.expect("count");
    assert_eq!(total_rows, PHOTOS as i64 + 1, "one row per photo (and the first upload), nothing else");

    // haproxy's health check takes the dead instance out; the survivor serves everything.
    let taken_out = taken_out.await.expect("the watch on haproxy");
    let taken_out =
        taken_out.unwrap_or_else(|| panic!("haproxy did not mark {} DOWN within 30 s", cluster.instances[0].name));
    eprintln!(
        "haproxy's health check took {} out {:.1} s after the kill",
        cluster.instances[0].name,
        taken_out.as_secs_f64()
    );
    assert_eq!(cluster.haproxy.server_state(cluster.instances[1].name).0, "UP", "the survivor stays in rotation");
    for _ in 0..10 {
        let response = client.get(cluster.url("/readyz")).send().await.expect("readyz through haproxy");
        assert_eq!(response.status(), StatusCode::OK, "only the live instance answers, and it is ready");
    }

    // Every original, fetched through haproxy, is byte for byte what the guest sent.
    for (i, (key, bytes)) in photos.iter().enumerate() {
        let token = &guests[i % GUESTS].token;
        let upload = &upload_of[key];
        let response = client
            .get(cluster.url(&format!("/api/v1/uploads/{upload}/original")))
            .bearer_auth(token)
            .send()
            .await
            .expect("original");
        assert_eq!(response.status(), StatusCode::OK, "photo {key}: its original");
        let got = response.bytes().await.expect("original bytes");
        assert!(got == *bytes, "photo {key}: the original differs ({} bytes, sent {})", got.len(), bytes.len());
    }
    eprintln!("invariants after the crash hold; {:.1} s since the test began", test_started.elapsed().as_secs_f64());

    // The killed instance comes back (same data directory, a new process) and haproxy takes it
    // in again. Then, within 120 s, nothing the crash left is still in the bucket: no
    // temporary blob, no multipart upload left open.
    cluster.restart(0).await;
    let restarted_at = Instant::now();
    cluster.haproxy.wait_for_state(cluster.instances[0].name, true, Duration::from_secs(30)).await;
    eprintln!("{} is back in rotation", cluster.instances[0].name);
    let limit = Duration::from_secs(120);
    let rows: HashSet<String> = sqlx::query_scalar::<_, Uuid>("SELECT id FROM uploads")
        .fetch_all(&pg)
        .await
        .expect("upload ids")
        .into_iter()
        .map(|id| id.to_string())
        .collect();
    loop {
        let (temporary, open) = (cluster.temporary_blobs(), cluster.s3.open_multipart_uploads());
        let staged = staged().await;
        // Photos the dead instance had stored but not committed are at their final key: they go too.
        let uncommitted: Vec<String> = cluster.originals().into_iter().filter(|id| !rows.contains(id)).collect();
        if temporary.is_empty() && open == 0 && staged == 0 && uncommitted.is_empty() {
            eprintln!(
                "the bucket was clean {:.1} s after the restart ({:.1} s after the kill): \
                 no temporary blob, no multipart upload open, no staged record, no original without its row",
                restarted_at.elapsed().as_secs_f64(),
                killed_at.elapsed().as_secs_f64(),
            );
            break;
        }
        assert!(
            restarted_at.elapsed() < limit,
            "{limit:?} after the killed instance restarted, the bucket still holds {} temporary blobs {:?}, \
             {open} multipart uploads open ({} part files), {staged} staged records, originals without a row {uncommitted:?}",
            temporary.len(),
            temporary
                .iter()
                .map(|p| p.file_name().unwrap_or_default().to_string_lossy().into_owned())
                .collect::<Vec<_>>(),
            cluster.s3.open_part_files()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    pg.close().await;
}
