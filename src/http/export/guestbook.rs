//! `guestbook.txt` in the export: the event's guestbook as a plain text file the organiser can
//! open anywhere. UTF-8 with a byte order mark and CRLF line ends (so Windows' editors read the
//! names' accents and the line breaks right); one entry per message, oldest first: its time (UTC)
//! and writer's name on one line, then the message, every line of it indented, so no message can
//! pass itself off as another entry's heading. The texts were cleaned on input (no control or
//! format characters: nothing that reorders, hides or colours what the organiser reads).

use async_zip::tokio::write::ZipFileWriter;
use async_zip::{Compression, ZipEntryBuilder};
use futures_lite::AsyncWriteExt;
use tokio::io::DuplexStream;
use uuid::Uuid;

use crate::db::guestbook::MessageRow;
use crate::db::uploads::ExportExtras;
use crate::domain::Review;
use crate::http::AppState;

/// The entry's name; no photo's entry can have it (theirs always hold ` - `).
pub const NAME: &str = "guestbook.txt";
const PAGE: i64 = 500;

/// Writes `guestbook.txt` when the guestbook holds a message the export includes (the shown,
/// approved ones, and the hidden or waiting ones when asked); returns how many it holds.
pub async fn write(
    state: &AppState,
    event_id: Uuid,
    event_name: &str,
    include: ExportExtras,
    zip: &mut ZipFileWriter<DuplexStream>,
) -> anyhow::Result<usize> {
    let mut page = state.db.export_messages(event_id, None, PAGE, include).await?;
    if page.is_empty() {
        return Ok(0);
    }
    let first = page.first().map(|m| m.created_at).unwrap_or_else(chrono::Utc::now);
    let entry = ZipEntryBuilder::new(NAME.to_owned().into(), Compression::Stored)
        .last_modification_date(super::zip_time(first));
    let mut writer = zip.write_entry_stream(entry).await?;
    writer.write_all(heading(event_name).as_bytes()).await?;
    let mut count = 0;
    while let Some(last) = page.last().map(|m| m.id) {
        for message in &page {
            writer.write_all(entry_text(message).as_bytes()).await?;
            count += 1;
        }
        page = state.db.export_messages(event_id, Some(last), PAGE, include).await?;
    }
    writer.close().await?;
    Ok(count)
}

/// The file's first lines.
fn heading(event_name: &str) -> String {
    format!("\u{FEFF}Guestbook · {event_name}\r\nOldest first; times in UTC.\r\n\r\n")
}

/// One message: `2026-06-14 21:05 UTC · Anna`, then its lines, indented, then a blank line.
fn entry_text(message: &MessageRow) -> String {
    let mut marks = Vec::new();
    if message.review == Review::Pending {
        marks.push("waiting for approval");
    }
    if message.hidden {
        marks.push("hidden");
    }
    let marks = if marks.is_empty() { String::new() } else { format!(" [{}]", marks.join(", ")) };
    let mut out = format!(
        "{} · {}{marks}\r\n",
        message.created_at.format("%Y-%m-%d %H:%M UTC"),
        one_line(&message.guest_display_name)
    );
    for line in message.text.lines() {
        out.push_str("    ");
        out.push_str(line);
        out.push_str("\r\n");
    }
    out.push_str("\r\n");
    out
}

/// A name stays on its one line whatever it holds (names are one-line texts already).
fn one_line(name: &str) -> String {
    name.chars().map(|c| if c.is_control() { ' ' } else { c }).collect()
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;
    use crate::domain::Gallery;

    fn message(text: &str, review: Review, hidden: bool) -> MessageRow {
        MessageRow {
            id: Uuid::now_v7(),
            event_id: Uuid::nil(),
            event_slug: "e".into(),
            guest_id: Uuid::nil(),
            guest_display_name: "Anna".into(),
            text: text.into(),
            review,
            hidden,
            created_at: chrono::Utc.with_ymd_and_hms(2026, 6, 14, 21, 5, 0).single().unwrap_or_default(),
            event_gallery: Gallery::Everyone,
            event_gallery_opens_at: None,
        }
    }

    #[test]
    fn every_line_of_a_message_is_indented_under_its_heading() {
        let text = entry_text(&message("Alles Gute!\n2026-06-14 21:06 UTC · Ben\nhi", Review::Approved, false));
        assert_eq!(
            text,
            "2026-06-14 21:05 UTC · Anna\r\n    Alles Gute!\r\n    2026-06-14 21:06 UTC · Ben\r\n    hi\r\n\r\n"
        );
    }

    #[test]
    fn waiting_and_hidden_messages_say_so() {
        let text = entry_text(&message("x", Review::Pending, true));
        assert!(text.starts_with("2026-06-14 21:05 UTC · Anna [waiting for approval, hidden]\r\n"), "{text}");
        assert!(heading("Anna & Ben").starts_with("\u{FEFF}Guestbook · Anna & Ben\r\n"));
    }
}
