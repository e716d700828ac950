//! The colour step against colour science computed here (matrices and transfer curves, no
//! colour engine), and against Little CMS where only a table-based profile says the answer.

use super::*;

#[path = "../../../../tests/common/icc.rs"]
mod icc;

fn close(got: &[u8], want: [f64; 3], tolerance: f64) -> bool {
    got.iter().zip(want).all(|(&g, w)| (f64::from(g) - w).abs() <= tolerance)
}

#[test]
fn adobe_rgb_green_becomes_the_srgb_a_browser_shows() {
    let want = icc::expected_srgb([40, 150, 60], &icc::ADOBE_RGB, icc::adobe_to_linear);
    // What the issue measured in a browser.
    assert!(close(&[0, 151, 48], want, 1.5), "{want:?}");
    let mut buf = [40, 150, 60].repeat(10);
    let outcome = convert_in_place(&mut buf, 3, &icc::system(icc::ADOBE_RGB_PATH));
    assert_eq!(outcome, Outcome::Converted);
    assert!(close(&buf[27..], want, 2.0), "{:?} for {want:?}", &buf[27..]);
}

#[test]
fn display_p3_colours_are_converted_as_the_matrices_say() {
    let profile = icc::display_p3();
    for rgb in [[255, 0, 0], [120, 160, 90], [30, 200, 230], [255, 255, 255], [0, 0, 0]] {
        let want = icc::expected_srgb(rgb, &icc::DISPLAY_P3, icc::srgb_to_linear);
        let mut buf = rgb.to_vec();
        assert_eq!(convert_in_place(&mut buf, 3, &profile), Outcome::Converted);
        assert!(close(&buf, want, 2.0), "{rgb:?} became {buf:?}, not {want:?}");
    }
}

#[test]
fn srgb_tagged_pixels_are_left_alone() {
    let original: Vec<u8> = (0..=255u8).flat_map(|v| [v, v / 2, 255 - v]).collect();
    for profile in [icc::srgb(), icc::system("/usr/share/color/icc/colord/sRGB.icc")] {
        let mut buf = original.clone();
        assert_eq!(convert_in_place(&mut buf, 3, &profile), Outcome::AlreadySrgb);
        assert_eq!(buf, original);
    }
}

#[test]
fn an_unusable_profile_leaves_the_pixels_as_decoded() {
    let original = [40u8, 150, 60, 1, 2, 3];
    let adobe = icc::system(icc::ADOBE_RGB_PATH);
    let mut garbage = adobe.clone();
    garbage[128..].iter_mut().enumerate().for_each(|(i, b)| *b = (i * 31 % 251) as u8);
    let truncated = &adobe[..adobe.len() / 2];
    let cmyk = icc::system(icc::CMYK_PATH);
    for profile in [&b"not a profile"[..], &[][..], &garbage, truncated, &cmyk, &icc::grey_linear()] {
        let mut buf = original;
        assert_eq!(convert_in_place(&mut buf, 3, profile), Outcome::Unmanaged);
        assert_eq!(buf, original);
    }
}

#[test]
fn gray_follows_its_profile() {
    let mut buf: Vec<u8> = (0..=255).collect();
    assert_eq!(convert_in_place(&mut buf, 1, &icc::grey_linear()), Outcome::Converted);
    for (v, &got) in buf.iter().enumerate() {
        let want = icc::linear_to_srgb(v as f64 / 255.0) * 255.0;
        assert!((f64::from(got) - want).abs() <= 2.0, "linear {v} became {got}, not {want:.1}");
    }
    let mut buf: Vec<u8> = (0..=255).collect();
    assert_eq!(convert_in_place(&mut buf, 1, &icc::system(icc::GREY_LSTAR_PATH)), Outcome::Converted);
    for (v, &got) in buf.iter().enumerate() {
        let want = icc::lstar_to_srgb(v as f64 / 255.0 * 100.0);
        assert!((f64::from(got) - want).abs() <= 2.0, "L* {v} became {got}, not {want:.1}");
    }
}

#[test]
fn cmyk_goes_through_its_profile_or_the_naive_formula_without_one() {
    let cmyk: Vec<u8> =
        [[0, 0, 0, 0], [255, 0, 0, 0], [0, 255, 0, 0], [0, 0, 255, 0], [40, 160, 220, 20], [0, 0, 0, 255]]
            .concat()
            .repeat(2000);
    let profile = icc::system(icc::CMYK_PATH);
    let (rgb, outcome) = cmyk_to_srgb(&cmyk, Some(&profile));
    assert_eq!(outcome, Outcome::Converted);
    let reference = icc::lcms_cmyk_to_srgb(&profile, &cmyk);
    for (i, (got, want)) in rgb.chunks(3).zip(reference.chunks(3)).take(6).enumerate() {
        // Both interpolate the profile's tables (qcms on a 17⁴ grid of its own): 4 steps apart
        // here at most (pure yellow); 0.7 on average over 3645 inks (docs/benchmarks.md).
        assert!(got.iter().zip(want).all(|(g, w)| g.abs_diff(*w) <= 4), "pixel {i}: {got:?}, Little CMS {want:?}");
    }
    // Pure cyan ink is not the naive (0, 255, 255): no ink reaches that.
    assert!(rgb[3] < 60 && rgb[4] > 120 && rgb[5] > 200 && rgb[4] < 200, "{:?}", &rgb[3..6]);

    let (rgb, outcome) = cmyk_to_srgb(&cmyk, None);
    assert_eq!(outcome, Outcome::Unmanaged);
    assert_eq!(&rgb[..6 * 3], &[255, 255, 255, 0, 255, 255, 255, 0, 255, 255, 255, 0, 198, 87, 32, 0, 0, 0]);
    let (garbage, outcome) = cmyk_to_srgb(&cmyk, Some(&icc::display_p3()));
    assert_eq!((garbage, outcome), (rgb, Outcome::Unmanaged));
}

#[test]
fn cmyk_pixels_become_rgb_pixels() {
    let mut pixels = Pixels { buf: vec![0, 0, 0, 0, 0, 0, 0, 255], width: 2, height: 1, channels: 4 };
    assert_eq!(to_srgb(&mut pixels, None), Outcome::Unmanaged);
    assert_eq!((pixels.channels, pixels.buf), (3, vec![255, 255, 255, 0, 0, 0]));
}
