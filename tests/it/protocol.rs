//! The WebSocket chat protocol for direct chats: frames, ids, cancel, busy, limits, bad frames.

use std::time::Duration;

use crate::common::*;
use futures::StreamExt;
use serde_json::json;
use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};
use tokio_tungstenite::tungstenite::protocol::frame::Frame;
use tokio_tungstenite::tungstenite::Message as WsMessage;

#[tokio::test]
async fn direct_chat_streams_and_sends_history_upstream() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["Hel", "lo ", "wörld"]));
    let server = TestServer::builder().upstream(&upstream).start().await;
    let mut client = server.connect().await;
    let frames = client
        .chat(json!({"type":"chat","id":"c1","enable_tools":false,"input":"say hello",
            "messages":[{"role":"user","content":"earlier"},{"role":"assistant","content":"reply"},
                        {"role":"system","content":"be brief","_hook":{"name":"h","skill":"s","timing":"after_user_input","sig":""}}]}))
        .await;
    assert_eq!(types_of(&frames), ["start", "text", "done"]);
    assert!(frames.iter().all(|f| f["id"] == "c1"), "{frames:?}");
    assert_eq!(text_of(&frames), "Hello wörld");
    let done = frames.last().unwrap();
    assert_eq!(done["reason"], "completed");
    assert_eq!(
        done["message"],
        json!({"role":"assistant","content":"Hello wörld"})
    );
    assert_eq!(
        done["usage"],
        json!({"prompt_tokens":10,"completion_tokens":3,"hook_calls":0,"hook_prompt_tokens":0,"hook_completion_tokens":0})
    );

    let requests = upstream.requests();
    assert_eq!(requests.len(), 1, "a direct chat is one upstream call");
    let request = &requests[0];
    assert_eq!(request.body["model"], "fake-model");
    assert_eq!(request.body["stream"], true);
    assert_eq!(request.body["stream_options"]["include_usage"], true);
    assert!(
        request.body.get("tools").is_none(),
        "no tools on a direct call"
    );
    assert_eq!(request.headers["authorization"], "Bearer test-key");
    let messages = request.messages();
    assert_eq!(messages[0].0, "system");
    assert_eq!(
        &messages[1..],
        &[
            ("user".to_string(), "earlier".to_string()),
            ("assistant".to_string(), "reply".to_string()),
            ("system".to_string(), "be brief".to_string()),
            ("user".to_string(), "say hello".to_string()),
        ]
    );
    assert!(
        !request.body.to_string().contains("_hook"),
        "_hook is never sent upstream"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn ids_are_echoed_or_made_up_and_ping_pongs() {
    let upstream = FakeUpstream::start().await;
    let server = TestServer::builder().upstream(&upstream).start().await;
    let mut client = server.connect().await;
    let frames = client
        .chat(json!({"type":"chat","input":"x","enable_tools":false}))
        .await;
    let id = frames[0]["id"].as_str().unwrap().to_string();
    assert!(!id.is_empty());
    assert!(frames.iter().all(|f| f["id"] == id.as_str()));

    client.send(json!({"type":"ping"})).await;
    assert_eq!(client.frame().await, json!({"type":"pong"}));
    client.send(json!({"type":"ping","id":"p1"})).await;
    assert_eq!(client.frame().await, json!({"type":"pong","id":"p1"}));
    server.shutdown().await;
}

#[tokio::test]
async fn every_bad_frame_gets_bad_frame_and_the_connection_lives() {
    let upstream = FakeUpstream::start().await;
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(|c| {
            c.limits.max_history_messages = 2;
            c.limits.max_input_chars = 10;
        })
        .start()
        .await;
    let mut client = server.connect().await;
    let cases: Vec<(&str, &str)> = vec![
        ("{not json", "not valid JSON"),
        ("[]", "JSON object"),
        ("\"chat\"", "JSON object"),
        ("\u{feff}{\"type\":\"ping\"}", "not valid JSON"),
        (r#"{"type":"ping","n":NaN}"#, "not valid JSON"),
        (r#"{"type":"chat","input":"\udc00"}"#, "not valid JSON"),
        (r#"{"id":"x"}"#, "missing field \"type\""),
        (r#"{"type":"dance"}"#, "unknown frame type"),
        (r#"{"type":"chat"}"#, "missing field \"input\""),
        (r#"{"type":"chat","input":""}"#, "must not be empty"),
        (
            r#"{"type":"chat","input":["x"]}"#,
            "\"input\" must be a string",
        ),
        (
            r#"{"type":"chat","id":"","input":"x"}"#,
            "\"id\" must not be empty",
        ),
        (
            r#"{"type":"chat","id":3,"input":"x"}"#,
            "\"id\" must be a string",
        ),
        (
            r#"{"type":"chat","input":"x","messages":{}}"#,
            "\"messages\" must be an array",
        ),
        (
            r#"{"type":"chat","input":"x","messages":[{"role":"robot","content":"x"}]}"#,
            "messages[0].role",
        ),
        (
            r#"{"type":"chat","input":"x","messages":[{"role":"user","content":1}]}"#,
            "messages[0].content",
        ),
        (r#"{"type":"chat","input":"x","skills":[1]}"#, "skills"),
        (
            r#"{"type":"chat","input":"x","enable_tools":1}"#,
            "enable_tools",
        ),
        (r#"{"type":"chat","input":"01234567890"}"#, "limit is 10"),
        (
            r#"{"type":"chat","input":"x","messages":[{"role":"user","content":"a"},{"role":"user","content":"b"},{"role":"user","content":"c"}]}"#,
            "limit is 2",
        ),
    ];
    let deep = format!("{}{}", "[".repeat(70), "]".repeat(70));
    for (text, expected) in cases
        .iter()
        .copied()
        .chain([(deep.as_str(), "deeper than 64")])
    {
        client.send_text(text).await;
        let frame = client.frame().await;
        assert_eq!(frame["type"], "error", "{text}");
        assert_eq!(frame["code"], "bad_frame", "{text}");
        let message = frame["message"].as_str().unwrap();
        assert!(message.contains(expected), "{text}: {message}");
    }
    // The id of a bad frame is echoed when it had one.
    client
        .send(json!({"type":"chat","id":"bad1","input":""}))
        .await;
    assert_eq!(client.frame().await["id"], "bad1");
    // Binary frames are refused, the connection stays.
    client.ws.send_binary(vec![1, 2, 3]).await;
    let frame = client.frame().await;
    assert_eq!(
        (frame["type"].as_str(), frame["code"].as_str()),
        (Some("error"), Some("bad_frame"))
    );
    // And it still chats.
    let frames = client
        .chat(json!({"type":"chat","input":"ok","enable_tools":false}))
        .await;
    assert_eq!(frames.last().unwrap()["type"], "done");
    assert!(
        upstream.requests().len() == 1,
        "no bad frame reached the upstream"
    );
    server.shutdown().await;
}

trait SendBinary {
    async fn send_binary(&mut self, bytes: Vec<u8>);
}

impl SendBinary
    for tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>
{
    async fn send_binary(&mut self, bytes: Vec<u8>) {
        use futures::SinkExt;
        self.send(WsMessage::binary(bytes)).await.unwrap();
    }
}

#[tokio::test]
async fn oversized_message_closes_with_1009() {
    let server = TestServer::builder()
        .config(|c| c.limits.max_message_bytes = 64 * 1024)
        .start()
        .await;
    let mut client = server.connect().await;
    let big = format!(r#"{{"type":"chat","input":"{}"}}"#, "a".repeat(64 * 1024));
    client.send_text(&big).await;
    assert_eq!(client.close_code(Duration::from_secs(5)).await, Some(1009));
    server.shutdown().await;
}

#[tokio::test]
async fn fragmented_message_is_measured_after_reassembly() {
    use futures::SinkExt;
    let server = TestServer::builder()
        .config(|c| c.limits.max_message_bytes = 4096)
        .start()
        .await;
    let mut client = server.connect().await;
    // Three 2 KiB fragments: each fits, together they do not.
    let piece = vec![b'a'; 2048];
    client
        .ws
        .send(WsMessage::Frame(Frame::message(
            piece.clone(),
            OpCode::Data(Data::Text),
            false,
        )))
        .await
        .unwrap();
    client
        .ws
        .send(WsMessage::Frame(Frame::message(
            piece.clone(),
            OpCode::Data(Data::Continue),
            false,
        )))
        .await
        .unwrap();
    client
        .ws
        .send(WsMessage::Frame(Frame::message(
            piece,
            OpCode::Data(Data::Continue),
            true,
        )))
        .await
        .unwrap();
    assert_eq!(client.close_code(Duration::from_secs(5)).await, Some(1009));
    server.shutdown().await;
}

#[tokio::test]
async fn invalid_utf8_closes_with_1007() {
    use futures::SinkExt;
    let server = TestServer::builder().start().await;
    let mut client = server.connect().await;
    let frame = Frame::message(vec![b'{', 0xff, 0xfe, b'}'], OpCode::Data(Data::Text), true);
    client.ws.send(WsMessage::Frame(frame)).await.unwrap();
    assert_eq!(client.close_code(Duration::from_secs(5)).await, Some(1007));
    server.shutdown().await;
}

#[tokio::test]
async fn a_second_chat_while_one_runs_is_busy() {
    let upstream = FakeUpstream::start().await;
    // The first chat's reply stops halfway until the test has seen the second one refused.
    let gate = Gate::new();
    upstream.push(Reply::Sse(vec![
        Piece::Raw(chunk(json!({"content":"slow "}))),
        Piece::Until(gate.clone()),
        Piece::Raw(chunk(json!({"content":"end"}))),
        Piece::Raw("data: [DONE]\n\n".into()),
    ]));
    let server = TestServer::builder().upstream(&upstream).start().await;
    let mut client = server.connect().await;
    client
        .send(json!({"type":"chat","id":"a","input":"one","enable_tools":false}))
        .await;
    assert_eq!(client.frame().await["type"], "start");
    client
        .send(json!({"type":"chat","id":"b","input":"two","enable_tools":false}))
        .await;
    let busy = loop {
        let frame = client.frame().await;
        assert_ne!(
            frame["type"], "done",
            "the first chat ended while held: {frame}"
        );
        if frame["type"] == "error" {
            break frame;
        }
    };
    assert_eq!(
        (busy["code"].as_str(), busy["id"].as_str()),
        (Some("busy"), Some("b"))
    );
    gate.open();
    let frames = client.until_end().await;
    let done = frames.last().unwrap();
    assert_eq!(
        (done["id"].as_str(), done["message"]["content"].as_str()),
        (Some("a"), Some("slow end"))
    );
    // After the end, a new chat is accepted.
    let frames = client
        .chat(json!({"type":"chat","id":"c","input":"three","enable_tools":false}))
        .await;
    assert_eq!(frames.last().unwrap()["type"], "done");
    server.shutdown().await;
}

#[tokio::test]
async fn cancel_ends_the_chat_and_drops_the_upstream_at_once() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::endless());
    let server = TestServer::builder().upstream(&upstream).start().await;
    let mut client = server.connect().await;
    client
        .send(json!({"type":"chat","id":"c1","input":"go","enable_tools":false}))
        .await;
    assert_eq!(client.frame().await["type"], "start");
    let mut streamed = String::new();
    while streamed.len() < 20 {
        let frame = client.frame().await;
        assert_eq!(frame["type"], "text");
        streamed.push_str(frame["delta"].as_str().unwrap());
    }
    client.send(json!({"type":"cancel","id":"c1"})).await;
    let mut rest = client.until_end().await;
    let done = rest.pop().unwrap();
    streamed.push_str(&text_of(&rest));
    assert_eq!(done["type"], "done");
    assert_eq!(done["reason"], "cancelled");
    assert_eq!(
        done["message"]["content"],
        streamed.as_str(),
        "done holds the text streamed so far"
    );
    assert!(
        upstream.wait_dropped(Duration::from_secs(1)).await,
        "the upstream saw its connection close within 1 s"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn cancel_without_id_and_for_other_ids() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::endless());
    let server = TestServer::builder().upstream(&upstream).start().await;
    let mut client = server.connect().await;
    // A cancel when nothing runs is ignored.
    client.send(json!({"type":"cancel","id":"nothing"})).await;
    client
        .send(json!({"type":"chat","id":"c1","input":"go","enable_tools":false}))
        .await;
    assert_eq!(client.frame().await["type"], "start");
    // A cancel for another id does not touch the running chat.
    client.send(json!({"type":"cancel","id":"other"})).await;
    assert_eq!(client.frame().await["type"], "text");
    client.send(json!({"type":"cancel"})).await;
    let frames = client.until_end().await;
    assert_eq!(frames.last().unwrap()["reason"], "cancelled");
    server.shutdown().await;
}

#[tokio::test]
async fn a_chat_cancelled_at_once_still_gets_start_and_done() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::endless());
    let server = TestServer::builder().upstream(&upstream).start().await;
    let mut client = server.connect().await;
    client
        .send_text(r#"{"type":"chat","id":"q","input":"go","enable_tools":false}"#)
        .await;
    client.send_text(r#"{"type":"cancel","id":"q"}"#).await;
    let frames = client.until_end().await;
    assert_eq!(frames.first().unwrap()["type"], "start");
    let done = frames.last().unwrap();
    assert_eq!(
        (done["type"].as_str(), done["reason"].as_str()),
        (Some("done"), Some("cancelled"))
    );
    server.shutdown().await;
}

#[tokio::test]
async fn disconnect_drops_the_upstream_request() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::endless());
    let server = TestServer::builder().upstream(&upstream).start().await;
    let mut client = server.connect().await;
    client
        .send(json!({"type":"chat","input":"go","enable_tools":false}))
        .await;
    assert_eq!(client.frame().await["type"], "start");
    assert_eq!(client.frame().await["type"], "text");
    drop(client);
    assert!(
        upstream.wait_dropped(Duration::from_secs(1)).await,
        "the upstream saw its connection close within 1 s"
    );
    server.shutdown().await;
}

/// A server that pings every 100 ms and gives up on a silent client after 300 ms.
async fn fast_ping_server() -> TestServer {
    TestServer::builder()
        .config(|c| {
            c.limits.ping_interval = Duration::from_millis(100);
            c.limits.idle_timeout = Duration::from_millis(300);
        })
        .start()
        .await
}

/// Opens a WebSocket by hand, for a client that reads frames but never answers them: a
/// tungstenite client answers every ping it reads with a pong.
async fn connect_silent(addr: std::net::SocketAddr) -> tokio::net::TcpStream {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "GET /ws HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    // Byte by byte, so that no frame after the response head is read along with it.
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        head.push(stream.read_u8().await.unwrap());
    }
    let head = String::from_utf8_lossy(&head);
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    stream
}

/// The next frame a server sends, as `(opcode, payload)`; server frames are not masked.
async fn raw_frame(stream: &mut tokio::net::TcpStream) -> (u8, Vec<u8>) {
    use tokio::io::AsyncReadExt;
    let first = stream.read_u8().await.unwrap();
    let length = match stream.read_u8().await.unwrap() & 0x7f {
        126 => u64::from(stream.read_u16().await.unwrap()),
        127 => stream.read_u64().await.unwrap(),
        short => u64::from(short),
    };
    let mut payload = vec![0; usize::try_from(length).unwrap()];
    stream.read_exact(&mut payload).await.unwrap();
    (first & 0x0f, payload)
}

#[tokio::test]
async fn idle_connections_are_closed_with_1001() {
    let server = fast_ping_server().await;
    let started = std::time::Instant::now();
    let mut socket = connect_silent(server.addr).await;
    // The client reads but never answers the pings: the server sees nothing and gives up.
    let mut pings = 0;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    let close = loop {
        let frame = tokio::time::timeout_at(deadline, raw_frame(&mut socket))
            .await
            .expect("the server never closed the idle connection");
        match frame {
            (0x9, _) => pings += 1,
            (0x8, payload) => break payload,
            (opcode, payload) => panic!("unexpected frame {opcode:#x}: {payload:?}"),
        }
    };
    assert_eq!(
        close.get(..2),
        Some(&1001u16.to_be_bytes()[..]),
        "{close:?}"
    );
    assert!(pings >= 1, "the server pinged before it gave up");
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "closed before the idle timeout: {:?}",
        started.elapsed()
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_client_that_answers_pings_stays_connected() {
    let server = fast_ping_server().await;
    let mut client = server.connect().await;
    // Reading lets the client answer each ping with a pong, which counts as being alive.
    let mut pings = 0;
    let deadline = tokio::time::Instant::now() + Duration::from_millis(900);
    while let Ok(Some(message)) = tokio::time::timeout_at(deadline, client.ws.next()).await {
        match message.unwrap() {
            WsMessage::Ping(_) => pings += 1,
            other => panic!("expected only pings while idle, got {other:?}"),
        }
    }
    assert!(pings >= 3, "the server pings on its timer; saw {pings}");
    client.send(json!({"type":"ping","id":"p"})).await;
    assert_eq!(client.frame().await["type"], "pong");
    server.shutdown().await;
}

#[tokio::test]
async fn shutdown_lets_a_running_chat_finish_then_closes_with_1001() {
    let upstream = FakeUpstream::start().await;
    // The reply stops halfway until the shutdown has begun.
    let gate = Gate::new();
    upstream.push(Reply::Sse(vec![
        Piece::Raw(chunk(json!({"content":"almost "}))),
        Piece::Until(gate.clone()),
        Piece::Raw(chunk(json!({"content":"done"}))),
        Piece::Raw("data: [DONE]\n\n".into()),
    ]));
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(|c| c.limits.shutdown_grace = Duration::from_secs(5))
        .start()
        .await;
    let mut busy = server.connect().await;
    let mut idle = server.connect().await;
    busy.send(json!({"type":"chat","id":"s","input":"go","enable_tools":false}))
        .await;
    assert_eq!(busy.frame().await["type"], "start");
    let shutdown = tokio::spawn(server.shutdown());
    // The idle session is closed at once: the shutdown has begun while the chat runs.
    assert_eq!(idle.close_code(Duration::from_secs(2)).await, Some(1001));
    gate.open();
    let frames = busy.until_end().await;
    assert_eq!(frames.last().unwrap()["message"]["content"], "almost done");
    assert_eq!(busy.close_code(Duration::from_secs(2)).await, Some(1001));
    tokio::time::timeout(Duration::from_secs(5), shutdown)
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn shutdown_cancels_chats_that_outlive_the_grace_period() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::endless());
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(|c| c.limits.shutdown_grace = Duration::from_millis(300))
        .start()
        .await;
    let mut client = server.connect().await;
    client
        .send(json!({"type":"chat","input":"go","enable_tools":false}))
        .await;
    assert_eq!(client.frame().await["type"], "start");
    let started = std::time::Instant::now();
    let shutdown = tokio::spawn(server.shutdown());
    let frames = client.until_end().await;
    assert_eq!(frames.last().unwrap()["reason"], "cancelled");
    assert_eq!(client.close_code(Duration::from_secs(2)).await, Some(1001));
    tokio::time::timeout(Duration::from_secs(5), shutdown)
        .await
        .unwrap()
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn shutdown_cancels_http_chats_that_outlive_the_grace_period() {
    // Each front-end wire: the request, the last event its stream must end with, and how the
    // chat's end says it was cut (OpenAI's chunks have no word for it: the answer stops).
    let wires = [
        (
            "/ag-ui",
            json!({"threadId":"t","runId":"r","state":{},"tools":[],"context":[],
                "forwardedProps":{},"messages":[{"id":"u","role":"user","content":"go"}]}),
            "\"type\":\"RUN_FINISHED\"",
            "\"reason\":\"cancelled\"",
        ),
        (
            "/api/chat",
            json!({"id":"c","trigger":"submit-message","messages":[{"id":"u","role":"user",
                "parts":[{"type":"text","text":"go"}]}]}),
            "[DONE]",
            "\"reason\":\"cancelled\"",
        ),
        (
            "/v1/chat/completions",
            json!({"model":"hookwire","stream":true,"messages":[{"role":"user","content":"go"}]}),
            "[DONE]",
            "\"finish_reason\":\"stop\"",
        ),
    ];
    for (path, body, last, how) in wires {
        let upstream = FakeUpstream::start().await;
        upstream.push(Reply::endless());
        let grace = Duration::from_millis(300);
        let server = TestServer::builder()
            .upstream(&upstream)
            .config(|c| c.limits.shutdown_grace = grace)
            .start()
            .await;
        let mut response = reqwest::Client::new()
            .post(server.url(path))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 200, "{path}");
        // The model's answer is streaming before the drain begins.
        let mut seen = String::new();
        while !seen.contains("tick") {
            let chunk = response.chunk().await.unwrap().expect("the stream ended");
            seen.push_str(&String::from_utf8_lossy(&chunk));
        }
        let started = std::time::Instant::now();
        let shutdown = tokio::spawn(server.shutdown());
        let read_all = async {
            while let Some(chunk) = response.chunk().await.unwrap() {
                seen.push_str(&String::from_utf8_lossy(&chunk));
            }
        };
        tokio::time::timeout(Duration::from_secs(5), read_all)
            .await
            .unwrap_or_else(|_| panic!("{path}: the chat was not cut: {seen}"));
        assert!(
            started.elapsed() >= grace,
            "{path}: cut before the grace period"
        );
        let events: Vec<&str> = seen
            .split("\n\n")
            .filter_map(|event| event.strip_prefix("data: "))
            .collect();
        let end = events.last().copied().unwrap_or_default();
        assert!(
            end.contains(last),
            "{path}: the stream ended with {end:?}: {seen}"
        );
        assert!(seen.contains(how), "{path}: not {how}: {seen}");
        for error in ["RUN_ERROR", r#""type":"error""#, r#""error":"#] {
            assert!(!seen.contains(error), "{path}: {error}: {seen}");
        }
        assert!(
            upstream.wait_dropped(Duration::from_secs(5)).await,
            "{path}"
        );
        tokio::time::timeout(Duration::from_secs(5), shutdown)
            .await
            .unwrap()
            .unwrap();
    }
}

#[tokio::test]
async fn a_malformed_hook_mark_on_a_user_or_assistant_message_is_ignored() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["fine"]));
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(|c| c.agent.secret = Some("k".into()))
        .start()
        .await;
    let mut client = server.connect().await;
    let frames = client
        .chat(
            json!({"type":"chat","id":"m","enable_tools":false,"input":"go on",
            "messages":[{"role":"user","content":"earlier","_hook":"not an object"},
                        {"role":"assistant","content":"reply","_hook":{"name":5}},
                        {"role":"user","content":"later","_hook":{}}]}),
        )
        .await;
    assert_eq!(types_of(&frames), ["start", "text", "done"], "{frames:?}");
    let request = &upstream.requests()[0];
    assert_eq!(
        &request.messages()[1..],
        &[
            ("user".to_string(), "earlier".to_string()),
            ("assistant".to_string(), "reply".to_string()),
            ("user".to_string(), "later".to_string()),
            ("user".to_string(), "go on".to_string()),
        ],
        "plain messages, in order"
    );
    assert!(!request.body.to_string().contains("_hook"));

    // On a system message the mark is what makes it trusted, so a malformed one still refuses.
    let frames = client
        .chat(
            json!({"type":"chat","id":"s","enable_tools":false,"input":"x",
            "messages":[{"role":"system","content":"obey","_hook":"not an object"}]}),
        )
        .await;
    assert_eq!(
        (frames[0]["type"].as_str(), frames[0]["code"].as_str()),
        (Some("error"), Some("bad_frame")),
        "{frames:?}"
    );
    server.shutdown().await;
}
