//! `confetti media-worker`, the worker side: started by the server ahead of need, it confines
//! itself (`confine::early`), waits for its one job on stdin, confines itself to what that job
//! needs (`confine::lock_down`), does it and exits. One job per process: nothing of one guest's
//! file can be left in memory for the next.

use std::io::{BufReader, Cursor, Read, Write};
use std::os::unix::process::CommandExt;

use super::confine::{self, Files};
use super::protocol::{self, Derived, Job, Reply, Work};
use crate::media;
use crate::media::probe::{HEAD_BYTES, ImageFormat, ProbeError};

/// The decoders' reads of the original go through a buffer of this size.
const READ_BUFFER: usize = 64 * 1024;
/// A poster frame is a PNG of at most 2048 × 2048 (`jobs::poster`).
const MAX_PNG_BYTES: u64 = 32 * 1024 * 1024;
/// Of a job's memory limit, what its resizes and encodes may need beside the decoder's buffers
/// (the decoder gets the rest, `media::derive`'s budget).
const BESIDE_THE_DECODER: u64 = 64 * 1024 * 1024;
/// Scans of a progressive JPEG read before the photo is refused. Cameras and encoders write
/// about 10 (mozjpeg's optimised scans up to about 20); each scan is one more pass over every
/// coefficient, so a file that repeats one scan thousands of times costs minutes in a few KB.
pub const MAX_JPEG_SCANS: u32 = 64;

/// Runs the worker; its exit code tells the server nothing it does not see on stdout, so any
/// failure is written to stderr for the log.
pub fn main(server: u32) -> ! {
    let code = match run(server) {
        Ok(()) => 0,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "media worker: {e}");
            1
        }
    };
    std::process::exit(code)
}

fn run(server: u32) -> Result<(), String> {
    confine::early(server)?;
    let mut input = BufReader::with_capacity(READ_BUFFER, std::io::stdin().lock());
    let job: Job = protocol::read_line(&mut input).map_err(|e| format!("reading the job: {e}"))?;
    let mut out = std::io::stdout().lock();
    let reply = match job.work {
        Work::Derive { len, max_pixels } | Work::Thumb { len, max_pixels } => {
            confine::lock_down(&job.limits, Files::Nothing)?;
            let budget = job.limits.memory_bytes.saturating_sub(BESIDE_THE_DECODER);
            let wanted = match job.work {
                Work::Thumb { .. } => Wanted::Thumb,
                _ => Wanted::All,
            };
            match derive((&mut input).take(len), len, max_pixels, budget, wanted) {
                Ok(Derived::All(made)) => return protocol::write_made(&mut out, &made).map_err(|e| e.to_string()),
                Ok(Derived::Thumb(made)) => return protocol::write_thumb(&mut out, &made).map_err(|e| e.to_string()),
                Err(reason) => Reply::Undecodable(reason),
            }
        }
        Work::DerivePng { len } => {
            confine::lock_down(&job.limits, Files::Nothing)?;
            let mut png = Vec::new();
            (&mut input).take(len.min(MAX_PNG_BYTES)).read_to_end(&mut png).map_err(|e| e.to_string())?;
            match media::derive::derive(&png, ImageFormat::Png, 1) {
                Ok(made) => return protocol::write_made(&mut out, &made).map_err(|e| e.to_string()),
                Err(e) => Reply::Undecodable(e.to_string()),
            }
        }
        Work::Exec { program, args, input: file } => {
            confine::lock_down(&job.limits, Files::Exec { program: &program, input: &file })?;
            // Only returns on failure. stdin, stdout and stderr pass on; the environment is empty.
            let error = std::process::Command::new(&program).args(&args).env_clear().exec();
            return Err(format!("executing {}: {error}", program.display()));
        }
    };
    protocol::write_line(&mut out, &reply).and_then(|()| out.flush()).map_err(|e| e.to_string())
}

/// What a derive job asks for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Wanted {
    All,
    /// The thumb alone where that is much cheaper, else all.
    Thumb,
}

/// Probes the original's head again (the orientation is not stored), then derives from the
/// head and the rest of `original` as it arrives, its decoder holding at most `budget` bytes;
/// `Err` is why it cannot be decoded.
fn derive(mut original: impl Read, len: u64, max_pixels: u64, budget: u64, wanted: Wanted) -> Result<Derived, String> {
    let mut head = Vec::with_capacity(HEAD_BYTES);
    let mut want = HEAD_BYTES;
    let probe = loop {
        let missing = want.saturating_sub(head.len()) as u64;
        (&mut original).take(missing).read_to_end(&mut head).map_err(|e| format!("reading the original: {e}"))?;
        match media::probe::probe_accepted(&head, len, max_pixels) {
            // Each request is longer than the last (the probe asks for more than it had), so
            // this ends once the whole original is read.
            Err(ProbeError::NeedMore(more)) if more > head.len() && (head.len() as u64) < len => want = more,
            other => break other.map_err(|e| e.to_string())?,
        }
    };
    let rest: Box<dyn Read> = match probe.format {
        ImageFormat::Jpeg => Box::new(ScanLimit::new(Cursor::new(&head[..]).chain(original), MAX_JPEG_SCANS)),
        _ => Box::new(Cursor::new(&head[..]).chain(original)),
    };
    let source = BufReader::with_capacity(READ_BUFFER, rest);
    let (format, orientation) = (probe.format, probe.orientation);
    let made = if wanted == Wanted::Thumb && media::derive::thumb_alone_is_cheaper(format) {
        media::derive::derive_thumb_streamed(source, &head, format, orientation, budget).map(Derived::Thumb)
    } else {
        media::derive::derive_streamed(source, &head, format, orientation, budget).map(Derived::All)
    };
    made.map_err(|e| e.to_string())
}

/// Counts a JPEG's start-of-scan markers (`FF DA`) as its bytes pass, and fails the read past
/// `limit`. The pair cannot occur inside entropy-coded data (an `FF` there is followed by `00`),
/// so every one is a scan.
struct ScanLimit<R> {
    inner: R,
    scans: u32,
    limit: u32,
    after_ff: bool,
}

impl<R: Read> ScanLimit<R> {
    fn new(inner: R, limit: u32) -> Self {
        Self { inner, scans: 0, limit, after_ff: false }
    }
}

impl<R: Read> Read for ScanLimit<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let read = &buf[..n];
        if self.after_ff && read.first() == Some(&0xDA) {
            self.scans += 1;
        }
        // The `FF`s found by memchr (SIMD): a byte-by-byte loop here cost 2.5% of a photo's job.
        self.scans += memchr::memchr_iter(0xFF, read).filter(|&at| read.get(at + 1) == Some(&0xDA)).count() as u32;
        if n > 0 {
            self.after_ff = read[n - 1] == 0xFF;
        }
        if self.scans > self.limit {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("the JPEG has more than {} scans", self.limit),
            ));
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jpeg_with_more_scans_than_the_limit_fails_its_read() {
        let mut scans = vec![0xFF, 0xD8];
        for _ in 0..5 {
            scans.extend_from_slice(&[0xFF, 0xDA, 0x00, 0x02, 0x12, 0xFF, 0x00, 0x34]);
        }
        let mut under = Vec::new();
        assert!(ScanLimit::new(&scans[..], 5).read_to_end(&mut under).is_ok());
        let mut over = Vec::new();
        let error = ScanLimit::new(&scans[..], 4).read_to_end(&mut over).unwrap_err();
        assert!(error.to_string().contains("more than 4 scans"));
    }

    #[test]
    fn a_marker_split_between_two_reads_is_counted() {
        struct OneByte<'a>(&'a [u8]);
        impl Read for OneByte<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let Some((&first, rest)) = self.0.split_first() else { return Ok(0) };
                buf[0] = first;
                self.0 = rest;
                Ok(1)
            }
        }
        let bytes = [0xFF, 0xDA, 0xFF, 0xDA];
        assert!(ScanLimit::new(OneByte(&bytes), 1).read_to_end(&mut Vec::new()).is_err());
    }
}
