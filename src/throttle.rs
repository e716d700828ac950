//! Organiser login throttling: after repeated wrong passwords from one client address for
//! one event, further attempts are refused for a while (429 with Retry-After), doubling
//! with each further failure. Kept per instance: it slows guessing, it is not a ledger.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use uuid::Uuid;

const FREE_FAILURES: u32 = 5;
const WINDOW: Duration = Duration::from_secs(15 * 60);
const FIRST_LOCK: Duration = Duration::from_secs(30);
const MAX_LOCK: Duration = Duration::from_secs(15 * 60);
const MAX_ENTRIES: usize = 10_000;

#[derive(Debug, Default)]
pub struct LoginThrottle {
    entries: Mutex<HashMap<(IpAddr, Uuid), Entry>>,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    failures: u32,
    last_failure: Instant,
    locked_until: Option<Instant>,
}

impl LoginThrottle {
    /// `Err(seconds)` while this client must wait before trying again.
    pub fn check(&self, client: IpAddr, event: Uuid) -> Result<(), u64> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        match entries.get(&(client, event)).and_then(|e| e.locked_until) {
            Some(until) if until > Instant::now() => Err((until - Instant::now()).as_secs().max(1)),
            _ => Ok(()),
        }
    }

    pub fn failed(&self, client: IpAddr, event: Uuid) {
        let now = Instant::now();
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= MAX_ENTRIES {
            entries.retain(|_, e| now.duration_since(e.last_failure) < WINDOW);
        }
        let entry =
            entries.entry((client, event)).or_insert(Entry { failures: 0, last_failure: now, locked_until: None });
        if now.duration_since(entry.last_failure) >= WINDOW {
            *entry = Entry { failures: 0, last_failure: now, locked_until: None };
        }
        entry.failures += 1;
        entry.last_failure = now;
        if entry.failures >= FREE_FAILURES {
            let doublings = (entry.failures - FREE_FAILURES).min(10);
            entry.locked_until = Some(now + (FIRST_LOCK * 2u32.pow(doublings)).min(MAX_LOCK));
        }
    }

    pub fn succeeded(&self, client: IpAddr, event: Uuid) {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).remove(&(client, event));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fifth_failure_locks_the_client_out() {
        let t = LoginThrottle::default();
        let (ip, ev) = (IpAddr::from([10, 0, 0, 1]), Uuid::nil());
        for _ in 0..4 {
            t.failed(ip, ev);
            assert!(t.check(ip, ev).is_ok());
        }
        t.failed(ip, ev);
        assert!(matches!(t.check(ip, ev), Err(s) if (1..=30).contains(&s)));
        assert!(t.check(IpAddr::from([10, 0, 0, 2]), ev).is_ok(), "other clients are not locked out");
        t.succeeded(ip, ev);
        assert!(t.check(ip, ev).is_ok());
    }
}
