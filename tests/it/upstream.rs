//! Upstream failures become `error` frames with code `upstream` and a useful message; the
//! connection lives on.

use std::time::Duration;

use crate::common::*;
use serde_json::json;

/// Runs one direct chat and returns its error frame's message.
async fn upstream_error(server: &TestServer) -> String {
    let mut client = server.connect().await;
    let frames = client
        .chat(json!({"type":"chat","id":"e","input":"hi","enable_tools":false}))
        .await;
    let last = frames.last().unwrap();
    assert_eq!(last["type"], "error", "{frames:?}");
    assert_eq!(last["code"], "upstream");
    assert_eq!(last["id"], "e");
    assert!(
        !frames.iter().any(|f| f["type"] == "done"),
        "a failed chat has no done"
    );
    // The connection still works.
    client.send(json!({"type":"ping"})).await;
    assert_eq!(client.frame().await["type"], "pong");
    last["message"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn refused_connection() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let server = TestServer::builder()
        .config(|c| {
            c.llm.base_url = Some(format!("http://127.0.0.1:{port}/v1"));
            c.agent.retry.retries = 0;
        })
        .start()
        .await;
    let message = upstream_error(&server).await;
    assert!(
        message.contains("could not connect") && message.contains(&port.to_string()),
        "{message}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn http_401_shows_the_upstream_error_text() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::Status(
        401,
        r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}"#
            .into(),
    ));
    let server = TestServer::builder().upstream(&upstream).start().await;
    let message = upstream_error(&server).await;
    assert!(
        message.contains("401") && message.contains("Incorrect API key provided"),
        "{message}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn http_500_with_a_text_body() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::Status(500, "model overloaded".into()));
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(|c| c.agent.retry.retries = 0)
        .start()
        .await;
    let message = upstream_error(&server).await;
    assert!(
        message.contains("500") && message.contains("model overloaded"),
        "{message}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn malformed_event() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::Sse(vec![Piece::Raw(
        "data: {\"choices\": [oops\n\n".into(),
    )]));
    let server = TestServer::builder().upstream(&upstream).start().await;
    let message = upstream_error(&server).await;
    assert!(message.contains("malformed"), "{message}");
    server.shutdown().await;
}

#[tokio::test]
async fn stream_cut_before_done() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::Sse(vec![Piece::Raw(chunk(
        json!({"content":"half"}),
    ))]));
    let server = TestServer::builder().upstream(&upstream).start().await;
    let message = upstream_error(&server).await;
    assert!(message.contains("ended before"), "{message}");
    server.shutdown().await;
}

#[tokio::test]
async fn first_byte_timeout() {
    let upstream = FakeUpstream::start().await;
    // Not a wait: the upstream's silence before its headers is what the timeout must catch.
    upstream.push(Reply::Delay(
        Duration::from_secs(5),
        Box::new(Reply::text(&["late"])),
    ));
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(|c| c.llm.idle_timeout = Duration::from_millis(300))
        .start()
        .await;
    let started = std::time::Instant::now();
    let message = upstream_error(&server).await;
    assert!(message.contains("timeout"), "{message}");
    assert!(started.elapsed() < Duration::from_secs(3));
    server.shutdown().await;
}

#[tokio::test]
async fn idle_timeout_between_events() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::Sse(vec![
        Piece::Raw(chunk(json!({"content":"first "}))),
        Piece::Hang,
    ]));
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(|c| c.llm.idle_timeout = Duration::from_millis(300))
        .start()
        .await;
    let message = upstream_error(&server).await;
    assert!(message.contains("timeout"), "{message}");
    server.shutdown().await;
}

#[tokio::test]
async fn keepalive_comments_and_split_events_are_fine() {
    let upstream = FakeUpstream::start().await;
    let event = chunk(json!({"content":"héllo"}));
    let split = event.find('é').unwrap() + 1;
    let (a, b) = event.as_bytes().split_at(split);
    upstream.push(Reply::Sse(vec![
        Piece::Raw(": keep-alive\n\n".into()),
        Piece::Bytes(a.to_vec()),
        Piece::Bytes(b.to_vec()),
        Piece::Raw(": ping\n\n".into()),
        Piece::Raw("data: [DONE]\n\n".into()),
    ]));
    let server = TestServer::builder().upstream(&upstream).start().await;
    let mut client = server.connect().await;
    let frames = client
        .chat(json!({"type":"chat","input":"hi","enable_tools":false}))
        .await;
    assert_eq!(frames.last().unwrap()["message"]["content"], "héllo");
    server.shutdown().await;
}

#[tokio::test]
async fn a_stream_split_into_single_bytes_still_parses() {
    let upstream = FakeUpstream::start().await;
    let body = [
        ": keep-alive\n\n".to_string(),
        chunk(json!({"content": "wörds "})),
        chunk(json!({"content": "→ ok"})),
        "data: [DONE]\n\n".to_string(),
    ]
    .concat();
    upstream.push(Reply::Sse(
        body.into_bytes()
            .into_iter()
            .map(|b| Piece::Bytes(vec![b]))
            .collect(),
    ));
    let server = TestServer::builder().upstream(&upstream).start().await;
    let mut client = server.connect().await;
    let frames = client
        .chat(json!({"type":"chat","input":"hi","enable_tools":false}))
        .await;
    assert_eq!(text_of(&frames), "wörds → ok");
    assert_eq!(frames.last().unwrap()["type"], "done");
    server.shutdown().await;
}

/// A URL's credentials never reach the client: not the user name, the password, nor a key in
/// the query, whatever failed.
#[tokio::test]
async fn no_credential_of_the_base_url_reaches_an_error_frame() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let server = TestServer::builder()
        .config(|c| {
            c.llm.base_url = Some(format!(
                "http://canaryuser:canarypass@127.0.0.1:{port}/v1?key=canarykey"
            ));
            c.agent.retry.retries = 0;
        })
        .start()
        .await;
    let message = upstream_error(&server).await;
    assert!(
        message.contains(&format!("http://127.0.0.1:{port}/v1")),
        "the server is named: {message}"
    );
    assert!(!message.contains("canary"), "{message}");
    server.shutdown().await;

    // Through a server that answers: the key stays in the query, after the path; the error the
    // server answers does not quote it.
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::Status(403, "forbidden".into()));
    let base = upstream
        .base_url
        .replace("http://", "http://canaryuser:canarypass@");
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(|c| {
            c.llm.base_url = Some(format!("{base}?key=canarykey"));
        })
        .start()
        .await;
    let message = upstream_error(&server).await;
    assert!(
        message.contains("403") && !message.contains("canary"),
        "{message}"
    );
    let request = &upstream.requests()[0];
    assert_eq!(request.uri.path(), "/v1/chat/completions");
    assert_eq!(request.uri.query(), Some("key=canarykey"));
    server.shutdown().await;
}

/// A reply longer than `max_stream_bytes` ends with an error once the limit is passed, after the
/// text that came before it.
#[tokio::test]
async fn a_reply_over_the_byte_limit_ends_with_an_error() {
    use futures::StreamExt;
    use hookwire::llm::{
        ChatModel, LlmError, ModelEvent, ModelRequest, OpenAiClient, OpenAiConfig,
    };
    let upstream = FakeUpstream::start().await;
    let piece = |i: usize| Piece::Raw(chunk(json!({"content": format!("piece {i:02} ")})));
    // Three events, then (once the client has read them) 47 more: 10 events' bytes are the
    // limit.
    let gate = Gate::new();
    let mut body: Vec<Piece> = (0..3).map(piece).collect();
    body.push(Piece::Until(gate.clone()));
    body.extend((3..50).map(piece));
    body.push(Piece::Raw("data: [DONE]\n\n".into()));
    upstream.push(Reply::Sse(body));
    let limit = chunk(json!({"content":"piece 00 "})).len() * 10;
    let client = OpenAiClient::new(OpenAiConfig {
        base_url: upstream.base_url.clone(),
        max_stream_bytes: limit,
        ..Default::default()
    })
    .unwrap();
    let request = ModelRequest {
        max_tokens: None,
        model: "fake-model".into(),
        messages: vec![hookwire::Message::user("hi")],
        tools: Vec::new(),
    };
    let mut stream = client.stream(request).await.unwrap();
    let mut texts = 0;
    let mut last = None;
    while let Some(item) = stream.next().await {
        match item {
            Ok(ModelEvent::Text(_)) => {
                texts += 1;
                if texts == 3 {
                    gate.open();
                }
            }
            other => last = Some(other),
        }
    }
    assert_eq!(
        last,
        Some(Err(LlmError::TooLarge(limit))),
        "after {texts} texts"
    );
    assert!((3..=10).contains(&texts), "{texts} texts before the limit");
}
