//! Moving bytes between stores for backups and restores: streamed (a blob up to one part is
//! written in one request, a larger one a part at a time, so a video is never held whole in
//! memory), `AT_ONCE` blobs at a time, and every request to a store bounded in time: a store
//! that stops answering fails the run instead of hanging it, and the next run goes on from
//! what was copied.

use std::collections::HashMap;
use std::future::Future;
use std::io::{Seek, SeekFrom};
use std::time::Duration;

use bytes::Bytes;
use futures_util::stream::BoxStream;
use futures_util::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{GetResult, GetResultPayload, ObjectStoreExt, PutPayload, WriteMultipart};
use tokio::io::AsyncReadExt;
use tokio_util::io::ReaderStream;

use crate::blobs::BlobStore;

/// Blobs copied at once: enough to keep an S3 connection pool busy, few enough that the parts
/// in memory stay small (at most `AT_ONCE` × 2 parts: 80 MiB with S3's 5 MiB parts).
pub const AT_ONCE: usize = 8;
/// The longest any one request to a store (a read of a chunk, a part written, a listing page)
/// may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// How much of a local file one read takes (object_store's own reader reads 8 KiB at a time).
const READ_CHUNK: usize = 256 * 1024;

/// Bytes on their way, from a store or a local file.
pub type Chunks = BoxStream<'static, anyhow::Result<Bytes>>;

/// `work`, failed with a clear reason when it takes longer than `limit`.
pub async fn timed<T, E: Into<anyhow::Error>>(
    limit: Duration,
    work: impl Future<Output = Result<T, E>>,
) -> anyhow::Result<T> {
    match tokio::time::timeout(limit, work).await {
        Ok(result) => result.map_err(Into::into),
        Err(_) => anyhow::bail!("the store did not answer within {} s", limit.as_secs()),
    }
}

/// Every path under `prefix` with its size: one listing, read a page at a time.
pub async fn sizes(place: &BlobStore, prefix: &str) -> anyhow::Result<HashMap<Path, u64>> {
    let mut listing = place.object_store().list(Some(&Path::from(prefix)));
    let mut found = HashMap::new();
    while let Some(meta) = timed(REQUEST_TIMEOUT, async { listing.next().await.transpose() }).await? {
        found.insert(meta.location, meta.size);
    }
    Ok(found)
}

/// The bytes a read answered with.
pub fn chunks_of(read: GetResult) -> Chunks {
    let range = read.range.clone();
    match read.payload {
        GetResultPayload::File(mut file, _) => match file.seek(SeekFrom::Start(range.start)) {
            Ok(_) => file_chunks(tokio::fs::File::from_std(file), range.end - range.start),
            Err(e) => futures_util::stream::once(async move { Err(e.into()) }).boxed(),
        },
        GetResultPayload::Stream(stream) => stream.map_err(anyhow::Error::from).boxed(),
    }
}

/// The first `length` bytes of a local file, read in large chunks.
pub fn file_chunks(file: tokio::fs::File, length: u64) -> Chunks {
    ReaderStream::with_capacity(file.take(length), READ_CHUNK).map_err(anyhow::Error::from).boxed()
}

/// Writes `length` bytes from `chunks` to `path` in `to`, each chunk shown to `seen` on its way
/// (to hash it); fails, leaving nothing at `path`, when fewer or more bytes come.
pub async fn write(
    mut chunks: Chunks,
    length: u64,
    to: &BlobStore,
    path: &Path,
    mut seen: impl FnMut(&Bytes),
) -> anyhow::Result<u64> {
    let store = to.object_store();
    let mut written = 0u64;
    if length <= to.part_size() as u64 {
        let mut parts = Vec::new();
        while let Some(chunk) = next(&mut chunks).await? {
            written += chunk.len() as u64;
            seen(&chunk);
            parts.push(chunk);
        }
        anyhow::ensure!(written == length, "{path}: read {written} bytes of {length}");
        timed(REQUEST_TIMEOUT, store.put(path, PutPayload::from_iter(parts))).await?;
        return Ok(written);
    }
    let upload = timed(REQUEST_TIMEOUT, store.put_multipart(path)).await?;
    let mut writer = WriteMultipart::new_with_chunk_size(upload, to.part_size());
    let sent = async {
        while let Some(chunk) = next(&mut chunks).await? {
            // One part being sent while the next fills.
            timed(REQUEST_TIMEOUT, writer.wait_for_capacity(1)).await?;
            written += chunk.len() as u64;
            seen(&chunk);
            writer.write(&chunk);
        }
        anyhow::ensure!(written == length, "{path}: read {written} bytes of {length}");
        Ok(())
    }
    .await;
    match sent {
        Ok(()) => {
            timed(REQUEST_TIMEOUT, writer.finish()).await?;
            Ok(written)
        }
        Err(e) => {
            if let Err(abort) = timed(REQUEST_TIMEOUT, writer.abort()).await {
                tracing::warn!(error = %abort, %path, "could not abort a partial copy");
            }
            Err(e)
        }
    }
}

async fn next(chunks: &mut Chunks) -> anyhow::Result<Option<Bytes>> {
    timed(REQUEST_TIMEOUT, async { chunks.next().await.transpose() }).await
}

/// Runs `work` on every item, `AT_ONCE` at a time; the first failure stops the rest.
pub async fn each<T, R, F>(items: Vec<T>, work: impl Fn(T) -> F) -> anyhow::Result<Vec<R>>
where
    F: Future<Output = anyhow::Result<R>>,
{
    futures_util::stream::iter(items).map(work).buffer_unordered(AT_ONCE).try_collect().await
}
