//! Lossy AVIF of a derivative's pixels, through Debian's libheif (1.15) and its AV1 encoder,
//! libaom (3.6): the library that already decodes HEIC, so AVIF needs no new dependency. Made
//! beside the JPEG thumb and served to browsers that say they accept AVIF: at the same SSIM
//! against a reference downscale it is the lightest format every current phone browser decodes
//! (`examples/bench_thumbs.rs`, docs/benchmarks.md "Lighter galleries").
//!
//! The file says what its pixels are (an `nclx` box: BT.709 primaries, the sRGB transfer,
//! BT.601 full-range YCbCr), so browsers show it as they show the sRGB JPEG beside it.

use std::ffi::{CStr, c_void};
use std::ptr;

use libheif_sys as lh;

use super::ycbcr::{self, Planes};
use super::{DeriveError, Encoded, Pixels};

/// How a thumb is encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AvifSettings {
    /// libheif's quality, 0–100 (mapped onto aom's quantizer).
    pub quality: i32,
    /// aom's speed, 0 (slowest, smallest) – 9.
    pub speed: i32,
    /// Whether aom also tries rectangular partitions of a block (its default). Without them,
    /// speed 6 takes 50 ms a thumb instead of 68 ms, for 0.7% more bytes at the same SSIM.
    pub rect_partitions: bool,
}

/// Encodes upright pixels (gray or RGB) as a lossy AVIF file (4:2:0, 8 bits) without metadata.
pub(super) fn encode(p: &Pixels, settings: AvifSettings) -> Result<Encoded, DeriveError> {
    let (width, height) = (p.width as usize, p.height as usize);
    if p.buf.len() != width * height * p.channels {
        return Err(internal("the pixels do not match the size"));
    }
    let planes = ycbcr::planes(&p.buf, width, height, p.channels);
    let context = Context::new()?;
    let encoder = context.encoder(settings)?;
    let image = Image::ycbcr(&planes)?;
    context.encode(&image, &encoder)?;
    let bytes = context.write()?;
    Ok(Encoded { bytes, width: p.width, height: p.height })
}

fn internal(what: &str) -> DeriveError {
    DeriveError::Internal(format!("AVIF encode: {what}"))
}

fn check(err: lh::heif_error) -> Result<(), DeriveError> {
    if err.code == lh::heif_error_code_heif_error_Ok {
        return Ok(());
    }
    let message = if err.message.is_null() {
        "libheif failed".to_owned()
    } else {
        // SAFETY: libheif's messages are NUL-terminated strings that live as long as the call's
        // context; they are copied here at once.
        unsafe { CStr::from_ptr(err.message) }.to_string_lossy().into_owned()
    };
    Err(internal(&message))
}

struct Context {
    raw: *mut lh::heif_context,
}

impl Context {
    fn new() -> Result<Self, DeriveError> {
        // SAFETY: a fresh context, freed by `Drop`.
        let raw = unsafe { lh::heif_context_alloc() };
        if raw.is_null() {
            return Err(internal("libheif could not allocate a context"));
        }
        Ok(Self { raw })
    }

    fn encoder(&self, settings: AvifSettings) -> Result<Encoder<'_>, DeriveError> {
        let mut raw = ptr::null_mut();
        // SAFETY: the context is alive; the encoder is released by `Drop`.
        check(unsafe {
            lh::heif_context_get_encoder_for_format(
                self.raw,
                lh::heif_compression_format_heif_compression_AV1,
                &mut raw,
            )
        })?;
        if raw.is_null() {
            return Err(internal("libheif has no AV1 encoder"));
        }
        let encoder = Encoder { raw, _context: self };
        // SAFETY: the encoder is alive; the names are NUL-terminated literals.
        unsafe {
            check(lh::heif_encoder_set_lossy_quality(raw, settings.quality))?;
            check(lh::heif_encoder_set_parameter_integer(raw, c"speed".as_ptr(), settings.speed))?;
            // Derivative jobs already run one per core.
            check(lh::heif_encoder_set_parameter_integer(raw, c"threads".as_ptr(), 1))?;
            check(lh::heif_encoder_set_parameter_string(raw, c"chroma".as_ptr(), c"420".as_ptr()))?;
            check(lh::heif_encoder_set_parameter_string(raw, c"tune".as_ptr(), c"ssim".as_ptr()))?;
            if !settings.rect_partitions {
                check(lh::heif_encoder_set_parameter_string(
                    raw,
                    c"aom:enable-rect-partitions".as_ptr(),
                    c"0".as_ptr(),
                ))?;
            }
        }
        Ok(encoder)
    }

    fn encode(&self, image: &Image, encoder: &Encoder<'_>) -> Result<(), DeriveError> {
        // SAFETY: options allocated by libheif (so of its own version) and freed before return;
        // the context, image and encoder are alive; the handle is released at once.
        unsafe {
            let options = lh::heif_encoding_options_alloc();
            if options.is_null() {
                return Err(internal("libheif could not allocate encoding options"));
            }
            (*options).save_alpha_channel = 0;
            let mut handle = ptr::null_mut();
            let err = lh::heif_context_encode_image(self.raw, image.raw, encoder.raw, options, &mut handle);
            lh::heif_encoding_options_free(options);
            if !handle.is_null() {
                lh::heif_image_handle_release(handle);
            }
            check(err)
        }
    }

    fn write(&self) -> Result<Vec<u8>, DeriveError> {
        unsafe extern "C" fn append(
            _ctx: *mut lh::heif_context,
            data: *const c_void,
            size: usize,
            userdata: *mut c_void,
        ) -> lh::heif_error {
            // SAFETY: `userdata` is the `Vec` `write` passes, alive and not otherwise borrowed
            // during `heif_context_write`; libheif hands `size` readable bytes at `data`.
            unsafe {
                let out = &mut *userdata.cast::<Vec<u8>>();
                out.extend_from_slice(std::slice::from_raw_parts(data.cast::<u8>(), size));
            }
            lh::heif_error {
                code: lh::heif_error_code_heif_error_Ok,
                subcode: lh::heif_suberror_code_heif_suberror_Unspecified,
                message: c"Success".as_ptr(),
            }
        }
        let mut out = Vec::new();
        let mut writer = lh::heif_writer { writer_api_version: 1, write: Some(append) };
        // SAFETY: the context is alive; `out` outlives the call, which alone uses it.
        check(unsafe { lh::heif_context_write(self.raw, &mut writer, (&raw mut out).cast()) })?;
        Ok(out)
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: allocated in `new`, freed once, after the encoder and image that borrow it.
        unsafe { lh::heif_context_free(self.raw) };
    }
}

struct Encoder<'a> {
    raw: *mut lh::heif_encoder,
    _context: &'a Context,
}

impl Drop for Encoder<'_> {
    fn drop(&mut self) {
        // SAFETY: obtained in `Context::encoder`, released once.
        unsafe { lh::heif_encoder_release(self.raw) };
    }
}

/// An 8-bit YCbCr 4:2:0 image of libheif's, tagged sRGB with BT.601 full-range YCbCr: the
/// planes are handed over as they are, so libheif converts nothing.
struct Image {
    raw: *mut lh::heif_image,
}

impl Image {
    fn ycbcr(planes: &Planes) -> Result<Self, DeriveError> {
        let (Ok(width), Ok(height)) = (i32::try_from(planes.width), i32::try_from(planes.height)) else {
            return Err(internal("too large"));
        };
        let mut raw = ptr::null_mut();
        // SAFETY: a fresh image, released by `Drop` on every path below.
        check(unsafe {
            lh::heif_image_create(
                width,
                height,
                lh::heif_colorspace_heif_colorspace_YCbCr,
                lh::heif_chroma_heif_chroma_420,
                &mut raw,
            )
        })?;
        if raw.is_null() {
            return Err(internal("libheif returned no image"));
        }
        let image = Self { raw };
        image.add_plane(lh::heif_channel_heif_channel_Y, &planes.y, planes.width, planes.height)?;
        image.add_plane(lh::heif_channel_heif_channel_Cb, &planes.cb, planes.chroma_width, planes.chroma_height)?;
        image.add_plane(lh::heif_channel_heif_channel_Cr, &planes.cr, planes.chroma_width, planes.chroma_height)?;
        // SAFETY: the image is alive; the profile is allocated by libheif and freed after libheif
        // copied it.
        unsafe {
            let nclx = lh::heif_nclx_color_profile_alloc();
            if nclx.is_null() {
                return Err(internal("libheif could not allocate a colour profile"));
            }
            (*nclx).color_primaries = lh::heif_color_primaries_heif_color_primaries_ITU_R_BT_709_5;
            (*nclx).transfer_characteristics =
                lh::heif_transfer_characteristics_heif_transfer_characteristic_IEC_61966_2_1;
            (*nclx).matrix_coefficients = lh::heif_matrix_coefficients_heif_matrix_coefficients_ITU_R_BT_601_6;
            (*nclx).full_range_flag = 1;
            let err = lh::heif_image_set_nclx_color_profile(raw, nclx);
            lh::heif_nclx_color_profile_free(nclx);
            check(err)?;
        }
        Ok(image)
    }

    /// Copies `height` rows of `width` bytes into a new 8-bit plane.
    fn add_plane(
        &self,
        channel: lh::heif_channel,
        bytes: &[u8],
        width: usize,
        height: usize,
    ) -> Result<(), DeriveError> {
        let (Ok(w), Ok(h)) = (i32::try_from(width), i32::try_from(height)) else {
            return Err(internal("too large"));
        };
        if bytes.len() != width * height {
            return Err(internal("a plane does not match its size"));
        }
        // SAFETY: the image is alive. The plane libheif allocates holds `height` rows of at
        // least `width` bytes, `stride` apart; `bytes` holds `height` rows of `width` bytes.
        unsafe {
            check(lh::heif_image_add_plane(self.raw, channel, w, h, 8))?;
            let mut stride = 0;
            let plane = lh::heif_image_get_plane(self.raw, channel, &mut stride);
            let stride = usize::try_from(stride).unwrap_or(0);
            if plane.is_null() || stride < width {
                return Err(internal("libheif gave no plane"));
            }
            for (y, line) in bytes.chunks_exact(width).enumerate() {
                ptr::copy_nonoverlapping(line.as_ptr(), plane.add(y * stride), width);
            }
        }
        Ok(())
    }
}

impl Drop for Image {
    fn drop(&mut self) {
        // SAFETY: created in `ycbcr`, released once.
        unsafe { lh::heif_image_release(self.raw) };
    }
}
