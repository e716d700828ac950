//! Step 4 for videos: what the stream showed of the container (`ContainerSniff`) decides
//! whether the file is a video; then its header is read — for an MP4, the movie header
//! wherever it lies (read back from the store when it is not in the kept head: phones write it
//! last), for WebM the elements before the first cluster — on the blocking pool, and the
//! duration is held to the operator's limit. Anything else goes to the image probe.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::store::MAX_PROBE_BYTES;
use super::{Ingest, IngestError, Received};
use crate::domain::{CaptureSource, MediaKind};
use crate::media::video::{self, Container, ContainerSniff, VideoError, VideoProbe};

/// A movie header larger than this is refused: a ten-minute phone video's is about 1 MB, and the
/// header is held in memory while it is read, so 8 MiB bounds what one upload may make the server hold.
const MAX_MOOV_BYTES: u64 = 8 * 1024 * 1024;

/// What the probe found, photo or video, as the row records it.
pub(super) struct Probed {
    pub kind: MediaKind,
    pub content_type: &'static str,
    pub width: u32,
    pub height: u32,
    /// The time the file says it was taken, and where it says so (EXIF, the video's header).
    pub taken_at: Option<DateTime<Utc>>,
    pub taken_from: CaptureSource,
    pub duration_ms: Option<u64>,
}

impl Ingest {
    /// The header probe of a photo or a video.
    pub(super) async fn probe_media(&self, received: &Received) -> Result<Probed, IngestError> {
        if received.container == ContainerSniff::NotVideo {
            let probe = self.probe(received).await?;
            return Ok(Probed {
                kind: MediaKind::Photo,
                content_type: probe.format.mime(),
                width: probe.width,
                height: probe.height,
                taken_at: probe.taken_at,
                taken_from: CaptureSource::Exif,
                duration_ms: None,
            });
        }
        let probe = self.probe_video(received).await?;
        self.check_video(&probe)?;
        tracing::debug!(?probe, "video probed");
        Ok(Probed {
            kind: MediaKind::Video,
            content_type: probe.container.mime(),
            width: probe.width,
            height: probe.height,
            taken_at: probe.created,
            taken_from: CaptureSource::Video,
            duration_ms: probe.duration_ms,
        })
    }

    /// The operator's limits on a video, from its header: frame size and duration.
    fn check_video(&self, probe: &VideoProbe) -> Result<(), IngestError> {
        let pixels = probe.decoded_pixels();
        let max_pixels = self.limits.max_image_pixels;
        if pixels > max_pixels {
            return Err(IngestError::ImageTooLarge { pixels, limit: max_pixels });
        }
        if let (true, Some((w, h))) = (probe.understates_its_stream(), probe.coded) {
            return Err(IngestError::UnsupportedMediaType(format!(
                "the {} video's stream ({w}×{h}) is larger than its header says ({}×{})",
                probe.container.name(),
                probe.width,
                probe.height
            )));
        }
        let limit_s = self.limits.max_video_seconds;
        if let Some(ms) = probe.duration_ms
            && ms > limit_s.saturating_mul(1000)
        {
            return Err(IngestError::VideoTooLong { duration_s: ms.div_ceil(1000), limit_s });
        }
        Ok(())
    }

    /// While a video still arrives: the refusal its movie header already tells (damaged, no video
    /// track, another codec, too long), when the header came first and whole.
    pub(super) async fn early_video_refusal(&self, container: Container, moov: Vec<u8>) -> Option<IngestError> {
        let parsed = self.blocking.media(move || video::bmff::parse_moov_box(&moov, container)).await;
        match parsed {
            Ok(Ok(probe)) => self.check_video(&probe).err(),
            Ok(Err(e)) => Some(IngestError::UnsupportedMediaType(e.to_string())),
            // The pool failing says nothing about the file: the check at the end decides.
            Err(e) => {
                tracing::warn!(error = %e, "could not check a video's header early");
                None
            }
        }
    }

    async fn probe_video(&self, received: &Received) -> Result<VideoProbe, IngestError> {
        let refuse = |why: String| IngestError::UnsupportedMediaType(why);
        match &received.container {
            ContainerSniff::NotVideo => Err(refuse("the file is not a video".into())),
            ContainerSniff::Damaged(why) => Err(refuse(why.clone())),
            ContainerSniff::Bmff { container, moov: None, .. } => Err(refuse(format!(
                "the {} file has no movie header (moov): it is cut short or damaged",
                container.name()
            ))),
            ContainerSniff::Bmff { container, streamed_moov: Some(moov), .. } => {
                let (container, moov) = (*container, moov.clone());
                let result = self.blocking.media(move || video::bmff::parse_moov_box(&moov, container)).await?;
                result.map_err(|e| IngestError::UnsupportedMediaType(e.to_string()))
            }
            ContainerSniff::Bmff { container, moov: Some((at, size)), .. } => {
                self.probe_moov(received, *container, *at, *size).await
            }
            ContainerSniff::Ebml { .. } => self.probe_ebml(received).await,
        }
    }

    /// An MP4's movie header, from the kept head or read back from the store.
    async fn probe_moov(
        &self,
        received: &Received,
        container: Container,
        at: u64,
        size: u64,
    ) -> Result<VideoProbe, IngestError> {
        if size > MAX_MOOV_BYTES {
            return Err(IngestError::UnsupportedMediaType(format!(
                "the {} file's movie header is too large ({size} bytes)",
                container.name()
            )));
        }
        let end = at + size;
        let head = &received.sniffed.head;
        let moov = match head.get(at as usize..end as usize) {
            Some(moov) => moov.to_vec(),
            None => self.blobs.get_range(received.guard.key, at..end).await?.to_vec(),
        };
        let result = self.blocking.media(move || video::bmff::parse_moov_box(&moov, container)).await?;
        result.map_err(|e| IngestError::UnsupportedMediaType(e.to_string()))
    }

    /// A WebM's headers, reading more of the file when they run past the kept head.
    async fn probe_ebml(&self, received: &Received) -> Result<VideoProbe, IngestError> {
        let len = received.bytes;
        let mut head = Arc::new(received.sniffed.head.clone());
        loop {
            let for_probe = Arc::clone(&head);
            let result = self.blocking.media(move || video::ebml::probe(&for_probe, len)).await?;
            match result {
                Ok(probe) => return Ok(probe),
                Err(VideoError::NeedMore(want)) if want > head.len() as u64 && want <= MAX_PROBE_BYTES as u64 => {
                    head = Arc::new(self.blobs.get_range(received.guard.key, 0..want).await?.to_vec());
                }
                Err(VideoError::NeedMore(_)) => {
                    return Err(IngestError::UnsupportedMediaType("the WebM header is too large to read".into()));
                }
                Err(VideoError::Unsupported(why)) => return Err(IngestError::UnsupportedMediaType(why)),
            }
        }
    }
}
