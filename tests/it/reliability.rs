//! Every chat ends, nothing wedges: latency of short chats, slow or stuck clients, big frames,
//! panicking models and hooks that never answer.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures::SinkExt;
use hookwire::agent::NoticeLevel;
use hookwire::hooks::{AgentHook, Flow, HookContext, HookResult, LlmRequest};
use hookwire::llm::{ChatModel, LlmError, ModelRequest, ModelStream};
use hookwire::tools::{Tool, ToolOutput, ToolSpec};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message as WsMessage;

use crate::common::*;

/// A client that trickles its request headers is cut off after the header-read timeout.
#[tokio::test]
async fn slow_request_headers_are_cut_off() {
    let server = TestServer::builder()
        .config(|c| {
            c.limits.header_read_timeout = Duration::from_millis(500);
        })
        .start()
        .await;
    let mut socket = TcpStream::connect(server.addr).await.unwrap();
    socket
        .write_all(b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .unwrap();
    let started = Instant::now();
    let mut buf = [0u8; 256];
    let read = tokio::time::timeout(Duration::from_secs(5), socket.read(&mut buf)).await;
    assert!(
        matches!(read, Ok(Ok(0)) | Ok(Err(_))),
        "the server kept a connection with incomplete headers: {read:?}"
    );
    assert!(started.elapsed() >= Duration::from_millis(300));
    server.shutdown().await;
}

/// At most `max_pending_connections` sockets wait for their headers; an upgraded session does
/// not count against that.
#[tokio::test]
async fn pending_connections_are_capped_and_sessions_do_not_count() {
    let server = TestServer::builder()
        .config(|c| {
            c.limits.header_read_timeout = Duration::from_millis(800);
            c.limits.max_pending_connections = 2;
        })
        .start()
        .await;
    // Two open WebSocket sessions: both were upgraded, so both slots are free again.
    let _a = server.connect().await;
    let _b = server.connect().await;
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(5), http_get(server.addr, "/healthz"))
            .await
            .expect("an upgraded session held a pending slot"),
        (200, "ok".to_string())
    );
    // Two trickling clients take both slots; a third request waits until they are cut off.
    let mut slow = Vec::new();
    for _ in 0..2 {
        let mut socket = TcpStream::connect(server.addr).await.unwrap();
        socket.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
        slow.push(socket);
    }
    let started = Instant::now();
    let (status, _) =
        tokio::time::timeout(Duration::from_secs(10), http_get(server.addr, "/healthz"))
            .await
            .expect("the third request was never served");
    assert_eq!(status, 200);
    assert!(
        started.elapsed() >= Duration::from_millis(400),
        "the third connection was served while both slots were taken ({:?})",
        started.elapsed()
    );
    server.shutdown().await;
}

/// A WebSocket client with a tiny receive buffer that sends a chat and never reads.
async fn client_that_never_reads(addr: std::net::SocketAddr) -> impl Sized {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let stream = socket.connect(addr).await.unwrap();
    let (mut ws, _) = tokio_tungstenite::client_async(format!("ws://{addr}/ws"), stream)
        .await
        .unwrap();
    ws.send(WsMessage::text(
        json!({"type":"chat","input":"talk","enable_tools":false}).to_string(),
    ))
    .await
    .unwrap();
    ws
}

/// A reply of `total` bytes of text in pieces of `piece` bytes, streamed as fast as the reader
/// takes it.
fn text_reply(total: usize, piece: usize) -> Reply {
    let piece = "x".repeat(piece);
    let pieces: Vec<&str> = std::iter::repeat_n(piece.as_str(), total / piece.len()).collect();
    Reply::text(&pieces)
}

/// A client that stops reading loses its session: its chat is cancelled, the upstream request
/// dropped, and its connection slot freed for the next client.
#[tokio::test]
async fn a_client_that_stops_reading_is_closed_and_its_chat_cancelled() {
    let upstream = FakeUpstream::start().await;
    upstream.push(text_reply(64 << 20, 64 << 10));
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(|c| {
            c.limits.write_stall = Duration::from_millis(700);
            c.limits.ping_interval = Duration::from_millis(100);
            c.limits.max_connections = 1;
        })
        .start()
        .await;
    let stuck = client_that_never_reads(server.addr).await;
    assert!(
        upstream.wait_dropped(Duration::from_secs(20)).await,
        "the upstream request of a stalled client was never dropped"
    );
    // The slot is free again: a new client connects and chats.
    let connected = std::sync::Mutex::new(None);
    let url = format!("ws://{}/ws", server.addr);
    let ok = eventually(Duration::from_secs(10), || async {
        match tokio_tungstenite::connect_async(url.as_str()).await {
            Ok((ws, _)) => {
                *connected.lock().unwrap() = Some(ws);
                true
            }
            Err(_) => false,
        }
    })
    .await;
    assert!(ok, "the stalled session kept its connection slot");
    let mut client = Client {
        ws: connected.into_inner().unwrap().unwrap(),
    };
    upstream.push(Reply::text(&["hello"]));
    let frames = client
        .chat(json!({"type":"chat","input":"hi","enable_tools":false}))
        .await;
    assert_eq!(text_of(&frames), "hello");
    drop(stuck);
    server.shutdown().await;
}

/// A long answer (over twice the input limit) is delivered whole and ends with `done`.
#[tokio::test]
async fn a_long_answer_ends_with_done() {
    let upstream = FakeUpstream::start().await;
    let total = 40 * 64 * 1024; // 2.5 MiB
    upstream.push(text_reply(total, 64 << 10));
    let server = TestServer::builder().upstream(&upstream).start().await;
    let mut client = server.connect().await;
    let frames = client
        .chat(json!({"type":"chat","input":"talk","enable_tools":false}))
        .await;
    let done = frames.last().unwrap();
    assert_eq!(done["type"], "done", "{:?}", done);
    assert_eq!(done["message"]["content"].as_str().unwrap().len(), total);
    assert_eq!(text_of(&frames).len(), total);
    server.shutdown().await;
}

/// Sends a 3 MiB notice from a hook.
struct Loud;

#[async_trait]
impl AgentHook for Loud {
    fn name(&self) -> &str {
        "loud"
    }
    async fn post_send_message(&self, ctx: &mut HookContext) -> HookResult {
        ctx.notify(NoticeLevel::Info, "n".repeat(3 << 20), "loud");
        Ok(())
    }
}

/// Returns 1.5 MiB (the fake upstream takes request bodies up to 2 MB).
struct Huge;

#[async_trait]
impl Tool for Huge {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "huge".into(),
            description: "returns a lot".into(),
            parameters: json!({"type":"object","properties":{}}),
        }
    }
    async fn run(&self, _: Value) -> ToolOutput {
        ToolOutput::ok("y".repeat(3 << 19))
    }
}

/// Hook and tool output over `limits.max_frame_bytes` is cut with a marker; the chat ends.
#[tokio::test]
async fn hook_and_tool_output_is_cut_to_the_frame_limit() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["[NEED_TOOL] plan"]));
    upstream.push(Reply::tool_calls(&[("t1", "huge", json!({}))]));
    upstream.push(Reply::text(&["done"]));
    let server = TestServer::builder()
        .upstream(&upstream)
        .agent(|b| b.hook(Arc::new(Loud)).tool(Arc::new(Huge)))
        .start()
        .await;
    let mut client = server.connect().await;
    client.send(json!({"type":"chat","input":"go"})).await;
    let mut frames = Vec::new();
    loop {
        let message = client.next_message(Duration::from_secs(10)).await.unwrap();
        let WsMessage::Text(text) = message else {
            panic!("unexpected {message:?}")
        };
        assert!(text.len() <= 1024 * 1024, "a frame of {} bytes", text.len());
        let frame: Value = serde_json::from_str(text.as_str()).unwrap();
        let end = frame["type"] == "done" || frame["type"] == "error";
        frames.push(frame);
        if end {
            break;
        }
    }
    assert_eq!(
        frames.last().unwrap()["type"],
        "done",
        "{:?}",
        frames.last()
    );
    let notice = frames.iter().find(|f| f["type"] == "notice").unwrap();
    assert!(notice["message"]
        .as_str()
        .unwrap()
        .ends_with("over the frame limit of 1048576 bytes]"));
    let result = frames.iter().find(|f| f["type"] == "tool_result").unwrap();
    assert!(result["content"].as_str().unwrap().contains("[cut: "));
    // The model still saw the whole result.
    let sent = upstream.requests()[2].body.to_string();
    assert!(sent.len() > 3 << 19);
    server.shutdown().await;
}

/// A model whose stream panics.
struct PanickingModel;

#[async_trait]
impl ChatModel for PanickingModel {
    async fn stream(&self, _: ModelRequest) -> Result<ModelStream, LlmError> {
        panic!("model bug");
    }
}

#[tokio::test]
async fn a_panicking_model_ends_the_chat_with_an_internal_error() {
    let server = TestServer::builder()
        .agent(|b| b.model(Arc::new(PanickingModel)))
        .start()
        .await;
    let mut client = server.connect().await;
    let frames = client
        .chat(json!({"type":"chat","id":"p1","input":"hi","enable_tools":false}))
        .await;
    let last = frames.last().unwrap();
    assert_eq!(
        (last["type"].as_str(), last["code"].as_str()),
        (Some("error"), Some("internal"))
    );
    assert_eq!(last["id"], "p1");
    assert_eq!(
        types_of(&frames)
            .iter()
            .filter(|t| *t == "error" || *t == "done")
            .count(),
        1
    );
    // The connection lives on.
    client.send(json!({"type":"ping","id":"x"})).await;
    assert_eq!(client.frame().await, json!({"type":"pong","id":"x"}));
    server.shutdown().await;
}

/// A Rust hook that never answers.
struct Stuck;

#[async_trait]
impl AgentHook for Stuck {
    fn name(&self) -> &str {
        "stuck"
    }
    async fn pre_llm_request(&self, _: &mut HookContext, _: &mut LlmRequest) -> HookResult<Flow> {
        std::future::pending().await
    }
}

#[tokio::test]
async fn a_hook_that_never_answers_gets_the_chain_budget() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["answer"]));
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(|c| c.limits.hook_chain_timeout = Duration::from_millis(200))
        .agent(|b| b.hook(Arc::new(Stuck)))
        .start()
        .await;
    let mut client = server.connect().await;
    let frames = client
        .chat(json!({"type":"chat","input":"hi","enable_tools":false}))
        .await;
    assert_eq!(frames.last().unwrap()["type"], "done");
    assert_eq!(text_of(&frames), "answer");
    let (_, metrics) = http_get(server.addr, "/metrics").await;
    assert!(
        metrics
            .lines()
            .any(|l| l.contains("hook=\"stuck\"") && l.contains("outcome=\"timeout\"")),
        "{metrics}"
    );
    server.shutdown().await;
}

/// The value of an unlabelled counter in a `/metrics` body.
fn counter(body: &str, name: &str) -> f64 {
    body.lines()
        .find_map(|line| line.strip_prefix(&format!("{name} ")))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or_else(|| panic!("{name} missing from {body}"))
}

/// A connection opened ahead of time that never sends a byte (a browser's preconnect) is closed
/// at the header timeout and counted apart, not as a rejection.
#[tokio::test]
async fn a_connection_that_sends_nothing_is_counted_apart_from_rejections() {
    let server = TestServer::builder()
        .config(|c| {
            c.limits.header_read_timeout = Duration::from_millis(300);
        })
        .start()
        .await;
    let (_, before) = http_get(server.addr, "/metrics").await;
    let idle_before = counter(&before, "hookwire_idle_connections_closed_total");
    let mut socket = TcpStream::connect(server.addr).await.unwrap();
    let mut buf = [0u8; 16];
    let read = tokio::time::timeout(Duration::from_secs(5), socket.read(&mut buf)).await;
    assert!(matches!(read, Ok(Ok(0)) | Ok(Err(_))), "closed: {read:?}");
    let counted = eventually(Duration::from_secs(5), || async {
        let (_, body) = http_get(server.addr, "/metrics").await;
        counter(&body, "hookwire_idle_connections_closed_total") > idle_before
    })
    .await;
    assert!(counted, "the idle connection was counted");
    server.shutdown().await;
}
