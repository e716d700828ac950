//! The probe's unit tests: formats, bombs, cut-short files, the sniffer's bookkeeping.
use super::*;

fn sniff(bytes: &[u8], chunk: usize) -> Sniffed {
    let mut s = Sniffer::default();
    for c in bytes.chunks(chunk) {
        s.update(c);
    }
    s.finish()
}

fn png_header(w: u32, h: u32) -> Vec<u8> {
    let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    b.extend_from_slice(&w.to_be_bytes());
    b.extend_from_slice(&h.to_be_bytes());
    b.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, 0]);
    b.extend_from_slice(b"\0\0\0\0IEND\xaeB`\x82");
    b
}

#[test]
fn a_png_bomb_is_refused_from_its_header() {
    let bytes = png_header(100_000, 100_000);
    let s = sniff(&bytes, 7);
    assert_eq!(
        probe(&s.head, &s, 100_000_000),
        Err(ProbeError::TooManyPixels { pixels: 10_000_000_000, limit: 100_000_000 })
    );
}

#[test]
fn the_end_of_image_marker_is_found_across_chunk_boundaries() {
    let bytes = [1u8, 2, 0xFF, 0xD9, 5, 0xFF];
    for chunk in 1..=6 {
        assert_eq!(sniff(&bytes, chunk).last_jpeg_eoi, Some(2), "chunk size {chunk}");
    }
    assert_eq!(sniff(&[0xFF, 0xD9], 1).last_jpeg_eoi, Some(0));
    assert_eq!(sniff(&[0xD9, 0xFF], 1).last_jpeg_eoi, None);
}

#[test]
fn the_tail_holds_the_last_bytes() {
    let bytes: Vec<u8> = (0..100u8).collect();
    assert_eq!(sniff(&bytes, 3).tail, (68..100u8).collect::<Vec<_>>());
    assert_eq!(sniff(&bytes, 50).tail, (68..100u8).collect::<Vec<_>>());
}

#[test]
fn text_and_a_bare_heic_brand_are_not_accepted() {
    let s = sniff(b"hello, this is not a photo", 4);
    assert!(matches!(probe(&s.head, &s, 1 << 30), Err(ProbeError::Unsupported(_))));
    // A HEIC brand and nothing after it: no image.
    let heic = b"\0\0\0\x18ftypheic\0\0\0\0mif1heic";
    let s = sniff(heic, 4);
    assert!(matches!(probe(&s.head, &s, 1 << 30), Err(ProbeError::Unsupported(m)) if m.contains("no image")));
}

#[test]
fn a_png_without_its_end_is_refused() {
    let mut bytes = png_header(10, 10);
    bytes.truncate(bytes.len() - 12);
    let s = sniff(&bytes, 5);
    assert!(matches!(probe(&s.head, &s, 1 << 30), Err(ProbeError::Unsupported(_))));
}

#[test]
fn a_gif_frame_larger_than_its_screen_counts_against_the_pixel_limit() {
    use crate::media::gif_walk::tests::gif;
    // The 35-byte kind: a 1×1 screen, one 20000×20000 frame.
    let bomb = gif((1, 1), &[(0, 0, 20000, 20000)]);
    for chunk in [1, 4, bomb.len()] {
        let s = sniff(&bomb, chunk);
        assert_eq!(
            probe(&s.head, &s, 100_000_000),
            Err(ProbeError::TooManyPixels { pixels: 400_000_000, limit: 100_000_000 }),
            "chunk {chunk}"
        );
    }
    // A small frame placed far off the screen counts through the canvas that holds it.
    let far = gif((10, 10), &[(0, 0, 10, 10), (60000, 60000, 1, 1)]);
    let s = sniff(&far, 3);
    assert!(matches!(probe(&s.head, &s, 100_000_000), Err(ProbeError::TooManyPixels { .. })));
    // Frames behind 64 KiB of comments are still found.
    let mut late = gif((10, 10), &[(0, 0, 10, 10)]);
    late.pop();
    late.extend_from_slice(&[b'!', 0xFE]);
    for _ in 0..400 {
        late.push(255);
        late.extend_from_slice(&[b'x'; 255]);
    }
    late.push(0);
    late.push(b',');
    for v in [0u16, 0, 30000, 30000] {
        late.extend_from_slice(&v.to_le_bytes());
    }
    late.extend_from_slice(&[0, 2, 1, 0x44, 0, b';']);
    let s = sniff(&late, 4096);
    assert!(s.head.len() < late.len());
    assert!(matches!(probe(&s.head, &s, 100_000_000), Err(ProbeError::TooManyPixels { pixels: 900_000_000, .. })));
}

#[test]
fn an_ordinary_gif_passes_and_a_damaged_or_empty_one_does_not() {
    use crate::media::gif_walk::tests::gif;
    let ok = gif((640, 480), &[(0, 0, 640, 480), (10, 10, 100, 100)]);
    let s = sniff(&ok, 5);
    let p = probe(&s.head, &s, 100_000_000).unwrap();
    assert_eq!((p.format, p.width, p.height), (ImageFormat::Gif, 640, 480));

    let empty = gif((640, 480), &[]);
    let s = sniff(&empty, 5);
    assert!(matches!(probe(&s.head, &s, 100_000_000), Err(ProbeError::Unsupported(m)) if m.contains("no image")));

    let mut damaged = ok.clone();
    let at = damaged.len() - 1;
    damaged[at] = 0x99;
    let s = sniff(&damaged, 5);
    assert!(matches!(probe(&s.head, &s, 100_000_000), Err(ProbeError::Unsupported(m)) if m.contains("damaged")));
}
