//! Test images, made in the tests: real JPEGs and PNGs, an EXIF-rotated JPEG, a PNG bomb
//! header, cut-short files and bytes that are no image at all.

use std::io::Cursor;

use image::{ImageFormat, Rgb, RgbImage};

/// A real JPEG, `w`×`h`, with some structure so its size is realistic.
pub fn jpeg(w: u32, h: u32) -> Vec<u8> {
    let img = RgbImage::from_fn(w, h, |x, y| Rgb([(x * 7 % 256) as u8, (y * 13 % 256) as u8, ((x ^ y) % 256) as u8]));
    let mut out = Cursor::new(Vec::new());
    img.write_to(&mut out, ImageFormat::Jpeg).expect("encode jpeg");
    out.into_inner()
}

/// A JPEG of about `bytes` bytes (noise compresses badly).
pub fn jpeg_of_about(bytes: usize) -> Vec<u8> {
    let side = ((bytes as f64 / 1.2).sqrt() as u32).max(16);
    let mut state = 0x2545_f491_u32;
    let img = RgbImage::from_fn(side, side, |_, _| {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        Rgb([state as u8, (state >> 8) as u8, (state >> 16) as u8])
    });
    let mut out = Cursor::new(Vec::new());
    img.write_to(&mut out, ImageFormat::Jpeg).expect("encode jpeg");
    out.into_inner()
}

pub fn png(w: u32, h: u32) -> Vec<u8> {
    let img = RgbImage::from_fn(w, h, |x, y| Rgb([x as u8, y as u8, 128]));
    let mut out = Cursor::new(Vec::new());
    img.write_to(&mut out, ImageFormat::Png).expect("encode png");
    out.into_inner()
}

/// A JPEG whose EXIF says "rotate 90° clockwise to display" (orientation 6).
pub fn jpeg_with_orientation(w: u32, h: u32, orientation: u16) -> Vec<u8> {
    with_orientation(&jpeg(w, h), orientation)
}

/// The JPEG `plain` with an EXIF block holding only `orientation`.
pub fn with_orientation(plain: &[u8], orientation: u16) -> Vec<u8> {
    let mut tiff = b"MM\0\x2a\0\0\0\x08".to_vec();
    tiff.extend_from_slice(&1u16.to_be_bytes()); // one IFD entry
    tiff.extend_from_slice(&0x0112u16.to_be_bytes()); // Orientation
    tiff.extend_from_slice(&3u16.to_be_bytes()); // SHORT
    tiff.extend_from_slice(&1u32.to_be_bytes()); // count
    tiff.extend_from_slice(&orientation.to_be_bytes());
    tiff.extend_from_slice(&[0, 0]);
    tiff.extend_from_slice(&0u32.to_be_bytes()); // no next IFD
    with_exif(plain, &tiff)
}

/// A PNG whose header declares `w`×`h` pixels, with a tiny (invalid) data chunk:
/// a decompression bomb must be refused from the header alone.
pub fn png_bomb(w: u32, h: u32) -> Vec<u8> {
    fn chunk(kind: &[u8], data: &[u8]) -> Vec<u8> {
        let mut c = (data.len() as u32).to_be_bytes().to_vec();
        c.extend_from_slice(kind);
        c.extend_from_slice(data);
        c.extend_from_slice(&crc32(&[kind, data].concat()).to_be_bytes());
        c
    }
    let mut ihdr = w.to_be_bytes().to_vec();
    ihdr.extend_from_slice(&h.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    out.extend(chunk(b"IHDR", &ihdr));
    out.extend(chunk(b"IDAT", &[0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01]));
    out.extend(chunk(b"IEND", &[]));
    out
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

/// A JPEG carrying EXIF with a GPS position (52.5° N) and a camera make: what a phone writes.
pub fn jpeg_with_gps(w: u32, h: u32) -> Vec<u8> {
    let plain = jpeg(w, h);
    // TIFF header, IFD0 with Make and a GPSInfo pointer, then the GPS IFD.
    let mut tiff = b"MM\0\x2a\0\0\0\x08".to_vec();
    let ifd0_entries = 2u16;
    let ifd0_len = 2 + 12 * ifd0_entries as u32 + 4;
    let make_offset = 8 + ifd0_len;
    let make = b"ConfettiCam\0";
    let gps_offset = make_offset + make.len() as u32;
    tiff.extend_from_slice(&ifd0_entries.to_be_bytes());
    tiff.extend_from_slice(&0x010Fu16.to_be_bytes()); // Make
    tiff.extend_from_slice(&2u16.to_be_bytes()); // ASCII
    tiff.extend_from_slice(&(make.len() as u32).to_be_bytes());
    tiff.extend_from_slice(&make_offset.to_be_bytes());
    tiff.extend_from_slice(&0x8825u16.to_be_bytes()); // GPSInfo
    tiff.extend_from_slice(&4u16.to_be_bytes()); // LONG
    tiff.extend_from_slice(&1u32.to_be_bytes());
    tiff.extend_from_slice(&gps_offset.to_be_bytes());
    tiff.extend_from_slice(&0u32.to_be_bytes()); // no next IFD
    tiff.extend_from_slice(make);
    // GPS IFD: GPSLatitudeRef "N", GPSLatitude 52/1 30/1 0/1.
    let lat_offset = gps_offset + 2 + 12 * 2 + 4;
    tiff.extend_from_slice(&2u16.to_be_bytes());
    tiff.extend_from_slice(&0x0001u16.to_be_bytes());
    tiff.extend_from_slice(&2u16.to_be_bytes());
    tiff.extend_from_slice(&2u32.to_be_bytes());
    tiff.extend_from_slice(b"N\0\0\0");
    tiff.extend_from_slice(&0x0002u16.to_be_bytes());
    tiff.extend_from_slice(&5u16.to_be_bytes()); // RATIONAL
    tiff.extend_from_slice(&3u32.to_be_bytes());
    tiff.extend_from_slice(&lat_offset.to_be_bytes());
    tiff.extend_from_slice(&0u32.to_be_bytes());
    for (num, den) in [(52u32, 1u32), (30, 1), (0, 1)] {
        tiff.extend_from_slice(&num.to_be_bytes());
        tiff.extend_from_slice(&den.to_be_bytes());
    }
    with_exif(&plain, &tiff)
}

/// A JPEG whose header and structure look right but whose quantization tables were removed:
/// it passes the upload checks and cannot be decoded. (Without its Huffman tables it could:
/// libjpeg-turbo then uses the standard ones, as Motion-JPEG files expect.)
pub fn jpeg_without_quantization_tables(w: u32, h: u32) -> Vec<u8> {
    let plain = jpeg(w, h);
    let mut out = plain[..2].to_vec();
    let mut i = 2;
    while i + 4 <= plain.len() && plain[i] == 0xFF {
        let marker = plain[i + 1];
        if marker == 0xDA {
            break;
        }
        let len = u16::from_be_bytes([plain[i + 2], plain[i + 3]]) as usize;
        if marker != 0xDB {
            out.extend_from_slice(&plain[i..i + 2 + len]);
        }
        i += 2 + len;
    }
    out.extend_from_slice(&plain[i..]);
    out
}

/// The markers of a JPEG's header segments, up to the start of the scan.
pub fn jpeg_markers(bytes: &[u8]) -> Vec<u8> {
    let mut markers = Vec::new();
    let mut i = 2;
    while i + 4 <= bytes.len() && bytes[i] == 0xFF {
        let marker = bytes[i + 1];
        markers.push(marker);
        if marker == 0xDA {
            break;
        }
        i += 2 + u16::from_be_bytes([bytes[i + 2], bytes[i + 3]]) as usize;
    }
    markers
}

/// The JPEG with an APP1 EXIF segment holding `tiff` inserted right after its start marker.
fn with_exif(plain: &[u8], tiff: &[u8]) -> Vec<u8> {
    let mut segment = b"Exif\0\0".to_vec();
    segment.extend_from_slice(tiff);
    let mut out = plain[..2].to_vec();
    out.extend_from_slice(&[0xFF, 0xE1]);
    out.extend_from_slice(&((segment.len() + 2) as u16).to_be_bytes());
    out.extend_from_slice(&segment);
    out.extend_from_slice(&plain[2..]);
    out
}

/// A JPEG whose EXIF says when it was taken (`DateTimeOriginal`, "YYYY:MM:DD HH:MM:SS").
pub fn jpeg_taken_at(w: u32, h: u32, taken: &str) -> Vec<u8> {
    assert_eq!(taken.len(), 19, "EXIF times are 19 characters");
    jpeg_with_exif_text(w, h, &[(0x9003, taken)])
}

/// EXIF tags of the capture time: `DateTimeOriginal`, `OffsetTime` (of the file's time) and
/// `OffsetTimeOriginal`.
pub const DATE_TIME_ORIGINAL: u16 = 0x9003;
pub const OFFSET_TIME: u16 = 0x9010;
pub const OFFSET_TIME_ORIGINAL: u16 = 0x9011;

/// A JPEG whose Exif IFD holds these ASCII fields (tag, text), given in ascending tag order.
pub fn jpeg_with_exif_text(w: u32, h: u32, fields: &[(u16, &str)]) -> Vec<u8> {
    // IFD0 with one entry pointing at the Exif IFD; the Exif IFD's entries, then their texts.
    let mut tiff = b"MM\0\x2a\0\0\0\x08".to_vec();
    let exif_ifd = 8 + 2 + 12 + 4;
    tiff.extend_from_slice(&1u16.to_be_bytes());
    tiff.extend_from_slice(&0x8769u16.to_be_bytes()); // ExifIFDPointer
    tiff.extend_from_slice(&4u16.to_be_bytes()); // LONG
    tiff.extend_from_slice(&1u32.to_be_bytes());
    tiff.extend_from_slice(&(exif_ifd as u32).to_be_bytes());
    tiff.extend_from_slice(&0u32.to_be_bytes());
    let mut value = exif_ifd + 2 + 12 * fields.len() + 4;
    let mut texts = Vec::new();
    tiff.extend_from_slice(&(fields.len() as u16).to_be_bytes());
    for (tag, text) in fields {
        let len = text.len() + 1;
        tiff.extend_from_slice(&tag.to_be_bytes());
        tiff.extend_from_slice(&2u16.to_be_bytes()); // ASCII
        tiff.extend_from_slice(&(len as u32).to_be_bytes());
        if len <= 4 {
            let mut inline = text.as_bytes().to_vec();
            inline.resize(4, 0);
            tiff.extend_from_slice(&inline);
        } else {
            tiff.extend_from_slice(&(value as u32).to_be_bytes());
            texts.extend_from_slice(text.as_bytes());
            texts.push(0);
            value += len;
        }
    }
    tiff.extend_from_slice(&0u32.to_be_bytes());
    tiff.extend_from_slice(&texts);
    with_exif(&jpeg(w, h), &tiff)
}

/// A JPEG whose header carries what cameras write before the frame header, well over 64 KiB:
/// EXIF (orientation 6, then a 60 KB thumbnail's worth of bytes), XMP and a two-part ICC
/// profile.
pub fn jpeg_with_big_app_segments(w: u32, h: u32) -> Vec<u8> {
    fn segment(marker: u8, body: &[u8]) -> Vec<u8> {
        let mut s = vec![0xFF, marker];
        s.extend_from_slice(&((body.len() + 2) as u16).to_be_bytes());
        s.extend_from_slice(body);
        s
    }
    let rotated = jpeg_with_orientation(w, h, 6);
    let exif_len = usize::from(u16::from_be_bytes([rotated[4], rotated[5]])) + 2;
    let mut exif = rotated[6..2 + exif_len].to_vec();
    exif.resize(60_000, 0xAB);
    let mut xmp = b"http://ns.adobe.com/xap/1.0/\0<x:xmpmeta xmlns:x='adobe:ns:meta/'>".to_vec();
    xmp.resize(40_000, b' ');
    let mut out = rotated[..2].to_vec();
    out.extend(segment(0xE1, &exif));
    out.extend(segment(0xE1, &xmp));
    for part in 1..=2u8 {
        let mut icc = b"ICC_PROFILE\0".to_vec();
        icc.extend_from_slice(&[part, 2]);
        icc.resize(50_000, part);
        out.extend(segment(0xE2, &icc));
    }
    out.extend_from_slice(&rotated[2 + exif_len..]);
    out
}

/// 35 bytes: a GIF with a 1×1 logical screen and one 20000×20000 frame.
pub fn gif_bomb() -> Vec<u8> {
    let mut b = b"GIF89a\x01\x00\x01\x00\x80\x00\x00".to_vec();
    b.extend_from_slice(&[0, 0, 0, 255, 255, 255]); // global colour table, 2 entries
    b.push(b',');
    for v in [0u16, 0, 20000, 20000] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b.push(0);
    b.extend_from_slice(&[2, 2, 0x44, 0x01, 0]); // LZW code size, one data sub-block, end
    b.push(b';');
    b
}

/// A 16-bit RGBA PNG of `w`×`h`, one semi-transparent orange, written row by row (the pixels
/// are never all in memory): 10000×10000 is 800 MB decoded and under 1 MB on disk.
pub fn png16_rgba(w: u32, h: u32) -> Vec<u8> {
    let mut bytes = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut bytes, w, h);
        encoder.set_color(png::ColorType::Rgba);
        encoder.set_depth(png::BitDepth::Sixteen);
        encoder.set_compression(png::Compression::High);
        let mut writer = encoder.write_header().expect("png header");
        let mut stream = writer.stream_writer().expect("png stream");
        let row: Vec<u8> = [0xFF, 0xFF, 0x80, 0x00, 0x00, 0x00, 0x80, 0x00].repeat(w as usize);
        for _ in 0..h {
            std::io::Write::write_all(&mut stream, &row).expect("png row");
        }
        stream.finish().expect("png end");
    }
    bytes
}

/// A real progressive 4:2:0 JPEG whose frame header is then made to declare `w`×`h`: what
/// decoding it needs follows from that header alone.
pub fn progressive_jpeg_declaring(w: u16, h: u16) -> Vec<u8> {
    let pixels: Vec<u8> = (0..64 * 64 * 3).map(|i| (i % 251) as u8).collect();
    let mut bytes = Vec::new();
    let mut encoder = jpeg_encoder::Encoder::new(&mut bytes, 80);
    encoder.set_progressive(true);
    encoder.set_sampling_factor(jpeg_encoder::SamplingFactor::R_4_2_0);
    encoder.encode(&pixels, 64, 64, jpeg_encoder::ColorType::Rgb).expect("encode");
    let sof = bytes.windows(2).position(|m| m == [0xFF, 0xC2]).expect("a progressive frame header");
    bytes[sof + 5..sof + 7].copy_from_slice(&h.to_be_bytes());
    bytes[sof + 7..sof + 9].copy_from_slice(&w.to_be_bytes());
    bytes
}

/// A real JPEG followed by noise up to exactly `len` bytes (a phone's trailer after the image):
/// a file of any size that the server takes as a photo.
pub fn jpeg_padded(len: usize) -> Vec<u8> {
    let mut bytes = jpeg(64, 48);
    let mut state = 0x2545_f491_u32;
    while bytes.len() < len {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        bytes.push(state as u8);
    }
    bytes
}
