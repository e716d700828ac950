use super::*;

fn bx(fourcc: &[u8; 4], payload: &[u8]) -> Vec<u8> {
    let mut b = ((payload.len() + 8) as u32).to_be_bytes().to_vec();
    b.extend_from_slice(fourcc);
    b.extend_from_slice(payload);
    b
}

/// A movie header with one video track of `codec`, `w`×`h`, its display matrix `(a, b, c, d)`.
fn moov(codec: &[u8; 4], w: u32, h: u32, matrix: (i32, i32, i32, i32), duration: u32) -> Vec<u8> {
    let mut mvhd = vec![0; 4];
    mvhd.extend([0; 8]);
    mvhd.extend(1000u32.to_be_bytes());
    mvhd.extend(duration.to_be_bytes());
    mvhd.extend([0; 80]);
    let mut tkhd = vec![0; 4 + 4 * 5 + 8 + 8];
    let (a, b, c, d) = matrix;
    for v in [a, b, 0, c, d, 0, 0, 0, 0x4000_0000] {
        tkhd.extend(v.to_be_bytes());
    }
    tkhd.extend((w << 16).to_be_bytes());
    tkhd.extend((h << 16).to_be_bytes());
    let hdlr = [&[0u8; 8][..], b"vide", &[0; 12]].concat();
    let stsd = [&[0u8, 0, 0, 0, 0, 0, 0, 1][..], &bx(codec, &[0; 70])].concat();
    let stbl = bx(b"stbl", &bx(b"stsd", &stsd));
    let minf = bx(b"minf", &stbl);
    let mdia = bx(b"mdia", &[bx(b"hdlr", &hdlr), minf].concat());
    let trak = bx(b"trak", &[bx(b"tkhd", &tkhd), mdia].concat());
    bx(b"moov", &[bx(b"mvhd", &mvhd), trak].concat())
}

const ONE: i32 = 0x1_0000;

#[test]
fn a_movie_header_gives_codec_size_rotation_and_duration() {
    let probe = bmff::parse_moov_box(&moov(b"hvc1", 1920, 1080, (0, ONE, -ONE, 0), 12_480), Container::QuickTime);
    assert_eq!(
        probe,
        Ok(VideoProbe {
            container: Container::QuickTime,
            codec: Codec::Hevc,
            width: 1080,
            height: 1920,
            rotation: 90,
            duration_ms: Some(12_480),
            coded: None,
            created: None,
        })
    );
    let probe = bmff::parse_moov_box(&moov(b"avc1", 640, 480, (-ONE, 0, 0, -ONE), 0), Container::Mp4).expect("probe");
    assert_eq!((probe.width, probe.height, probe.rotation, probe.duration_ms), (640, 480, 180, None));
}

#[test]
fn a_movie_header_with_another_codec_or_a_broken_box_is_refused() {
    let refused = bmff::parse_moov_box(&moov(b"mp4v", 640, 480, (ONE, 0, 0, ONE), 1000), Container::Mp4);
    assert!(matches!(refused, Err(VideoError::Unsupported(why)) if why.contains("mp4v")));
    let mut broken = moov(b"avc1", 640, 480, (ONE, 0, 0, ONE), 1000);
    broken[8..12].copy_from_slice(&0xFFFF_FFF0u32.to_be_bytes());
    assert!(matches!(bmff::parse_moov_box(&broken, Container::Mp4), Err(VideoError::Unsupported(_))));
}

/// An element: its one-byte-or-longer id, a one-byte size, the body.
/// `moov` box header (8), `mvhd` box header (8), version and flags (4): the creation time's offset.
const MVHD_CREATED: usize = 20;

#[test]
fn a_movie_header_gives_its_creation_time_when_it_is_set() {
    let mut header = moov(b"avc1", 640, 480, (ONE, 0, 0, ONE), 1000);
    let probe = bmff::parse_moov_box(&header, Container::Mp4).expect("probe");
    assert_eq!(probe.created, None, "0 is no creation time");
    // 2026-06-12T14:03:22Z, counted from 1904.
    let seconds = 1_781_273_002u64 + 2_082_844_800;
    header[MVHD_CREATED..MVHD_CREATED + 4].copy_from_slice(&(seconds as u32).to_be_bytes());
    let probe = bmff::parse_moov_box(&header, Container::Mp4).expect("probe");
    assert_eq!(probe.created.map(|t| t.to_rfc3339()), Some("2026-06-12T14:03:22+00:00".into()));
    // A clock never set: 1904 plus a little, or the Unix epoch read as 1904's.
    for unset in [86_400u32, 0x7C25_B080 + 3600] {
        header[MVHD_CREATED..MVHD_CREATED + 4].copy_from_slice(&unset.to_be_bytes());
        assert_eq!(bmff::parse_moov_box(&header, Container::Mp4).expect("probe").created, None);
    }
}

#[test]
fn a_version_1_movie_header_gives_its_64_bit_creation_time() {
    let seconds = 1_781_273_002u64 + 2_082_844_800;
    let mut mvhd = vec![1, 0, 0, 0];
    mvhd.extend(seconds.to_be_bytes());
    mvhd.extend(seconds.to_be_bytes());
    mvhd.extend(1000u32.to_be_bytes());
    mvhd.extend(5000u64.to_be_bytes());
    mvhd.extend([0; 80]);
    let mut header = moov(b"avc1", 640, 480, (ONE, 0, 0, ONE), 1000);
    // The version 0 `mvhd` (8 + 100 bytes) gives way to the version 1 one.
    header.splice(8..8 + 108, bx(b"mvhd", &mvhd));
    let len = header.len() as u32;
    header[..4].copy_from_slice(&len.to_be_bytes());
    let probe = bmff::parse_moov_box(&header, Container::Mp4).expect("probe");
    assert_eq!((probe.duration_ms, probe.created.map(|t| t.timestamp())), (Some(5000), Some(1_781_273_002)));
    // Never past the box: the largest 64-bit time is no date.
    header[MVHD_CREATED..MVHD_CREATED + 8].copy_from_slice(&u64::MAX.to_be_bytes());
    assert_eq!(bmff::parse_moov_box(&header, Container::Mp4).expect("probe").created, None);
}

#[test]
fn a_movie_header_cut_or_changed_anywhere_is_read_or_refused() {
    let mut header = moov(b"avc1", 640, 480, (ONE, 0, 0, ONE), 1000);
    header[MVHD_CREATED..MVHD_CREATED + 4].copy_from_slice(&3_864_117_802u32.to_be_bytes());
    for cut in 0..header.len() {
        let _ = bmff::parse_moov_box(&header[..cut], Container::Mp4);
    }
    for at in 0..header.len() {
        for value in [0x00, 0x01, 0x7F, 0x80, 0xFF] {
            let mut changed = header.clone();
            changed[at] = value;
            let _ = bmff::parse_moov_box(&changed, Container::Mp4);
        }
    }
}

fn el(id: &[u8], body: &[u8]) -> Vec<u8> {
    assert!(body.len() < 127);
    [id, &[0x80 | body.len() as u8], body].concat()
}

fn webm(codec: &str, with_duration: bool) -> Vec<u8> {
    let header = el(&[0x1A, 0x45, 0xDF, 0xA3], &el(&[0x42, 0x82], b"webm"));
    let mut info = el(&[0x2A, 0xD7, 0xB1], &1_000_000u32.to_be_bytes());
    if with_duration {
        info.extend(el(&[0x44, 0x89], &2480.0f64.to_be_bytes()));
    }
    let video = el(&[0xE0], &[el(&[0xB0], &[0x01, 0x40]), el(&[0xBA], &[0xF0])].concat());
    let entry = el(&[0xAE], &[el(&[0x83], &[1]), el(&[0x86], codec.as_bytes()), video].concat());
    let segment = [
        el(&[0x15, 0x49, 0xA9, 0x66], &info),
        el(&[0x16, 0x54, 0xAE, 0x6B], &entry),
        el(&[0x1F, 0x43, 0xB6, 0x75], &[0; 20]),
    ]
    .concat();
    // The Segment's size unknown, as live recordings write it.
    [header, vec![0x18, 0x53, 0x80, 0x67, 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF], segment].concat()
}

#[test]
fn a_webm_header_gives_codec_size_and_duration() {
    let file = webm("V_VP9", true);
    let probe = ebml::probe(&file, file.len() as u64).expect("probe");
    assert_eq!((probe.container, probe.codec, probe.width, probe.height), (Container::WebM, Codec::Vp9, 320, 240));
    assert_eq!(probe.duration_ms, Some(2480));
    let file = webm("V_VP8", false);
    assert_eq!(ebml::probe(&file, file.len() as u64).map(|p| p.duration_ms), Ok(None), "a live recording");
}

#[test]
fn a_webm_header_past_the_head_asks_for_more_and_another_codec_is_refused() {
    let file = webm("V_VP9", true);
    assert!(matches!(ebml::probe(&file[..40], file.len() as u64), Err(VideoError::NeedMore(n)) if n > 40));
    assert!(matches!(ebml::probe(&file[..40], 40), Err(VideoError::Unsupported(why)) if why.contains("cut short")));
    let file = webm("V_THEORA", true);
    assert!(
        matches!(ebml::probe(&file, file.len() as u64), Err(VideoError::Unsupported(why)) if why.contains("V_THEORA"))
    );
}
