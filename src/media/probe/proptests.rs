//! Property tests: the sniffer and the probe on arbitrary bytes, in arbitrary chunkings, and on
//! real headers with bytes changed. Nothing panics; what is kept stays within its bounds; a
//! request for more of the header is bounded by the file and always asks for more than it had.
use std::io::Cursor;
use std::sync::LazyLock;

use proptest::prelude::*;

use super::*;

/// Small real files of each format, the JPEG with an EXIF block, as the mutations' seeds.
static SEEDS: LazyLock<Vec<Vec<u8>>> = LazyLock::new(|| {
    let image: image::DynamicImage =
        image::RgbImage::from_fn(40, 30, |x, y| image::Rgb([x as u8 * 6, y as u8 * 8, 90])).into();
    let encode = |format| {
        let mut bytes = Vec::new();
        image.write_to(&mut Cursor::new(&mut bytes), format).unwrap();
        bytes
    };
    let mut jpeg = encode(image::ImageFormat::Jpeg);
    let exif = b"Exif\0\0MM\0\x2a\0\0\0\x08\0\x01\x01\x12\0\x03\0\0\0\x01\0\x06\0\0\0\0\0\0";
    let mut app1 = vec![0xFF, 0xE1];
    app1.extend_from_slice(&(exif.len() as u16 + 2).to_be_bytes());
    app1.extend_from_slice(exif);
    jpeg.splice(2..2, app1);
    vec![
        jpeg,
        encode(image::ImageFormat::Png),
        encode(image::ImageFormat::Gif),
        encode(image::ImageFormat::WebP),
        crate::media::gif_walk::tests::gif((3, 3), &[(0, 0, 3, 3), (1, 1, 2, 2)]),
    ]
});

/// Feeds `bytes` in pieces of the given sizes (cycled), then checks the sniffer's bounds.
fn sniff_in(bytes: &[u8], sizes: &[usize]) -> Sniffed {
    let mut sniffer = Sniffer::default();
    let (mut at, mut i) = (0, 0);
    while at < bytes.len() {
        let n = sizes[i % sizes.len()].clamp(1, bytes.len() - at);
        sniffer.update(&bytes[at..at + n]);
        at += n;
        i += 1;
    }
    let s = sniffer.finish();
    assert!(s.head.len() <= HEAD_BYTES);
    assert_eq!(s.head[..], bytes[..bytes.len().min(HEAD_BYTES)]);
    assert_eq!(s.tail[..], bytes[bytes.len().saturating_sub(TAIL_BYTES)..]);
    assert_eq!(s.len, bytes.len() as u64);
    s
}

/// Probes as the callers do: on `NeedMore`, again with the longer head, until an answer.
fn probe_all(bytes: &[u8], s: &Sniffed) {
    let mut head = s.head.clone();
    for _ in 0..16 {
        match probe(&head, s, 100_000_000) {
            Err(ProbeError::NeedMore(want)) => {
                assert!(want > head.len(), "asks for more than it had: {want} after {}", head.len());
                assert!(want <= bytes.len(), "asks for {want} of a {}-byte file", bytes.len());
                head = bytes[..want].to_vec();
            }
            Ok(p) => {
                assert!(p.width > 0 && p.height > 0);
                assert!(u64::from(p.width) * u64::from(p.height) <= 100_000_000);
                return;
            }
            Err(_) => return,
        }
    }
    panic!("the probe kept asking for more");
}

fn mutated() -> impl Strategy<Value = Vec<u8>> {
    (0..SEEDS.len(), prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0..3u8), 1..6)).prop_map(
        |(seed, edits)| {
            let mut bytes = SEEDS[seed].clone();
            for (at, byte, kind) in edits {
                let i = at.index(bytes.len());
                match kind {
                    0 => bytes[i] = byte,
                    1 => bytes.insert(i, byte),
                    _ => bytes.truncate(i.max(1)),
                }
            }
            bytes
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_in_any_chunking_never_panic_or_overgrow(
        bytes in prop::collection::vec(any::<u8>(), 0..2000),
        sizes in prop::collection::vec(1..300usize, 1..8),
    ) {
        let s = sniff_in(&bytes, &sizes);
        probe_all(&bytes, &s);
    }

    #[test]
    fn real_headers_with_bytes_changed_never_panic_or_overgrow(
        bytes in mutated(),
        sizes in prop::collection::vec(1..64usize, 1..8),
    ) {
        let s = sniff_in(&bytes, &sizes);
        probe_all(&bytes, &s);
    }

    #[test]
    fn the_chunking_never_changes_the_verdict(bytes in mutated(), sizes in prop::collection::vec(1..64usize, 1..8)) {
        let whole = sniff_in(&bytes, &[bytes.len().max(1)]);
        let pieces = sniff_in(&bytes, &sizes);
        prop_assert_eq!(whole.last_jpeg_eoi, pieces.last_jpeg_eoi);
        prop_assert_eq!(whole.gif, pieces.gif);
        prop_assert_eq!(probe(&whole.head, &whole, 100_000_000), probe(&pieces.head, &pieces, 100_000_000));
    }
}

#[test]
fn a_header_past_the_window_is_read_in_bounded_steps() {
    // 200 KiB of APP segments before the frame header.
    let mut jpeg = SEEDS[0].clone();
    for _ in 0..4 {
        let mut app2 = vec![0xFF, 0xE2, 0xFF, 0xFF];
        app2.extend_from_slice(&[7; 0xFFFD]);
        jpeg.splice(2..2, app2);
    }
    let s = sniff_in(&jpeg, &[4096]);
    let Err(ProbeError::NeedMore(want)) = probe(&s.head, &s, 100_000_000) else { panic!("asks for more") };
    assert!(want <= jpeg.len());
    let p = probe(&jpeg[..want], &s, 100_000_000).unwrap();
    assert_eq!((p.width, p.height, p.orientation), (30, 40, 6));
}
