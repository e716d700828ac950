//! Appending to a resource: the lease, the offset check, the bytes streamed to the partial
//! store with each safe step recorded, the head checked once it has arrived, the disk's
//! free-space floor checked before the first byte and every few MiB, and the hand-over to the
//! completion (`complete`) at the last byte.

use std::time::Instant;

use bytes::Bytes;
use chrono::Utc;
use futures_util::{Stream, StreamExt};
use tracing::Instrument;
use uuid::Uuid;

use super::{LEASE_POLL, Resumable, ResumableError, WAIT_FOR_LEASE, completes_at_length, held};
use crate::blobs::{Kept, PartialAppender, PartialState};
use crate::db::guests::GuestRow;
use crate::db::resumable::{Progress, ResumableRow};
use crate::ingest::{DISK_CHECK_EVERY, HEAD_CHECK_BYTES, Ingested, Pass};

/// What one append request says of its bytes.
#[derive(Clone, Copy, Debug)]
pub struct Piece {
    /// Where they go.
    pub offset: u64,
    /// The client says they end the file.
    pub complete: bool,
    /// How many there are, when the request said.
    pub content_length: Option<u64>,
}

/// What an append came to.
#[derive(Debug)]
pub enum Appended {
    /// Bytes kept; more to come.
    Kept { offset: u64, row: Box<ResumableRow> },
    /// The file is whole and stored (or was already: a replay).
    Stored(Box<Ingested>),
}

/// An append's result, and the body when it was not read to its end (a refusal before or
/// during it): the transport's to drain, so the client reads the answer.
pub struct AppendOutcome<S> {
    pub result: Result<Appended, ResumableError>,
    pub unread: Option<S>,
}

/// A request's body, streamed: where its bytes went, whether it was cut short or stopped at
/// the disk's free-space floor (its body then left unread), and the pass over the file when
/// this request made one.
struct Streamed {
    appender: PartialAppender,
    cut: bool,
    floor: bool,
    pass: Option<Pass>,
}

/// One request's append, holding the resource's lease.
struct Lease {
    id: Uuid,
    token: Uuid,
    renewed: Instant,
    last: Kept,
}

impl Resumable {
    /// Appends `body` at `offset`; `complete` when the client says it ends the file.
    #[tracing::instrument(name = "resumable.append", skip_all, fields(resource_id = %id, guest_id = %guest.id, offset = piece.offset, complete = piece.complete))]
    pub async fn append<S, E>(
        self: &std::sync::Arc<Self>,
        guest: GuestRow,
        id: Uuid,
        piece: Piece,
        body: S,
    ) -> AppendOutcome<S>
    where
        S: Stream<Item = Result<Bytes, E>> + Send + Unpin + 'static,
        E: std::fmt::Display + Send + 'static,
    {
        let (row, token) = match self.lease(&guest, id, piece.offset).await {
            Ok(Leased::Row(row, token)) => (row, token),
            Ok(Leased::Stored(upload)) => {
                return AppendOutcome {
                    result: Ok(Appended::Stored(Box::new(Ingested::Replayed(upload)))),
                    unread: Some(body),
                };
            }
            Err(e) => return AppendOutcome { result: Err(e), unread: Some(body) },
        };
        // Its own task: a client that hangs up drops the request, not the record of its bytes.
        let this = std::sync::Arc::clone(self);
        match tokio::spawn(async move { this.run(guest, row, token, piece, body).await }.in_current_span()).await {
            Ok(outcome) => outcome,
            Err(e) => AppendOutcome { result: Err(anyhow::anyhow!("an append panicked: {e}").into()), unread: None },
        }
    }

    /// Takes the resource's lease at `offset`, or says why not.
    async fn lease(&self, guest: &GuestRow, id: Uuid, offset: u64) -> Result<Leased, ResumableError> {
        // A request cut a moment ago may still be writing its last bytes down: waiting for it
        // a little spares the client sending its body in vain.
        let waiting_since = Instant::now();
        let row = loop {
            let row = self.own(guest, id).await?;
            let now = Utc::now();
            let token = Uuid::now_v7();
            match row.state.as_str() {
                "completed" => return Ok(Leased::Stored(self.stored(guest, &row).await?)),
                // Another request is storing the photo: nothing to wait for in two seconds.
                "open" if row.expires_at > now && row.assembled && held(&row) => {
                    return Err(ResumableError::UploadBusy { offset: u64::try_from(row.upload_offset).unwrap_or(0) });
                }
                "open" if row.expires_at > now => {
                    if let Some(row) = self.db.lock_resumable(id, token, now, self.lease_end(now)).await? {
                        break (row, token);
                    }
                    if waiting_since.elapsed() >= WAIT_FOR_LEASE {
                        return Err(self.why_not_locked(guest, id).await?);
                    }
                    tokio::time::sleep(LEASE_POLL).await;
                }
                _ => return Err(ResumableError::NotFound),
            }
        };
        let (row, token) = row;
        let expected = u64::try_from(row.upload_offset).unwrap_or(0);
        if offset != expected {
            self.db.unlock_resumable(id, token).await?;
            return Err(ResumableError::UploadOffsetMismatch { expected, provided: offset });
        }
        Ok(Leased::Row(row, token))
    }

    /// Why the lease could not be taken: stored meanwhile, held by another request, or gone.
    async fn why_not_locked(&self, guest: &GuestRow, id: Uuid) -> Result<ResumableError, ResumableError> {
        let row = self.own(guest, id).await?;
        Ok(match row.state.as_str() {
            "open" if row.expires_at > Utc::now() => {
                ResumableError::UploadBusy { offset: u64::try_from(row.upload_offset).unwrap_or(0) }
            }
            _ => ResumableError::NotFound,
        })
    }

    async fn run<S, E>(
        &self,
        guest: GuestRow,
        row: ResumableRow,
        token: Uuid,
        piece: Piece,
        mut body: S,
    ) -> AppendOutcome<S>
    where
        S: Stream<Item = Result<Bytes, E>> + Send + Unpin,
        E: std::fmt::Display,
    {
        if row.assembled {
            let result = self.retry_assembled(guest, row, token, piece).await;
            return AppendOutcome { result, unread: Some(body) };
        }
        if finishes(&row, piece) && self.assembled_unrecorded(&row, token).await {
            // This request's bytes are there already: the file is stored from them.
            let result = self.complete(guest, ResumableRow { assembled: true, ..row }, token, None, None).await;
            return AppendOutcome { result, unread: Some(body) };
        }
        let state = match partial_state(&row) {
            Ok(state) => state,
            Err(e) => return AppendOutcome { result: Err(e), unread: Some(body) },
        };
        let mut lease = Lease {
            id: row.id,
            token,
            renewed: Instant::now(),
            last: Kept {
                offset: state.offset,
                multipart_id: state.multipart_id.clone(),
                parts: state.parts.clone(),
                tail_bytes: state.tail_bytes,
            },
        };
        let outcome = self.stream(&row, &state, piece, &mut lease, &mut body).await;
        let result = match outcome {
            Ok(streamed) => {
                let floor = streamed.floor;
                let result = self.settle(guest, row, lease, streamed, piece.complete).await;
                return AppendOutcome { result, unread: floor.then_some(body) };
            }
            Err(e) => {
                if matches!(e, ResumableError::Refused(ref refusal) if !matches!(refusal, crate::ingest::IngestError::Internal(_)))
                    || matches!(e, ResumableError::InconsistentUploadLength(_))
                {
                    self.cancel_now(&row, token).await;
                } else if let Err(unlock) = self.db.unlock_resumable(row.id, token).await {
                    tracing::warn!(error = %unlock, id = %row.id, "could not give a resumable upload's lease back; it ends on its own");
                }
                Err(e)
            }
        };
        AppendOutcome { result, unread: Some(body) }
    }

    /// Streams the body into the partial store. `true` with the appender when the body was cut
    /// short.
    async fn stream<S, E>(
        &self,
        row: &ResumableRow,
        state: &PartialState,
        piece: Piece,
        lease: &mut Lease,
        body: &mut S,
    ) -> Result<Streamed, ResumableError>
    where
        S: Stream<Item = Result<Bytes, E>> + Send + Unpin,
        E: std::fmt::Display,
    {
        let length = u64::try_from(row.length).unwrap_or(0);
        // Not a byte while the disk is below its floor: the resource stays as it is.
        if let Some(refusal) = self.ingest.disk_room(0, true).await {
            tracing::debug!(id = %row.id, error = %refusal, "an append waits for room on the disk");
            return Err(ResumableError::InsufficientStorage { offset: state.offset });
        }
        let mut appender = match self.blobs.partial_appender(state.clone()).await {
            Ok(appender) => appender,
            Err(object_store::Error::NotFound { .. }) => {
                // The bytes the database counts are gone: the resource cannot go on.
                tracing::warn!(id = %row.id, "a resumable upload's bytes are gone; cancelling it");
                self.cancel_now(row, lease.token).await;
                return Err(ResumableError::NotFound);
            }
            Err(e) => return Err(e.into()),
        };
        // The pass over the whole file, made as the bytes arrive when this request may be the
        // one that completes it (its bytes before it read back from a local disk), or when it
        // starts the file: the completion then needs no second read.
        let finishing = finishes(row, piece);
        let mut pass = match self.blobs.partial_file(row.id) {
            _ if state.offset == 0 => Some(Pass::default()),
            Some(file) if finishing => Some(self.ingest.pass_local(file, Some(state.offset)).await?),
            _ => None,
        };
        let head_goal = HEAD_CHECK_BYTES.min(length);
        let mut head = if state.offset < head_goal {
            Some(self.blobs.partial_head(state, head_goal).await?.to_vec())
        } else {
            None
        };
        let (mut cut, mut floor) = (false, false);
        let mut since_disk_check: u64 = 0;
        while let Some(next) = body.next().await {
            let chunk = match next {
                Ok(chunk) => chunk,
                Err(e) => {
                    tracing::debug!(error = %e, id = %row.id, "a resumable upload's request was cut short");
                    cut = true;
                    break;
                }
            };
            since_disk_check += chunk.len() as u64;
            if since_disk_check >= DISK_CHECK_EVERY {
                since_disk_check = 0;
                if self.ingest.disk_room(0, true).await.is_some() {
                    // The bytes before this chunk are kept; the client resumes from them.
                    floor = true;
                    break;
                }
            }
            if appender.offset() + chunk.len() as u64 > length {
                return Err(ResumableError::InconsistentUploadLength(format!(
                    "the upload was declared with {length} bytes; this request brings more"
                )));
            }
            if let Some(taken) = &mut head {
                let want = usize::try_from(head_goal).unwrap_or(usize::MAX) - taken.len();
                taken.extend_from_slice(&chunk[..want.min(chunk.len())]);
                if taken.len() as u64 >= head_goal {
                    self.ingest.check_head(std::mem::take(taken), length).await?;
                    head = None;
                }
            }
            if let Some(pass) = &mut pass {
                pass.feed(&chunk);
            }
            let kept = appender.write(chunk).await?;
            if let Some(kept) = kept {
                self.record(lease, kept).await?;
            } else if lease.renewed.elapsed() >= self.renew_every() {
                let last = lease.last.clone();
                self.record(lease, last).await?;
            }
        }
        Ok(Streamed { appender, cut, floor, pass })
    }

    /// The body ended (or was cut): keep the bytes, or complete the file.
    async fn settle(
        &self,
        guest: GuestRow,
        row: ResumableRow,
        mut lease: Lease,
        streamed: Streamed,
        complete: bool,
    ) -> Result<Appended, ResumableError> {
        let Streamed { appender, cut, floor, pass } = streamed;
        if floor {
            let offset = self.keep(appender, &mut lease).await?;
            return Err(ResumableError::InsufficientStorage { offset });
        }
        let length = u64::try_from(row.length).unwrap_or(0);
        let whole = appender.offset() == length;
        let completes = !cut && whole && (complete || completes_at_length(row.interop));
        if !cut && complete && !whole {
            self.cancel_now(&row, lease.token).await;
            return Err(ResumableError::InconsistentUploadLength(format!(
                "the upload was declared with {length} bytes; it ended after {}",
                appender.offset()
            )));
        }
        if !completes {
            let offset = self.keep(appender, &mut lease).await?;
            if cut {
                return Err(ResumableError::Cut);
            }
            let mut row = row;
            row.upload_offset = i64::try_from(offset).unwrap_or(i64::MAX);
            return Ok(Appended::Kept { offset, row: Box::new(row) });
        }
        self.complete(guest, row, lease.token, Some(appender), pass).await
    }

    /// Keeps the bytes written so far, records them and gives the lease back; the offset kept.
    async fn keep(&self, appender: PartialAppender, lease: &mut Lease) -> Result<u64, ResumableError> {
        let kept = appender.keep().await?;
        let offset = kept.offset;
        self.record(lease, kept).await?;
        self.db.unlock_resumable(lease.id, lease.token).await?;
        Ok(offset)
    }

    /// Records bytes made safe, renewing the lease and the expiry; stops the request when the
    /// lease is no longer its own.
    async fn record(&self, lease: &mut Lease, kept: Kept) -> Result<(), ResumableError> {
        let now = Utc::now();
        let progress = Progress {
            offset: i64::try_from(kept.offset).unwrap_or(i64::MAX),
            multipart_id: kept.multipart_id.clone(),
            parts: serde_json::to_string(&kept.parts).map_err(anyhow::Error::from)?,
            tail_bytes: i64::try_from(kept.tail_bytes).unwrap_or(i64::MAX),
        };
        let held = self
            .db
            .resumable_progress(lease.id, lease.token, &progress, self.lease_end(now), self.expires_from(now))
            .await?;
        if !held {
            return Err(ResumableError::NotFound);
        }
        lease.renewed = Instant::now();
        lease.last = kept;
        Ok(())
    }

    /// A refused or broken resource: cancelled, its bytes removed (or by the sweep).
    pub(super) async fn cancel_now(&self, row: &ResumableRow, token: Uuid) {
        match self.db.cancel_resumable(row.id, Utc::now(), Some(token)).await {
            Ok(_) => {
                let mut row = row.clone();
                if let Ok(Some(now)) = self.db.resumable_by_id(row.id).await {
                    row = now;
                }
                crate::jobs::resumable_sweep::remove(&self.db, &self.blobs, &row).await;
            }
            Err(e) => {
                tracing::warn!(error = %e, id = %row.id, "could not cancel a resumable upload; it expires on its own")
            }
        }
    }
}

enum Leased {
    Row(ResumableRow, Uuid),
    /// Stored already: answered with its upload.
    Stored(crate::db::uploads::UploadRow),
}

/// Whether this request may be the one that completes the file: the client says so, or, for
/// drafts 03–05, its bytes reach the length.
fn finishes(row: &ResumableRow, piece: Piece) -> bool {
    let length = u64::try_from(row.length).unwrap_or(0);
    piece.complete
        || (completes_at_length(row.interop) && piece.content_length.is_some_and(|n| piece.offset + n == length))
}

fn partial_state(row: &ResumableRow) -> Result<PartialState, ResumableError> {
    let parts: Vec<String> = serde_json::from_str(&row.parts).map_err(anyhow::Error::from)?;
    Ok(PartialState {
        id: row.id,
        event_id: row.event_id,
        offset: u64::try_from(row.upload_offset).unwrap_or(0),
        part_size: u64::try_from(row.part_size).unwrap_or(0),
        multipart_id: row.multipart_id.clone(),
        parts,
        tail_bytes: u64::try_from(row.tail_bytes).unwrap_or(0),
    })
}
