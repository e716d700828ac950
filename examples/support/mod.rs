//! What the benchmark programs in `examples/` share: statistics, `/proc` readings, the generated
//! photos, Confetti started as a child process or in-process, and the HTTP calls that set up an
//! event. Each program includes it with `#[path = "support/mod.rs"] mod support;` (a directory
//! without `main.rs` is not an example of its own) and uses the part it needs, hence the
//! `dead_code` allowance.
#![allow(dead_code)]

/// Setting up events and guests over HTTP.
pub mod api;
/// Confetti (or another server) as a child process, killed on drop.
pub mod child;
/// Confetti in this process, on SQLite or a scratch PostgreSQL database.
pub mod in_process;
/// Generated photos, the same bytes on every run and machine.
pub mod photos;
/// Memory, CPU time and the machine, from `/proc`.
pub mod procfs;
/// Milliseconds, percentiles, medians.
pub mod stats;

/// The admin token every benchmark's server is started with.
pub const ADMIN_TOKEN: &str = "bench-admin-token-0123456789abcdef";
/// The organiser password of every benchmark event.
pub const ORGANISER_PASSWORD: &str = "benchmark-password";
