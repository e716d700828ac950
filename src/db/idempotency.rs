//! Idempotency keys: claims, recorded answers, takeovers and the sweep.
//! Every change of a claim is fenced by its claim token: a holder whose lease was taken over
//! can neither record nor release anything.

use chrono::{DateTime, Utc};
use sqlx::FromRow;
use uuid::Uuid;

use super::lease::{KeyPart, LeaseKey, LeaseTable, bind_key, lease_write};
use super::{Db, Tx, on_db};

/// A claim on a key is a lease: its holder runs the write, fenced by its claim token.
const KEYS: LeaseTable = LeaseTable {
    table: "idempotency_keys",
    key: &["principal", "method", "path_digest", "key"],
    token: "claim_token",
    until: "lease_expires_at",
};

/// Which key: one principal's key for one method on one path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyScope {
    pub principal: String,
    pub method: String,
    pub path_digest: Vec<u8>,
    pub key: String,
}

#[derive(Clone, Debug, FromRow)]
pub struct KeyRow {
    pub fingerprint: Vec<u8>,
    pub claim_token: Uuid,
    pub lease_expires_at: DateTime<Utc>,
    pub status: Option<i32>,
    pub location: Option<String>,
    pub content_type: Option<String>,
    pub body: Option<Vec<u8>>,
}

impl LeaseKey for KeyScope {
    fn parts(&self) -> Vec<KeyPart<'_>> {
        vec![
            KeyPart::Text(&self.principal),
            KeyPart::Text(&self.method),
            KeyPart::Bytes(&self.path_digest),
            KeyPart::Text(&self.key),
        ]
    }
}

/// The answer recorded for a completed key.
#[derive(Clone, Debug)]
pub struct RecordedAnswer {
    pub status: u16,
    pub location: Option<String>,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
}

/// The key's row: `$1`–`$4` are its scope, bound by `bind_key!`.
macro_rules! scope_is {
    () => {
        "principal = $1 AND method = $2 AND path_digest = $3 AND key = $4"
    };
}

impl Db {
    /// Claims a new key; `false` when the key exists already (look at it with `key_row`).
    pub async fn claim_key(
        &self,
        scope: &KeyScope,
        fingerprint: &[u8],
        token: Uuid,
        lease_until: DateTime<Utc>,
    ) -> sqlx::Result<bool> {
        let inserted = on_db!(self, pool => bind_key!(sqlx::query(
            "INSERT INTO idempotency_keys (principal, method, path_digest, key, fingerprint, claim_token, lease_expires_at, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
             ON CONFLICT (principal, method, path_digest, key) DO NOTHING",
        ), scope)
        .bind(fingerprint)
        .bind(token)
        .bind(lease_until)
        .bind(Utc::now())
        .execute(pool)
        .await
        .map(|r| r.rows_affected()))?;
        Ok(inserted == 1)
    }

    pub async fn key_row(&self, scope: &KeyScope) -> sqlx::Result<Option<KeyRow>> {
        on_db!(self, pool => bind_key!(sqlx::query_as(concat!(
            "SELECT fingerprint, claim_token, lease_expires_at, status, location, content_type, body
             FROM idempotency_keys WHERE ",
            scope_is!()
        )), scope)
        .fetch_optional(pool)
        .await)
    }

    /// Takes over a claim whose lease expired; `false` when someone else was first or it completed.
    pub async fn take_over_key(
        &self,
        scope: &KeyScope,
        expired_token: Uuid,
        token: Uuid,
        lease_until: DateTime<Utc>,
    ) -> sqlx::Result<bool> {
        let also = "claim_token = $8 AND status IS NULL";
        let updated =
            lease_write!(db self, KEYS.claim("", also), scope, token, lease_until, Utc::now(), expired_token)?;
        Ok(updated == 1)
    }

    /// Gives the key back after a refused or failed attempt, unless it was taken over.
    pub async fn release_key(&self, scope: &KeyScope, token: Uuid) -> sqlx::Result<()> {
        lease_write!(db self, KEYS.fenced_delete("status IS NULL"), scope, token)?;
        Ok(())
    }

    /// Forgets completed keys finished before `cutoff`, and claims abandoned (lease expired)
    /// before it. A live claim is never touched.
    pub async fn sweep_keys(&self, cutoff: DateTime<Utc>) -> sqlx::Result<u64> {
        on_db!(self, pool => sqlx::query(
            "DELETE FROM idempotency_keys
             WHERE (finished_at IS NOT NULL AND finished_at < $1)
                OR (finished_at IS NULL AND lease_expires_at < $1)",
        )
        .bind(cutoff)
        .execute(pool)
        .await
        .map(|r| r.rows_affected()))
    }
}

impl Tx {
    /// Records the answer in the write's own transaction, fenced by the claim token:
    /// `false` when this holder's lease was taken over (the caller must roll back).
    pub async fn record_key(&mut self, scope: &KeyScope, token: Uuid, answer: &RecordedAnswer) -> sqlx::Result<bool> {
        let set = "status = $6, location = $7, content_type = $8, body = $9, finished_at = $10";
        let updated = lease_write!(tx self, KEYS.fenced(set, "status IS NULL"), scope, token,
            i32::from(answer.status), &answer.location, &answer.content_type, &answer.body, Utc::now())?;
        Ok(updated == 1)
    }
}
