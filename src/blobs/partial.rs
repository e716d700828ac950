//! The bytes of a resumable upload between its requests, kept so that any instance can go on
//! where the last request stopped.
//!
//! - A local directory: one file, `partial/<id>`, appended to. A request first cuts it back to
//!   the offset the database recorded (bytes a cut request wrote after its last record are not
//!   counted, so they are written again); an offset is recorded once its bytes are written out
//!   to the kernel. They are not synced to the disk (neither are a one-request upload's; syncing
//!   every few MiB halved the throughput, docs/benchmarks.md): after a power cut a file shorter
//!   than its offset is found at the next append, the resource is cancelled, and the client
//!   creates it again and sends the file from its start.
//!   When complete it is renamed to the upload's temporary key, where a one-request upload's
//!   bytes would be.
//! - An S3 bucket: a multipart upload at the upload's final key, in parts of one size (at least
//!   5 MiB, S3's minimum). The bytes after the last whole part are written, at the end of each
//!   request, to a tail object (`partial/<id>.tail`) and read back by the next request, which
//!   sends them with its own as the next part. The parts' ids are kept in the database
//!   (object_store cannot list them), so completing needs nothing from the instance that sent
//!   them. The upload's id is recorded with its first part's: a request that dies in between
//!   leaves an upload no row names, at the key the resource's row does name, so the request that
//!   sends the first part again, and the removal of the resource, abort every upload open at
//!   that key first (`open_uploads`; only the lease holder writes there).
//!
//! Other stores (memory, in tests) do not offer resumable uploads.

use std::io::{Seek, SeekFrom};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use object_store::aws::AmazonS3;
use object_store::multipart::{MultipartStore, PartId};
use object_store::path::Path;
use object_store::{ObjectStoreExt, PutPayload};
use uuid::Uuid;

use super::local_writer::Batches;
use super::open_uploads::OpenUploads;
use super::{BlobKey, BlobStore, local_error};

/// S3's smallest part (but the last).
const MIN_PART: u64 = 5 * 1024 * 1024;
/// S3's most parts in one multipart upload.
const MAX_PARTS: u64 = 10_000;
/// A local resource's offset is recorded after about this many bytes.
const LOCAL_CHECKPOINT: u64 = 32 * 1024 * 1024;

/// What the database says of a resource's bytes.
#[derive(Clone, Debug)]
pub struct PartialState {
    pub id: Uuid,
    pub event_id: Uuid,
    pub offset: u64,
    pub part_size: u64,
    pub multipart_id: Option<String>,
    pub parts: Vec<String>,
    pub tail_bytes: u64,
}

/// Bytes made safe: what the database may now record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kept {
    pub offset: u64,
    pub multipart_id: Option<String>,
    pub parts: Vec<String>,
    pub tail_bytes: u64,
}

pub enum PartialAppender {
    Local(LocalAppend),
    S3(S3Append),
}

impl BlobStore {
    /// The part size for a resource of `length` bytes, or `None` where this store does not
    /// keep partial uploads.
    pub fn resumable_part_size(&self, length: u64) -> Option<u64> {
        if self.multipart.is_some() {
            return Some(MIN_PART.max(length.div_ceil(MAX_PARTS)));
        }
        self.local_root.as_ref().map(|_| LOCAL_CHECKPOINT)
    }

    /// Where a resource's bytes are on the local disk, for a store that is one.
    pub fn partial_file(&self, id: Uuid) -> Option<std::path::PathBuf> {
        self.local_root.as_ref().map(|root| root.join("partial").join(id.to_string()))
    }

    /// Opens a resource's bytes for appending at the offset the database recorded. `NotFound`
    /// when fewer bytes are there than it says (the resource's state is lost).
    pub async fn partial_appender(&self, state: PartialState) -> object_store::Result<PartialAppender> {
        if let Some(multipart) = &self.multipart {
            let store = Arc::clone(&multipart.store);
            let path = multipart.path(BlobKey::Original { event_id: state.event_id, upload_id: state.id });
            let tail_path = multipart.tail_path(state.id);
            let mut buffer = BytesMut::new();
            if state.tail_bytes > 0 {
                let tail = store.get_range(&tail_path, 0..state.tail_bytes).await?;
                if (tail.len() as u64) < state.tail_bytes {
                    return Err(lost(state.id));
                }
                buffer.extend_from_slice(&tail);
            }
            let open = multipart.open.clone();
            return Ok(PartialAppender::S3(S3Append { store, open, path, tail_path, state, buffer }));
        }
        let Some(file) = self.partial_file(state.id) else {
            return Err(no_partials());
        };
        let offset = state.offset;
        let opened = tokio::task::spawn_blocking(move || open_local(&file, offset)).await;
        let file = match opened {
            Ok(Ok(Some(file))) => file,
            Ok(Ok(None)) => return Err(lost(state.id)),
            Ok(Err(e)) => return Err(local_error(e)),
            Err(e) => return Err(local_error(std::io::Error::other(e))),
        };
        let root = self.local_root.clone().unwrap_or_default();
        let path = root.join("partial").join(state.id.to_string());
        Ok(PartialAppender::Local(LocalAppend {
            id: state.id,
            root,
            batches: Batches::new(Some(file), path),
            written: state.offset,
            kept: state.offset,
        }))
    }

    /// The first `upto` bytes kept (fewer if fewer are): the head of a file whose first
    /// request was cut before its header had all arrived.
    pub async fn partial_head(&self, state: &PartialState, upto: u64) -> object_store::Result<Bytes> {
        let upto = upto.min(state.offset);
        if upto == 0 {
            return Ok(Bytes::new());
        }
        if let Some(multipart) = &self.multipart {
            // Below one part the kept bytes are all in the tail object.
            if !state.parts.is_empty() {
                return Ok(Bytes::new());
            }
            return multipart.store.get_range(&multipart.tail_path(state.id), 0..upto.min(state.tail_bytes)).await;
        }
        let Some(file) = self.partial_file(state.id) else {
            return Err(no_partials());
        };
        let read = tokio::task::spawn_blocking(move || -> std::io::Result<Vec<u8>> {
            use std::io::Read;
            let mut head = Vec::new();
            std::fs::File::open(file)?.take(upto).read_to_end(&mut head)?;
            Ok(head)
        });
        match read.await {
            Ok(Ok(head)) => Ok(head.into()),
            Ok(Err(e)) => Err(local_error(e)),
            Err(e) => Err(local_error(std::io::Error::other(e))),
        }
    }

    /// Removes what a resource that will never complete keeps: its file, or its multipart
    /// upload and tail object, and its assembled bytes if it got that far (a completion that
    /// failed inside). Repeatable. Never for a completed resource: its bytes are its photo's.
    pub async fn remove_partial(
        &self,
        event_id: Uuid,
        id: Uuid,
        multipart_id: Option<&str>,
    ) -> object_store::Result<()> {
        if let Some(multipart) = &self.multipart {
            let path = multipart.path(BlobKey::Original { event_id, upload_id: id });
            if let Some(upload) = multipart_id
                && let Err(e) = multipart.store.abort_multipart(&path, &upload.to_owned()).await
            {
                // Already completed or aborted (S3 says NoSuchUpload).
                tracing::debug!(error = %e, %id, "aborting a resumable upload's multipart upload");
            }
            // And one a request created but died before recording.
            multipart.open.abort_all(&path, multipart_id).await?;
            match multipart.store.delete(&multipart.tail_path(id)).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        } else if let Some(file) = self.partial_file(id)
            && let Err(e) = tokio::fs::remove_file(&file).await
            && e.kind() != std::io::ErrorKind::NotFound
        {
            return Err(local_error(e));
        }
        self.delete(self.upload_key(event_id, id)).await
    }
}

impl super::Multipart {
    fn tail_path(&self, id: Uuid) -> Path {
        match self.prefix.as_str() {
            "" => Path::from(format!("partial/{id}.tail")),
            prefix => Path::from(format!("{prefix}/partial/{id}.tail")),
        }
    }
}

fn no_partials() -> object_store::Error {
    object_store::Error::Generic { store: "memory", source: "this store keeps no partial uploads".into() }
}

fn lost(id: Uuid) -> object_store::Error {
    object_store::Error::NotFound {
        path: format!("partial/{id}"),
        source: "the resumable upload's bytes are gone".into(),
    }
}

impl PartialAppender {
    /// Bytes taken so far, kept or not yet.
    pub fn offset(&self) -> u64 {
        match self {
            PartialAppender::Local(local) => local.written,
            PartialAppender::S3(s3) => s3.state.parts.len() as u64 * s3.state.part_size + s3.buffer.len() as u64,
        }
    }

    /// Appends a chunk; `Some` when bytes were made safe on the way (a part sent, or a local
    /// file written out), for the database to record.
    pub async fn write(&mut self, chunk: Bytes) -> object_store::Result<Option<Kept>> {
        match self {
            PartialAppender::Local(local) => local.write(chunk).await.map_err(local_error),
            PartialAppender::S3(s3) => s3.write(chunk).await,
        }
    }

    /// The request ends without completing the file: everything taken is made safe.
    pub async fn keep(self) -> object_store::Result<Kept> {
        match self {
            PartialAppender::Local(mut local) => local.sync().await.map_err(local_error),
            PartialAppender::S3(s3) => s3.keep().await,
        }
    }

    /// Every byte is there: the file goes where a one-request upload's would be, and this says
    /// where.
    pub async fn complete(self) -> object_store::Result<BlobKey> {
        match self {
            PartialAppender::Local(local) => local.complete().await.map_err(local_error),
            PartialAppender::S3(s3) => s3.complete().await,
        }
    }
}

/// Opens the file at `offset`; `None` when it holds fewer bytes.
fn open_local(file: &std::path::Path, offset: u64) -> std::io::Result<Option<std::fs::File>> {
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut handle = std::fs::OpenOptions::new().create(true).truncate(false).read(true).write(true).open(file)?;
    let len = handle.metadata()?.len();
    if len < offset {
        return Ok(None);
    }
    // Bytes after the recorded offset were never counted: they are written again.
    handle.set_len(offset)?;
    handle.seek(SeekFrom::Start(offset))?;
    Ok(Some(handle))
}

pub struct LocalAppend {
    id: Uuid,
    root: std::path::PathBuf,
    batches: Batches,
    /// Bytes taken (written or gathered).
    written: u64,
    /// Bytes synced and reported.
    kept: u64,
}

impl LocalAppend {
    async fn write(&mut self, chunk: Bytes) -> std::io::Result<Option<Kept>> {
        self.written += chunk.len() as u64;
        self.batches.write(chunk).await?;
        if self.written - self.kept >= LOCAL_CHECKPOINT {
            return self.sync().await.map(Some);
        }
        Ok(None)
    }

    /// Writes what is gathered: every byte taken is kept.
    async fn sync(&mut self) -> std::io::Result<Kept> {
        self.batches.write_out().await?;
        self.kept = self.written;
        Ok(Kept { offset: self.written, multipart_id: None, parts: Vec::new(), tail_bytes: 0 })
    }

    async fn complete(mut self) -> std::io::Result<BlobKey> {
        self.sync().await?;
        let key = BlobKey::Temp(self.id);
        let from = self.root.join("partial").join(self.id.to_string());
        let to = self.root.join(key.path().as_ref());
        tokio::task::spawn_blocking(move || {
            if let Some(dir) = to.parent() {
                std::fs::create_dir_all(dir)?;
            }
            std::fs::rename(from, to)
        })
        .await
        .map_err(std::io::Error::other)??;
        Ok(key)
    }
}

pub struct S3Append {
    store: Arc<AmazonS3>,
    open: OpenUploads,
    path: Path,
    tail_path: Path,
    state: PartialState,
    /// Bytes after the last part sent: the old tail and what this request brought.
    buffer: BytesMut,
}

impl S3Append {
    async fn write(&mut self, chunk: Bytes) -> object_store::Result<Option<Kept>> {
        self.buffer.extend_from_slice(&chunk);
        let part_size = usize::try_from(self.state.part_size).unwrap_or(usize::MAX);
        let mut sent = false;
        while self.buffer.len() >= part_size {
            let part = self.buffer.split_to(part_size).freeze();
            self.send(part).await?;
            sent = true;
        }
        // The tail object is stale now: the bytes it held went into the part.
        Ok(sent.then(|| self.kept(0)))
    }

    async fn send(&mut self, part: Bytes) -> object_store::Result<()> {
        let id = match &self.state.multipart_id {
            Some(id) => id.clone(),
            None => {
                // Left by a request that died between the store's answer and the record.
                self.open.abort_all(&self.path, None).await?;
                let id = self.store.create_multipart(&self.path).await?;
                self.state.multipart_id = Some(id.clone());
                id
            }
        };
        let index = self.state.parts.len();
        let PartId { content_id } = self.store.put_part(&self.path, &id, index, PutPayload::from(part)).await?;
        self.state.parts.push(content_id);
        Ok(())
    }

    fn kept(&self, tail_bytes: u64) -> Kept {
        Kept {
            offset: self.state.parts.len() as u64 * self.state.part_size + tail_bytes,
            multipart_id: self.state.multipart_id.clone(),
            parts: self.state.parts.clone(),
            tail_bytes,
        }
    }

    async fn keep(self) -> object_store::Result<Kept> {
        let tail = self.buffer.len() as u64;
        if tail > 0 {
            self.store.put(&self.tail_path, PutPayload::from(self.buffer.clone().freeze())).await?;
        }
        Ok(self.kept(tail))
    }

    async fn complete(mut self) -> object_store::Result<BlobKey> {
        let key = BlobKey::Original { event_id: self.state.event_id, upload_id: self.state.id };
        let rest = std::mem::take(&mut self.buffer).freeze();
        match self.state.multipart_id.clone() {
            // Never a whole part: one PUT.
            None => {
                self.store.put(&self.path, PutPayload::from(rest)).await?;
            }
            Some(id) => {
                if !rest.is_empty() {
                    self.send(rest).await?;
                }
                let parts =
                    self.state.parts.iter().map(|content_id| PartId { content_id: content_id.clone() }).collect();
                self.store.complete_multipart(&self.path, &id, parts).await?;
            }
        }
        if let Err(e) = self.store.delete(&self.tail_path).await
            && !matches!(e, object_store::Error::NotFound { .. })
        {
            tracing::debug!(error = %e, "removing a completed resumable upload's tail object");
        }
        Ok(key)
    }
}
