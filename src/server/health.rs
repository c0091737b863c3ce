//! `hookwire health`: asks a running server's `/healthz` whether it takes chats, from the same
//! settings the server reads (`--addr` / `HOOKWIRE_ADDR` / the config file, `allowed_hosts`), so
//! the container image needs no curl and its health check follows the configured port.
//!
//! A plain HTTP/1.1 GET over TCP on purpose: an HTTP client library would honour `HTTP_PROXY`
//! from the environment and send a loopback probe through a proxy.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::config::Config;

/// How long the whole probe may take (a container health check has its own, usually 3 s+).
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// The most of an answer read: `/healthz` says one word.
const MAX_ANSWER_BYTES: u64 = 16 * 1024;

/// Why the server is not healthy, or could not be asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HealthError {
    #[error("the address {0} picks a free port at start; give the server's real port")]
    AnyPort(String),
    #[error("cannot connect to {addr}: {source}")]
    Connect {
        addr: String,
        source: std::io::Error,
    },
    #[error("{addr} did not answer within {}s", PROBE_TIMEOUT.as_secs())]
    Timeout { addr: String },
    #[error("{addr} sent no HTTP answer")]
    NotHttp { addr: String },
    #[error("{addr}/healthz answered {status}: {body}")]
    Status {
        addr: String,
        status: u16,
        body: String,
    },
}

/// Probes `GET /healthz` of the server `config` describes; its answer (`ok`) when it is 200.
pub async fn probe(config: &Config) -> Result<String, HealthError> {
    let target = probe_target(&config.addr)?;
    // The server answers only the names it serves (DNS rebinding): send one of them.
    let host = match config.allowed_hosts.as_deref() {
        Some([first, ..]) => first.clone(),
        _ => target.clone(),
    };
    match tokio::time::timeout(PROBE_TIMEOUT, get_healthz(&target, &host)).await {
        Ok(result) => result,
        Err(_) => Err(HealthError::Timeout { addr: target }),
    }
}

/// Where to connect for a server listening on `addr`: a wildcard address is probed on loopback
/// (a server on `0.0.0.0` listens there too).
fn probe_target(addr: &str) -> Result<String, HealthError> {
    let Ok(mut socket) = addr.parse::<SocketAddr>() else {
        // A name (`localhost:8080`): the connect resolves it.
        return Ok(addr.to_string());
    };
    if socket.port() == 0 {
        return Err(HealthError::AnyPort(addr.to_string()));
    }
    match socket.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => socket.set_ip(Ipv4Addr::LOCALHOST.into()),
        IpAddr::V6(ip) if ip.is_unspecified() => socket.set_ip(Ipv6Addr::LOCALHOST.into()),
        _ => {}
    }
    Ok(socket.to_string())
}

async fn get_healthz(target: &str, host: &str) -> Result<String, HealthError> {
    let connect_error = |source| HealthError::Connect {
        addr: target.to_string(),
        source,
    };
    let mut stream = TcpStream::connect(target).await.map_err(connect_error)?;
    let request = format!(
        "GET /healthz HTTP/1.1\r\nHost: {host}\r\nUser-Agent: hookwire-health\r\nConnection: close\r\n\r\n"
    );
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(connect_error)?;
    let mut raw = Vec::new();
    stream
        .take(MAX_ANSWER_BYTES)
        .read_to_end(&mut raw)
        .await
        .map_err(connect_error)?;
    let (status, body) = parse_answer(&raw).ok_or_else(|| HealthError::NotHttp {
        addr: target.to_string(),
    })?;
    if status == 200 {
        Ok(body)
    } else {
        Err(HealthError::Status {
            addr: target.to_string(),
            status,
            body,
        })
    }
}

/// The status code and the (trimmed) body of a raw HTTP/1.x answer.
fn parse_answer(raw: &[u8]) -> Option<(u16, String)> {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text.split_once("\r\n\r\n")?;
    let mut status_line = head.lines().next()?.split_whitespace();
    if !status_line.next()?.starts_with("HTTP/1.") {
        return None;
    }
    let status = status_line.next()?.parse().ok()?;
    Some((status, body.trim().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wildcard_address_is_probed_on_loopback() {
        assert_eq!(probe_target("0.0.0.0:8080").unwrap(), "127.0.0.1:8080");
        assert_eq!(probe_target("[::]:9000").unwrap(), "[::1]:9000");
        assert_eq!(probe_target("10.1.2.3:8080").unwrap(), "10.1.2.3:8080");
        assert_eq!(probe_target("localhost:8080").unwrap(), "localhost:8080");
        assert!(matches!(
            probe_target("127.0.0.1:0"),
            Err(HealthError::AnyPort(_))
        ));
    }

    #[test]
    fn answers_are_read_by_status_and_body() {
        assert_eq!(
            parse_answer(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"),
            Some((200, "ok".into()))
        );
        assert_eq!(
            parse_answer(b"HTTP/1.1 503 Service Unavailable\r\n\r\ndraining\n"),
            Some((503, "draining".into()))
        );
        assert_eq!(parse_answer(b"SSH-2.0-OpenSSH\r\n\r\n"), None);
        assert_eq!(parse_answer(b"HTTP/1.1 200 OK\r\n"), None);
    }
}
