//! Guests' bytes meet C and C++ code (libjpeg-turbo, libheif with libde265, aom, libwebp,
//! ffmpeg) only here: in media worker processes the server starts from its own binary
//! (`confetti media-worker`), each confined before it reads a guest's byte and bounded in memory
//! and time by the kernel. A worker that crashes, runs out of memory or time costs one job,
//! never the server.
//!
//! * `pool` (server side): keeps workers started ahead of need, hands each one job, enforces
//!   the wall-clock limit and tells how a worker ended.
//! * `protocol`: the job a worker is given and what it answers, over its stdin and stdout.
//! * `child` (worker side): reads the job, confines itself, does the job.
//! * `confine`: the confinement itself (environment, descriptors, rlimits, no new privileges,
//!   landlock, seccomp) and `syscalls`, the seccomp allowlists.

mod child;
mod confine;
pub mod limits;
mod pool;
pub mod protocol;
mod syscalls;

pub use child::main as worker_main;
pub use confine::landlock_abi;
pub use pool::{MediaWorkers, WorkerFailure};
