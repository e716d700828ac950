//! Lossy WebP of a derivative's pixels, through libwebp's advanced API (quality and `method`
//! are set; `WebPEncodeRGB` would fix the method at 4). Made beside the JPEG of each size and
//! served to browsers that say they accept WebP: at the same SSIM against a reference downscale
//! it is markedly smaller (`examples/bench_thumbs.rs`, docs/benchmarks.md "Lighter galleries").
//!
//! No upload gets a WebP any more (`formats`): libwebp is built only with the `webp-encode`
//! feature, which `examples/bench_thumbs.rs` needs. That keeps its C build (48 s of a cold
//! release build on this project's machine) out of the server's.

#[cfg(feature = "webp-encode")]
use libwebp_sys as sys;

use super::{DeriveError, Encoded, Pixels};

/// How a size is encoded.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WebpSettings {
    /// libwebp's quality, 0–100.
    pub quality: f32,
    /// libwebp's effort, 0 (fastest) – 6 (smallest).
    pub method: i32,
}

/// Without libwebp in the build: refused, as no upload asks for it.
#[cfg(not(feature = "webp-encode"))]
pub(super) fn encode(_: &Pixels, _: WebpSettings) -> Result<Encoded, DeriveError> {
    Err(DeriveError::Internal("this build has no WebP encoder (the webp-encode feature)".into()))
}

/// Encodes upright pixels (gray or RGB) as a lossy WebP file without metadata.
#[cfg(feature = "webp-encode")]
pub(super) fn encode(p: &Pixels, settings: WebpSettings) -> Result<Encoded, DeriveError> {
    let internal = |what: &str| DeriveError::Internal(format!("WebP encode: {what}"));
    // WebP's limit is 16383 on each side; derivatives are at most `PREVIEW_MAX_EDGE`.
    let (Ok(width), Ok(height)) = (i32::try_from(p.width), i32::try_from(p.height)) else {
        return Err(internal("too large"));
    };
    if width > 16383 || height > 16383 {
        return Err(internal("too large"));
    }
    let rgb = p.rgb();
    if rgb.len() != p.width as usize * p.height as usize * 3 {
        return Err(internal("the pixels do not match the size"));
    }
    let mut config = sys::WebPConfig::new().map_err(|()| internal("libwebp refused its own settings"))?;
    config.quality = settings.quality;
    config.method = settings.method;
    // SAFETY: `config` was initialised by libwebp and only plain fields were changed.
    if unsafe { sys::WebPValidateConfig(&config) } == 0 {
        return Err(internal("invalid settings"));
    }
    let mut picture = sys::WebPPicture::new().map_err(|()| internal("libwebp's version does not match"))?;
    picture.width = width;
    picture.height = height;
    let mut writer = std::mem::MaybeUninit::<sys::WebPMemoryWriter>::uninit();
    // SAFETY: `WebPMemoryWriterInit` fully initialises the writer it is given.
    let mut writer = unsafe {
        sys::WebPMemoryWriterInit(writer.as_mut_ptr());
        writer.assume_init()
    };
    picture.writer = Some(sys::WebPMemoryWrite);
    picture.custom_ptr = (&raw mut writer).cast();
    // SAFETY: `rgb` holds `width * height` RGB pixels, rows `width * 3` bytes apart, and
    // outlives the import (which copies them into the picture's own YUV planes). The writer the
    // picture points at lives until after `WebPEncode`; the picture's and the writer's memory
    // are released below on every path.
    let encoded = unsafe {
        let imported = sys::WebPPictureImportRGB(&mut picture, rgb.as_ptr(), width * 3) != 0;
        let encoded = imported && sys::WebPEncode(&config, &mut picture) != 0;
        let error = picture.error_code;
        sys::WebPPictureFree(&mut picture);
        let bytes = encoded.then(|| std::slice::from_raw_parts(writer.mem, writer.size).to_vec());
        sys::WebPMemoryWriterClear(&mut writer);
        bytes.ok_or(error)
    };
    match encoded {
        Ok(bytes) => Ok(Encoded { bytes, width: p.width, height: p.height }),
        Err(error) => Err(internal(&format!("{error:?}"))),
    }
}
