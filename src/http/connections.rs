//! Accepting and serving connections: the accept loop under a connection cap, one task per
//! connection that closes it when its deadline passes (stalled inside a request's head, idle
//! too long between requests), the request body's stall clock, graceful shutdown, and the
//! open-files limit the default cap derives from.
//!
//! `axum::serve` has none of these limits: a few hundred connections that send half a header
//! and stall exhaust the process's file descriptors and nobody else gets in.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tower::ServiceExt;

use super::body_timeout::IdleTimeoutBody;
use super::connection_activity::{Activity, Timeouts, TrackedBody, TrackedStream};

/// The connection limits `serve` applies.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub timeouts: Timeouts,
    pub max_connections: usize,
}

/// Raises the open-files soft limit to the hard limit, so the default connection cap is as
/// high as the operator allows; returns the soft limit now in force.
pub fn raise_open_files_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: `limit` is a valid, writable rlimit for the call's duration.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
            return None;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit { rlim_cur: limit.rlim_max, rlim_max: limit.rlim_max };
            // SAFETY: as above; a refusal (EPERM, or a hard limit the kernel caps lower) leaves
            // the soft limit as it was.
            if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
                return Some(raised.rlim_cur);
            }
        }
        Some(limit.rlim_cur)
    }
    #[cfg(not(unix))]
    None
}

/// The open-files soft limit, when the platform has one.
fn open_files_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: `limit` is a valid, writable rlimit for the call's duration.
        (unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0).then_some(limit.rlim_cur)
    }
    #[cfg(not(unix))]
    None
}

/// Without `--max-connections`: three quarters of the open-files limit, the rest left for the
/// database, photos being written, derivatives and logs.
pub fn default_max_connections() -> usize {
    match open_files_limit() {
        Some(files) => usize::try_from(files / 4 * 3).unwrap_or(usize::MAX).max(1),
        None => 4096,
    }
}

/// Serves `router` on `listener` until `shutdown` resolves; then stops accepting, lets every
/// connection finish its requests (idle ones close at once) and returns when all are closed.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    // `acquire_many` below counts in u32.
    let cap = limits.max_connections.clamp(1, u32::MAX as usize);
    let permits = Arc::new(Semaphore::new(cap));
    let (stop, stopping) = watch::channel(false);
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // Hyper's own header timeout would also close kept-alive connections after it; the
    // connection task applies both the header and the idle deadline instead.
    builder.http1().header_read_timeout(None);
    let builder = Arc::new(builder);
    tracing::info!(max_connections = cap, open_files_limit = open_files_limit(), "accepting connections");

    tokio::pin!(shutdown);
    let mut backoff = AcceptBackoff::default();
    // Under a flood the cap is reached again and again: say so once a minute, not each time.
    let mut warned_at: Option<tokio::time::Instant> = None;
    loop {
        // The permit is taken before `accept`: at the cap, new connections wait in the
        // kernel's queue instead of costing a file descriptor here.
        let permit = match Arc::clone(&permits).try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                if warned_at.is_none_or(|at| at.elapsed() >= Duration::from_secs(60)) {
                    warned_at = Some(tokio::time::Instant::now());
                    tracing::warn!(max_connections = cap, "connection cap reached: new connections wait");
                }
                tokio::select! {
                    permit = Arc::clone(&permits).acquire_owned() => permit.map_err(io::Error::other)?,
                    () = &mut shutdown => break,
                }
            }
        };
        let (stream, remote) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    if let Some(pause) = backoff.after(&e) {
                        tokio::select! {
                            () = tokio::time::sleep(pause) => {}
                            () = &mut shutdown => break,
                        }
                    }
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        backoff = AcceptBackoff::default();
        tokio::spawn(serve_connection(
            stream,
            remote,
            router.clone(),
            limits.timeouts,
            Arc::clone(&builder),
            stopping.clone(),
            permit,
        ));
    }

    drop(listener);
    stop.send_replace(true);
    // Every connection holds a permit until it is closed: all of them back means all closed.
    let _all_closed = permits.acquire_many(cap as u32).await.map_err(io::Error::other)?;
    Ok(())
}

/// How long to pause after an accept error. Errors of one connection (reset before it was
/// accepted) are skipped at once; running out of file descriptors or memory would otherwise
/// turn the loop into a spin that logs as fast as it can.
#[derive(Default)]
struct AcceptBackoff {
    next: Option<Duration>,
}

impl AcceptBackoff {
    fn after(&mut self, error: &io::Error) -> Option<Duration> {
        use io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
        if matches!(error.kind(), ConnectionAborted | ConnectionRefused | ConnectionReset) {
            return None;
        }
        let pause = self.next.unwrap_or(Duration::from_millis(10));
        self.next = Some((pause * 2).min(Duration::from_secs(1)));
        tracing::warn!(error = %error, pause_ms = pause.as_millis() as u64, "accept error");
        Some(pause)
    }
}

async fn serve_connection(
    stream: TcpStream,
    remote: SocketAddr,
    router: Router,
    timeouts: Timeouts,
    builder: Arc<auto::Builder<TokioExecutor>>,
    mut stopping: watch::Receiver<bool>,
    _permit: OwnedSemaphorePermit,
) {
    // An answer's head and a streamed body go out in separate writes: with Nagle's algorithm
    // the body's first bytes wait for the client's delayed ACK of the head, 40 ms for every
    // streamed answer (docs/benchmarks.md, thumb fetches). A socket that refuses is served as
    // it is.
    let _ = stream.set_nodelay(true);
    let activity = Activity::new(timeouts);
    let io = TokioIo::new(TrackedStream::new(stream, Arc::clone(&activity)));
    let requests = Arc::clone(&activity);
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        let guard = requests.request_started();
        let mut request = request.map(|body| axum::body::Body::new(IdleTimeoutBody::new(body, timeouts.body_idle)));
        // Handlers read the client's address (login throttling) as axum::serve provided it.
        request.extensions_mut().insert(ConnectInfo(remote));
        let response = router.clone().oneshot(request);
        async move {
            let response = response.await?;
            Ok::<_, Infallible>(response.map(|body| TrackedBody::new(body, guard)))
        }
    });
    let connection = builder.serve_connection(io, service);
    tokio::pin!(connection);
    let mut closing = *stopping.borrow();
    if closing {
        connection.as_mut().graceful_shutdown();
    }
    loop {
        let deadline = activity.deadline();
        tokio::select! {
            result = connection.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!(error = %e, %remote, "connection ended with an error");
                }
                return;
            }
            _ = stopping.changed(), if !closing => {
                closing = true;
                connection.as_mut().graceful_shutdown();
            }
            () = tokio::time::sleep_until(deadline.unwrap_or_else(tokio::time::Instant::now)), if deadline.is_some() => {
                // The deadline may have moved while this task slept: close only if it still
                // stands. Nothing is in flight, so closing loses no request.
                if activity.deadline().is_some_and(|d| d <= tokio::time::Instant::now()) {
                    tracing::debug!(%remote, "closing a connection stalled in a request head or idle too long");
                    return;
                }
            }
            () = activity.changed() => {}
        }
    }
}
