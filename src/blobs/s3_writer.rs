//! Writing an upload into an S3 bucket at its final key, with no copy from a temporary key
//! once the upload commits (S3 has no rename: a copy and a delete).
//!
//! A photo of at most one part (5 MiB, S3's minimum part size) is sent with one PUT when its
//! last byte has arrived: until then nothing exists in the store, so an instance that dies
//! mid-upload leaves nothing open there. A larger one becomes a multipart upload when its first
//! part is full. Its creation goes through `RecordMultipart`, which records the upload's id
//! where every instance can see it (`staged_uploads`) before a part is sent, so any instance
//! can abort it by id should this one die; should it die before the record, the upload is
//! found by listing those open at the key the record already named (`open_uploads`).
//!
//! The connection's chunks are gathered uncopied into parts of `part_size` bytes; at most
//! `IN_FLIGHT` parts are being sent at once.

use std::sync::Arc;

use bytes::Bytes;
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use object_store::aws::AmazonS3;
use object_store::multipart::{MultipartStore, PartId};
use object_store::path::Path;
use object_store::{MultipartId, ObjectStoreExt, PutPayloadMut};
use tokio::task::JoinSet;

/// Parts sent at once by one upload: memory per upload stays within three parts.
const IN_FLIGHT: usize = 2;

/// Runs the creation of an upload's multipart upload (`create`, which tells its id) and
/// records that id for the other instances before the writer goes on. Called at most once.
pub type RecordMultipart = Box<
    dyn FnOnce(
            BoxFuture<'static, object_store::Result<MultipartId>>,
        ) -> BoxFuture<'static, object_store::Result<MultipartId>>
        + Send,
>;

pub struct S3Writer {
    store: Arc<AmazonS3>,
    path: Path,
    /// The multipart upload, once the first part is full.
    id: Option<MultipartId>,
    record: Option<RecordMultipart>,
    part_size: usize,
    gathering: PutPayloadMut,
    sending: JoinSet<object_store::Result<(usize, PartId)>>,
    parts: Vec<Option<PartId>>,
}

impl S3Writer {
    /// A writer to `path`; nothing is sent to the store before a part is full or the bytes end.
    pub fn new(store: Arc<AmazonS3>, path: Path, part_size: usize, record: RecordMultipart) -> Self {
        Self {
            store,
            path,
            id: None,
            record: Some(record),
            part_size,
            gathering: PutPayloadMut::new(),
            sending: JoinSet::new(),
            parts: Vec::new(),
        }
    }

    pub async fn write(&mut self, chunk: Bytes) -> object_store::Result<()> {
        self.gathering.push(chunk);
        if self.gathering.content_length() >= self.part_size { self.send_part().await } else { Ok(()) }
    }

    /// The multipart upload, created (and recorded) the first time a part is sent.
    async fn multipart_id(&mut self) -> object_store::Result<MultipartId> {
        if let Some(id) = &self.id {
            return Ok(id.clone());
        }
        let (store, path) = (Arc::clone(&self.store), self.path.clone());
        let create = async move { store.create_multipart(&path).await }.boxed();
        let id = match self.record.take() {
            Some(record) => record(create).await?,
            None => create.await?,
        };
        self.id = Some(id.clone());
        Ok(id)
    }

    /// Sends what was gathered as the next part, once fewer than `IN_FLIGHT` are on their way.
    async fn send_part(&mut self) -> object_store::Result<()> {
        let id = self.multipart_id().await?;
        while self.sending.len() >= IN_FLIGHT {
            self.settle_one().await?;
        }
        let payload = std::mem::take(&mut self.gathering).freeze();
        let index = self.parts.len();
        self.parts.push(None);
        let (store, path) = (Arc::clone(&self.store), self.path.clone());
        self.sending.spawn(async move { Ok((index, store.put_part(&path, &id, index, payload).await?)) });
        Ok(())
    }

    async fn settle_one(&mut self) -> object_store::Result<()> {
        match self.sending.join_next().await {
            Some(Ok(Ok((index, part)))) => {
                self.parts[index] = Some(part);
                Ok(())
            }
            Some(Ok(Err(e))) => Err(e),
            Some(Err(e)) => Err(object_store::Error::Generic { store: "S3", source: Box::new(e) }),
            None => Ok(()),
        }
    }

    /// Stores what is left: the blob is at its key. A photo that never filled a part goes in
    /// one PUT; a multipart upload gets its last part and is completed.
    pub async fn finish(mut self) -> object_store::Result<()> {
        let Some(id) = self.id.clone() else {
            let payload = std::mem::take(&mut self.gathering).freeze();
            return self.store.put(&self.path, payload).await.map(|_| ());
        };
        if self.gathering.content_length() > 0 {
            self.send_part().await?;
        }
        while !self.sending.is_empty() {
            self.settle_one().await?;
        }
        let parts = std::mem::take(&mut self.parts).into_iter().collect::<Option<Vec<_>>>().ok_or_else(|| {
            object_store::Error::Generic { store: "S3", source: "a part of the upload was not sent".into() }
        })?;
        self.store.complete_multipart(&self.path, &id, parts).await.map(|_| ())
    }

    /// Stops sending and aborts the multipart upload, if there is one: the store drops its parts.
    pub async fn abort(mut self) -> object_store::Result<()> {
        self.sending.abort_all();
        while self.sending.join_next().await.is_some() {}
        match &self.id {
            Some(id) => self.store.abort_multipart(&self.path, id).await,
            None => Ok(()),
        }
    }
}
