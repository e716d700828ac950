use anyhow::Result;
use confetti::app::{self, AppState};
use confetti::db::Db;
use confetti::settings::Settings;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::ADMIN_TOKEN;

/// Confetti served from this process (the same `app::serve` as production) on a free loopback
/// port, with a fresh data directory, [`ADMIN_TOKEN`] and no free-disk reserve.
pub struct InProcess {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// The server's database, for writing fixtures straight into it.
    pub db: Db,
    stop: oneshot::Sender<()>,
    serving: JoinHandle<std::io::Result<()>>,
    _data: tempfile::TempDir,
}

impl InProcess {
    /// On SQLite in the data directory, or on `database_url`.
    pub async fn start(database_url: Option<String>, guest_quota_bytes: i64) -> Result<Self> {
        let data = tempfile::tempdir()?;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let base = format!("http://{}", listener.local_addr()?);
        let settings = Settings {
            database_url,
            guest_quota_bytes,
            min_free_bytes: 0,
            media_worker: confetti_binary()?,
            ..Settings::new(data.path(), &base)
        };
        let state = AppState::open(settings, ADMIN_TOKEN.into()).await?;
        let db = state.db.clone();
        let (stop, stopped) = oneshot::channel::<()>();
        let serving = tokio::spawn(app::serve(listener, state, async {
            let _ = stopped.await;
        }));
        Ok(Self { base, db, stop, serving, _data: data })
    }

    /// Shuts the server down and waits until it has.
    pub async fn stop(self) -> Result<()> {
        let _ = self.stop.send(());
        self.serving.await??;
        Ok(())
    }
}

/// Runs `run` on SQLite (no database URL), then, when `TEST_DATABASE_URL` names a PostgreSQL
/// server, on a fresh database there that is dropped afterwards.
pub async fn on_each_backend(mut run: impl AsyncFnMut(&'static str, Option<String>) -> Result<()>) -> Result<()> {
    run("sqlite", None).await?;
    let Ok(server) = std::env::var("TEST_DATABASE_URL") else {
        println!("\n(set TEST_DATABASE_URL to measure PostgreSQL too)");
        return Ok(());
    };
    let name = format!("bench_{}", uuid::Uuid::new_v4().simple());
    let admin = sqlx::PgPool::connect(&server).await?;
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}"))).execute(&admin).await?;
    let base = server.rsplit_once('/').map(|(b, _)| b).unwrap_or(&server);
    let outcome = run("postgres", Some(format!("{base}/{name}"))).await;
    sqlx::query(sqlx::AssertSqlSafe(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))).execute(&admin).await?;
    outcome
}

/// The `confetti` binary built beside this example (`target/<profile>/examples/<name>`): an
/// example is no media worker, the server's binary is.
pub fn confetti_binary() -> Result<std::path::PathBuf> {
    let exe = std::env::current_exe()?;
    let profile =
        exe.parent().and_then(|examples| examples.parent()).ok_or_else(|| anyhow::anyhow!("no target dir"))?;
    let binary = profile.join("confetti");
    anyhow::ensure!(binary.is_file(), "{} is missing: build it first (cargo build --release)", binary.display());
    Ok(binary)
}
