//! `export.zip`: the organiser takes the event's visible originals home, one entry each.
//!
//! The archive is written while it is sent: a task reads the uploads a page at a time, streams
//! each original from storage into a ZIP entry (stored, not compressed: photos do not shrink)
//! and the entries flow through a small pipe into the response body. Memory stays at the
//! pipe's size whatever the event's size; nothing is staged on disk. ZIP64 records are written
//! when an archive passes 4 GiB.

use std::collections::HashSet;

use async_zip::tokio::write::ZipFileWriter;
use async_zip::{Compression, ZipDateTime, ZipEntryBuilder};
use axum::Router;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, header};
use axum::response::Response;
use axum::routing::get;
use futures_lite::AsyncWriteExt;
use futures_util::StreamExt;
use tokio::io::DuplexStream;
use tokio_util::io::ReaderStream;
use uuid::Uuid;

use super::extract::Organiser;
use crate::app::AppState;
use crate::blobs::BlobKey;
use crate::db::uploads::UploadRow;
use crate::domain::EventSlug;
use crate::error::{ApiError, ApiResult};

pub fn routes() -> Router<AppState> {
    Router::new().route("/api/v1/events/{slug}/export.zip", get(export))
}

const PIPE_BYTES: usize = 256 * 1024;
const PAGE: i64 = 200;

async fn export(
    State(state): State<AppState>,
    Organiser(event): Organiser,
    Path(slug): Path<String>,
) -> ApiResult<Response> {
    let slug = EventSlug::parse(&slug)?;
    if event.slug != slug.as_str() {
        return Err(ApiError::Forbidden);
    }
    let (writer, reader) = tokio::io::duplex(PIPE_BYTES);
    let (outcome, failed) = tokio::sync::oneshot::channel::<std::io::Error>();
    let event_id = event.id;
    tokio::spawn(async move {
        match write_archive(&state, event_id, writer).await {
            Ok(entries) => tracing::info!(%event_id, entries, "export sent"),
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

/// Writes every visible original of the event; returns how many.
async fn write_archive(state: &AppState, event_id: Uuid, pipe: DuplexStream) -> anyhow::Result<usize> {
    let mut zip = ZipFileWriter::with_tokio(pipe);
    let mut names = HashSet::new();
    let mut after = None;
    let mut entries = 0;
    loop {
        let page = state.db.export_page(event_id, after, PAGE).await?;
        let Some(last) = page.last() else {
            break;
        };
        after = Some(last.id);
        for row in &page {
            let original = BlobKey::Original { event_id, upload_id: row.id };
            let blob = match state.blobs.get(original, None).await {
                // Between its commit and the move to the final key, an upload is still temporary.
                Err(object_store::Error::NotFound { .. }) => match state.blobs.get(BlobKey::Temp(row.id), None).await {
                    // Deleted since this page was read: it is no longer part of the event.
                    Err(object_store::Error::NotFound { .. }) => continue,
                    other => other?,
                },
                other => other?,
            };
            let entry = ZipEntryBuilder::new(entry_name(row, &mut names).into(), Compression::Stored)
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

/// `<guest> - <file name>`, cleaned for every unzip tool, unique within the archive.
fn entry_name(row: &UploadRow, taken: &mut HashSet<String>) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_control() || matches!(c, '/' | '\\' | ':' | '*' | '?' | '"' | '<' | '>' | '|') {
                    '_'
                } else {
                    c
                }
            })
            .collect::<String>()
            .trim_matches(|c: char| c == '.' || c.is_whitespace())
            .to_owned()
    };
    let (stem, extension) = match row.filename.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() && ext.len() <= 5 => (clean(stem), clean(ext).to_lowercase()),
        _ => (clean(&row.filename), default_extension(&row.content_type).to_owned()),
    };
    let base = format!("{} - {}", clean(&row.guest_display_name), if stem.is_empty() { "photo".into() } else { stem });
    let base: String = base.chars().take(120).collect();
    let mut name = format!("{base}.{extension}");
    let mut n = 2;
    while !taken.insert(name.clone()) {
        name = format!("{base} ({n}).{extension}");
        n += 1;
    }
    name
}

fn default_extension(content_type: &str) -> &'static str {
    match content_type {
        "image/png" => "png",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/heic" => "heic",
        _ => "jpg",
    }
}
