//! A TCP proxy that loses responses: it forwards a request to the server and, on the first
//! `faulty` connections, resets the client's socket (zero linger, so an RST rather than a FIN)
//! the moment the first byte of the server's FINAL response arrives. Interim `1xx` responses
//! (`100 Continue`) pass through first. Later connections are forwarded untouched.
//!
//! This is the lost response in real life: the server has done the work and answered, the
//! client sees only a reset connection and must retry.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

pub struct FaultProxy {
    pub addr: SocketAddr,
    pub base: String,
    connections: Arc<AtomicUsize>,
    dropped: Arc<AtomicUsize>,
    task: JoinHandle<()>,
}

impl FaultProxy {
    /// A proxy on `127.0.0.1:0` in front of `upstream` that drops the response of its
    /// first `faulty` connections.
    pub async fn start(upstream: SocketAddr, faulty: usize) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let addr = listener.local_addr().expect("proxy addr");
        let connections = Arc::new(AtomicUsize::new(0));
        let dropped = Arc::new(AtomicUsize::new(0));
        let (counter, drops) = (connections.clone(), dropped.clone());
        // The connection tasks live in a JoinSet owned by the accept task: aborting it
        // (close or drop) aborts every connection, so no proxy outlives its test.
        let task = tokio::spawn(async move {
            let mut conns = JoinSet::new();
            while let Ok((client, _)) = listener.accept().await {
                let faulty = counter.fetch_add(1, Ordering::SeqCst) < faulty;
                conns.spawn(relay(client, upstream, faulty, drops.clone()));
                while conns.try_join_next().is_some() {}
            }
        });
        Self { addr, base: format!("http://{addr}"), connections, dropped, task }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    /// Final responses that were cut off with a reset.
    pub fn responses_dropped(&self) -> usize {
        self.dropped.load(Ordering::SeqCst)
    }

    /// Stops accepting and closes every connection.
    pub async fn close(mut self) {
        self.task.abort();
        let _ = (&mut self.task).await;
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

enum Verdict {
    /// The server closed its side; everything was forwarded.
    Forwarded,
    /// The final response began: the client is to be reset.
    Reset,
}

async fn relay(mut client: TcpStream, upstream: SocketAddr, faulty: bool, dropped: Arc<AtomicUsize>) {
    let Ok(mut server) = TcpStream::connect(upstream).await else {
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let verdict = {
        // Borrowed halves: unlike owned ones they do not send a FIN when dropped, so a reset
        // client sees an RST and nothing before it.
        let (mut client_read, mut client_write) = client.split();
        let (mut server_read, mut server_write) = server.split();
        let up = async {
            let _ = tokio::io::copy(&mut client_read, &mut server_write).await;
            let _ = server_write.shutdown().await;
        };
        let down = forward_responses(&mut server_read, &mut client_write, faulty);
        tokio::pin!(up, down);
        let mut up_done = false;
        loop {
            tokio::select! {
                _ = &mut up, if !up_done => up_done = true,
                verdict = &mut down => break verdict,
            }
        }
    };
    match verdict {
        Verdict::Reset => {
            // Counted before the reset: the client may look at the count as soon as it sees it.
            dropped.fetch_add(1, Ordering::SeqCst);
            let _ = client.set_zero_linger();
            drop(client);
        }
        Verdict::Forwarded => {
            let _ = client.shutdown().await;
        }
    }
}

/// Server to client. Transparent unless `faulty`; then interim `1xx` responses are passed
/// on whole and the first status line of a final response ends the relay with a reset.
async fn forward_responses<R, W>(server: &mut R, client: &mut W, faulty: bool) -> Verdict
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    if !faulty {
        let _ = tokio::io::copy(server, client).await;
        return Verdict::Forwarded;
    }
    let mut pending: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        // Judge every response head at the front of `pending`: "HTTP/1.1 NNN" says which kind.
        while pending.len() >= "HTTP/1.1 NNN".len() {
            let informational = pending.starts_with(b"HTTP/1.") && pending[9] == b'1';
            if !informational {
                return Verdict::Reset;
            }
            let Some(end) = find(&pending, b"\r\n\r\n") else {
                break;
            };
            if client.write_all(&pending[..end + 4]).await.is_err() {
                return Verdict::Forwarded;
            }
            let _ = client.flush().await;
            pending.drain(..end + 4);
        }
        match server.read(&mut chunk).await {
            Ok(0) | Err(_) => {
                let _ = client.write_all(&pending).await;
                return Verdict::Forwarded;
            }
            Ok(n) => pending.extend_from_slice(&chunk[..n]),
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
