//! The writer task: owns the socket's sending half. It writes what the reader queues (pings,
//! pongs, errors, the close) before anything else, and the running chat's frames, which it takes
//! from the chat itself, so the chat runs in this task. A failed or stalled write closes the
//! connection and cancels the session.

use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message as WsMessage, Utf8Bytes};
use futures::channel::mpsc;
use futures::{FutureExt, Sink, SinkExt, StreamExt};
use tokio_util::sync::CancellationToken;

use super::{close_code, ChatFrames, Outbound, WriteFailure};
use crate::types::SideWait;

/// How the writer tells the reader that it failed.
pub(super) struct WriterSignals {
    /// Cancelled by the writer when a write failed or stalled; `failure` says which.
    pub(super) failed: CancellationToken,
    pub(super) failure: std::sync::Arc<std::sync::Mutex<Option<WriteFailure>>>,
}

/// Writes until the reader's queue closes, a close is sent, or the socket fails or stalls (a
/// write that makes no progress for `stall`); then cancels `signals.failed`. The queue is read
/// before the chat's next frame, so a close ends the session without waiting for the chat, and
/// the chat (with its upstream request) is dropped with the writer.
pub(super) async fn write_loop<W>(
    mut sink: W,
    mut queue: mpsc::Receiver<Outbound>,
    stall: Duration,
    signals: WriterSignals,
) where
    W: Sink<WsMessage> + Unpin,
    W::Error: std::fmt::Display,
{
    let mut chat: Option<Box<ChatFrames>> = None;
    let mut queue_wait = SideWait::new();
    // `None`: the queue is closed, the reader is gone.
    while let Some((message, last)) =
        std::future::poll_fn(|cx| poll_next(&mut queue, &mut queue_wait, &mut chat, cx)).await
    {
        if let Err(why) = write(&mut sink, message, stall).await {
            signals.fail(why);
            return;
        }
        if last {
            break;
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(1), sink.close()).await;
}

/// The next message to write, and whether it is the last (a close); `None` once the queue is
/// closed. What the reader queued comes first, then the running chat's next frame. The queue is
/// polled only when it woke the writer ([`SideWait`]): looked at before every streamed frame, it
/// was a measurable share of a token's CPU (docs/performance.md).
fn poll_next(
    queue: &mut mpsc::Receiver<Outbound>,
    queue_wait: &mut SideWait,
    chat: &mut Option<Box<ChatFrames>>,
    cx: &mut Context<'_>,
) -> Poll<Option<(WsMessage, bool)>> {
    loop {
        let queued = match queue_wait.poll(cx, |cx| queue.poll_next_unpin(cx)) {
            Poll::Ready(Some(outbound)) => outbound,
            Poll::Ready(None) => return Poll::Ready(None),
            Poll::Pending => {
                let Some(frames) = chat else {
                    return Poll::Pending;
                };
                match frames.poll_next_unpin(cx) {
                    Poll::Ready(Some(json)) => {
                        return Poll::Ready(Some((WsMessage::Text(Utf8Bytes::from(json)), false)))
                    }
                    Poll::Ready(None) => {
                        *chat = None;
                        continue;
                    }
                    Poll::Pending => return Poll::Pending,
                }
            }
        };
        let message = match queued {
            // The reader starts a chat only once the previous one's last frame was taken: the
            // one replaced has nothing more to say.
            Outbound::Chat(frames) => {
                *chat = Some(frames);
                continue;
            }
            Outbound::Frame(json) => (WsMessage::Text(Utf8Bytes::from(json)), false),
            Outbound::Ping => (WsMessage::Ping(Default::default()), false),
            Outbound::Close(code, reason) => (
                WsMessage::Close(Some(CloseFrame {
                    code,
                    reason: Utf8Bytes::from_static(reason),
                })),
                true,
            ),
        };
        return Poll::Ready(Some(message));
    }
}

/// Sends one message within `stall`; a failure is logged and counted here.
async fn write<W>(sink: &mut W, message: WsMessage, stall: Duration) -> Result<(), WriteFailure>
where
    W: Sink<WsMessage> + Unpin,
    W::Error: std::fmt::Display,
{
    // Most writes complete at once: the stall watchdog's timer is set only for one that waits
    // (a timer per frame was a measurable share of a streamed token's CPU).
    // The sink's error type need not be `Send`: keep only its text across awaits.
    let mut send = sink
        .send(message)
        .map(|result| result.map_err(|error| error.to_string()));
    let sent = match futures::poll!(&mut send) {
        Poll::Ready(result) => Ok(result),
        Poll::Pending => tokio::time::timeout(stall, send).await,
    };
    match sent {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => {
            tracing::warn!(%error, "websocket write failed; closing the connection (1011)");
            ::metrics::counter!("hookwire_closed_connections_total", "reason" => "write_failed")
                .increment(1);
            let close = WsMessage::Close(Some(CloseFrame {
                code: close_code::INTERNAL,
                reason: Utf8Bytes::from_static("server write failed"),
            }));
            let _ = tokio::time::timeout(Duration::from_secs(1), sink.send(close)).await;
            Err(WriteFailure::Failed)
        }
        Err(_) => {
            tracing::warn!(
                "a client stopped reading: no write progress for {:.1}s; closing the connection and cancelling its chat",
                stall.as_secs_f64()
            );
            ::metrics::counter!("hookwire_closed_connections_total", "reason" => "write_stall")
                .increment(1);
            Err(WriteFailure::Stalled)
        }
    }
}

impl WriterSignals {
    fn fail(&self, why: WriteFailure) {
        if let Ok(mut slot) = self.failure.lock() {
            *slot = Some(why);
        }
        self.failed.cancel();
    }
}
