//! The upload use case called without a server: the service built through the constructor
//! production uses, on a fresh database and a blob directory of its own, fed parts from
//! memory as a resumable upload would feed them. What it leaves behind (rows, blobs, quota)
//! is read from the database and the directory.

mod common;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use common::s3::S3Server;
use common::{Backend, TestDatabase, all_files, fresh_postgres_database, images, s3_store};
use confetti::blobs::BlobStore;
use confetti::blocking::Blocking;
use confetti::db::Db;
use confetti::db::guests::GuestRow;
use confetti::domain::{Caption, ClientUploadId, EventName, FileName, OrganiserPassword};
use confetti::events::{NewEvent, create_event};
use confetti::ingest::{Ingest, IngestError, IngestLimits, Ingested, Part, PartsError, UploadParts};
use confetti::jobs::blob_jobs::BlobJobs;
use confetti::jobs::derivatives::DerivativeQueue;
use confetti::jobs::instances::Instance;
use uuid::Uuid;

every_store!(
    a_new_upload_is_stored_with_its_row_blob_and_quota,
    the_same_key_again_is_a_replay_that_reads_no_bytes_and_stores_no_second_row,
    a_file_that_is_not_an_image_leaves_no_row_no_blob_and_no_quota,
    two_concurrent_uploads_with_one_key_store_one_photo,
);

/// The service on a fresh database and blob directory, and one guest of one event.
struct Fixture {
    ingest: Arc<Ingest>,
    db: Db,
    guest: GuestRow,
    blob_dir: PathBuf,
    _data_dir: tempfile::TempDir,
    _database: Option<TestDatabase>,
    _s3: Option<S3Server>,
}

impl Fixture {
    async fn new(backend: Backend) -> Self {
        let data_dir = tempfile::tempdir().expect("temp dir");
        let database = match backend {
            Backend::Sqlite => None,
            Backend::Postgres | Backend::S3 => Some(fresh_postgres_database().await),
        };
        let s3 = (backend == Backend::S3).then(S3Server::start);
        let db = Db::connect(database.as_deref(), data_dir.path()).await.expect("database");
        let blobs = match &s3 {
            Some(s3) => s3_store(s3),
            None => BlobStore::open(None, data_dir.path()).expect("blob store"),
        };
        let blocking = Blocking::new();
        let event = create_event(
            &db,
            &blocking,
            NewEvent {
                name: EventName::parse("Anna & Ben").expect("name"),
                password: OrganiserPassword::parse("correct horse").expect("password"),
                guest_quota_bytes: 1 << 30,
                storage_cap_bytes: 1 << 40,
                name_chosen: true,
            },
        )
        .await
        .expect("event");
        let guest_id = Uuid::now_v7();
        db.insert_guest(guest_id, event.id, "Anna", Uuid::new_v4().as_bytes()).await.expect("guest");
        let guest = db.guest_by_id(guest_id).await.expect("read guest").expect("the guest");
        let limits = IngestLimits {
            max_upload_bytes: 50 * 1024 * 1024,
            max_image_pixels: 100_000_000,
            max_video_bytes: 2 * 1024 * 1024 * 1024,
            max_video_seconds: 600,
            min_free_bytes: 0,
            webhook_delay: Duration::from_secs(30),
        };
        let derivatives = Arc::new(DerivativeQueue::new(Duration::from_secs(60)));
        let instance = Instance::register(db.clone(), blobs.clone()).await.expect("instance");
        let blob_jobs = BlobJobs::new(db.clone(), blobs.clone(), instance.id, instance.stopping());
        let ingest = Arc::new(Ingest::new(db.clone(), blobs, blocking, limits, derivatives, blob_jobs, instance.id));
        let blob_dir = s3.as_ref().map(S3Server::bucket_dir).unwrap_or_else(|| data_dir.path().join("blobs"));
        Fixture { ingest, db, guest, blob_dir, _data_dir: data_dir, _database: database, _s3: s3 }
    }

    async fn upload(&self, parts: &mut MemoryParts) -> Result<Ingested, IngestError> {
        self.ingest.begin(self.guest.clone(), None).await?.run(parts).await
    }

    async fn rows(&self) -> i64 {
        self.db.guest_upload_count(self.guest.id).await.expect("count uploads")
    }

    async fn used_bytes(&self) -> i64 {
        self.db.guest_by_id(self.guest.id).await.expect("read guest").expect("the guest").used_bytes
    }

    fn blob_files(&self) -> Vec<PathBuf> {
        all_files(&self.blob_dir)
    }
}

/// An upload's parts held in memory: a key, a caption, a file in chunks of 64 KiB.
struct MemoryParts {
    parts: VecDeque<(Part, Option<Vec<u8>>)>,
    file: VecDeque<Bytes>,
    /// File chunks the use case read.
    chunks_read: Arc<AtomicUsize>,
}

impl MemoryParts {
    fn new(key: Uuid, file: &[u8]) -> Self {
        let key = ClientUploadId::parse(&key.to_string()).expect("a key");
        let caption = Caption::parse("first dance").expect("caption");
        let parts = VecDeque::from([
            (Part::Key(key), None),
            (Part::Caption(caption), None),
            (Part::File(FileName::parse(Some("IMG_0001.jpg"))), Some(file.to_vec())),
        ]);
        Self { parts, file: VecDeque::new(), chunks_read: Arc::default() }
    }
}

impl UploadParts for MemoryParts {
    async fn next_part(&mut self) -> Result<Option<Part>, PartsError> {
        let Some((part, file)) = self.parts.pop_front() else { return Ok(None) };
        self.file = file.unwrap_or_default().chunks(64 * 1024).map(Bytes::copy_from_slice).collect();
        Ok(Some(part))
    }

    async fn file_chunk(&mut self) -> Result<Option<Bytes>, PartsError> {
        let chunk = self.file.pop_front();
        if chunk.is_some() {
            self.chunks_read.fetch_add(1, Ordering::SeqCst);
        }
        Ok(chunk)
    }
}

fn created(outcome: Result<Ingested, IngestError>) -> confetti::db::uploads::UploadRow {
    match outcome {
        Ok(Ingested::Created(row)) => row,
        Ok(Ingested::Replayed(row)) => panic!("expected a new upload, got a replay of {}", row.id),
        Err(e) => panic!("expected a new upload, got {e:?}"),
    }
}

async fn a_new_upload_is_stored_with_its_row_blob_and_quota(backend: Backend) {
    let fixture = Fixture::new(backend).await;
    let photo = images::jpeg(640, 480);
    let key = Uuid::new_v4();

    let row = created(fixture.upload(&mut MemoryParts::new(key, &photo)).await);

    assert_eq!(row.client_upload_id, Some(key));
    assert_eq!(row.filename, "IMG_0001.jpg");
    assert_eq!(row.caption.as_deref(), Some("first dance"));
    assert_eq!((row.width, row.height, row.bytes), (640, 480, photo.len() as i64));
    assert_eq!(fixture.rows().await, 1);
    assert_eq!(fixture.used_bytes().await, photo.len() as i64, "the quota is charged");
    let original = fixture.blob_dir.join(format!("originals/{}/{}", row.event_id, row.id));
    assert_eq!(fixture.blob_files(), vec![original.clone()], "one blob, at its final key");
    assert_eq!(std::fs::read(&original).expect("the original"), photo);
}

async fn the_same_key_again_is_a_replay_that_reads_no_bytes_and_stores_no_second_row(backend: Backend) {
    let fixture = Fixture::new(backend).await;
    let photo = images::jpeg(320, 240);
    let key = Uuid::new_v4();
    let first = created(fixture.upload(&mut MemoryParts::new(key, &photo)).await);

    let mut retry = MemoryParts::new(key, &photo);
    let replayed = match fixture.upload(&mut retry).await {
        Ok(Ingested::Replayed(row)) => row,
        other => panic!("expected a replay, got {other:?}"),
    };

    assert_eq!(replayed.id, first.id);
    assert_eq!(retry.chunks_read.load(Ordering::SeqCst), 0, "the key came first: the file was skipped");
    assert_eq!(fixture.rows().await, 1, "no second row");
    assert_eq!(fixture.used_bytes().await, photo.len() as i64, "charged once");
    assert_eq!(fixture.blob_files().len(), 1, "no second blob");
}

async fn a_file_that_is_not_an_image_leaves_no_row_no_blob_and_no_quota(backend: Backend) {
    let fixture = Fixture::new(backend).await;
    let text = "this is a shopping list, not a photo\n".repeat(100);

    let mut parts = MemoryParts::new(Uuid::new_v4(), text.as_bytes());
    let outcome = fixture.upload(&mut parts).await;

    assert!(matches!(outcome, Err(IngestError::UnsupportedMediaType(_))), "{outcome:?}");
    assert!(parts.chunks_read.load(Ordering::SeqCst) > 0, "the file was read before it was refused");
    assert_eq!(fixture.rows().await, 0, "no row");
    assert_eq!(fixture.blob_files(), Vec::<PathBuf>::new(), "no blob, not even a temporary one");
    assert_eq!(fixture.used_bytes().await, 0, "no quota charged");
}

async fn two_concurrent_uploads_with_one_key_store_one_photo(backend: Backend) {
    let fixture = Arc::new(Fixture::new(backend).await);
    let photo = images::jpeg_of_about(2_000_000);
    let key = Uuid::new_v4();

    let attempts: Vec<_> = (0..2)
        .map(|_| {
            let (fixture, photo) = (Arc::clone(&fixture), photo.clone());
            tokio::spawn(async move { fixture.upload(&mut MemoryParts::new(key, &photo)).await })
        })
        .collect();
    let mut created = Vec::new();
    let mut replayed = Vec::new();
    for attempt in attempts {
        match attempt.await.expect("the attempt ran") {
            Ok(Ingested::Created(row)) => created.push(row.id),
            Ok(Ingested::Replayed(row)) => replayed.push(row.id),
            Err(e) => panic!("an attempt failed: {e:?}"),
        }
    }

    assert_eq!((created.len(), replayed.len()), (1, 1), "one stored, the other replayed it");
    assert_eq!(created, replayed, "both answer the same upload");
    assert_eq!(fixture.rows().await, 1, "one row");
    assert_eq!(fixture.used_bytes().await, photo.len() as i64, "charged once");
    assert_eq!(fixture.blob_files().len(), 1, "the loser's temporary blob is gone");
}
