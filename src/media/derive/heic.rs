//! HEIC decoding through Debian's libheif (1.15, with libde265 for HEVC), over the C API of
//! `libheif-sys` 1.14 (the newest bindings that do not require libheif 1.16 or later). The few
//! calls are wrapped here so the rest of `derive` sees a safe function.
//!
//! The probe (`heif_header`, pure Rust) has checked the file's limits before libheif sees it;
//! libheif's own image-size limit is set to the same bound as a second guard. libheif is asked
//! not to apply `irot`/`imir`: `derive` turns the preview upright after resizing (fewer pixels
//! to move), as it does for a JPEG's EXIF orientation, from the orientation the probe found.
//! libheif converts YCbCr to 8-bit RGB itself; an embedded ICC profile is handed on to
//! `colour` like a JPEG's.
//!
//! Memory (`budget::heic_decode_bytes`): libheif needs the whole file; the decoder's picture
//! and libheif's copy of it (YCbCr, at most 3 samples a pixel), the RGB(A) image, and the copy
//! of it made here without row padding.

use std::ffi::CStr;
use std::io::Read;
use std::ptr;

use libheif_sys as lh;

use super::{Decoded, DeriveError, Original, Pixels, budget, check_size, flatten, undecodable};

/// Decoding threads libheif may use for the tiles of one photo. Derivative jobs already run one
/// per core; measured in docs/benchmarks.md, "HEIC derivatives".
const DECODING_THREADS: i32 = 1;

pub(super) fn decode_heic(original: Original<'_>, max_pixels: u64, budget: u64) -> Result<Decoded, DeriveError> {
    let mut bytes = Vec::new();
    original.source.take(budget.saturating_add(1)).read_to_end(&mut bytes).map_err(undecodable)?;
    let file = bytes.len() as u64;
    budget::check(file, budget)?;
    let budget = budget - file;

    let context = Context::read(&bytes, max_pixels)?;
    let handle = context.primary()?;
    let (width, height) = handle.stored_size();
    check_size(width, height, max_pixels)?;
    let alpha = handle.has_alpha();
    let channels = if alpha { 4 } else { 3 };
    budget::check(budget::heic_decode_bytes(width, height, handle.luma_bits(), channels), budget)?;
    let icc = handle.icc_profile();

    let image = handle.decode(alpha)?;
    let (plane, stride, w, h) = image.interleaved()?;
    if u64::from(w) * u64::from(h) > u64::from(width) * u64::from(height) {
        return Err(undecodable("the decoded image is larger than its header says"));
    }
    let row = w as usize * channels;
    let mut buf = Vec::with_capacity(row * h as usize);
    for y in 0..h as usize {
        buf.extend_from_slice(plane.get(y * stride..y * stride + row).ok_or_else(|| undecodable("short plane"))?);
    }
    drop(image);
    let (buf, channels) = if alpha { (flatten::<4>(&buf), 3) } else { (buf, 3) };
    Ok((Pixels { buf, width: w, height: h, channels }, icc))
}

fn check(err: lh::heif_error) -> Result<(), DeriveError> {
    if err.code == lh::heif_error_code_heif_error_Ok {
        return Ok(());
    }
    let message = if err.message.is_null() {
        "libheif failed".to_owned()
    } else {
        // SAFETY: libheif's messages are static NUL-terminated strings.
        unsafe { CStr::from_ptr(err.message) }.to_string_lossy().into_owned()
    };
    Err(undecodable(message))
}

/// A libheif context over bytes it does not copy: it borrows them.
struct Context<'a> {
    raw: *mut lh::heif_context,
    _bytes: &'a [u8],
}

impl<'a> Context<'a> {
    fn read(bytes: &'a [u8], max_pixels: u64) -> Result<Self, DeriveError> {
        // SAFETY: a fresh context, freed by `Drop`; `bytes` outlives it (the borrow).
        unsafe {
            let raw = lh::heif_context_alloc();
            if raw.is_null() {
                return Err(DeriveError::Internal("libheif could not allocate a context".into()));
            }
            let context = Context { raw, _bytes: bytes };
            // The limit is on width × height, given as the side of a square.
            let side = (max_pixels as f64).sqrt().ceil().min(f64::from(i32::MAX)) as i32;
            lh::heif_context_set_maximum_image_size_limit(raw, side);
            lh::heif_context_set_max_decoding_threads(raw, DECODING_THREADS);
            check(lh::heif_context_read_from_memory_without_copy(
                raw,
                bytes.as_ptr().cast(),
                bytes.len(),
                ptr::null(),
            ))?;
            Ok(context)
        }
    }

    fn primary(&self) -> Result<Handle<'_>, DeriveError> {
        let mut raw = ptr::null_mut();
        // SAFETY: the context is alive; the handle is released by `Drop`.
        check(unsafe { lh::heif_context_get_primary_image_handle(self.raw, &mut raw) })?;
        if raw.is_null() {
            return Err(undecodable("no primary image"));
        }
        Ok(Handle { raw, _context: self })
    }
}

impl Drop for Context<'_> {
    fn drop(&mut self) {
        // SAFETY: allocated in `read`, freed once.
        unsafe { lh::heif_context_free(self.raw) };
    }
}

struct Handle<'a> {
    raw: *mut lh::heif_image_handle,
    _context: &'a Context<'a>,
}

impl Handle<'_> {
    /// The size as stored (`ispe`), before any turn.
    fn stored_size(&self) -> (u32, u32) {
        // SAFETY: the handle is alive.
        let (w, h) = unsafe {
            (lh::heif_image_handle_get_ispe_width(self.raw), lh::heif_image_handle_get_ispe_height(self.raw))
        };
        (w.max(0) as u32, h.max(0) as u32)
    }

    fn has_alpha(&self) -> bool {
        // SAFETY: the handle is alive.
        unsafe { lh::heif_image_handle_has_alpha_channel(self.raw) != 0 }
    }

    fn luma_bits(&self) -> u32 {
        // SAFETY: the handle is alive.
        unsafe { lh::heif_image_handle_get_luma_bits_per_pixel(self.raw) }.clamp(8, 16) as u32
    }

    /// The embedded ICC profile (`colr` of type `prof` or `rICC`); an `nclx` description is not
    /// one (libheif applies its matrix when converting to RGB).
    fn icc_profile(&self) -> Option<Vec<u8>> {
        // SAFETY: the handle is alive; the buffer is as long as libheif says the profile is.
        unsafe {
            let kind = lh::heif_image_handle_get_color_profile_type(self.raw);
            if kind != lh::heif_color_profile_type_heif_color_profile_type_prof
                && kind != lh::heif_color_profile_type_heif_color_profile_type_rICC
            {
                return None;
            }
            let size = lh::heif_image_handle_get_raw_color_profile_size(self.raw);
            if size == 0 || size > 4 << 20 {
                return None;
            }
            let mut icc = vec![0u8; size];
            check(lh::heif_image_handle_get_raw_color_profile(self.raw, icc.as_mut_ptr().cast())).ok()?;
            Some(icc)
        }
    }

    /// Decodes to 8-bit interleaved RGB (RGBA with `alpha`), as stored: no turn, no mirror.
    fn decode(&self, alpha: bool) -> Result<Image, DeriveError> {
        let chroma = if alpha {
            lh::heif_chroma_heif_chroma_interleaved_RGBA
        } else {
            lh::heif_chroma_heif_chroma_interleaved_RGB
        };
        // SAFETY: options allocated by libheif (so of its own version) and freed before return;
        // the image is released by `Drop`.
        unsafe {
            let options = lh::heif_decoding_options_alloc();
            if options.is_null() {
                return Err(DeriveError::Internal("libheif could not allocate decoding options".into()));
            }
            (*options).ignore_transformations = 1;
            (*options).convert_hdr_to_8bit = 1;
            let mut raw = ptr::null_mut();
            let err =
                lh::heif_decode_image(self.raw, &mut raw, lh::heif_colorspace_heif_colorspace_RGB, chroma, options);
            lh::heif_decoding_options_free(options);
            check(err)?;
            if raw.is_null() {
                return Err(undecodable("libheif returned no image"));
            }
            Ok(Image { raw })
        }
    }
}

impl Drop for Handle<'_> {
    fn drop(&mut self) {
        // SAFETY: obtained in `primary`, released once.
        unsafe { lh::heif_image_handle_release(self.raw) };
    }
}

struct Image {
    raw: *mut lh::heif_image,
}

impl Image {
    /// The interleaved plane, its stride, width and height.
    fn interleaved(&self) -> Result<(&[u8], usize, u32, u32), DeriveError> {
        let channel = lh::heif_channel_heif_channel_interleaved;
        // SAFETY: the image is alive while the returned slice borrows it; libheif's plane holds
        // `stride × height` bytes.
        unsafe {
            let mut stride = 0;
            let data = lh::heif_image_get_plane_readonly(self.raw, channel, &mut stride);
            let (w, h) = (lh::heif_image_get_width(self.raw, channel), lh::heif_image_get_height(self.raw, channel));
            if data.is_null() || stride <= 0 || w <= 0 || h <= 0 {
                return Err(undecodable("libheif returned an empty image"));
            }
            let (stride, w, h) = (stride as usize, w as u32, h as u32);
            Ok((std::slice::from_raw_parts(data, stride * h as usize), stride, w, h))
        }
    }
}

impl Drop for Image {
    fn drop(&mut self) {
        // SAFETY: obtained in `decode`, released once.
        unsafe { lh::heif_image_release(self.raw) };
    }
}
