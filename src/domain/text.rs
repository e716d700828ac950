//! User-provided text: display names, event names, captions, comments, guestbook messages,
//! welcome texts and file names.
//! Lengths count characters (what a person typed), not bytes.
//!
//! Every text is cleaned on input, the same way on both databases: control characters go (a
//! NUL byte is refused by PostgreSQL and kept by SQLite), and so do Unicode format characters
//! (category Cf: bidi overrides and isolates, zero-width characters, the BOM, soft hyphens,
//! tag characters), which can reorder or hide what a person reads next to a photo. Two uses of
//! Cf that people type on purpose survive: a zero-width joiner or non-joiner between two
//! non-ASCII characters (emoji sequences such as 👨‍👩‍👧, Persian and Indic words) and a
//! well-formed emoji tag sequence after 🏴 (the flags of England, Scotland and Wales).
//! One-line texts turn line breaks and tabs into spaces; captions, comments, guestbook messages
//! and welcome texts keep line breaks (`\n`, with `\r\n`, `\r` and the Unicode line separators made `\n`) and
//! turn tabs into spaces, which is how a browser shows them anyway.

/// A text refused once cleaned (empty, or too long), saying which kind of text and why.
#[derive(Debug, thiserror::Error)]
pub enum InvalidText {
    #[error("{0}")]
    DisplayName(String),
    #[error("{0}")]
    EventName(String),
    #[error("{0}")]
    Caption(String),
    #[error("{0}")]
    Comment(String),
    #[error("{0}")]
    GuestbookMessage(String),
    #[error("{0}")]
    WelcomeText(String),
    #[error("{0}")]
    RejectReason(String),
}

/// Unicode general category Cf ("Format"), Unicode 16.0, from the Unicode Character Database
/// (`extracted/DerivedGeneralCategory.txt`, the lines marked `Cf`). Sorted, inclusive.
const FORMAT: &[(char, char)] = &[
    ('\u{00AD}', '\u{00AD}'),   // SOFT HYPHEN
    ('\u{0600}', '\u{0605}'),   // ARABIC NUMBER SIGN..ARABIC NUMBER MARK ABOVE
    ('\u{061C}', '\u{061C}'),   // ARABIC LETTER MARK
    ('\u{06DD}', '\u{06DD}'),   // ARABIC END OF AYAH
    ('\u{070F}', '\u{070F}'),   // SYRIAC ABBREVIATION MARK
    ('\u{0890}', '\u{0891}'),   // ARABIC POUND MARK ABOVE..ARABIC PIASTRE MARK ABOVE
    ('\u{08E2}', '\u{08E2}'),   // ARABIC DISPUTED END OF AYAH
    ('\u{180E}', '\u{180E}'),   // MONGOLIAN VOWEL SEPARATOR
    ('\u{200B}', '\u{200F}'),   // ZERO WIDTH SPACE..RIGHT-TO-LEFT MARK
    ('\u{202A}', '\u{202E}'),   // LEFT-TO-RIGHT EMBEDDING..RIGHT-TO-LEFT OVERRIDE
    ('\u{2060}', '\u{2064}'),   // WORD JOINER..INVISIBLE PLUS
    ('\u{2066}', '\u{206F}'),   // LEFT-TO-RIGHT ISOLATE..NOMINAL DIGIT SHAPES
    ('\u{FEFF}', '\u{FEFF}'),   // ZERO WIDTH NO-BREAK SPACE (BOM)
    ('\u{FFF9}', '\u{FFFB}'),   // INTERLINEAR ANNOTATION ANCHOR..TERMINATOR
    ('\u{110BD}', '\u{110BD}'), // KAITHI NUMBER SIGN
    ('\u{110CD}', '\u{110CD}'), // KAITHI NUMBER SIGN ABOVE
    ('\u{13430}', '\u{1343F}'), // EGYPTIAN HIEROGLYPH VERTICAL JOINER..END WALLED ENCLOSURE
    ('\u{1BCA0}', '\u{1BCA3}'), // SHORTHAND FORMAT LETTER OVERLAP..SHORTHAND FORMAT UP STEP
    ('\u{1D173}', '\u{1D17A}'), // MUSICAL SYMBOL BEGIN BEAM..MUSICAL SYMBOL END PHRASE
    ('\u{E0001}', '\u{E0001}'), // LANGUAGE TAG
    ('\u{E0020}', '\u{E007F}'), // TAG SPACE..CANCEL TAG
];

/// Whether `c` is a Unicode format character (general category Cf).
pub fn is_format(c: char) -> bool {
    FORMAT
        .binary_search_by(|&(first, last)| {
            if last < c {
                std::cmp::Ordering::Less
            } else if first > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

const ZWNJ: char = '\u{200C}';
const ZWJ: char = '\u{200D}';
const BLACK_FLAG: char = '\u{1F3F4}';
const CANCEL_TAG: char = '\u{E007F}';
/// The longest emoji tag sequence kept: a subdivision code (`gbsct`) is at most six letters.
const MAX_TAGS: usize = 8;

/// A character a joiner may stand between: visible, and not ASCII (ASCII words need no joiner,
/// so one there only hides something, as in `Mal\u{200D}lory`).
fn joinable(c: Option<char>) -> bool {
    c.is_some_and(|c| !c.is_ascii() && !c.is_control() && !c.is_whitespace() && !is_format(c))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Lines {
    /// Names: everything on one line.
    One,
    /// Captions, comments and welcome texts: line breaks stay.
    Many,
}

/// Cleans typed text as the module's first lines say, then trims it.
fn clean(raw: &str, lines: Lines) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    let mut previous = None;
    while let Some(c) = chars.next() {
        let kept = match c {
            '\r' if chars.peek() == Some(&'\n') => None,
            '\n' | '\r' | '\u{0085}' | '\u{2028}' | '\u{2029}' | '\u{000B}' | '\u{000C}' => {
                Some(if lines == Lines::Many { '\n' } else { ' ' })
            }
            '\t' => Some(' '),
            ZWJ | ZWNJ if joinable(previous) && joinable(chars.peek().copied()) => Some(c),
            BLACK_FLAG => {
                out.push(c);
                keep_tag_sequence(&mut chars, &mut out);
                previous = Some(c);
                continue;
            }
            c if c.is_control() || is_format(c) => None,
            c => Some(c),
        };
        if let Some(c) = kept {
            out.push(c);
            previous = Some(c);
        }
    }
    out.trim().to_owned()
}

/// After 🏴: takes the run of tag characters that follows and keeps it only when it is a
/// well-formed emoji tag sequence (tag letters or digits, then CANCEL TAG).
fn keep_tag_sequence(chars: &mut std::iter::Peekable<std::str::Chars<'_>>, out: &mut String) {
    let mut run = Vec::new();
    // A longer run is no tag sequence; what is left of it is dropped as any other Cf.
    while run.len() <= MAX_TAGS
        && let Some(&c) = chars.peek()
        && ('\u{E0020}'..=CANCEL_TAG).contains(&c)
    {
        chars.next();
        run.push(c);
        if c == CANCEL_TAG {
            break;
        }
    }
    let tag_letter_or_digit = |c: &char| matches!(c, '\u{E0030}'..='\u{E0039}' | '\u{E0061}'..='\u{E007A}');
    if let Some((&CANCEL_TAG, spec)) = run.split_last()
        && !spec.is_empty()
        && spec.iter().all(tag_letter_or_digit)
    {
        out.extend(run);
    }
}

/// A text that may be left out, line breaks kept: `None` when it is empty once cleaned; over
/// `max` characters, why not (naming it as `noun`).
fn optional(raw: &str, max: usize, noun: &str) -> Result<Option<String>, String> {
    let text = clean(raw, Lines::Many);
    match text.chars().count() {
        0 => Ok(None),
        n if n > max => Err(format!("the {noun} has {n} characters; at most {max} are allowed")),
        _ => Ok(Some(text)),
    }
}

/// A guest's name as shown beside their photos: 1–60 characters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DisplayName(String);

impl DisplayName {
    pub const MAX_CHARS: usize = 60;

    pub fn parse(raw: &str) -> Result<Self, InvalidText> {
        let name = clean(raw, Lines::One);
        match name.chars().count() {
            0 => Err(InvalidText::DisplayName("the display name must not be empty".into())),
            n if n > Self::MAX_CHARS => Err(InvalidText::DisplayName(format!(
                "the display name has {n} characters; at most {} are allowed",
                Self::MAX_CHARS
            ))),
            _ => Ok(Self(name)),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// An event's name: 1–120 characters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventName(String);

impl EventName {
    pub const MAX_CHARS: usize = 120;

    pub fn parse(raw: &str) -> Result<Self, InvalidText> {
        let name = clean(raw, Lines::One);
        match name.chars().count() {
            0 => Err(InvalidText::EventName("the event name must not be empty".into())),
            n if n > Self::MAX_CHARS => Err(InvalidText::EventName(format!(
                "the event name has {n} characters; at most {} are allowed",
                Self::MAX_CHARS
            ))),
            _ => Ok(Self(name)),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A photo's caption: at most 500 characters; an empty caption (also one that was only
/// control or format characters) is no caption.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caption(String);

impl Caption {
    pub const MAX_CHARS: usize = 500;

    pub fn parse(raw: &str) -> Result<Option<Self>, InvalidText> {
        optional(raw, Self::MAX_CHARS, "caption").map(|text| text.map(Self)).map_err(InvalidText::Caption)
    }

    pub fn into_string(self) -> String {
        self.0
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Why the organiser rejected a photo, shown to its uploader: one line of at most 200
/// characters; an empty reason is a rejection without one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RejectReason(String);

impl RejectReason {
    pub const MAX_CHARS: usize = 200;

    pub fn parse(raw: &str) -> Result<Self, InvalidText> {
        let text = clean(raw, Lines::One);
        match text.chars().count() {
            n if n > Self::MAX_CHARS => Err(InvalidText::RejectReason(format!(
                "the reason has {n} characters; at most {} are allowed",
                Self::MAX_CHARS
            ))),
            _ => Ok(Self(text)),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A comment on a photo: 1–1000 characters once cleaned and trimmed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommentText(String);

impl CommentText {
    pub const MAX_CHARS: usize = 1000;

    pub fn parse(raw: &str) -> Result<Self, InvalidText> {
        let text = clean(raw, Lines::Many);
        match text.chars().count() {
            0 => Err(InvalidText::Comment("the comment is empty".into())),
            n if n > Self::MAX_CHARS => Err(InvalidText::Comment(format!(
                "the comment has {n} characters; at most {} are allowed",
                Self::MAX_CHARS
            ))),
            _ => Ok(Self(text)),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A guest's message in the event's guestbook: 1–500 characters once cleaned and trimmed, line
/// breaks kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuestbookText(String);

impl GuestbookText {
    pub const MAX_CHARS: usize = 500;

    pub fn parse(raw: &str) -> Result<Self, InvalidText> {
        let text = clean(raw, Lines::Many);
        match text.chars().count() {
            0 => Err(InvalidText::GuestbookMessage("the message is empty".into())),
            n if n > Self::MAX_CHARS => Err(InvalidText::GuestbookMessage(format!(
                "the message has {n} characters; at most {} are allowed",
                Self::MAX_CHARS
            ))),
            _ => Ok(Self(text)),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The organiser's welcome on the guests' page: at most 1000 characters, line breaks kept; an
/// empty one (also one that was only control or format characters) is no welcome text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WelcomeText(String);

impl WelcomeText {
    pub const MAX_CHARS: usize = 1000;

    pub fn parse(raw: &str) -> Result<Option<Self>, InvalidText> {
        optional(raw, Self::MAX_CHARS, "welcome text").map(|text| text.map(Self)).map_err(InvalidText::WelcomeText)
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

/// The file name a phone sent, without any directory part, at most 255 characters.
/// A missing or empty name becomes `photo`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileName(String);

impl FileName {
    const MAX_CHARS: usize = 255;

    pub fn parse(raw: Option<&str>) -> Self {
        let raw = raw.unwrap_or_default();
        let base = raw.rsplit(['/', '\\']).next().unwrap_or_default();
        let name: String = clean(base, Lines::One).chars().take(Self::MAX_CHARS).collect();
        if name.is_empty() || name == "." || name == ".." { Self("photo".into()) } else { Self(name) }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests;
