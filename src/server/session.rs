//! `ChatHandler`: one WebSocket session. The route only upgrades; this module runs the session
//! over any `Sink` + `Stream` of WebSocket messages, so it can be driven by a real socket or by
//! channels in tests.
//!
//! Three parts run at once: the reader loop (client frames, keepalive, shutdown), a writer task
//! that drains a bounded channel into the socket, and — while a chat runs — a forwarder task that
//! turns the chat's events into frames. A slow client slows only its own chat; a `cancel` is read
//! while a reply streams.

use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message as WsMessage, Utf8Bytes};
use futures::{Sink, SinkExt, Stream, StreamExt};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::frames::{ChatFrame, ClientFrame, ServerFrame};
use super::AppState;
use crate::agent::{ChatRequest, ErrorCode};
use crate::hooks::SessionInfo;

/// Close codes of RFC 6455 that the session uses.
pub mod close_code {
    pub const GOING_AWAY: u16 = 1001;
    pub const INVALID_DATA: u16 = 1007;
    pub const TOO_BIG: u16 = 1009;
}

/// What the writer task sends. Frames are boxed: the channel allocates its slots up front, and
/// small slots keep an idle connection cheap.
enum Outbound {
    Frame(Box<ServerFrame>),
    Ping,
    Close(u16, &'static str),
}

/// The chat running on this connection, if any.
struct RunningChat {
    id: String,
    cancel: CancellationToken,
    forwarder: JoinHandle<()>,
}

impl RunningChat {
    fn is_running(&self) -> bool {
        !self.forwarder.is_finished()
    }
}

/// How the reader loop ended.
enum Ending {
    ClientGone,
    Close(u16, &'static str),
    Shutdown,
}

/// Runs one session to its end. `socket` is the WebSocket (or a test double).
pub async fn run_session<S, E>(socket: S, state: AppState)
where
    S: Sink<WsMessage> + Stream<Item = Result<WsMessage, E>> + Send + 'static,
    S::Error: std::fmt::Display,
    E: Into<axum::Error>,
{
    let session = SessionInfo {
        session_id: uuid::Uuid::new_v4().to_string(),
    };
    metrics::gauge!("hookwire_connections_open").increment(1.0);
    metrics::counter!("hookwire_connections_total").increment(1);
    tracing::debug!(session = %session.session_id, "session opened");
    state.agent.session_started(&session).await;

    let (sink, mut stream) = socket.split();
    let (out_tx, out_rx) = mpsc::channel::<Outbound>(64);
    let writer = tokio::spawn(write_loop(sink, out_rx));
    let mut chat: Option<RunningChat> = None;
    let limits = state.config.limits.clone();
    let mut last_seen = Instant::now();
    let mut ping =
        tokio::time::interval_at(Instant::now() + limits.ping_interval, limits.ping_interval);

    let ending = loop {
        tokio::select! {
            incoming = stream.next() => {
                last_seen = Instant::now();
                match incoming {
                    None => break Ending::ClientGone,
                    Some(Err(error)) => break read_error_ending(error.into()),
                    Some(Ok(WsMessage::Text(text))) => {
                        let frame = ClientFrame::parse(text.as_str(), &limits);
                        handle_frame(frame, &state, &session, &out_tx, &mut chat).await;
                    }
                    Some(Ok(WsMessage::Binary(_))) => {
                        send(&out_tx, ServerFrame::error(None, ErrorCode::BadFrame, "binary frames are not supported; send JSON text frames")).await;
                    }
                    Some(Ok(WsMessage::Close(_))) => break Ending::ClientGone,
                    Some(Ok(WsMessage::Ping(_) | WsMessage::Pong(_))) => {}
                }
            }
            _ = ping.tick() => {
                if last_seen.elapsed() >= limits.idle_timeout {
                    break Ending::Close(close_code::GOING_AWAY, "idle timeout");
                }
                let _ = out_tx.send(Outbound::Ping).await;
            }
            _ = tokio::time::sleep_until(last_seen + limits.idle_timeout) => {
                break Ending::Close(close_code::GOING_AWAY, "idle timeout");
            }
            _ = state.shutdown.cancelled() => break Ending::Shutdown,
        }
    };

    match ending {
        Ending::ClientGone => {
            // Dropping the forwarder drops the chat stream, which drops the upstream request.
            if let Some(chat) = chat.take() {
                chat.forwarder.abort();
            }
        }
        Ending::Close(code, reason) => {
            if let Some(chat) = chat.take() {
                chat.forwarder.abort();
            }
            let _ = out_tx.send(Outbound::Close(code, reason)).await;
        }
        Ending::Shutdown => {
            // Running chats get the grace period to finish, then the socket closes with 1001.
            if let Some(mut chat) = chat.take() {
                let grace = limits.shutdown_grace;
                if tokio::time::timeout(grace, &mut chat.forwarder)
                    .await
                    .is_err()
                {
                    chat.cancel.cancel();
                    if tokio::time::timeout(Duration::from_secs(1), &mut chat.forwarder)
                        .await
                        .is_err()
                    {
                        chat.forwarder.abort();
                    }
                }
            }
            let _ = out_tx
                .send(Outbound::Close(
                    close_code::GOING_AWAY,
                    "server shutting down",
                ))
                .await;
        }
    }
    drop(out_tx);
    // The writer ends once the close is written or the client is gone; don't wait forever.
    let _ = tokio::time::timeout(Duration::from_secs(2), writer).await;
    // Close handshake: read until the client's close reply, so that unread data does not make
    // the kernel reset the connection and lose our close frame on the way.
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        while let Some(Ok(message)) = stream.next().await {
            if matches!(message, WsMessage::Close(_)) {
                break;
            }
        }
    })
    .await;
    state.agent.session_ended(&session).await;
    metrics::gauge!("hookwire_connections_open").decrement(1.0);
    tracing::debug!(session = %session.session_id, "session closed");
}

/// A read error: too big → 1009, invalid UTF-8 → 1007, anything else → the client is gone.
fn read_error_ending(error: axum::Error) -> Ending {
    use tungstenite::error::{CapacityError, Error as WsError};
    match error.into_inner().downcast::<WsError>() {
        Ok(inner) => match *inner {
            WsError::Capacity(CapacityError::MessageTooLong { .. }) => {
                Ending::Close(close_code::TOO_BIG, "message too big")
            }
            WsError::Capacity(_) => Ending::Close(close_code::TOO_BIG, "frame too big"),
            WsError::Utf8(_) => {
                Ending::Close(close_code::INVALID_DATA, "invalid UTF-8 in a text frame")
            }
            other => {
                tracing::debug!(error = %other, "websocket read failed");
                Ending::ClientGone
            }
        },
        Err(other) => {
            tracing::debug!(error = %other, "websocket read failed");
            Ending::ClientGone
        }
    }
}

async fn handle_frame(
    frame: ClientFrame,
    state: &AppState,
    session: &SessionInfo,
    out: &mpsc::Sender<Outbound>,
    chat: &mut Option<RunningChat>,
) {
    match frame {
        ClientFrame::Ping { id } => send(out, ServerFrame::Pong { id }).await,
        ClientFrame::Invalid { id, message } => {
            metrics::counter!("hookwire_bad_frames_total").increment(1);
            send(out, ServerFrame::error(id, ErrorCode::BadFrame, message)).await
        }
        ClientFrame::Cancel { id } => {
            // A cancel for a chat that is not running may race with `done`: ignored.
            if let Some(running) = chat.as_ref().filter(|c| c.is_running()) {
                if id.as_deref().is_none_or(|id| id == running.id) {
                    running.cancel.cancel();
                }
            }
        }
        ClientFrame::Chat(frame) => {
            if let Some(running) = chat.as_ref().filter(|c| c.is_running()) {
                let message = format!(
                    "chat {:?} is still running; cancel it or wait for its end",
                    running.id
                );
                send(out, ServerFrame::error(frame.id, ErrorCode::Busy, message)).await;
                return;
            }
            *chat = Some(start_chat(frame, state, session, out.clone()));
        }
    }
}

fn start_chat(
    frame: ChatFrame,
    state: &AppState,
    session: &SessionInfo,
    out: mpsc::Sender<Outbound>,
) -> RunningChat {
    let ChatFrame {
        id,
        messages,
        input,
        skills,
        enable_tools,
        session_hooks,
    } = frame;
    let id = id.unwrap_or_else(|| format!("chat-{}", uuid::Uuid::new_v4().simple()));
    let cancel = CancellationToken::new();
    let request = ChatRequest {
        id: id.clone(),
        session_id: session.session_id.clone(),
        messages,
        input,
        skills,
        enable_tools,
        session_hooks,
        cancel: cancel.clone(),
    };
    let mut events = state.agent.chat_stream(request);
    let chat_id = id.clone();
    let forwarder = tokio::spawn(async move {
        while let Some(event) = events.next().await {
            let terminal = event.is_terminal();
            if out
                .send(Outbound::Frame(Box::new(ServerFrame::from_event(
                    &chat_id, event,
                ))))
                .await
                .is_err()
                || terminal
            {
                break;
            }
        }
    });
    RunningChat {
        id,
        cancel,
        forwarder,
    }
}

async fn send(out: &mpsc::Sender<Outbound>, frame: ServerFrame) {
    let _ = out.send(Outbound::Frame(Box::new(frame))).await;
}

/// Writes outbound messages until the channel closes, a close is sent, or the socket fails.
async fn write_loop<W>(mut sink: W, mut rx: mpsc::Receiver<Outbound>)
where
    W: Sink<WsMessage> + Unpin,
    W::Error: std::fmt::Display,
{
    while let Some(outbound) = rx.recv().await {
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
        if let Err(error) = sink.send(message).await {
            tracing::debug!(%error, "websocket write failed");
            return;
        }
        if last {
            break;
        }
    }
    let _ = sink.close().await;
}
