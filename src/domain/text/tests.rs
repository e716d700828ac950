use super::*;

#[test]
fn display_names_are_trimmed_and_bounded() {
    assert_eq!(DisplayName::parse("  Anna ").map(|n| n.0).ok(), Some("Anna".to_owned()));
    assert!(DisplayName::parse("   ").is_err());
    assert!(DisplayName::parse(&"ä".repeat(60)).is_ok());
    assert!(DisplayName::parse(&"ä".repeat(61)).is_err());
}

#[test]
fn file_names_lose_their_directories() {
    assert_eq!(FileName::parse(Some("C:\\Users\\a\\IMG_1.jpg")).as_str(), "IMG_1.jpg");
    assert_eq!(FileName::parse(Some("../../etc/passwd")).as_str(), "passwd");
    assert_eq!(FileName::parse(None).as_str(), "photo");
    assert_eq!(FileName::parse(Some("dir/")).as_str(), "photo");
}

#[test]
fn empty_captions_are_no_caption() {
    assert!(matches!(Caption::parse("  "), Ok(None)));
    assert!(Caption::parse(&"x".repeat(501)).is_err());
}

#[test]
fn the_format_table_holds_every_range_of_category_cf_and_nothing_beside_it() {
    for (first, last) in FORMAT {
        assert!(is_format(*first) && is_format(*last), "{first:?}..{last:?}");
        let before = char::from_u32(*first as u32 - 1).unwrap_or('a');
        let after = char::from_u32(*last as u32 + 1).unwrap_or('a');
        assert!(!is_format(before), "{before:?} is not Cf");
        assert!(!is_format(after), "{after:?} is not Cf");
    }
    assert!(FORMAT.windows(2).all(|w| w[0].1 < w[1].0), "sorted, not overlapping");
    for c in ['\u{202E}', '\u{2066}', '\u{2069}', '\u{200B}', '\u{FEFF}', '\u{00AD}', '\u{E0041}'] {
        assert!(is_format(c), "{c:?}");
    }
    for c in ['a', ' ', '\u{0}', 'é', '😀', '\u{FE0F}', '\u{2065}'] {
        assert!(!is_format(c), "{c:?}");
    }
}

#[test]
fn bidi_overrides_and_zero_width_characters_are_removed_from_names() {
    let name = |raw: &str| DisplayName::parse(raw).map(|n| n.0).unwrap_or_default();
    assert_eq!(name("holiday\u{202E}gpj.exe"), "holidaygpj.exe");
    assert_eq!(name("\u{FEFF}An\u{200B}na\u{2066}\u{2069}"), "Anna");
    assert_eq!(name("Mal\u{200D}lo\u{00AD}ry"), "Mallory");
    assert_eq!(name("\u{200D}😀\u{200D}"), "😀");
    assert!(DisplayName::parse("\u{202E}\u{200B}\u{0}").is_err(), "nothing visible is an empty name");
    assert_eq!(EventName::parse("Anna\u{202E} & Ben").map(|n| n.0).ok(), Some("Anna & Ben".to_owned()));
    assert_eq!(FileName::parse(Some("holiday\u{202E}gpj.exe")).as_str(), "holidaygpj.exe");
}

#[test]
fn joiners_inside_emoji_and_words_that_need_them_stay() {
    for kept in [
        "👨\u{200D}👩\u{200D}👧",
        "❤\u{FE0F}\u{200D}🔥",
        "می\u{200C}خواهم",
        "🏴\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F} Scotland",
    ] {
        assert_eq!(DisplayName::parse(kept).map(|n| n.0).ok(), Some(kept.to_owned()));
    }
    // Tags anywhere else, or not ending in CANCEL TAG, are hidden text.
    let caption = |raw: &str| Caption::parse(raw).ok().flatten().map(Caption::into_string);
    assert_eq!(caption("🏴\u{E0067}\u{E0062} hi"), Some("🏴 hi".to_owned()));
    assert_eq!(caption("a\u{E0068}\u{E0069}\u{E007F}"), Some("a".to_owned()));
    let long = format!("🏴{}\u{E007F}", "\u{E0061}".repeat(50));
    assert_eq!(caption(&long), Some("🏴".to_owned()));
}

#[test]
fn nul_and_control_characters_are_removed_and_line_breaks_kept_where_text_has_lines() {
    let caption = |raw: &str| Caption::parse(raw).ok().flatten().map(Caption::into_string);
    assert_eq!(caption("a\u{0}b\u{7}c\u{7F}d\u{9B}"), Some("abcd".to_owned()));
    assert_eq!(caption("\u{0}\u{200B} \u{0}"), None, "only NUL and Cf is no caption");
    assert_eq!(caption("one\r\ntwo\rthree\u{2028}four\tfive"), Some("one\ntwo\nthree\nfour five".to_owned()));
    assert!(matches!(CommentText::parse("\u{0}\u{202E}"), Err(InvalidText::Comment(_))));
    assert_eq!(CommentText::parse(" hi\u{0}\n there ").map(|c| c.0).ok(), Some("hi\n there".to_owned()));
    assert_eq!(DisplayName::parse("Anna\nBen\tC").map(|n| n.0).ok(), Some("Anna Ben C".to_owned()));
}

#[test]
fn lengths_count_what_remains_after_cleaning() {
    let padded = format!("{}{}", "x".repeat(500), "\u{200B}".repeat(20));
    assert!(matches!(Caption::parse(&padded), Ok(Some(_))));
    assert!(CommentText::parse(&format!("{}\u{0}", "y".repeat(1000))).is_ok());
}

#[test]
fn guestbook_messages_are_cleaned_trimmed_and_bounded() {
    let message = |raw: &str| GuestbookText::parse(raw).map(|m| m.0);
    assert_eq!(message("  Alles Gute!\r\nEure Anna \u{202E}").ok(), Some("Alles Gute!\nEure Anna".to_owned()));
    assert!(matches!(GuestbookText::parse(" \u{0}\u{200B} "), Err(InvalidText::GuestbookMessage(_))));
    assert!(GuestbookText::parse(&"ü".repeat(500)).is_ok());
    assert!(matches!(GuestbookText::parse(&"ü".repeat(501)), Err(InvalidText::GuestbookMessage(_))));
}
