//! `export.zip`: the organiser takes the event's visible originals home, one entry each (and the
//! hidden ones, or those waiting for approval, too, on request), and the guestbook as
//! `guestbook.txt` (`export::guestbook`).
//!
//! The archive is written while it is sent: a task reads the uploads a page at a time, streams
//! each original from storage into a ZIP entry (stored, not compressed: photos do not shrink)
//! and the entries flow through a small pipe into the response body. Memory stays at the
//! pipe's size whatever the event's size; nothing is staged on disk. ZIP64 records are written
//! when an archive passes 4 GiB.

use std::collections::{HashMap, HashSet};

use async_zip::tokio::write::ZipFileWriter;
use async_zip::{Compression, ZipDateTime, ZipEntryBuilder};
use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, header};
use axum::response::Response;
use futures_lite::AsyncWriteExt;
use futures_util::StreamExt;
use serde::Deserialize;
use tokio::io::DuplexStream;
use tokio_util::io::ReaderStream;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::extract::Organiser;
use super::openapi::{SlugParam, refusals, schemas};
use crate::db::uploads::ExportExtras;
use crate::domain::EventSlug;
use crate::error::{ApiError, ApiResult};
use crate::http::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(export))
}

const PIPE_BYTES: usize = 256 * 1024;
const PAGE: i64 = 200;

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct ExportParams {
    /// `true`: hidden photos are included too (the organiser keeps everything); `false` or absent: only
    /// the visible ones. Any other value: 400 `invalid_request`.
    #[param(value_type = Option<bool>)]
    include_hidden: Option<String>,
    /// `true`: photos waiting for the organiser's approval (the review gate) are included too; `false` or
    /// absent: only approved ones. Any other value: 400 `invalid_request`.
    #[param(value_type = Option<bool>)]
    include_pending: Option<String>,
}

/// A `true`/`false` query flag: absent, empty or `false` is false.
fn flag(name: &str, value: Option<&str>) -> ApiResult<bool> {
    match value {
        None | Some("" | "false") => Ok(false),
        Some("true") => Ok(true),
        Some(_) => Err(ApiError::InvalidRequest(format!("`{name}` must be `true` or `false`"))),
    }
}

/// Download the event's photos (organiser)
///
/// The event's organiser takes the visible originals home as one ZIP archive: one entry per upload that is neither
/// hidden nor deleted nor waiting for approval (whether `processing`, `ready` or `failed`), and nothing else; with
/// `include_hidden=true`, hidden uploads too, with `include_pending=true` those waiting for approval too (never
/// deleted ones). Entries are the original
/// bytes, stored (not compressed), oldest upload first, named `<display name> - <file name without its
/// extension>.<jpg|png|gif|webp|mp4|mov|webm|mkv>`: videos too; the extension comes from the stored format, never from the guest's file
/// name; Unicode format characters (bidi overrides, zero-width…), control characters and `<>:"/\|?*` are removed,
/// no leading dots, no trailing dots or spaces, no Windows device name as the stem; at most 100 characters and 200
/// bytes; ` (2)`, ` (3)`… when two would have the same name, compared case-insensitively, dated by `taken_at`, else
/// `created_at`. ZIP64 records are written when the archive passes 4 GiB. The archive is written while it is sent
/// (no `Content-Length`); should reading an original fail midway, the download ends early without the ZIP's central
/// directory, so an incomplete archive never looks complete. While the guestbook holds a message the export
/// includes (by the same two parameters), the first entry is `guestbook.txt`: UTF-8 with a byte order mark, CRLF
/// line ends, a heading, then one entry per message, oldest first, its time (UTC) and writer on one line and its
/// lines indented by four spaces.
#[utoipa::path(
    get,
    path = "/api/v1/events/{slug}/export.zip",
    operation_id = "exportEvent",
    tag = "media",
    security(("organiserBearer" = []), ("organiserCookie" = [])),
    params(SlugParam, ExportParams),
    responses(
        (status = 200, description = "The archive, streamed.", content_type = "application/zip", body = inline(schemas::Zip), headers(("Content-Disposition" = String, description = "`attachment; filename=\"confetti-{slug}.zip\"`."), ("Cache-Control" = String, description = "`no-store`."))),
        ExportEventRefusals,
    ),
)]
async fn export(
    State(state): State<AppState>,
    Organiser(event): Organiser,
    Path(slug): Path<String>,
    params: Result<Query<ExportParams>, QueryRejection>,
) -> ApiResult<Response> {
    let slug = EventSlug::parse(&slug)?;
    if event.slug != slug.as_str() {
        return Err(ApiError::Forbidden);
    }
    // Read after the credential and the slug, so a stranger learns nothing from a bad query.
    let Query(params) = params.map_err(|rejection| ApiError::InvalidRequest(rejection.body_text()))?;
    let include = ExportExtras {
        hidden: flag("include_hidden", params.include_hidden.as_deref())?,
        pending: flag("include_pending", params.include_pending.as_deref())?,
    };
    let (writer, reader) = tokio::io::duplex(PIPE_BYTES);
    let (outcome, failed) = tokio::sync::oneshot::channel::<std::io::Error>();
    let (event_id, event_name) = (event.id, event.name.clone());
    tokio::spawn(async move {
        match write_archive(&state, event_id, &event_name, include, writer).await {
            Ok(entries) => {
                tracing::info!(%event_id, entries, include_hidden = include.hidden, include_pending = include.pending, "export sent")
            }
            Err(e) => {
                tracing::warn!(%event_id, error = %e, "export stopped");
                let _ = outcome.send(std::io::Error::other(e));
            }
        }
    });
    // After the archive's last byte: if writing it failed, the body ends in an error, so the
    // connection is cut and the browser reports a failed download instead of a finished one.
    let ending = futures_util::stream::once(async move {
        match failed.await {
            Ok(error) => Some(Err(error)),
            Err(_) => None,
        }
    })
    .filter_map(std::future::ready);
    let mut response = Response::new(Body::from_stream(ReaderStream::new(reader).chain(ending)));
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/zip"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    let disposition = format!("attachment; filename=\"confetti-{}.zip\"", event.slug);
    h.insert(header::CONTENT_DISPOSITION, HeaderValue::from_str(&disposition).map_err(anyhow::Error::from)?);
    Ok(response)
}

/// Writes the guestbook and every visible original of the event (and the hidden or pending ones when asked);
/// returns how many entries.
async fn write_archive(
    state: &AppState,
    event_id: Uuid,
    event_name: &str,
    include: ExportExtras,
    pipe: DuplexStream,
) -> anyhow::Result<usize> {
    let mut zip = ZipFileWriter::with_tokio(pipe);
    let mut names = EntryNames::default();
    names.taken.insert(guestbook::NAME.to_owned());
    let mut entries = 0;
    if guestbook::write(state, event_id, event_name, include, &mut zip).await? > 0 {
        entries += 1;
    }
    let mut after = None;
    loop {
        let page = state.db.export_page(event_id, after, PAGE, include).await?;
        let Some(last) = page.last() else {
            break;
        };
        after = Some(last.id);
        for row in &page {
            let blob = match state.blobs.get_original(event_id, row.id, None).await {
                // Deleted since this page was read: it is no longer part of the event.
                Err(object_store::Error::NotFound { .. }) => continue,
                other => other?,
            };
            let entry = ZipEntryBuilder::new(
                names.name(&row.guest_display_name, &row.filename, &row.content_type).into(),
                Compression::Stored,
            )
            .last_modification_date(zip_time(row.taken_at.unwrap_or(row.created_at)));
            let mut writer = zip.write_entry_stream(entry).await?;
            let mut chunks = blob.into_stream();
            while let Some(chunk) = chunks.next().await {
                writer.write_all(&chunk?).await?;
            }
            writer.close().await?;
            entries += 1;
        }
    }
    zip.close().await?;
    Ok(entries)
}

/// ZIP times start in 1980; a camera whose clock was never set says 1970.
fn zip_time(t: chrono::DateTime<chrono::Utc>) -> ZipDateTime {
    let earliest = chrono::DateTime::parse_from_rfc3339("1980-01-01T00:00:00Z").map(|d| d.to_utc()).unwrap_or(t);
    ZipDateTime::from_chrono(&t.max(earliest))
}

/// Entry names stay within 100 characters and 200 bytes: Linux and macOS file systems allow
/// 255 bytes per name, and Windows' 260-character path limit must leave room for the folder
/// the archive is unpacked into.
const MAX_BASE_CHARS: usize = 100;
const MAX_BASE_BYTES: usize = 200;

/// Names Windows gives to devices, whatever the extension (`NUL.tar.gz` is NUL).
const WINDOWS_DEVICES: &[&str] = &[
    "CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$", "COM0", "COM1", "COM2", "COM3", "COM4", "COM5", "COM6", "COM7",
    "COM8", "COM9", "COM¹", "COM²", "COM³", "LPT0", "LPT1", "LPT2", "LPT3", "LPT4", "LPT5", "LPT6", "LPT7", "LPT8",
    "LPT9", "LPT¹", "LPT²", "LPT³",
];

/// The names given so far, compared as Windows and macOS compare them (case-insensitively),
/// and the next number to try for each name, so a thousand `image.jpg` cost no more than one.
#[derive(Default)]
struct EntryNames {
    taken: HashSet<String>,
    next: HashMap<String, u32>,
}

impl EntryNames {
    /// `<guest> - <file name without the guest's extension>.<extension of the stored format>`,
    /// safe to unpack on Windows, macOS and Linux, unique within the archive.
    fn name(&mut self, guest: &str, filename: &str, content_type: &str) -> String {
        let guest = safe_part(guest);
        let stem = safe_part(without_extension(filename));
        let guest = if guest.is_empty() { "guest" } else { guest.as_str() };
        let stem = if stem.is_empty() { "photo" } else { stem.as_str() };
        let mut base = bounded(&format!("{guest} - {stem}"));
        let device = base.split('.').next().unwrap_or_default().trim_end();
        if base.is_empty() || WINDOWS_DEVICES.iter().any(|d| d.eq_ignore_ascii_case(device)) {
            base.insert(0, '_');
        }
        let extension = extension(content_type);
        let key = format!("{base}.{extension}").to_lowercase();
        let mut n = self.next.get(&key).copied().unwrap_or(1);
        let numbered =
            |n: u32| if n == 1 { format!("{base}.{extension}") } else { format!("{base} ({n}).{extension}") };
        let mut name = numbered(n);
        while !self.taken.insert(name.to_lowercase()) {
            n += 1;
            name = numbered(n);
        }
        self.next.insert(key, n + 1);
        name
    }
}

/// The file name without its last extension (`invoice.hta` → `invoice`): the entry's
/// extension says what the bytes are, never what the guest called them.
fn without_extension(filename: &str) -> &str {
    match filename.rsplit_once('.') {
        Some((stem, ext)) if !stem.trim_matches('.').is_empty() && !ext.is_empty() => stem,
        _ => filename,
    }
}

/// A piece of an entry name: no format characters (bidi overrides, zero-width…), no control
/// characters, no path separators or characters Windows refuses, no leading or trailing dots
/// or spaces.
fn safe_part(raw: &str) -> String {
    raw.chars()
        .filter(|c| !crate::domain::is_format(*c))
        .map(|c| match c {
            c if c.is_whitespace() => ' ',
            c if c.is_control() => '_',
            '/' | '\\' | ':' | '*' | '?' | '"' | '<' | '>' | '|' => '_',
            c => c,
        })
        .collect::<String>()
        .trim_matches(|c: char| c == '.' || c == ' ')
        .to_owned()
}

/// Cut to `MAX_BASE_CHARS` and `MAX_BASE_BYTES` on a character boundary, without leaving a
/// trailing space, dot or dash.
fn bounded(base: &str) -> String {
    let mut out = String::new();
    for c in base.chars().take(MAX_BASE_CHARS) {
        if out.len() + c.len_utf8() > MAX_BASE_BYTES {
            break;
        }
        out.push(c);
    }
    out.trim_end_matches(['.', ' ', '-']).to_owned()
}

/// The extension of the format the probe found, which is what the bytes are.
fn extension(content_type: &str) -> &'static str {
    match content_type {
        "image/jpeg" => "jpg",
        "image/png" => "png",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/heic" | "image/heif" => "heic",
        "video/mp4" => "mp4",
        "video/quicktime" => "mov",
        "video/webm" => "webm",
        "video/x-matroska" => "mkv",
        // Not a format Confetti stores today: an extension no program opens by itself.
        _ => "bin",
    }
}

mod guestbook;

#[cfg(test)]
mod tests;

refusals!(ExportEventRefusals {
    401 => shared("Unauthenticated"),
    403 => problem("`forbidden`: a guest, or the organiser of another event (also when the slug names no event).", &[Forbidden]),
    400 => problem("`include_hidden` or `include_pending` is neither `true` nor `false`, or given twice (checked after the credential).", &[InvalidRequest]),
    404 => problem("The slug is not a well-formed slug (checked after the credential).", &[EventNotFound]),
    500 => shared("Internal"),
});
