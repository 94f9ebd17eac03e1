//! `receiver`: a minimal HTTP/1.1 webhook receiver on loopback that acknowledges every request at
//! once (`200`, empty body, keep-alive) and counts them. It stops after `--duration-secs`, or on
//! SIGINT/SIGTERM, and then prints its count.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";
/// Larger headers than this are refused (the connection is closed).
const MAX_HEADER_BYTES: usize = 64 * 1024;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Port on 127.0.0.1.
    #[arg(long)]
    port: u16,
    /// Stop by itself after this long.
    #[arg(long, default_value_t = 300)]
    duration_secs: u64,
}

#[derive(Debug, Serialize)]
struct Report {
    requests: u64,
    connections: u64,
    elapsed_secs: f64,
}

pub(crate) async fn run(args: Args) -> Result<serde_json::Value> {
    let listener = TcpListener::bind(("127.0.0.1", args.port)).await.with_context(|| format!("binding 127.0.0.1:{}", args.port))?;
    eprintln!("receiver listening on 127.0.0.1:{}", args.port);
    let requests = Arc::new(AtomicU64::new(0));
    let mut connections = 0u64;
    let start = Instant::now();
    let stop = tokio::time::sleep(Duration::from_secs(args.duration_secs));
    tokio::pin!(stop);
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    loop {
        tokio::select! {
            () = &mut stop => break,
            _ = term.recv() => break,
            _ = tokio::signal::ctrl_c() => break,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                connections += 1;
                let requests = Arc::clone(&requests);
                tokio::spawn(async move {
                    if let Err(e) = serve(stream, &requests).await {
                        eprintln!("receiver: connection: {e:#}");
                    }
                });
            }
        }
    }
    let report = Report { requests: requests.load(Ordering::Relaxed), connections, elapsed_secs: start.elapsed().as_secs_f64() };
    Ok(serde_json::to_value(report)?)
}

/// Serves one keep-alive connection until the peer closes it.
async fn serve(mut stream: TcpStream, requests: &AtomicU64) -> Result<()> {
    stream.set_nodelay(true)?;
    let mut buf: Vec<u8> = Vec::with_capacity(8192);
    let mut chunk = [0u8; 8192];
    loop {
        // Headers, up to the blank line.
        let header_end = loop {
            if let Some(i) = find(&buf, b"\r\n\r\n") {
                break i + 4;
            }
            if buf.len() > MAX_HEADER_BYTES {
                anyhow::bail!("headers larger than {MAX_HEADER_BYTES} bytes");
            }
            let n = stream.read(&mut chunk).await?;
            if n == 0 {
                return Ok(()); // closed between requests (or mid-headers)
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        let body_len = content_length(&buf[..header_end])?;
        // The body.
        while buf.len() < header_end + body_len {
            let n = stream.read(&mut chunk).await?;
            if n == 0 {
                anyhow::bail!("closed in the middle of a body");
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        buf.drain(..header_end + body_len);
        stream.write_all(RESPONSE).await?;
        requests.fetch_add(1, Ordering::Relaxed);
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The `Content-Length` of a header block (0 when absent).
fn content_length(headers: &[u8]) -> Result<usize> {
    let text = std::str::from_utf8(headers).context("headers are not UTF-8")?;
    for line in text.split("\r\n").skip(1) {
        if let Some((name, value)) = line.split_once(':') {
            if name.trim().eq_ignore_ascii_case("content-length") {
                return value.trim().parse().context("bad content-length");
            }
        }
    }
    Ok(0)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn content_length_is_found_case_insensitively() {
        assert_eq!(content_length(b"POST /hook HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\n\r\n").unwrap(), 12);
        assert_eq!(content_length(b"POST /hook HTTP/1.1\r\ncontent-length:3\r\n\r\n").unwrap(), 3);
        assert_eq!(content_length(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap(), 0);
        assert!(content_length(b"POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n").is_err());
    }

    #[tokio::test]
    async fn acknowledges_keep_alive_requests() {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&requests);
        let server = tokio::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            serve(stream, &counted).await.unwrap();
        });
        let mut client = TcpStream::connect(addr).await.unwrap();
        let request = b"POST /hook HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello";
        // Two requests in one write, then a third split in two.
        client.write_all(&[&request[..], &request[..]].concat()).await.unwrap();
        client.write_all(&request[..20]).await.unwrap();
        client.flush().await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        client.write_all(&request[20..]).await.unwrap();
        let mut got = vec![0u8; RESPONSE.len() * 3];
        client.read_exact(&mut got).await.unwrap();
        assert_eq!(got, RESPONSE.repeat(3));
        drop(client);
        server.await.unwrap();
        assert_eq!(requests.load(Ordering::Relaxed), 3);
    }
}
