//! The accept loop. `axum::serve` offers neither a header-read timeout nor a bound on
//! connections that have not reached a handler yet, and leaves Nagle's algorithm on, so this
//! module serves each accepted socket with hyper itself:
//!
//! - `TCP_NODELAY` on every socket: a chat writes small frames (`start`, then the first `text`);
//!   with Nagle the second waits for the client's delayed ACK, ~40 ms per short chat.
//! - A header-read timeout: a client that trickles its request headers is cut off instead of
//!   holding a socket and a task for as long as it likes. One that sent nothing at all (a
//!   browser's preconnect) is closed the same way but counted apart, not as a rejection.
//! - At most `max_pending_connections` connections between accept and upgrade (or the end of
//!   their plain HTTP exchange); past that the loop stops accepting and new clients wait in the
//!   kernel's backlog. Upgraded WebSocket sessions are bounded by the session semaphore instead.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// How the accept loop treats connections before they become sessions.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ListenLimits {
    pub(crate) header_read_timeout: Duration,
    pub(crate) max_pending_connections: usize,
}

/// Accepts and serves connections until `stop` is cancelled, which the server does after its
/// drain (while draining it still answers: `/healthz` says so, upgrades get 503). Connections
/// still in an HTTP exchange then finish it (graceful); WebSocket sessions end on their own.
pub(crate) async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ListenLimits,
    stop: CancellationToken,
) {
    let pending = Arc::new(Semaphore::new(limits.max_pending_connections));
    loop {
        // Take the permit first: while every slot is in use, nothing more is accepted.
        let permit = tokio::select! {
            _ = stop.cancelled() => return,
            permit = pending.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => return,
            },
        };
        let socket = tokio::select! {
            _ = stop.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok((socket, _peer)) => socket,
                Err(error) => {
                    // Usually EMFILE/ENFILE: back off instead of spinning on the error.
                    tracing::warn!(%error, "accept failed; retrying in 100 ms");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let app = app.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            serve_connection(socket, app, limits, stop).await;
            drop(permit);
        });
    }
}

async fn serve_connection(
    socket: TcpStream,
    app: Router,
    limits: ListenLimits,
    stop: CancellationToken,
) {
    if let Err(error) = socket.set_nodelay(true) {
        tracing::debug!(%error, "cannot set TCP_NODELAY");
    }
    let heard = Arc::new(AtomicBool::new(false));
    let socket = Heard {
        inner: socket,
        heard: heard.clone(),
    };
    let service = TowerToHyperService::new(app);
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    let connection = builder
        .serve_connection(TokioIo::new(socket), service)
        .with_upgrades();
    tokio::pin!(connection);
    let result = tokio::select! {
        result = connection.as_mut() => result,
        _ = stop.cancelled() => {
            connection.as_mut().graceful_shutdown();
            connection.await
        }
    };
    log_connection_end(result, heard.load(Ordering::Relaxed));
}

/// A socket that notes whether the client ever sent a byte: a connection opened ahead of time
/// (a browser's preconnect) and closed at the header timeout without a word is not a refusal.
struct Heard {
    inner: TcpStream,
    heard: Arc<AtomicBool>,
}

impl AsyncRead for Heard {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.heard.store(true, Ordering::Relaxed);
        }
        polled
    }
}

impl AsyncWrite for Heard {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, data)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

fn log_connection_end(result: Result<(), hyper::Error>, heard: bool) {
    match result {
        Ok(()) => {}
        Err(error) if error.is_timeout() && !heard => {
            ::metrics::counter!("hookwire_idle_connections_closed_total").increment(1);
            tracing::debug!("closed a connection that sent nothing (a preconnect)");
        }
        Err(error) if error.is_timeout() => {
            ::metrics::counter!("hookwire_rejected_connections_total", "reason" => "header_timeout")
                .increment(1);
            tracing::debug!("closed a connection that did not send its request headers in time");
        }
        Err(error) => tracing::debug!(%error, "connection ended with an error"),
    }
}
