//! A reply's body, read by polling its connection in the reader's own task.

use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Weak};
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use futures::Stream;
use hyper::body::{Body as _, Incoming};
use hyper::http;

use super::conn::Conn;
use super::pool::Shared;
use crate::types::TaskToWake;

/// The most of an error reply's body kept (its text is shortened further for the person).
const MAX_ERROR_BODY: usize = 64 * 1024;

/// A reply's head, and its body to read.
pub(in crate::llm) struct InlineReply {
    pub(in crate::llm) status: http::StatusCode,
    pub(in crate::llm) headers: http::HeaderMap,
    pub(in crate::llm) body: InlineBody,
}

/// A reply's body, read by polling its connection in the reader's task. Dropped once the
/// reply ended, the connection goes back to the pool; dropped before, the connection is
/// closed (the upstream sees the request given up).
pub(in crate::llm) struct InlineBody {
    conn: Option<Conn>,
    /// `None` only once given to the pool, in `drop`.
    body: Option<Incoming>,
    pool: Weak<Shared>,
    /// The waker the connection is polled with while the body is read.
    waker: ReaderWaker,
    /// The reader read the protocol's last event: the reply is whole, whatever of the body
    /// comes after it.
    protocol_ended: bool,
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

/// What [`ReaderWaker`]'s wakers share: where the reader is, and the task to wake.
struct ReaderWake {
    /// [`IDLE`], [`POLLING`] or [`WOKEN`]; one atomic, so that a wake-up from another thread
    /// racing the end of a poll is either seen by the reader or passed on, never lost.
    state: AtomicU8,
    task: TaskToWake,
}

/// The reader is not polling: a wake-up is passed on to the task.
const IDLE: u8 = 0;
/// The reader is polling: a wake-up is noted, not passed on.
const POLLING: u8 = 1;
/// A wake-up came while the reader was polling.
const WOKEN: u8 = 2;

impl std::task::Wake for ReaderWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        match self
            .state
            .compare_exchange(POLLING, WOKEN, Ordering::AcqRel, Ordering::Acquire)
        {
            // Noted for the reader (or noted already).
            Ok(_) | Err(WOKEN) => {}
            Err(_) => self.task.wake(),
        }
    }
}

impl ReaderWaker {
    fn new() -> ReaderWaker {
        let shared = Arc::new(ReaderWake {
            state: AtomicU8::new(IDLE),
            task: TaskToWake::default(),
        });
        ReaderWaker {
            own: Waker::from(shared.clone()),
            shared,
            task: None,
        }
    }

    /// The reader begins a poll for the task of `cx`.
    fn enter(&mut self, cx: &Context<'_>) {
        self.shared.task.set(&mut self.task, cx.waker());
        self.shared.state.store(POLLING, Ordering::Release);
    }

    /// The reader ends its poll; whether a wake-up came meanwhile (then the connection must be
    /// polled again before the reader waits).
    fn leave(&self) -> bool {
        self.shared.state.swap(IDLE, Ordering::AcqRel) == WOKEN
    }
}

impl InlineBody {
    pub(super) fn new(conn: Conn, body: Incoming, pool: Weak<Shared>) -> InlineBody {
        InlineBody {
            conn: Some(conn),
            body: Some(body),
            pool,
            waker: ReaderWaker::new(),
            protocol_ended: false,
        }
    }

    /// The reader read the protocol's last event (so the connection may be reused once the
    /// body's end comes).
    pub(in crate::llm) fn protocol_ended(&mut self) {
        self.protocol_ended = true;
    }

    /// The body as text, at most [`MAX_ERROR_BODY`] bytes of it (an error reply's).
    pub(in crate::llm) async fn text(mut self) -> Result<String, hyper::Error> {
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
                // Woken again: the task must be polled again (hyper's connection yields after
                // a run of work, or the socket woke it from another thread), so the wake-up is
                // passed on. (Tokio's budget wakes through its deferred list, after the poll.)
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
            let Some(body) = self.body.as_mut() else {
                return Poll::Ready(None);
            };
            match Pin::new(body).poll_frame(&mut Context::from_waker(Waker::noop())) {
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
        // A reply given up in its middle (a cancelled chat) closes its connection: the server
        // sees it and stops. One whose protocol ended (the reader stopped at the last event,
        // often just short of the body's end) goes back to the pool; what is left of its body
        // is read when the connection is next taken.
        let Some(mut body) = self.body.take() else {
            return;
        };
        let cx = &mut Context::from_waker(Waker::noop());
        conn.drive(cx);
        match Pin::new(&mut body).poll_frame(cx) {
            Poll::Ready(None) if conn.reusable() => pool.park(conn, None),
            Poll::Ready(Some(Ok(_))) | Poll::Pending if self.protocol_ended => {
                pool.park(conn, Some(body));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::InlinePool;
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;
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
        let mut reply = pool.send(&request).await.unwrap();
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
            pool.shared.idle_count(),
            1,
            "the connection went back to the pool"
        );
    }
}
