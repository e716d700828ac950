use super::*;

fn name(guest: &str, filename: &str, content_type: &str) -> String {
    EntryNames::default().name(guest, filename, content_type)
}

#[test]
fn the_extension_is_the_stored_format_never_the_guests() {
    assert_eq!(name("Mallory", "invoice.hta", "image/jpeg"), "Mallory - invoice.jpg");
    assert_eq!(name("Anna", "IMG_1234.HEIC", "image/png"), "Anna - IMG_1234.png");
    assert_eq!(name("Anna", "scan", "image/gif"), "Anna - scan.gif");
    assert_eq!(name("Anna", "a.tar.gz", "image/webp"), "Anna - a.tar.webp");
    assert_eq!(name("Anna", ".hidden", "image/jpeg"), "Anna - hidden.jpg");
    assert_eq!(name("Anna", "x.jpg", "application/x-msdownload"), "Anna - x.bin");
    assert_eq!(name("Ben", "IMG_0001.MOV", "video/quicktime"), "Ben - IMG_0001.mov");
    assert_eq!(name("Ben", "first dance.exe", "video/mp4"), "Ben - first dance.mp4");
    assert_eq!(name("Ben", "clip", "video/webm"), "Ben - clip.webm");
}

#[test]
fn format_and_control_characters_and_reserved_characters_are_gone() {
    assert_eq!(name("Mallory", "holiday\u{202E}gpj.exe", "image/jpeg"), "Mallory - holidaygpj.jpg");
    assert_eq!(name("\u{200B}An\u{2066}na\u{FEFF}", "a\u{0}b\u{1F}c.jpg", "image/jpeg"), "Anna - a_b_c.jpg");
    assert_eq!(name("a/b\\c:d", "<x>|y?*\"z\".jpg", "image/jpeg"), "a_b_c_d - _x__y___z_.jpg");
    assert_eq!(name("..Anna..", " ..photo.. .jpg", "image/jpeg"), "Anna - photo.jpg");
    assert_eq!(name("\u{202E}", "\u{200B}.jpg", "image/jpeg"), "guest - photo.jpg");
    assert_eq!(name("Anna\u{2028}Ben", "a\tb.jpg", "image/jpeg"), "Anna Ben - a b.jpg");
}

#[test]
fn windows_device_names_are_never_the_stem() {
    assert_eq!(name("NUL.x", "a.jpg", "image/jpeg"), "_NUL.x - a.jpg");
    assert_eq!(name("com1 .y", "a.jpg", "image/jpeg"), "_com1 .y - a.jpg");
    assert_eq!(name("Conrad", "a.jpg", "image/jpeg"), "Conrad - a.jpg");
}

#[test]
fn names_are_bounded_in_characters_and_bytes() {
    let long = name("Anna", &format!("{}.jpg", "x".repeat(300)), "image/jpeg");
    assert_eq!(long.chars().count(), MAX_BASE_CHARS + ".jpg".len());
    let wide = name(&"🎉".repeat(60), "a.jpg", "image/jpeg");
    assert!(wide.len() <= MAX_BASE_BYTES + ".jpg".len(), "{} bytes", wide.len());
    assert!(wide.ends_with("🎉.jpg"));
    let cut = name("Anna", &format!("{}. b.jpg", "y".repeat(92)), "image/jpeg");
    assert!(!cut.contains(". .") && !cut.contains("..") && cut.ends_with("y.jpg"), "{cut}");
}

#[test]
fn names_are_unique_whatever_the_case() {
    let mut names = EntryNames::default();
    let given: Vec<String> = [
        ("Anna", "image.jpg"),
        ("Anna", "image.jpg"),
        ("anna", "IMAGE.JPG"),
        ("Anna", "image (2).jpg"),
        ("Anna", "image.png"),
    ]
    .iter()
    .map(|(g, f)| names.name(g, f, "image/jpeg"))
    .collect();
    assert_eq!(
        given,
        [
            "Anna - image.jpg",
            "Anna - image (2).jpg",
            "anna - IMAGE (3).jpg",
            "Anna - image (2) (2).jpg",
            "Anna - image (4).jpg"
        ]
    );
    let many: HashSet<String> =
        (0..1000).map(|_| names.name("Bob", "image.jpg", "image/jpeg").to_lowercase()).collect();
    assert_eq!(many.len(), 1000);
}
