//! ICC profiles made in the tests, and the colour science to check conversions against without
//! any colour-management library: RGB ↔ XYZ matrices from primaries, Bradford adaptation, the
//! sRGB and Adobe RGB transfer functions.
//!
//! Little CMS (`lcms2`, a dev-dependency) is the reference where only a profile's tables know
//! the answer (CMYK).
//!
//! Display P3 (what recent iPhones tag their photos with) has no profile on a Debian machine:
//! `rgb_profile` writes a v4 matrix/TRC profile from primaries and a white point, with the sRGB
//! transfer curve as a `para` curve, as Apple's own Display P3 profile is made.

#![allow(dead_code)]

/// Chromaticities (x, y) of red, green, blue and white.
#[derive(Clone, Copy, Debug)]
pub struct Primaries {
    pub red: (f64, f64),
    pub green: (f64, f64),
    pub blue: (f64, f64),
    pub white: (f64, f64),
}

const D65: (f64, f64) = (0.3127, 0.3290);

pub const SRGB: Primaries = Primaries { red: (0.64, 0.33), green: (0.30, 0.60), blue: (0.15, 0.06), white: D65 };
pub const DISPLAY_P3: Primaries =
    Primaries { red: (0.680, 0.320), green: (0.265, 0.690), blue: (0.150, 0.060), white: D65 };
pub const ADOBE_RGB: Primaries = Primaries { red: (0.64, 0.33), green: (0.21, 0.71), blue: (0.15, 0.06), white: D65 };

/// The ICC's profile connection space white, D50, as XYZ.
pub const D50_XYZ: [f64; 3] = [0.9642, 1.0, 0.8249];

pub type Matrix = [[f64; 3]; 3];

pub fn mul(a: &Matrix, b: &Matrix) -> Matrix {
    let mut m = [[0.0; 3]; 3];
    for (i, row) in m.iter_mut().enumerate() {
        for (j, v) in row.iter_mut().enumerate() {
            *v = (0..3).map(|k| a[i][k] * b[k][j]).sum();
        }
    }
    m
}

pub fn apply(m: &Matrix, v: [f64; 3]) -> [f64; 3] {
    [0, 1, 2].map(|i| m[i][0] * v[0] + m[i][1] * v[1] + m[i][2] * v[2])
}

pub fn invert(m: &Matrix) -> Matrix {
    let [[a, b, c], [d, e, f], [g, h, i]] = *m;
    let det = a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g);
    [
        [(e * i - f * h) / det, (c * h - b * i) / det, (b * f - c * e) / det],
        [(f * g - d * i) / det, (a * i - c * g) / det, (c * d - a * f) / det],
        [(d * h - e * g) / det, (b * g - a * h) / det, (a * e - b * d) / det],
    ]
}

fn xy_to_xyz((x, y): (f64, f64)) -> [f64; 3] {
    [x / y, 1.0, (1.0 - x - y) / y]
}

/// Linear RGB → XYZ (white Y = 1) for these primaries, in their own white.
pub fn rgb_to_xyz(p: &Primaries) -> Matrix {
    let [r, g, b] = [p.red, p.green, p.blue].map(xy_to_xyz);
    let m = [[r[0], g[0], b[0]], [r[1], g[1], b[1]], [r[2], g[2], b[2]]];
    let s = apply(&invert(&m), xy_to_xyz(p.white));
    [0, 1, 2].map(|i| [0, 1, 2].map(|j| m[i][j] * s[j]))
}

/// Bradford chromatic adaptation from white `from` to white `to` (both XYZ).
pub fn bradford(from: [f64; 3], to: [f64; 3]) -> Matrix {
    const B: Matrix = [[0.8951, 0.2664, -0.1614], [-0.7502, 1.7135, 0.0367], [0.0389, -0.0685, 1.0296]];
    let (f, t) = (apply(&B, from), apply(&B, to));
    let scale = [[t[0] / f[0], 0.0, 0.0], [0.0, t[1] / f[1], 0.0], [0.0, 0.0, t[2] / f[2]]];
    mul(&invert(&B), &mul(&scale, &B))
}

/// sRGB's transfer curve, encoded (0–1) → linear.
pub fn srgb_to_linear(v: f64) -> f64 {
    if v <= 0.04045 { v / 12.92 } else { ((v + 0.055) / 1.055).powf(2.4) }
}

pub fn linear_to_srgb(v: f64) -> f64 {
    let v = v.clamp(0.0, 1.0);
    if v <= 0.003_130_8 { v * 12.92 } else { 1.055 * v.powf(1.0 / 2.4) - 0.055 }
}

/// Adobe RGB (1998)'s transfer: a pure gamma of 563/256.
pub fn adobe_to_linear(v: f64) -> f64 {
    v.powf(563.0 / 256.0)
}

/// What a colour-managed browser shows for 8-bit `rgb` in a space of `primaries` whose
/// transfer curve is `to_linear`: the sRGB value, clipped, unrounded (0–255).
pub fn expected_srgb(rgb: [u8; 3], primaries: &Primaries, to_linear: fn(f64) -> f64) -> [f64; 3] {
    let linear = rgb.map(|c| to_linear(f64::from(c) / 255.0));
    // Both spaces are D65: no adaptation between them.
    let m = mul(&invert(&rgb_to_xyz(&SRGB)), &rgb_to_xyz(primaries));
    apply(&m, linear).map(|v| linear_to_srgb(v) * 255.0)
}

/// The sRGB grey of an L* value (0–100): the CIE lightness function inverted.
pub fn lstar_to_srgb(l: f64) -> f64 {
    let y = if l > 8.0 { ((l + 16.0) / 116.0).powi(3) } else { l / 903.3 };
    linear_to_srgb(y) * 255.0
}

fn s15_16(v: f64) -> [u8; 4] {
    ((v * 65536.0).round() as i32).to_be_bytes()
}

fn xyz_tag(xyz: [f64; 3]) -> Vec<u8> {
    let mut t = b"XYZ \0\0\0\0".to_vec();
    for v in xyz {
        t.extend_from_slice(&s15_16(v));
    }
    t
}

/// `para` function type 3: Y = (aX + b)^g for X ≥ d, else cX — sRGB's curve.
fn srgb_para() -> Vec<u8> {
    let mut t = b"para\0\0\0\0\0\x03\0\0".to_vec();
    for v in [2.4, 1.0 / 1.055, 0.055 / 1.055, 1.0 / 12.92, 0.04045] {
        t.extend_from_slice(&s15_16(v));
    }
    t
}

fn gamma_curv(gamma: f64) -> Vec<u8> {
    let mut t = b"curv\0\0\0\0\0\0\0\x01".to_vec();
    t.extend_from_slice(&((gamma * 256.0).round() as u16).to_be_bytes());
    t
}

fn mluc(text: &str) -> Vec<u8> {
    let utf16: Vec<u8> = text.encode_utf16().flat_map(u16::to_be_bytes).collect();
    let mut t = b"mluc\0\0\0\0\0\0\0\x01\0\0\0\x0cenUS".to_vec();
    t.extend_from_slice(&(utf16.len() as u32).to_be_bytes());
    t.extend_from_slice(&28u32.to_be_bytes());
    t.extend_from_slice(&utf16);
    t
}

/// An ICC v4 profile file: header, tag table, tags (4-byte aligned; equal tags shared).
fn profile(class: &[u8; 4], space: &[u8; 4], tags: Vec<(&[u8; 4], Vec<u8>)>) -> Vec<u8> {
    let table_len = 4 + 12 * tags.len();
    let mut body: Vec<u8> = Vec::new();
    let mut table = (tags.len() as u32).to_be_bytes().to_vec();
    let mut placed: Vec<(Vec<u8>, u32)> = Vec::new();
    for (sig, data) in tags {
        let offset = match placed.iter().find(|(d, _)| *d == data) {
            Some((_, offset)) => *offset,
            None => {
                while !body.len().is_multiple_of(4) {
                    body.push(0);
                }
                let offset = (128 + table_len + body.len()) as u32;
                body.extend_from_slice(&data);
                placed.push((data.clone(), offset));
                offset
            }
        };
        table.extend_from_slice(sig);
        table.extend_from_slice(&offset.to_be_bytes());
        table.extend_from_slice(&(data.len() as u32).to_be_bytes());
    }
    while !body.len().is_multiple_of(4) {
        body.push(0);
    }
    let size = (128 + table_len + body.len()) as u32;
    let mut out = Vec::with_capacity(size as usize);
    out.extend_from_slice(&size.to_be_bytes());
    out.extend_from_slice(b"\0\0\0\0"); // CMM
    out.extend_from_slice(&[4, 0x30, 0, 0]); // v4.3
    out.extend_from_slice(class);
    out.extend_from_slice(space);
    out.extend_from_slice(b"XYZ ");
    out.extend_from_slice(&[0x07, 0xEA, 0, 12, 0, 3, 0, 0, 0, 0, 0, 0]); // 2026-12-03
    out.extend_from_slice(b"acsp");
    out.extend_from_slice(&[0; 24]); // platform, flags, manufacturer, model, attributes
    out.extend_from_slice(&[0; 4]); // perceptual
    for v in D50_XYZ {
        out.extend_from_slice(&s15_16(v));
    }
    out.extend_from_slice(&[0; 4]); // creator
    out.extend_from_slice(&[0; 16]); // profile ID: not computed
    out.extend_from_slice(&[0; 28]);
    assert_eq!(out.len(), 128);
    out.extend_from_slice(&table);
    out.extend_from_slice(&body);
    out
}

/// A display profile for `primaries` with sRGB's transfer curve: colourants adapted to D50
/// with Bradford and the adaptation in `chad`, as ICC v4 asks.
pub fn rgb_profile(primaries: &Primaries, description: &str) -> Vec<u8> {
    let white = xy_to_xyz(primaries.white);
    let chad = bradford(white, D50_XYZ);
    let m = mul(&chad, &rgb_to_xyz(primaries));
    let column = |j: usize| [m[0][j], m[1][j], m[2][j]];
    let mut chad_tag = b"sf32\0\0\0\0".to_vec();
    for row in chad {
        for v in row {
            chad_tag.extend_from_slice(&s15_16(v));
        }
    }
    profile(
        b"mntr",
        b"RGB ",
        vec![
            (b"desc", mluc(description)),
            (b"cprt", mluc("No copyright, use freely")),
            (b"wtpt", xyz_tag(D50_XYZ)),
            (b"chad", chad_tag),
            (b"rXYZ", xyz_tag(column(0))),
            (b"gXYZ", xyz_tag(column(1))),
            (b"bXYZ", xyz_tag(column(2))),
            (b"rTRC", srgb_para()),
            (b"gTRC", srgb_para()),
            (b"bTRC", srgb_para()),
        ],
    )
}

pub fn display_p3() -> Vec<u8> {
    rgb_profile(&DISPLAY_P3, "Display P3")
}

pub fn srgb() -> Vec<u8> {
    rgb_profile(&SRGB, "sRGB")
}

/// A grey profile whose values are linear light (gamma 1.0).
pub fn grey_linear() -> Vec<u8> {
    profile(
        b"mntr",
        b"GRAY",
        vec![
            (b"desc", mluc("Grey, linear")),
            (b"cprt", mluc("No copyright, use freely")),
            (b"wtpt", xyz_tag(D50_XYZ)),
            (b"kTRC", gamma_curv(1.0)),
        ],
    )
}

/// Little CMS's sRGB for `pixels` of `format` through `profile`: the independent reference for
/// table-based profiles (CMYK) and a check of the profiles made here. Relative colorimetric: its
/// perceptual intent scales the black point of a v2 print profile, which browsers (Chrome's
/// skcms, Firefox's qcms) do not do.
pub fn lcms_to_srgb(profile: &[u8], format: lcms2::PixelFormat, pixels: &[u8]) -> Vec<u8> {
    let input = lcms2::Profile::new_icc(profile).expect("Little CMS reads the profile");
    let srgb = lcms2::Profile::new_srgb();
    let intent = lcms2::Intent::RelativeColorimetric;
    let transform: lcms2::Transform<u8, u8> =
        lcms2::Transform::new(&input, format, &srgb, lcms2::PixelFormat::RGB_8, intent).expect("a transform");
    let mut rgb = vec![0; pixels.len() / format.bytes_per_pixel() * 3];
    transform.transform_pixels(pixels, &mut rgb);
    rgb
}

/// `lcms_to_srgb` of plain CMYK (0 = no ink).
pub fn lcms_cmyk_to_srgb(profile: &[u8], cmyk: &[u8]) -> Vec<u8> {
    lcms_to_srgb(profile, lcms2::PixelFormat::CMYK_8, cmyk)
}

/// A system profile the tests read (Debian packages listed in scripts/test.sh).
pub fn system(path: &str) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e} (see scripts/test.sh for the packages)"))
}

pub const ADOBE_RGB_PATH: &str = "/usr/share/color/icc/colord/AdobeRGB1998.icc";
pub const CMYK_PATH: &str = "/usr/share/color/icc/ghostscript/default_cmyk.icc";
pub const GREY_LSTAR_PATH: &str = "/usr/share/color/icc/Gray-CIE_L.icc";
