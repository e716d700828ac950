//! The derivative pipeline's unit tests: sizes, orientation, metadata, formats, refusals.
use super::*;

/// Something like a photo: smooth gradients with a fine texture over them.
fn photo(width: u32, height: u32) -> image::RgbImage {
    image::RgbImage::from_fn(width, height, |x, y| {
        let t = ((x * 7 + y * 13) % 17) as u8;
        image::Rgb([(x * 255 / width) as u8 ^ t, (y * 255 / height) as u8, 128u8.wrapping_add(t)])
    })
}

fn jpeg(image: &image::DynamicImage) -> Vec<u8> {
    encoded(image, image::ImageFormat::Jpeg)
}

fn encoded(image: &image::DynamicImage, format: image::ImageFormat) -> Vec<u8> {
    let mut bytes = Vec::new();
    image.write_to(&mut Cursor::new(&mut bytes), format).unwrap();
    bytes
}

fn size(e: &Encoded) -> (u32, u32) {
    let decoded = image::load_from_memory_with_format(&e.bytes, image::ImageFormat::Jpeg).unwrap();
    assert_eq!((decoded.width(), decoded.height()), (e.width, e.height), "the file says what the struct says");
    (e.width, e.height)
}

/// The APPn and COM markers before the first scan.
fn metadata_markers(jpeg: &[u8]) -> Vec<u8> {
    assert_eq!(jpeg[..2], [0xFF, 0xD8]);
    let (mut pos, mut found) = (2, Vec::new());
    while jpeg[pos] == 0xFF && jpeg[pos + 1] != 0xDA {
        let marker = jpeg[pos + 1];
        if (0xE0..=0xEF).contains(&marker) || marker == 0xFE {
            found.push(marker);
        }
        pos += 2 + usize::from(u16::from_be_bytes([jpeg[pos + 2], jpeg[pos + 3]]));
    }
    assert_eq!(jpeg[pos + 1], 0xDA, "walked to the scan");
    found
}

#[test]
fn sizes_follow_the_contract_and_never_exceed_the_original() {
    // (original, orientation, decode, preview, thumb)
    let cases = [
        // 1/2 DCT scale gives 2000 px, within 1600–2048: no resize for the preview.
        ((4000, 3000), 1, Decode::ShrinkOnLoad, (2000, 1500), (400, 300)),
        ((4000, 3000), 1, Decode::Full, (2048, 1536), (400, 300)),
        ((4000, 3000), 6, Decode::ShrinkOnLoad, (1500, 2000), (300, 400)),
        ((3000, 2000), 8, Decode::ShrinkOnLoad, (1365, 2048), (267, 400)),
        ((1800, 1000), 1, Decode::ShrinkOnLoad, (1800, 1000), (400, 222)),
        ((300, 200), 1, Decode::ShrinkOnLoad, (300, 200), (300, 200)),
    ];
    for ((w, h), orientation, decode, preview, thumb) in cases {
        let original = jpeg(&photo(w, h).into());
        let (d, _) = derive_timed(&original, ImageFormat::Jpeg, orientation, decode).unwrap();
        assert_eq!((size(&d.preview), size(&d.thumb)), (preview, thumb), "{w}×{h}, {orientation}, {decode:?}");
    }
}

#[test]
fn each_orientation_moves_the_top_left_corner_where_it_is_displayed() {
    // Red top-left quarter on blue; where the red lands in the upright thumb, per orientation.
    let original = image::RgbImage::from_fn(800, 600, |x, y| {
        if x < 400 && y < 300 { image::Rgb([255, 0, 0]) } else { image::Rgb([0, 0, 255]) }
    });
    let original = encoded(&original.into(), image::ImageFormat::Png);
    // (column, row) of the red corner: 0 = left/top, 1 = right/bottom.
    let expected =
        [(1, (0, 0)), (2, (1, 0)), (3, (1, 1)), (4, (0, 1)), (5, (0, 0)), (6, (1, 0)), (7, (1, 1)), (8, (0, 1))];
    for (orientation, (cx, cy)) in expected {
        let thumb = derive(&original, ImageFormat::Png, orientation).unwrap().thumb;
        let image = image::load_from_memory(&thumb.bytes).unwrap().into_rgb8();
        let (w, h) = image.dimensions();
        assert_eq!((w > h), orientation < 5, "orientation {orientation}: {w}×{h}");
        let x = if cx == 0 { w / 8 } else { w - w / 8 };
        let y = if cy == 0 { h / 8 } else { h - h / 8 };
        let p = image.get_pixel(x, y);
        assert!(p[0] > 200 && p[2] < 60, "orientation {orientation}: {p:?} at ({x}, {y})");
    }
}

#[test]
fn outputs_carry_no_exif_or_other_metadata() {
    let mut original = jpeg(&photo(2400, 1600).into());
    // An APP1 EXIF block (with a GPS tag's id in it) right after SOI.
    let exif = b"Exif\0\0MM\0\x2a\0\0\0\x08\0\x01\x88\x25\0\x04\0\0\0\x01\0\0\0\0\0\0\0\0";
    let mut segment = vec![0xFF, 0xE1];
    segment.extend_from_slice(&(exif.len() as u16 + 2).to_be_bytes());
    segment.extend_from_slice(exif);
    original.splice(2..2, segment);
    assert!(metadata_markers(&original).contains(&0xE1));

    let d = derive(&original, ImageFormat::Jpeg, 1).unwrap();
    for e in [&d.preview, &d.thumb] {
        assert_eq!(metadata_markers(&e.bytes), [0xE0], "only the JFIF header");
        assert!(memchr::memmem::find(&e.bytes, b"Exif").is_none());
    }
}

#[test]
fn a_transparent_png_is_flattened_onto_white() {
    let original = image::RgbaImage::from_fn(1000, 500, |x, _| {
        if x < 500 { image::Rgba([0, 0, 0, 0]) } else { image::Rgba([0, 128, 0, 255]) }
    });
    let original = encoded(&original.into(), image::ImageFormat::Png);
    let d = derive(&original, ImageFormat::Png, 1).unwrap();
    assert_eq!(size(&d.preview), (1000, 500));
    let thumb = image::load_from_memory(&d.thumb.bytes).unwrap().into_rgb8();
    assert_eq!(thumb.dimensions(), (400, 200));
    let (clear, green) = (thumb.get_pixel(50, 100), thumb.get_pixel(350, 100));
    assert!(clear.0.iter().all(|&c| c > 245), "{clear:?}");
    assert!(green[1] > 100 && green[0] < 30, "{green:?}");
}

#[test]
fn gif_and_webp_originals_work() {
    let original: image::DynamicImage = image::RgbaImage::from_pixel(640, 480, image::Rgba([200, 30, 30, 255])).into();
    for (format, ours) in [(image::ImageFormat::Gif, ImageFormat::Gif), (image::ImageFormat::WebP, ImageFormat::WebP)] {
        let d = derive(&encoded(&original, format), ours, 1).unwrap();
        assert_eq!(size(&d.preview), (640, 480), "{format:?}");
        assert_eq!(size(&d.thumb), (400, 300), "{format:?}");
    }
}

#[test]
fn grayscale_and_cmyk_jpegs_work() {
    let gray = jpeg(&image::DynamicImage::ImageRgb8(photo(3000, 2000)).grayscale());
    let d = derive(&gray, ImageFormat::Jpeg, 1).unwrap();
    assert_eq!(size(&d.preview), (2048, 1365));
    assert_eq!(size(&d.thumb), (400, 267));

    // A CMYK JPEG as a print workflow writes it: pure cyan, no black.
    let cyan: Vec<u8> = [255, 0, 0, 0].repeat(900 * 600);
    let mut cmyk = Vec::new();
    jpeg_encoder::Encoder::new(&mut cmyk, 90).encode(&cyan, 900, 600, jpeg_encoder::ColorType::Cmyk).unwrap();
    let d = derive(&cmyk, ImageFormat::Jpeg, 1).unwrap();
    assert_eq!(size(&d.thumb), (400, 267));
    let thumb = image::load_from_memory(&d.thumb.bytes).unwrap().into_rgb8();
    let p = thumb.get_pixel(200, 130);
    assert!(p[0] < 40 && p[1] > 215 && p[2] > 215, "cyan, got {p:?}");
}

#[test]
fn garbage_and_truncated_files_are_errors() {
    let garbage: Vec<u8> = (0..5000u32).map(|i| (i * 31 % 251) as u8).collect();
    for format in [ImageFormat::Jpeg, ImageFormat::Png, ImageFormat::Gif, ImageFormat::WebP] {
        assert!(derive(&garbage, format, 1).is_err(), "{format:?}");
    }
    let mut with_soi = vec![0xFF, 0xD8, 0xFF];
    with_soi.extend_from_slice(&garbage);
    assert!(derive(&with_soi, ImageFormat::Jpeg, 1).is_err());

    let whole = jpeg(&photo(1200, 900).into());
    for cut in [10, 200, whole.len() / 2] {
        assert!(derive(&whole[..cut], ImageFormat::Jpeg, 1).is_err(), "cut at {cut}");
    }
    let png = encoded(&photo(600, 400).into(), image::ImageFormat::Png);
    assert!(derive(&png[..png.len() / 2], ImageFormat::Png, 1).is_err());
}

#[test]
fn an_image_over_the_pixel_limit_is_refused_before_decoding() {
    let original = jpeg(&photo(400, 300).into());
    assert_eq!(
        run(&original, ImageFormat::Jpeg, 1, Decode::ShrinkOnLoad, 100_000).map(|_| ()),
        Err(DeriveError::TooManyPixels { pixels: 120_000, limit: 100_000 })
    );
    let png = encoded(&photo(400, 300).into(), image::ImageFormat::Png);
    assert!(matches!(
        run(&png, ImageFormat::Png, 1, Decode::ShrinkOnLoad, 100_000),
        Err(DeriveError::TooManyPixels { .. })
    ));
}

#[test]
fn a_gif_frame_larger_than_its_screen_cannot_make_the_decoder_allocate_it() {
    // A 1×1 screen and a 20000×20000 frame: 1.6 GB as RGBA, were it allocated.
    let mut bomb = b"GIF89a\x01\x00\x01\x00\x80\x00\x00\0\0\0\xff\xff\xff,".to_vec();
    for v in [0u16, 0, 20000, 20000] {
        bomb.extend_from_slice(&v.to_le_bytes());
    }
    bomb.extend_from_slice(&[0, 2, 2, 0x44, 0x01, 0, b';']);
    let started = Instant::now();
    assert!(derive(&bomb, ImageFormat::Gif, 1).is_err());
    assert!(started.elapsed() < Duration::from_secs(1), "refused without decoding, in {:?}", started.elapsed());
}

#[test]
fn a_progressive_jpeg_whose_coefficients_exceed_the_budget_is_refused_before_decoding() {
    let pixels: Vec<u8> = (0..64 * 64 * 3).map(|i| (i % 251) as u8).collect();
    let mut bytes = Vec::new();
    let mut encoder = jpeg_encoder::Encoder::new(&mut bytes, 80);
    encoder.set_progressive(true);
    encoder.set_sampling_factor(jpeg_encoder::SamplingFactor::R_4_2_0);
    encoder.encode(&pixels, 64, 64, jpeg_encoder::ColorType::Rgb).unwrap();
    assert!(derive(&bytes, ImageFormat::Jpeg, 1).is_ok(), "small, it decodes");
    let sof = bytes.windows(2).position(|m| m == [0xFF, 0xC2]).unwrap();
    bytes[sof + 5..sof + 9].copy_from_slice(&[0x27, 0x10, 0x27, 0x10]); // 10000 × 10000
    assert_eq!(
        derive(&bytes, ImageFormat::Jpeg, 1).map(|_| ()),
        Err(DeriveError::OverBudget { needed_mib: 313, budget_mib: 256 })
    );
}
