//! How the process asks glibc's allocator to behave.
//!
//! Uploads pass through large short-lived buffers: each connection's HTTP read buffer (hyper
//! grows it up to about 408 KiB), the multipart reader's buffer, the batches written to storage.
//! glibc serves blocks above its mmap threshold with their own mapping and returns them on free;
//! by default it raises that threshold to the size of every such block freed, after which large
//! buffers come from the heap, where freed space stays in the process. So the threshold is fixed,
//! at 512 KiB: just above the read buffers, which then come from the heap and are reused without
//! page faults, while anything larger keeps its own mapping. Measured with
//! examples/bench_upload.rs (docs/benchmarks.md): at 128 KiB every read buffer was a fresh
//! mapping, and page faults and unmapping cost about 4 ms of server CPU per 5 MB upload
//! (15–18 ms against 11.7–13 ms at 512 KiB); peak RSS with 32 concurrent uploads is 78–80 MiB at
//! 512 KiB against 95–99 MiB with glibc's moving threshold and 85–95 MiB at 32 MiB.

/// The fixed mmap threshold (see the module documentation).
const MMAP_THRESHOLD: i32 = 512 * 1024;

/// Call once at start, before the server allocates.
pub fn return_large_buffers_to_the_os() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // An operator's own setting, through glibc's variables, stands.
        let set_by_operator = std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_some()
            || std::env::var("GLIBC_TUNABLES").is_ok_and(|t| t.contains("mmap_threshold"));
        if set_by_operator {
            return;
        }
        // SAFETY: mallopt only sets the allocator's parameters, here one threshold.
        let applied = unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD) };
        if applied != 1 {
            tracing::warn!("could not fix the allocator's mmap threshold");
        }
    }
}
