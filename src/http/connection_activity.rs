//! What one connection is doing, for its deadlines: requests in flight, since when it has been
//! idle, since when it has been sending the head of a next request. `TrackedStream` (the
//! socket) and `TrackedBody` (each response body) report to it; `connections` reads the
//! deadline from it. Shared by the tasks of one connection (HTTP/2 runs each request on its
//! own task), hence atomics.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;
use tokio::time::Instant;

use super::body_timeout::Stall;

/// How long a connection may stay in each state.
#[derive(Clone, Copy, Debug)]
pub struct Timeouts {
    /// From the first byte of a request's head (or from accepting the connection) to its end.
    pub header: Duration,
    /// Between requests on a kept-alive connection.
    pub idle: Duration,
    /// A request body, or a response the client does not read, without progress.
    pub body_idle: Duration,
}

const NONE: u64 = u64::MAX;

#[derive(Debug)]
pub struct Activity {
    timeouts: Timeouts,
    start: Instant,
    in_flight: AtomicUsize,
    /// Milliseconds after `start`; meaningful while nothing is in flight.
    idle_since: AtomicU64,
    /// Milliseconds after `start` of the first byte read while idle, or `NONE`.
    head_since: AtomicU64,
    served_any: AtomicBool,
    /// Woken when the deadline moves in a way a sleeping connection task must see.
    changed: Notify,
}

impl Activity {
    pub fn new(timeouts: Timeouts) -> Arc<Self> {
        Arc::new(Self {
            timeouts,
            start: Instant::now(),
            in_flight: AtomicUsize::new(0),
            idle_since: AtomicU64::new(0),
            head_since: AtomicU64::new(NONE),
            served_any: AtomicBool::new(false),
            changed: Notify::new(),
        })
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(NONE - 1)
    }

    fn at(&self, ms: u64) -> Instant {
        self.start + Duration::from_millis(ms)
    }

    /// When the connection should be closed if nothing changes; `None` while a request is in
    /// flight (its body and its response have their own stall clocks).
    pub fn deadline(&self) -> Option<Instant> {
        if self.in_flight.load(Ordering::SeqCst) > 0 {
            return None;
        }
        let head_since = self.head_since.load(Ordering::SeqCst);
        if head_since != NONE {
            return Some(self.at(head_since) + self.timeouts.header);
        }
        let idle_since = self.at(self.idle_since.load(Ordering::SeqCst));
        // A new connection owes its first request promptly; a kept-alive one may wait longer.
        Some(
            idle_since + if self.served_any.load(Ordering::SeqCst) { self.timeouts.idle } else { self.timeouts.header },
        )
    }

    /// Resolves after the deadline may have moved earlier, or appeared.
    pub async fn changed(&self) {
        self.changed.notified().await
    }

    /// A request's head was read: no deadline until its response is done.
    pub fn request_started(self: &Arc<Self>) -> RequestGuard {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        self.served_any.store(true, Ordering::SeqCst);
        self.head_since.store(NONE, Ordering::SeqCst);
        RequestGuard(Arc::clone(self))
    }

    fn bytes_read(&self) {
        if self.in_flight.load(Ordering::SeqCst) == 0 && self.head_since.load(Ordering::SeqCst) == NONE {
            self.head_since.store(self.now_ms(), Ordering::SeqCst);
            self.changed.notify_one();
        }
    }
}

/// Held from a request's head to the end of its response (or until either is dropped).
#[derive(Debug)]
pub struct RequestGuard(Arc<Activity>);

impl Drop for RequestGuard {
    fn drop(&mut self) {
        let activity = &self.0;
        activity.idle_since.store(activity.now_ms(), Ordering::SeqCst);
        if activity.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 {
            activity.changed.notify_one();
        }
    }
}

/// A response body that holds its request's guard until it is sent or dropped.
#[derive(Debug)]
pub struct TrackedBody<B> {
    inner: B,
    _guard: RequestGuard,
}

impl<B> TrackedBody<B> {
    pub fn new(inner: B, guard: RequestGuard) -> Self {
        Self { inner, _guard: guard }
    }
}

impl<B: Body<Data = Bytes> + Unpin> Body for TrackedBody<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The socket, reporting reads to the connection's `Activity`, and failing a write the
/// client has not made room for within `body_idle` (a client that stopped reading would
/// otherwise hold its connection, and its place under the cap, for ever).
#[derive(Debug)]
pub struct TrackedStream<S> {
    inner: S,
    activity: Arc<Activity>,
    write_stall: Stall,
}

impl<S> TrackedStream<S> {
    pub fn new(inner: S, activity: Arc<Activity>) -> Self {
        let write_stall = Stall::new(activity.timeouts.body_idle);
        Self { inner, activity, write_stall }
    }

    fn poll_write_with<T>(
        &mut self,
        cx: &mut Context<'_>,
        write: impl FnOnce(Pin<&mut S>, &mut Context<'_>) -> Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>>
    where
        S: Unpin,
    {
        match write(Pin::new(&mut self.inner), cx) {
            Poll::Ready(result) => {
                self.write_stall.progress();
                Poll::Ready(result)
            }
            Poll::Pending => {
                ready!(self.write_stall.poll_expired(cx));
                tracing::info!(
                    after_s = self.write_stall.limit().as_secs(),
                    "a client stopped reading its response: cut"
                );
                Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, "the client stopped reading")))
            }
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for TrackedStream<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let result = ready!(Pin::new(&mut self.inner).poll_read(cx, buf));
        if buf.filled().len() > before {
            self.activity.bytes_read();
        }
        Poll::Ready(result)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for TrackedStream<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.poll_write_with(cx, |inner, cx| inner.poll_write(cx, buf))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_with(cx, |inner, cx| inner.poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_write_with(cx, |inner, cx| inner.poll_flush(cx))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_write_with(cx, |inner, cx| inner.poll_shutdown(cx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[tokio::test]
    async fn the_deadline_follows_what_the_connection_is_doing() {
        let activity = Activity::new(Timeouts { header: 30 * S, idle: 75 * S, body_idle: 60 * S });
        let start = activity.start;
        assert_eq!(activity.deadline(), Some(start + 30 * S), "a new connection owes its first head");

        let request = activity.request_started();
        assert_eq!(activity.deadline(), None, "nothing is cut while a request is in flight");
        activity.bytes_read();
        assert_eq!(activity.deadline(), None, "bytes of a body in flight start no head");
        drop(request);
        let idle = activity.deadline().expect("idle deadline");
        assert!(idle >= start + 75 * S && idle < start + 76 * S, "kept alive: the idle timeout");

        activity.bytes_read();
        let head = activity.deadline().expect("head deadline");
        assert!(head >= start + 30 * S && head < start + 31 * S, "a next head started: the header timeout");
        activity.bytes_read();
        assert_eq!(activity.deadline(), Some(head), "more bytes of the same head do not extend it");

        // HTTP/2: several requests at once; the connection is idle when the last one ends.
        let (first, second) = (activity.request_started(), activity.request_started());
        drop(first);
        assert_eq!(activity.deadline(), None);
        drop(second);
        assert!(activity.deadline().is_some());
    }
}
