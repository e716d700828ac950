//! 8-bit sRGB (or gray) pixels as YCbCr 4:2:0, BT.601 full range: the planes the AVIF thumb is
//! encoded from. Each chroma sample is the mean of the 2×2 pixels it stands for (sited at their
//! centre, where decoders put it when they upsample), not one of them: libheif's own conversion
//! keeps the top-left pixel of each 2×2, which aliases fine colour detail and moves colour
//! edges half a pixel. Bytes and luma SSIM are the same either way, within 0.3%
//! (docs/benchmarks.md "Lighter galleries").

/// The three planes, each row-major without padding.
pub(super) struct Planes {
    pub y: Vec<u8>,
    pub cb: Vec<u8>,
    pub cr: Vec<u8>,
    pub width: usize,
    pub height: usize,
    /// The chroma planes' size: half the image's, rounded up.
    pub chroma_width: usize,
    pub chroma_height: usize,
}

/// BT.601 weights in 16-bit fixed point; each row sums to 65536 (Y) or 0 (Cb, Cr).
const Y: [i64; 3] = [19595, 38470, 7471];
const CB: [i64; 3] = [-11058, -21710, 32768];
const CR: [i64; 3] = [32768, -27440, -5328];
const ONE: i64 = 1 << 16;

/// `buf` holds `height` rows of `width` pixels of `channels` (1: gray, 3: RGB) bytes each.
pub(super) fn planes(buf: &[u8], width: usize, height: usize, channels: usize) -> Planes {
    let (chroma_width, chroma_height) = (width.div_ceil(2), height.div_ceil(2));
    if channels == 1 {
        let neutral = vec![128; chroma_width * chroma_height];
        return Planes {
            y: buf.to_vec(),
            cb: neutral.clone(),
            cr: neutral,
            width,
            height,
            chroma_width,
            chroma_height,
        };
    }
    let rgb = |x: usize, y: usize| {
        let at = (y * width + x) * channels;
        [i64::from(buf[at]), i64::from(buf[at + 1]), i64::from(buf[at + 2])]
    };
    let y = (0..height)
        .flat_map(|row| (0..width).map(move |x| (x, row)))
        .map(|(x, row)| weigh(Y, rgb(x, row), 1, 0))
        .collect();
    let (mut cb, mut cr) =
        (Vec::with_capacity(chroma_width * chroma_height), Vec::with_capacity(chroma_width * chroma_height));
    for cy in 0..chroma_height {
        let rows = 2 * cy..(2 * cy + 2).min(height);
        for cx in 0..chroma_width {
            let columns = 2 * cx..(2 * cx + 2).min(width);
            let (mut sum, mut count) = ([0; 3], 0);
            for row in rows.clone() {
                for x in columns.clone() {
                    let [r, g, b] = rgb(x, row);
                    sum = [sum[0] + r, sum[1] + g, sum[2] + b];
                    count += 1;
                }
            }
            cb.push(weigh(CB, sum, count, 128));
            cr.push(weigh(CR, sum, count, 128));
        }
    }
    Planes { y, cb, cr, width, height, chroma_width, chroma_height }
}

/// `offset` plus the weighted sum of `count` pixels' summed channels, divided by `count`,
/// rounded and clamped to a byte.
fn weigh(weights: [i64; 3], sum: [i64; 3], count: i64, offset: i64) -> u8 {
    let den = ONE * count;
    let num = weights[0] * sum[0] + weights[1] * sum[1] + weights[2] * sum[2] + offset * den + den / 2;
    num.div_euclid(den).clamp(0, 255) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flat(rgb: [u8; 3], width: usize, height: usize) -> Vec<u8> {
        rgb.repeat(width * height)
    }

    #[test]
    fn a_flat_colour_gets_the_bt601_full_range_values() {
        // Y = 0.299 R + 0.587 G + 0.114 B; Cb = (B − Y) / 1.772 + 128; Cr = (R − Y) / 1.402 + 128.
        for (rgb, ycbcr) in [
            ([255, 0, 0], [76, 85, 255]),
            ([0, 255, 0], [150, 44, 21]),
            ([0, 0, 255], [29, 255, 107]),
            ([255, 255, 255], [255, 128, 128]),
            ([0, 0, 0], [0, 128, 128]),
            ([40, 150, 60], [107, 102, 80]),
        ] {
            let p = planes(&flat(rgb, 3, 3), 3, 3, 3);
            assert!(p.y.iter().all(|&v| v == ycbcr[0]), "{rgb:?}: Y {:?}", p.y);
            assert!(p.cb.iter().all(|&v| v == ycbcr[1]), "{rgb:?}: Cb {:?}", p.cb);
            assert!(p.cr.iter().all(|&v| v == ycbcr[2]), "{rgb:?}: Cr {:?}", p.cr);
        }
    }

    #[test]
    fn odd_sizes_round_the_chroma_planes_up() {
        let p = planes(&flat([10, 20, 30], 5, 3), 5, 3, 3);
        assert_eq!((p.width, p.height, p.chroma_width, p.chroma_height), (5, 3, 3, 2));
        assert_eq!((p.y.len(), p.cb.len(), p.cr.len()), (15, 6, 6));
    }

    #[test]
    fn chroma_is_the_mean_of_its_four_pixels_not_one_of_them() {
        // Columns alternate red and blue: every chroma sample sees both, so it is their mean.
        let mut buf = Vec::new();
        for _ in 0..2 {
            buf.extend([255, 0, 0, 0, 0, 255, 255, 0, 0, 0, 0, 255]);
        }
        let p = planes(&buf, 4, 2, 3);
        let mean = planes(&flat([128, 0, 128], 1, 1), 1, 1, 3);
        for (cb, cr) in p.cb.iter().zip(&p.cr) {
            assert!(cb.abs_diff(mean.cb[0]) <= 1 && cr.abs_diff(mean.cr[0]) <= 1, "Cb {cb} Cr {cr}");
        }
        // Luma stays per pixel.
        assert_eq!(p.y, [76, 29, 76, 29, 76, 29, 76, 29]);
    }

    #[test]
    fn a_lone_last_column_and_row_average_what_they_have() {
        // 3×3: the right column and bottom row of chroma cover 2 and 1 pixels.
        let mut buf = flat([0, 0, 0], 3, 3);
        buf[(2 * 3 + 2) * 3..][..3].copy_from_slice(&[0, 0, 255]);
        let p = planes(&buf, 3, 3, 3);
        assert_eq!(p.cb, [128, 128, 128, 255]);
    }

    #[test]
    fn gray_has_neutral_chroma() {
        let p = planes(&[0, 100, 200, 255, 7, 9], 3, 2, 1);
        assert_eq!(p.y, [0, 100, 200, 255, 7, 9]);
        assert_eq!((p.cb, p.cr), (vec![128, 128], vec![128, 128]));
    }
}
