//! Co-organiser logins: more passwords for an event's dashboard, each with a label, and the
//! sessions they started. Revoking a login ends its sessions in the same transaction, so a
//! session's token stops working the moment the revocation commits.

use chrono::{DateTime, Utc};
use sqlx::FromRow;
use uuid::Uuid;

use super::{Db, Tx, on_db, on_tx};

#[derive(Clone, Debug, FromRow)]
pub struct OrganiserLoginRow {
    pub id: Uuid,
    pub event_id: Uuid,
    pub label: String,
    pub password_hash: String,
    pub created_at: DateTime<Utc>,
}

impl Db {
    /// The event's logins that are not revoked, oldest first.
    pub async fn active_organiser_logins(&self, event_id: Uuid) -> sqlx::Result<Vec<OrganiserLoginRow>> {
        on_db!(self, pool => sqlx::query_as(
            "SELECT id, event_id, label, password_hash, created_at FROM organiser_logins
             WHERE event_id = $1 AND revoked_at IS NULL ORDER BY id",
        )
        .bind(event_id)
        .fetch_all(pool)
        .await)
    }

    /// Which login an organiser session came from: `Some(None)` for the event's own password,
    /// `None` when there is no such session (any more).
    pub async fn organiser_session_login(&self, token_hash: &[u8]) -> sqlx::Result<Option<Option<Uuid>>> {
        on_db!(self, pool => sqlx::query_scalar(
            "SELECT login_id FROM organiser_sessions WHERE token_hash = $1 AND expires_at > $2",
        )
        .bind(token_hash)
        .bind(Utc::now())
        .fetch_optional(pool)
        .await)
    }
}

impl Tx {
    /// Adds a login unless the event already has `cap` active ones (`Ok(false)`). The count
    /// and the insert run in one transaction that holds the event's row, so two additions at
    /// once cannot both pass the cap.
    pub async fn insert_organiser_login(&mut self, row: &OrganiserLoginRow, cap: i64) -> sqlx::Result<bool> {
        // Takes the event's row lock (PostgreSQL); SQLite's write lock is held already.
        on_tx!(self, tx => sqlx::query("UPDATE events SET id = id WHERE id = $1")
            .bind(row.event_id)
            .execute(&mut **tx)
            .await
            .map(|r| r.rows_affected()))?;
        let active: i64 = on_tx!(self, tx => sqlx::query_scalar(
            "SELECT COUNT(*) FROM organiser_logins WHERE event_id = $1 AND revoked_at IS NULL",
        )
        .bind(row.event_id)
        .fetch_one(&mut **tx)
        .await)?;
        if active >= cap {
            return Ok(false);
        }
        on_tx!(self, tx => sqlx::query(
            "INSERT INTO organiser_logins (id, event_id, label, password_hash, created_at) VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(row.id)
        .bind(row.event_id)
        .bind(&row.label)
        .bind(&row.password_hash)
        .bind(row.created_at)
        .execute(&mut **tx)
        .await
        .map(|r| r.rows_affected()))?;
        Ok(true)
    }

    /// Revokes the event's login and ends every session it started; `false` when the event
    /// has no such login, or it was revoked already.
    pub async fn revoke_organiser_login(&mut self, event_id: Uuid, id: Uuid) -> sqlx::Result<bool> {
        let revoked = on_tx!(self, tx => sqlx::query(
            "UPDATE organiser_logins SET revoked_at = $3 WHERE id = $1 AND event_id = $2 AND revoked_at IS NULL",
        )
        .bind(id)
        .bind(event_id)
        .bind(Utc::now())
        .execute(&mut **tx)
        .await
        .map(|r| r.rows_affected()))?;
        if revoked == 0 {
            return Ok(false);
        }
        on_tx!(self, tx => sqlx::query("DELETE FROM organiser_sessions WHERE login_id = $1")
            .bind(id)
            .execute(&mut **tx)
            .await
            .map(|r| r.rows_affected()))?;
        Ok(true)
    }
}
