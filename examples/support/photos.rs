use anyhow::{Context, Result, ensure};
use bytes::Bytes;

/// A generated JPEG and its size in pixels.
pub struct Jpeg {
    pub bytes: Bytes,
    pub width: u32,
    pub height: u32,
}

/// A 4032×3024 (12 MP, a phone's size) gradient with deterministic noise, JPEG quality 92;
/// the noise amplitude is bisected until the file is within 1% of `target` bytes. For figures
/// in MB/s, where the size of the upload matters more than what it shows.
pub fn jpeg_of_size(target: usize) -> Result<Jpeg> {
    let (width, height) = (4032u32, 3024u32);
    let encode = |amplitude: f64| -> Result<Vec<u8>> {
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut pixels = Vec::with_capacity((width * height * 3) as usize);
        for y in 0..height {
            for x in 0..width {
                let base = [x * 255 / width, y * 255 / height, (x + y) * 255 / (width + height)];
                let r = next();
                for (c, b) in base.into_iter().enumerate() {
                    let unit = ((r >> (c * 16)) & 0xFFFF) as f64 / 65535.0 * 2.0 - 1.0;
                    pixels.push((b as f64 + unit * amplitude).round().clamp(0.0, 255.0) as u8);
                }
            }
        }
        let mut out = Vec::with_capacity(target + target / 4);
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 92).encode(
            &pixels,
            width,
            height,
            image::ExtendedColorType::Rgb8,
        )?;
        Ok(out)
    };
    let off = |v: &Vec<u8>| (v.len() as f64 - target as f64).abs();
    let (mut lo, mut hi) = (0.0f64, 128.0f64);
    let mut best: Option<Vec<u8>> = None;
    for _ in 0..12 {
        let mid = (lo + hi) / 2.0;
        let out = encode(mid)?;
        let small = out.len() < target;
        if best.as_ref().is_none_or(|b| off(&out) < off(b)) {
            best = Some(out);
        }
        if best.as_ref().is_some_and(|b| off(b) <= target as f64 * 0.01) {
            break;
        }
        if small {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let bytes = best.context("no JPEG encoded")?;
    // The upload must be a JPEG the server's probe accepts.
    ensure!(bytes.starts_with(&[0xFF, 0xD8, 0xFF]), "not a JPEG");
    Ok(Jpeg { bytes: Bytes::from(bytes), width, height })
}

/// Something a camera could have taken, JPEG quality 90: a sky-like vertical gradient, soft
/// large shapes, mid-scale texture (value noise, as foliage or fabric) and fine sensor grain.
/// For figures where decoding and resizing matter: 4000×3000 comes to about 3.2 MB.
pub fn photo_like_jpeg(width: u32, height: u32) -> Result<Vec<u8>> {
    // Noise as a hash of the coordinates: the same picture on every run and machine.
    let noise = |x: u32, y: u32, salt: u32| {
        let mut h = x.wrapping_mul(0x8DA6_B343) ^ y.wrapping_mul(0xD816_3841) ^ salt.wrapping_mul(0xCB1A_B31F);
        h ^= h >> 15;
        h = h.wrapping_mul(0x2C1B_3C6D);
        h ^= h >> 12;
        (h & 0xFFFF) as f32 / 65535.0 * 2.0 - 1.0
    };
    // Random values every CELL pixels, interpolated bilinearly: texture.
    const CELL: u32 = 6;
    let texture = |x: u32, y: u32| {
        let (gx, gy) = (x / CELL, y / CELL);
        let (fx, fy) = ((x % CELL) as f32 / CELL as f32, (y % CELL) as f32 / CELL as f32);
        let top = noise(gx, gy, 1) * (1.0 - fx) + noise(gx + 1, gy, 1) * fx;
        let bottom = noise(gx, gy + 1, 1) * (1.0 - fx) + noise(gx + 1, gy + 1, 1) * fx;
        top * (1.0 - fy) + bottom * fy
    };
    let mut pixels = Vec::with_capacity((width * height * 3) as usize);
    for y in 0..height {
        let v = y as f32 / height as f32;
        for x in 0..width {
            let u = x as f32 / width as f32;
            let shapes = 40.0 * (u * 5.0).sin() * (v * 3.5 + u).cos() + 25.0 * ((u - 0.6).hypot(v - 0.4) * 18.0).sin();
            // Texture grows toward the bottom (ground), the sky stays smooth.
            let t = texture(x, y) * 70.0 * (0.3 + 0.7 * v * v);
            let grain = noise(x, y, 2) * 7.0;
            let base = [90.0 + 120.0 * (1.0 - v), 120.0 + 60.0 * (1.0 - v), 200.0 - 130.0 * v];
            for (c, b) in base.into_iter().enumerate() {
                let tint = [1.0, 0.8, 0.6][c];
                pixels.push((b + shapes * tint + t + grain).round().clamp(0.0, 255.0) as u8);
            }
        }
    }
    let image = image::RgbImage::from_raw(width, height, pixels).context("pixel buffer size")?;
    let mut out = Vec::new();
    image.write_with_encoder(image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 90))?;
    Ok(out)
}
