//! Comments on uploads, oldest first.

use chrono::{DateTime, Utc};
use sqlx::FromRow;
use uuid::Uuid;

use super::{Db, Tx, on_db, on_tx};

#[derive(Clone, Debug, FromRow)]
pub struct CommentRow {
    pub id: Uuid,
    pub guest_id: Uuid,
    pub guest_display_name: String,
    pub text: String,
    pub created_at: DateTime<Utc>,
}

/// The longest list one request returns; a photo at a party gathers far fewer.
const MAX_COMMENTS: i64 = 1000;

impl Tx {
    pub async fn insert_comment(&mut self, upload_id: Uuid, guest_id: Uuid, text: &str) -> sqlx::Result<CommentRow> {
        let id = Uuid::now_v7();
        on_tx!(self, tx => sqlx::query_as(
            "INSERT INTO comments (id, upload_id, guest_id, text, created_at) VALUES ($1, $2, $3, $4, $5)
             RETURNING id, guest_id, (SELECT display_name FROM guests WHERE id = $3) AS guest_display_name,
                       text, created_at",
        )
        .bind(id)
        .bind(upload_id)
        .bind(guest_id)
        .bind(text)
        .bind(Utc::now())
        .fetch_one(&mut **tx)
        .await)
    }
}

impl Db {
    pub async fn comments(&self, upload_id: Uuid) -> sqlx::Result<Vec<CommentRow>> {
        on_db!(self, pool => sqlx::query_as(
            "SELECT c.id, c.guest_id, g.display_name AS guest_display_name, c.text, c.created_at
             FROM comments c JOIN guests g ON g.id = c.guest_id
             WHERE c.upload_id = $1 ORDER BY c.id LIMIT $2",
        )
        .bind(upload_id)
        .bind(MAX_COMMENTS)
        .fetch_all(pool)
        .await)
    }
}
