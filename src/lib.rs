//! Confetti: a self-hosted photo-upload gallery for events.

// libjpeg reports a broken file by unwinding out of its error handler (the `mozjpeg` crate):
// with `panic = "abort"` every bad JPEG would end its media worker instead of being refused.
#[cfg(panic = "abort")]
compile_error!("Confetti needs panic = \"unwind\": libjpeg's errors unwind through Rust (see src/lib.rs)");

/// How the process asks the allocator to give large buffers back.
pub mod allocator;
/// Shared state, router, layers and `serve(listener, state, shutdown)`.
pub mod app;
/// Tokens, cookies and password hashing.
pub mod auth;
/// `confetti backup` and `confetti restore`: a consistent copy while serving, and back.
pub mod backup;
/// Blob storage over `object_store` with typed keys.
pub mod blobs;
/// Running CPU-bound and blocking work off the async runtime, bounded.
pub mod blocking;
/// Start-up chores: public URL, admin token, demo event, printing join links and QR codes.
pub mod bootstrap;
/// Command-line and environment configuration.
pub mod config;
/// The database over SQLite or PostgreSQL: one query, both backends.
pub mod db;
/// Small derivatives kept in memory, bounded in bytes.
pub mod derivative_cache;
/// Input values that parse (names, captions, keys, slugs, passwords).
pub mod domain;
/// `ApiError` and its problem+json rendering.
pub mod error;
/// Deleting an event: gone at once for everyone, its photos removed from the store by blob jobs.
pub mod event_deletion;
/// Creating events and their join links.
pub mod events;
/// `confetti healthcheck` for container health checks.
pub mod healthcheck;
/// HTTP handlers, one module per resource, and the extractors for principals.
pub mod http;
/// Idempotency-Key on every authenticated write other than uploads: claim, record, replay.
pub mod idempotency;
/// The upload use case: stream, probe, deduplicate, commit.
pub mod ingest;
/// Work in the background: derivatives, blob jobs after a commit, sweeps, instances'
/// heartbeats and cleaning up after a dead one.
pub mod jobs;
/// Keeping a lease while working: renewed every third of it, until lost.
pub mod lease;
/// Live news for slideshows, fanned out from the database's live feed.
pub mod live;
/// Image probing and derivatives: synchronous code for the blocking pool.
pub mod media;
/// Confetti's files and directories, readable by the server's user only.
pub mod private_files;
/// Resumable uploads: a file sent in pieces, stored by `ingest` once whole.
pub mod resumable;
/// Media worker processes: guests' bytes meet C code only there, confined and bounded.
pub mod sandbox;
/// The runtime settings, a plain struct with defaults, apart from the command line.
pub mod settings;
/// Throttling of organiser logins and joins with a wrong token, per client and event.
pub mod throttle;
