//! The writer task: drains the control and data channels into the socket, control first; a
//! failed or stalled write closes the connection and cancels the session.

use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message as WsMessage, Utf8Bytes};
use futures::{Sink, SinkExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{close_code, Outbound, WriteFailure};

/// The writer's ends of the two channels.
pub(super) struct WriterChannels {
    pub(super) data: mpsc::Receiver<Outbound>,
    pub(super) control: mpsc::Receiver<Outbound>,
}

impl WriterChannels {
    /// The next message: control first (a pong must not wait behind a long answer); `None`
    /// once the data channel is closed.
    async fn next(&mut self) -> Option<Outbound> {
        tokio::select! {
            biased;
            Some(control) = self.control.recv() => Some(control),
            data = self.data.recv() => data,
        }
    }
}

/// Writes outbound messages until the channels close, a close is sent, or the socket fails or
/// stalls (a write that makes no progress for `stall`); then cancels `failed`.
pub(super) async fn write_loop<W>(
    mut sink: W,
    mut channels: WriterChannels,
    stall: Duration,
    failed: CancellationToken,
    failure: std::sync::Arc<std::sync::Mutex<Option<WriteFailure>>>,
) where
    W: Sink<WsMessage> + Unpin,
    W::Error: std::fmt::Display,
{
    let fail = |why: WriteFailure| {
        if let Ok(mut slot) = failure.lock() {
            *slot = Some(why);
        }
        failed.cancel();
    };
    while let Some(outbound) = channels.next().await {
        let (message, last) = match outbound {
            Outbound::Frame(frame) => (WsMessage::Text(Utf8Bytes::from(frame.to_json())), false),
            Outbound::Ping => (WsMessage::Ping(Default::default()), false),
            Outbound::Close(code, reason) => (
                WsMessage::Close(Some(CloseFrame {
                    code,
                    reason: Utf8Bytes::from_static(reason),
                })),
                true,
            ),
        };
        // The sink's error type need not be `Send`: keep only its text across awaits.
        let sent = tokio::time::timeout(stall, sink.send(message))
            .await
            .map(|result| result.map_err(|error| error.to_string()));
        match sent {
            Ok(Ok(())) => {}
            Ok(Err(error)) => {
                tracing::warn!(%error, "websocket write failed; closing the connection (1011)");
                ::metrics::counter!("hookwire_closed_connections_total", "reason" => "write_failed")
                    .increment(1);
                let close = WsMessage::Close(Some(CloseFrame {
                    code: close_code::INTERNAL,
                    reason: Utf8Bytes::from_static("server write failed"),
                }));
                let _ = tokio::time::timeout(Duration::from_secs(1), sink.send(close)).await;
                fail(WriteFailure::Failed);
                return;
            }
            Err(_) => {
                tracing::warn!(
                    "a client stopped reading: no write progress for {:.1}s; closing the connection and cancelling its chat",
                    stall.as_secs_f64()
                );
                ::metrics::counter!("hookwire_closed_connections_total", "reason" => "write_stall")
                    .increment(1);
                fail(WriteFailure::Stalled);
                return;
            }
        }
        if last {
            break;
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(1), sink.close()).await;
}
