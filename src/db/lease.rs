//! One lease, for every table that hands out work or exclusive access: the job queues
//! (`derivative_jobs`, `blob_jobs`), resumable uploads, the sweeps' `leases` and idempotency
//! keys. Each table keeps its own columns; a `LeaseTable` names them, and the statements are
//! written here once:
//!
//! - **claim**: the row's lease goes to a new token only when nobody holds it (free, or its
//!   holder's lease ended): a second holder is kept out until the first one's lease ends;
//! - **renew**: the end moves on only while the token holds the row;
//! - **fenced write**: any write a holder makes, its final one included, carries
//!   `AND <token column> = <token>`, so after a takeover the old holder changes nothing;
//! - **release**: gives the row back, also only where the token holds it.
//!
//! Parameters: the key's columns are `$1…$k`, the token `$k+1`; each statement says what follows.
//! `Queue` is the job queues' claim: the next due job in the queue's order, on PostgreSQL
//! skipping rows another instance is claiming right now. Keeping a lease while working is
//! `crate::lease::keep`.

use std::marker::PhantomData;

use chrono::{DateTime, Utc};
use sqlx::postgres::PgRow;
use sqlx::sqlite::SqliteRow;
use uuid::Uuid;

use super::{Db, Tx, on_db};

/// A leased table's columns.
#[derive(Clone, Copy, Debug)]
pub struct LeaseTable {
    pub table: &'static str,
    /// The columns naming one row.
    pub key: &'static [&'static str],
    /// The holder's token.
    pub token: &'static str,
    /// When the holder's lease ends.
    pub until: &'static str,
}

/// One value of a row's key, in its column's order.
#[derive(Clone, Copy, Debug)]
pub enum KeyPart<'a> {
    Uuid(Uuid),
    Text(&'a str),
    Bytes(&'a [u8]),
}

/// What names a leased row.
pub trait LeaseKey {
    fn parts(&self) -> Vec<KeyPart<'_>>;
}

impl LeaseKey for Uuid {
    fn parts(&self) -> Vec<KeyPart<'_>> {
        vec![KeyPart::Uuid(*self)]
    }
}

impl LeaseKey for str {
    fn parts(&self) -> Vec<KeyPart<'_>> {
        vec![KeyPart::Text(self)]
    }
}

/// Binds a key's values (`$1…$k`) to a query.
macro_rules! bind_key {
    ($query:expr, $key:expr) => {{
        let mut query = $query;
        for part in $crate::db::lease::LeaseKey::parts($key) {
            query = match part {
                $crate::db::lease::KeyPart::Uuid(v) => query.bind(v),
                $crate::db::lease::KeyPart::Text(v) => query.bind(v.to_owned()),
                $crate::db::lease::KeyPart::Bytes(v) => query.bind(v.to_vec()),
            };
        }
        query
    }};
}

/// Runs a leased table's statement on a `Db` (`db`) or in a `Tx` (`tx`): binds the key, the
/// token and then the values given, in that order; the rows it changed.
macro_rules! lease_write {
    (db $db:expr, $sql:expr, $key:expr, $token:expr $(, $value:expr)* $(,)?) => {
        $crate::db::on_db!($db, pool => $crate::db::lease::bind_key!(sqlx::query(sqlx::AssertSqlSafe($sql)), $key)
            .bind($token)
            $(.bind($value))*
            .execute(pool)
            .await
            .map(|r| r.rows_affected()))
    };
    (tx $tx:expr, $sql:expr, $key:expr, $token:expr $(, $value:expr)* $(,)?) => {
        $crate::db::on_tx!($tx, tx => $crate::db::lease::bind_key!(sqlx::query(sqlx::AssertSqlSafe($sql)), $key)
            .bind($token)
            $(.bind($value))*
            .execute(&mut **tx)
            .await
            .map(|r| r.rows_affected()))
    };
}
pub(crate) use {bind_key, lease_write};

impl LeaseTable {
    /// `a = $1 AND b = $2 …`: the row.
    fn key_is(&self) -> String {
        let columns = self.key.iter().enumerate().map(|(i, column)| format!("{column} = ${}", i + 1));
        columns.collect::<Vec<_>>().join(" AND ")
    }

    /// The number of the first parameter after the key and the token.
    fn after_token(&self) -> usize {
        self.key.len() + 2
    }

    /// The row, while the token (`$k+1`) holds it.
    fn held(&self) -> String {
        format!("{} AND {} = ${}", self.key_is(), self.token, self.key.len() + 1)
    }

    /// Nobody holds the row at `$now`: free, or its holder's lease ended (`table.` prefixes
    /// the column where another row is in scope).
    fn free(&self, table: &str, now: usize) -> String {
        format!("({table}{until} IS NULL OR {table}{until} < ${now})", until = self.until)
    }

    /// Claim: the lease goes to the token `$k+1` until `$k+2` when nobody holds the row at
    /// `$k+3` and the row is `also` (which may use `$k+4…`); `set` writes more with it.
    pub fn claim(&self, set: &str, also: &str) -> String {
        let n = self.after_token();
        format!(
            "UPDATE {table} SET {token} = ${t}, {until} = ${n}{set} WHERE {key} AND {free}{also}",
            set = if set.is_empty() { String::new() } else { format!(", {set}") },
            table = self.table,
            token = self.token,
            t = n - 1,
            until = self.until,
            key = self.key_is(),
            free = self.free("", n + 1),
            also = and(also),
        )
    }

    /// Renew: the lease ends at `$k+2` instead, while the token holds the row and it is `also`.
    pub fn renew(&self, also: &str) -> String {
        format!("UPDATE {} SET {} = ${} WHERE {}{}", self.table, self.until, self.after_token(), self.held(), and(also))
    }

    /// A fenced write: `set` (its values from `$k+2`), only while the token holds the row and
    /// it is `also`. Releasing the lease is one (`set` clears the token).
    pub fn fenced(&self, set: &str, also: &str) -> String {
        format!("UPDATE {} SET {set} WHERE {}{}", self.table, self.held(), and(also))
    }

    /// A fenced delete: the row goes, only while the token holds it and it is `also`.
    pub fn fenced_delete(&self, also: &str) -> String {
        format!("DELETE FROM {} WHERE {}{}", self.table, self.held(), and(also))
    }

    /// Release: the row is free again, only where the token held it.
    pub fn release(&self) -> String {
        self.fenced(&format!("{} = NULL, {} = NULL", self.token, self.until), "")
    }

    /// Claim a named lease, creating its row: as `claim`, and the holder renews by taking it again.
    pub fn take(&self) -> String {
        let n = self.after_token();
        format!(
            "INSERT INTO {table} ({key}, {token}, {until}) VALUES ({params}, ${t}, ${n})
             ON CONFLICT ({key}) DO UPDATE SET {token} = excluded.{token}, {until} = excluded.{until}
             WHERE {free} OR {table}.{token} = excluded.{token}
             RETURNING {token}",
            table = self.table,
            key = self.key.join(", "),
            token = self.token,
            until = self.until,
            params = (1..=self.key.len()).map(|i| format!("${i}")).collect::<Vec<_>>().join(", "),
            t = n - 1,
            free = self.free(&format!("{}.", self.table), n + 1),
        )
    }
}

/// ` AND also`, or nothing.
fn and(also: &str) -> String {
    if also.is_empty() { String::new() } else { format!(" AND {also}") }
}

impl Db {
    /// Claims the row for `token` until `until` if nobody holds it now and it is `also`
    /// (`LeaseTable::claim`, whose `$k+4…` this cannot bind); `false` when someone does.
    pub async fn claim_lease(
        &self,
        table: &LeaseTable,
        key: &(impl LeaseKey + ?Sized),
        token: Uuid,
        (now, until): (DateTime<Utc>, DateTime<Utc>),
        also: &str,
    ) -> sqlx::Result<bool> {
        Ok(lease_write!(db self, table.claim("", also), key, token, until, now)? == 1)
    }

    /// Extends the token's lease to `until`; `false` when the token no longer holds the row.
    pub async fn renew_lease(
        &self,
        table: &LeaseTable,
        key: &(impl LeaseKey + ?Sized),
        token: Uuid,
        until: DateTime<Utc>,
        also: &str,
    ) -> sqlx::Result<bool> {
        Ok(lease_write!(db self, table.renew(also), key, token, until)? == 1)
    }

    /// Gives the token's lease back; `false` when it no longer held the row (nothing changes).
    pub async fn release_lease(
        &self,
        table: &LeaseTable,
        key: &(impl LeaseKey + ?Sized),
        token: Uuid,
    ) -> sqlx::Result<bool> {
        Ok(lease_write!(db self, table.release(), key, token)? == 1)
    }

    /// Takes (or, for its holder, renews) the named lease until `until`, unless another
    /// holder's lease is still running. `true` when `token` has it.
    pub async fn take_lease(
        &self,
        table: &LeaseTable,
        key: &(impl LeaseKey + ?Sized),
        token: Uuid,
        until: DateTime<Utc>,
    ) -> sqlx::Result<bool> {
        let taken: Option<Uuid> = on_db!(self, pool => bind_key!(sqlx::query_scalar(sqlx::AssertSqlSafe(table.take())), key)
            .bind(token)
            .bind(until)
            .bind(Utc::now())
            .fetch_optional(pool)
            .await)?;
        Ok(taken == Some(token))
    }
}

/// A job queue: a leased table whose rows are jobs, due at `run_after` (which is also when a
/// claim's lease ends: a job whose holder died is due again then), claimed by an instance
/// (`claimed_by`) with a count of `attempts`. One type for every queue; each says which due
/// job goes first.
#[derive(Debug)]
pub struct Queue<J> {
    pub lease: LeaseTable,
    /// Where the next job is picked from: the queue's rows as `j`, joined to what the order needs.
    pub from: &'static str,
    /// Which rows may be picked, `$3` being now.
    pub due: &'static str,
    /// Which due job goes first.
    pub order: &'static str,
    pub job: PhantomData<fn() -> J>,
}

/// A claimed job as its queue returns it.
pub trait Job: LeaseKey + Sized {
    /// The columns a claim returns, into `Row`.
    const RETURNING: &'static str;
    type Row: for<'r> sqlx::FromRow<'r, SqliteRow> + for<'r> sqlx::FromRow<'r, PgRow> + Send + Unpin;
    /// The job, held by `claim`; `None` for a row no job can be made from.
    fn from_row(row: Self::Row, claim: Uuid) -> Option<Self>;
    /// The token it is held by.
    fn claim(&self) -> Uuid;
}

impl<J: Job> Queue<J> {
    /// Claims the first due job in the queue's order, for `$4` until `$2` (token `$1`).
    fn claim(&self, lock: &str) -> String {
        let lease = &self.lease;
        let key = lease.key.join(", ");
        let picked = lease.key.iter().map(|column| format!("j.{column}")).collect::<Vec<_>>().join(", ");
        format!(
            "UPDATE {table} SET {token} = $1, claimed_by = $4, {until} = $2, attempts = attempts + 1
             WHERE ({key}) = (SELECT {picked} FROM {from} WHERE {due} ORDER BY {order} LIMIT 1 {lock})
             RETURNING {returning}",
            table = lease.table,
            token = lease.token,
            until = lease.until,
            from = self.from,
            due = self.due,
            order = self.order,
            returning = J::RETURNING,
        )
    }
}

impl Db {
    /// Claims the queue's next due job, if any, for instance `by` until `lease_until`. On
    /// PostgreSQL, rows another instance is claiming right now are skipped, not waited for;
    /// SQLite has no row locks and needs none: one statement is one atomic write, and there
    /// is one writer at a time.
    pub async fn claim_job<J: Job>(
        &self,
        queue: &Queue<J>,
        (by, lease_until): (Uuid, DateTime<Utc>),
    ) -> sqlx::Result<Option<J>> {
        let claim = Uuid::new_v4();
        let statement = match self {
            Db::Sqlite(_) => queue.claim(""),
            Db::Postgres(_) => queue.claim("FOR UPDATE OF j SKIP LOCKED"),
        };
        let row: Option<J::Row> = on_db!(self, pool => sqlx::query_as(sqlx::AssertSqlSafe(statement))
            .bind(claim)
            .bind(lease_until)
            .bind(Utc::now())
            .bind(by)
            .fetch_optional(pool)
            .await)?;
        Ok(row.and_then(|row| J::from_row(row, claim)))
    }

    /// Extends the lease of a job its holder still holds; `false` when it was lost (it ran out
    /// and another worker claimed the job, or the job is gone).
    pub async fn renew_job<J: Job>(&self, queue: &Queue<J>, job: &J, until: DateTime<Utc>) -> sqlx::Result<bool> {
        self.renew_lease(&queue.lease, job, job.claim(), until, "").await
    }

    /// Gives a job back to be tried again after `run_after`, with why. Does nothing if the
    /// lease was lost meanwhile.
    pub async fn retry_job<J: Job>(
        &self,
        queue: &Queue<J>,
        job: &J,
        run_after: DateTime<Utc>,
        error: &str,
    ) -> sqlx::Result<()> {
        let n = queue.lease.after_token();
        let set = format!(
            "{token} = NULL, claimed_by = NULL, {until} = ${n}, last_error = ${e}",
            token = queue.lease.token,
            until = queue.lease.until,
            e = n + 1
        );
        lease_write!(db self, queue.lease.fenced(&set, ""), job, job.claim(), run_after, error)?;
        Ok(())
    }

    /// Ends a job that is done; `false` (nothing changes) when the lease was lost meanwhile.
    pub async fn finish_job<J: Job>(&self, queue: &Queue<J>, job: &J) -> sqlx::Result<bool> {
        Ok(lease_write!(db self, queue.lease.fenced_delete(""), job, job.claim())? == 1)
    }

    /// Gives back every job instance `by` had claimed in the queues' tables, due at once. How many.
    pub async fn release_claims_of(&self, queues: &[&LeaseTable], by: Uuid) -> sqlx::Result<u64> {
        let now = Utc::now();
        let mut released = 0;
        for lease in queues {
            let statement = format!(
                "UPDATE {table} SET {token} = NULL, claimed_by = NULL, {until} = $2 WHERE claimed_by = $1",
                table = lease.table,
                token = lease.token,
                until = lease.until
            );
            released += on_db!(self, pool => sqlx::query(sqlx::AssertSqlSafe(statement))
                .bind(by)
                .bind(now)
                .execute(pool)
                .await
                .map(|r| r.rows_affected()))?;
        }
        Ok(released)
    }
}

impl Tx {
    /// Ends a job in the transaction that records its result; `false` when the lease was lost
    /// meanwhile (the caller rolls back; the new holder decides).
    pub async fn finish_job<J: Job>(&mut self, queue: &Queue<J>, job: &J) -> sqlx::Result<bool> {
        Ok(lease_write!(tx self, queue.lease.fenced_delete(""), job, job.claim())? == 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: LeaseTable = LeaseTable { table: "t", key: &["a", "b"], token: "tok", until: "till" };

    /// Every statement names the row by its key and, but for a claim, the holder's token.
    #[test]
    fn the_statements_are_fenced_by_the_token() {
        assert_eq!(
            T.claim("", "x > $6"),
            "UPDATE t SET tok = $3, till = $4 WHERE a = $1 AND b = $2 AND (till IS NULL OR till < $5) AND x > $6"
        );
        assert_eq!(T.renew(""), "UPDATE t SET till = $4 WHERE a = $1 AND b = $2 AND tok = $3");
        assert_eq!(T.fenced("c = $4", "d"), "UPDATE t SET c = $4 WHERE a = $1 AND b = $2 AND tok = $3 AND d");
        assert_eq!(T.fenced_delete(""), "DELETE FROM t WHERE a = $1 AND b = $2 AND tok = $3");
        assert_eq!(T.release(), "UPDATE t SET tok = NULL, till = NULL WHERE a = $1 AND b = $2 AND tok = $3");
        let take = T.take().split_whitespace().collect::<Vec<_>>().join(" ");
        assert_eq!(
            take,
            "INSERT INTO t (a, b, tok, till) VALUES ($1, $2, $3, $4) ON CONFLICT (a, b) DO UPDATE SET tok = excluded.tok, \
             till = excluded.till WHERE (t.till IS NULL OR t.till < $5) OR t.tok = excluded.tok RETURNING tok"
        );
    }
}
