//! Writing an upload into an S3 bucket as a multipart upload at its final key, whose id is
//! known from the start: it is recorded with the upload (`staged_uploads`), so any instance
//! can abort it by id should this one die mid-upload, and no copy from a temporary key is
//! needed once the upload commits (S3 has no rename: a copy and a delete).
//!
//! The connection's chunks are gathered uncopied into parts of `part_size` bytes (5 MiB, S3's
//! minimum for all but the last); at most `IN_FLIGHT` parts are being sent at once.

use std::sync::Arc;

use bytes::Bytes;
use object_store::multipart::{MultipartStore, PartId};
use object_store::path::Path;
use object_store::{MultipartId, PutPayloadMut};
use tokio::task::JoinSet;

/// Parts sent at once by one upload: memory per upload stays within three parts.
const IN_FLIGHT: usize = 2;

pub struct S3Writer {
    store: Arc<dyn MultipartStore>,
    path: Path,
    id: MultipartId,
    part_size: usize,
    gathering: PutPayloadMut,
    sending: JoinSet<object_store::Result<(usize, PartId)>>,
    parts: Vec<Option<PartId>>,
}

impl S3Writer {
    /// Begins a multipart upload at `path`.
    pub async fn begin(store: Arc<dyn MultipartStore>, path: Path, part_size: usize) -> object_store::Result<Self> {
        let id = store.create_multipart(&path).await?;
        Ok(Self {
            store,
            path,
            id,
            part_size,
            gathering: PutPayloadMut::new(),
            sending: JoinSet::new(),
            parts: Vec::new(),
        })
    }

    pub fn multipart_id(&self) -> &str {
        &self.id
    }

    pub async fn write(&mut self, chunk: Bytes) -> object_store::Result<()> {
        self.gathering.push(chunk);
        if self.gathering.content_length() >= self.part_size { self.send_part().await } else { Ok(()) }
    }

    /// Sends what was gathered as the next part, once fewer than `IN_FLIGHT` are on their way.
    async fn send_part(&mut self) -> object_store::Result<()> {
        while self.sending.len() >= IN_FLIGHT {
            self.settle_one().await?;
        }
        let payload = std::mem::take(&mut self.gathering).freeze();
        let index = self.parts.len();
        self.parts.push(None);
        let (store, path, id) = (Arc::clone(&self.store), self.path.clone(), self.id.clone());
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

    /// Sends the last part and completes the upload: the blob is at its key.
    pub async fn finish(mut self) -> object_store::Result<()> {
        if self.gathering.content_length() > 0 || self.parts.is_empty() {
            self.send_part().await?;
        }
        while !self.sending.is_empty() {
            self.settle_one().await?;
        }
        let parts = std::mem::take(&mut self.parts).into_iter().collect::<Option<Vec<_>>>().ok_or_else(|| {
            object_store::Error::Generic { store: "S3", source: "a part of the upload was not sent".into() }
        })?;
        self.store.complete_multipart(&self.path, &self.id, parts).await.map(|_| ())
    }

    /// Stops sending and aborts the upload: the store drops its parts.
    pub async fn abort(mut self) -> object_store::Result<()> {
        self.sending.abort_all();
        while self.sending.join_next().await.is_some() {}
        self.store.abort_multipart(&self.path, &self.id).await
    }
}
