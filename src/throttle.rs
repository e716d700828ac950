//! Throttles for what a stranger can do with an event's link:
//!
//! - **Guessing** the two secrets, an event's organiser password and its join token. Attempts
//!   are counted per (purpose, client address, event) *before* the secret is checked, and an
//!   attempt stays counted as a failure unless it succeeds, so many guesses sent at once cannot
//!   all slip past the lock. After the free attempts, further ones are refused for a while (429
//!   with Retry-After), doubling with each further failure.
//! - **Joining** with the right token: every join makes a guest with a quota of their own, so
//!   joins are budgeted per (client address, event) — a burst, refilled at a steady rate.
//!
//! Kept per instance and bounded in memory: they slow a stranger down, they are not ledgers.

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

/// Joins one client address may make in one event at once: a third of a 300-guest wedding
/// scanning the table cards behind the venue's one NAT address within the same minute.
const JOIN_BURST: f64 = 100.0;
/// And then one more every this long (30 a minute): the rest of those 300 within seven
/// minutes, while one address mints at most 100 + 1,800 guests an hour in an event.
const JOIN_REFILL_EVERY: Duration = Duration::from_secs(2);

/// Which secret is being guessed: each has its own count, so a guest mistyping a link does
/// not lock the organiser's login, nor the other way round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Purpose {
    OrganiserLogin,
    Join,
    /// Opening a screen link (`http::screens`).
    Screen,
}

/// A client as the throttle counts it. An IPv6 client is its /64: one host usually holds a
/// whole /64, and counting its addresses one by one would hand a guesser 2^64 fresh starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct ClientKey(IpAddr);

impl ClientKey {
    fn of(ip: IpAddr) -> Self {
        match ip.to_canonical() {
            IpAddr::V6(v6) => {
                let prefix = u128::from(v6) & !((1u128 << 64) - 1);
                ClientKey(IpAddr::V6(prefix.into()))
            }
            v4 => ClientKey(v4),
        }
    }
}

type Key = (Purpose, ClientKey, Uuid);

#[derive(Debug, Default)]
pub struct Throttle {
    entries: Mutex<HashMap<Key, Entry>>,
    joins: Mutex<HashMap<(ClientKey, Uuid), Budget>>,
}

/// A client's joins left in one event, as of `at`.
#[derive(Debug, Clone, Copy)]
struct Budget {
    left: f64,
    at: Instant,
}

impl Budget {
    /// What is left at `now`, refilled since `at` up to the burst.
    fn at(self, now: Instant) -> f64 {
        let refilled = now.duration_since(self.at).as_secs_f64() / JOIN_REFILL_EVERY.as_secs_f64();
        (self.left + refilled).min(JOIN_BURST)
    }
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    failures: u32,
    last_attempt: Instant,
    locked_until: Option<Instant>,
}

/// An attempt that has been counted. Unless `succeeded` is called, it stays a failure (so a
/// request cut off mid-check costs the guesser an attempt too).
#[must_use = "call `succeeded` when the secret was right"]
pub struct Attempt<'a> {
    throttle: &'a Throttle,
    key: Key,
}

impl Attempt<'_> {
    /// The secret was right: the client's count for this event starts again.
    pub fn succeeded(self) {
        self.throttle.lock().remove(&self.key);
    }
}

impl Throttle {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Entry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts an attempt before the secret is checked. `Err(seconds)` while this client must
    /// wait; the refused attempt is not counted (waiting is not guessing).
    pub fn begin(&self, purpose: Purpose, client: IpAddr, event: Uuid) -> Result<Attempt<'_>, u64> {
        let key = (purpose, ClientKey::of(client), event);
        let now = Instant::now();
        let mut entries = self.lock();
        if let Some(until) = entries.get(&key).and_then(|e| e.locked_until)
            && until > now
        {
            return Err((until - now).as_secs_f64().ceil().max(1.0) as u64);
        }
        if entries.len() >= MAX_ENTRIES && !entries.contains_key(&key) {
            make_room(&mut entries, now);
        }
        let entry = entries.entry(key).or_insert(Entry { failures: 0, last_attempt: now, locked_until: None });
        if now.duration_since(entry.last_attempt) >= WINDOW {
            *entry = Entry { failures: 0, last_attempt: now, locked_until: None };
        }
        entry.failures += 1;
        entry.last_attempt = now;
        if entry.failures >= FREE_FAILURES {
            let doublings = (entry.failures - FREE_FAILURES).min(10);
            entry.locked_until = Some(now + (FIRST_LOCK * 2u32.pow(doublings)).min(MAX_LOCK));
        }
        Ok(Attempt { throttle: self, key })
    }

    /// Takes one join from the client's budget in this event, made when the join token was
    /// right and the guest is about to be created. `Err(seconds)` until the budget has one
    /// again; a refused join takes nothing.
    pub fn take_join(&self, client: IpAddr, event: Uuid) -> Result<(), u64> {
        let key = (ClientKey::of(client), event);
        let now = Instant::now();
        let mut budgets = self.joins.lock().unwrap_or_else(|e| e.into_inner());
        if budgets.len() >= MAX_ENTRIES && !budgets.contains_key(&key) {
            make_room_for_joins(&mut budgets, now);
        }
        let budget = budgets.entry(key).or_insert(Budget { left: JOIN_BURST, at: now });
        let left = budget.at(now);
        if left < 1.0 {
            let wait = (1.0 - left) * JOIN_REFILL_EVERY.as_secs_f64();
            return Err(wait.ceil().max(1.0) as u64);
        }
        *budget = Budget { left: left - 1.0, at: now };
        Ok(())
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().len()
    }

    #[cfg(test)]
    fn join_budgets(&self) -> usize {
        self.joins.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

/// Keeps the join budgets under the cap: a budget refilled to the burst says nothing a new one
/// would not; if none is (many addresses joining at once), forget the one used longest ago.
fn make_room_for_joins(budgets: &mut HashMap<(ClientKey, Uuid), Budget>, now: Instant) {
    budgets.retain(|_, b| b.at(now) < JOIN_BURST);
    while budgets.len() >= MAX_ENTRIES {
        let Some(oldest) = budgets.iter().min_by_key(|(_, b)| b.at).map(|(k, _)| *k) else {
            break;
        };
        budgets.remove(&oldest);
    }
}

/// Keeps the map under its cap: forget what is older than the window and no longer locked; if
/// every entry is recent (many addresses guessing at once), forget the one idle longest. That
/// frees a guesser's own entry sooner than its lock would, but only for one who already
/// commands more addresses than the cap, and it keeps memory bounded whatever arrives.
fn make_room(entries: &mut HashMap<Key, Entry>, now: Instant) {
    entries.retain(|_, e| now.duration_since(e.last_attempt) < WINDOW || e.locked_until.is_some_and(|u| u > now));
    while entries.len() >= MAX_ENTRIES {
        let Some(oldest) = entries.iter().min_by_key(|(_, e)| e.last_attempt).map(|(k, _)| *k) else {
            break;
        };
        entries.remove(&oldest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOGIN: Purpose = Purpose::OrganiserLogin;

    #[test]
    fn the_fifth_attempt_locks_the_client_out_until_one_succeeds() {
        let t = Throttle::default();
        let (ip, ev) = (IpAddr::from([10, 0, 0, 1]), Uuid::nil());
        for _ in 0..5 {
            let _failed = t.begin(LOGIN, ip, ev).expect("a free attempt");
        }
        assert!(matches!(t.begin(LOGIN, ip, ev), Err(s) if (1..=30).contains(&s)));
        assert!(t.begin(LOGIN, IpAddr::from([10, 0, 0, 2]), ev).is_ok(), "other clients are not locked out");
        assert!(t.begin(Purpose::Join, ip, ev).is_ok(), "joining is counted apart from logging in");
        assert!(t.begin(LOGIN, ip, Uuid::max()).is_ok(), "other events are counted apart");
    }

    #[test]
    fn attempts_in_progress_count_as_failures() {
        let t = Throttle::default();
        let (ip, ev) = (IpAddr::from([10, 0, 0, 1]), Uuid::nil());
        let in_progress: Vec<_> = (0..5).map(|_| t.begin(LOGIN, ip, ev).expect("a free attempt")).collect();
        assert!(t.begin(LOGIN, ip, ev).is_err(), "a sixth concurrent guess waits");
        drop(in_progress);
    }

    #[test]
    fn a_success_starts_the_count_again() {
        let t = Throttle::default();
        let (ip, ev) = (IpAddr::from([10, 0, 0, 1]), Uuid::nil());
        for _ in 0..4 {
            let _failed = t.begin(LOGIN, ip, ev).expect("a free attempt");
        }
        t.begin(LOGIN, ip, ev).expect("the fifth attempt is checked").succeeded();
        for _ in 0..5 {
            let _failed = t.begin(LOGIN, ip, ev).expect("a fresh count");
        }
    }

    #[test]
    fn an_ipv6_client_is_counted_by_its_64_prefix() {
        let t = Throttle::default();
        let ev = Uuid::nil();
        for i in 0..5u16 {
            let ip = IpAddr::from([0x2001, 0xdb8, 0, 1, 0, 0, 0, i]);
            let _failed = t.begin(LOGIN, ip, ev).expect("a free attempt");
        }
        assert!(t.begin(LOGIN, IpAddr::from([0x2001, 0xdb8, 0, 1, 9, 9, 9, 9]), ev).is_err());
        assert!(t.begin(LOGIN, IpAddr::from([0x2001, 0xdb8, 0, 2, 0, 0, 0, 1]), ev).is_ok());
    }

    #[test]
    fn one_address_joins_a_burst_then_at_the_refill_rate() {
        let t = Throttle::default();
        let (ip, ev) = (IpAddr::from([192, 0, 2, 1]), Uuid::nil());
        for i in 0..JOIN_BURST as u32 {
            assert!(t.take_join(ip, ev).is_ok(), "join {i} of the burst");
        }
        let wait = t.take_join(ip, ev).expect_err("the burst is spent");
        assert!((1..=JOIN_REFILL_EVERY.as_secs()).contains(&wait), "{wait} s");
        assert!(t.take_join(IpAddr::from([192, 0, 2, 2]), ev).is_ok(), "other addresses join");
        assert!(t.take_join(ip, Uuid::max()).is_ok(), "other events are counted apart");
        assert!(t.begin(Purpose::Join, ip, ev).is_ok(), "a spent budget is not a guess");
    }

    #[test]
    fn a_spent_join_budget_refills_one_join_per_interval() {
        let t = Throttle::default();
        let (ip, ev) = (IpAddr::from([192, 0, 2, 1]), Uuid::nil());
        let spent_long_ago = Instant::now() - JOIN_REFILL_EVERY * 3;
        t.joins.lock().expect("lock").insert((ClientKey::of(ip), ev), Budget { left: 0.0, at: spent_long_ago });
        for _ in 0..3 {
            assert!(t.take_join(ip, ev).is_ok(), "refilled");
        }
        assert!(t.take_join(ip, ev).is_err(), "three intervals refill three joins");
    }

    #[test]
    fn the_join_budgets_never_grow_beyond_their_cap() {
        let t = Throttle::default();
        for i in 0..(MAX_ENTRIES as u32 + 500) {
            t.take_join(IpAddr::from(i.to_be_bytes()), Uuid::nil()).expect("a fresh budget");
        }
        assert!(t.join_budgets() <= MAX_ENTRIES, "{} budgets", t.join_budgets());
    }

    #[test]
    fn the_map_never_grows_beyond_its_cap() {
        let t = Throttle::default();
        for i in 0..(MAX_ENTRIES as u32 + 500) {
            let _failed = t.begin(LOGIN, IpAddr::from(i.to_be_bytes()), Uuid::nil()).expect("a free attempt");
        }
        assert!(t.len() <= MAX_ENTRIES, "{} entries", t.len());
    }
}
