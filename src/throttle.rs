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
//! Counted in the shared database (`db::throttle`), so a guesser spreading attempts over
//! several instances gets no more than from one; rows that say nothing a fresh one would not
//! are swept now and then. Times are the instances' clocks, in milliseconds.

use std::net::IpAddr;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use uuid::Uuid;

use crate::db::Db;
use crate::db::throttle::{GuessCount, JoinBudget};

const FREE_FAILURES: i64 = 5;
const WINDOW: Duration = Duration::from_secs(15 * 60);
const FIRST_LOCK: Duration = Duration::from_secs(30);
const MAX_LOCK: Duration = Duration::from_secs(15 * 60);
/// How often one instance sweeps the rows that say nothing any more.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

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

impl Purpose {
    /// As the database stores it.
    fn as_str(self) -> &'static str {
        match self {
            Purpose::OrganiserLogin => "organiser_login",
            Purpose::Join => "join",
            Purpose::Screen => "screen",
        }
    }
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

#[derive(Debug)]
pub struct Throttle {
    db: Db,
    /// When this instance last swept (ms since the epoch).
    swept_at: AtomicI64,
}

/// An attempt that has been counted. Unless `succeeded` is called, it stays a failure (so a
/// request cut off mid-check costs the guesser an attempt too).
#[must_use = "call `succeeded` when the secret was right"]
pub struct Attempt<'a> {
    throttle: &'a Throttle,
    purpose: Purpose,
    client: String,
    event: Uuid,
}

impl Attempt<'_> {
    /// The secret was right: the client's count for this event starts again. Should the
    /// database fail here, the count stays (the client was right; the next guesses are not
    /// made any freer by it).
    pub async fn succeeded(self) {
        let Attempt { throttle, purpose, client, event } = self;
        if let Err(e) = throttle.db.forget_guess_count(purpose.as_str(), &client, event).await {
            tracing::warn!(error = %e, "could not start a client's attempt count again");
        }
    }
}

/// `count` after one more failure at `now`: a count idle for the window starts again; from the
/// free failures on, a lock that doubles with each further failure.
fn one_more_failure(count: GuessCount, now: i64) -> GuessCount {
    let failures = if now - count.last_attempt_ms >= ms(WINDOW) { 1 } else { count.failures + 1 };
    let locked_until_ms = (failures >= FREE_FAILURES).then(|| {
        let doublings = (failures - FREE_FAILURES).min(10) as u32;
        now + ms((FIRST_LOCK * 2u32.pow(doublings)).min(MAX_LOCK))
    });
    GuessCount { failures, last_attempt_ms: now, locked_until_ms }
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// Whole seconds (at least one) until `ms` have passed.
fn wait_s(ms: f64) -> u64 {
    (ms / 1000.0).ceil().max(1.0) as u64
}

impl Throttle {
    pub fn new(db: Db) -> Self {
        Self { db, swept_at: AtomicI64::new(0) }
    }

    /// Counts an attempt before the secret is checked. `Ok(Err(seconds))` while this client
    /// must wait; the refused attempt is not counted (waiting is not guessing).
    pub async fn begin(&self, purpose: Purpose, client: IpAddr, event: Uuid) -> sqlx::Result<Result<Attempt<'_>, u64>> {
        let attempt = Attempt { throttle: self, purpose, client: ClientKey::of(client).0.to_string(), event };
        Ok(self.count(&attempt, false).await?.map(|()| attempt))
    }

    /// For a secret compared before anything is awaited (a join token): the attempt is counted
    /// and judged in one step, before the caller answers. `Ok(Err(seconds))` while this client
    /// must wait, right or not (a lock that let the right secret through would not stop a
    /// guesser); a wrong secret counts as a failure, the right one starts the count again.
    /// Many right ones at once (a venue's guests behind one address) are never counted as
    /// failures in progress, as `begin` counts them.
    pub async fn judge(
        &self,
        purpose: Purpose,
        client: IpAddr,
        event: Uuid,
        right: bool,
    ) -> sqlx::Result<Result<(), u64>> {
        let attempt = Attempt { throttle: self, purpose, client: ClientKey::of(client).0.to_string(), event };
        let counted = self.count(&attempt, right).await?;
        if counted.is_ok() && right {
            attempt.succeeded().await;
        }
        Ok(counted)
    }

    /// `Err(seconds)` while the attempt's client is locked out; else the attempt counted as a
    /// failure, unless it is already known to be `right`.
    async fn count(&self, attempt: &Attempt<'_>, right: bool) -> sqlx::Result<Result<(), u64>> {
        let (purpose, client, event) = (attempt.purpose.as_str(), attempt.client.as_str(), attempt.event);
        let now = now_ms();
        self.sweep_now_and_then(now).await;
        let mut tx = self.db.begin().await?;
        let count = tx.guess_count(purpose, client, event, now).await?;
        if let Some(until) = count.locked_until_ms
            && until > now
        {
            tx.rollback().await?;
            return Ok(Err(wait_s((until - now) as f64)));
        }
        if right {
            tx.rollback().await?;
            return Ok(Ok(()));
        }
        tx.set_guess_count(purpose, client, event, one_more_failure(count, now)).await?;
        tx.commit().await?;
        Ok(Ok(()))
    }

    /// Takes one join from the client's budget in this event, made when the join token was
    /// right and the guest is about to be created. `Ok(Err(seconds))` until the budget has
    /// one again; a refused join takes nothing.
    pub async fn take_join(&self, client: IpAddr, event: Uuid) -> sqlx::Result<Result<(), u64>> {
        let client = ClientKey::of(client).0.to_string();
        let now = now_ms();
        let mut tx = self.db.begin().await?;
        let budget = tx.join_budget(&client, event, JOIN_BURST, now).await?;
        let refilled = (now - budget.at_ms).max(0) as f64 / ms(JOIN_REFILL_EVERY) as f64;
        let left = (budget.left + refilled).min(JOIN_BURST);
        if left < 1.0 {
            tx.rollback().await?;
            return Ok(Err(wait_s((1.0 - left) * ms(JOIN_REFILL_EVERY) as f64)));
        }
        tx.set_join_budget(&client, event, JoinBudget { left: left - 1.0, at_ms: now }).await?;
        tx.commit().await?;
        Ok(Ok(()))
    }

    /// Forgets counts idle for the window and no longer locked, and budgets refilled to the
    /// burst, at most once every `SWEEP_EVERY` on this instance. A failed sweep is tried again
    /// at the next chance.
    async fn sweep_now_and_then(&self, now: i64) {
        let last = self.swept_at.load(Ordering::Relaxed);
        if now - last < ms(SWEEP_EVERY)
            || self.swept_at.compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed).is_err()
        {
            return;
        }
        let swept = self.db.sweep_throttle(now, now - ms(WINDOW), JOIN_BURST, ms(JOIN_REFILL_EVERY)).await;
        if let Err(e) = swept {
            tracing::warn!(error = %e, "could not sweep the throttle's old counts");
            self.swept_at.store(last, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOGIN: Purpose = Purpose::OrganiserLogin;

    /// A throttle on a fresh SQLite database (tests/throttle.rs runs both databases and
    /// several instances).
    async fn throttle() -> (Throttle, tempfile::TempDir) {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = Db::connect(None, dir.path()).await.expect("database");
        (Throttle::new(db), dir)
    }

    async fn begin(t: &Throttle, purpose: Purpose, ip: IpAddr, ev: Uuid) -> Result<Attempt<'_>, u64> {
        t.begin(purpose, ip, ev).await.expect("database")
    }

    #[tokio::test]
    async fn the_fifth_attempt_locks_the_client_out_until_one_succeeds() {
        let (t, _dir) = throttle().await;
        let (ip, ev) = (IpAddr::from([10, 0, 0, 1]), Uuid::nil());
        for _ in 0..5 {
            let _failed = begin(&t, LOGIN, ip, ev).await.expect("a free attempt");
        }
        assert!(matches!(begin(&t, LOGIN, ip, ev).await, Err(s) if (1..=30).contains(&s)));
        assert!(begin(&t, LOGIN, IpAddr::from([10, 0, 0, 2]), ev).await.is_ok(), "other clients are not locked out");
        assert!(begin(&t, Purpose::Join, ip, ev).await.is_ok(), "joining is counted apart from logging in");
        assert!(begin(&t, LOGIN, ip, Uuid::max()).await.is_ok(), "other events are counted apart");
    }

    #[tokio::test]
    async fn attempts_in_progress_count_as_failures() {
        let (t, _dir) = throttle().await;
        let (ip, ev) = (IpAddr::from([10, 0, 0, 1]), Uuid::nil());
        let mut in_progress = Vec::new();
        for _ in 0..5 {
            in_progress.push(begin(&t, LOGIN, ip, ev).await.expect("a free attempt"));
        }
        assert!(begin(&t, LOGIN, ip, ev).await.is_err(), "a sixth concurrent guess waits");
        drop(in_progress);
    }

    #[tokio::test]
    async fn a_success_starts_the_count_again() {
        let (t, _dir) = throttle().await;
        let (ip, ev) = (IpAddr::from([10, 0, 0, 1]), Uuid::nil());
        for _ in 0..4 {
            let _failed = begin(&t, LOGIN, ip, ev).await.expect("a free attempt");
        }
        begin(&t, LOGIN, ip, ev).await.expect("the fifth attempt is checked").succeeded().await;
        for _ in 0..5 {
            let _failed = begin(&t, LOGIN, ip, ev).await.expect("a fresh count");
        }
    }

    #[tokio::test]
    async fn each_failure_past_the_free_ones_doubles_the_lock() {
        let (t, _dir) = throttle().await;
        let (ip, ev) = (IpAddr::from([10, 0, 0, 1]), Uuid::nil());
        let lock = async |failures: i64| {
            let client = ClientKey::of(ip).0.to_string();
            let mut tx = t.db.begin().await.expect("tx");
            let passed = GuessCount { failures, last_attempt_ms: now_ms(), locked_until_ms: Some(0) };
            tx.guess_count(LOGIN.as_str(), &client, ev, now_ms()).await.expect("count");
            tx.set_guess_count(LOGIN.as_str(), &client, ev, passed).await.expect("count");
            tx.commit().await.expect("commit");
            let _failed = begin(&t, LOGIN, ip, ev).await.expect("the lock has passed");
            begin(&t, LOGIN, ip, ev).await.err().expect("locked again")
        };
        assert!((59..=60).contains(&lock(5).await), "the sixth failure: 60 s");
        assert!((119..=120).contains(&lock(6).await), "the seventh: 120 s");
        assert!((899..=900).contains(&lock(40).await), "at most 15 minutes");
    }

    #[tokio::test]
    async fn a_secret_compared_at_once_is_counted_and_judged_in_one_step() {
        let (t, _dir) = throttle().await;
        let (ip, ev) = (IpAddr::from([10, 0, 0, 1]), Uuid::nil());
        let judge = async |right: bool| t.judge(Purpose::Join, ip, ev, right).await.expect("database");
        for _ in 0..4 {
            assert!(judge(false).await.is_ok(), "a free failure");
        }
        assert!(judge(true).await.is_ok(), "right: the count starts again");
        for _ in 0..5 {
            assert!(judge(false).await.is_ok(), "a fresh count");
        }
        assert!(judge(true).await.is_err(), "locked out, the right secret too");
        for _ in 0..20 {
            assert!(judge(true).await.is_err(), "still locked");
        }
        assert_eq!(t.db.throttle_rows().await.expect("rows"), 1);
    }

    #[tokio::test]
    async fn an_ipv6_client_is_counted_by_its_64_prefix() {
        let (t, _dir) = throttle().await;
        let ev = Uuid::nil();
        for i in 0..5u16 {
            let ip = IpAddr::from([0x2001, 0xdb8, 0, 1, 0, 0, 0, i]);
            let _failed = begin(&t, LOGIN, ip, ev).await.expect("a free attempt");
        }
        assert!(begin(&t, LOGIN, IpAddr::from([0x2001, 0xdb8, 0, 1, 9, 9, 9, 9]), ev).await.is_err());
        assert!(begin(&t, LOGIN, IpAddr::from([0x2001, 0xdb8, 0, 2, 0, 0, 0, 1]), ev).await.is_ok());
    }

    async fn take_join(t: &Throttle, ip: IpAddr, ev: Uuid) -> Result<(), u64> {
        t.take_join(ip, ev).await.expect("database")
    }

    #[tokio::test]
    async fn one_address_joins_a_burst_then_at_the_refill_rate() {
        let (t, _dir) = throttle().await;
        let (ip, ev) = (IpAddr::from([192, 0, 2, 1]), Uuid::nil());
        for i in 0..JOIN_BURST as u32 {
            assert!(take_join(&t, ip, ev).await.is_ok(), "join {i} of the burst");
        }
        let wait = take_join(&t, ip, ev).await.expect_err("the burst is spent");
        assert!((1..=JOIN_REFILL_EVERY.as_secs()).contains(&wait), "{wait} s");
        assert!(take_join(&t, IpAddr::from([192, 0, 2, 2]), ev).await.is_ok(), "other addresses join");
        assert!(take_join(&t, ip, Uuid::max()).await.is_ok(), "other events are counted apart");
        assert!(begin(&t, Purpose::Join, ip, ev).await.is_ok(), "a spent budget is not a guess");
    }

    #[tokio::test]
    async fn a_spent_join_budget_refills_one_join_per_interval() {
        let (t, _dir) = throttle().await;
        let (ip, ev) = (IpAddr::from([192, 0, 2, 1]), Uuid::nil());
        let client = ClientKey::of(ip).0.to_string();
        let spent_long_ago = JoinBudget { left: 0.0, at_ms: now_ms() - ms(JOIN_REFILL_EVERY * 3) - 500 };
        let mut tx = t.db.begin().await.expect("tx");
        tx.join_budget(&client, ev, JOIN_BURST, now_ms()).await.expect("budget");
        tx.set_join_budget(&client, ev, spent_long_ago).await.expect("budget");
        tx.commit().await.expect("commit");
        for _ in 0..3 {
            assert!(take_join(&t, ip, ev).await.is_ok(), "refilled");
        }
        assert!(take_join(&t, ip, ev).await.is_err(), "three intervals refill three joins");
    }

    #[tokio::test]
    async fn rows_that_say_nothing_any_more_are_swept() {
        let (t, _dir) = throttle().await;
        let ev = Uuid::nil();
        let (idle, locked, recent) =
            (IpAddr::from([10, 0, 0, 1]), IpAddr::from([10, 0, 0, 2]), IpAddr::from([10, 0, 0, 3]));
        let _failed = begin(&t, LOGIN, idle, ev).await.expect("attempt");
        for _ in 0..5 {
            let _failed = begin(&t, LOGIN, locked, ev).await.expect("attempt");
        }
        take_join(&t, idle, ev).await.expect("join");
        assert_eq!(t.db.throttle_rows().await.expect("rows"), 3);
        let now = now_ms();
        let swept = t.db.sweep_throttle(now, now - ms(WINDOW), JOIN_BURST, ms(JOIN_REFILL_EVERY));
        assert_eq!(swept.await.expect("sweep"), 0, "nothing is old yet");
        // A window later: the counts' locks have passed, the budget has refilled.
        let later = now + ms(WINDOW) + 1;
        let swept = t.db.sweep_throttle(later, later - ms(WINDOW), JOIN_BURST, ms(JOIN_REFILL_EVERY));
        assert_eq!(swept.await.expect("sweep"), 3);
        let _failed = begin(&t, LOGIN, recent, ev).await.expect("attempt");
        let swept = t.db.sweep_throttle(now_ms(), now_ms() - ms(WINDOW), JOIN_BURST, ms(JOIN_REFILL_EVERY));
        assert_eq!(swept.await.expect("sweep"), 0, "a recent count stays");
        assert_eq!(t.db.throttle_rows().await.expect("rows"), 1);
    }
}
