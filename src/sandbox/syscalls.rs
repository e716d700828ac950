//! The seccomp filters of media workers: the system calls decoding needs, and nothing that
//! reaches outside the process (no sockets, no ptrace, no mounts, no new processes but threads,
//! no changes to its limits). A call outside the list kills the worker (`SIGSYS`), which the
//! pool reports as such. The lists were taken from `strace -f` of real jobs (JPEG, PNG, GIF,
//! WebP and HEIC photos with their AVIF thumbs; ffmpeg on MP4, MOV and WebM) and are tested by
//! the same kinds of jobs in the test suite. A decode job, seen after its filter went in, calls
//! brk, mmap, munmap, mremap, madvise, mprotect, futex, read, write, clone (a thread of
//! libheif's), rseq, set_robust_list, the signal calls and exit.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
};

/// Which list a worker gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    /// Decoding and encoding in the worker itself (Rust, libjpeg-turbo, libheif, aom, libwebp).
    Decode,
    /// Executing `ffmpeg`, which then reads a file and writes a PNG to its stdout.
    Exec,
}

/// Memory, threads, time, signals for the process itself: what any decoder needs.
const DECODE: &[i64] = &[
    libc::SYS_read,
    libc::SYS_write,
    libc::SYS_close,
    libc::SYS_mmap,
    libc::SYS_munmap,
    libc::SYS_mremap,
    libc::SYS_mprotect,
    libc::SYS_madvise,
    libc::SYS_brk,
    libc::SYS_futex,
    libc::SYS_set_robust_list,
    libc::SYS_rseq,
    libc::SYS_rt_sigreturn,
    libc::SYS_rt_sigaction,
    libc::SYS_rt_sigprocmask,
    libc::SYS_sigaltstack,
    libc::SYS_exit,
    libc::SYS_exit_group,
    libc::SYS_getrandom,
    libc::SYS_clock_gettime,
    libc::SYS_nanosleep,
    libc::SYS_clock_nanosleep,
    libc::SYS_sched_yield,
    libc::SYS_sched_getaffinity,
    libc::SYS_getpid,
    libc::SYS_gettid,
    // abort() raises SIGABRT at itself: a failed allocation ends the job, visibly.
    libc::SYS_tgkill,
    // Opening files is left to landlock, which lets a decode job open none (a library that
    // looks for a file, e.g. the CPU count under /sys, gets EACCES and goes on).
    libc::SYS_openat,
];

/// What `execve` and ffmpeg's start add: the loader maps the program and its libraries, the
/// demuxer reads and seeks its one file.
const EXEC: &[i64] = &[
    libc::SYS_execve,
    libc::SYS_fstat,
    libc::SYS_newfstatat,
    libc::SYS_statx,
    libc::SYS_lseek,
    libc::SYS_pread64,
    libc::SYS_readv,
    libc::SYS_writev,
    libc::SYS_poll,
    libc::SYS_ppoll,
    libc::SYS_arch_prctl,
    libc::SYS_set_tid_address,
    libc::SYS_access,
    libc::SYS_faccessat,
    libc::SYS_faccessat2,
    libc::SYS_readlink,
    libc::SYS_readlinkat,
    libc::SYS_getdents64,
    libc::SYS_getcwd,
    libc::SYS_uname,
    libc::SYS_getuid,
    libc::SYS_geteuid,
    libc::SYS_getgid,
    libc::SYS_getegid,
    libc::SYS_sysinfo,
    libc::SYS_fcntl,
    libc::SYS_dup,
    libc::SYS_dup2,
    libc::SYS_dup3,
    libc::SYS_pipe2,
    libc::SYS_mincore,
    libc::SYS_get_mempolicy,
    libc::SYS_sched_getparam,
    libc::SYS_sched_getscheduler,
    libc::SYS_sched_setaffinity,
    libc::SYS_getrusage,
    libc::SYS_times,
    libc::SYS_pselect6,
    libc::SYS_select,
    libc::SYS_eventfd2,
    // Seen at ffmpeg's start (libselinux, libnuma, a crypto library's locked page).
    libc::SYS_statfs,
    libc::SYS_set_mempolicy,
    libc::SYS_mlock,
];

/// Installs the filter of `profile` on this process (all its threads; the worker has one).
pub fn install(profile: Profile) -> Result<(), String> {
    let errno = filter(
        Vec::from([(libc::SYS_clone3, Vec::new())]),
        SeccompAction::Errno(libc::ENOSYS as u32),
        SeccompAction::Allow,
    )?;
    let allowed = filter(rules(profile)?, SeccompAction::Allow, SeccompAction::KillProcess)?;
    // Of two filters' verdicts the kernel takes the stricter, so clone3 gets ENOSYS (glibc then
    // falls back to clone, which is checked) and the rest what the list says. The list goes
    // last: installing a filter calls prctl, which the list does not allow.
    for program in [errno, allowed] {
        seccompiler::apply_filter_all_threads(&program).map_err(|e| format!("seccomp: {e}"))?;
    }
    Ok(())
}

/// The allowlist of `profile`, with the calls allowed only with some arguments.
fn rules(profile: Profile) -> Result<Vec<(i64, Vec<SeccompRule>)>, String> {
    let lists: &[&[i64]] = match profile {
        Profile::Decode => &[DECODE],
        Profile::Exec => &[DECODE, EXEC],
    };
    let mut rules: Vec<(i64, Vec<SeccompRule>)> =
        lists.iter().flat_map(|list| list.iter()).map(|&call| (call, Vec::new())).collect();
    let rule = |conditions: Vec<SeccompCondition>| SeccompRule::new(conditions).map_err(|e| e.to_string());
    let arg = |index: u8, op: SeccompCmpOp, value: u64| {
        SeccompCondition::new(index, SeccompCmpArgLen::Qword, op, value).map_err(|e| e.to_string())
    };
    // clone3 is answered ENOSYS by the first filter; it must pass this one.
    rules.push((libc::SYS_clone3, Vec::new()));
    // Threads only: a clone without CLONE_THREAD would be a new process.
    let thread = libc::CLONE_THREAD as u64;
    rules.push((libc::SYS_clone, vec![rule(vec![arg(0, SeccompCmpOp::MaskedEq(thread), thread)?])?]));
    // Naming a thread and reading the capability bounding set (libcap, linked into ffmpeg,
    // does at start), nothing else prctl does.
    let prctl = [libc::PR_SET_NAME, libc::PR_CAPBSET_READ];
    let prctl: Result<Vec<_>, String> =
        prctl.into_iter().map(|op| rule(vec![arg(0, SeccompCmpOp::Eq, op as u64)?])).collect();
    rules.push((libc::SYS_prctl, prctl?));
    // Reading a limit (glibc sizes thread stacks from it), never setting one.
    rules.push((libc::SYS_prlimit64, vec![rule(vec![arg(2, SeccompCmpOp::Eq, 0)?])?]));
    // Terminal queries (`isatty` on stderr), no other ioctl.
    if profile == Profile::Exec {
        rules.push((libc::SYS_ioctl, vec![rule(vec![arg(1, SeccompCmpOp::Eq, libc::TCGETS)?])?]));
    }
    Ok(rules)
}

fn filter(
    rules: Vec<(i64, Vec<SeccompRule>)>,
    on_match: SeccompAction,
    otherwise: SeccompAction,
) -> Result<BpfProgram, String> {
    let arch =
        std::env::consts::ARCH.try_into().map_err(|e| format!("seccomp on {}: {e:?}", std::env::consts::ARCH))?;
    let rules: BTreeMap<i64, Vec<SeccompRule>> = rules.into_iter().collect();
    let filter = SeccompFilter::new(rules, otherwise, on_match, arch).map_err(|e| format!("seccomp filter: {e}"))?;
    filter.try_into().map_err(|e: seccompiler::BackendError| format!("seccomp program: {e}"))
}
