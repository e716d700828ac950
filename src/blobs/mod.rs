//! Photo bytes, through `object_store`: a local directory by default, an S3-compatible
//! bucket for several instances, memory for tests. Every blob has a typed key. An upload is
//! written under a temporary key and moved to its final key only after its row committed; in
//! an S3 bucket, where a move is a copy, it is written straight to its final key (one PUT, or
//! a multipart upload whose id is recorded when it is larger than a part: `begin_upload`), and
//! removed by key and id should it never commit (`abandon`; by key alone, listing the uploads
//! open there, when the id was never recorded: `open_uploads`).
//! A local directory is its user's only (see `private_files::keep_files_private`), and its free
//! space can be read, so uploads stop before the disk fills.

mod local_writer;
mod open_uploads;
mod partial;
mod s3_writer;
pub(crate) mod tls;

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use bytes::Bytes;
use futures_util::StreamExt;
use object_store::aws::{AmazonS3, AmazonS3Builder, AmazonS3ConfigKey};
use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::prefix::PrefixStore;
use object_store::{
    ClientConfigKey, GetOptions, GetRange, GetResult, ObjectMeta, ObjectStore, ObjectStoreExt, WriteMultipart,
};
use tokio::sync::Semaphore;
use uuid::Uuid;

use local_writer::LocalWriter;
use object_store::multipart::MultipartStore;
use open_uploads::OpenUploads;
pub use partial::{Kept, PartialAppender, PartialState};
pub use s3_writer::RecordMultipart;
use s3_writer::S3Writer;

/// A blob as `BlobStore::get_whole_if` read it.
pub enum Read {
    Whole(Bytes),
    Streamed(GetResult),
}

/// Where a blob lives. Paths are built only here.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlobKey {
    /// An upload being received; named by the upload id it will get if it commits.
    Temp(Uuid),
    /// The photo as the guest sent it.
    Original {
        event_id: Uuid,
        upload_id: Uuid,
    },
    /// Derivatives, made after the commit: JPEG, upright, without any metadata.
    Thumb {
        event_id: Uuid,
        upload_id: Uuid,
    },
    Preview {
        event_id: Uuid,
        upload_id: Uuid,
    },
    /// The thumb as WebP. Uploads derived before WebP was made have none (their row says so:
    /// `UploadRow::webp_thumb`).
    ThumbWebp {
        event_id: Uuid,
        upload_id: Uuid,
    },
    /// The thumb as AVIF; likewise only for uploads derived since (`UploadRow::avif_thumb`).
    ThumbAvif {
        event_id: Uuid,
        upload_id: Uuid,
    },
}

const TEMP_DIR: &str = "tmp";

impl BlobKey {
    /// Every blob a committed upload can have: its original and its derivatives.
    pub fn all_for(event_id: Uuid, upload_id: Uuid) -> [BlobKey; 5] {
        let [thumb, preview, thumb_webp, thumb_avif] = Self::derivatives_for(event_id, upload_id);
        [BlobKey::Original { event_id, upload_id }, thumb, preview, thumb_webp, thumb_avif]
    }

    /// Every derivative an upload can have, in each format.
    pub fn derivatives_for(event_id: Uuid, upload_id: Uuid) -> [BlobKey; 4] {
        [
            BlobKey::Thumb { event_id, upload_id },
            BlobKey::Preview { event_id, upload_id },
            BlobKey::ThumbWebp { event_id, upload_id },
            BlobKey::ThumbAvif { event_id, upload_id },
        ]
    }

    /// The key a path names, for listings; `None` for anything Confetti does not write.
    pub fn parse(path: &Path) -> Option<BlobKey> {
        let parts: Vec<_> = path.parts().collect();
        let id = |i: usize| parts.get(i).and_then(|p| Uuid::try_parse(p.as_ref()).ok());
        match (parts.first()?.as_ref(), parts.len()) {
            (TEMP_DIR, 2) => Some(BlobKey::Temp(id(1)?)),
            ("originals", 3) => Some(BlobKey::Original { event_id: id(1)?, upload_id: id(2)? }),
            ("derivatives", 4) => {
                let (event_id, upload_id) = (id(1)?, id(2)?);
                match parts[3].as_ref() {
                    "thumb.jpg" => Some(BlobKey::Thumb { event_id, upload_id }),
                    "preview.jpg" => Some(BlobKey::Preview { event_id, upload_id }),
                    "thumb.webp" => Some(BlobKey::ThumbWebp { event_id, upload_id }),
                    "thumb.avif" => Some(BlobKey::ThumbAvif { event_id, upload_id }),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// The event and upload a final key belongs to; `None` for a temporary key.
    pub fn upload(&self) -> Option<(Uuid, Uuid)> {
        match *self {
            BlobKey::Temp(_) => None,
            BlobKey::Original { event_id, upload_id }
            | BlobKey::Thumb { event_id, upload_id }
            | BlobKey::Preview { event_id, upload_id }
            | BlobKey::ThumbWebp { event_id, upload_id }
            | BlobKey::ThumbAvif { event_id, upload_id } => Some((event_id, upload_id)),
        }
    }

    pub fn path(&self) -> Path {
        match self {
            BlobKey::Temp(id) => Path::from(format!("{TEMP_DIR}/{id}")),
            BlobKey::Original { event_id, upload_id } => Path::from(format!("originals/{event_id}/{upload_id}")),
            BlobKey::Thumb { event_id, upload_id } => {
                Path::from(format!("derivatives/{event_id}/{upload_id}/thumb.jpg"))
            }
            BlobKey::Preview { event_id, upload_id } => {
                Path::from(format!("derivatives/{event_id}/{upload_id}/preview.jpg"))
            }
            BlobKey::ThumbWebp { event_id, upload_id } => {
                Path::from(format!("derivatives/{event_id}/{upload_id}/thumb.webp"))
            }
            BlobKey::ThumbAvif { event_id, upload_id } => {
                Path::from(format!("derivatives/{event_id}/{upload_id}/thumb.avif"))
            }
        }
    }
}

#[derive(Clone, Debug)]
pub struct BlobStore {
    store: Arc<dyn ObjectStore>,
    /// How much a writer buffers before handing a part to the store: small for a local
    /// directory (memory per upload stays low), 5 MiB for S3 (its minimum part size).
    part_size: usize,
    /// The directory of a local store, whose half-written staging files need a sweep of their own.
    local_root: Option<std::path::PathBuf>,
    /// The last reading of the local disk's free space, and when it was taken.
    free_space: Arc<Mutex<Option<(Instant, u64)>>>,
    /// The last answer of `check`, and when it came, for readiness.
    health: Arc<Mutex<Option<(Instant, Health)>>>,
    /// An S3 bucket's multipart API and the key prefix: uploads are written straight to
    /// their final key as multipart uploads whose id is known.
    multipart: Option<Multipart>,
    /// Requests to an S3 bucket in flight at once (`S3_MAX_REQUESTS`); none for other stores.
    requests: Option<Arc<Semaphore>>,
}

#[derive(Clone)]
struct Multipart {
    store: Arc<AmazonS3>,
    prefix: String,
    /// The uploads open at a key, found by listing them: those whose id was never recorded.
    open: OpenUploads,
}

impl std::fmt::Debug for Multipart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Multipart").field("prefix", &self.prefix).finish_non_exhaustive()
    }
}

impl Multipart {
    fn path(&self, key: BlobKey) -> Path {
        match self.prefix.as_str() {
            "" => key.path(),
            prefix => Path::from(format!("{prefix}/{}", key.path())),
        }
    }
}

/// How long a reading of the free space is trusted: `statvfs` is cheap, but not free for every
/// upload of a busy event, and the disk does not fill in two seconds at the rates seen here.
const FREE_SPACE_FRESH_FOR: Duration = Duration::from_secs(2);
/// The store's last answer to `check`: why it failed, if it did.
type Health = Result<(), String>;

/// How long readiness trusts the store's last answer: a load balancer asking every second
/// costs the store one request every few seconds per instance.
const HEALTH_FRESH_FOR: Duration = Duration::from_secs(5);
/// A store that does not answer within this is not ready.
const HEALTH_TIMEOUT: Duration = Duration::from_secs(3);

impl BlobStore {
    /// `spec`: none → `<data_dir>/blobs`; `s3://bucket/prefix` (credentials and endpoint from
    /// the usual `AWS_*` variables); `memory:` → kept in memory (tests, benchmarks).
    pub fn open(spec: Option<&str>, data_dir: &std::path::Path) -> anyhow::Result<Self> {
        match spec {
            None | Some("") => {
                crate::private_files::private_dir(data_dir)?;
                Self::local(data_dir.join("blobs"))
            }
            Some("memory:") => Ok(Self {
                store: Arc::new(InMemory::new()),
                part_size: 256 * 1024,
                local_root: None,
                free_space: Arc::default(),
                health: Arc::default(),
                multipart: None,
                requests: None,
            }),
            Some(url) if url.starts_with("s3://") => Self::s3(url, s3_settings_from_env()),
            Some(dir) => Self::local(dir.strip_prefix("file://").unwrap_or(dir).into()),
        }
    }

    /// The bucket (and key prefix) `s3://bucket/prefix` names, reached with `settings`: the
    /// `AWS_*` environment in production, a test's own S3 server in the tests.
    pub fn s3(url: &str, settings: AmazonS3Builder) -> anyhow::Result<Self> {
        let rest = url.strip_prefix("s3://").unwrap_or(url);
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        anyhow::ensure!(!bucket.is_empty(), "the storage URL {url:?} names no bucket");
        tls::install_provider();
        let s3 = Arc::new(bounded_connections(settings).with_bucket_name(bucket).build()?);
        let prefix = prefix.trim_matches('/').to_owned();
        let store: Arc<dyn ObjectStore> = if prefix.is_empty() {
            Arc::clone(&s3) as Arc<dyn ObjectStore>
        } else {
            Arc::new(PrefixStore::new(Arc::clone(&s3), prefix.as_str()))
        };
        Ok(Self {
            store,
            part_size: 5 * 1024 * 1024,
            local_root: None,
            free_space: Arc::default(),
            health: Arc::default(),
            multipart: Some(Multipart { open: OpenUploads::new(Arc::clone(&s3))?, store: s3, prefix }),
            requests: Some(Arc::new(Semaphore::new(S3_MAX_REQUESTS))),
        })
    }

    /// A store given as it is (tests use one that fails on demand); written through its
    /// multipart API, as an S3 bucket is.
    pub fn with_store(store: Arc<dyn ObjectStore>) -> Self {
        Self {
            store,
            part_size: 256 * 1024,
            local_root: None,
            free_space: Arc::default(),
            health: Arc::default(),
            multipart: None,
            requests: None,
        }
    }

    fn local(dir: std::path::PathBuf) -> anyhow::Result<Self> {
        crate::private_files::private_dir(&dir)
            .with_context(|| format!("opening the photo directory {}", dir.display()))?;
        let local = LocalFileSystem::new_with_prefix(&dir)?.with_automatic_cleanup(true);
        Ok(Self {
            store: Arc::new(local),
            part_size: 256 * 1024,
            local_root: Some(dir),
            free_space: Arc::default(),
            health: Arc::default(),
            multipart: None,
            requests: None,
        })
    }

    /// The object store underneath and the part size its writers use, for copying whole trees
    /// (`backup`), where a path is any path, not only a `BlobKey`'s.
    pub fn object_store(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }

    pub fn part_size(&self) -> usize {
        self.part_size
    }

    /// What kind of store this is: `local`, `s3` or `memory` (any other store given as it is).
    pub fn kind(&self) -> &'static str {
        match (&self.local_root, &self.multipart) {
            (Some(_), _) => "local",
            (None, Some(_)) => "s3",
            (None, None) => "memory",
        }
    }

    /// Bytes an unprivileged writer may still use on the local store's filesystem; `None` for
    /// other stores (an S3 bucket does not fill) or when the system cannot tell. Read off the
    /// runtime, and at most every `FREE_SPACE_FRESH_FOR`.
    pub async fn free_bytes(&self) -> Option<u64> {
        self.local_root.as_ref()?;
        if let Some((at, free)) = *self.free_space.lock().unwrap_or_else(|e| e.into_inner())
            && at.elapsed() < FREE_SPACE_FRESH_FOR
        {
            return Some(free);
        }
        self.free_bytes_now().await
    }

    /// As `free_bytes`, read now: for a request that has been writing since the last reading
    /// (a long append fills the disk faster than the reading ages).
    pub async fn free_bytes_now(&self) -> Option<u64> {
        let root = self.local_root.clone()?;
        let free = match tokio::task::spawn_blocking(move || available_bytes(&root)).await {
            Ok(Ok(free)) => free,
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "could not read the photo store's free space");
                return None;
            }
            Err(_) => return None,
        };
        *self.free_space.lock().unwrap_or_else(|e| e.into_inner()) = Some((Instant::now(), free));
        Some(free)
    }

    /// One cheap request that needs the store reachable, the credentials accepted and the
    /// bucket present: listing a prefix nothing is written under.
    pub async fn check(&self) -> Result<(), String> {
        let prefix = Path::from("readiness-check");
        let listing = self.store.list_with_delimiter(Some(&prefix));
        match tokio::time::timeout(HEALTH_TIMEOUT, listing).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!("no answer within {} s", HEALTH_TIMEOUT.as_secs())),
        }
    }

    /// `check`, answered from its last result while that is at most `HEALTH_FRESH_FOR` old.
    pub async fn ready(&self) -> Result<(), String> {
        if let Some((at, result)) = &*self.health.lock().unwrap_or_else(|e| e.into_inner())
            && at.elapsed() < HEALTH_FRESH_FOR
        {
            return result.clone();
        }
        let result = self.check().await;
        if let Err(e) = &result {
            tracing::warn!(error = %e, "the photo store does not answer");
        }
        *self.health.lock().unwrap_or_else(|e| e.into_inner()) = Some((Instant::now(), result.clone()));
        result
    }

    /// The key `begin_upload` writes a new upload's bytes to.
    pub fn upload_key(&self, event_id: Uuid, upload_id: Uuid) -> BlobKey {
        match self.multipart {
            Some(_) => BlobKey::Original { event_id, upload_id },
            None => BlobKey::Temp(upload_id),
        }
    }

    /// Where a new upload's bytes go until its row commits, and how. In an S3 bucket: its final
    /// key, in one PUT once the bytes are all there, or, past one part, as a multipart upload
    /// created through `record` (which records its id for the other instances) and completed
    /// when the bytes are all there; the row, committed later, is what makes it a photo, and
    /// `staged_uploads` records it meanwhile. Elsewhere: a temporary key, moved to the final
    /// one after the commit (a rename on disk); `record` is not called.
    pub async fn begin_upload(
        &self,
        event_id: Uuid,
        upload_id: Uuid,
        record: RecordMultipart,
    ) -> object_store::Result<BlobWriter> {
        let key = self.upload_key(event_id, upload_id);
        if let Some(multipart) = &self.multipart {
            let writer = S3Writer::new(Arc::clone(&multipart.store), multipart.path(key), self.part_size, record);
            return Ok(BlobWriter { key, to: To::S3(writer) });
        }
        if let Some(root) = &self.local_root {
            return Ok(BlobWriter { key, to: To::Local(LocalWriter::new(root.join(key.path().as_ref()))) });
        }
        let upload = self.store.put_multipart(&key.path()).await?;
        Ok(BlobWriter { key, to: To::Store(WriteMultipart::new_with_chunk_size(upload, self.part_size)) })
    }

    /// Removes what an upload that will never commit left: its blob and, on S3, its
    /// multipart upload (aborted by id; one already completed or aborted is fine), and on a
    /// local disk its half-written staging file. Repeatable. `search`: the upload may have
    /// begun a multipart upload whose id is not `multipart_id` (its instance died, or its
    /// request ended, between the store's answer and the record), so every one open at the
    /// key is aborted too, where the store can list them (`open_uploads`).
    pub async fn abandon(&self, key: BlobKey, multipart_id: Option<&str>, search: bool) -> object_store::Result<()> {
        if let Some(multipart) = &self.multipart {
            let path = multipart.path(key);
            if let Some(id) = multipart_id {
                match multipart.store.abort_multipart(&path, &id.to_owned()).await {
                    Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                    // S3 answers NoSuchUpload for an upload already completed or aborted; other
                    // S3-compatible servers answer that differently. The blob is deleted below
                    // either way; an upload that really stayed open is found by `search`.
                    Err(e) => tracing::debug!(error = %e, ?key, "aborting a multipart upload"),
                }
            }
            if search
                && let Some(aborted) = multipart.open.abort_all(&path, multipart_id).await?
                && aborted > 0
            {
                tracing::info!(aborted, ?key, "aborted multipart uploads whose id was never recorded");
            }
        }
        if let Some(root) = &self.local_root {
            let mut staging = root.join(key.path().as_ref()).into_os_string();
            staging.push("#upload");
            if let Err(e) = tokio::fs::remove_file(&staging).await
                && e.kind() != std::io::ErrorKind::NotFound
            {
                return Err(local_error(e));
            }
        }
        self.delete(key).await
    }

    /// Where a blob is on the local disk, for a store that is one.
    pub fn local_path(&self, key: BlobKey) -> Option<std::path::PathBuf> {
        self.local_root.as_ref().map(|root| root.join(key.path().as_ref()))
    }

    /// Writes a small blob in one piece (derivatives), replacing what was there.
    pub async fn put(&self, key: BlobKey, bytes: Bytes) -> object_store::Result<()> {
        self.bounded(self.store.put(&key.path(), bytes.into())).await.map(|_| ())
    }

    /// Reads a whole blob (derivative work reads the original it decodes).
    pub async fn get_all(&self, key: BlobKey) -> object_store::Result<Bytes> {
        self.bounded(async { self.store.get(&key.path()).await?.bytes().await }).await
    }

    /// A committed upload's original: under its final key or, between the commit and the move
    /// to that key (or after a crash in between, until the sweep moves it), its temporary one.
    /// A move that lands between the two looks finds it under the final key again.
    pub async fn get_original(
        &self,
        event_id: Uuid,
        upload_id: Uuid,
        range: Option<GetRange>,
    ) -> object_store::Result<GetResult> {
        let original = BlobKey::Original { event_id, upload_id };
        match self.get(original, range.clone()).await {
            Err(object_store::Error::NotFound { .. }) => {
                match self.get(BlobKey::Temp(upload_id), range.clone()).await {
                    Err(object_store::Error::NotFound { .. }) => self.get(original, range).await,
                    other => other,
                }
            }
            other => other,
        }
    }

    /// Moves a blob to its final key (a rename on disk, copy + delete on S3).
    pub async fn rename(&self, from: BlobKey, to: BlobKey) -> object_store::Result<()> {
        self.bounded(self.store.rename(&from.path(), &to.path())).await
    }

    /// Deletes a blob; one that is already gone is fine.
    pub async fn delete(&self, key: BlobKey) -> object_store::Result<()> {
        match self.bounded(self.store.delete(&key.path())).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    pub async fn head(&self, key: BlobKey) -> object_store::Result<ObjectMeta> {
        self.bounded(self.store.head(&key.path())).await
    }

    pub async fn get(&self, key: BlobKey, range: Option<GetRange>) -> object_store::Result<GetResult> {
        self.bounded(self.store.get_opts(&key.path(), GetOptions { range, ..Default::default() })).await
    }

    /// A blob read whole when `whole` says so of its length (within its place among the
    /// requests in flight), else as a stream.
    pub async fn get_whole_if(&self, key: BlobKey, whole: impl FnOnce(u64) -> bool) -> object_store::Result<Read> {
        self.bounded(async {
            let blob = self.store.get(&key.path()).await?;
            match whole(blob.meta.size) {
                true => blob.bytes().await.map(Read::Whole),
                false => Ok(Read::Streamed(blob)),
            }
        })
        .await
    }

    /// `request`, once one of the store's places for requests in flight is free.
    async fn bounded<T>(&self, request: impl Future<Output = object_store::Result<T>>) -> object_store::Result<T> {
        let Some(requests) = &self.requests else {
            return request.await;
        };
        let _place = match tokio::time::timeout(S3_REQUEST_WAIT, requests.acquire()).await {
            Ok(Ok(place)) => place,
            _ => {
                let why = format!("no place among the requests in flight within {} s", S3_REQUEST_WAIT.as_secs());
                return Err(object_store::Error::Generic { store: "S3", source: why.into() });
            }
        };
        request.await
    }

    pub async fn get_range(&self, key: BlobKey, range: std::ops::Range<u64>) -> object_store::Result<Bytes> {
        self.bounded(self.store.get_range(&key.path(), range)).await
    }

    /// Every temporary blob, with its age, for the start-up sweep.
    pub async fn list_temp(&self) -> object_store::Result<Vec<(Uuid, ObjectMeta)>> {
        let found = self.list(TEMP_DIR).await?;
        Ok(found
            .into_iter()
            .filter_map(|(key, meta)| if let BlobKey::Temp(id) = key { Some((id, meta)) } else { None })
            .collect())
    }

    /// Every blob under a final key (originals and derivatives), with its age, for the sweep.
    pub async fn list_final(&self) -> object_store::Result<Vec<(BlobKey, ObjectMeta)>> {
        let mut found = self.list("originals").await?;
        found.extend(self.list("derivatives").await?);
        Ok(found)
    }

    async fn list(&self, prefix: &str) -> object_store::Result<Vec<(BlobKey, ObjectMeta)>> {
        let mut found = Vec::new();
        let mut listing = self.store.list(Some(&Path::from(prefix)));
        while let Some(meta) = listing.next().await {
            let meta = meta?;
            if let Some(key) = BlobKey::parse(&meta.location) {
                found.push((key, meta));
            }
        }
        Ok(found)
    }
}

impl BlobStore {
    /// A local store writes a blob to `<key>#<n>` and renames it when complete; such staging
    /// files are invisible to listings, so after a crash mid-upload they are found here.
    /// Returns how many older than `min_age` were deleted.
    pub async fn sweep_local_staging(&self, min_age: std::time::Duration) -> std::io::Result<usize> {
        let Some(root) = &self.local_root else {
            return Ok(0);
        };
        let mut entries = match tokio::fs::read_dir(root.join(TEMP_DIR)).await {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(e),
        };
        let mut deleted = 0;
        while let Some(entry) = entries.next_entry().await? {
            let staging = entry.file_name().to_str().is_some_and(|name| name.contains('#'));
            let age = entry.metadata().await?.modified()?.elapsed().unwrap_or_default();
            if staging && age >= min_age {
                tokio::fs::remove_file(entry.path()).await?;
                deleted += 1;
            }
        }
        Ok(deleted)
    }
}

/// Streams one upload into the store: into a local directory directly (`LocalWriter`), into an
/// S3 bucket at the final key (`S3Writer`), into any other store as a
/// multipart upload with a bounded number of parts in flight.
pub struct BlobWriter {
    key: BlobKey,
    to: To,
}

enum To {
    Local(LocalWriter),
    S3(S3Writer),
    Store(WriteMultipart),
}

impl BlobWriter {
    /// Where the blob will be once finished.
    pub fn key(&self) -> BlobKey {
        self.key
    }

    pub async fn write(&mut self, chunk: Bytes) -> object_store::Result<()> {
        match &mut self.to {
            To::Local(local) => local.write(chunk).await.map_err(local_error),
            To::S3(s3) => s3.write(chunk).await,
            To::Store(multipart) => {
                multipart.wait_for_capacity(2).await?;
                multipart.write(&chunk);
                Ok(())
            }
        }
    }

    pub async fn finish(self) -> object_store::Result<()> {
        match self.to {
            To::Local(local) => local.finish().await.map_err(local_error),
            To::S3(s3) => s3.finish().await,
            To::Store(multipart) => multipart.finish().await.map(|_| ()),
        }
    }

    pub async fn abort(self) -> object_store::Result<()> {
        match self.to {
            To::Local(local) => local.abort().await.map_err(local_error),
            To::S3(s3) => s3.abort().await,
            To::Store(multipart) => multipart.abort().await,
        }
    }
}

/// The `AWS_*` environment. Request bodies are sent without their SHA-256 in the signature
/// (`UNSIGNED-PAYLOAD`) unless `AWS_UNSIGNED_PAYLOAD` says otherwise: TLS to the store already
/// protects them, and hashing every body for the signature cost a fifth of the S3 throughput
/// (`docs/benchmarks.md`, "Scale-out"). The request itself stays signed.
/// Requests one instance has in flight to an S3 bucket at once through `BlobStore`'s reads,
/// writes and deletes; more wait for one of them to end. A streamed body (an original sent to
/// a phone) holds its connection but not a place here, so slow downloads cannot starve the
/// thumbs; uploads' multipart writers go beside this bound (one part per request at a time).
const S3_MAX_REQUESTS: usize = 32;
/// How long a request waits for a place before it fails as the store's error.
const S3_REQUEST_WAIT: Duration = Duration::from_secs(30);
/// Idle connections to the bucket kept for reuse; more are closed once their request ends.
const S3_POOL_MAX_IDLE: usize = 16;
/// An idle connection is closed after this.
const S3_POOL_IDLE_TIMEOUT: &str = "30 seconds";

/// `settings` with the connection pool bounded, unless the operator set its bounds
/// (`AWS_POOL_MAX_IDLE_PER_HOST`, `AWS_POOL_IDLE_TIMEOUT`): without a bound, a burst of
/// thumb fetches leaves one idle connection per request it ran at once, hundreds per
/// instance.
fn bounded_connections(mut settings: AmazonS3Builder) -> AmazonS3Builder {
    let bounds = [
        (ClientConfigKey::PoolMaxIdlePerHost, S3_POOL_MAX_IDLE.to_string()),
        (ClientConfigKey::PoolIdleTimeout, S3_POOL_IDLE_TIMEOUT.to_owned()),
    ];
    for (key, value) in bounds {
        let key = AmazonS3ConfigKey::Client(key);
        if settings.get_config_value(&key).is_none() {
            settings = settings.with_config(key, value);
        }
    }
    settings
}

fn s3_settings_from_env() -> AmazonS3Builder {
    let settings = AmazonS3Builder::from_env();
    match std::env::var_os("AWS_UNSIGNED_PAYLOAD") {
        Some(_) => settings,
        None => settings.with_unsigned_payload(true),
    }
}

/// `statvfs`: the blocks available to unprivileged users (not the root reserve) times their size.
fn available_bytes(dir: &std::path::Path) -> std::io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes())?;
    // SAFETY: `statvfs` is plain old data; all zeroes is a valid value of it.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is NUL-terminated and outlives the call; `stat` is a valid place to write.
    if unsafe { libc::statvfs(path.as_ptr(), &mut stat) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
    Ok(u64::from(stat.f_bavail).saturating_mul(u64::from(stat.f_frsize)))
}

fn local_error(e: std::io::Error) -> object_store::Error {
    object_store::Error::Generic { store: "local", source: Box::new(e) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_connection_pool_to_a_bucket_is_bounded_unless_the_operator_bounded_it() {
        let (idle, timeout) = (ClientConfigKey::PoolMaxIdlePerHost, ClientConfigKey::PoolIdleTimeout);
        let ours = bounded_connections(AmazonS3Builder::new());
        assert_eq!(ours.get_config_value(&AmazonS3ConfigKey::Client(idle)), Some(S3_POOL_MAX_IDLE.to_string()));
        assert!(ours.get_config_value(&AmazonS3ConfigKey::Client(timeout)).is_some());
        let theirs = AmazonS3Builder::new().with_config(AmazonS3ConfigKey::Client(idle), "4");
        let kept = bounded_connections(theirs);
        assert_eq!(kept.get_config_value(&AmazonS3ConfigKey::Client(idle)).as_deref(), Some("4"));
    }

    #[tokio::test]
    async fn requests_beyond_the_bound_wait_for_a_place() {
        let mut store = BlobStore::open(Some("memory:"), std::path::Path::new("/nonexistent")).expect("store");
        store.requests = Some(Arc::new(Semaphore::new(1)));
        let held = store.requests.as_ref().expect("bound").clone().acquire_owned().await.expect("place");
        let key = BlobKey::Temp(Uuid::nil());
        let waiting = tokio::time::timeout(Duration::from_millis(100), store.put(key, Bytes::from_static(b"x")));
        assert!(waiting.await.is_err(), "the second request waits while the only place is taken");
        drop(held);
        store.put(key, Bytes::from_static(b"x")).await.expect("then it goes");
        assert_eq!(store.get_all(key).await.expect("read"), Bytes::from_static(b"x"));
    }
}
