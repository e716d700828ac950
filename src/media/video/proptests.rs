//! Whatever the bytes, the readers answer (a probe or a refusal) and never panic.

use proptest::prelude::*;

use super::*;

proptest! {
    #[test]
    fn any_movie_header_is_read_or_refused(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = bmff::parse_moov(&bytes, Container::Mp4);
        let _ = bmff::parse_moov_box(&bytes, Container::QuickTime);
    }

    #[test]
    fn any_ebml_file_is_read_or_refused(tail in proptest::collection::vec(any::<u8>(), 0..600), len in 0u64..100_000) {
        let mut file = vec![0x1A, 0x45, 0xDF, 0xA3, 0x84, 0x42, 0x82, 0x81, b'w'];
        file.extend(&tail);
        let _ = ebml::probe(&file, len.max(file.len() as u64));
        let _ = ebml::probe(&tail, tail.len() as u64);
    }

    #[test]
    fn any_stream_is_walked(head in proptest::collection::vec(any::<u8>(), 0..64), tail in proptest::collection::vec(any::<u8>(), 0..600), chunk in 1usize..50) {
        let mut file = [&[0, 0, 0, 0x10][..], b"ftypisom", &[0, 0, 0, 0]].concat();
        file.extend(&head);
        file.extend(&tail);
        for data in [&file[..], &tail[..]] {
            let mut walker = ContainerWalker::default();
            for c in data.chunks(chunk) {
                walker.update(c);
                let _ = walker.refusal();
            }
            let _ = walker.finish();
        }
    }
}
