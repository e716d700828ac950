//! The header lines of a multipart body: the request's boundary, and what a part's headers
//! say about it (its name, file name and content type).

use axum::http::{HeaderMap, header};
use memchr::memmem;

use super::{MultipartError, PartHead};

/// The boundary a request's `Content-Type: multipart/form-data; boundary=…` names.
pub fn boundary(headers: &HeaderMap) -> Result<String, MultipartError> {
    let not_form = || MultipartError::Malformed("the Content-Type must be multipart/form-data".into());
    let value = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).ok_or_else(not_form)?;
    let mut params = value.split(';');
    if !params.next().unwrap_or_default().trim().eq_ignore_ascii_case("multipart/form-data") {
        return Err(not_form());
    }
    let boundary = params
        .filter_map(|param| param.split_once('='))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("boundary"))
        .map(|(_, value)| value.trim())
        .map(|value| value.strip_prefix('"').and_then(|v| v.strip_suffix('"')).unwrap_or(value))
        .ok_or_else(|| MultipartError::Malformed("the Content-Type has no boundary".into()))?;
    // RFC 2046 allows 70 characters; a little more costs nothing and spares odd clients.
    let printable = boundary.bytes().all(|b| (0x20..0x7f).contains(&b));
    if boundary.is_empty() || boundary.len() > 200 || !printable || boundary.ends_with(' ') {
        return Err(MultipartError::Malformed("the boundary must be 1–200 printable characters".into()));
    }
    Ok(boundary.to_owned())
}

/// Parses a part's header lines (each but the last followed by CRLF).
pub(super) fn parse_head(mut lines: &[u8]) -> Result<PartHead, String> {
    let mut head = PartHead::default();
    while !lines.is_empty() {
        let end = memmem::find(lines, b"\r\n").unwrap_or(lines.len());
        let line = &lines[..end];
        lines = lines.get(end + 2..).unwrap_or_default();
        if line.first().is_some_and(|&b| b == b' ' || b == b'\t') {
            return Err("folded part headers are not allowed".into());
        }
        let colon = line.iter().position(|&b| b == b':').ok_or("a part's header line has no colon")?;
        let (name, value) = (&line[..colon], line[colon + 1..].trim_ascii());
        if name.is_empty() || !name.iter().all(|&b| b.is_ascii_graphic()) {
            return Err("a part's header has an invalid name".into());
        }
        if value.iter().any(|&b| b.is_ascii_control() && b != b'\t') {
            return Err("a part's header value has control characters".into());
        }
        if name.eq_ignore_ascii_case(b"content-disposition") {
            head.name = disposition_param(value, b"name")?;
            head.file_name = disposition_param(value, b"filename")?;
        } else if name.eq_ignore_ascii_case(b"content-type") {
            head.content_type = Some(String::from_utf8_lossy(value).into_owned());
        }
    }
    Ok(head)
}

/// One parameter of `Content-Disposition: form-data; name="…"; filename="…"`. Browsers
/// escape a quote in a file name as `%22` and keep backslashes (`C:\…`) as they are, so only
/// `\"` is unescaped.
pub(super) fn disposition_param(value: &[u8], wanted: &[u8]) -> Result<Option<String>, String> {
    let mut rest = value.splitn(2, |&b| b == b';').nth(1).unwrap_or_default();
    loop {
        rest = rest.trim_ascii_start();
        if rest.is_empty() {
            return Ok(None);
        }
        let end = rest.iter().position(|&b| b == b'=' || b == b';').unwrap_or(rest.len());
        let name = rest[..end].trim_ascii();
        rest = &rest[end..];
        let raw: Vec<u8> = match rest.first() {
            Some(b'=') => {
                rest = rest[1..].trim_ascii_start();
                if let Some(quoted) = rest.strip_prefix(b"\"") {
                    let mut value = Vec::new();
                    let mut i = 0;
                    loop {
                        match quoted.get(i) {
                            None => return Err("a part's Content-Disposition has an unterminated quote".into()),
                            Some(b'"') => break,
                            Some(b'\\') if quoted.get(i + 1) == Some(&b'"') => {
                                value.push(b'"');
                                i += 2;
                            }
                            Some(&b) => {
                                value.push(b);
                                i += 1;
                            }
                        }
                    }
                    rest = &quoted[i + 1..];
                    value
                } else {
                    let end = rest.iter().position(|&b| b == b';').unwrap_or(rest.len());
                    let token = rest[..end].trim_ascii().to_vec();
                    rest = &rest[end..];
                    token
                }
            }
            _ => Vec::new(),
        };
        if name.eq_ignore_ascii_case(wanted) {
            return Ok(Some(String::from_utf8_lossy(&raw).into_owned()));
        }
        rest = rest.trim_ascii_start();
        match rest.first() {
            Some(b';') => rest = &rest[1..],
            None => return Ok(None),
            Some(_) => return Err("a part's Content-Disposition is malformed".into()),
        }
    }
}
