//! Uploads: the deduplicating insert, live reads, the listing and soft deletes.

use chrono::{DateTime, Utc};
use sqlx::FromRow;
use uuid::Uuid;

use super::{Db, Tx, on_db, on_tx};
use crate::domain::{CaptureSource, Gallery, MediaKind, Review, UploadStatus};

/// One upload as stored, with the names a response needs (event slug, guest name).
#[derive(Clone, Debug, FromRow)]
pub struct UploadRow {
    pub id: Uuid,
    pub event_id: Uuid,
    pub event_slug: String,
    pub guest_id: Uuid,
    pub guest_display_name: String,
    pub client_upload_id: Option<Uuid>,
    pub filename: String,
    pub caption: Option<String>,
    pub content_type: String,
    pub bytes: i64,
    pub sha256: String,
    pub width: i32,
    pub height: i32,
    /// The time the file says it was taken, when usable (not after the upload).
    pub taken_at: Option<DateTime<Utc>>,
    /// `taken_at`, else the upload time: what `order=taken` lists by.
    pub captured_at: DateTime<Utc>,
    #[sqlx(try_from = "String")]
    pub captured_from: CaptureSource,
    pub created_at: DateTime<Utc>,
    #[sqlx(try_from = "String")]
    pub status: UploadStatus,
    pub hidden: bool,
    pub deleted_at: Option<DateTime<Utc>>,
    pub likes: i64,
    /// Whether the guest this row was read for likes it.
    pub liked_by_me: bool,
    pub comments: i64,
    /// Whether it waits for the organiser's approval (the event's review gate).
    #[sqlx(try_from = "String")]
    pub review: Review,
    /// The event's gallery mode and opening time, read with the row: who else may see it.
    #[sqlx(try_from = "String")]
    pub event_gallery: Gallery,
    pub event_gallery_opens_at: Option<DateTime<Utc>>,
    /// Whether its thumb exists as WebP too (uploads derived before WebP have JPEG only).
    pub webp_thumb: bool,
    /// Whether its thumb exists as AVIF too (uploads derived before AVIF have none).
    pub avif_thumb: bool,
    /// The thumb's ThumbHash, once the derivatives are made.
    pub placeholder: Option<Vec<u8>>,
    /// Ready (its thumb shown) while its preview is still being made.
    pub preview_pending: bool,
    #[sqlx(try_from = "String")]
    pub kind: MediaKind,
    /// A video's duration, when its container says.
    pub duration_ms: Option<i64>,
    /// Whether a video's poster (its thumb and preview) was made.
    pub poster: bool,
    /// Why its processing failed, when it did.
    pub failure: Option<String>,
    /// Why the organiser rejected it (hidden with a reason for its uploader): `Some("")` for a
    /// rejection without one; `None` while it is not rejected.
    pub rejected_reason: Option<String>,
}

impl UploadRow {
    /// Whether the event's other guests may see it at `now`: shown, approved, and the event's
    /// gallery shared (and open). Its uploader and the organiser see it regardless.
    pub fn shared_with_guests(&self, now: DateTime<Utc>) -> bool {
        !self.hidden && self.review == Review::Approved && self.event_gallery.shared(self.event_gallery_opens_at, now)
    }
}

/// What the ingest knows about a new upload when it tries to insert it.
#[derive(Clone, Debug)]
pub struct NewUpload {
    pub id: Uuid,
    pub event_id: Uuid,
    pub guest_id: Uuid,
    pub client_upload_id: Option<Uuid>,
    pub filename: String,
    pub caption: Option<String>,
    pub content_type: String,
    pub bytes: i64,
    pub sha256: String,
    pub width: i32,
    pub height: i32,
    pub taken_at: Option<DateTime<Utc>>,
    pub captured_at: DateTime<Utc>,
    pub captured_from: CaptureSource,
    pub created_at: DateTime<Utc>,
    pub kind: MediaKind,
    pub duration_ms: Option<i64>,
}

/// A page of an event's uploads as one viewer may see it.
#[derive(Clone, Debug)]
pub struct ListQuery {
    pub event_id: Uuid,
    /// The viewing guest, who also sees their own hidden uploads.
    pub viewer_guest: Option<Uuid>,
    /// Organisers see hidden uploads too.
    pub organiser: bool,
    /// Only uploads after this one in `order` (the keyset cursor).
    pub before: Option<Uuid>,
    pub order: ListOrder,
    pub limit: i64,
    /// Whether guests see each other's approved, shown uploads now (`Gallery::shared`).
    pub shared: bool,
    /// Only uploads in this review state.
    pub review: Option<Review>,
}

/// The order of an event's listing, newest first either way; ties broken by id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListOrder {
    /// By upload (the id: UUIDv7, time-ordered).
    Uploaded,
    /// By capture time (`captured_at`).
    Taken,
}

/// Where the first page of `ListOrder::Taken` starts: later than any capture time (which is never
/// after its upload). Four-digit years keep SQLite's text times comparing as they order.
fn end_of_time() -> DateTime<Utc> {
    DateTime::from_timestamp(253_402_300_799, 0).unwrap_or(DateTime::<Utc>::MAX_UTC)
}

/// What an export holds beside the visible uploads.
#[derive(Clone, Copy, Debug, Default)]
pub struct ExportExtras {
    pub hidden: bool,
    /// Uploads waiting for the organiser's approval.
    pub pending: bool,
}

/// Every read of an upload is live, counts included; `$1` is the guest it is read for
/// (NULL for an organiser), who may have liked it. `upload_select!(plain)` reads the row
/// alone, with no likes and no comments: the fail-soft answer when the counts cannot be read.
macro_rules! upload_select {
    () => {
        upload_select!(
            "(SELECT COUNT(*) FROM likes l WHERE l.upload_id = u.id) AS likes,
             EXISTS (SELECT 1 FROM likes l WHERE l.upload_id = u.id AND l.guest_id = $1) AS liked_by_me,
             (SELECT COUNT(*) FROM comments c WHERE c.upload_id = u.id) AS comments"
        )
    };
    (plain) => {
        // `$1` is still bound, so it is still named (as a condition that is always false).
        upload_select!(
            "CAST(0 AS BIGINT) AS likes, ($1 IS NULL AND FALSE) AS liked_by_me, CAST(0 AS BIGINT) AS comments"
        )
    };
    ($counts:literal) => {
        concat!(
            "SELECT u.id, u.event_id, e.slug AS event_slug, u.guest_id, g.display_name AS guest_display_name,
                    u.client_upload_id, u.filename, u.caption, u.content_type, u.bytes, u.sha256, u.width,
                    u.height, u.taken_at, u.captured_at, u.captured_from, u.created_at, u.status, u.hidden, u.deleted_at, u.review,
                    e.gallery AS event_gallery, e.gallery_opens_at AS event_gallery_opens_at,
                    u.webp_thumb, u.avif_thumb, u.placeholder, u.preview_pending, u.kind, u.duration_ms, u.poster, u.failure,
                    u.rejected_reason, ",
            $counts,
            " FROM uploads u JOIN guests g ON g.id = u.guest_id JOIN events e ON e.id = u.event_id "
        )
    };
}

/// Whether a failed read of uploads with their counts may be answered without the counts:
/// the database answered and refused the query (a table missing or damaged, a count it could
/// not decode), as opposed to not answering at all, where a second query would only wait twice.
fn counts_may_be_at_fault(e: &sqlx::Error) -> bool {
    matches!(
        e,
        sqlx::Error::Database(_)
            | sqlx::Error::ColumnDecode { .. }
            | sqlx::Error::Decode(_)
            | sqlx::Error::ColumnNotFound(_)
            | sqlx::Error::TypeNotFound { .. }
    )
}

/// Once an upload's row exists, a failing secondary read never turns into an error: likes,
/// `liked_by_me` and the comment count come back as 0/false (the fail-soft rule), and the
/// failure is logged. `plain` is polled only when `full` failed that way.
async fn fail_soft<T>(
    what: &'static str,
    full: impl Future<Output = sqlx::Result<T>>,
    plain: impl Future<Output = sqlx::Result<T>>,
) -> sqlx::Result<T> {
    match full.await {
        Err(e) if counts_may_be_at_fault(&e) => {
            tracing::warn!(error = %e, what, "reading uploads with their likes and comments failed; answering without them");
            plain.await
        }
        other => other,
    }
}

/// One read of uploads, with counts and, should that fail, without them.
macro_rules! read_uploads {
    ($db:expr, $what:literal, $fetch:ident, $where:literal, $($bind:expr),+ $(,)?) => {
        fail_soft(
            $what,
            async { on_db!($db, pool => sqlx::query_as(concat!(upload_select!(), $where))$(.bind($bind))+.$fetch(pool).await) },
            async { on_db!($db, pool => sqlx::query_as(concat!(upload_select!(plain), $where))$(.bind($bind))+.$fetch(pool).await) },
        )
        .await
    };
}

impl Db {
    /// The upload, deleted or not, as `viewer` (a guest, or `None`) sees it.
    pub async fn upload_by_id(&self, id: Uuid, viewer: Option<Uuid>) -> sqlx::Result<Option<UploadRow>> {
        read_uploads!(self, "upload by id", fetch_optional, "WHERE u.id = $2", viewer, id)
    }

    /// The upload a client's key names, whoever owns it, deleted or not, as `viewer` sees it.
    pub async fn upload_by_client_id(
        &self,
        client_upload_id: Uuid,
        viewer: Option<Uuid>,
    ) -> sqlx::Result<Option<UploadRow>> {
        read_uploads!(
            self,
            "upload by client id",
            fetch_optional,
            "WHERE u.client_upload_id = $2",
            viewer,
            client_upload_id
        )
    }

    /// The guest's own uploads, not deleted, whose bytes hash to one of `sha256` (lowercase
    /// hex), oldest first (index `uploads_guest_sha256`). The list is bound as one value: an
    /// array on PostgreSQL, a JSON array on SQLite.
    pub async fn own_uploads_by_sha256(&self, guest: Uuid, sha256: &[String]) -> sqlx::Result<Vec<UploadRow>> {
        macro_rules! by_hash {
            ($($plain:ident)?; $list:literal) => {
                concat!(
                    upload_select!($($plain)?),
                    "WHERE u.guest_id = $1 AND u.deleted_at IS NULL AND u.sha256 ",
                    $list,
                    " ORDER BY u.id"
                )
            };
        }
        const WHAT: &str = "uploads by content hash";
        match self {
            Db::Postgres(pool) => {
                fail_soft(
                    WHAT,
                    sqlx::query_as(by_hash!(; "= ANY($2)")).bind(guest).bind(sha256).fetch_all(pool),
                    sqlx::query_as(by_hash!(plain; "= ANY($2)")).bind(guest).bind(sha256).fetch_all(pool),
                )
                .await
            }
            Db::Sqlite(pool) => {
                let list = serde_json::to_string(sha256).map_err(|e| sqlx::Error::Encode(Box::new(e)))?;
                fail_soft(
                    WHAT,
                    sqlx::query_as(by_hash!(; "IN (SELECT value FROM json_each($2))"))
                        .bind(guest)
                        .bind(&list)
                        .fetch_all(pool),
                    sqlx::query_as(by_hash!(plain; "IN (SELECT value FROM json_each($2))"))
                        .bind(guest)
                        .bind(&list)
                        .fetch_all(pool),
                )
                .await
            }
        }
    }

    /// Newest first; ids are UUIDv7, so `id < cursor` is "older than the last one shown"
    /// and stays valid while new uploads arrive.
    pub async fn list_uploads(&self, q: &ListQuery) -> sqlx::Result<Vec<UploadRow>> {
        if q.order == ListOrder::Taken {
            return self.list_uploads_taken(q).await;
        }
        // The cursor is always a bound, never `$4 IS NULL OR …`: SQLite then seeks the index to
        // the cursor instead of walking it from the newest upload.
        read_uploads!(
            self,
            "upload listing",
            fetch_all,
            "WHERE u.event_id = $2 AND u.deleted_at IS NULL
               AND ($3 OR u.guest_id = $1 OR (u.hidden = FALSE AND u.review = 'approved' AND $6))
               AND ($7 IS NULL OR u.review = $7)
               AND u.id < $4
             ORDER BY u.id DESC LIMIT $5",
            q.viewer_guest,
            q.event_id,
            q.organiser,
            q.before.unwrap_or(Uuid::max()),
            q.limit,
            q.shared,
            q.review.map(Review::as_str),
        )
    }

    /// Latest capture time first (`captured_at`, then id): the cursor's upload is read for its
    /// capture time, which never changes, so a cursor stays valid while photos are added
    /// (whenever they were taken). A cursor whose upload is gone from the event (the event's rows
    /// removed) ends the listing.
    async fn list_uploads_taken(&self, q: &ListQuery) -> sqlx::Result<Vec<UploadRow>> {
        let after = match q.before {
            None => (end_of_time(), Uuid::max()),
            Some(id) => {
                let at: Option<DateTime<Utc>> = on_db!(self, pool => sqlx::query_scalar(
                    "SELECT captured_at FROM uploads WHERE id = $1 AND event_id = $2",
                )
                .bind(id)
                .bind(q.event_id)
                .fetch_optional(pool)
                .await)?;
                match at {
                    Some(at) => (at, id),
                    None => return Ok(Vec::new()),
                }
            }
        };
        read_uploads!(
            self,
            "upload listing by capture time",
            fetch_all,
            "WHERE u.event_id = $2 AND u.deleted_at IS NULL
               AND ($3 OR u.guest_id = $1 OR (u.hidden = FALSE AND u.review = 'approved' AND $6))
               AND ($7 IS NULL OR u.review = $7)
               AND (u.captured_at, u.id) < ($8, $4)
             ORDER BY u.captured_at DESC, u.id DESC LIMIT $5",
            q.viewer_guest,
            q.event_id,
            q.organiser,
            after.1,
            q.limit,
            q.shared,
            q.review.map(Review::as_str),
            after.0,
        )
    }

    /// What an export holds: the event's visible uploads (not hidden, approved, not deleted),
    /// and the hidden or pending ones too when asked, oldest first, a page at a time after `after`.
    pub async fn export_page(
        &self,
        event_id: Uuid,
        after: Option<Uuid>,
        limit: i64,
        include: ExportExtras,
    ) -> sqlx::Result<Vec<UploadRow>> {
        read_uploads!(
            self,
            "export page",
            fetch_all,
            "WHERE u.event_id = $2 AND u.deleted_at IS NULL AND (u.hidden = FALSE OR $5)
               AND (u.review = 'approved' OR $6) AND u.id > $3
             ORDER BY u.id LIMIT $4",
            None::<Uuid>,
            event_id,
            after.unwrap_or(Uuid::nil()),
            limit,
            include.hidden,
            include.pending,
        )
    }

    /// Whether an upload row exists and is live: `None` when there is no such row,
    /// `Some(false)` when it was deleted.
    pub async fn upload_is_live(&self, id: Uuid) -> sqlx::Result<Option<bool>> {
        let deleted: Option<Option<DateTime<Utc>>> = on_db!(self, pool => sqlx::query_scalar(
            "SELECT deleted_at FROM uploads WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(pool)
        .await)?;
        Ok(deleted.map(|d| d.is_none()))
    }
}

impl Tx {
    /// Inserts the upload unless its `client_upload_id` is taken. `Ok(None)`: another
    /// attempt (maybe on another instance) holds the key; on PostgreSQL this waits until
    /// that attempt committed or rolled back, so the loser always finds a decided winner.
    /// The upload waits for approval when the event's review gate is on as it is inserted.
    pub async fn insert_upload(&mut self, u: &NewUpload) -> sqlx::Result<Option<(Uuid, Review)>> {
        let inserted: Option<(Uuid, String)> = on_tx!(self, tx => sqlx::query_as(
            "INSERT INTO uploads (id, event_id, guest_id, client_upload_id, filename, caption, content_type,
                                  bytes, sha256, width, height, taken_at, created_at, kind, duration_ms,
                                  captured_at, captured_from, status, hidden, review)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, 'processing', FALSE,
                     CASE WHEN (SELECT review_uploads FROM events WHERE id = $2) THEN 'pending' ELSE 'approved' END)
             ON CONFLICT (client_upload_id) WHERE client_upload_id IS NOT NULL DO NOTHING
             RETURNING id, review",
        )
        .bind(u.id)
        .bind(u.event_id)
        .bind(u.guest_id)
        .bind(u.client_upload_id)
        .bind(&u.filename)
        .bind(&u.caption)
        .bind(&u.content_type)
        .bind(u.bytes)
        .bind(&u.sha256)
        .bind(u.width)
        .bind(u.height)
        .bind(u.taken_at)
        .bind(u.created_at)
        .bind(u.kind.as_str())
        .bind(u.duration_ms)
        .bind(u.captured_at)
        .bind(u.captured_from.as_str())
        .fetch_optional(&mut **tx)
        .await)?;
        inserted
            .map(|(id, review)| Ok((id, Review::try_from(review).map_err(|e| sqlx::Error::Decode(e.into()))?)))
            .transpose()
    }

    /// Marks the upload deleted (its key stays, so a late retry learns it is gone).
    /// Returns the owner and size to refund, or `None` if it was already deleted or never existed.
    pub async fn mark_upload_deleted(&mut self, id: Uuid) -> sqlx::Result<Option<(Uuid, i64)>> {
        on_tx!(self, tx => sqlx::query_as(
            "UPDATE uploads SET deleted_at = $2 WHERE id = $1 AND deleted_at IS NULL RETURNING guest_id, bytes",
        )
        .bind(id)
        .bind(Utc::now())
        .fetch_optional(&mut **tx)
        .await)
    }

    /// The upload as an organiser sees it, inside this transaction. The read with counts runs
    /// in a savepoint: on PostgreSQL a failed statement spoils its whole transaction, and the
    /// write this read follows must survive a broken likes or comments table.
    pub async fn upload_by_id(&mut self, id: Uuid) -> sqlx::Result<Option<UploadRow>> {
        let full = on_tx!(self, tx => {
            let mut savepoint = sqlx::Acquire::begin(&mut **tx).await?;
            let read = sqlx::query_as(concat!(upload_select!(), "WHERE u.id = $2"))
                .bind(None::<Uuid>)
                .bind(id)
                .fetch_optional(&mut *savepoint)
                .await;
            match read {
                Ok(row) => savepoint.commit().await.map(|()| row),
                Err(e) => savepoint.rollback().await.and(Err(e)),
            }
        });
        match full {
            Err(e) if counts_may_be_at_fault(&e) => {
                tracing::warn!(error = %e, "reading an upload with its likes and comments failed; answering without them");
                on_tx!(self, tx => sqlx::query_as(concat!(upload_select!(plain), "WHERE u.id = $2"))
                    .bind(None::<Uuid>)
                    .bind(id)
                    .fetch_optional(&mut **tx)
                    .await)
            }
            other => other,
        }
    }

    /// Hides or shows a live upload. `Some(Some(status))` when it changed (its status, read
    /// under the row lock the change holds until commit), `Some(None)` when it already was so,
    /// `None` when it is deleted or unknown. The organiser's own choice: a rejection's reason and
    /// the mark of a block's hiding go with it.
    pub async fn set_upload_hidden(&mut self, id: Uuid, hidden: bool) -> sqlx::Result<Option<Option<UploadStatus>>> {
        let changed: Option<String> = on_tx!(self, tx => sqlx::query_scalar(
            "UPDATE uploads SET hidden = $2, rejected_reason = NULL, hidden_by_block = FALSE
             WHERE id = $1 AND deleted_at IS NULL AND hidden <> $2 RETURNING status",
        )
        .bind(id)
        .bind(hidden)
        .fetch_optional(&mut **tx)
        .await)?;
        if let Some(status) = changed {
            let status = UploadStatus::try_from(status).map_err(|e| sqlx::Error::Decode(e.into()))?;
            return Ok(Some(Some(status)));
        }
        Ok(self.upload_is_live(id).await?.then_some(None))
    }

    /// Approves an upload waiting for review. `Some(Some((status, hidden)))` when it changed
    /// (read under the row lock the change holds until commit), `Some(None)` when it was
    /// approved already, `None` when it is deleted or unknown.
    pub async fn approve_upload(&mut self, id: Uuid) -> sqlx::Result<Option<Option<(UploadStatus, bool)>>> {
        let changed: Option<(String, bool)> = on_tx!(self, tx => sqlx::query_as(
            "UPDATE uploads SET review = 'approved' WHERE id = $1 AND deleted_at IS NULL AND review = 'pending'
             RETURNING status, hidden",
        )
        .bind(id)
        .fetch_optional(&mut **tx)
        .await)?;
        if let Some((status, hidden)) = changed {
            let status = UploadStatus::try_from(status).map_err(|e| sqlx::Error::Decode(e.into()))?;
            return Ok(Some(Some((status, hidden))));
        }
        Ok(self.upload_is_live(id).await?.then_some(None))
    }

    /// Whether the upload exists and is not deleted, inside this transaction.
    async fn upload_is_live(&mut self, id: Uuid) -> sqlx::Result<bool> {
        // A count, not `SELECT 1`: PostgreSQL's literal is a 4-byte integer, SQLite's an 8-byte one.
        let live: i64 = on_tx!(self, tx => sqlx::query_scalar(
            "SELECT COUNT(*) FROM uploads WHERE id = $1 AND deleted_at IS NULL",
        )
        .bind(id)
        .fetch_one(&mut **tx)
        .await)?;
        Ok(live > 0)
    }
}
