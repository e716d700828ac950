//! How a holder keeps a lease while it works: renewed every third of its length, so that two
//! renewals may fail in passing before it runs out, and the wait ended as soon as a renewal finds
//! the lease lost. Written once for the derivative jobs and for a resumable upload's completion;
//! the statements (claim, renew, fenced write, release, and the job queues' claim) are written
//! once too, in `db::lease`, for every leased table.

use std::future::Future;
use std::time::Duration;

/// What one renewal found.
pub enum Renewed {
    /// Still this holder's.
    Held,
    /// Taken over or gone: the holder's final write will be fenced out.
    Lost,
}

/// How often a lease of `length` is renewed.
pub fn renew_every(length: Duration) -> Duration {
    length / 3
}

/// Renews a lease of `length` (`renew`) until a renewal finds it lost; returns then, never before.
/// A renewal that fails (the database is away) is logged as `what` and tried again next time.
pub async fn keep<F, R, E>(length: Duration, what: &str, mut renew: F)
where
    F: FnMut() -> R,
    R: Future<Output = Result<Renewed, E>>,
    E: std::fmt::Display,
{
    loop {
        tokio::time::sleep(renew_every(length)).await;
        match renew().await {
            Ok(Renewed::Held) => {}
            Ok(Renewed::Lost) => return,
            Err(e) => tracing::warn!(error = %e, "could not renew {what}'s lease"),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    /// Renewals every third of the lease until one finds it lost; failures in between do not end it.
    #[tokio::test]
    async fn a_lease_is_kept_until_a_renewal_finds_it_lost() {
        let calls = Arc::new(AtomicU32::new(0));
        let started = tokio::time::Instant::now();
        let counted = Arc::clone(&calls);
        keep(Duration::from_millis(300), "a test job", move || {
            let call = counted.fetch_add(1, Ordering::SeqCst) + 1;
            async move {
                match call {
                    1 | 3 => Ok(Renewed::Held),
                    2 => Err("the database is away"),
                    _ => Ok(Renewed::Lost),
                }
            }
        })
        .await;
        assert_eq!(calls.load(Ordering::SeqCst), 4, "held, failed, held, lost");
        let elapsed = started.elapsed();
        assert!(elapsed >= Duration::from_millis(400), "every 100 ms of a 300 ms lease: {elapsed:?}");
    }
}
