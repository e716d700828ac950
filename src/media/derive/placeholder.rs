//! The placeholder an Upload carries: a ThumbHash (about 25 bytes) of its thumb, which the page
//! draws as the tile's background while the thumb loads — the photo's colours and rough shapes,
//! at its aspect ratio, instead of a grey box.

use super::{DeriveError, Pixels, fit, resize};

/// ThumbHash reads at most 100 × 100 pixels (more costs time and changes nothing).
const HASH_EDGE: u32 = 100;

/// The ThumbHash of upright pixels (the thumb's: already small, so the shrink is cheap).
pub(super) fn thumbhash(thumb: &Pixels) -> Result<Vec<u8>, DeriveError> {
    let (width, height) = fit(thumb.width, thumb.height, HASH_EDGE);
    let small;
    let small = if (width, height) == (thumb.width, thumb.height) {
        thumb
    } else {
        small = resize(thumb, width, height)?;
        &small
    };
    let rgba: Vec<u8> = match small.channels {
        1 => small.buf.iter().flat_map(|&g| [g, g, g, 255]).collect(),
        _ => small.buf.chunks_exact(3).flat_map(|p| [p[0], p[1], p[2], 255]).collect(),
    };
    if rgba.len() != width as usize * height as usize * 4 || width > HASH_EDGE || height > HASH_EDGE {
        return Err(DeriveError::Internal("placeholder: the pixels do not match the size".into()));
    }
    Ok(thumbhash::rgba_to_thumb_hash(width as usize, height as usize, &rgba))
}
