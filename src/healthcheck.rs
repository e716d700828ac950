//! `confetti healthcheck`: asks a running server's `/healthz` and exits 0 when it answers
//! 200. For container health checks, where no HTTP client is installed.

use std::time::Duration;

use anyhow::Context;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub async fn check(addr: &str) -> anyhow::Result<()> {
    let probe = async {
        let mut stream = TcpStream::connect(addr).await.with_context(|| format!("connecting to {addr}"))?;
        stream
            .write_all(format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes())
            .await?;
        let mut head = [0u8; 12];
        stream.read_exact(&mut head).await?;
        anyhow::ensure!(head.starts_with(b"HTTP/1.1 200"), "unhealthy: {}", String::from_utf8_lossy(&head));
        Ok(())
    };
    tokio::time::timeout(Duration::from_secs(5), probe).await.context("no answer within 5 s")?
}
