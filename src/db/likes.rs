//! Likes: one per guest and upload; setting and clearing are idempotent by nature.

use chrono::Utc;
use uuid::Uuid;

use super::{Tx, on_tx};

impl Tx {
    /// Sets or clears `guest_id`'s like, and returns the upload's like count afterwards.
    pub async fn set_like(&mut self, upload_id: Uuid, guest_id: Uuid, liked: bool) -> sqlx::Result<i64> {
        if liked {
            on_tx!(self, tx => sqlx::query(
                "INSERT INTO likes (upload_id, guest_id, created_at) VALUES ($1, $2, $3)
                 ON CONFLICT (upload_id, guest_id) DO NOTHING",
            )
            .bind(upload_id)
            .bind(guest_id)
            .bind(Utc::now())
            .execute(&mut **tx)
            .await
            .map(|r| r.rows_affected()))?;
        } else {
            on_tx!(self, tx => sqlx::query("DELETE FROM likes WHERE upload_id = $1 AND guest_id = $2")
                .bind(upload_id)
                .bind(guest_id)
                .execute(&mut **tx)
                .await
                .map(|r| r.rows_affected()))?;
        }
        on_tx!(self, tx => sqlx::query_scalar("SELECT COUNT(*) FROM likes WHERE upload_id = $1")
            .bind(upload_id)
            .fetch_one(&mut **tx)
            .await)
    }
}
