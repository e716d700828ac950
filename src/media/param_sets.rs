//! The picture size an H.264 or HEVC decoder will allocate, read from the stream's own sequence
//! parameter set (SPS) in the container's decoder configuration (`avcC`, `hvcC`). A container's
//! labels (an MP4's `tkhd`, a HEIC's `ispe`) are what the file says of itself; the SPS is what
//! the decoder believes. A file whose labels understate its stream is refused at upload, before
//! any decoder sees it (`media::probe`, `media::video::bmff`).
//!
//! Pure Rust, over at most one parameter set of `MAX_NAL_BYTES`; `None` wherever the syntax is
//! not the one read here (the worker's kernel limits still hold for such a file).

/// A parameter set longer than this is not read.
const MAX_NAL_BYTES: usize = 4096;
/// Exp-Golomb codes longer than this are not valid in any field read here.
const MAX_GOLOMB_ZEROS: u32 = 31;

/// The coded size (width, height in luma samples) of the first SPS in an `avcC` payload.
pub fn avc_coded_size(avcc: &[u8]) -> Option<(u32, u32)> {
    // configurationVersion, profile, compatibility, level, lengthSizeMinusOne, SPS count.
    let count = avcc.get(5)? & 0x1F;
    if *avcc.first()? != 1 || count == 0 {
        return None;
    }
    let len = usize::from(u16::from_be_bytes([*avcc.get(6)?, *avcc.get(7)?]));
    let nal = avcc.get(8..8 + len)?;
    (nal.first()? & 0x1F == 7).then_some(())?;
    h264_sps_size(&rbsp(nal.get(1..)?)?)
}

/// The coded size of the first SPS in an `hvcC` payload.
pub fn hevc_coded_size(hvcc: &[u8]) -> Option<(u32, u32)> {
    // 22 bytes of profile, level and stream properties, then the number of NAL unit arrays.
    if *hvcc.first()? != 1 {
        return None;
    }
    let arrays = *hvcc.get(22)?;
    let mut at = 23;
    for _ in 0..arrays {
        let kind = hvcc.get(at)? & 0x3F;
        let count = u16::from_be_bytes([*hvcc.get(at + 1)?, *hvcc.get(at + 2)?]);
        at += 3;
        for _ in 0..count {
            let len = usize::from(u16::from_be_bytes([*hvcc.get(at)?, *hvcc.get(at + 1)?]));
            let nal = hvcc.get(at + 2..at + 2 + len)?;
            if kind == 33 {
                return hevc_sps_size(&rbsp(nal.get(2..)?)?);
            }
            at += 2 + len;
        }
    }
    None
}

/// A NAL unit's payload without its emulation-prevention bytes (`00 00 03`).
fn rbsp(nal: &[u8]) -> Option<Vec<u8>> {
    if nal.len() > MAX_NAL_BYTES {
        return None;
    }
    let mut out = Vec::with_capacity(nal.len());
    let mut zeros = 0;
    for &byte in nal {
        if zeros >= 2 && byte == 3 {
            zeros = 0;
            continue;
        }
        zeros = if byte == 0 { zeros + 1 } else { 0 };
        out.push(byte);
    }
    Some(out)
}

/// Reads bits, most significant first.
struct Bits<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Bits<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Bits { bytes, at: 0 }
    }

    fn bit(&mut self) -> Option<u32> {
        let byte = self.bytes.get(self.at / 8)?;
        let bit = (byte >> (7 - self.at % 8)) & 1;
        self.at += 1;
        Some(u32::from(bit))
    }

    fn bits(&mut self, n: u32) -> Option<u32> {
        (0..n).try_fold(0u32, |v, _| Some(v << 1 | self.bit()?))
    }

    fn skip(&mut self, n: usize) -> Option<()> {
        self.at += n;
        (self.at <= self.bytes.len() * 8).then_some(())
    }

    /// Unsigned exp-Golomb.
    fn ue(&mut self) -> Option<u32> {
        let mut zeros = 0;
        while self.bit()? == 0 {
            zeros += 1;
            if zeros > MAX_GOLOMB_ZEROS {
                return None;
            }
        }
        let rest = self.bits(zeros)?;
        ((1u64 << zeros) - 1 + u64::from(rest)).try_into().ok()
    }

    /// Signed exp-Golomb.
    fn se(&mut self) -> Option<i64> {
        let k = i64::from(self.ue()?);
        Some(if k % 2 == 1 { (k + 1) / 2 } else { -(k / 2) })
    }
}

/// H.264 (ITU-T H.264 7.3.2.1.1) up to `frame_mbs_only_flag`: the size in macroblocks.
fn h264_sps_size(sps: &[u8]) -> Option<(u32, u32)> {
    let mut b = Bits::new(sps);
    let profile = b.bits(8)?;
    b.skip(16)?; // constraint flags, level
    b.ue()?; // seq_parameter_set_id
    if matches!(profile, 100 | 110 | 122 | 244 | 44 | 83 | 86 | 118 | 128 | 138 | 139 | 134 | 135) {
        let chroma_format = b.ue()?;
        if chroma_format == 3 {
            b.skip(1)?;
        }
        b.ue()?; // bit depths
        b.ue()?;
        b.skip(1)?; // qpprime_y_zero_transform_bypass_flag
        if b.bit()? == 1 {
            for i in 0..if chroma_format == 3 { 12 } else { 8 } {
                if b.bit()? == 1 {
                    scaling_list(&mut b, if i < 6 { 16 } else { 64 })?;
                }
            }
        }
    }
    b.ue()?; // log2_max_frame_num_minus4
    match b.ue()? {
        0 => {
            b.ue()?;
        }
        1 => {
            b.skip(1)?;
            b.se()?;
            b.se()?;
            let cycle = b.ue()?;
            if cycle > 255 {
                return None;
            }
            for _ in 0..cycle {
                b.se()?;
            }
        }
        _ => {}
    }
    b.ue()?; // max_num_ref_frames
    b.skip(1)?;
    let width_mbs = u64::from(b.ue()?) + 1;
    let height_units = u64::from(b.ue()?) + 1;
    let frame_mbs_only = u64::from(b.bit()?);
    let width = width_mbs * 16;
    let height = height_units * 16 * (2 - frame_mbs_only);
    Some((width.try_into().ok()?, height.try_into().ok()?))
}

fn scaling_list(b: &mut Bits<'_>, size: usize) -> Option<()> {
    let (mut last, mut next) = (8i64, 8i64);
    for _ in 0..size {
        if next != 0 {
            next = (last + b.se()? + 256).rem_euclid(256);
        }
        if next != 0 {
            last = next;
        }
    }
    Some(())
}

/// HEVC (ITU-T H.265 7.3.2.2.1) up to `pic_height_in_luma_samples`.
fn hevc_sps_size(sps: &[u8]) -> Option<(u32, u32)> {
    let mut b = Bits::new(sps);
    b.skip(4)?; // sps_video_parameter_set_id
    let sub_layers = b.bits(3)? as usize;
    b.skip(1)?;
    // profile_tier_level: the general profile and level (96 bits), then the sub-layers'.
    b.skip(96)?;
    let mut present = Vec::with_capacity(sub_layers);
    for _ in 0..sub_layers {
        present.push((b.bit()?, b.bit()?));
    }
    if sub_layers > 0 {
        b.skip(2 * (8 - sub_layers))?;
    }
    for (profile, level) in present {
        b.skip(88 * profile as usize + 8 * level as usize)?;
    }
    b.ue()?; // sps_seq_parameter_set_id
    if b.ue()? == 3 {
        b.skip(1)?;
    }
    Some((b.ue()?, b.ue()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    // Decoder configurations of streams ffmpeg's libx264 and libx265 wrote.
    const AVC_HIGH_1080P: &str =
        "01640028ffe1001b67640028acd940780227e5c044000003000400000300083c60c65801000668ebe3cb22c0fdf8f800";
    const AVC_BASELINE_720P: &str =
        "0142c01fffe100196742c01fd9005005bb011000000300100000030020f183248001000568cb83cb20";
    const AVC_HIGH444_2160P: &str =
        "01f40033ffe1001b67f40033919b280780087d80880000030008000003001078c18cb001000668ebe3c44844fff8f800";
    const HEVC_1080P: &str = "01016000000090000000000078f000fcfdf8f800000f04a00001001840010c01ffff016000000300900000030000030078959809a10001002b420101016000000300900000030000030078a003c08010e596566924caf016808000000300800000030084a2000100074401c172b4624027";

    #[test]
    fn the_coded_size_of_real_h264_streams() {
        assert_eq!(avc_coded_size(&hex(AVC_HIGH_1080P)), Some((1920, 1088)));
        assert_eq!(avc_coded_size(&hex(AVC_BASELINE_720P)), Some((1280, 720)));
        assert_eq!(avc_coded_size(&hex(AVC_HIGH444_2160P)), Some((3840, 2160)));
    }

    #[test]
    fn the_coded_size_of_a_real_hevc_stream() {
        assert_eq!(hevc_coded_size(&hex(HEVC_1080P)), Some((1920, 1080)));
    }

    #[test]
    fn cut_or_foreign_configurations_tell_nothing() {
        let full = hex(HEVC_1080P);
        for end in 0..full.len() - 40 {
            assert_eq!(hevc_coded_size(&full[..end]), None, "cut at {end}");
        }
        assert_eq!(avc_coded_size(&[]), None);
        assert_eq!(avc_coded_size(&[2, 0x64, 0, 0x28, 0xFF, 0xE1]), None);
        let mut not_sps = hex(AVC_BASELINE_720P);
        not_sps[8] = 0x68;
        assert_eq!(avc_coded_size(&not_sps), None);
    }

    #[test]
    fn any_bytes_end_without_a_panic() {
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..20_000 {
            let mut bytes = hex(if state.is_multiple_of(2) { HEVC_1080P } else { AVC_HIGH_1080P });
            for _ in 0..4 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let at = (state % bytes.len() as u64) as usize;
                bytes[at] = (state >> 32) as u8;
            }
            let _ = (hevc_coded_size(&bytes), avc_coded_size(&bytes));
        }
    }
}
