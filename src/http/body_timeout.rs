//! Cutting what makes no progress: `Stall`, a clock that runs only while Confetti waits on a
//! peer, and `IdleTimeoutBody`, a request body that fails once no frame arrived for
//! `--body-idle-timeout-s`. A phone on a bad network is slow, not silent: every frame resets
//! the clock, so only a body that stops altogether is cut.

use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio::time::{Instant, Sleep};

/// Measures how long one wait on the peer has lasted. Started when a poll finds nothing to
/// do, ended by progress, so time the server itself spends elsewhere (a handler busy with the
/// database before it reads the body) never counts against the peer.
#[derive(Debug)]
pub struct Stall {
    limit: Duration,
    /// When the current wait began; `None` right after progress.
    waiting_since: Option<Instant>,
    /// Created on the first wait: most bodies end before anyone waits on them. Its deadline
    /// may be older than the current wait's; it is then moved on when it fires, so a busy
    /// transfer costs a clock reading per wait, not a timer update.
    sleep: Option<Pin<Box<Sleep>>>,
}

impl Stall {
    pub fn new(limit: Duration) -> Self {
        Self { limit, waiting_since: None, sleep: None }
    }

    /// The peer made progress: the next wait starts a new clock.
    pub fn progress(&mut self) {
        self.waiting_since = None;
    }

    /// Call when the inner poll was pending. Ready once this wait has lasted `limit`; the
    /// task is woken then, so a silent peer cannot keep the wait open.
    pub fn poll_expired(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let deadline = *self.waiting_since.get_or_insert_with(Instant::now) + self.limit;
        let sleep = self.sleep.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        loop {
            ready!(sleep.as_mut().poll(cx));
            // Every earlier wait began no later than this one: a sleep that fired before this
            // wait's deadline belonged to one of them.
            if sleep.deadline() >= deadline {
                return Poll::Ready(());
            }
            sleep.as_mut().reset(deadline);
        }
    }

    pub fn limit(&self) -> Duration {
        self.limit
    }
}

/// The error a request body ends with when its sender went silent.
#[derive(Debug)]
pub struct BodyStalled(pub Duration);

impl std::fmt::Display for BodyStalled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "no part of the request body arrived for {} s", self.0.as_secs())
    }
}

impl std::error::Error for BodyStalled {}

/// A request body that fails with `BodyStalled` when no frame arrived within the limit.
#[derive(Debug)]
pub struct IdleTimeoutBody<B> {
    inner: B,
    stall: Stall,
    failed: bool,
}

impl<B> IdleTimeoutBody<B> {
    pub fn new(inner: B, limit: Duration) -> Self {
        Self { inner, stall: Stall::new(limit), failed: false }
    }
}

impl<B> Body for IdleTimeoutBody<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<axum::BoxError>,
{
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        if this.failed {
            return Poll::Ready(None);
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                this.stall.progress();
                Poll::Ready(frame.map(|f| f.map_err(Into::into)))
            }
            Poll::Pending => {
                ready!(this.stall.poll_expired(cx));
                this.failed = true;
                tracing::info!(after_s = this.stall.limit().as_secs(), "a request body stalled: cut");
                Poll::Ready(Some(Err(Box::new(BodyStalled(this.stall.limit())))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.failed || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use futures_util::StreamExt;
    use http_body::Frame;

    use super::*;

    /// A body that yields one frame, then waits forever.
    struct OneThenSilence(bool);

    impl Body for OneThenSilence {
        type Data = Bytes;
        type Error = Infallible;
        fn poll_frame(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
            if std::mem::replace(&mut self.0, true) {
                Poll::Pending
            } else {
                Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b"first")))))
            }
        }
    }

    #[tokio::test]
    async fn a_body_that_goes_silent_fails_after_the_limit_and_then_ends() {
        let body = IdleTimeoutBody::new(OneThenSilence(false), Duration::from_millis(300));
        let mut stream = axum::body::Body::new(body).into_data_stream();
        assert_eq!(stream.next().await.and_then(Result::ok), Some(Bytes::from_static(b"first")));
        let started = Instant::now();
        let error = stream.next().await.expect("an error").expect_err("the stall");
        let waited = started.elapsed();
        assert!(waited >= Duration::from_millis(290) && waited < Duration::from_secs(2), "{waited:?}");
        assert!(error.to_string().contains("no part of the request body arrived"), "{error}");
        assert!(stream.next().await.is_none());
    }

    /// A body that sends a frame every `every`, `left` more times.
    struct Trickle {
        every: Duration,
        next: Pin<Box<Sleep>>,
        left: usize,
    }

    impl Body for Trickle {
        type Data = Bytes;
        type Error = Infallible;
        fn poll_frame(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
            if self.left == 0 {
                return Poll::Ready(None);
            }
            ready!(self.next.as_mut().poll(cx));
            let every = self.every;
            self.next.as_mut().reset(Instant::now() + every);
            self.left -= 1;
            Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b"slow")))))
        }
    }

    #[tokio::test]
    async fn a_slow_body_that_keeps_sending_is_never_cut() {
        let every = Duration::from_millis(150);
        let trickle = Trickle { every, next: Box::pin(tokio::time::sleep(every)), left: 8 };
        // Eight frames over 1.2 s, each within the 400 ms limit of the one before.
        let body = IdleTimeoutBody::new(trickle, Duration::from_millis(400));
        let frames: Vec<_> = axum::body::Body::new(body).into_data_stream().collect().await;
        assert_eq!(frames.len(), 8);
        assert!(frames.iter().all(Result::is_ok));
    }
}
