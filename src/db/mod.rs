//! The database: one `Db` over SQLite (embedded default) or PostgreSQL (several instances).
//!
//! Both backends run the same SQL wherever SQL is portable (`$n` parameters, `ON CONFLICT`,
//! `RETURNING`, partial unique indexes); `on_db!`/`on_tx!` expand one query body for each pool
//! type, so a query is written once and type-checked against both drivers. Where the backends
//! must differ (how a write transaction starts, row locking) the difference is spelled out
//! at that one place. Each backend has its own migrations under `migrations/`.
//! Expected conflicts come back as values (`Option`, `bool`), never as errors.

pub mod backups;
pub mod blob_jobs;
pub mod blocks;
pub mod comments;
pub mod derivatives;
pub mod event_admin;
pub mod event_page;
pub mod events;
pub mod guestbook;
pub mod guests;
pub mod idempotency;
pub mod instances;
pub mod lease;
pub mod likes;
pub mod live;
pub mod moderation;
pub mod organiser_logins;
pub mod resumable;
pub mod screens;
pub mod throttle;
pub mod undo;
pub mod uploads;
pub mod webhooks;

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use anyhow::Context;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions, PgSslMode};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{PgPool, Postgres, Sqlite, SqlitePool, Transaction};

#[derive(Clone, Debug)]
pub enum Db {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// A write transaction on either backend.
pub enum Tx {
    Sqlite(Transaction<'static, Sqlite>),
    Postgres(Transaction<'static, Postgres>),
}

/// Runs the same query body against whichever pool `db` holds.
macro_rules! on_db {
    ($db:expr, $pool:ident => $body:expr) => {
        match $db {
            $crate::db::Db::Sqlite($pool) => $body,
            $crate::db::Db::Postgres($pool) => $body,
        }
    };
}

/// Runs the same query body against whichever transaction `tx` holds; `$conn` is the
/// connection to pass as executor (`&mut **$conn`).
macro_rules! on_tx {
    ($tx:expr, $conn:ident => $body:expr) => {
        match $tx {
            $crate::db::Tx::Sqlite($conn) => $body,
            $crate::db::Tx::Postgres($conn) => $body,
        }
    };
}
pub(crate) use {on_db, on_tx};

impl Db {
    /// Connects to `database_url`, or to `confetti.db` in `data_dir` when none is given,
    /// and brings the schema up to date.
    pub async fn connect(database_url: Option<&str>, data_dir: &Path) -> anyhow::Result<Db> {
        crate::private_files::keep_files_private();
        let db = match database_url {
            Some(url) if url.starts_with("postgres:") || url.starts_with("postgresql:") => {
                let options = PgConnectOptions::from_str(url).context("parsing the PostgreSQL URL")?;
                let options = plain_on_loopback(options, url);
                let pool = PgPoolOptions::new()
                    .max_connections(16)
                    .acquire_timeout(Duration::from_secs(10))
                    // Not a round trip to ask whether an idle connection still works before each
                    // use: that doubled the round trips of every query outside a transaction.
                    // A connection the server dropped (a restart) fails its next query once and
                    // is closed; the request's work is rolled back and its client retries.
                    .test_before_acquire(false)
                    .connect_with(options)
                    .await
                    .context("connecting to PostgreSQL")?;
                Db::Postgres(pool)
            }
            Some(url) if url.starts_with("sqlite:") => {
                Db::Sqlite(sqlite_pool(SqliteConnectOptions::from_str(url).context("parsing the SQLite URL")?).await?)
            }
            Some(other) => {
                anyhow::bail!("unsupported database URL {other:?}: use postgres://… or sqlite://…")
            }
            None => {
                // Private from the start: the database holds guests' names and token hashes.
                // SQLite creates `-wal` and `-shm` with the database file's own mode.
                crate::private_files::private_dir(data_dir)?;
                for file in ["confetti.db", "confetti.db-wal", "confetti.db-shm"] {
                    crate::private_files::narrow(&data_dir.join(file), 0o600);
                }
                Db::Sqlite(sqlite_pool(SqliteConnectOptions::new().filename(data_dir.join("confetti.db"))).await?)
            }
        };
        db.migrate().await?;
        Ok(db)
    }

    async fn migrate(&self) -> anyhow::Result<()> {
        match self {
            Db::Sqlite(pool) => sqlx::migrate!("migrations/sqlite").run(pool).await,
            Db::Postgres(pool) => sqlx::migrate!("migrations/postgres").run(pool).await,
        }
        .context("running database migrations")
    }

    /// Starts a write transaction. SQLite takes the write lock up front (`BEGIN IMMEDIATE`):
    /// a deferred transaction that reads first cannot upgrade once another writer committed,
    /// and would fail with SQLITE_BUSY instead of waiting.
    pub async fn begin(&self) -> sqlx::Result<Tx> {
        Ok(match self {
            Db::Sqlite(pool) => Tx::Sqlite(pool.begin_with("BEGIN IMMEDIATE").await?),
            Db::Postgres(pool) => Tx::Postgres(pool.begin().await?),
        })
    }

    /// True while the database answers a trivial query.
    pub async fn ping(&self) -> bool {
        let probe = async { on_db!(self, pool => sqlx::query("SELECT 1").execute(pool).await.map(|_| ())) };
        matches!(tokio::time::timeout(Duration::from_secs(2), probe).await, Ok(Ok(())))
    }

    pub fn backend(&self) -> &'static str {
        match self {
            Db::Sqlite(_) => "sqlite",
            Db::Postgres(_) => "postgres",
        }
    }

    /// True once `close` was called: background work stops.
    pub fn is_closed(&self) -> bool {
        on_db!(self, pool => pool.is_closed())
    }

    pub async fn close(&self) {
        on_db!(self, pool => pool.close().await)
    }
}

impl Tx {
    pub async fn commit(self) -> sqlx::Result<()> {
        on_tx!(self, tx => tx.commit().await)
    }

    pub async fn rollback(self) -> sqlx::Result<()> {
        on_tx!(self, tx => tx.rollback().await)
    }
}

/// TLS to a server on this machine protects nothing (loopback traffic never leaves the kernel)
/// and costs every query a round of encryption each way: on a loaded 2-core machine a query's
/// round trip took 2.3× as long with it (`docs/benchmarks.md`, "PostgreSQL at SQLite's
/// speed"). So a loopback host gets none unless the URL names an `sslmode` (or `PGSSLMODE` is
/// set); any mode named is kept.
fn plain_on_loopback(options: PgConnectOptions, url: &str) -> PgConnectOptions {
    let query = url.split_once('?').map_or("", |(_, query)| query);
    let named = query.split('&').any(|pair| pair.starts_with("sslmode=") || pair.starts_with("ssl-mode="))
        || std::env::var_os("PGSSLMODE").is_some();
    let host = options.get_host().trim_start_matches('[').trim_end_matches(']');
    let loopback = host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
    if loopback && !named { options.ssl_mode(PgSslMode::Disable) } else { options }
}

async fn sqlite_pool(options: SqliteConnectOptions) -> anyhow::Result<SqlitePool> {
    let options = options
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(Duration::from_secs(15))
        .foreign_keys(true)
        // Checkpoints (and their fsync) run in the background, not inside a request's commit.
        .pragma("wal_autocheckpoint", "0");
    let pool = SqlitePoolOptions::new()
        .max_connections(8)
        .acquire_timeout(Duration::from_secs(15))
        .connect_with(options)
        .await
        .context("opening the SQLite database")?;
    spawn_checkpoints(pool.clone());
    Ok(pool)
}

/// Copies the SQLite write-ahead log back into the database every few seconds. A PASSIVE
/// checkpoint never waits for writers, so uploads committing meanwhile are not held up by its
/// fsync; done inside a commit instead (SQLite's default), one upload in a few hundred waited
/// 0.1–0.6 s for it.
fn spawn_checkpoints(pool: SqlitePool) {
    tokio::spawn(async move {
        let mut every = tokio::time::interval(Duration::from_secs(5));
        loop {
            every.tick().await;
            if pool.is_closed() {
                return;
            }
            if let Err(e) = sqlx::query("PRAGMA wal_checkpoint(PASSIVE)").execute(&pool).await {
                tracing::warn!(error = %e, "SQLite checkpoint failed");
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(url: &str) -> PgSslMode {
        plain_on_loopback(PgConnectOptions::from_str(url).expect("a valid URL"), url).get_ssl_mode()
    }

    #[test]
    fn a_loopback_host_gets_no_tls_unless_the_url_names_a_mode() {
        if std::env::var_os("PGSSLMODE").is_some() {
            return;
        }
        for url in ["postgres://u@127.0.0.1:5432/db", "postgres://u@localhost/db", "postgres://u@[::1]:5432/db"] {
            assert!(matches!(mode(url), PgSslMode::Disable), "{url}");
        }
        assert!(matches!(mode("postgres://u@127.0.0.1/db?sslmode=require"), PgSslMode::Require));
        assert!(matches!(mode("postgres://u@localhost/db?application_name=c&sslmode=prefer"), PgSslMode::Prefer));
        assert!(matches!(mode("postgres://u@db.internal/db"), PgSslMode::Prefer));
        assert!(matches!(mode("postgres://u@10.0.0.5/db"), PgSslMode::Prefer));
    }
}
