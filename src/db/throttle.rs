//! The guessing throttle's counts and the join budgets, shared by every instance on the
//! database (`throttle` holds the rules). A count is read and written inside one write
//! transaction, its row locked by the upsert that reads it (SQLite's write transaction holds
//! the whole database), so attempts sent at once to several instances see each other.

use uuid::Uuid;

use super::{Db, Tx, on_db, on_tx};

/// One client's guesses of one secret in one event; times in milliseconds since the epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GuessCount {
    pub failures: i64,
    pub last_attempt_ms: i64,
    pub locked_until_ms: Option<i64>,
}

/// A client's joins left in one event, as of `at_ms`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JoinBudget {
    pub left: f64,
    pub at_ms: i64,
}

impl Tx {
    /// The count under (purpose, client, event), locked until the transaction ends; a fresh
    /// one (no failures, as of `now_ms`) when there was none. One upsert that returns the row:
    /// a count removed meanwhile by another instance (a success, the sweep) is made afresh.
    pub async fn guess_count(
        &mut self,
        purpose: &str,
        client: &str,
        event_id: Uuid,
        now_ms: i64,
    ) -> sqlx::Result<GuessCount> {
        let (failures, last_attempt_ms, locked_until_ms) = on_tx!(self, tx => sqlx::query_as::<_, (i64, i64, Option<i64>)>(
            "INSERT INTO guess_counts (purpose, client, event_id, failures, last_attempt_ms, locked_until_ms)
             VALUES ($1, $2, $3, 0, $4, NULL)
             ON CONFLICT (purpose, client, event_id) DO UPDATE SET failures = guess_counts.failures
             RETURNING failures, last_attempt_ms, locked_until_ms",
        )
        .bind(purpose)
        .bind(client)
        .bind(event_id)
        .bind(now_ms)
        .fetch_one(&mut **tx)
        .await)?;
        Ok(GuessCount { failures, last_attempt_ms, locked_until_ms })
    }

    pub async fn set_guess_count(
        &mut self,
        purpose: &str,
        client: &str,
        event_id: Uuid,
        count: GuessCount,
    ) -> sqlx::Result<()> {
        on_tx!(self, tx => sqlx::query(
            "UPDATE guess_counts SET failures = $4, last_attempt_ms = $5, locked_until_ms = $6
             WHERE purpose = $1 AND client = $2 AND event_id = $3",
        )
        .bind(purpose)
        .bind(client)
        .bind(event_id)
        .bind(count.failures)
        .bind(count.last_attempt_ms)
        .bind(count.locked_until_ms)
        .execute(&mut **tx)
        .await
        .map(|_| ()))
    }

    /// The budget under (client, event), locked until the transaction ends; a full one (`burst`
    /// as of `now_ms`) when there was none (one upsert, as `guess_count`).
    pub async fn join_budget(
        &mut self,
        client: &str,
        event_id: Uuid,
        burst: f64,
        now_ms: i64,
    ) -> sqlx::Result<JoinBudget> {
        let (left, at_ms) = on_tx!(self, tx => sqlx::query_as::<_, (f64, i64)>(
            "INSERT INTO join_budgets (client, event_id, joins_left, at_ms) VALUES ($1, $2, $3, $4)
             ON CONFLICT (client, event_id) DO UPDATE SET joins_left = join_budgets.joins_left
             RETURNING joins_left, at_ms",
        )
        .bind(client)
        .bind(event_id)
        .bind(burst)
        .bind(now_ms)
        .fetch_one(&mut **tx)
        .await)?;
        Ok(JoinBudget { left, at_ms })
    }

    pub async fn set_join_budget(&mut self, client: &str, event_id: Uuid, budget: JoinBudget) -> sqlx::Result<()> {
        on_tx!(self, tx => sqlx::query(
            "UPDATE join_budgets SET joins_left = $3, at_ms = $4 WHERE client = $1 AND event_id = $2",
        )
        .bind(client)
        .bind(event_id)
        .bind(budget.left)
        .bind(budget.at_ms)
        .execute(&mut **tx)
        .await
        .map(|_| ()))
    }
}

impl Db {
    /// The secret was right: the count starts again.
    pub async fn forget_guess_count(&self, purpose: &str, client: &str, event_id: Uuid) -> sqlx::Result<()> {
        on_db!(self, pool => sqlx::query(
            "DELETE FROM guess_counts WHERE purpose = $1 AND client = $2 AND event_id = $3",
        )
        .bind(purpose)
        .bind(client)
        .bind(event_id)
        .execute(pool)
        .await
        .map(|_| ()))
    }

    /// Forgets what says nothing a fresh row would not: counts last used before `idle_before_ms`
    /// and not locked at `now_ms`, budgets refilled to the burst by `now_ms`. Returns the rows
    /// removed.
    pub async fn sweep_throttle(
        &self,
        now_ms: i64,
        idle_before_ms: i64,
        burst: f64,
        refill_every_ms: i64,
    ) -> sqlx::Result<u64> {
        let counts = on_db!(self, pool => sqlx::query(
            "DELETE FROM guess_counts
             WHERE last_attempt_ms < $1 AND (locked_until_ms IS NULL OR locked_until_ms <= $2)",
        )
        .bind(idle_before_ms)
        .bind(now_ms)
        .execute(pool)
        .await
        .map(|r| r.rows_affected()))?;
        let budgets = on_db!(self, pool => sqlx::query(
            "DELETE FROM join_budgets WHERE at_ms + ($2 - joins_left) * $3 <= $1",
        )
        .bind(now_ms as f64)
        .bind(burst)
        .bind(refill_every_ms as f64)
        .execute(pool)
        .await
        .map(|r| r.rows_affected()))?;
        Ok(counts + budgets)
    }

    /// Rows the throttle holds: counts and budgets.
    pub async fn throttle_rows(&self) -> sqlx::Result<i64> {
        on_db!(self, pool => sqlx::query_scalar(
            "SELECT (SELECT COUNT(*) FROM guess_counts) + (SELECT COUNT(*) FROM join_budgets)",
        )
        .fetch_one(pool)
        .await)
    }
}
