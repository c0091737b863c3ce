//! What a connection writes, and the writing itself, done by the session's one task between its
//! reads: the connection's own frames (pongs, errors about client frames, pings, the close) go
//! before the running chat's next frame, and the chat runs as its frames are taken, so a streamed
//! token goes from the upstream's socket to the client's in the task that read it.
//!
//! A write that makes no progress for `limits.write_stall_seconds` (the client stopped reading)
//! fails the session; the watchdog's timer is set only when a write waits, since most complete
//! at once.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message as WsMessage, Utf8Bytes};
use futures::{Sink, StreamExt};
use tokio::time::{Instant, Sleep};
use tokio_util::sync::CancellationToken;

use super::ChatFrames;
use crate::config::Limits;
use crate::server::frames::{frame_json, ServerFrame};

/// Frames of the connection's own waiting to be written. A client that sends this many pings or
/// bad frames without reading the answers is not reading at all.
const CONTROL_SLOTS: usize = 32;

/// Messages written in one go before the task lets its other work (reading, timers) run: a chat
/// whose frames are all ready at once does not keep the client's `cancel` unread.
const WRITE_BUDGET: usize = 16;

/// What the WebSocket keeps of the messages handed to it before a flush writes them out together
/// (`Outgoing::poll_write`); a larger message is written at once. The budget's worth of tokens
/// is a few KiB.
pub(in crate::server) const WRITE_COALESCE_BYTES: usize = 16 * 1024;

/// How the session's writing failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum WriteFailure {
    /// No progress for the stall limit: the client stopped reading.
    Stalled,
    /// The socket refused the write.
    Failed,
}

/// What the writing reached.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Wrote {
    /// The running chat's last frame is written; the chat is dropped.
    ChatEnded,
    /// The close frame is written: nothing more goes out.
    Closed,
}

/// A frame of the connection's own.
enum Control {
    /// A frame's JSON.
    Frame(String),
    Ping,
    Close(u16, &'static str),
}

/// The chat running on this connection.
pub(super) struct RunningChat {
    pub(super) id: String,
    pub(super) cancel: CancellationToken,
    pub(super) frames: ChatFrames,
}

/// See the module's documentation.
pub(super) struct Outgoing {
    control: VecDeque<Control>,
    chat: Option<Box<RunningChat>>,
    /// Taken from `control` or the chat, waiting for the socket to be ready; `true` for the close.
    next: Option<(WsMessage, bool)>,
    /// Messages were handed to the socket and are not flushed yet; `Some(true)` for the close.
    flushing: Option<bool>,
    /// The chat's frames ended. The chat is kept (not polled) until its last frames are
    /// flushed, then dropped and reported: until then it is still the connection's chat (a
    /// second one gets `busy`).
    chat_ended: bool,
    /// `poll_ready` waited: the socket was writing out what it held. Its next `Ready` is
    /// progress, as a completed flush is.
    ready_waited: bool,
    /// The stall watchdog, made the first time a write waits and reset for each wait after.
    stall: Option<Pin<Box<Sleep>>>,
    stall_armed: bool,
    stall_limit: Duration,
    max_frame_bytes: usize,
}

impl Outgoing {
    pub(super) fn new(limits: &Limits) -> Self {
        Self {
            control: VecDeque::new(),
            chat: None,
            next: None,
            flushing: None,
            chat_ended: false,
            ready_waited: false,
            stall: None,
            stall_armed: false,
            stall_limit: limits.write_stall,
            max_frame_bytes: limits.max_frame_bytes,
        }
    }

    pub(super) fn max_frame_bytes(&self) -> usize {
        self.max_frame_bytes
    }

    /// Queues a frame of the connection's own; `false` if the client is flooding.
    pub(super) fn control(&mut self, frame: ServerFrame) -> bool {
        frame_json(frame, self.max_frame_bytes)
            .into_iter()
            .all(|json| self.push(Control::Frame(json)))
    }

    /// Queues a ping, unless the queue is full (the writing is behind: the stall watchdog or the
    /// flood check deals with that).
    pub(super) fn ping(&mut self) {
        let _ = self.push(Control::Ping);
    }

    /// Queues the close, after what is queued already; nothing of the chat's goes out after it.
    pub(super) fn close(&mut self, code: u16, reason: &'static str) {
        self.control.push_back(Control::Close(code, reason));
    }

    fn push(&mut self, control: Control) -> bool {
        if self.control.len() >= CONTROL_SLOTS {
            return false;
        }
        self.control.push_back(control);
        true
    }

    /// Runs `chat` from now on: its frames are written as it makes them.
    pub(super) fn start_chat(&mut self, chat: RunningChat) {
        self.chat = Some(Box::new(chat));
    }

    /// The running chat, until its last frame is written.
    pub(super) fn chat(&self) -> Option<&RunningChat> {
        self.chat.as_deref()
    }

    /// Writes what there is to write, until the socket or the chat has to wait. `Ready` when the
    /// chat ended or the close was written (call again to go on), or the writing failed (the
    /// failure is logged and counted here).
    ///
    /// Messages that are ready together go out together: each is handed to the socket (which
    /// keeps up to `WRITE_COALESCE_BYTES` before it writes by itself), and the socket is
    /// flushed as soon as the next message is not ready yet. A message never waits for one that
    /// is not there, only for the chat to be polled once more; this saves a write per message
    /// when several are ready at once (an upstream that sends several events in one chunk, a
    /// server behind its upstream), which is when a write costs the most
    /// (docs/performance.md). `poll_ready` returns `Pending` only while the socket writes out
    /// what it holds (tokio-tungstenite), so a `Pending` return never leaves a message unsent.
    pub(super) fn poll_write<S>(
        &mut self,
        socket: &mut S,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Wrote, WriteFailure>>
    where
        S: Sink<WsMessage> + Unpin,
        S::Error: std::error::Error + 'static,
    {
        for _ in 0..WRITE_BUDGET {
            // Nothing is taken after the close.
            if self.next.is_none() && self.flushing != Some(true) {
                self.next = self.take_next(cx);
            }
            if let Some(closing) = self.flushing {
                if self.next.is_none() || closing {
                    if let Err(unfinished) = self.flush(socket, cx) {
                        return unfinished;
                    }
                    if closing {
                        return Poll::Ready(Ok(Wrote::Closed));
                    }
                }
            }
            let Some((_, closing)) = &self.next else {
                // The chat goes once what it wrote is out.
                if std::mem::take(&mut self.chat_ended) {
                    self.chat = None;
                    return Poll::Ready(Ok(Wrote::ChatEnded));
                }
                return Poll::Pending;
            };
            let closing = *closing;
            match Pin::new(&mut *socket).poll_ready(cx) {
                Poll::Pending => {
                    self.ready_waited = true;
                    return self.wait(cx);
                }
                Poll::Ready(Err(error)) => return Poll::Ready(Err(write_failed(error))),
                Poll::Ready(Ok(())) => {
                    if std::mem::take(&mut self.ready_waited) {
                        self.stall_armed = false;
                    }
                }
            }
            if let Some((message, _)) = self.next.take() {
                if let Err(error) = Pin::new(&mut *socket).start_send(message) {
                    return Poll::Ready(Err(write_failed(error)));
                }
                self.flushing = Some(closing);
            }
        }
        // The budget is spent: what was handed over goes out, then the task's other work runs.
        if self.flushing.is_some() {
            if let Err(unfinished) = self.flush(socket, cx) {
                return unfinished;
            }
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }

    /// Writes out what was handed to the socket; otherwise what `poll_write` returns meanwhile
    /// (waiting, under the stall watchdog, or the failure).
    fn flush<S>(
        &mut self,
        socket: &mut S,
        cx: &mut Context<'_>,
    ) -> Result<(), Poll<Result<Wrote, WriteFailure>>>
    where
        S: Sink<WsMessage> + Unpin,
        S::Error: std::error::Error + 'static,
    {
        match Pin::new(&mut *socket).poll_flush(cx) {
            Poll::Pending => Err(self.wait(cx)),
            Poll::Ready(Err(error)) => Err(Poll::Ready(Err(write_failed(error)))),
            Poll::Ready(Ok(())) => {
                self.flushing = None;
                self.stall_armed = false;
                Ok(())
            }
        }
    }

    /// The next message: the connection's own first, then the chat's next frame; `None` when
    /// none is ready, or the chat's frames ended (`chat_ended`: the chat is not polled again).
    fn take_next(&mut self, cx: &mut Context<'_>) -> Option<(WsMessage, bool)> {
        if let Some(control) = self.control.pop_front() {
            if self.control.is_empty() {
                // An idle connection keeps no queue: it was one after a ping.
                self.control = VecDeque::new();
            }
            return Some(control.into_message());
        }
        let chat = self.chat.as_mut().filter(|_| !self.chat_ended)?;
        match chat.frames.poll_next_unpin(cx) {
            Poll::Ready(Some(json)) => Some((WsMessage::Text(Utf8Bytes::from(json)), false)),
            Poll::Ready(None) => {
                self.chat_ended = true;
                None
            }
            Poll::Pending => None,
        }
    }

    /// A write waits on the socket: the stall watchdog runs until it makes progress.
    fn wait(&mut self, cx: &mut Context<'_>) -> Poll<Result<Wrote, WriteFailure>> {
        if !self.stall_armed {
            let deadline = Instant::now() + self.stall_limit;
            match self.stall.as_mut() {
                Some(stall) => stall.as_mut().reset(deadline),
                None => self.stall = Some(Box::pin(tokio::time::sleep_until(deadline))),
            }
            self.stall_armed = true;
        }
        let Some(stall) = self.stall.as_mut() else {
            return Poll::Pending;
        };
        match stall.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(stalled(self.stall_limit))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl Control {
    fn into_message(self) -> (WsMessage, bool) {
        match self {
            Control::Frame(json) => (WsMessage::Text(Utf8Bytes::from(json)), false),
            Control::Ping => (WsMessage::Ping(Default::default()), false),
            Control::Close(code, reason) => (close_message(code, reason), true),
        }
    }
}

pub(super) fn close_message(code: u16, reason: &'static str) -> WsMessage {
    WsMessage::Close(Some(CloseFrame {
        code,
        reason: Utf8Bytes::from_static(reason),
    }))
}

fn write_failed(error: impl std::error::Error + 'static) -> WriteFailure {
    if client_gone(&error) {
        // Not the server's failure: a client that left mid-stream (a closed tab, a lost network).
        tracing::debug!(%error, "the client went away during a write");
        ::metrics::counter!("hookwire_closed_connections_total", "reason" => "client_gone")
            .increment(1);
        return WriteFailure::Failed;
    }
    tracing::warn!(%error, "websocket write failed; closing the connection (1011)");
    ::metrics::counter!("hookwire_closed_connections_total", "reason" => "write_failed")
        .increment(1);
    WriteFailure::Failed
}

/// The peer reset the connection or closed it under the write: somewhere in the error's chain
/// is an I/O error that says so.
fn client_gone(error: &(dyn std::error::Error + 'static)) -> bool {
    use std::io::ErrorKind;
    let mut cause = Some(error);
    while let Some(error) = cause {
        if let Some(io) = error.downcast_ref::<std::io::Error>() {
            return matches!(
                io.kind(),
                ErrorKind::BrokenPipe | ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted
            );
        }
        cause = error.source();
    }
    false
}

fn stalled(limit: Duration) -> WriteFailure {
    tracing::warn!(
        "a client stopped reading: no write progress for {:.1}s; closing the connection and cancelling its chat",
        limit.as_secs_f64()
    );
    ::metrics::counter!("hookwire_closed_connections_total", "reason" => "write_stall")
        .increment(1);
    WriteFailure::Stalled
}

#[cfg(test)]
mod tests {
    use super::client_gone;
    use std::io::{Error, ErrorKind};

    /// As axum's WebSocket reports a failed write: its error around tungstenite's around the I/O
    /// error.
    fn socket_error(kind: ErrorKind) -> axum::Error {
        axum::Error::new(tungstenite::Error::Io(Error::from(kind)))
    }

    #[test]
    fn a_reset_or_broken_pipe_is_a_client_gone_and_other_failures_are_not() {
        assert!(client_gone(&socket_error(ErrorKind::BrokenPipe)));
        assert!(client_gone(&socket_error(ErrorKind::ConnectionReset)));
        assert!(!client_gone(&socket_error(ErrorKind::OutOfMemory)));
        let closed = axum::Error::new(tungstenite::Error::AlreadyClosed);
        assert!(!client_gone(&closed));
    }
}
