//! The HEIF header walker's unit tests, on files built box by box here (the HTTP tests use
//! real files from `heif-enc`).
use super::*;

fn boxed(kind: &[u8; 4], body: &[u8]) -> Vec<u8> {
    let mut b = ((body.len() + 8) as u32).to_be_bytes().to_vec();
    b.extend_from_slice(kind);
    b.extend_from_slice(body);
    b
}

fn full(kind: &[u8; 4], version: u8, flags: u32, body: &[u8]) -> Vec<u8> {
    let mut b = vec![version];
    b.extend_from_slice(&flags.to_be_bytes()[1..]);
    b.extend_from_slice(body);
    boxed(kind, &b)
}

/// A HEIC with item 1 (`kind`, `ispe` `w`×`h`, then `transforms` as property boxes) and an
/// `Exif` item 2 holding `exif`; its `mdat` holds `data_len` bytes of image data after the EXIF.
struct Heic<'a> {
    brand: &'a [u8; 4],
    kind: &'a [u8; 4],
    w: u32,
    h: u32,
    transforms: Vec<Vec<u8>>,
    exif: Option<Vec<u8>>,
    data_len: u32,
}

impl Default for Heic<'_> {
    fn default() -> Self {
        Heic { brand: b"heic", kind: b"hvc1", w: 64, h: 48, transforms: vec![], exif: None, data_len: 100 }
    }
}

impl Heic<'_> {
    fn build(&self) -> Vec<u8> {
        let mut ftyp = self.brand.to_vec();
        ftyp.extend_from_slice(&[0, 0, 0, 0]);
        ftyp.extend_from_slice(b"mif1");
        ftyp.extend_from_slice(self.brand);
        let ftyp = boxed(b"ftyp", &ftyp);

        let mut infe1 = vec![0, 1, 0, 0];
        infe1.extend_from_slice(self.kind);
        infe1.push(0);
        let mut infe2 = vec![0, 2, 0, 0];
        infe2.extend_from_slice(b"Exif");
        infe2.push(0);
        let mut iinf = vec![0, 2];
        iinf.extend(full(b"infe", 2, 0, &infe1));
        iinf.extend(full(b"infe", 2, 0, &infe2));

        let mut ispe = self.w.to_be_bytes().to_vec();
        ispe.extend_from_slice(&self.h.to_be_bytes());
        let mut ipco = full(b"ispe", 0, 0, &ispe);
        for t in &self.transforms {
            ipco.extend_from_slice(t);
        }
        let n = 1 + self.transforms.len() as u8;
        let mut ipma = vec![0, 0, 0, 1, 0, 1, n];
        ipma.extend(1..=n);
        let mut iprp = boxed(b"ipco", &ipco);
        iprp.extend(full(b"ipma", 0, 0, &ipma));

        let exif = self.exif.as_ref().map(|e| {
            let mut block = vec![0, 0, 0, 6];
            block.extend_from_slice(b"Exif\0\0");
            block.extend_from_slice(e);
            block
        });
        let exif_len = exif.as_ref().map_or(0, Vec::len) as u32;
        // The meta box's size does not depend on the offsets: build it once to learn it.
        let meta = |mdat_start: u32| {
            let mut iloc = vec![0x44, 0x00, 0, 2];
            let data = mdat_start + 8 + exif_len;
            iloc.extend_from_slice(&[0, 1, 0, 0, 0, 1]);
            iloc.extend_from_slice(&data.to_be_bytes());
            iloc.extend_from_slice(&self.data_len.to_be_bytes());
            iloc.extend_from_slice(&[0, 2, 0, 0, 0, 1]);
            iloc.extend_from_slice(&(mdat_start + 8).to_be_bytes());
            iloc.extend_from_slice(&exif_len.to_be_bytes());
            let mut body =
                full(b"hdlr", 0, 0, &[0, 0, 0, 0, b'p', b'i', b'c', b't', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
            body.extend(full(b"pitm", 0, 0, &[0, 1]));
            body.extend(full(b"iloc", 0, 0, &iloc));
            body.extend(full(b"iinf", 0, 0, &iinf));
            body.extend(boxed(b"iprp", &iprp));
            full(b"meta", 0, 0, &body)
        };
        let start = (ftyp.len() + meta(0).len()) as u32;
        let mut mdat = exif.unwrap_or_default();
        mdat.extend(std::iter::repeat_n(0xAB, self.data_len as usize));
        let mut file = ftyp;
        file.extend(meta(start));
        file.extend(boxed(b"mdat", &mdat));
        file
    }
}

fn irot(quarters: u8) -> Vec<u8> {
    boxed(b"irot", &[quarters])
}

fn imir(axis: u8) -> Vec<u8> {
    boxed(b"imir", &[axis])
}

fn read_all(bytes: &[u8]) -> Result<HeifHeader<'_>, HeifError> {
    read(bytes, bytes.len() as u64, 100_000_000)
}

#[test]
fn a_plain_heic_gives_its_stored_size_and_no_turn() {
    let bytes = Heic::default().build();
    assert!(is_heif(&bytes));
    let h = read_all(&bytes).unwrap();
    assert_eq!((h.width, h.height, h.orientation, h.transformed, h.exif), (64, 48, 1, false, None));
}

#[test]
fn irot_and_imir_become_the_matching_exif_orientation() {
    let cases: [(Vec<Vec<u8>>, u16); 7] = [
        (vec![irot(1)], 8),
        (vec![irot(2)], 3),
        (vec![irot(3)], 6),
        (vec![imir(0)], 2),
        (vec![imir(1)], 4),
        // A quarter anticlockwise, then left and right swapped: the top-left corner ends
        // bottom-right (the transverse); a quarter clockwise, then swapped: the transpose.
        (vec![irot(1), imir(0)], 7),
        (vec![irot(3), imir(0)], 5),
    ];
    for (transforms, expected) in cases {
        let bytes = Heic { transforms: transforms.clone(), ..Heic::default() }.build();
        let h = read_all(&bytes).unwrap();
        assert_eq!((h.orientation, h.transformed), (expected, true), "{transforms:?}");
    }
}

#[test]
fn the_exif_block_is_found_after_its_offset() {
    let tiff = b"MM\0\x2a\0\0\0\x08\0\0".to_vec();
    let bytes = Heic { exif: Some(tiff.clone()), ..Heic::default() }.build();
    assert_eq!(read_all(&bytes).unwrap().exif, Some(&tiff[..]));
}

#[test]
fn a_file_cut_short_is_refused_or_asks_for_more() {
    let bytes = Heic::default().build();
    for cut in [30, 100, bytes.len() - 50, bytes.len() - 1] {
        let short = &bytes[..cut];
        assert!(
            matches!(read(short, cut as u64, 1 << 30), Err(HeifError::Unsupported(m)) if m.contains("cut short")),
            "cut at {cut}"
        );
    }
    // Only the head at hand, the file longer: read more.
    assert!(matches!(read(&bytes[..60], bytes.len() as u64, 1 << 30), Err(HeifError::NeedMore(n)) if n > 60));
}

#[test]
fn an_absurd_ispe_is_a_pixel_bomb() {
    let bytes = Heic { w: 100_000, h: 100_000, ..Heic::default() }.build();
    assert_eq!(read_all(&bytes), Err(HeifError::TooManyPixels(10_000_000_000)));
}

#[test]
fn avif_and_other_item_kinds_are_refused() {
    let avif = Heic { brand: b"avif", kind: b"av01", ..Heic::default() }.build();
    assert!(is_heif(&avif));
    assert!(matches!(read_all(&avif), Err(HeifError::Unsupported(m)) if m.contains("AVIF")));
    let mif1_av1 = Heic { brand: b"mif1", kind: b"av01", ..Heic::default() }.build();
    assert!(matches!(read_all(&mif1_av1), Err(HeifError::Unsupported(m)) if m.contains("AVIF")));
    let jpeg_item = Heic { kind: b"jpeg", ..Heic::default() }.build();
    assert!(matches!(read_all(&jpeg_item), Err(HeifError::Unsupported(m)) if m.contains("jpeg")));
}

#[test]
fn garbage_after_the_brand_is_refused_without_a_panic() {
    let bytes = Heic::default().build();
    for i in 28..bytes.len().min(400) {
        let mut broken = bytes.clone();
        broken[i] ^= 0xFF;
        let _ = read_all(&broken);
        broken[i] = 0xFF;
        let _ = read_all(&broken);
    }
}
