//! The `confetti` command: `serve`, `event create`, `migrate`. Thin: parses arguments and
//! calls into the library.

use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use confetti::app::{self, AppState};
use confetti::config::{ServeArgs, SiteArgs, admin_token_from_env};
use confetti::domain::{EventName, OrganiserPassword};
use confetti::{bootstrap, db, events};
use tracing_subscriber::EnvFilter;

#[derive(Parser)]
#[command(
    name = "confetti",
    version,
    about = "Photo uploads for events: guests scan a QR code and upload from their phones."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the server (migrations run at start).
    Serve(Box<ServeArgs>),
    /// Manage events.
    Event {
        #[command(subcommand)]
        command: EventCommand,
    },
    /// Bring the database schema up to date and exit.
    Migrate(SiteArgs),
    /// Copy the database (SQLite) and every photo to a directory or an S3 bucket, while the
    /// server runs; again later, only what is new. See docs/deploy.md, "Backups".
    Backup(confetti::config::BackupArgs),
    /// Bring a backup back into an empty data directory.
    Restore(confetti::config::RestoreArgs),
    /// Exit 0 when the server at ADDR answers /healthz (for container health checks).
    Healthcheck {
        #[arg(long, default_value = "127.0.0.1:8080")]
        addr: String,
    },
    /// A confined media worker, started by the server itself (not for use by hand).
    #[command(hide = true)]
    MediaWorker {
        /// The server's process id: a worker whose parent is another process exits.
        #[arg(long)]
        server: u32,
    },
}

#[derive(Subcommand)]
enum EventCommand {
    /// Create an event and print its join link and QR code.
    Create {
        #[command(flatten)]
        site: SiteArgs,
        /// The event's name, shown to guests.
        #[arg(long)]
        name: String,
        /// The organiser's password (at least 8 characters).
        #[arg(long, env = "CONFETTI_ORGANISER_PASSWORD")]
        password: String,
        /// Storage quota of each guest, in bytes.
        #[arg(long, default_value_t = 1024 * 1024 * 1024)]
        guest_quota_bytes: i64,
        /// Storage cap of the event, all guests together, in bytes.
        #[arg(long, env = "CONFETTI_EVENT_STORAGE_CAP_BYTES", default_value_t = 100 * 1024 * 1024 * 1024)]
        storage_cap_bytes: i64,
    },
}

fn main() -> anyhow::Result<()> {
    let command = Cli::parse().command;
    // A media worker confines itself while it has one thread and no descriptors but its
    // pipes: before any runtime, log writer or allocator setting.
    if let Command::MediaWorker { server } = command {
        confetti::sandbox::worker_main(server);
    }
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn")))
        .init();
    confetti::allocator::return_large_buffers_to_the_os();
    tokio::runtime::Builder::new_multi_thread().enable_all().build()?.block_on(run(command))
}

async fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Serve(args) => serve(*args).await,
        Command::Event {
            command: EventCommand::Create { site, name, password, guest_quota_bytes, storage_cap_bytes },
        } => {
            let db = db::Db::connect(site.database_url.as_deref(), &site.data_dir).await?;
            let blocking = confetti::blocking::Blocking::new();
            let new = events::NewEvent {
                name: EventName::parse(&name)?,
                password: OrganiserPassword::parse(&password)?,
                guest_quota_bytes,
                storage_cap_bytes,
                name_chosen: true,
            };
            let event = events::create_event(&db, &blocking, new).await?;
            let bind =
                std::env::var("CONFETTI_BIND").ok().and_then(|b| b.parse().ok()).unwrap_or(([0, 0, 0, 0], 8080).into());
            bootstrap::print_event(&bootstrap::public_url(site.public_url.as_deref(), bind), &event, None);
            db.close().await;
            Ok(())
        }
        Command::Backup(args) => confetti::backup::backup_command(args).await,
        Command::Restore(args) => confetti::backup::restore_command(args).await,
        Command::Healthcheck { addr } => confetti::healthcheck::check(&addr).await,
        Command::MediaWorker { .. } => anyhow::bail!("a media worker is started by the server"),
        Command::Migrate(site) => {
            let db = db::Db::connect(site.database_url.as_deref(), &site.data_dir).await?;
            println!("{} schema is up to date", db.backend());
            db.close().await;
            Ok(())
        }
    }
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    // Before anything opens a file: the default connection cap derives from this limit
    // (`app::serve` logs both).
    confetti::http::connections::raise_open_files_limit();
    let admin_token = bootstrap::admin_token(admin_token_from_env(), &args.site.data_dir)?;
    let state = AppState::open(args.settings(), admin_token).await?;
    if !args.no_demo {
        bootstrap::ensure_demo_event(&state.db, &state.blocking, &state.settings).await?;
    }
    let listener = tokio::net::TcpListener::bind(args.bind).await.with_context(|| format!("binding {}", args.bind))?;
    tracing::info!(bind = %args.bind, public_url = %state.settings.public_url, database = state.db.backend(), "Confetti is serving");

    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let (db, instance) = (state.db.clone(), state.instance.clone());
    let server = tokio::spawn(app::serve(listener, state, async {
        let _ = stopped.await;
    }));
    shutdown_signal().await;
    tracing::info!("shutting down: no new connections, letting in-flight requests finish");
    let _ = stop.send(());
    match tokio::time::timeout(Duration::from_secs(args.shutdown_grace_s), server).await {
        Ok(result) => result.context("server task")?.context("server")?,
        Err(_) => {
            tracing::warn!("in-flight requests did not finish within the grace period");
            instance.retire().await;
        }
    }
    db.close().await;
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
}
