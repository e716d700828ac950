//! The confinement of a media worker, applied by the worker to itself: first what holds for
//! every worker (`early`), then, once its job is known and before the job's first byte is
//! read, what the job may use (`lock_down`). Each step is one the kernel enforces; none can be
//! undone by the code that runs after it.

use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus,
    Scope, path_beneath_rules,
};

use super::limits::Limits;
use super::syscalls::{self, Profile};

type Result<T> = std::result::Result<T, String>;

/// The nice value of workers, as the derivative threads had when decoding ran in the server.
const WORKER_NICE: i32 = 10;

/// What a job may touch in the file system.
pub enum Files<'a> {
    /// Nothing: a derive job reads its bytes from stdin and writes to stdout.
    Nothing,
    /// Run `program` (ffmpeg) on `input`: read the one file, the program and its libraries.
    Exec { program: &'a Path, input: &'a Path },
}

/// In a fresh worker, before it reads its job: no capabilities (a server run as root starts
/// its workers as root), no new privileges, no core dumps, not traceable, no files written,
/// no descriptors but stdin, stdout and stderr, a low CPU priority, and the default action for
/// faults. First of all it asks to be killed when its server ends (`PR_SET_PDEATHSIG`); a
/// worker whose server died before that finds another parent, and ends here.
pub fn early(server: u32) -> Result<()> {
    // SAFETY: getppid reads no memory; prctl, setrlimit and signal are given plain integers
    // and pointers to local values, and change only this process (which has one thread).
    unsafe {
        check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0), "pdeathsig")?;
        if libc::getppid() as u32 != server {
            return Err("the server is gone".into());
        }
        check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")?;
        check(libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0), "dumpable")?;
        for (resource, value) in [(libc::RLIMIT_CORE, 0), (libc::RLIMIT_FSIZE, 0), (libc::RLIMIT_NOFILE, 64)] {
            let limit = libc::rlimit { rlim_cur: value, rlim_max: value };
            check(libc::setrlimit(resource, &limit), "setrlimit")?;
        }
        // close_range(3, ~0, 0): descriptors the server might have leaked despite CLOEXEC.
        check(libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) as i32, "close_range")?;
        // Guests' requests first: a worker gets about a tenth of the CPU a request thread gets
        // under contention, and all of it when the machine is otherwise idle.
        check(libc::setpriority(libc::PRIO_PROCESS, 0, WORKER_NICE), "setpriority")?;
        // Rust's own handlers (which print "stack overflow") go: a fault ends the worker at
        // once, with the signal that says what happened.
        for signal in [libc::SIGSEGV, libc::SIGBUS] {
            if libc::signal(signal, libc::SIG_DFL) == libc::SIG_ERR {
                return Err(format!("signal {signal}: {}", std::io::Error::last_os_error()));
            }
        }
    }
    drop_capabilities()
}

/// Once the job is known: its memory and CPU time, the files it may touch, no network, and
/// the system calls decoding needs. After this the worker reads the guest's bytes.
pub fn lock_down(limits: &Limits, files: Files<'_>) -> Result<()> {
    let profile = match files {
        Files::Nothing => Profile::Decode,
        Files::Exec { .. } => Profile::Exec,
    };
    // The address space is counted from what the worker holds now (its binary and libraries);
    // an exec starts over, so ffmpeg's limit is the job's alone.
    let base = match files {
        Files::Nothing => address_space()?,
        Files::Exec { .. } => 0,
    };
    let memory = base.saturating_add(limits.memory_bytes);
    // SAFETY: setrlimit reads the local value it is given.
    unsafe {
        let address_space = libc::rlimit { rlim_cur: memory, rlim_max: memory };
        check(libc::setrlimit(libc::RLIMIT_AS, &address_space), "RLIMIT_AS")?;
        // SIGXCPU at the soft limit, SIGKILL a second later.
        let cpu = libc::rlimit { rlim_cur: limits.cpu_seconds, rlim_max: limits.cpu_seconds + 1 };
        check(libc::setrlimit(libc::RLIMIT_CPU, &cpu), "RLIMIT_CPU")?;
    }
    landlock(&files)?;
    syscalls::install(profile)
}

/// The worker's address space now, in bytes (`/proc/self/statm`'s first field, in pages).
fn address_space() -> Result<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").map_err(|e| format!("statm: {e}"))?;
    let pages: u64 = statm.split_whitespace().next().and_then(|p| p.parse().ok()).ok_or("statm unreadable")?;
    // SAFETY: sysconf reads no memory of ours.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Ok(pages.saturating_mul(u64::try_from(page).unwrap_or(4096)))
}

/// Landlock: the file accesses the job needs and nothing else, no TCP, no signals to processes
/// outside. On a kernel without landlock (before 5.13) the seccomp filter and the empty
/// environment still hold; the server says once at start which it has (`landlock_abi`).
fn landlock(files: &Files<'_>) -> Result<()> {
    let abi = ABI::V6;
    let ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(abi))
        .and_then(|r| r.handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp))
        .and_then(|r| r.scope(Scope::AbstractUnixSocket | Scope::Signal))
        .and_then(|r| r.create())
        .map_err(|e| format!("landlock: {e}"))?;
    let ruleset = match files {
        Files::Nothing => ruleset,
        Files::Exec { program, input } => {
            let read = AccessFs::from_read(abi);
            let system: Vec<PathBuf> = ["/usr", "/lib", "/lib64", "/etc", "/proc/self", "/sys/devices/system/cpu"]
                .into_iter()
                .map(PathBuf::from)
                .collect();
            ruleset
                .add_rules(path_beneath_rules(&system, read & !AccessFs::Execute))
                .and_then(|r| r.add_rules(path_beneath_rules([input], AccessFs::ReadFile)))
                // The program, and the dynamic loader the kernel starts it with.
                .and_then(|r| r.add_rules(path_beneath_rules([program], AccessFs::Execute | AccessFs::ReadFile)))
                .and_then(|r| r.add_rules(path_beneath_rules(["/usr/lib", "/lib", "/lib64"], AccessFs::Execute)))
                .map_err(|e| format!("landlock rules: {e}"))?
        }
    };
    let status = ruleset.restrict_self().map_err(|e| format!("landlock: {e}"))?;
    if status.ruleset == RulesetStatus::NotEnforced {
        tracing::debug!("landlock is not available on this kernel");
    }
    Ok(())
}

/// The landlock ABI this kernel has (0: none), for the server's start-up line.
pub fn landlock_abi() -> i64 {
    const LANDLOCK_CREATE_RULESET_VERSION: u32 = 1;
    // SAFETY: with a null attribute pointer and size 0 the call reads no memory; it returns the
    // ABI version or -1.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    abi.max(0)
}

/// Empties the capability bounding set and the process's capabilities (a no-op for a server
/// that does not run as root), so neither this worker nor a program it executes holds any.
fn drop_capabilities() -> Result<()> {
    // SAFETY: geteuid reads nothing; prctl is given integers; capset is given pointers to the
    // local header and data it reads.
    unsafe {
        if libc::geteuid() != 0 {
            return Ok(());
        }
        for cap in 0..=63 {
            // EINVAL past the kernel's last capability: the loop is done.
            if libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 {
                break;
            }
        }
        #[repr(C)]
        struct Header {
            version: u32,
            pid: i32,
        }
        #[repr(C)]
        #[derive(Clone, Copy)]
        struct Data {
            effective: u32,
            permitted: u32,
            inheritable: u32,
        }
        const VERSION_3: u32 = 0x2008_0522;
        let header = Header { version: VERSION_3, pid: 0 };
        let data = [Data { effective: 0, permitted: 0, inheritable: 0 }; 2];
        check(libc::syscall(libc::SYS_capset, &header, data.as_ptr()) as i32, "capset")
    }
}

fn check(result: i32, what: &str) -> Result<()> {
    match result {
        0 => Ok(()),
        _ => Err(format!("{what}: {}", std::io::Error::last_os_error())),
    }
}
