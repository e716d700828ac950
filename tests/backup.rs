//! Backups as a host runs them: `confetti backup` while guests upload, `confetti restore` into
//! a new data directory (after `pg_restore` on PostgreSQL), and a server started on it that has
//! every photo answered before the backup began, byte for byte, with its caption, likes and
//! comments and its guest's quota. Run again, a backup copies only what is new; a restore
//! refuses a data directory that holds anything.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::images::{jpeg, jpeg_of_about};
use common::s3::{ACCESS_KEY, REGION, SECRET_KEY};
use common::{ADMIN_TOKEN, Backend, Guest, TestApp, fresh_postgres_database, settled, upload_form};
use confetti::blobs::BlobStore;
use futures_util::StreamExt;
use reqwest::StatusCode;
use serde_json::{Value, json};
use uuid::Uuid;

/// Uploads in the burst, and how many are sent at once.
const BURST: usize = 150;
const AT_ONCE: usize = 6;

/// A backup's place as a host names it, and where its files are on this machine's disk.
struct Place {
    spec: String,
    on_disk: PathBuf,
    _dir: tempfile::TempDir,
}

impl Place {
    /// A directory, or, for an instance on S3, a prefix in another bucket of the same server.
    fn for_app(app: &TestApp) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        match &app.s3 {
            Some(s3) => {
                let bucket = s3.root().join("backups");
                std::fs::create_dir_all(&bucket).expect("backup bucket");
                Self { spec: "s3://backups/confetti".into(), on_disk: bucket.join("confetti"), _dir: dir }
            }
            None => Self {
                spec: dir.path().join("backup").display().to_string(),
                on_disk: dir.path().join("backup"),
                _dir: dir,
            },
        }
    }

    /// The place opened as `confetti backup` opens it.
    fn store(&self, app: &TestApp) -> BlobStore {
        match &app.s3 {
            Some(s3) => {
                let settings = object_store::aws::AmazonS3Builder::new()
                    .with_endpoint(&s3.endpoint)
                    .with_allow_http(true)
                    .with_region(REGION)
                    .with_access_key_id(ACCESS_KEY)
                    .with_secret_access_key(SECRET_KEY);
                BlobStore::s3(&self.spec, settings).expect("S3 place")
            }
            None => BlobStore::open(Some(&self.spec), Path::new(".")).expect("backup directory"),
        }
    }

    fn manifest(&self) -> Value {
        let bytes = std::fs::read(self.on_disk.join("manifest.json")).expect("manifest.json");
        serde_json::from_slice(&bytes).expect("manifest json")
    }
}

/// The flags and environment a host gives `confetti backup` for this instance.
fn site_of(app: &TestApp) -> (Vec<String>, Vec<(&'static str, String)>) {
    let mut args = vec!["--data-dir".to_owned(), app.data_dir.path().display().to_string()];
    if let Some(url) = &app.database_url {
        args.extend(["--database-url".to_owned(), url.to_string()]);
    }
    let env = match &app.s3 {
        Some(s3) => {
            args.extend(["--storage".to_owned(), s3.storage_url()]);
            s3.env()
        }
        None => Vec::new(),
    };
    (args, env)
}

/// Runs the `confetti` binary, at most two minutes.
async fn confetti(args: &[String], env: &[(&'static str, String)]) -> Output {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_confetti"));
    command.args(args).env("RUST_LOG", "warn").kill_on_drop(true);
    // As a host runs it: none of the test's own settings, no backtraces under one-line errors.
    for variable in [
        "CONFETTI_STORAGE",
        "CONFETTI_DATA_DIR",
        "DATABASE_URL",
        "CONFETTI_BACKUP_TO",
        "RUST_BACKTRACE",
        "RUST_LIB_BACKTRACE",
    ] {
        command.env_remove(variable);
    }
    command.envs(env.iter().map(|(k, v)| (*k, v.as_str())));
    let output = tokio::time::timeout(Duration::from_secs(120), command.output()).await.expect("confetti within 2 min");
    output.expect("run confetti")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `pg_dump` of the instance's database, in PostgreSQL's custom format.
async fn pg_dump(url: &str, file: &Path) {
    let output = tokio::process::Command::new("pg_dump")
        .args(["--format=custom", "--no-owner", "--file"])
        .arg(file)
        .arg(url)
        .output()
        .await
        .expect("pg_dump");
    assert!(output.status.success(), "pg_dump: {}", text(&output.stderr));
}

async fn pg_restore(url: &str, file: &Path) {
    let output = tokio::process::Command::new("pg_restore")
        .args(["--no-owner", "--exit-on-error", "--dbname", url])
        .arg(file)
        .output()
        .await
        .expect("pg_restore");
    assert!(output.status.success(), "pg_restore: {}", text(&output.stderr));
}

/// A photo a guest sent, as the server answered it.
#[derive(Clone, Debug)]
struct Photo {
    id: String,
    guest: usize,
    bytes: Vec<u8>,
    caption: String,
}

/// A write answered by the server, and when.
enum Answered {
    Upload(Photo),
    Like(String),
    Comment(String),
}

/// Uploads photo `n` (a small JPEG of its own, or `bytes`) as `guest`, with a caption.
async fn send(app: &TestApp, guests: &[Guest], guest: usize, n: usize, bytes: Option<Vec<u8>>) -> Photo {
    let bytes = bytes.unwrap_or_else(|| jpeg(48 + (n % 97) as u32, 40 + (n / 97) as u32));
    let caption = format!("photo {n} of guest {guest}");
    let form = upload_form(&bytes, Some(Uuid::new_v4()), &format!("IMG_{n}.jpg"), Some(&caption));
    let response = app.upload_form(&guests[guest], form, None).await;
    assert_eq!(response.status(), StatusCode::CREATED, "upload {n}");
    let body: Value = response.json().await.expect("upload json");
    Photo { id: body["id"].as_str().expect("id").to_owned(), guest, bytes, caption }
}

/// A guest's write, answered `want`.
async fn act(app: &TestApp, guest: &Guest, method: reqwest::Method, path: &str, body: Option<Value>, want: StatusCode) {
    let mut request = app.client.request(method.clone(), app.url(path)).bearer_auth(&guest.token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("request");
    assert_eq!(response.status(), want, "{method} {path}");
}

async fn like(app: &TestApp, guest: &Guest, id: &str) {
    act(app, guest, reqwest::Method::PUT, &format!("/api/v1/uploads/{id}/like"), None, StatusCode::OK).await
}

async fn delete(app: &TestApp, guest: &Guest, id: &str) {
    act(app, guest, reqwest::Method::DELETE, &format!("/api/v1/uploads/{id}"), None, StatusCode::NO_CONTENT).await
}

async fn comment(app: &TestApp, guest: &Guest, id: &str, text: &str) {
    let (path, body) = (format!("/api/v1/uploads/{id}/comments"), json!({ "text": text }));
    act(app, guest, reqwest::Method::POST, &path, Some(body), StatusCode::CREATED).await
}

/// Guests upload a burst (each photo then liked and commented on by the next guest, some
/// deleted again; one guestbook message before it) while the instance is backed up; every write answered before the backup
/// began is restored, and every photo the restored server shows has its bytes.
async fn a_backup_taken_while_guests_upload_restores_every_photo_answered_before_it(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let mut guests = Vec::new();
    for name in ["Ada", "Ben", "Cleo", "Dev"] {
        guests.push(app.join(&event, name).await);
    }
    // Photos from before the burst, with their thumbs and previews made; one larger than a part
    // of the stores' multipart writes (5 MiB on S3), so that it is copied a part at a time.
    let mut early = Vec::new();
    for n in 0..8 {
        let large = (n == 0).then(|| jpeg_of_about(6 * 1024 * 1024));
        assert!(large.as_ref().is_none_or(|large| large.len() > 5 * 1024 * 1024), "larger than a part");
        let photo = send(&app, &guests, n % guests.len(), 10_000 + n, large).await;
        let next = &guests[(photo.guest + 1) % guests.len()];
        like(&app, next, &photo.id).await;
        comment(&app, next, &photo.id, &format!("lovely {n}")).await;
        early.push(photo);
    }
    for photo in &early {
        assert_eq!(settled(&app, &guests[photo.guest].token, &photo.id).await["status"], "ready");
    }
    // The guestbook goes with the database.
    let guestbook = format!("/api/v1/events/{}/guestbook", event.slug);
    act(&app, &guests[0], reqwest::Method::POST, &guestbook, Some(json!({"text": "Alles Gute!"})), StatusCode::CREATED)
        .await;

    let (app, guests) = (Arc::new(app), Arc::new(guests));
    let answered: Arc<Mutex<Vec<(Instant, Answered)>>> = Arc::default();
    let burst = tokio::spawn({
        let (app, guests, answered) = (app.clone(), guests.clone(), answered.clone());
        async move {
            futures_util::stream::iter(0..BURST)
                .for_each_concurrent(AT_ONCE, |n| {
                    let (app, guests, answered) = (app.clone(), guests.clone(), answered.clone());
                    async move {
                        let photo = send(&app, &guests, n % guests.len(), n, None).await;
                        let (id, uploader) = (photo.id.clone(), &guests[photo.guest]);
                        let next = &guests[(photo.guest + 1) % guests.len()];
                        // Every eighth photo is deleted again by its guest, maybe while the
                        // backup runs: whether it is restored is not known, so it is not expected.
                        let kept = n % 8 != 0;
                        if kept {
                            answered.lock().expect("log").push((Instant::now(), Answered::Upload(photo)));
                        }
                        like(&app, next, &id).await;
                        answered.lock().expect("log").push((Instant::now(), Answered::Like(id.clone())));
                        comment(&app, next, &id, &format!("wow {n}")).await;
                        answered.lock().expect("log").push((Instant::now(), Answered::Comment(id.clone())));
                        if !kept {
                            delete(&app, uploader, &id).await;
                        }
                    }
                })
                .await
        }
    });
    let uploads = || answered.lock().expect("log").iter().filter(|(_, a)| matches!(a, Answered::Upload(_))).count();
    let waiting = Instant::now();
    while uploads() < 20 {
        assert!(waiting.elapsed() < Duration::from_secs(60), "the burst did not get going");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    // The backup, as a host runs it: on PostgreSQL `pg_dump` first, then `confetti backup`.
    let began = Instant::now();
    let work = tempfile::tempdir().expect("temp dir");
    let dump = work.path().join("confetti.dump");
    if let Some(url) = &app.database_url {
        pg_dump(url, &dump).await;
    }
    let place = Place::for_app(&app);
    let (mut args, env) = site_of(&app);
    args.splice(0..0, ["backup".to_owned(), "--to".to_owned(), place.spec.clone()]);
    let backup = confetti(&args, &env).await;
    assert!(backup.status.success(), "backup: {}", text(&backup.stderr));
    let summary = text(&backup.stdout);
    assert_eq!(summary.lines().count(), 1, "one line: {summary}");
    assert!(summary.starts_with("backup to "), "{summary}");
    burst.await.expect("burst");

    let answered = std::mem::take(&mut *answered.lock().expect("log"));
    assert!(answered.iter().any(|(at, _)| *at > began), "some writes were answered while the backup ran");
    let answered: Vec<&Answered> = answered.iter().filter(|(at, _)| *at < began).map(|(_, a)| a).collect();
    let mut photos = early.clone();
    photos.extend(
        answered.iter().filter_map(|a| if let Answered::Upload(photo) = a { Some(photo.clone()) } else { None }),
    );
    let liked: Vec<&str> =
        answered.iter().filter_map(|a| if let Answered::Like(id) = a { Some(id.as_str()) } else { None }).collect();
    let commented: Vec<&str> =
        answered.iter().filter_map(|a| if let Answered::Comment(id) = a { Some(id.as_str()) } else { None }).collect();

    // Restore into a new, empty data directory (and on PostgreSQL a new database).
    let restored_dir = tempfile::tempdir().expect("temp dir");
    let database = match &app.database_url {
        Some(_) => {
            let database = fresh_postgres_database().await;
            pg_restore(&database, &dump).await;
            Some(database)
        }
        None => None,
    };
    let mut args = vec!["restore".to_owned(), "--from".to_owned(), place.spec.clone()];
    args.extend(["--data-dir".to_owned(), restored_dir.path().display().to_string()]);
    if let Some(database) = &database {
        args.extend(["--database-url".to_owned(), database.to_string()]);
    }
    let restore = confetti(&args, &env).await;
    assert!(restore.status.success(), "restore: {}", text(&restore.stderr));
    let restored_backend = if backend == Backend::Sqlite { Backend::Sqlite } else { Backend::Postgres };
    let restored = TestApp::spawn_on(restored_backend, restored_dir, database).await;
    let (status, book) = restored.get_json(&guestbook, &guests[1].token).await;
    assert_eq!((status, &book["items"][0]["text"]), (StatusCode::OK, &json!("Alles Gute!")), "the guestbook: {book}");

    for photo in &photos {
        let token = &guests[photo.guest].token;
        let response = restored
            .client
            .get(restored.url(&format!("/api/v1/uploads/{}/original", photo.id)))
            .bearer_auth(token)
            .send()
            .await
            .expect("original");
        assert_eq!(response.status(), StatusCode::OK, "original of {}", photo.id);
        assert!(response.bytes().await.expect("bytes") == photo.bytes, "the original of {} byte for byte", photo.id);
        let (status, upload) = restored.get_json(&format!("/api/v1/uploads/{}", photo.id), token).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(upload["caption"], photo.caption.as_str());
        let likes = upload["likes"].as_i64().expect("likes");
        let comments = upload["comments"].as_i64().expect("comments");
        let early_one = early.iter().any(|e| e.id == photo.id);
        assert!(likes >= i64::from(early_one || liked.contains(&photo.id.as_str())), "likes of {}", photo.id);
        assert!(comments >= i64::from(early_one || commented.contains(&photo.id.as_str())), "comments of {}", photo.id);
    }
    for photo in &early {
        let upload = settled(&restored, &guests[photo.guest].token, &photo.id).await;
        assert_eq!(
            (upload["status"].as_str(), upload["likes"].as_i64(), upload["comments"].as_i64()),
            (Some("ready"), Some(1), Some(1))
        );
        let thumb = restored.url(upload["urls"]["thumb"].as_str().expect("thumb url"));
        let response = restored.client.get(thumb).bearer_auth(&guests[photo.guest].token).send().await.expect("thumb");
        assert_eq!(response.status(), StatusCode::OK, "the thumb made before the backup is restored");
    }
    // Each guest's quota is what their restored photos take, and at least what was answered.
    for (n, guest) in guests.iter().enumerate() {
        let (status, me) = restored.get_json("/api/v1/me", &guest.token).await;
        assert_eq!(status, StatusCode::OK);
        let stored = stored_bytes(&restored, guest).await;
        assert_eq!(me["used_bytes"].as_i64(), Some(stored), "the quota of guest {n} is what their photos take");
        let answered_bytes: usize = photos.iter().filter(|p| p.guest == n).map(|p| p.bytes.len()).sum();
        assert!(stored >= answered_bytes as i64, "guest {n}: {stored} < {answered_bytes}");
    }
    // No photo is shown without its bytes (one deleted while the backup ran is deleted again).
    let organiser = restored.organiser_login(&event).await;
    let mut cursor = String::new();
    loop {
        let page = format!("/api/v1/events/{}/uploads?limit=100&cursor={cursor}", event.slug);
        let (status, listing) = restored.get_json(&page, &organiser).await;
        assert_eq!(status, StatusCode::OK, "{listing}");
        for upload in listing["items"].as_array().expect("items") {
            let original = restored.url(upload["urls"]["original"].as_str().expect("original url"));
            let response = restored.client.get(original).bearer_auth(&organiser).send().await.expect("original");
            assert_eq!(response.status(), StatusCode::OK, "the original of {}", upload["id"]);
        }
        match listing["next_cursor"].as_str() {
            Some(next) => cursor = next.to_owned(),
            None => break,
        }
    }
    restored.stop().await;
}

/// Bytes of a guest's photos that are not deleted, as the database holds them.
async fn stored_bytes(app: &TestApp, guest: &Guest) -> i64 {
    const SUM: &str =
        "SELECT CAST(COALESCE(SUM(bytes), 0) AS BIGINT) FROM uploads WHERE guest_id = $1 AND deleted_at IS NULL";
    match &app.db {
        confetti::db::Db::Sqlite(pool) => sqlx::query_scalar(SUM).bind(guest.id).fetch_one(pool).await,
        confetti::db::Db::Postgres(pool) => sqlx::query_scalar(SUM).bind(guest.id).fetch_one(pool).await,
    }
    .expect("sum of bytes")
}

every_store!(a_backup_taken_while_guests_upload_restores_every_photo_answered_before_it);

/// Originals and derivatives in the instance's photo store.
fn blob_files(app: &TestApp) -> Vec<PathBuf> {
    let root = app.blob_dir();
    let mut files = common::all_files(&root.join("originals"));
    files.extend(common::all_files(&root.join("derivatives")));
    files
}

async fn upload_settled(app: &TestApp, guest: &Guest, n: usize) {
    let response = app.upload(guest, &jpeg(64 + n as u32, 48), Some(Uuid::new_v4())).await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let id = response.json::<Value>().await.expect("json")["id"].as_str().expect("id").to_owned();
    assert_eq!(settled(app, &guest.token, &id).await["status"], "ready");
}

async fn last_backup(app: &TestApp) -> Value {
    let (status, listing) = app.get_json("/api/v1/events", ADMIN_TOKEN).await;
    assert_eq!(status, StatusCode::OK);
    listing["last_backup"].clone()
}

/// The library call the command makes, run three times on one place: the second copies the
/// ten new photos' blobs and nothing else, the third nothing; the admin listing shows the last.
async fn a_second_backup_copies_only_the_photos_uploaded_since(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Ada").await;
    assert_eq!(last_backup(&app).await, Value::Null, "no backup ran yet");
    for n in 0..5 {
        upload_settled(&app, &guest, n).await;
    }
    let place = Place::for_app(&app);
    let to = place.store(&app);
    let run = || confetti::backup::backup(&app.db, &app.state.blobs, &to, &place.spec, app.data_dir.path());
    let first = run().await.expect("first backup");
    let at_first = blob_files(&app).len() as u64;
    assert_eq!((first.copied_originals, first.manifest.copied_blobs), (5, at_first));

    for n in 5..15 {
        upload_settled(&app, &guest, n).await;
    }
    let second = run().await.expect("second backup");
    let now = blob_files(&app).len() as u64;
    assert_eq!(second.copied_originals, 10, "{second}");
    assert_eq!(second.manifest.copied_blobs, now - at_first, "only the new photos' blobs: {second}");
    assert_eq!((second.manifest.uploads, second.manifest.blobs), (15, now));
    assert_eq!(place.manifest()["copied_blobs"], now - at_first, "the manifest says so too");

    let third = run().await.expect("third backup");
    assert_eq!((third.manifest.copied_blobs, third.manifest.blobs), (0, now), "{third}");
    let shown = last_backup(&app).await;
    assert_eq!((&shown["uploads"], &shown["blobs"], &shown["copied_blobs"]), (&json!(15), &json!(now), &json!(0)));
    assert_eq!(shown["with_database"], backend == Backend::Sqlite);
    assert_eq!(shown["bytes"], json!(third.manifest.bytes));
}

both_backends!(a_second_backup_copies_only_the_photos_uploaded_since);

/// A backup of a fresh instance, for the refusals.
async fn small_backup() -> (TestApp, Place) {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Ada").await;
    upload_settled(&app, &guest, 0).await;
    let place = Place::for_app(&app);
    let (mut args, env) = site_of(&app);
    args.splice(0..0, ["backup".to_owned(), "--to".to_owned(), place.spec.clone()]);
    let output = confetti(&args, &env).await;
    assert!(output.status.success(), "backup: {}", text(&output.stderr));
    (app, place)
}

async fn restore_into(from: &str, data_dir: &Path) -> Output {
    let args = ["restore", "--from", from, "--data-dir", &data_dir.display().to_string()].map(str::to_owned);
    confetti(&args, &[]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn restore_refuses_a_data_directory_that_holds_anything_and_leaves_it_as_it_was() {
    let (_app, place) = small_backup().await;
    let data_dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(data_dir.path().join("admin-token"), "keep me").expect("write");

    let output = restore_into(&place.spec, data_dir.path()).await;
    assert!(!output.status.success(), "refused");
    let error = text(&output.stderr);
    assert_eq!(error.trim().lines().count(), 1, "one line: {error}");
    assert!(error.contains("is not empty"), "{error}");
    let left: Vec<_> = std::fs::read_dir(data_dir.path()).expect("dir").flatten().map(|e| e.file_name()).collect();
    assert_eq!(left, ["admin-token"], "nothing written beside what was there");

    let empty = tempfile::tempdir().expect("temp dir");
    let output = restore_into(&place.spec, empty.path()).await;
    assert!(output.status.success(), "the same backup restores into an empty directory: {}", text(&output.stderr));
    assert!(empty.path().join("confetti.db").is_file());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn restore_refuses_a_place_without_a_manifest() {
    let (_app, place) = small_backup().await;
    std::fs::remove_file(place.on_disk.join("manifest.json")).expect("remove manifest");
    let data_dir = tempfile::tempdir().expect("temp dir");

    for from in [place.spec.clone(), place.on_disk.join("no-such-dir").display().to_string()] {
        let output = restore_into(&from, data_dir.path()).await;
        assert!(!output.status.success(), "refused");
        let error = text(&output.stderr);
        assert_eq!(error.trim().lines().count(), 1, "one line: {error}");
        assert!(error.contains("holds no Confetti backup"), "{error}");
    }
    assert_eq!(std::fs::read_dir(data_dir.path()).expect("dir").count(), 0, "nothing restored");
}

/// A photo whose bytes a backup lacks was deleted while it ran (after the snapshot, before its
/// copy); unless the manifest names it as missing from the store, the restore deletes it too
/// and gives its quota back, instead of showing a photo without bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_photo_deleted_while_the_backup_ran_is_deleted_by_the_restore_too() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Ada").await;
    let mut photos = Vec::new();
    for n in 0..3 {
        let bytes = jpeg(64 + n, 48);
        let response = app.upload(&guest, &bytes, Some(Uuid::new_v4())).await;
        assert_eq!(response.status(), StatusCode::CREATED);
        let id: Uuid = response.json::<Value>().await.expect("json")["id"].as_str().expect("id").parse().expect("uuid");
        photos.push((id, bytes.len() as i64));
    }
    let place = Place::for_app(&app);
    let to = place.store(&app);
    confetti::backup::backup(&app.db, &app.state.blobs, &to, &place.spec, app.data_dir.path()).await.expect("backup");
    // The first photo's bytes went before they were copied; the second's the store had lost.
    let original = |id: Uuid| format!("originals/{}/{id}", event.id);
    let (deleted, lost, kept) = (photos[0], photos[1], photos[2]);
    for (id, _) in [deleted, lost] {
        std::fs::remove_file(place.on_disk.join("blobs").join(original(id))).expect("remove from the backup");
    }
    let mut manifest = place.manifest();
    manifest["missing_blobs"] = json!([original(lost.0)]);
    std::fs::write(place.on_disk.join("manifest.json"), manifest.to_string()).expect("manifest");

    let restored_dir = tempfile::tempdir().expect("temp dir");
    let output = restore_into(&place.spec, restored_dir.path()).await;
    assert!(output.status.success(), "restore: {}", text(&output.stderr));
    assert!(text(&output.stdout).contains("1 photos deleted while the backup ran"), "{}", text(&output.stdout));
    let restored = TestApp::spawn_on(Backend::Sqlite, restored_dir, None).await;
    let status = |id: Uuid| {
        let (restored, token) = (&restored, &guest.token);
        async move { restored.get_json(&format!("/api/v1/uploads/{id}"), token).await.0 }
    };
    assert_eq!(status(deleted.0).await, StatusCode::NOT_FOUND, "deleted, as it was while the backup ran");
    assert_eq!(status(lost.0).await, StatusCode::OK, "the store's loss shows");
    assert_eq!(status(kept.0).await, StatusCode::OK);
    assert_eq!(restored.used_bytes(&guest).await, lost.1 + kept.1, "the deleted photo's quota is given back");
    restored.stop().await;
}
