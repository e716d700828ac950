use super::*;

/// A box of `fourcc` around `payload`.
fn bx(fourcc: &[u8; 4], payload: &[u8]) -> Vec<u8> {
    let mut b = ((payload.len() + 8) as u32).to_be_bytes().to_vec();
    b.extend_from_slice(fourcc);
    b.extend_from_slice(payload);
    b
}

fn ftyp(brand: &[u8; 4]) -> Vec<u8> {
    let mut p = brand.to_vec();
    p.extend_from_slice(&[0, 0, 2, 0]);
    p.extend_from_slice(b"isomiso2mp41");
    bx(b"ftyp", &p)
}

/// The file fed in chunks of `chunk` bytes.
fn walk(file: &[u8], chunk: usize) -> (Vec<Option<String>>, ContainerSniff) {
    let mut w = ContainerWalker::default();
    let mut refusals = Vec::new();
    for c in file.chunks(chunk) {
        w.update(c);
        refusals.push(w.refusal().map(str::to_owned));
    }
    (refusals, w.finish())
}

#[test]
fn the_movie_header_is_found_at_the_end_whatever_the_chunking() {
    let mut file = ftyp(b"isom");
    file.extend(bx(b"free", &[]));
    file.extend(bx(b"mdat", &[7; 1000]));
    let moov_at = file.len() as u64;
    file.extend(bx(b"moov", &[1; 50]));
    for chunk in [1, 3, 7, 8, 13, 64, 4096] {
        let (refusals, sniff) = walk(&file, chunk);
        assert!(refusals.iter().all(Option::is_none), "chunk {chunk}");
        assert_eq!(
            sniff,
            ContainerSniff::Bmff { container: Container::Mp4, moov: Some((moov_at, 58)), streamed_moov: None },
            "chunk {chunk}"
        );
    }
}

#[test]
fn garbage_after_the_type_box_is_refused_at_once() {
    let mut file = ftyp(b"mp42");
    let ftyp_len = file.len();
    file.extend((0..100_000u32).map(|i| (i * 7 + 0x80) as u8 | 0x80));
    let (refusals, sniff) = walk(&file, 1024);
    assert!(refusals[0].is_some(), "refused with the first chunk: {refusals:?}");
    assert!(matches!(sniff, ContainerSniff::Damaged(why) if why.contains("MP4")));
    assert!(ftyp_len < 1024);
}

#[test]
fn a_box_cut_short_or_a_large_box_is_told() {
    let mut file = ftyp(b"qt  ");
    file.extend(bx(b"mdat", &[0; 100]));
    file.truncate(file.len() - 1);
    assert!(matches!(walk(&file, 10).1, ContainerSniff::Damaged(why) if why.contains("cut short")));
    // A 64-bit size.
    let mut file = ftyp(b"qt  ");
    file.extend([0, 0, 0, 1]);
    file.extend(b"mdat");
    file.extend(40u64.to_be_bytes());
    file.extend([0; 24]);
    assert_eq!(
        walk(&file, 5).1,
        ContainerSniff::Bmff { container: Container::QuickTime, moov: None, streamed_moov: None }
    );
}

#[test]
fn still_images_and_other_files_are_not_videos() {
    let mut heic = ftyp(b"heic");
    heic.extend([0xFF; 100]);
    assert_eq!(walk(&heic, 7).1, ContainerSniff::NotVideo);
    assert_eq!(walk(&[0xFF, 0xD8, 0xFF, 0xE0, 0, 16, 1, 2, 3, 4, 5, 6, 7, 8], 3).1, ContainerSniff::NotVideo);
    assert_eq!(walk(b"short", 1).1, ContainerSniff::NotVideo);
}

#[test]
fn an_ebml_header_names_webm_or_is_refused() {
    // EBML header with DocType "webm", then a Segment of unknown size.
    let mut file = vec![0x1A, 0x45, 0xDF, 0xA3, 0x87, 0x42, 0x82, 0x84];
    file.extend(b"webm");
    file.extend([0x18, 0x53, 0x80, 0x67, 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]);
    assert_eq!(walk(&file, 3).1, ContainerSniff::Ebml { container: Container::WebM });
    let mut other = file.clone();
    other[8..12].copy_from_slice(b"xxxx");
    assert!(matches!(walk(&other, 64).1, ContainerSniff::Damaged(_)));
}

#[test]
fn a_movie_header_first_is_kept_as_it_passes_unless_it_is_large() {
    let mut file = ftyp(b"isom");
    let moov = bx(b"moov", &(0..5000u32).map(|i| i as u8).collect::<Vec<_>>());
    file.extend(&moov);
    file.extend(bx(b"mdat", &[1; 3000]));
    let mut w = ContainerWalker::default();
    let mut seen_at = None;
    for (i, c) in file.chunks(333).enumerate() {
        w.update(c);
        if seen_at.is_none()
            && let Some((container, kept)) = w.streamed_moov()
        {
            assert_eq!((container, kept), (Container::Mp4, &moov[..]));
            seen_at = Some(i);
        }
    }
    assert_eq!(seen_at, Some((ftyp(b"isom").len() + moov.len()) / 333), "as soon as its last byte passed");

    let mut file = ftyp(b"isom");
    file.extend(bx(b"moov", &vec![0; MAX_STREAMED_MOOV as usize]));
    let mut w = ContainerWalker::default();
    for c in file.chunks(64 * 1024) {
        w.update(c);
    }
    assert_eq!(w.streamed_moov(), None, "over the bound: read back from the store instead");
    assert!(matches!(w.finish(), ContainerSniff::Bmff { streamed_moov: None, moov: Some(_), .. }));
}
