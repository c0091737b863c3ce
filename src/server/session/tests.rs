//! `run_session` driven by channels instead of a socket, as the module doc promises: the test
//! sends client messages into one channel and reads what the session writes from another. No
//! server, no network; the model is a script.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use async_trait::async_trait;
use axum::extract::ws::{Message as WsMessage, Utf8Bytes};
use futures::channel::mpsc::{self, UnboundedReceiver, UnboundedSender};
use futures::{stream, Sink, Stream, StreamExt};
use serde_json::{json, Value};
use tokio::task::JoinHandle;

use super::{close_code, run_session};
use crate::agent::AgentClient;
use crate::app::Sources;
use crate::config::{CliSettings, Config, FileConfig};
use crate::llm::{ChatModel, LlmError, ModelEvent, ModelRequest, ModelStream};
use crate::server::AppState;
use crate::skills::SkillRegistry;
use crate::types::Usage;

/// The session's side of the test: reads what the test sends, writes what the test reads. As a
/// WebSocket with a write buffer does, it keeps what it is handed until a flush writes it out:
/// the test reads only what was flushed, and counts the flushes that wrote something.
struct ChannelSocket {
    incoming: UnboundedReceiver<Result<WsMessage, axum::Error>>,
    outgoing: UnboundedSender<WsMessage>,
    buffered: Vec<WsMessage>,
    writes: Arc<AtomicUsize>,
    behaviour: Socket,
    /// For `Socket::Slow`: the next `poll_ready` waits.
    ready_waits: bool,
}

/// How the test's socket behaves when written to.
#[derive(Clone, Default)]
enum Socket {
    /// Every write goes through at once.
    #[default]
    Quick,
    /// A flush waits while the flag is set (a client that does not read for a while).
    Held(Arc<HeldFlush>),
    /// Every other message, the socket is busy writing out what it holds for a millisecond
    /// (`poll_ready` waits): a client that reads, slowly.
    Slow,
}

#[derive(Default)]
struct HeldFlush {
    held: AtomicBool,
    waker: Mutex<Option<std::task::Waker>>,
    /// Told each time a flush is held.
    holding: tokio::sync::Notify,
}

impl HeldFlush {
    fn release(&self) {
        self.held.store(false, Ordering::SeqCst);
        if let Some(waker) = self.waker.lock().ok().and_then(|mut waker| waker.take()) {
            waker.wake();
        }
    }
}

impl ChannelSocket {
    fn write_out(&mut self) -> Result<(), mpsc::SendError> {
        if self.buffered.is_empty() {
            return Ok(());
        }
        self.writes.fetch_add(1, Ordering::SeqCst);
        for message in self.buffered.drain(..) {
            self.outgoing.start_send(message)?;
        }
        Ok(())
    }
}

impl Stream for ChannelSocket {
    type Item = Result<WsMessage, axum::Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Pin::new(&mut self.get_mut().incoming).poll_next(cx)
    }
}

impl Sink<WsMessage> for ChannelSocket {
    type Error = mpsc::SendError;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        let this = self.get_mut();
        if matches!(this.behaviour, Socket::Slow) {
            this.ready_waits = !this.ready_waits;
            if !this.ready_waits {
                let waker = cx.waker().clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    waker.wake();
                });
                return Poll::Pending;
            }
        }
        Pin::new(&mut this.outgoing).poll_ready(cx)
    }

    fn start_send(self: Pin<&mut Self>, item: WsMessage) -> Result<(), Self::Error> {
        self.get_mut().buffered.push(item);
        Ok(())
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        let this = self.get_mut();
        if let Socket::Held(hold) = &this.behaviour {
            if let Ok(mut waker) = hold.waker.lock() {
                *waker = Some(cx.waker().clone());
            }
            if hold.held.load(Ordering::SeqCst) {
                hold.holding.notify_one();
                return Poll::Pending;
            }
        }
        Poll::Ready(this.write_out())
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        let this = self.get_mut();
        this.write_out()?;
        Pin::new(&mut this.outgoing).poll_close(cx)
    }
}

/// One scripted model call.
enum Reply {
    /// These deltas, then the end of the call.
    Text(Vec<&'static str>),
    /// These deltas, then nothing, ever (until the chat drops the stream).
    Hang(Vec<&'static str>),
    /// As `Hang`, and the flag is set once the chat dropped the stream.
    HangWatched(Vec<&'static str>, Arc<AtomicBool>),
}

/// Sets its flag when dropped.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A model that answers each call with the next reply of its script.
struct Script(Mutex<Vec<Reply>>);

#[async_trait]
impl ChatModel for Script {
    async fn stream(&self, _request: ModelRequest) -> Result<ModelStream, LlmError> {
        let reply = self.0.lock().ok().and_then(|mut replies| replies.pop());
        let deltas = |deltas: Vec<&'static str>| {
            stream::iter(deltas).map(|delta| Ok(ModelEvent::Text(delta.to_string())))
        };
        match reply {
            None => Err(LlmError::Stream("the script has no reply left".into())),
            Some(Reply::Text(text)) => Ok(deltas(text)
                .chain(stream::once(async {
                    Ok(ModelEvent::Finished {
                        tool_calls: Vec::new(),
                        finish_reason: Some("stop".into()),
                        usage: Some(Usage {
                            prompt_tokens: 10,
                            completion_tokens: 2,
                            ..Usage::default()
                        }),
                    })
                }))
                .boxed()),
            Some(Reply::Hang(text)) => Ok(deltas(text).chain(stream::pending()).boxed()),
            Some(Reply::HangWatched(text, dropped)) => {
                let flag = DropFlag(dropped);
                let hang = stream::pending().map(move |event| {
                    let _held = &flag;
                    event
                });
                Ok(deltas(text).chain(hang).boxed())
            }
        }
    }
}

/// The test's side of a running session.
struct Harness {
    to_session: UnboundedSender<Result<WsMessage, axum::Error>>,
    from_session: UnboundedReceiver<WsMessage>,
    state: AppState,
    session: JoinHandle<()>,
    /// The session's writes to the socket (flushes that wrote something).
    writes: Arc<AtomicUsize>,
}

impl Harness {
    /// Starts a session whose model plays `replies` in order.
    fn start(replies: Vec<Reply>) -> Harness {
        Harness::start_on(Socket::Quick, Duration::from_secs(30), replies)
    }

    /// As `start`, on a socket that behaves as `behaviour`, with `write_stall` as the limit.
    fn start_on(behaviour: Socket, write_stall: Duration, replies: Vec<Reply>) -> Harness {
        let mut config =
            match Config::resolve(&CliSettings::default(), FileConfig::default(), |_| None) {
                Ok(config) => config,
                Err(error) => panic!("the default config: {error}"),
            };
        config.limits.write_stall = write_stall;
        let mut replies = replies;
        replies.reverse(); // `Script` pops from the end
        let agent = AgentClient::builder()
            .model(Arc::new(Script(Mutex::new(replies))))
            .build();
        let skills = Arc::new(SkillRegistry::load("/nonexistent/hookwire-skills"));
        let state = AppState::new(config, agent, false, Sources::skills_only(skills));
        let (to_session, incoming) = mpsc::unbounded();
        let (outgoing, from_session) = mpsc::unbounded();
        let writes = Arc::new(AtomicUsize::new(0));
        let socket = ChannelSocket {
            incoming,
            outgoing,
            buffered: Vec::new(),
            writes: writes.clone(),
            behaviour,
            ready_waits: false,
        };
        let session = tokio::spawn(run_session(socket, state.clone(), None, None));
        Harness {
            to_session,
            from_session,
            state,
            session,
            writes,
        }
    }

    fn send(&self, message: WsMessage) {
        assert!(
            self.to_session.unbounded_send(Ok(message)).is_ok(),
            "the session stopped reading"
        );
    }

    fn send_json(&self, frame: Value) {
        self.send(WsMessage::Text(Utf8Bytes::from(frame.to_string())));
    }

    /// The next message the session writes; panics after 5 s or if the session wrote its last.
    async fn next(&mut self) -> WsMessage {
        match tokio::time::timeout(Duration::from_secs(5), self.from_session.next()).await {
            Ok(Some(message)) => message,
            Ok(None) => panic!("the session closed its sink"),
            Err(_) => panic!("the session wrote nothing for 5 s"),
        }
    }

    /// The next JSON frame (the session's keepalive pings skipped).
    async fn frame(&mut self) -> Value {
        loop {
            match self.next().await {
                WsMessage::Text(text) => match serde_json::from_str(text.as_str()) {
                    Ok(frame) => return frame,
                    Err(error) => panic!("not JSON ({error}): {text}"),
                },
                WsMessage::Ping(_) => continue,
                other => panic!("expected a text frame, got {other:?}"),
            }
        }
    }

    /// Starts chat `id`, whose model (a `Hang` reply of "partial") streams one delta and hangs.
    async fn hanging_chat(&mut self, id: &str) {
        self.send_json(json!({"type":"chat","id":id,"input":"hi","enable_tools":false}));
        assert_eq!(self.frame().await["type"], "start");
        assert_eq!(self.frame().await["delta"], "partial");
    }

    /// Frames until (and including) a chat's `done` or `error`.
    async fn until_end(&mut self) -> Vec<Value> {
        let mut frames = Vec::new();
        loop {
            let frame = self.frame().await;
            let end =
                frame["type"] == "done" || (frame["type"] == "error" && frame["id"].is_string());
            frames.push(frame);
            if end {
                return frames;
            }
        }
    }

    /// Waits for the session to end on its own.
    async fn ended(self) {
        match tokio::time::timeout(Duration::from_secs(5), self.session).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => panic!("the session panicked: {error}"),
            Err(_) => panic!("the session did not end within 5 s"),
        }
    }
}

fn types(frames: &[Value]) -> Vec<&str> {
    frames
        .iter()
        .map(|f| f["type"].as_str().unwrap_or("?"))
        .collect()
}

#[tokio::test]
async fn a_chat_streams_from_start_to_done() {
    let mut session = Harness::start(vec![Reply::Text(vec!["Hi", " there"])]);
    session.send_json(json!({"type":"chat","id":"c1","input":"hello","enable_tools":false}));
    let frames = session.until_end().await;
    assert_eq!(
        types(&frames),
        ["start", "text", "text", "done"],
        "{frames:?}"
    );
    assert!(frames.iter().all(|f| f["id"] == "c1"), "{frames:?}");
    let done = &frames[3];
    assert_eq!(done["reason"], "completed");
    assert_eq!(
        done["message"],
        json!({"role":"assistant","content":"Hi there"})
    );
    assert_eq!(
        done["usage"],
        json!({"prompt_tokens":10,"completion_tokens":2,"hook_calls":0,"hook_prompt_tokens":0,"hook_completion_tokens":0})
    );
    // The client goes away: the session ends without being told anything else.
    session.to_session.close_channel();
    session.ended().await;
}

#[tokio::test]
async fn frames_ready_together_are_written_together() {
    let deltas: Vec<&'static str> = vec!["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"];
    let mut session = Harness::start(vec![Reply::Text(deltas.clone())]);
    session.send_json(json!({"type":"chat","id":"c1","input":"hello","enable_tools":false}));
    let frames = session.until_end().await;
    let texts: Vec<&str> = frames.iter().filter_map(|f| f["delta"].as_str()).collect();
    assert_eq!(texts, deltas, "every frame, in order: {frames:?}");
    assert_eq!(frames.len(), 12, "{frames:?}");
    // The model's reply is all there at once: its 12 frames need a write or two (the write
    // budget), not one each.
    let writes = session.writes.load(Ordering::SeqCst);
    assert!(writes <= 2, "{writes} writes for 12 frames ready together");
}

#[tokio::test]
async fn a_frame_is_written_as_soon_as_the_next_is_not_ready() {
    // The reply streams one delta and hangs: the delta must reach the client now, not wait
    // for a frame that may never come.
    let mut session = Harness::start(vec![Reply::Hang(vec!["partial"])]);
    session.hanging_chat("c1").await;
    session.send_json(json!({"type":"ping","id":"p1"}));
    assert_eq!(session.frame().await, json!({"type":"pong","id":"p1"}));
}

#[tokio::test]
async fn a_chat_whose_last_frames_wait_for_the_client_is_still_the_running_chat() {
    let hold = Arc::new(HeldFlush::default());
    hold.held.store(true, Ordering::SeqCst);
    let mut session = Harness::start_on(
        Socket::Held(hold.clone()),
        Duration::from_secs(30),
        vec![Reply::Text(vec!["one"]), Reply::Text(vec!["two"])],
    );
    session.send_json(json!({"type":"chat","id":"c1","input":"hello","enable_tools":false}));
    // The chat is over, its frames wait for the client...
    hold.holding.notified().await;
    // ...and a chat sent now is refused as busy. The test's runtime has one thread: when the
    // session holds a flush again, it has read the frame and answered it.
    session.send_json(json!({"type":"chat","id":"c2","input":"again","enable_tools":false}));
    hold.holding.notified().await;
    assert!(
        session.from_session.try_recv().is_err(),
        "nothing was written while the client did not read"
    );
    hold.release();
    let frames = session.until_end().await;
    assert_eq!(types(&frames), ["start", "text", "done"], "{frames:?}");
    let busy = session.frame().await;
    assert_eq!(
        (busy["id"].as_str(), busy["code"].as_str()),
        (Some("c2"), Some("busy")),
        "{busy}"
    );
    // The connection goes on: the next chat runs.
    session.send_json(json!({"type":"chat","id":"c3","input":"again","enable_tools":false}));
    let frames = session.until_end().await;
    assert_eq!(frames.last().map(|f| &f["id"]), Some(&json!("c3")));
}

#[tokio::test]
async fn a_slow_reader_that_keeps_reading_is_not_taken_for_a_stalled_one() {
    // 600 frames ready at once to a socket that waits a millisecond every other one: longer
    // than the stall limit in all, with progress all along.
    let deltas: Vec<&'static str> = vec!["x"; 600];
    let mut session = Harness::start_on(
        Socket::Slow,
        Duration::from_millis(150),
        vec![Reply::Text(deltas)],
    );
    let started = std::time::Instant::now();
    session.send_json(json!({"type":"chat","id":"c1","input":"hello","enable_tools":false}));
    let frames = session.until_end().await;
    assert!(
        started.elapsed() > Duration::from_millis(150),
        "the test needs a chat longer than the stall limit"
    );
    assert_eq!(frames.len(), 602, "every frame, then done");
}

#[tokio::test]
async fn a_ping_frame_is_answered_with_a_pong_of_the_same_id() {
    let mut session = Harness::start(Vec::new());
    session.send_json(json!({"type":"ping","id":"p1"}));
    assert_eq!(session.frame().await, json!({"type":"pong","id":"p1"}));
    session.send_json(json!({"type":"ping"}));
    assert_eq!(session.frame().await, json!({"type":"pong"}));
}

#[tokio::test]
async fn a_bad_frame_is_an_error_and_the_session_goes_on() {
    let mut session = Harness::start(vec![Reply::Text(vec!["still here"])]);
    session.send(WsMessage::Text(Utf8Bytes::from_static("{not json")));
    let error = session.frame().await;
    assert_eq!(
        (error["type"].as_str(), error["code"].as_str()),
        (Some("error"), Some("bad_frame")),
        "{error}"
    );
    assert!(error.get("fatal").is_none(), "not fatal: {error}");
    session.send(WsMessage::Binary(vec![1, 2, 3].into()));
    assert_eq!(session.frame().await["code"], "bad_frame");
    // The session still reads frames and runs chats.
    session.send_json(json!({"type":"ping","id":"after"}));
    assert_eq!(session.frame().await, json!({"type":"pong","id":"after"}));
    session.send_json(json!({"type":"chat","id":"c2","input":"hi","enable_tools":false}));
    let frames = session.until_end().await;
    assert_eq!(
        frames.last().map(|f| &f["message"]["content"]),
        Some(&json!("still here"))
    );
}

#[tokio::test]
async fn a_cancel_is_read_while_the_reply_streams() {
    let mut session = Harness::start(vec![Reply::Hang(vec!["partial"])]);
    session.hanging_chat("c3").await;
    // The model hangs; only a cancel read while it streams can end this chat.
    session.send_json(json!({"type":"cancel","id":"c3"}));
    let frames = session.until_end().await;
    let done = frames.last().cloned().unwrap_or_default();
    assert_eq!(
        (done["type"].as_str(), done["reason"].as_str()),
        (Some("done"), Some("cancelled")),
        "{frames:?}"
    );
}

#[tokio::test]
async fn shutdown_closes_the_session_with_going_away() {
    let mut session = Harness::start(Vec::new());
    // A pong proves the session runs before it is told to stop.
    session.send_json(json!({"type":"ping","id":"p"}));
    assert_eq!(session.frame().await["type"], "pong");
    session.state.shutdown.cancel();
    let message = session.next().await;
    let WsMessage::Close(Some(close)) = message else {
        panic!("expected a close frame, got {message:?}");
    };
    assert_eq!(close.code, close_code::GOING_AWAY);
    // The client answers the close; the session ends.
    session.send(WsMessage::Close(None));
    session.ended().await;
}

#[tokio::test]
async fn a_pong_is_written_while_the_chat_waits_on_its_model() {
    let mut session = Harness::start(vec![Reply::Hang(vec!["partial"])]);
    session.hanging_chat("c4").await;
    // The writer waits on the chat's next frame; the reader's pong still goes out.
    session.send_json(json!({"type":"ping","id":"p4"}));
    let pong = session.frame().await;
    assert_eq!(
        (pong["type"].as_str(), pong["id"].as_str()),
        (Some("pong"), Some("p4"))
    );
    // And a second chat is refused as busy: the first one still runs.
    session.send_json(json!({"type":"chat","id":"c5","input":"again","enable_tools":false}));
    let busy = session.frame().await;
    assert_eq!(
        (busy["type"].as_str(), busy["code"].as_str()),
        (Some("error"), Some("busy")),
        "{busy}"
    );
}

#[tokio::test]
async fn a_client_that_leaves_drops_the_chat_and_its_model_stream() {
    let dropped = Arc::new(AtomicBool::new(false));
    let mut session = Harness::start(vec![Reply::HangWatched(vec!["partial"], dropped.clone())]);
    session.hanging_chat("c6").await;
    assert!(
        !dropped.load(Ordering::SeqCst),
        "the model stream runs while the chat does"
    );
    // The client goes away without a close: its stream of messages ends.
    let Harness {
        to_session,
        session: task,
        ..
    } = session;
    drop(to_session);
    match tokio::time::timeout(Duration::from_secs(5), task).await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => panic!("the session panicked: {error}"),
        Err(_) => panic!("the session did not end within 5 s"),
    }
    assert!(
        dropped.load(Ordering::SeqCst),
        "the chat's model stream was dropped with the session"
    );
}
