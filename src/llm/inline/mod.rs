//! A plain `http://` upstream that no proxy stands before: the reply read on an HTTP/1.1
//! connection that the chat's own task drives, rather than on a connection task of reqwest's.
//!
//! reqwest (hyper-util's pool) gives every connection a task of its own. Each streamed token
//! woke that task on the socket; it read the bytes and woke the chat's task through the body's
//! channel, and each chunk taken woke the connection's task again: three task polls per token,
//! each a turn in the runtime's queue under load (docs/performance.md). Here the chat's task polls
//! hyper's connection itself, right before it looks at the reply: the socket wakes the chat,
//! and one poll reads the bytes and writes the frame. The reply's head and body are looked at
//! with a waker that does nothing, since only the connection, polled in the same task, ever
//! fills them; the connection is polled with one that drops the wake-ups the reader causes
//! itself (`body.rs`).
//!
//! Between replies a connection waits in the pool, unpolled, for at most [`IDLE_FOR`]; one the
//! server closed meanwhile is dropped when it is next looked at, and a request it could not take
//! (closed just then, before the request was written) goes out on a new connection, as
//! hyper-util's pool does. A reply whose protocol ended before its body did goes back to the pool
//! too, its body's end read when it is taken. A redirect is sent again through reqwest, which
//! follows it. `https://` upstreams and proxies stay with reqwest (TLS and its ALPN, the proxy's
//! rules), which reads the same proxy variables.
//!
//! `conn.rs` is one connection and how it is polled, `pool.rs` the idle connections, `body.rs`
//! the reply's body read in the reader's task; here the request is sent.

mod body;
mod conn;
mod pool;

use std::future::{poll_fn, Future};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::http1;
use hyper::http;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

pub(super) use body::{InlineBody, InlineReply};
use conn::Conn;
use pool::Shared;

/// How long a connection waits in the pool for its next request (reqwest's pool was set to the
/// same): long enough to be reused while chats come, short enough that a burst's connections
/// and their buffers are given back within a minute of quiet.
pub(super) const IDLE_FOR: Duration = Duration::from_secs(30);

/// Why a request got no reply's head.
#[derive(Debug, thiserror::Error)]
pub(super) enum InlineError {
    /// No connection to the server (its name, the TCP connect, or the connect timeout).
    #[error("{0}")]
    Connect(String),
    /// The connection failed or closed before the head came.
    #[error(transparent)]
    Http(#[from] hyper::Error),
    /// The connection ended before the head came, without an error of its own.
    #[error("the connection closed before the reply")]
    Closed,
    /// The request could not be written as HTTP/1.1.
    #[error("{0}")]
    Request(String),
}

/// The connections of one model client to its server, and how long they may stay idle.
#[derive(Clone)]
pub(super) struct InlinePool {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for InlinePool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InlinePool").finish_non_exhaustive()
    }
}

impl InlinePool {
    /// The pool for requests to `url`, when they can go inline: `http://`, and no proxy for it
    /// in the environment (the variables reqwest reads: `HTTP_PROXY`, `ALL_PROXY`, `NO_PROXY`…).
    pub(super) fn for_url(url: &reqwest::Url, connect_timeout: Duration) -> Option<InlinePool> {
        if url.scheme() != "http" {
            return None;
        }
        let uri: hyper::Uri = url.as_str().parse().ok()?;
        let matcher = hyper_util::client::proxy::matcher::Matcher::from_system();
        if matcher.intercept(&uri).is_some() {
            return None;
        }
        Some(InlinePool {
            shared: Arc::new(Shared::new(connect_timeout)),
        })
    }

    /// Sends `request` on a pooled connection, or on a new one; the reply's head, and its body
    /// to be read by the caller's task.
    pub(super) async fn send(
        &self,
        request: &reqwest::Request,
    ) -> Result<InlineReply, InlineError> {
        let request = Template::of(request)?;
        if let Some(conn) = self.shared.take() {
            match exchange(conn, request.build()?).await {
                Ok((head, body, conn)) => return Ok(self.reply(head, body, conn)),
                // The connection closed before the request was written (the server ended its
                // keep-alive meanwhile): sent on a new one, as hyper-util's pool does. Once
                // written, a failure is the caller's to retry, with its notice.
                Err(InlineError::Http(error)) if error.is_canceled() => {}
                Err(error) => return Err(error),
            }
        }
        let conn = self.connect(&request).await?;
        let (head, body, conn) = exchange(conn, request.build()?).await?;
        Ok(self.reply(head, body, conn))
    }

    fn reply(&self, head: http::response::Parts, body: Incoming, conn: Conn) -> InlineReply {
        InlineReply {
            status: head.status,
            headers: head.headers,
            body: InlineBody::new(conn, body, Arc::downgrade(&self.shared)),
        }
    }

    async fn connect(&self, request: &Template) -> Result<Conn, InlineError> {
        let connect = async {
            let host = request.host.trim_start_matches('[').trim_end_matches(']');
            let addresses = tokio::net::lookup_host((host, request.port))
                .await
                .map_err(|error| InlineError::Connect(error.to_string()))?;
            let mut failed = None;
            for address in addresses {
                match TcpStream::connect(address).await {
                    Ok(stream) => return Ok(stream),
                    Err(error) => failed = Some(error),
                }
            }
            Err(InlineError::Connect(failed.map_or_else(
                || format!("no address for {host}"),
                |error| error.to_string(),
            )))
        };
        let stream = tokio::time::timeout(self.shared.connect_timeout, connect)
            .await
            .map_err(|_| InlineError::Connect("connection timed out".into()))??;
        // Each token is its own small write upstream and back: no Nagle delay.
        let _ = stream.set_nodelay(true);
        let (send, connection) = http1::handshake(TokioIo::new(stream)).await?;
        Ok(Conn {
            send,
            driver: Some(Box::pin(connection)),
        })
    }
}

/// Sends `request` on `conn` and drives the connection until the reply's head came.
async fn exchange(
    mut conn: Conn,
    request: hyper::Request<Full<Bytes>>,
) -> Result<(http::response::Parts, Incoming, Conn), InlineError> {
    // The answer comes through a tokio oneshot that the connection fills while it is polled
    // here; out of tokio's budget, so that a filled one is always seen (a spent budget would
    // park it on the do-nothing waker).
    let mut answer = std::pin::pin!(tokio::task::unconstrained(conn.send.send_request(request)));
    let mut failed = None;
    let head = poll_fn(|cx| {
        if let Some(error) = conn.drive(cx) {
            failed = Some(error);
        }
        match answer
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()))
        {
            Poll::Ready(result) => Poll::Ready(result.map_err(InlineError::from)),
            // The connection ended without filling it (hyper answers every request it drops,
            // so this is a guard).
            Poll::Pending if conn.driver.is_none() => Poll::Ready(Err(failed
                .take()
                .map_or(InlineError::Closed, InlineError::from))),
            Poll::Pending => Poll::Pending,
        }
    })
    .await?;
    let (head, body) = head.into_parts();
    Ok((head, body, conn))
}

/// The connection closed or was reset before the reply's head: nothing was answered, and the
/// caller may send the request again (with its notice).
pub(super) fn unanswered(error: &InlineError) -> bool {
    match error {
        InlineError::Closed => true,
        InlineError::Http(error) => error.is_canceled() || closed_before_answer(error),
        InlineError::Connect(_) | InlineError::Request(_) => false,
    }
}

/// The connection closed or was reset before the response's head: nothing was answered, so
/// sending again is safe (PROTOCOL §14; either transport's error). A malformed response, or
/// any other failure, is not this.
pub(super) fn closed_before_answer(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(error) = current {
        if let Some(hyper) = error.downcast_ref::<hyper::Error>() {
            if hyper.is_incomplete_message() {
                return true;
            }
        }
        if let Some(io) = error.downcast_ref::<std::io::Error>() {
            if matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionAborted
                    | std::io::ErrorKind::BrokenPipe
            ) {
                return true;
            }
        }
        current = error.source();
    }
    false
}

/// A request's parts, to send it twice if a pooled connection turns out closed.
struct Template {
    method: http::Method,
    path_and_query: String,
    headers: http::HeaderMap,
    body: Bytes,
    host: String,
    port: u16,
    /// `host:port` as the `Host` header writes it (the port only when not 80).
    authority: String,
}

impl Template {
    fn of(request: &reqwest::Request) -> Result<Template, InlineError> {
        let url = request.url();
        let host = url
            .host_str()
            .ok_or_else(|| InlineError::Request("the URL has no host".into()))?
            .to_string();
        let port = url.port_or_known_default().unwrap_or(80);
        let authority = match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.clone(),
        };
        let mut path_and_query = url.path().to_string();
        if let Some(query) = url.query() {
            path_and_query.push('?');
            path_and_query.push_str(query);
        }
        let body = request
            .body()
            .map(|body| {
                body.as_bytes()
                    .map(Bytes::copy_from_slice)
                    .ok_or_else(|| InlineError::Request("a streamed request body".into()))
            })
            .transpose()?
            .unwrap_or_default();
        Ok(Template {
            method: request.method().clone(),
            path_and_query,
            headers: request.headers().clone(),
            body,
            host,
            port,
            authority,
        })
    }

    fn build(&self) -> Result<hyper::Request<Full<Bytes>>, InlineError> {
        let mut request = hyper::Request::builder()
            .method(self.method.clone())
            .uri(self.path_and_query.as_str())
            .body(Full::new(self.body.clone()))
            .map_err(|error| InlineError::Request(error.to_string()))?;
        let headers = request.headers_mut();
        *headers = self.headers.clone();
        let host = http::HeaderValue::from_str(&self.authority)
            .map_err(|error| InlineError::Request(error.to_string()))?;
        headers.entry(http::header::HOST).or_insert(host);
        // What reqwest sends when the caller names no `Accept`.
        headers
            .entry(http::header::ACCEPT)
            .or_insert(http::HeaderValue::from_static("*/*"));
        Ok(request)
    }
}
