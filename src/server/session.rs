//! `ChatHandler`: one WebSocket session. The route only upgrades; this module runs the session
//! over any `Sink` + `Stream` of WebSocket messages, so it can be driven by a real socket or by
//! channels in tests.
//!
//! One task per connection: it reads the client's frames, keeps the connection alive, and writes
//! (`session/outgoing.rs`): the connection's own frames first, then the running chat's, which it
//! takes from the chat itself (`server::wire::WireChat` through the native wire's encoder), so a
//! streamed token reaches the socket in the task that read it from the upstream, and the socket
//! is neither split between tasks nor fed through a queue (docs/performance.md). Reading goes on
//! while a write waits: a `cancel` is read while a reply streams, and a slow client slows only
//! its own chat. A client that sends pings or bad frames without reading the answers is closed;
//! a write that makes no progress for `limits.write_stall_seconds` (the client stopped reading)
//! ends the session: the chat is dropped, its upstream request with it, the socket closed.

use std::future::Future;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::ws::Message as WsMessage;
use futures::{Sink, SinkExt, Stream, StreamExt};
use tokio::time::{Instant, Interval};
use tokio_util::sync::CancellationToken;

use super::access::SignedIn;
use super::frames::{ChatOrigin, ClientFrame, NativeEncoder, ServerFrame};
use super::wire::WireChat;
use super::AppState;
use crate::config::Limits;
use crate::hooks::SessionInfo;
use crate::types::{ChatEvent, ChatRequest, ErrorCode, NoticeLevel, SideWait};
use crate::voice::pipeline::Speech;

mod outgoing;
mod sign_in;

pub(super) use outgoing::WRITE_COALESCE_BYTES;
use outgoing::{close_message, Outgoing, RunningChat, WriteFailure, Wrote};
use sign_in::Renewal;

/// One chat's frames on this connection: its events through the native wire's encoder.
type ChatFrames = WireChat<NativeEncoder>;

/// Close codes of RFC 6455 that the session uses.
pub(super) mod close_code {
    pub(crate) const GOING_AWAY: u16 = 1001;
    pub(crate) const INVALID_DATA: u16 = 1007;
    pub(crate) const POLICY: u16 = 1008;
    pub(crate) const TOO_BIG: u16 = 1009;
    pub(crate) const INTERNAL: u16 = 1011;
}

/// What the session knows of its connection: where chats come from, and who is signed in
/// (replaced by an `auth` frame, whose token is checked meanwhile).
struct Connection<'a> {
    origin: &'a ChatOrigin<'a>,
    signed_in: Option<SignedIn>,
    renewal: Option<Renewal>,
}

/// How the session's loop ended.
enum Ending {
    ClientGone,
    Close(u16, &'static str),
    /// The server is draining and this connection has no chat running (any more).
    Shutdown,
    /// The server is draining and the running chat outlived the grace period.
    GraceOver,
    /// Nothing more can be written.
    WriteFailed(WriteFailure),
}

/// What woke the session's loop.
enum Step<E> {
    Wrote(Result<Wrote, WriteFailure>),
    Read(Option<Result<WsMessage, E>>),
    Side(Side),
}

/// What rarely happens beside reading and writing (polled only when it woke the task).
enum Side {
    Ping,
    IdleTimeout,
    Shutdown,
    GraceOver,
    Renewed(Result<SignedIn, super::access::TokenProblem>),
}

/// Runs one session to its end. `socket` is the WebSocket (or a test double).
/// `traceparent`: the upgrade request's, the parent of its chats' spans (docs/protocol.md §17)
/// when a chat frame brings none.
/// `signed_in`: who the upgrade's JWT signed in (`auth.jwt`), for every chat of the session.
pub(super) async fn run_session<S, E>(
    socket: S,
    state: AppState,
    traceparent: Option<String>,
    signed_in: Option<SignedIn>,
) where
    S: Sink<WsMessage> + Stream<Item = Result<WsMessage, E>> + Unpin + Send + 'static,
    S::Error: std::error::Error + 'static,
    E: Into<axum::Error>,
{
    let session = SessionInfo::new(uuid::Uuid::new_v4().to_string());
    metrics::gauge!("hookwire_connections_open").increment(1.0);
    metrics::counter!("hookwire_connections_total").increment(1);
    tracing::debug!(session = %session.session_id, "session opened");
    state.agent.session_started(&session).await;

    let mut socket = socket;
    let limits = &state.config.limits;
    let mut out = Outgoing::new(limits);
    let origin = ChatOrigin {
        session_id: &session.session_id,
        traceparent: traceparent.as_deref(),
        person: None,
    };
    let mut connection = Connection {
        origin: &origin,
        signed_in,
        renewal: None,
    };
    let ending = serve(&mut socket, &state, &mut connection, &mut out).await;
    let writable = end_session(ending, &mut socket, &mut out, limits, &session).await;
    // The chat (and its upstream request) is dropped before the goodbyes.
    drop(out);
    if writable {
        let _ = tokio::time::timeout(Duration::from_secs(1), socket.close()).await;
        // Close handshake: read until the client's close reply, so that unread data does not
        // make the kernel reset the connection and lose our close frame on the way. A client
        // whose writes stalled gets no such courtesy.
        let _ = tokio::time::timeout(Duration::from_secs(1), async {
            while let Some(Ok(message)) = socket.next().await {
                if matches!(message, WsMessage::Close(_)) {
                    break;
                }
            }
        })
        .await;
    }
    state.agent.session_ended(&session).await;
    metrics::gauge!("hookwire_connections_open").decrement(1.0);
    tracing::debug!(session = %session.session_id, "session closed");
}

/// The session's loop: reads client frames, writes, keeps the connection alive and watches the
/// server's shutdown, until one of them ends the session.
async fn serve<S, E>(
    socket: &mut S,
    state: &AppState,
    connection: &mut Connection<'_>,
    out: &mut Outgoing,
) -> Ending
where
    S: Sink<WsMessage> + Stream<Item = Result<WsMessage, E>> + Unpin,
    S::Error: std::error::Error + 'static,
    E: Into<axum::Error>,
{
    let limits = &state.config.limits;
    let mut last_seen = Instant::now();
    let mut ping =
        tokio::time::interval_at(Instant::now() + limits.ping_interval, limits.ping_interval);
    // Set once the server drains while a chat runs: the chat may finish until then, and the
    // connection is still read meanwhile (a cancel, a ping, a chat to refuse).
    let mut grace_until: Option<Instant> = None;
    let mut waits = Waits::default();
    loop {
        // The frames after an `auth` frame are read once its token is checked: a chat sent
        // right after it runs as the person it signs in.
        let reading = connection.renewal.is_none();
        let step = {
            let side = side_events(
                &mut ping,
                last_seen + limits.idle_timeout,
                &state.shutdown,
                grace_until,
                &mut connection.renewal,
            );
            let mut side = std::pin::pin!(side);
            waits.side.look_again();
            std::future::poll_fn(|cx| {
                poll_step(socket, out, reading, &mut waits, side.as_mut(), cx)
            })
            .await
        };
        match step {
            Step::Wrote(Err(failure)) => return Ending::WriteFailed(failure),
            Step::Wrote(Ok(Wrote::ChatEnded)) if grace_until.is_some() => return Ending::Shutdown,
            Step::Wrote(Ok(_)) => {}
            Step::Read(incoming) => {
                last_seen = Instant::now();
                if let Some(ending) = on_message(incoming, state, connection, out) {
                    return ending;
                }
            }
            Step::Side(Side::Ping) => {
                if last_seen.elapsed() >= limits.idle_timeout {
                    return Ending::Close(close_code::GOING_AWAY, "idle timeout");
                }
                out.ping();
            }
            Step::Side(Side::IdleTimeout) => {
                return Ending::Close(close_code::GOING_AWAY, "idle timeout")
            }
            Step::Side(Side::Shutdown) => {
                if out.chat().is_none() {
                    return Ending::Shutdown;
                }
                grace_until = Some(Instant::now() + limits.shutdown_grace);
            }
            Step::Side(Side::GraceOver) => return Ending::GraceOver,
            Step::Side(Side::Renewed(checked)) => {
                connection.renewal = None;
                let refused = sign_in::renewed(checked, &mut connection.signed_in);
                if refused.is_some_and(|frame| !out.control(frame)) {
                    return flooded(connection.origin.session_id);
                }
            }
        }
    }
}

/// What the session's task waits on beside the chat it writes, each polled only when it woke
/// the task: the task wakes once per streamed token, and the client's frames are rare (polling
/// the socket's read side each time zeroes its read buffer and registers its wakers again).
#[derive(Default)]
struct Waits {
    read: SideWait,
    side: SideWait,
}

/// One poll of the session: writing first (the chat runs here), then reading (if `reading`),
/// then the rare things beside them.
fn poll_step<S, E>(
    socket: &mut S,
    out: &mut Outgoing,
    reading: bool,
    waits: &mut Waits,
    side: std::pin::Pin<&mut impl Future<Output = Side>>,
    cx: &mut Context<'_>,
) -> Poll<Step<E>>
where
    S: Sink<WsMessage> + Stream<Item = Result<WsMessage, E>> + Unpin,
    S::Error: std::error::Error + 'static,
{
    if let Poll::Ready(wrote) = out.poll_write(socket, cx) {
        return Poll::Ready(Step::Wrote(wrote));
    }
    if reading {
        if let Poll::Ready(incoming) = waits.read.poll(cx, |cx| socket.poll_next_unpin(cx)) {
            return Poll::Ready(Step::Read(incoming));
        }
    }
    waits.side.poll(cx, |cx| side.poll(cx)).map(Step::Side)
}

/// The rare things: the keepalive's tick, the idle timeout, the server's shutdown and its grace
/// period, an `auth` token's check.
async fn side_events(
    ping: &mut Interval,
    idle_deadline: Instant,
    shutdown: &CancellationToken,
    grace_until: Option<Instant>,
    renewal: &mut Option<Renewal>,
) -> Side {
    tokio::select! {
        _ = ping.tick() => Side::Ping,
        _ = tokio::time::sleep_until(idle_deadline) => Side::IdleTimeout,
        _ = shutdown.cancelled(), if grace_until.is_none() => Side::Shutdown,
        _ = tokio::time::sleep_until(grace_until.unwrap_or_else(Instant::now)), if grace_until.is_some() => {
            Side::GraceOver
        }
        checked = async { match renewal.as_mut() { Some(renewal) => renewal.await, None => std::future::pending().await } }, if renewal.is_some() => {
            Side::Renewed(checked)
        }
    }
}

/// A message from the client (or the end of its stream); `Some` when it ends the session.
fn on_message<E: Into<axum::Error>>(
    incoming: Option<Result<WsMessage, E>>,
    state: &AppState,
    connection: &mut Connection<'_>,
    out: &mut Outgoing,
) -> Option<Ending> {
    let origin = connection.origin;
    let sent = match incoming {
        None => return Some(Ending::ClientGone),
        Some(Err(error)) => return Some(read_error_ending(error.into())),
        Some(Ok(WsMessage::Text(text))) => {
            match ClientFrame::parse(text.as_str(), &state.config.limits) {
                ClientFrame::Auth { token } => {
                    match sign_in::renew(token, state, connection.signed_in.as_ref()) {
                        Ok(renewal) => {
                            connection.renewal = Some(renewal);
                            true
                        }
                        Err(why) => out.control(ServerFrame::error(None, ErrorCode::BadFrame, why)),
                    }
                }
                frame => {
                    let origin = ChatOrigin {
                        person: connection.signed_in.as_ref().map(|s| &s.person),
                        ..*origin
                    };
                    handle_frame(frame, state, &origin, connection.signed_in.as_ref(), out)
                }
            }
        }
        Some(Ok(WsMessage::Binary(_))) => {
            let why = "binary frames are not supported; send JSON text frames";
            out.control(ServerFrame::error(None, ErrorCode::BadFrame, why))
        }
        Some(Ok(WsMessage::Close(_))) => return Some(Ending::ClientGone),
        Some(Ok(WsMessage::Ping(_) | WsMessage::Pong(_))) => true,
    };
    (!sent).then(|| flooded(origin.session_id))
}

/// What the way the loop ended asks for before the connection closes: a close frame, the
/// running chat's end, or nothing. `false` when nothing can be written any more.
async fn end_session<S>(
    ending: Ending,
    socket: &mut S,
    out: &mut Outgoing,
    limits: &Limits,
    session: &SessionInfo,
) -> bool
where
    S: Sink<WsMessage> + Unpin,
    S::Error: std::error::Error + 'static,
{
    match ending {
        Ending::ClientGone => true,
        Ending::Close(code, reason) => {
            out.close(code, reason);
            write_until(socket, out, Wrote::Closed, limits.write_stall).await
        }
        Ending::WriteFailed(failure) => {
            // Already logged where it failed.
            tracing::debug!(session = %session.session_id, ?failure, "session ends: a write failed");
            if failure == WriteFailure::Failed {
                let close = close_message(close_code::INTERNAL, "server write failed");
                let _ = tokio::time::timeout(Duration::from_secs(1), socket.send(close)).await;
            }
            false
        }
        Ending::Shutdown | Ending::GraceOver => {
            // Past the grace period the chat is cancelled (the client still gets its
            // `done(cancelled)` with the text so far), and dropped with the close if even that
            // does not come.
            if let Some(chat) = out.chat() {
                chat.cancel.cancel();
                let limit = Duration::from_secs(1);
                if !write_until(socket, out, Wrote::ChatEnded, limit).await {
                    return false;
                }
            }
            // Shutdown has its own deadline: don't wait the full stall time for a slow reader.
            out.close(close_code::GOING_AWAY, "server shutting down");
            let limit = limits.write_stall.min(Duration::from_secs(2));
            write_until(socket, out, Wrote::Closed, limit).await
        }
    }
}

/// Writes until `until` is reached, within `limit`; `false` if the writing failed.
async fn write_until<S>(socket: &mut S, out: &mut Outgoing, until: Wrote, limit: Duration) -> bool
where
    S: Sink<WsMessage> + Unpin,
    S::Error: std::error::Error + 'static,
{
    let reached = std::future::poll_fn(|cx| loop {
        match out.poll_write(socket, cx) {
            Poll::Ready(Ok(wrote)) if wrote == until => return Poll::Ready(true),
            // The chat ended on the way to the close.
            Poll::Ready(Ok(_)) => continue,
            Poll::Ready(Err(_)) => return Poll::Ready(false),
            Poll::Pending => return Poll::Pending,
        }
    });
    tokio::time::timeout(limit, reached).await.unwrap_or(true)
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

/// The client sent pings or bad frames faster than it read the answers.
fn flooded(session_id: &str) -> Ending {
    tracing::warn!(session = %session_id, "closing a connection that sends frames without reading the answers");
    ::metrics::counter!("hookwire_closed_connections_total", "reason" => "flood").increment(1);
    Ending::Close(
        close_code::POLICY,
        "frames sent without reading the answers",
    )
}

/// Handles one client frame; `false` when the client floods the control channel.
fn handle_frame(
    frame: ClientFrame,
    state: &AppState,
    origin: &ChatOrigin<'_>,
    signed_in: Option<&SignedIn>,
    out: &mut Outgoing,
) -> bool {
    match frame {
        ClientFrame::Ping { id } => out.control(ServerFrame::pong(id)),
        // Read by the reader loop, which may wait for the provider's keys.
        ClientFrame::Auth { .. } => true,
        ClientFrame::Invalid { id, error } => {
            metrics::counter!("hookwire_bad_frames_total").increment(1);
            out.control(ServerFrame::error(
                id,
                ErrorCode::BadFrame,
                error.to_string(),
            ))
        }
        ClientFrame::Cancel { id } => {
            // A cancel for a chat that is not running may race with `done`: ignored.
            if let Some(running) = out.chat() {
                if id.as_deref().is_none_or(|id| id == running.id) {
                    running.cancel.cancel();
                }
            }
            true
        }
        ClientFrame::Chat { payload, compact } => {
            let running = out.chat();
            let id = payload.id().map(str::to_string);
            if state.shutdown.is_cancelled() {
                // The connection closes once the running chat (if any) is over: the client
                // sends this chat again on a new connection, which reaches a server that is up.
                return out.control(ServerFrame::draining(id, running.is_none()));
            }
            if let Some(running) = running {
                let message = format!(
                    "chat {:?} is still running; cancel it or wait for its end",
                    running.id
                );
                return out.control(ServerFrame::error(id, ErrorCode::Busy, message));
            }
            if signed_in.is_some_and(SignedIn::expired) {
                return out.control(sign_in::expired(id));
            }
            let voice = payload.voice();
            let request = payload.into_request(compact, origin);
            let chat = start_chat(request, voice, state, out.max_frame_bytes());
            out.start_chat(chat);
            true
        }
    }
}

/// The chat a frame asks for.
/// `voice`: the chat asked for its answer spoken.
fn start_chat(
    request: ChatRequest,
    voice: bool,
    state: &AppState,
    max_frame_bytes: usize,
) -> RunningChat {
    let (id, cancel) = (request.id.clone(), request.cancel.clone());
    let events = state.agent.chat_stream(request);
    let encoder = NativeEncoder::new(id.clone(), state.instance.clone(), max_frame_bytes);
    let frames = match (voice, state.tts.clone()) {
        (true, Some(tts)) => {
            let speech = Speech::new(tts, cancel.clone());
            WireChat::spoken(events, speech, encoder, id.clone())
        }
        // The chat goes on as text, and says so after `start`.
        (true, None) => WireChat::new(events, encoder, id.clone()).after_start(ChatEvent::Notice {
            level: NoticeLevel::Warn,
            message: "voice was asked for, but this server has no voice.tts configured; the \
                      answer comes as text only"
                .into(),
            source: "voice".into(),
        }),
        (false, _) => WireChat::new(events, encoder, id.clone()),
    };
    RunningChat { id, cancel, frames }
}

#[cfg(test)]
mod tests;
