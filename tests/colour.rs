//! Derivatives in true colours: photos tagged with an ICC profile (Adobe RGB from cameras,
//! Display P3 from phones, gray and CMYK from scanners and print work) get thumbs and previews
//! converted to sRGB through that profile, as a colour-managed browser shows the original,
//! and the derivatives still carry no profile. sRGB-tagged photos and photos with a profile
//! that cannot be used keep the pixels they always had.

mod common;

use common::icc;
use common::images;
use common::{Backend, Guest, TestApp, settled, upload_ok};
use image::ImageEncoder;
use reqwest::StatusCode;
use serde_json::Value;

const W: u32 = 600;
const H: u32 = 400;

/// A JPEG of `pixels` (RGB, gray or CMYK), best quality, with `icc` in APP2 segments as the
/// encoder splits it (a profile over 64 KiB takes several).
fn jpeg(pixels: &[u8], color: jpeg_encoder::ColorType, icc: Option<&[u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    let mut encoder = jpeg_encoder::Encoder::new(&mut out, 100);
    if let Some(icc) = icc {
        encoder.add_icc_profile(icc).expect("the profile fits");
    }
    encoder.encode(pixels, W as u16, H as u16, color).expect("encode");
    out
}

/// A flat image of one colour (any number of channels).
fn flat(colour: &[u8]) -> Vec<u8> {
    colour.repeat((W * H) as usize)
}

/// The left half one colour, the right half another.
fn halves(left: [u8; 3], right: [u8; 3]) -> Vec<u8> {
    (0..W * H).flat_map(|i| if i % W < W / 2 { left } else { right }).collect()
}

/// A JPEG with `icc` split by hand into `count` APP2 "ICC_PROFILE" segments, numbered 1..=count.
fn with_icc_segments(jpeg: &[u8], icc: &[u8], count: usize) -> Vec<u8> {
    let mut out = jpeg[..2].to_vec();
    let chunk = icc.len().div_ceil(count);
    for (i, part) in icc.chunks(chunk).enumerate() {
        out.extend_from_slice(&[0xFF, 0xE2]);
        out.extend_from_slice(&((2 + 14 + part.len()) as u16).to_be_bytes());
        out.extend_from_slice(b"ICC_PROFILE\0");
        out.extend_from_slice(&[i as u8 + 1, count as u8]);
        out.extend_from_slice(part);
    }
    out.extend_from_slice(&jpeg[2..]);
    out
}

/// `pixels` (RGB) encoded by `encoder` with `icc` embedded.
fn with_icc(mut encoder: impl ImageEncoder, pixels: &[u8], icc: &[u8]) {
    encoder.set_icc_profile(icc.to_vec()).expect("the format takes a profile");
    encoder.write_image(pixels, W, H, image::ExtendedColorType::Rgb8).expect("encode");
}

fn png_with_icc(pixels: &[u8], icc: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    with_icc(image::codecs::png::PngEncoder::new(&mut out), pixels, icc);
    out
}

/// A lossless WebP in the extended format: VP8X, ICCP, then the VP8L bitstream.
fn webp_with_icc(pixels: &[u8], icc: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    with_icc(image::codecs::webp::WebPEncoder::new_lossless(&mut out), pixels, icc);
    out
}

struct Derived {
    thumb: image::RgbImage,
    preview: image::RgbImage,
    thumb_bytes: Vec<u8>,
    preview_bytes: Vec<u8>,
}

/// Uploads `bytes`, waits for its derivatives and fetches them, checking they are JPEGs with
/// no ICC profile (no APP2 segment at all).
async fn derive(app: &TestApp, guest: &Guest, bytes: &[u8]) -> Derived {
    let created = upload_ok(app, guest, bytes).await;
    let upload = settled(app, &guest.token, created["id"].as_str().expect("id")).await;
    assert_eq!(upload["status"], "ready", "{upload}");
    let fetch = async |url: &Value| {
        let url = url.as_str().expect("a URL");
        let response = app.client.get(app.url(url)).bearer_auth(&guest.token).send().await.expect("GET");
        assert_eq!(response.status(), StatusCode::OK, "{url}");
        let bytes = response.bytes().await.expect("body").to_vec();
        assert!(!images::jpeg_markers(&bytes).contains(&0xE2), "{url} carries an APP2 segment");
        assert!(!bytes.windows(11).any(|w| w == b"ICC_PROFILE"), "{url} carries a profile");
        let image = image::load_from_memory_with_format(&bytes, image::ImageFormat::Jpeg).expect("a JPEG");
        (image.into_rgb8(), bytes)
    };
    let (thumb, thumb_bytes) = fetch(&upload["urls"]["thumb"]).await;
    let (preview, preview_bytes) = fetch(&upload["urls"]["preview"]).await;
    assert_eq!(thumb.dimensions(), (400, 267));
    Derived { thumb, preview, thumb_bytes, preview_bytes }
}

/// The thumb's pixel at (`fx`, 0.5) of its width and height.
fn at(image: &image::RgbImage, fx: f64) -> [u8; 3] {
    let (w, h) = image.dimensions();
    image.get_pixel((f64::from(w) * fx) as u32, h / 2).0
}

#[track_caller]
fn assert_near(got: [u8; 3], want: [f64; 3], tolerance: f64, what: &str) {
    let ok = got.iter().zip(want).all(|(&g, w)| (f64::from(g) - w).abs() <= tolerance);
    assert!(ok, "{what}: {got:?}, expected {want:?} ± {tolerance}");
}

async fn adobe_rgb_and_display_p3_photos_get_srgb_derivatives(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;

    // Adobe RGB from a camera, its profile split over three APP2 segments.
    let green = [40, 150, 60];
    let plain = jpeg(&flat(&green), jpeg_encoder::ColorType::Rgb, None);
    let adobe = with_icc_segments(&plain, &icc::system(icc::ADOBE_RGB_PATH), 3);
    let d = derive(&app, &guest, &adobe).await;
    let want = icc::expected_srgb(green, &icc::ADOBE_RGB, icc::adobe_to_linear);
    assert!(want[0] < 1.0 && (150.5..152.5).contains(&want[1]) && (47.5..49.5).contains(&want[2]), "{want:?}");
    assert_near(at(&d.thumb, 0.5), want, 3.0, "Adobe RGB green, thumb");
    assert_near(at(&d.preview, 0.5), want, 3.0, "Adobe RGB green, preview");

    // Display P3 from a phone: a saturated red and a mid green.
    let (red, mid) = ([220, 40, 40], [120, 160, 90]);
    let want_red = icc::expected_srgb(red, &icc::DISPLAY_P3, icc::srgb_to_linear);
    let want_mid = icc::expected_srgb(mid, &icc::DISPLAY_P3, icc::srgb_to_linear);
    assert!(want_red[0] > 235.0 && want_red[2] > 15.0 && want_mid[0] < 112.0, "{want_red:?} {want_mid:?}");
    let p3 = icc::display_p3();
    let pixels = halves(red, mid);
    for (what, bytes) in [
        ("P3 JPEG", jpeg(&pixels, jpeg_encoder::ColorType::Rgb, Some(&p3))),
        ("P3 PNG (iCCP)", png_with_icc(&pixels, &p3)),
        ("P3 WebP (ICCP)", webp_with_icc(&pixels, &p3)),
    ] {
        if what.contains("WebP") {
            assert_eq!(&bytes[12..16], b"VP8X", "the extended format");
            assert!(bytes.windows(4).any(|w| w == b"ICCP") && bytes.windows(4).any(|w| w == b"VP8L"));
        }
        let d = derive(&app, &guest, &bytes).await;
        assert_near(at(&d.thumb, 0.2), want_red, 3.0, &format!("{what}, red"));
        assert_near(at(&d.thumb, 0.8), want_mid, 3.0, &format!("{what}, mid green"));
    }
}

async fn gray_and_cmyk_photos_go_through_their_profiles(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;

    // A gray scan tagged with an L* profile: level 128 is L* 50.2, sRGB 119, not 128.
    let grey = jpeg(&flat(&[128]), jpeg_encoder::ColorType::Luma, Some(&icc::system(icc::GREY_LSTAR_PATH)));
    let d = derive(&app, &guest, &grey).await;
    let want = icc::lstar_to_srgb(128.0 / 255.0 * 100.0);
    assert!((118.0..121.0).contains(&want), "{want}");
    assert_near(at(&d.thumb, 0.5), [want; 3], 3.0, "gray L*");

    // CMYK for print, with Ghostscript's CMYK profile (187 KB: three APP2 segments). The
    // expected colour is Little CMS's for the same ink, relative colorimetric: no black-point
    // scaling, as Chrome and Firefox show it. The engines interpolate the profile's tables
    // differently (2 steps apart at most on a grid of 3645 inks, see docs/benchmarks.md), and
    // a flat colour's JPEG round trip adds 1–2: 4.
    let ink = [40, 160, 220, 20];
    let profile = icc::system(icc::CMYK_PATH);
    let cmyk = jpeg(&flat(&ink), jpeg_encoder::ColorType::Cmyk, Some(&profile));
    assert_eq!(images::jpeg_markers(&cmyk).iter().filter(|&&m| m == 0xE2).count(), 3);
    let d = derive(&app, &guest, &cmyk).await;
    let want = icc::lcms_cmyk_to_srgb(&profile, &ink);
    let want = [0, 1, 2].map(|i| f64::from(want[i]));
    assert_near(at(&d.thumb, 0.5), want, 4.0, "CMYK through its profile");
    // Without a profile, the naive conversion of before: (255 − c)(255 − k)/255.
    let naive = |c: u8| f64::from(255 - c) * f64::from(255 - ink[3]) / 255.0;
    assert!(want.iter().zip([0, 1, 2]).any(|(w, i)| (w - naive(ink[i])).abs() > 15.0), "{want:?}");
    let d = derive(&app, &guest, &jpeg(&flat(&ink), jpeg_encoder::ColorType::Cmyk, None)).await;
    assert_near(at(&d.thumb, 0.5), [naive(ink[0]), naive(ink[1]), naive(ink[2])], 3.0, "CMYK without a profile");
}

async fn srgb_tagged_and_unusable_profiles_keep_the_pixels_of_before(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Anna").await;
    let pixels: Vec<u8> = (0..W * H).flat_map(|i| [(i % W) as u8, (i / W) as u8, 90]).collect();
    let untagged = derive(&app, &guest, &jpeg(&pixels, jpeg_encoder::ColorType::Rgb, None)).await;

    let adobe = icc::system(icc::ADOBE_RGB_PATH);
    let mut garbage = adobe.clone();
    garbage[128..].iter_mut().enumerate().for_each(|(i, b)| *b = (i * 31 % 251) as u8);
    for (what, profile) in [
        ("sRGB", icc::srgb()),
        ("garbage", garbage),
        ("cut short", adobe[..adobe.len() / 3].to_vec()),
        ("CMYK profile on RGB", icc::system(icc::CMYK_PATH)),
    ] {
        let d = derive(&app, &guest, &jpeg(&pixels, jpeg_encoder::ColorType::Rgb, Some(&profile))).await;
        assert!(d.thumb_bytes == untagged.thumb_bytes, "{what}: the thumb differs from the untagged photo's");
        assert!(d.preview_bytes == untagged.preview_bytes, "{what}: the preview differs");
    }
    // The same pixels tagged Adobe RGB do change: the comparison above can fail.
    let d = derive(&app, &guest, &jpeg(&pixels, jpeg_encoder::ColorType::Rgb, Some(&adobe))).await;
    assert!(d.thumb_bytes != untagged.thumb_bytes);
}

both_backends!(
    adobe_rgb_and_display_p3_photos_get_srgb_derivatives,
    gray_and_cmyk_photos_go_through_their_profiles,
    srgb_tagged_and_unusable_profiles_keep_the_pixels_of_before,
);

#[test]
fn the_test_profiles_read_as_what_they_claim() {
    // Guards the fixtures: profiles Little CMS reads as the colour science says.
    let rgb = icc::lcms_to_srgb(&icc::display_p3(), lcms2::PixelFormat::RGB_8, &[220, 40, 40, 120, 160, 90]);
    for (i, colour) in [[220, 40, 40], [120, 160, 90]].into_iter().enumerate() {
        let want = icc::expected_srgb(colour, &icc::DISPLAY_P3, icc::srgb_to_linear);
        assert_near([rgb[3 * i], rgb[3 * i + 1], rgb[3 * i + 2]], want, 1.5, "Little CMS on the P3 profile");
    }
    let grey = icc::lcms_to_srgb(&icc::grey_linear(), lcms2::PixelFormat::GRAY_8, &[128]);
    let want = icc::linear_to_srgb(128.0 / 255.0) * 255.0;
    assert_near([grey[0], grey[1], grey[2]], [want; 3], 1.5, "Little CMS on the linear grey profile");
}
