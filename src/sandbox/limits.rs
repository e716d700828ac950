//! How much memory and CPU time one job may take, sized from the pixels it works on (the
//! header's dimensions, checked at upload). The kernel enforces both inside the worker
//! (`RLIMIT_AS`, `RLIMIT_CPU`); the pool adds a wall-clock limit, for a worker that waits
//! instead of computing. A HEIC or MP4 whose label understates its stream is refused at upload
//! by the stream's own size (`media::param_sets`); a file that understates its pixels some other
//! way meets the limit of the size it claimed.

use std::time::Duration;

use serde::{Deserialize, Serialize};

const MIB: u64 = 1024 * 1024;
/// No job runs longer than this, whatever its size.
const MAX_CPU_SECONDS: u64 = 300;

/// The limits of one job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Address space the job may add to what the worker holds when it begins.
    pub memory_bytes: u64,
    /// CPU seconds, all of the worker's threads together.
    pub cpu_seconds: u64,
}

impl Limits {
    /// A photo's derivatives (or a poster frame's): the decode at full size in the worst case
    /// (HEIC: the YCbCr planes, the RGB image and the colour step's copy), the resizes and
    /// encodes. A 12 MP photo gets 448 MiB and 10 s; 48 MP, 1 GiB and 28 s; 200 MP (a JPEG,
    /// shrunk while it is decoded), the 2 GiB cap and 104 s. Generous for a release build; a
    /// debug build (the tests') took 7.7 s of CPU for a 48 MP HEIC.
    pub fn photo(pixels: u64) -> Self {
        Self {
            memory_bytes: (256 * MIB).saturating_add(pixels.saturating_mul(16)).min(2048 * MIB),
            cpu_seconds: (4 + pixels / 2_000_000).min(MAX_CPU_SECONDS),
        }
    }

    /// `ffmpeg` reading one frame: its demuxer's index, a few reference frames of the video's
    /// size per thread, the scaled PNG. 4K: 1.06 GiB and 18 s.
    pub fn frame(pixels: u64) -> Self {
        Self {
            memory_bytes: (1024 * MIB).saturating_add(pixels.saturating_mul(8)).min(3072 * MIB),
            cpu_seconds: (10 + pixels / 1_000_000).min(MAX_CPU_SECONDS),
        }
    }

    /// The wall-clock limit the pool applies: twice the CPU time (a worker at low priority on
    /// a busy machine gets less than a core) and 10 s for starting and the store's reads.
    pub fn wall(&self) -> Duration {
        Duration::from_secs(self.cpu_seconds.saturating_mul(2).saturating_add(10))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_larger_photo_gets_more_memory_and_time_up_to_a_cap() {
        let small = Limits::photo(12_000_000);
        let large = Limits::photo(48_000_000);
        assert!(large.memory_bytes > small.memory_bytes && large.cpu_seconds > small.cpu_seconds);
        assert_eq!(Limits::photo(u64::MAX).memory_bytes, 2048 * MIB);
        assert_eq!(Limits::photo(u64::MAX).cpu_seconds, MAX_CPU_SECONDS);
        assert!(Limits::frame(3840 * 2160).memory_bytes < 1100 * MIB);
    }
}
