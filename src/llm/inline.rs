//! A plain `http://` upstream that no proxy stands before: the reply read on an HTTP/1.1
//! connection that the chat's own task drives, rather than on a connection task of reqwest's.
//!
//! reqwest (hyper-util's pool) gives every connection a task of its own. Each streamed token
//! woke that task on the socket; it read the bytes and woke the chat's task through the body's
//! channel: two task polls and a hand-over per token, and under load two turns in the runtime's
//! queue on the way to the first token (docs/performance.md). Here the chat's task polls
//! hyper's connection itself, right before it looks at the reply: the socket wakes the chat,
//! and one poll reads the bytes and writes the frame. The reply's head and body are looked at
//! with a waker that does nothing, since only the connection, polled in the same task, ever
//! fills them.
//!
//! Between replies a connection waits in the pool, unpolled, for at most [`IDLE_FOR`]. One taken
//! from there that the server had closed meanwhile (its keep-alive ended) and that fails before
//! the reply's head is replaced by a new connection, once. `https://` upstreams and proxies stay
//! with reqwest (TLS and its ALPN, the proxy's rules), which reads the same proxy variables.

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use futures::Stream;
use http_body_util::Full;
use hyper::body::{Body as _, Incoming};
use hyper::client::conn::http1;
use hyper::http;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::time::Instant;

/// How long a connection waits in the pool for its next request (reqwest's pool was set to the
/// same): long enough to be reused while chats come, short enough that a burst's connections
/// and their buffers are given back within a minute of quiet.
pub(super) const IDLE_FOR: Duration = Duration::from_secs(30);

/// The most of an error reply's body kept (its text is shortened further for the person).
const MAX_ERROR_BODY: usize = 64 * 1024;

type Sender = http1::SendRequest<Full<Bytes>>;
type Connection = http1::Connection<TokioIo<TcpStream>, Full<Bytes>>;

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

struct Shared {
    /// Idle connections to the pool's server, the most recently used last.
    idle: Mutex<Vec<Idle>>,
    connect_timeout: Duration,
    /// A task drops the connections idle too long while any wait (started by the first parked).
    sweeping: AtomicBool,
}

struct Idle {
    conn: Conn,
    since: Instant,
}

/// One connection: the side that sends requests and the connection itself, which whoever
/// reads its reply polls.
struct Conn {
    send: Sender,
    /// `None` once it ended.
    driver: Option<Pin<Box<Connection>>>,
}

impl Conn {
    /// Lets the connection read and write its socket (the socket wakes `cx`'s task when it can
    /// go on); the error it ended with, if it ended so.
    fn drive(&mut self, cx: &mut Context<'_>) -> Option<hyper::Error> {
        let driver = self.driver.as_mut()?;
        match driver.as_mut().poll(cx) {
            Poll::Pending => None,
            Poll::Ready(result) => {
                self.driver = None;
                result.err()
            }
        }
    }

    /// Still open after a poll that wakes nobody (a connection the server closed ends here),
    /// and ready for a request.
    fn reusable(&mut self) -> bool {
        self.drive(&mut Context::from_waker(Waker::noop()));
        self.driver.is_some() && self.send.is_ready()
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
            shared: Arc::new(Shared {
                idle: Mutex::new(Vec::new()),
                connect_timeout,
                sweeping: AtomicBool::new(false),
            }),
        })
    }

    /// Sends `request` on a pooled connection, or on a new one; the reply's head, and its body
    /// to be read by the caller's task.
    pub(super) async fn send(&self, request: reqwest::Request) -> Result<InlineReply, InlineError> {
        let request = Template::of(request)?;
        if let Some(conn) = self.take() {
            match exchange(conn, request.build()?).await {
                Ok((head, body, conn)) => return Ok(self.reply(head, body, conn)),
                // The server closed the connection while it waited: it was not answered.
                Err(error) if unanswered(&error) => {}
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
            body: InlineBody {
                conn: Some(conn),
                body,
                pool: Arc::downgrade(&self.shared),
                waker: ReaderWaker::new(),
            },
        }
    }

    /// The most recently used idle connection that is still open.
    fn take(&self) -> Option<Conn> {
        let mut idle = self.shared.lock();
        while let Some(Idle { mut conn, since }) = idle.pop() {
            if since.elapsed() < IDLE_FOR && conn.reusable() {
                return Some(conn);
            }
        }
        None
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

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Idle>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn park(self: &Arc<Self>, conn: Conn) {
        self.lock().push(Idle {
            conn,
            since: Instant::now(),
        });
        if self.sweeping.swap(true, Ordering::AcqRel) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            self.sweeping.store(false, Ordering::Release);
            return;
        };
        let sweeper = Sweeper(Arc::downgrade(self));
        runtime.spawn(async move {
            loop {
                tokio::time::sleep(IDLE_FOR / 2).await;
                let Some(shared) = sweeper.0.upgrade() else {
                    return;
                };
                if !shared.sweep() {
                    return;
                }
            }
        });
    }

    /// Drops the connections idle for [`IDLE_FOR`]; whether any is left waiting (if none, the
    /// sweeper stops, and the next connection parked starts one again).
    fn sweep(&self) -> bool {
        let mut idle = self.lock();
        idle.retain(|connection| connection.since.elapsed() < IDLE_FOR);
        let any = !idle.is_empty();
        if !any {
            // Under the lock: a connection parked after this starts a sweeper of its own.
            self.sweeping.store(false, Ordering::Release);
        }
        any
    }
}

/// Marks the pool as without a sweeper when its task ends, however it ends (the runtime shut
/// down with it, too).
struct Sweeper(Weak<Shared>);

impl Drop for Sweeper {
    fn drop(&mut self) {
        if let Some(shared) = self.0.upgrade() {
            shared.sweeping.store(false, Ordering::Release);
        }
    }
}

/// Sends `request` on `conn` and drives the connection until the reply's head came.
async fn exchange(
    mut conn: Conn,
    request: hyper::Request<Full<Bytes>>,
) -> Result<(http::response::Parts, Incoming, Conn), InlineError> {
    let mut answer = std::pin::pin!(conn.send.send_request(request));
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
            // The connection ended and will give no answer.
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

/// The connection closed or was reset before the reply's head: nothing was answered.
pub(super) fn unanswered(error: &InlineError) -> bool {
    match error {
        InlineError::Closed => true,
        InlineError::Http(error) => error.is_canceled() || closed_before_answer(error),
        InlineError::Connect(_) | InlineError::Request(_) => false,
    }
}

/// The connection closed or was reset before the response's head: nothing was answered, so
/// sending again is safe (either transport's error). A malformed response, or any other failure, is not this.
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
    fn of(request: reqwest::Request) -> Result<Template, InlineError> {
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

/// A reply's head, and its body to read.
pub(super) struct InlineReply {
    pub(super) status: http::StatusCode,
    pub(super) headers: http::HeaderMap,
    pub(super) body: InlineBody,
}

/// A reply's body, read by polling its connection in the reader's task. Dropped once the
/// reply ended, the connection goes back to the pool; dropped before, the connection is
/// closed (the upstream sees the request given up).
pub(super) struct InlineBody {
    conn: Option<Conn>,
    body: Incoming,
    pool: Weak<Shared>,
    /// The waker the connection is polled with while the body is read.
    waker: ReaderWaker,
}

/// The waker a reply's connection is polled with while its body is read: it passes on what
/// wakes the connection from outside (the socket) and drops the wake-ups the reader causes
/// itself. Each chunk the reader takes from hyper's body channel wakes the connection, which
/// waits there for room for the next; with the task's own waker that polled the whole task
/// once more per token, for nothing, since the reader polls the connection again before it
/// waits.
struct ReaderWaker {
    shared: Arc<ReaderWake>,
    own: Waker,
    /// The task's waker as last passed to `shared`.
    task: Option<Waker>,
}

struct ReaderWake {
    /// The reader is polling: a wake-up now is noted, not passed on.
    inside: AtomicBool,
    /// A wake-up came while the reader was polling.
    missed: AtomicBool,
    task: Mutex<Option<Waker>>,
}

impl std::task::Wake for ReaderWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if self.inside.load(Ordering::Acquire) {
            self.missed.store(true, Ordering::Release);
            return;
        }
        let task = self
            .task
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(task) = task {
            task.wake();
        }
    }
}

impl ReaderWaker {
    fn new() -> ReaderWaker {
        let shared = Arc::new(ReaderWake {
            inside: AtomicBool::new(false),
            missed: AtomicBool::new(false),
            task: Mutex::new(None),
        });
        ReaderWaker {
            own: Waker::from(shared.clone()),
            shared,
            task: None,
        }
    }

    /// The reader begins a poll for the task of `cx`.
    fn enter(&mut self, cx: &Context<'_>) {
        if !self.task.as_ref().is_some_and(|t| t.will_wake(cx.waker())) {
            let waker = cx.waker().clone();
            *self
                .shared
                .task
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(waker.clone());
            self.task = Some(waker);
        }
        self.shared.missed.store(false, Ordering::Relaxed);
        self.shared.inside.store(true, Ordering::Release);
    }

    /// The reader ends its poll; whether a wake-up came meanwhile (then the connection must be
    /// polled again before the reader waits).
    fn leave(&self) -> bool {
        self.shared.inside.store(false, Ordering::Release);
        self.shared.missed.swap(false, Ordering::AcqRel)
    }
}

impl InlineBody {
    /// The body as text, at most [`MAX_ERROR_BODY`] bytes of it (an error reply's).
    pub(super) async fn text(mut self) -> Result<String, hyper::Error> {
        let mut kept = Vec::new();
        while let Some(chunk) = futures::StreamExt::next(&mut self).await {
            let chunk = chunk?;
            let room = MAX_ERROR_BODY.saturating_sub(kept.len());
            kept.extend_from_slice(&chunk[..chunk.len().min(room)]);
            if room <= chunk.len() {
                break;
            }
        }
        Ok(String::from_utf8_lossy(&kept).into_owned())
    }
}

impl Stream for InlineBody {
    type Item = Result<Bytes, hyper::Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        let mut looked_again = false;
        loop {
            this.waker.enter(cx);
            let polled = this.read();
            let missed = this.waker.leave();
            match polled {
                // A wake-up while the reader polled may be the socket's: look again before
                // waiting.
                Poll::Pending if missed && !looked_again => looked_again = true,
                // Woken again: the task must be polled again (tokio's budget for the task's
                // poll is spent, or the connection yields), so the wake-up is passed on.
                Poll::Pending if missed => {
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                polled => return polled,
            }
        }
    }
}

impl InlineBody {
    /// Lets the connection read (with the reader's waker) and takes what it put in the body.
    fn read(&mut self) -> Poll<Option<Result<Bytes, hyper::Error>>> {
        loop {
            let ended_with = self
                .conn
                .as_mut()
                .and_then(|conn| conn.drive(&mut Context::from_waker(&self.waker.own)));
            match Pin::new(&mut self.body).poll_frame(&mut Context::from_waker(Waker::noop())) {
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) if !data.is_empty() => return Poll::Ready(Some(Ok(data))),
                    // Trailers, or an empty chunk: read on.
                    _ => continue,
                },
                Poll::Ready(Some(Err(error))) => {
                    self.conn = None;
                    return Poll::Ready(Some(Err(error)));
                }
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => {
                    if let Some(error) = ended_with {
                        self.conn = None;
                        return Poll::Ready(Some(Err(error)));
                    }
                    // Only the connection fills the body; ended, it never will (hyper hands the
                    // body an error first, so this is a guard).
                    if self.conn.as_ref().is_none_or(|conn| conn.driver.is_none()) {
                        return Poll::Ready(None);
                    }
                    return Poll::Pending;
                }
            }
        }
    }
}

impl Drop for InlineBody {
    fn drop(&mut self) {
        let Some(mut conn) = self.conn.take() else {
            return;
        };
        let Some(pool) = self.pool.upgrade() else {
            return;
        };
        // The reply must have ended (the protocol's last event usually comes with the body's
        // end, so the reader stopped just short of it): a connection in the middle of a reply
        // is closed, not reused.
        conn.drive(&mut Context::from_waker(Waker::noop()));
        let ended = matches!(
            Pin::new(&mut self.body).poll_frame(&mut Context::from_waker(Waker::noop())),
            Poll::Ready(None)
        );
        if ended && conn.reusable() {
            pool.park(conn);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Counts the task's wake-ups that come while the body is being polled.
    #[derive(Default)]
    struct Counting {
        polling: AtomicBool,
        during_polls: AtomicUsize,
        notify: tokio::sync::Notify,
    }

    impl std::task::Wake for Counting {
        fn wake(self: Arc<Self>) {
            if self.polling.load(Ordering::SeqCst) {
                self.during_polls.fetch_add(1, Ordering::SeqCst);
            }
            self.notify.notify_one();
        }
    }

    /// A server that answers one request with `events` SSE events in one chunked write.
    async fn server(events: usize) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut head = Vec::new();
            let mut buffer = [0u8; 4096];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = socket.read(&mut buffer).await.unwrap();
                head.extend_from_slice(&buffer[..n]);
            }
            let mut reply = String::from(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
            );
            for n in 0..events {
                let event = format!("data: {n}\n\n");
                reply.push_str(&format!("{:x}\r\n{event}\r\n", event.len()));
            }
            reply.push_str("0\r\n\r\n");
            socket.write_all(reply.as_bytes()).await.unwrap();
            // Kept open: the connection goes back to the pool.
            let _ = socket.read(&mut buffer).await;
        });
        format!("http://{addr}/v1/chat/completions")
    }

    #[tokio::test]
    async fn taking_a_chunk_does_not_wake_the_reader_and_the_connection_is_kept() {
        let url: reqwest::Url = server(5).await.parse().unwrap();
        let pool = InlinePool::for_url(&url, Duration::from_secs(5)).unwrap();
        let mut request = reqwest::Request::new(reqwest::Method::POST, url);
        *request.body_mut() = Some("{}".into());
        let mut reply = pool.send(request).await.unwrap();
        assert_eq!(reply.status, 200);
        let counting = Arc::new(Counting::default());
        let waker = Waker::from(counting.clone());
        let mut cx = Context::from_waker(&waker);
        let mut chunks = Vec::new();
        loop {
            counting.polling.store(true, Ordering::SeqCst);
            let polled = Pin::new(&mut reply.body).poll_next(&mut cx);
            counting.polling.store(false, Ordering::SeqCst);
            match polled {
                Poll::Ready(Some(chunk)) => chunks.push(chunk.unwrap()),
                Poll::Ready(None) => break,
                Poll::Pending => counting.notify.notified().await,
            }
        }
        let text: Vec<u8> = chunks.concat();
        let expected: String = (0..5).map(|n| format!("data: {n}\n\n")).collect();
        assert_eq!(String::from_utf8_lossy(&text), expected);
        assert_eq!(
            counting.during_polls.load(Ordering::SeqCst),
            0,
            "the reader's own reads woke its task"
        );
        drop(reply);
        assert_eq!(
            pool.shared.lock().len(),
            1,
            "the connection went back to the pool"
        );
    }
}
