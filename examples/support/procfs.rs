use std::io::Write;

use anyhow::{Context, Result};

/// A process's resident memory now and at its peak, from `/proc/<pid>/status`.
pub struct ProcStatus {
    pub rss_kib: u64,
    pub hwm_kib: u64,
}

impl ProcStatus {
    /// The status of process `pid`.
    pub fn of(pid: u32) -> Result<Self> {
        Self::read(&format!("/proc/{pid}/status"))
    }

    /// The status of this process.
    pub fn own() -> Result<Self> {
        Self::read("/proc/self/status")
    }

    fn read(path: &str) -> Result<Self> {
        let status = std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?;
        let field = |name: &str| kib_field(&status, name).with_context(|| format!("no {name} in {path}"));
        Ok(Self { rss_kib: field("VmRSS:")?, hwm_kib: field("VmHWM:")? })
    }
}

/// A `Name:   1234 kB` line of a `/proc` file, in KiB.
fn kib_field(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|l| l.strip_prefix(name)).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

pub fn kib_to_mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// Resets the peak RSS (`VmHWM`) to the current RSS (Linux ≥ 4.0); false when refused.
pub fn reset_peak(pid: u32) -> bool {
    std::fs::OpenOptions::new()
        .write(true)
        .open(format!("/proc/{pid}/clear_refs"))
        .and_then(|mut f| f.write_all(b"5"))
        .is_ok()
}

/// User + system CPU time of a process (all its threads), in milliseconds.
pub fn cpu_ms(pid: u32) -> Result<f64> {
    let stat =
        std::fs::read_to_string(format!("/proc/{pid}/stat")).with_context(|| format!("reading /proc/{pid}/stat"))?;
    // Fields after the command name (which may hold spaces) start at field 3, `state`;
    // utime and stime are fields 14 and 15.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).context("malformed /proc/<pid>/stat")?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| -> Result<f64> {
        fields.get(i).and_then(|v| v.parse::<f64>().ok()).context("malformed /proc/<pid>/stat")
    };
    // USER_HZ is 100 on every Linux architecture that matters here.
    Ok((ticks(14 - 3)? + ticks(15 - 3)?) * 10.0)
}

/// Whether process `pid` is gone or a zombie (exited, not yet reaped).
pub fn exited(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| s.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')))
        .unwrap_or(true)
}

/// System-wide CPU time counters from the first line of /proc/stat.
pub struct MachineCpu {
    busy: u64,
    total: u64,
}

impl MachineCpu {
    pub fn read() -> Self {
        let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        let values: Vec<u64> =
            stat.lines().next().unwrap_or_default().split_whitespace().skip(1).filter_map(|v| v.parse().ok()).collect();
        let total: u64 = values.iter().take(8).sum();
        // idle and iowait are the 4th and 5th values.
        let idle = values.get(3).copied().unwrap_or(0) + values.get(4).copied().unwrap_or(0);
        Self { busy: total.saturating_sub(idle), total }
    }

    /// Share of all cores' time that was not idle since `before`.
    pub fn busy_since(&self, before: &MachineCpu) -> f64 {
        let total = self.total.saturating_sub(before.total);
        if total == 0 { 0.0 } else { self.busy.saturating_sub(before.busy) as f64 / total as f64 }
    }
}

/// The machine a figure was taken on, for the report.
pub struct Machine {
    pub cores: usize,
    pub cpu: String,
    pub mem_mib: u64,
    pub loadavg: String,
}

impl Machine {
    pub fn read() -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name"))
            .map(|v| v.trim_start_matches([' ', '\t', ':']).trim().to_owned())
            .unwrap_or_else(|| "unknown".into());
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let mem_mib = kib_field(&meminfo, "MemTotal:").map_or(0, |kib| kib / 1024);
        let loadavg = std::fs::read_to_string("/proc/loadavg")
            .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
            .unwrap_or_default();
        Self { cores: std::thread::available_parallelism().map_or(0, |n| n.get()), cpu, mem_mib, loadavg }
    }
}
