//! The reader on hand-made bodies, and property tests on arbitrary bytes and arbitrary
//! chunkings: no panic, bounded buffering, and the same parts however a body is cut.

use axum::http::{HeaderMap, HeaderValue, header};
use bytes::Bytes;
use proptest::prelude::*;

use super::headers::disposition_param;
use super::*;

const LIMITS: Limits = Limits { preamble: 4096, part_headers: 8192, parts: 16, body: 1 << 20 };

type Parts = Vec<(PartHead, Vec<u8>)>;

/// Feeds `body` to a parser in chunks of the given sizes (cycled), checking after every step
/// that the parser keeps no more than its bound besides the chunk it was just given.
fn parse_in_chunks(boundary: &str, limits: Limits, body: &[u8], sizes: &[usize]) -> Result<Parts, MultipartError> {
    let mut parser = Parser::new(boundary, limits);
    let bound = parser.bound();
    let mut rest = body;
    let mut sizes = sizes.iter().copied().filter(|&s| s > 0).cycle();
    let mut last_chunk = 0;
    let mut parts: Parts = Vec::new();
    loop {
        let event = parser.next_event();
        assert!(parser.buf.len() <= bound + last_chunk, "buffered {} > {bound} + {last_chunk}", parser.buf.len());
        match event? {
            Event::NeedData => {
                assert!(parser.buf.len() < bound, "waits with {} bytes buffered", parser.buf.len());
                if rest.is_empty() {
                    parser.eof = true;
                    last_chunk = 0;
                } else {
                    let n = sizes.next().unwrap_or(rest.len()).min(rest.len());
                    parser.push(Bytes::copy_from_slice(&rest[..n]));
                    rest = &rest[n..];
                    last_chunk = n;
                }
            }
            Event::Part(head) => parts.push((head, Vec::new())),
            Event::Data(data) => {
                assert!(!data.is_empty());
                parts.last_mut().expect("data inside a part").1.extend_from_slice(&data);
            }
            Event::PartEnd => {}
            Event::End => return Ok(parts),
        }
    }
}

fn parse(body: &[u8]) -> Result<Parts, MultipartError> {
    parse_in_chunks("XYZ", LIMITS, body, &[body.len().max(1)])
}

fn form() -> Vec<u8> {
    b"--XYZ\r\nContent-Disposition: form-data; name=\"client_upload_id\"\r\n\r\nabc\r\n\
      --XYZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a b.jpg\"\r\n\
      Content-Type: image/jpeg\r\n\r\n\xff\xd8\r\n--XY\r\n--XYZ--\r\n"
        .to_vec()
}

#[test]
fn a_form_yields_its_parts_in_order_with_their_bytes() {
    let parts = parse(&form()).expect("parts");
    assert_eq!(parts.len(), 2);
    assert_eq!(parts[0].0.name.as_deref(), Some("client_upload_id"));
    assert_eq!(parts[0].1, b"abc");
    assert_eq!(parts[1].0.name.as_deref(), Some("file"));
    assert_eq!(parts[1].0.file_name.as_deref(), Some("a b.jpg"));
    assert_eq!(parts[1].0.content_type.as_deref(), Some("image/jpeg"));
    assert_eq!(parts[1].1, b"\xff\xd8\r\n--XY");
}

#[test]
fn a_preamble_padding_an_empty_header_block_and_an_epilogue_are_read_as_rfc_2046_says() {
    let body = b"a preamble\r\n--XYZ \t\r\n\r\nno headers\r\n--XYZ--  \r\nepilogue";
    let parts = parse(body).expect("parts");
    assert_eq!(parts, vec![(PartHead::default(), b"no headers".to_vec())]);
    assert_eq!(parse(b"--XYZ--").expect("no parts"), vec![]);
}

#[test]
fn broken_framing_is_malformed() {
    for body in [
        &b""[..],
        b"no boundary at all",
        b"--XYZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nnot closed",
        b"--XYZ\r\nContent-Disposition: form-data; name=\"a\"",
        b"--XYZx\r\n\r\n",
        b"--XYZ\r\nno colon\r\n\r\nx\r\n--XYZ--",
        b"--XYZ\r\nContent-Disposition: form-data; name=\"a\r\n\r\nx\r\n--XYZ--",
        b"--XYZ\r\nA: b\r\n folded\r\n\r\nx\r\n--XYZ--",
        b"--XYZ\r\n\r\nx\r\n--XYZ",
    ] {
        assert!(matches!(parse(body), Err(MultipartError::Malformed(_))), "{:?}", String::from_utf8_lossy(body));
    }
}

#[test]
fn the_preamble_part_headers_parts_and_body_are_bounded() {
    let limits = Limits { preamble: 64, part_headers: 128, parts: 2, body: 1000 };
    let long_preamble = [vec![b'x'; 65], b"--XYZ--".to_vec()].concat();
    assert!(matches!(parse_in_chunks("XYZ", limits, &long_preamble, &[7]), Err(MultipartError::Malformed(_))));
    let short_preamble = [vec![b'x'; 64], b"--XYZ--".to_vec()].concat();
    assert_eq!(parse_in_chunks("XYZ", limits, &short_preamble, &[7]), Ok(vec![]));

    let long_header = [b"--XYZ\r\nX: ".to_vec(), vec![b'y'; 200], b"\r\n\r\nx\r\n--XYZ--".to_vec()].concat();
    assert!(matches!(parse_in_chunks("XYZ", limits, &long_header, &[5]), Err(MultipartError::Malformed(_))));

    let three_parts = b"--XYZ\r\n\r\na\r\n--XYZ\r\n\r\nb\r\n--XYZ\r\n\r\nc\r\n--XYZ--";
    assert!(matches!(parse_in_chunks("XYZ", limits, three_parts, &[3]), Err(MultipartError::Malformed(_))));

    let big = [b"--XYZ\r\n\r\n".to_vec(), vec![b'z'; 1000], b"\r\n--XYZ--".to_vec()].concat();
    assert_eq!(parse_in_chunks("XYZ", limits, &big, &[100]), Err(MultipartError::TooLarge));
}

#[test]
fn content_disposition_parameters_are_read_as_browsers_write_them() {
    let param = |value: &str, name: &[u8]| disposition_param(value.as_bytes(), name);
    assert_eq!(
        param(r#"form-data; name="file"; filename="C:\Users\a.jpg""#, b"filename"),
        Ok(Some(r"C:\Users\a.jpg".into()))
    );
    assert_eq!(param(r#"form-data; filename="a\"b;c.jpg"; name=file"#, b"name"), Ok(Some("file".into())));
    assert_eq!(param(r#"form-data; filename="a\"b;c.jpg"; name=file"#, b"filename"), Ok(Some("a\"b;c.jpg".into())));
    assert_eq!(param("form-data; NAME = caption ", b"name"), Ok(Some("caption".into())));
    assert_eq!(param("form-data; filename*=UTF-8''a.jpg", b"filename"), Ok(None));
    assert_eq!(param("form-data; name=\"Grüße\"", b"name"), Ok(Some("Grüße".into())));
    assert!(param("form-data; name=\"open", b"name").is_err());
}

#[test]
fn the_boundary_comes_from_the_content_type() {
    let with = |value: &str| {
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_str(value).expect("header"));
        boundary(&headers)
    };
    assert_eq!(with("multipart/form-data; boundary=abc"), Ok("abc".into()));
    assert_eq!(with("Multipart/Form-Data; charset=utf-8; boundary=\"a b:c\""), Ok("a b:c".into()));
    assert!(with("multipart/form-data").is_err());
    assert!(with("multipart/form-data; boundary=").is_err());
    assert!(with("application/json").is_err());
    assert!(boundary(&HeaderMap::new()).is_err());
}

#[tokio::test]
async fn the_async_reader_skips_unread_data_and_stops_at_the_closing_boundary() {
    let chunks: Vec<Result<Bytes, std::io::Error>> = form().chunks(5).map(|c| Ok(Bytes::copy_from_slice(c))).collect();
    let mut reader = MultipartReader::new(futures_util::stream::iter(chunks), "XYZ", LIMITS);
    assert_eq!(reader.next_part().await.expect("part").and_then(|h| h.name).as_deref(), Some("client_upload_id"));
    let file = reader.next_part().await.expect("part").expect("file part");
    assert_eq!(file.file_name.as_deref(), Some("a b.jpg"));
    let mut data = Vec::new();
    while let Some(chunk) = reader.chunk().await.expect("chunk") {
        data.extend_from_slice(&chunk);
    }
    assert_eq!(data, b"\xff\xd8\r\n--XY");
    assert_eq!(reader.chunk().await, Ok(None));
    assert_eq!(reader.next_part().await, Ok(None));
    assert!(reader.finished() && reader.failure().is_none());
}

#[tokio::test]
async fn a_failing_body_stream_fails_the_reader_for_good() {
    let chunks = vec![Ok(Bytes::from_static(b"--XYZ\r\n\r\nabc")), Err(std::io::Error::other("gone"))];
    let mut reader = MultipartReader::new(futures_util::stream::iter(chunks), "XYZ", LIMITS);
    assert!(reader.next_part().await.expect("part").is_some());
    assert!(matches!(reader.chunk().await, Ok(Some(_))));
    assert!(matches!(reader.chunk().await, Err(MultipartError::Transport(_))));
    assert!(matches!(reader.failure(), Some(MultipartError::Transport(_))) && !reader.finished());
    assert!(matches!(reader.next_part().await, Err(MultipartError::Transport(_))));
    assert!(matches!(reader.chunk().await, Err(MultipartError::Transport(_))));
}

/// Bytes that often look like a delimiter's start, so cuts land inside near-matches.
fn tricky_bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(vec![b'\r', b'\n', b'-', b'B', b'x', 0xff]), 0..max)
}

fn well_formed(boundary: &str, parts: &[(String, Option<String>, Vec<u8>)], preamble: &[u8]) -> Vec<u8> {
    let mut body = preamble.to_vec();
    if !preamble.is_empty() {
        body.extend_from_slice(b"\r\n");
    }
    for (name, file_name, data) in parts {
        body.extend_from_slice(format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"").as_bytes());
        if let Some(file_name) = file_name {
            body.extend_from_slice(format!("; filename=\"{file_name}\"\r\nContent-Type: image/jpeg").as_bytes());
        }
        body.extend_from_slice(b"\r\n\r\n");
        body.extend_from_slice(data);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    body
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_in_arbitrary_chunks_never_panic_nor_overfill_the_buffer(
        body in prop_oneof![prop::collection::vec(any::<u8>(), 0..3000), tricky_bytes(3000)],
        prefix in prop::sample::select(vec!["", "--Bx\r\n", "--Bx\r\n\r\n"]),
        sizes in prop::collection::vec(1usize..300, 1..20),
    ) {
        let limits = Limits { preamble: 256, part_headers: 512, parts: 4, body: 2500 };
        let body = [prefix.as_bytes(), &body[..]].concat();
        if let Ok(parts) = parse_in_chunks("Bx", limits, &body, &sizes) {
            prop_assert!(parts.len() <= 4);
            prop_assert!(parts.iter().map(|p| p.1.len()).sum::<usize>() <= body.len());
        }
    }

    #[test]
    fn a_well_formed_body_yields_the_same_parts_however_it_is_cut(
        parts in prop::collection::vec(
            ("[a-z_]{0,12}", prop::option::of("[a-zA-Z0-9 ._-]{0,20}"), tricky_bytes(400)),
            0..6,
        ),
        preamble in "[a-z ]{0,40}",
        sizes in prop::collection::vec(1usize..200, 1..20),
    ) {
        let boundary = "B-xB";
        let delimiter = format!("\r\n--{boundary}").into_bytes();
        prop_assume!(parts.iter().all(|p| memmem::find(&[b"\r\n", &p.2[..]].concat(), &delimiter).is_none()));
        let body = well_formed(boundary, &parts, preamble.as_bytes());
        let whole = parse_in_chunks(boundary, LIMITS, &body, &[body.len()]);
        let cut = parse_in_chunks(boundary, LIMITS, &body, &sizes);
        prop_assert_eq!(&whole, &cut);
        let got = whole.expect("a well-formed body parses");
        prop_assert_eq!(got.len(), parts.len());
        for ((head, data), (name, file_name, bytes)) in got.iter().zip(&parts) {
            prop_assert_eq!(head.name.as_deref(), Some(name.as_str()));
            prop_assert_eq!(head.file_name.as_deref(), file_name.as_deref());
            prop_assert_eq!(data, bytes);
        }
    }
}
