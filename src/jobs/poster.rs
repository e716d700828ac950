//! A video's poster: one frame, extracted by an external `ffmpeg` on the derivative worker,
//! then made into thumb, preview, WebP thumb and placeholder by the photo path
//! (`media::derive`). `ffmpeg` turns the frame upright itself (it applies the display matrix
//! when decoding) and scales it to fit the preview, so the PNG it writes is bounded.
//!
//! `ffmpeg` runs inside a confined media worker (`sandbox`): an empty environment, no
//! capabilities, landlock letting it read the one video and its own libraries, a seccomp
//! filter, and memory and CPU limits sized from the video's pixels, with a wall-clock limit
//! past which it is killed (as it is when the job is dropped); its output is read up to a limit.
//! It reads the original from a local path: the file itself on a local store, a temporary copy
//! (as long as the video size limit allows, removed when done) for S3.
//! Where `ffmpeg` is missing (checked once at start) or fails, the video has no poster and is
//! still ready and playable.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use object_store::GetResultPayload;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

use crate::media::derive::PREVIEW_MAX_EDGE;
use crate::sandbox::limits::Limits;
use crate::sandbox::{MediaWorkers, WorkerFailure};

/// `ffmpeg -version` at start.
const CHECK_TIMEOUT: Duration = Duration::from_secs(10);
/// A 2048 × 2048 RGB PNG at the fastest compression is at most about 12.6 MB.
const MAX_FRAME_BYTES: u64 = 32 * 1024 * 1024;
/// The poster is this far in, or at a tenth of a shorter video (the first frame is often black).
const POSTER_AT_S: f64 = 1.0;

/// The `ffmpeg` this instance uses, if it has one.
#[derive(Clone, Debug)]
pub struct Ffmpeg {
    program: Option<PathBuf>,
    /// Where an original kept elsewhere (S3) is copied for `ffmpeg` to read.
    temp_dir: PathBuf,
    /// Where `ffmpeg` runs.
    workers: Arc<MediaWorkers>,
}

impl Ffmpeg {
    /// Runs `program -version`: an instance without a working `ffmpeg` stores and plays videos
    /// without posters, and says so once, here.
    pub async fn check(program: &Path, temp_dir: PathBuf, workers: Arc<MediaWorkers>) -> Self {
        let mut command = Command::new(program);
        command.arg("-version").stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null()).kill_on_drop(true);
        let version = async {
            let mut child = command.spawn().ok()?;
            let mut first = String::new();
            let mut stdout = child.stdout.take()?.take(4096);
            stdout.read_to_string(&mut first).await.ok()?;
            child.wait().await.ok()?.success().then(|| first.lines().next().unwrap_or_default().to_owned())
        };
        match tokio::time::timeout(CHECK_TIMEOUT, version).await {
            Ok(Some(version)) => {
                // The worker runs it by its full path: it has no PATH to search.
                let program = std::fs::canonicalize(which(program)).unwrap_or_else(|_| program.to_owned());
                tracing::info!(program = %program.display(), version, "ffmpeg found: videos get posters");
                Self { program: Some(program), temp_dir, workers }
            }
            _ => {
                tracing::warn!(
                    program = %program.display(),
                    "ffmpeg is not available: videos are stored and played without posters (see --ffmpeg)"
                );
                Self { program: None, temp_dir, workers }
            }
        }
    }

    /// An instance without `ffmpeg`.
    pub fn none() -> Self {
        Self { program: None, temp_dir: std::env::temp_dir(), workers: MediaWorkers::of_this_binary(0) }
    }

    pub fn available(&self) -> bool {
        self.program.is_some()
    }

    /// The poster frame of `original` (a video `duration_ms` long and `pixels` large, as its
    /// header says) as a PNG, upright and at most the preview's size; `Ok(None)` when `ffmpeg`
    /// is missing or cannot read a frame. `Err` for the store failing (the job is retried) and
    /// for a worker that died or ran out of its limits (the job counts an attempt).
    pub async fn poster(
        &self,
        original: object_store::GetResult,
        video: Video<'_>,
        max_bytes: u64,
    ) -> Result<Option<Vec<u8>>, WorkerFailure> {
        if self.program.is_none() {
            return Ok(None);
        }
        let (path, _copy) = match original.payload {
            GetResultPayload::File(_, path) => (path, None),
            GetResultPayload::Stream(stream) => {
                let copy = TempCopy::write(&self.temp_dir, stream, max_bytes)
                    .await
                    .map_err(|e| WorkerFailure::Store(std::io::Error::other(e)))?;
                (copy.path.clone(), Some(copy))
            }
        };
        self.poster_of_file(&path, video).await
    }

    /// The poster frame of the video at `path` (see `poster`).
    pub async fn poster_of_file(&self, path: &Path, video: Video<'_>) -> Result<Option<Vec<u8>>, WorkerFailure> {
        let Some(program) = self.program.as_deref() else { return Ok(None) };
        let Video { content_type, duration_ms, pixels } = video;
        let Some(demuxer) = demuxer(content_type) else {
            tracing::warn!(content_type, "no poster for this type");
            return Ok(None);
        };
        let at = duration_ms.map_or(0.0, |ms| (ms as f64 / 1000.0 * 0.1).min(POSTER_AT_S));
        // Past the last frame of a very short video, `ffmpeg` writes nothing: then the first.
        let mut tries = vec![at];
        if at > 0.0 {
            tries.push(0.0);
        }
        for at in tries {
            match self.frame(program, path, demuxer, at, Limits::frame(pixels)).await? {
                Ok(png) if !png.is_empty() => return Ok(Some(png)),
                Ok(_) => tracing::debug!(at, "ffmpeg wrote no frame"),
                Err(why) => {
                    tracing::warn!(error = %why, "ffmpeg could not make a poster; the video has none");
                    return Ok(None);
                }
            }
        }
        Ok(None)
    }

    /// Runs `ffmpeg` in a media worker for one frame at `at` seconds. It reads the one local file,
    /// nothing it names (`-protocol_whitelist file`; MOV data references stay off, `ffmpeg`'s
    /// default, and landlock would refuse them). `Ok(Err(_))`: `ffmpeg` said no.
    async fn frame(
        &self,
        program: &Path,
        input: &Path,
        demuxer: &str,
        at: f64,
        limits: Limits,
    ) -> Result<Result<Vec<u8>, String>, WorkerFailure> {
        let edge = PREVIEW_MAX_EDGE;
        let mut args: Vec<String> =
            ["-nostdin", "-hide_banner", "-loglevel", "error", "-threads", "2"].map(String::from).into();
        args.extend(["-protocol_whitelist", "file", "-f", demuxer, "-ss", &format!("{at:.3}"), "-i"].map(String::from));
        args.push(input.to_string_lossy().into_owned());
        args.extend(["-map", "0:v:0", "-frames:v", "1", "-an", "-sn", "-dn", "-vf"].map(String::from));
        args.push(format!("scale=w='min({edge},iw)':h='min({edge},ih)':force_original_aspect_ratio=decrease"));
        args.extend(["-f", "image2pipe", "-c:v", "png", "-compression_level", "1", "pipe:1"].map(String::from));
        let out = self.workers.exec(program, args, input, limits, MAX_FRAME_BYTES).await?;
        let Some(png) = out.stdout else {
            return Ok(Err(format!("ffmpeg wrote more than {MAX_FRAME_BYTES} bytes")));
        };
        if !out.status.success() {
            let messages = String::from_utf8_lossy(&out.stderr).trim().to_owned();
            return Ok(Err(format!("ffmpeg failed ({}): {messages}", out.status)));
        }
        Ok(Ok(png))
    }
}

/// What the poster is made of: the video's type, length and frame size from its header.
#[derive(Clone, Copy, Debug)]
pub struct Video<'a> {
    pub content_type: &'a str,
    pub duration_ms: Option<i64>,
    pub pixels: u64,
}

/// `program`'s full path: as given when it names a path, else the first match in `PATH`.
fn which(program: &Path) -> PathBuf {
    if program.components().count() > 1 {
        return program.to_owned();
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| program.to_owned())
}

/// The `ffmpeg` demuxer of the container the probe found: `ffmpeg` is told what it reads, never
/// left to guess from bytes a guest chose.
fn demuxer(content_type: &str) -> Option<&'static str> {
    match content_type {
        "video/mp4" | "video/quicktime" => Some("mov"),
        "video/webm" | "video/x-matroska" => Some("matroska"),
        _ => None,
    }
}

/// A copy of an original kept elsewhere, removed when dropped.
struct TempCopy {
    path: PathBuf,
}

impl TempCopy {
    async fn write(
        dir: &Path,
        mut stream: futures_util::stream::BoxStream<'static, object_store::Result<bytes::Bytes>>,
        max_bytes: u64,
    ) -> anyhow::Result<Self> {
        tokio::fs::create_dir_all(dir).await?;
        let copy = Self { path: dir.join(format!("poster-{}.video", uuid::Uuid::new_v4())) };
        let mut file = tokio::fs::File::create(&copy.path).await?;
        let mut written = 0u64;
        while let Some(chunk) = stream.next().await {
            let chunk = chunk?;
            written += chunk.len() as u64;
            if written > max_bytes {
                anyhow::bail!("the original is larger than the video size limit");
            }
            file.write_all(&chunk).await?;
        }
        file.flush().await?;
        Ok(copy)
    }
}

impl Drop for TempCopy {
    fn drop(&mut self) {
        let path = std::mem::take(&mut self.path);
        let remove = move || {
            if let Err(e) = std::fs::remove_file(&path) {
                tracing::debug!(error = %e, path = %path.display(), "removing a poster's temporary copy");
            }
        };
        // Off the runtime's threads when there is one.
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn_blocking(remove)),
            Err(_) => remove(),
        }
    }
}
