//! `ChatHandler`: one WebSocket session. The route only upgrades; this module runs the session
//! over any `Sink` + `Stream` of WebSocket messages, so it can be driven by a real socket or by
//! channels in tests.
//!
//! Two tasks: the reader loop (client frames, keepalive, shutdown) and the writer
//! (`session/writer.rs`), which owns the socket's sending half and runs the chat: it takes the
//! chat's frames from the chat itself (`server::wire::WireChat` through the native wire's
//! encoder), so a streamed token reaches the socket in the task that read it from the upstream. A slow client slows only its own chat; a
//! `cancel` is read while a reply streams.
//!
//! The reader never waits on the writer: what it sends (pings, pongs, errors about client frames,
//! a chat to run) goes through a small queue with `try_send`; a client that floods it without
//! reading is closed. A write that makes no progress for `limits.write_stall_seconds` (the client
//! stopped reading) ends the session: the chat is dropped, its upstream request with it, the
//! socket closed.

use std::time::Duration;

use axum::extract::ws::Message as WsMessage;
use futures::channel::mpsc;
use futures::{Sink, SinkExt, Stream, StreamExt};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::access::SignedIn;
use super::frames::{frame_json, ChatOrigin, ClientFrame, NativeEncoder, ServerFrame};
use super::wire::WireChat;
use super::AppState;
use crate::config::Limits;
use crate::hooks::SessionInfo;
use crate::types::{ChatEvent, ChatRequest, ErrorCode, NoticeLevel};
use crate::voice::pipeline::Speech;

mod sign_in;
mod writer;

use writer::{write_loop, WriterSignals};

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

/// What the reader queues for the writer. Small: the queue's nodes stay small.
enum Outbound {
    /// A frame's JSON.
    Frame(String),
    Ping,
    Close(u16, &'static str),
    /// A chat to run, whose frames are written from now on.
    Chat(Box<ChatFrames>),
}

/// Slots of the writer's queue (the reader's pings, pongs, errors and chats). A client that sends
/// this many pings or bad frames without reading the answers is not reading at all.
///
/// The queue is `futures`' channel, a linked list of one node per message waiting: it holds
/// nothing once read. tokio's keeps blocks of 32 slots, allocated when it is made (~0.9 KB for
/// every idle connection) and a second one for good from the 33rd message on (the soak's RSS grew
/// by 8.7 MiB when its 10,000 connections passed 20 chats and 13 pings, docs/performance.md).
const QUEUE_SLOTS: usize = 32;

/// How the writer failed, as the reader learns it.
#[derive(Clone, Copy, Debug)]
enum WriteFailure {
    Stalled,
    Failed,
}

/// The reader's handle on the writer: its queue and the writer's failure, if any.
struct Outbox {
    queue: mpsc::Sender<Outbound>,
    failed: CancellationToken,
    failure: std::sync::Arc<std::sync::Mutex<Option<WriteFailure>>>,
    max_frame_bytes: usize,
}

impl Outbox {
    /// The reader's handle on a writer task started on `sink`.
    fn start<W>(sink: W, limits: &Limits) -> (Self, tokio::task::JoinHandle<()>)
    where
        W: Sink<WsMessage> + Unpin + Send + 'static,
        W::Error: std::fmt::Display,
    {
        // `channel(n)` holds n messages plus one per sender: the reader's is the only one.
        let (queue, queue_rx) = mpsc::channel::<Outbound>(QUEUE_SLOTS - 1);
        let outbox = Outbox {
            queue,
            failed: CancellationToken::new(),
            failure: Default::default(),
            max_frame_bytes: limits.max_frame_bytes,
        };
        let signals = WriterSignals {
            failed: outbox.failed.clone(),
            failure: outbox.failure.clone(),
        };
        let writer = tokio::spawn(write_loop(sink, queue_rx, limits.write_stall, signals));
        (outbox, writer)
    }

    /// Queues a frame from the reader without waiting; `false` if the client is flooding.
    fn control(&mut self, frame: ServerFrame) -> bool {
        let frames = frame_json(frame, self.max_frame_bytes);
        frames
            .into_iter()
            .all(|json| self.try_queue(Outbound::Frame(json)))
    }

    /// Queues without waiting; `false` if the queue is full (the client is flooding).
    fn try_queue(&mut self, outbound: Outbound) -> bool {
        match self.queue.try_send(outbound) {
            Ok(()) => true,
            // The writer is gone: the session is ending anyway.
            Err(error) => error.is_disconnected(),
        }
    }

    fn failure(&self) -> Option<WriteFailure> {
        self.failure.lock().ok().and_then(|slot| *slot)
    }
}

/// The chat running on this connection, if any.
struct RunningChat {
    id: String,
    cancel: CancellationToken,
    /// Cancelled once the writer took the chat's last frame, or dropped the chat.
    finished: CancellationToken,
}

impl RunningChat {
    fn is_running(&self) -> bool {
        !self.finished.is_cancelled()
    }
}

/// What the reader loop knows of its connection: where chats come from, and who is signed in
/// (replaced by an `auth` frame).
struct Connection<'a> {
    origin: &'a ChatOrigin<'a>,
    signed_in: &'a mut Option<SignedIn>,
}

/// How the reader loop ended.
enum Ending {
    ClientGone,
    Close(u16, &'static str),
    /// The server is draining and this connection has no chat running (any more).
    Shutdown,
    /// The server is draining and the running chat outlived the grace period.
    GraceOver,
    /// The writer failed or stalled: nothing more can be written.
    WriterFailed,
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
    S: Sink<WsMessage> + Stream<Item = Result<WsMessage, E>> + Send + 'static,
    S::Error: std::fmt::Display,
    E: Into<axum::Error>,
{
    let session = SessionInfo::new(uuid::Uuid::new_v4().to_string());
    metrics::gauge!("hookwire_connections_open").increment(1.0);
    metrics::counter!("hookwire_connections_total").increment(1);
    tracing::debug!(session = %session.session_id, "session opened");
    state.agent.session_started(&session).await;

    let (sink, mut stream) = socket.split();
    let limits = &state.config.limits;
    let (mut outbox, writer) = Outbox::start(sink, limits);
    let mut chat: Option<RunningChat> = None;
    let origin = ChatOrigin {
        session_id: &session.session_id,
        traceparent: traceparent.as_deref(),
        person: None,
    };
    let mut signed_in = signed_in;
    let mut connection = Connection {
        origin: &origin,
        signed_in: &mut signed_in,
    };
    let ending = read_frames(&mut stream, &state, &mut connection, &mut outbox, &mut chat).await;
    end_session(ending, &mut outbox, &mut chat, limits, &session).await;
    let writer_failed = outbox.failed.is_cancelled();
    drop(outbox);
    // The writer ends once the close is written or the client is gone; don't wait forever.
    let mut writer = writer;
    if tokio::time::timeout(Duration::from_secs(2), &mut writer)
        .await
        .is_err()
    {
        writer.abort();
    }
    // Close handshake: read until the client's close reply, so that unread data does not make
    // the kernel reset the connection and lose our close frame on the way. A client whose
    // writes stalled gets no such courtesy.
    if !writer_failed {
        let _ = tokio::time::timeout(Duration::from_secs(1), async {
            while let Some(Ok(message)) = stream.next().await {
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

/// The reader loop: client frames, keepalive, shutdown and the writer's failure, until one of
/// them ends the session.
async fn read_frames<R, E>(
    stream: &mut R,
    state: &AppState,
    connection: &mut Connection<'_>,
    outbox: &mut Outbox,
    chat: &mut Option<RunningChat>,
) -> Ending
where
    R: Stream<Item = Result<WsMessage, E>> + Unpin,
    E: Into<axum::Error>,
{
    let limits = &state.config.limits;
    let origin = connection.origin;
    let mut last_seen = Instant::now();
    let mut ping =
        tokio::time::interval_at(Instant::now() + limits.ping_interval, limits.ping_interval);
    // Set once the server drains while a chat runs: the chat may finish until then, and the
    // connection is still read meanwhile (a cancel, a ping, a chat to refuse).
    let mut grace_until: Option<Instant> = None;
    loop {
        tokio::select! {
            incoming = stream.next() => {
                last_seen = Instant::now();
                match incoming {
                    None => return Ending::ClientGone,
                    Some(Err(error)) => return read_error_ending(error.into()),
                    Some(Ok(WsMessage::Text(text))) => {
                        let sent = match ClientFrame::parse(text.as_str(), limits) {
                            ClientFrame::Auth { token } => {
                                sign_in::renew(&token, state, connection.signed_in, outbox).await
                            }
                            frame => {
                                let origin = ChatOrigin {
                                    person: connection.signed_in.as_ref().map(|s| &s.person),
                                    ..*origin
                                };
                                let signed_in = connection.signed_in.as_ref();
                                handle_frame(frame, state, &origin, signed_in, outbox, chat)
                            }
                        };
                        if !sent {
                            return flooded(origin.session_id);
                        }
                    }
                    Some(Ok(WsMessage::Binary(_))) => {
                        let why = "binary frames are not supported; send JSON text frames";
                        if !outbox.control(ServerFrame::error(None, ErrorCode::BadFrame, why)) {
                            return flooded(origin.session_id);
                        }
                    }
                    Some(Ok(WsMessage::Close(_))) => return Ending::ClientGone,
                    Some(Ok(WsMessage::Ping(_) | WsMessage::Pong(_))) => {}
                }
            }
            _ = ping.tick() => {
                if last_seen.elapsed() >= limits.idle_timeout {
                    return Ending::Close(close_code::GOING_AWAY, "idle timeout");
                }
                // Never wait here: a full queue means the writer is behind, and the stall
                // watchdog or the flood check deals with that.
                let _ = outbox.queue.try_send(Outbound::Ping);
            }
            _ = tokio::time::sleep_until(last_seen + limits.idle_timeout) => {
                return Ending::Close(close_code::GOING_AWAY, "idle timeout");
            }
            _ = state.shutdown.cancelled(), if grace_until.is_none() => {
                if !chat.as_ref().is_some_and(RunningChat::is_running) {
                    return Ending::Shutdown;
                }
                grace_until = Some(Instant::now() + limits.shutdown_grace);
            }
            _ = chat_ended(chat), if grace_until.is_some() => return Ending::Shutdown,
            _ = tokio::time::sleep_until(grace_until.unwrap_or_else(Instant::now)), if grace_until.is_some() => {
                return Ending::GraceOver;
            }
            _ = outbox.failed.cancelled() => return Ending::WriterFailed,
        }
    }
}

/// What the way the reader loop ended asks of the writer: a close frame, or nothing.
async fn end_session(
    ending: Ending,
    outbox: &mut Outbox,
    chat: &mut Option<RunningChat>,
    limits: &Limits,
    session: &SessionInfo,
) {
    match ending {
        // The writer drops the chat (and its upstream request) as it ends: once the queue
        // closes, or after the close frame, which it writes before the chat's next frame.
        Ending::ClientGone => {}
        Ending::Close(code, reason) => {
            close(outbox, code, reason, limits.write_stall).await;
        }
        Ending::WriterFailed => {
            // The writer already logged why, and dropped the chat as it ended.
            let failure = outbox.failure();
            tracing::debug!(session = %session.session_id, ?failure, "session ends: the writer failed");
        }
        Ending::Shutdown | Ending::GraceOver => {
            // Past the grace period the chat is cancelled (the client still gets its
            // `done(cancelled)` with the text so far), and dropped with the close if even that
            // does not come.
            if let Some(chat) = chat.take().filter(RunningChat::is_running) {
                chat.cancel.cancel();
                let _ =
                    tokio::time::timeout(Duration::from_secs(1), chat.finished.cancelled()).await;
            }
            // Shutdown has its own deadline: don't wait the full stall time for a slow reader.
            close(
                outbox,
                close_code::GOING_AWAY,
                "server shutting down",
                limits.write_stall.min(Duration::from_secs(2)),
            )
            .await;
        }
    }
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

/// Queues a close frame after the frames already queued, waiting at most `limit` (and not at
/// all once the writer has failed).
async fn close(outbox: &mut Outbox, code: u16, reason: &'static str, limit: Duration) {
    let queued = outbox.queue.send(Outbound::Close(code, reason));
    tokio::select! {
        _ = tokio::time::timeout(limit, queued) => {}
        _ = outbox.failed.cancelled() => {}
    }
}

/// Waits until the writer took the running chat's last frame; at once when there is none.
async fn chat_ended(chat: &mut Option<RunningChat>) {
    if let Some(running) = chat.as_mut() {
        running.finished.cancelled().await;
    }
}

/// Handles one client frame; `false` when the client floods the control channel.
fn handle_frame(
    frame: ClientFrame,
    state: &AppState,
    origin: &ChatOrigin<'_>,
    signed_in: Option<&SignedIn>,
    out: &mut Outbox,
    chat: &mut Option<RunningChat>,
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
            if let Some(running) = chat.as_ref().filter(|c| c.is_running()) {
                if id.as_deref().is_none_or(|id| id == running.id) {
                    running.cancel.cancel();
                }
            }
            true
        }
        ClientFrame::Chat { payload, compact } => {
            let running = chat.as_ref().filter(|c| c.is_running());
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
            let (running, frames) = start_chat(request, voice, state, out.max_frame_bytes);
            *chat = Some(running);
            out.try_queue(Outbound::Chat(Box::new(frames)))
        }
    }
}

/// The chat a frame asks for: the reader's handle on it, and its frames for the writer.
/// `voice`: the chat asked for its answer spoken.
fn start_chat(
    request: ChatRequest,
    voice: bool,
    state: &AppState,
    max_frame_bytes: usize,
) -> (RunningChat, ChatFrames) {
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
    let running = RunningChat {
        id,
        cancel,
        finished: frames.finished(),
    };
    (running, frames)
}

#[cfg(test)]
mod tests;
