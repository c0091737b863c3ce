//! (14) One streamed chat over each wire: the native WebSocket (the baseline), AG-UI's SSE
//! (`/ag-ui`), the AI SDK's UI message stream (`/api/chat`) and OpenAI's chunks
//! (`/v1/chat/completions`), against one server, interleaved so that the machine's noise falls
//! on all alike. For each: the time to the first token (the request sent to the first text
//! delta read) and the process's CPU time per streamed token (this process holds the server, the
//! fake upstream and the client; each client reads raw bytes and looks only for its markers, so
//! the difference is the wire's). Goal: each front-end wire within 1.05× of the WebSocket.

use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::Message as WsMessage;

use crate::common::{self, FakeUpstream, Reply, TestServer};

const TOKENS: usize = 200;
const ROUNDS: usize = 40;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Wire {
    WebSocket,
    AgUi,
    AiSdk,
    OpenAi,
}

impl Wire {
    const ALL: [Wire; 4] = [Wire::WebSocket, Wire::AgUi, Wire::AiSdk, Wire::OpenAi];

    fn name(self) -> &'static str {
        match self {
            Wire::WebSocket => "WebSocket",
            Wire::AgUi => "AG-UI",
            Wire::AiSdk => "AI SDK",
            Wire::OpenAi => "OpenAI",
        }
    }
}

/// The process's CPU time (user and system) so far.
fn cpu_time() -> Duration {
    crate::rusage::own_cpu()
}

/// One chat over `wire`: (time to first token, whole chat).
async fn one_chat(
    wire: Wire,
    server: &TestServer,
    ws: &mut common::Client,
    sockets: &mut std::collections::HashMap<&'static str, tokio::net::TcpStream>,
    id: usize,
) -> Option<(Duration, Duration)> {
    let started = Instant::now();
    let mut first = None;
    if wire == Wire::WebSocket {
        let frame = json!({"type": "chat", "id": format!("w{id}"), "input": "go"});
        ws.ws.send(WsMessage::text(frame.to_string())).await.ok()?;
        while let Some(Ok(message)) = ws.ws.next().await {
            let WsMessage::Text(text) = message else {
                continue;
            };
            if first.is_none() && text.contains(r#""type":"text""#) {
                first = Some(started.elapsed());
            }
            if text.contains(r#""type":"done""#) || text.contains(r#""type":"error""#) {
                break;
            }
        }
        return Some((first?, started.elapsed()));
    }
    let (path, body, token) = match wire {
        Wire::AgUi => (
            "/ag-ui",
            json!({"threadId": "t", "runId": format!("r{id}"), "state": {}, "tools": [],
                   "context": [], "forwardedProps": {},
                   "messages": [{"id": "u1", "role": "user", "content": "go"}]}),
            "TEXT_MESSAGE_CONTENT",
        ),
        Wire::AiSdk => (
            "/api/chat",
            json!({"id": "c", "trigger": "submit-message", "messages": [
                {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "go"}]}]}),
            "text-delta",
        ),
        _ => (
            "/v1/chat/completions",
            json!({"model": "hookwire", "stream": true,
                   "messages": [{"role": "user", "content": "go"}]}),
            r#""content":"tok"#,
        ),
    };
    // A raw HTTP/1.1 request on a kept-alive connection, read from the socket in this task as
    // the WebSocket client reads its frames (an HTTP client library's own tasks and channels
    // would be measured otherwise). The chunked body ends with its empty last chunk.
    let body = body.to_string();
    let request = format!(
        "POST {path} HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        server.addr,
        body.len()
    );
    let socket = match sockets.get_mut(&path) {
        Some(socket) => socket,
        None => {
            let socket = tokio::net::TcpStream::connect(server.addr).await.ok()?;
            socket.set_nodelay(true).ok()?;
            sockets.entry(path).or_insert(socket)
        }
    };
    socket.write_all(request.as_bytes()).await.ok()?;
    let mut buffer = vec![0u8; 64 * 1024];
    let mut tail: Vec<u8> = Vec::new();
    loop {
        let read = socket.read(&mut buffer).await.ok()?;
        if read == 0 {
            return None;
        }
        if first.is_none() && memchr_str(&buffer[..read], token) {
            first = Some(started.elapsed());
        }
        tail.extend_from_slice(&buffer[..read]);
        if tail.ends_with(b"\r\n0\r\n\r\n") {
            break;
        }
        let keep = tail.len().saturating_sub(8);
        tail.drain(..keep);
    }
    Some((first?, started.elapsed()))
}

fn memchr_str(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle.as_bytes())
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times.get(times.len() / 2).copied().unwrap_or_default()
}

pub(crate) async fn bench_wires() {
    let upstream = FakeUpstream::start().await;
    let pieces: Vec<String> = (0..TOKENS).map(|i| format!("tok{i} ")).collect();
    let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
    let reply = Reply::text(&pieces);
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(|c| c.agent.planning = hookwire::agent::Planning::Off)
        .start()
        .await;
    let mut ws = server.connect().await;
    let mut sockets = std::collections::HashMap::new();
    let mut first: Vec<Vec<Duration>> = vec![Vec::new(); Wire::ALL.len()];
    let mut cpu: Vec<Duration> = vec![Duration::ZERO; Wire::ALL.len()];
    for round in 0..ROUNDS {
        for (index, wire) in Wire::ALL.into_iter().enumerate() {
            upstream.push(reply.clone());
            let before = cpu_time();
            let Some((ttft, _)) = one_chat(wire, &server, &mut ws, &mut sockets, round).await
            else {
                eprintln!("the {} chat failed", wire.name());
                return;
            };
            cpu[index] += cpu_time().saturating_sub(before);
            first[index].push(ttft);
        }
    }
    server.shutdown().await;
    let per_token = |index: usize| cpu[index].as_secs_f64() * 1e6 / (ROUNDS * TOKENS) as f64;
    let base_first = median(first[0].clone()).as_secs_f64();
    let base_cpu = per_token(0);
    for (index, wire) in Wire::ALL.into_iter().enumerate() {
        let ttft = median(first[index].clone());
        println!(
            "wires: {} ({TOKENS} tokens, {ROUNDS} chats): first token {ttft:?} (×{:.2} the WebSocket's), CPU {:.2} µs a token (×{:.2})",
            wire.name(),
            ttft.as_secs_f64() / base_first,
            per_token(index),
            per_token(index) / base_cpu,
        );
    }
}
