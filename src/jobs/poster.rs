//! A video's poster: one frame, extracted by an external `ffmpeg` on the derivative worker,
//! then made into thumb, preview, WebP thumb and placeholder by the photo path
//! (`media::derive`). `ffmpeg` turns the frame upright itself (it applies the display matrix
//! when decoding) and scales it to fit the preview, so the PNG it writes is bounded.
//!
//! The process is bounded like every external one: a timeout, killed when dropped (a job
//! that is cancelled or times out leaves no process behind), its output read up to a limit.
//! It reads the original from a local path: the file itself on a local store, a temporary copy
//! (as long as the video size limit allows, removed when done) for S3.
//! Where `ffmpeg` is missing (checked once at start) or fails, the video has no poster and is
//! still ready and playable.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use futures_util::StreamExt;
use object_store::GetResultPayload;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

use crate::media::derive::PREVIEW_MAX_EDGE;

/// One frame takes well under a second for 1080p; a slow disk or a huge frame, a few.
const FRAME_TIMEOUT: Duration = Duration::from_secs(60);
/// `ffmpeg -version` at start.
const CHECK_TIMEOUT: Duration = Duration::from_secs(10);
/// A 2048 × 2048 RGB PNG at the fastest compression is at most about 12.6 MB.
const MAX_FRAME_BYTES: u64 = 32 * 1024 * 1024;
/// What is kept of `ffmpeg`'s messages, for the log.
const MAX_STDERR_BYTES: u64 = 16 * 1024;
/// The poster is this far in, or at a tenth of a shorter video (the first frame is often black).
const POSTER_AT_S: f64 = 1.0;

/// The `ffmpeg` this instance uses, if it has one.
#[derive(Clone, Debug)]
pub struct Ffmpeg {
    program: Option<PathBuf>,
    /// Where an original kept elsewhere (S3) is copied for `ffmpeg` to read.
    temp_dir: PathBuf,
}

impl Ffmpeg {
    /// Runs `program -version`: an instance without a working `ffmpeg` stores and plays videos
    /// without posters, and says so once, here.
    pub async fn check(program: &Path, temp_dir: PathBuf) -> Self {
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
                tracing::info!(program = %program.display(), version, "ffmpeg found: videos get posters");
                Self { program: Some(program.to_owned()), temp_dir }
            }
            _ => {
                tracing::warn!(
                    program = %program.display(),
                    "ffmpeg is not available: videos are stored and played without posters (see --ffmpeg)"
                );
                Self { program: None, temp_dir }
            }
        }
    }

    /// An instance without `ffmpeg`.
    pub fn none() -> Self {
        Self { program: None, temp_dir: std::env::temp_dir() }
    }

    pub fn available(&self) -> bool {
        self.program.is_some()
    }

    /// The poster frame of `original` (a video `duration_ms` long, when known) as a PNG,
    /// upright and at most the preview's size; `Ok(None)` when `ffmpeg` is missing or cannot
    /// read a frame. `Err` only for the store failing (the job is retried).
    pub async fn poster(
        &self,
        original: object_store::GetResult,
        content_type: &str,
        duration_ms: Option<i64>,
        max_bytes: u64,
    ) -> anyhow::Result<Option<Vec<u8>>> {
        if self.program.is_none() {
            return Ok(None);
        }
        let (path, _copy) = match original.payload {
            GetResultPayload::File(_, path) => (path, None),
            GetResultPayload::Stream(stream) => {
                let copy = TempCopy::write(&self.temp_dir, stream, max_bytes).await?;
                (copy.path.clone(), Some(copy))
            }
        };
        Ok(self.poster_of_file(&path, content_type, duration_ms).await)
    }

    /// The poster frame of the video at `path`, of the type the probe found (see `poster`).
    pub async fn poster_of_file(&self, path: &Path, content_type: &str, duration_ms: Option<i64>) -> Option<Vec<u8>> {
        let program = self.program.as_deref()?;
        let Some(demuxer) = demuxer(content_type) else {
            tracing::warn!(content_type, "no poster for this type");
            return None;
        };
        let at = duration_ms.map_or(0.0, |ms| (ms as f64 / 1000.0 * 0.1).min(POSTER_AT_S));
        // Past the last frame of a very short video, `ffmpeg` writes nothing: then the first.
        let mut tries = vec![at];
        if at > 0.0 {
            tries.push(0.0);
        }
        for at in tries {
            match frame(program, path, demuxer, at).await {
                Ok(png) if !png.is_empty() => return Some(png),
                Ok(_) => tracing::debug!(at, "ffmpeg wrote no frame"),
                Err(why) => {
                    tracing::warn!(error = %why, "ffmpeg could not make a poster; the video has none");
                    return None;
                }
            }
        }
        None
    }
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

/// Runs `ffmpeg` for one frame at `at` seconds. It reads the one local file, nothing it names
/// (`-protocol_whitelist file`; MOV data references stay off, `ffmpeg`'s default).
async fn frame(program: &Path, input: &Path, demuxer: &str, at: f64) -> anyhow::Result<Vec<u8>> {
    let edge = PREVIEW_MAX_EDGE;
    let mut child = Command::new(program)
        .args(["-nostdin", "-hide_banner", "-loglevel", "error", "-threads", "2"])
        .args(["-protocol_whitelist", "file", "-f", demuxer])
        .args(["-ss", &format!("{at:.3}"), "-i"])
        .arg(input)
        .args(["-map", "0:v:0", "-frames:v", "1", "-an", "-sn", "-dn"])
        .args(["-vf", &format!("scale=w='min({edge},iw)':h='min({edge},ih)':force_original_aspect_ratio=decrease")])
        .args(["-f", "image2pipe", "-c:v", "png", "-compression_level", "1", "pipe:1"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        anyhow::bail!("ffmpeg's output is not piped");
    };
    let run = async {
        let (png, messages) =
            tokio::try_join!(read_limited(stdout, MAX_FRAME_BYTES), read_limited(stderr, MAX_STDERR_BYTES))?;
        let status = child.wait().await?;
        anyhow::Ok((status, png, messages))
    };
    // On a timeout the child is dropped, and with it killed.
    let (status, png, messages) = tokio::time::timeout(FRAME_TIMEOUT, run)
        .await
        .map_err(|_| anyhow::anyhow!("ffmpeg took longer than {FRAME_TIMEOUT:?}"))??;
    let Some(png) = png else {
        anyhow::bail!("ffmpeg wrote more than {MAX_FRAME_BYTES} bytes");
    };
    if !status.success() {
        let messages = String::from_utf8_lossy(messages.as_deref().unwrap_or_default()).trim().to_owned();
        anyhow::bail!("ffmpeg failed ({status}): {messages}");
    }
    Ok(png)
}

/// Reads `from` to its end; `None` when it has more than `limit` bytes (the rest is not read).
async fn read_limited(from: impl AsyncRead + Unpin, limit: u64) -> std::io::Result<Option<Vec<u8>>> {
    let mut buf = Vec::new();
    from.take(limit + 1).read_to_end(&mut buf).await?;
    Ok((buf.len() as u64 <= limit).then_some(buf))
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
