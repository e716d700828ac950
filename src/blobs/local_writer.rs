//! Writing an upload into a local store: the connection's chunks, uncopied, gathered into
//! batches that one blocking task at a time writes with a single vectored write, while the
//! next batch gathers. The file is written under a staging name (`<key>#upload`, which the
//! orphan sweep recognises) and renamed to its key only when complete.
//!
//! Measured against `object_store`'s multipart writer, which copies every chunk into a part
//! buffer and spawns a blocking task per part: see docs/benchmarks.md.

use std::io::{IoSlice, Write};
use std::path::PathBuf;

use bytes::Bytes;
use tokio::task::JoinHandle;

/// Bytes gathered before a batch is handed to the blocking pool.
const BATCH_BYTES: usize = 256 * 1024;

pub struct LocalWriter {
    staging: PathBuf,
    target: PathBuf,
    batches: Batches,
}

impl LocalWriter {
    pub fn new(target: PathBuf) -> Self {
        let mut staging = target.clone().into_os_string();
        staging.push("#upload");
        let staging: PathBuf = staging.into();
        Self { batches: Batches::new(None, staging.clone()), staging, target }
    }

    pub async fn write(&mut self, chunk: Bytes) -> std::io::Result<()> {
        self.batches.write(chunk).await
    }

    /// Writes what is left and moves the file to its key.
    pub async fn finish(mut self) -> std::io::Result<()> {
        self.batches.flush().await?;
        self.batches.settle().await?;
        let (staging, target) = (self.staging.clone(), self.target.clone());
        tokio::task::spawn_blocking(move || std::fs::rename(staging, target)).await.map_err(std::io::Error::other)?
    }

    /// Stops and removes the partial file.
    pub async fn abort(mut self) -> std::io::Result<()> {
        let _ = self.batches.settle().await;
        match tokio::fs::remove_file(&self.staging).await {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

/// Chunks gathered into batches, each written by one blocking task while the next gathers;
/// the file is created at `path` with the first batch unless it was given open.
pub(super) struct Batches {
    path: PathBuf,
    /// The open file between writes; `None` before the first and while one is in flight.
    file: Option<std::fs::File>,
    in_flight: Option<JoinHandle<std::io::Result<std::fs::File>>>,
    batch: Vec<Bytes>,
    batched: usize,
}

impl Batches {
    pub(super) fn new(file: Option<std::fs::File>, path: PathBuf) -> Self {
        Self { path, file, in_flight: None, batch: Vec::new(), batched: 0 }
    }

    pub(super) async fn write(&mut self, chunk: Bytes) -> std::io::Result<()> {
        self.batched += chunk.len();
        self.batch.push(chunk);
        if self.batched >= BATCH_BYTES { self.flush().await } else { Ok(()) }
    }

    /// Waits for the write in flight, then hands the gathered batch to a blocking task.
    pub(super) async fn flush(&mut self) -> std::io::Result<()> {
        let file = self.settle().await?;
        let batch = std::mem::take(&mut self.batch);
        self.batched = 0;
        let path = self.path.clone();
        self.in_flight = Some(tokio::task::spawn_blocking(move || {
            let mut file = match file {
                Some(file) => file,
                None => open(&path)?,
            };
            write_all(&mut file, &batch)?;
            Ok(file)
        }));
        Ok(())
    }

    /// The file once no write is in flight.
    pub(super) async fn settle(&mut self) -> std::io::Result<Option<std::fs::File>> {
        match self.in_flight.take() {
            Some(task) => task.await.map_err(std::io::Error::other)?.map(Some),
            None => Ok(self.file.take()),
        }
    }

    /// Writes everything gathered (to the kernel: what a process crash cannot lose).
    pub(super) async fn write_out(&mut self) -> std::io::Result<()> {
        self.flush().await?;
        self.file = self.settle().await?;
        Ok(())
    }
}

fn open(staging: &std::path::Path) -> std::io::Result<std::fs::File> {
    if let Some(dir) = staging.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::File::create(staging)
}

fn write_all(file: &mut std::fs::File, batch: &[Bytes]) -> std::io::Result<()> {
    let mut slices: Vec<IoSlice<'_>> = batch.iter().map(|b| IoSlice::new(b)).collect();
    let mut slices = &mut slices[..];
    while !slices.is_empty() {
        match file.write_vectored(slices) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut slices, n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
