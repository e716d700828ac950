//! Image work, all synchronous: callers run it through `Blocking::media`.
//! `probe` reads what ingest needs from an image's header (format, dimensions, orientation,
//! capture time) and refuses what is not a whole image of a supported kind, without decoding.
//! `derive` makes the thumb and the preview: decode once, resize, turn upright, encode.

pub mod derive;
pub mod gif_walk;
pub mod heif_header;
pub mod param_sets;
pub mod probe;
pub mod video;

pub use probe::{ImageFormat, Probe, ProbeError, Sniffed, Sniffer};
