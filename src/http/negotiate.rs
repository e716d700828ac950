//! Which format of a derivative a request gets: AVIF or WebP to the clients that say they decode
//! it, JPEG to every other (RFC 9110 §12.5.1, proactive negotiation on `Accept`).
//!
//! The rule: a format other than JPEG only when the `Accept` fields list its media type itself
//! (`image/avif`, `image/webp`) with a weight above 0 and at least the weight JPEG gets there
//! (`image/jpeg`, else `image/*`, else `*/*`; none: 0). Of those the upload has, the one with
//! the highest weight; a tie goes to the smaller file: AVIF, then WebP, then JPEG.
//! A wildcard alone never means AVIF or WebP: `*/*` is what `curl`, `fetch()` and old browsers
//! send, and `image/*` is what browsers that cannot decode them sent for images. Every browser
//! that decodes them names them in its image requests' `Accept`. No `Accept` at all, or one that
//! cannot be read: JPEG, which every client decodes — never 406.

use axum::http::{HeaderMap, header};

/// A form a thumb can be sent in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageForm {
    Avif,
    Webp,
    Jpeg,
}

/// The form of a derivative the request should get, of those that exist beside the JPEG.
pub fn preferred_form(headers: &HeaderMap, avif_exists: bool, webp_exists: bool) -> ImageForm {
    // The highest weight each range is given, if it is named at all.
    let (mut avif, mut webp, mut jpeg, mut image_any, mut any) = (None, None, None, None, None::<u16>);
    for field in headers.get_all(header::ACCEPT) {
        let Ok(field) = field.to_str() else { continue };
        for (range, q) in media_ranges(field) {
            let slot = match range.to_ascii_lowercase().as_str() {
                "image/avif" => &mut avif,
                "image/webp" => &mut webp,
                "image/jpeg" => &mut jpeg,
                "image/*" => &mut image_any,
                "*/*" => &mut any,
                _ => continue,
            };
            *slot = Some(slot.map_or(q, |before| before.max(q)));
        }
    }
    let jpeg = jpeg.or(image_any).or(any).unwrap_or(0);
    // Best first on ties: the smaller file.
    let mut best = (ImageForm::Jpeg, jpeg);
    for (form, exists, weight) in [(ImageForm::Webp, webp_exists, webp), (ImageForm::Avif, avif_exists, avif)] {
        if let Some(weight) = weight.filter(|&w| exists && w > 0 && w >= best.1) {
            best = (form, weight);
        }
    }
    best.0
}

/// The media ranges of one `Accept` field with their weights in thousandths (1000 when no `q`).
/// An element whose `q` is not a valid weight is left out; a quoted parameter value may hold
/// commas and semicolons.
fn media_ranges(field: &str) -> Vec<(&str, u16)> {
    split_outside_quotes(field, ',')
        .into_iter()
        .filter_map(|element| {
            let mut parts = split_outside_quotes(element, ';').into_iter();
            let range = parts.next()?.trim();
            if range.is_empty() {
                return None;
            }
            let mut q = 1000;
            for parameter in parts {
                let Some((name, value)) = parameter.split_once('=') else { continue };
                if name.trim().eq_ignore_ascii_case("q") {
                    q = weight(value.trim())?;
                }
            }
            Some((range, q))
        })
        .collect()
}

/// `qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )`, in thousandths.
fn weight(value: &str) -> Option<u16> {
    let (whole, fraction) = value.split_once('.').unwrap_or((value, ""));
    if fraction.len() > 3 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let thousandths = format!("{fraction:0<3}").parse::<u16>().ok()?;
    match whole {
        "0" => Some(thousandths),
        "1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

/// `text` cut at each `separator` that is not inside a quoted string (`"…"`, with `\` escapes).
fn split_outside_quotes(text: &str, separator: char) -> Vec<&str> {
    let (mut parts, mut start, mut quoted, mut escaped) = (Vec::new(), 0, false, false);
    for (i, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            c if c == separator && !quoted => {
                parts.push(&text[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn form(accept: &[&str], avif: bool, webp: bool) -> ImageForm {
        let mut headers = HeaderMap::new();
        for field in accept {
            headers.append(header::ACCEPT, HeaderValue::from_str(field).unwrap());
        }
        preferred_form(&headers, avif, webp)
    }

    /// For an upload with a WebP thumb only (derived before AVIF existed).
    fn webp(accept: &[&str]) -> bool {
        form(accept, false, true) == ImageForm::Webp
    }

    #[test]
    fn browsers_that_decode_avif_get_it() {
        let chromium = "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8";
        let firefox = "image/avif,image/webp,image/png,image/svg+xml,image/*;q=0.8,*/*;q=0.5";
        let safari = "image/webp,image/avif,image/jxl,image/heic,image/heic-sequence,video/*;q=0.8,image/png,image/svg+xml,image/*;q=0.8,*/*;q=0.5";
        for accept in [chromium, firefox, safari] {
            assert_eq!(form(&[accept], true, true), ImageForm::Avif, "{accept}");
            assert_eq!(form(&[accept], false, true), ImageForm::Webp, "an upload without AVIF: {accept}");
            assert_eq!(form(&[accept], false, false), ImageForm::Jpeg, "an upload with JPEG only: {accept}");
        }
        // Safari 14–15 decode WebP, not AVIF.
        let safari_15 = "image/webp,image/png,image/svg+xml,image/*;q=0.8,video/*;q=0.8,*/*;q=0.5";
        assert_eq!(form(&[safari_15], true, true), ImageForm::Webp);
        assert_eq!(form(&["image/avif"], true, false), ImageForm::Avif, "an upload without WebP");
    }

    #[test]
    fn avif_weights_are_read_as_rfc_9110_says() {
        assert_eq!(form(&["image/avif;q=0, image/webp"], true, true), ImageForm::Webp, "q=0: not acceptable");
        assert_eq!(form(&["image/avif;q=0.5, image/webp"], true, true), ImageForm::Webp, "WebP preferred");
        assert_eq!(form(&["image/avif;q=0.5, image/jpeg"], true, true), ImageForm::Jpeg, "JPEG preferred");
        assert_eq!(form(&["image/avif, image/webp"], true, true), ImageForm::Avif, "a tie goes to the smaller file");
        assert_eq!(form(&["image/*"], true, true), ImageForm::Jpeg, "a wildcard alone never means AVIF");
        assert_eq!(form(&["IMAGE/AVIF"], true, true), ImageForm::Avif, "media types are case-insensitive");
    }

    #[test]
    fn browsers_that_decode_webp_get_it() {
        // Chromium, Firefox and Safari (17) for an <img>.
        assert!(webp(&["image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8"]));
        assert!(webp(&["image/avif,image/webp,image/png,image/svg+xml,image/*;q=0.8,*/*;q=0.5"]));
        assert!(webp(&[
            "image/webp,image/avif,image/jxl,image/heic,image/heic-sequence,video/*;q=0.8,image/png,image/svg+xml,image/*;q=0.8,*/*;q=0.5"
        ]));
        assert!(webp(&["IMAGE/WEBP"]), "media types are case-insensitive");
        assert!(webp(&["text/html", "image/webp;q=0.5"]), "several fields are one list");
    }

    #[test]
    fn wildcards_and_missing_accept_get_jpeg() {
        assert!(!webp(&[]));
        assert!(!webp(&["*/*"]));
        assert!(!webp(&["image/*"]));
        assert!(!webp(&["image/png,image/svg+xml,image/*;q=0.8,video/*;q=0.8,*/*;q=0.5"]), "Safari 13");
        assert!(!webp(&["image/jpeg"]));
    }

    #[test]
    fn weights_are_read_as_rfc_9110_says() {
        assert!(!webp(&["image/webp;q=0"]), "q=0: not acceptable");
        assert!(!webp(&["image/webp; Q=0.000, */*"]));
        assert!(!webp(&["image/jpeg, image/webp;q=0.5"]), "JPEG preferred");
        assert!(!webp(&["image/webp;q=0.5, image/*;q=0.9"]), "any image preferred: JPEG is one");
        assert!(webp(&["image/webp;q=0.9, image/jpeg;q=0.8, image/*"]), "the specific range wins over image/*");
        assert!(webp(&["image/webp ; q=1.000 , image/jpeg"]), "a tie goes to the smaller file");
        assert!(!webp(&["image/webp;q=2"]), "an invalid weight leaves the range out");
        assert!(!webp(&["image/webp;q=0.1234"]));
        assert!(!webp(&["image/webp;q=abc"]));
        assert!(webp(&["image/webp;profile=\"a,b;q=0\""]), "quoted parameters hold separators");
    }
}
