//! A model call that fails before anything reached the client is tried again (PROTOCOL
//! section 14): after the server's `Retry-After` or a back-off, with a `notice` each time, then
//! on the next fallback model; once text reached the client, a failure ends the chat.

use serde_json::{json, Value};

use crate::common::*;

fn notices(frames: &[Value]) -> Vec<&Value> {
    frames.iter().filter(|f| f["type"] == "notice").collect()
}

fn retry_after(code: u16, seconds: &str) -> Reply {
    Reply::StatusWith(
        code,
        vec![("retry-after", seconds.to_string())],
        format!("{{\"error\":{{\"message\":\"busy {code}\"}}}}"),
    )
}

async fn direct_chat(server: &TestServer) -> Vec<Value> {
    chat(
        server,
        json!({"type":"chat","id":"r","input":"hi","enable_tools":false}),
    )
    .await
}

#[tokio::test]
async fn a_429_is_retried_after_its_retry_after() {
    let upstream = FakeUpstream::start().await;
    upstream.push(retry_after(429, "1"));
    upstream.push(Reply::text(&["fine ", "now"]));
    let server = TestServer::builder().upstream(&upstream).start().await;
    let started = std::time::Instant::now();
    let frames = direct_chat(&server).await;
    assert_eq!(frames.last().unwrap()["type"], "done", "{frames:?}");
    assert_eq!(text_of(&frames), "fine now");
    assert!(
        started.elapsed() >= std::time::Duration::from_secs(1),
        "the server asked for a second"
    );
    let notices = notices(&frames);
    assert_eq!(notices.len(), 1, "{frames:?}");
    assert_eq!(notices[0]["level"], "warn");
    assert_eq!(notices[0]["source"], "upstream");
    let message = notices[0]["message"].as_str().unwrap();
    assert!(
        message.contains("HTTP 429")
            && message.contains("busy 429")
            && message.contains("in 1.0 s (retry 1 of 2)"),
        "{message}"
    );
    assert_eq!(upstream.requests().len(), 2);
    server.shutdown().await;
}

#[tokio::test]
async fn a_connection_closed_before_any_answer_is_retried() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["fine ", "now"]));
    let front = upstream.hanging_up_once().await;
    // A configured window: no question about it takes the connection that hangs up.
    let server = TestServer::builder()
        .upstream(&front)
        .config(|c| c.agent.context.window_tokens = Some(128_000))
        .start()
        .await;
    let frames = direct_chat(&server).await;
    assert_eq!(frames.last().unwrap()["type"], "done", "{frames:?}");
    assert_eq!(text_of(&frames), "fine now");
    let notices = notices(&frames);
    assert_eq!(notices.len(), 1, "{frames:?}");
    let message = notices[0]["message"].as_str().unwrap();
    assert!(
        message.contains("closed the connection before answering")
            && message.contains("(retry 1 of 2)"),
        "{message}"
    );
    assert_eq!(upstream.requests().len(), 1);
    server.shutdown().await;
}

/// A server that answers something that is not HTTP has answered: the call is not sent again.
#[tokio::test]
async fn a_malformed_answer_is_not_retried() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let connections = std::sync::Arc::new(AtomicUsize::new(0));
    let counted = connections.clone();
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            let mut buffer = [0u8; 4096];
            let _ = client.read(&mut buffer).await;
            let _ = client.write_all(b"NOT HTTP AT ALL\r\n\r\n").await;
        }
    });
    let server = TestServer::builder()
        .config(move |c| {
            c.llm.base_url = Some(format!("http://{addr}/v1"));
            c.llm.api_key = Some("test-key".into());
            // A configured window: the connections counted are the chat's only.
            c.agent.context.window_tokens = Some(128_000);
        })
        .start()
        .await;
    let frames = direct_chat(&server).await;
    let last = frames.last().unwrap();
    assert_eq!(last["type"], "error", "{frames:?}");
    assert_eq!(last["code"], "upstream");
    assert!(notices(&frames).is_empty(), "{frames:?}");
    assert_eq!(connections.load(Ordering::SeqCst), 1);
    server.shutdown().await;
}

#[tokio::test]
async fn a_500_twice_then_success_takes_both_retries() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::Status(500, "oops".into()));
    upstream.push(Reply::Status(502, "bad gateway".into()));
    upstream.push(Reply::text(&["third time"]));
    let server = TestServer::builder().upstream(&upstream).start().await;
    let frames = direct_chat(&server).await;
    assert_eq!(frames.last().unwrap()["type"], "done", "{frames:?}");
    assert_eq!(text_of(&frames), "third time");
    let messages: Vec<&str> = notices(&frames)
        .iter()
        .map(|n| n["message"].as_str().unwrap())
        .collect();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert!(messages[0].contains("HTTP 500") && messages[0].contains("retry 1 of 2"));
    assert!(messages[1].contains("HTTP 502") && messages[1].contains("retry 2 of 2"));
    // The notices come before any text.
    let first_text = frames.iter().position(|f| f["type"] == "text").unwrap();
    let last_notice = frames.iter().rposition(|f| f["type"] == "notice").unwrap();
    assert!(last_notice < first_text);
    assert_eq!(upstream.requests().len(), 3);
    server.shutdown().await;
}

#[tokio::test]
async fn retries_run_out_into_the_error() {
    let upstream = FakeUpstream::start().await;
    for _ in 0..2 {
        upstream.push(retry_after(503, "0"));
    }
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(|c| c.agent.retry.retries = 1)
        .start()
        .await;
    let frames = direct_chat(&server).await;
    let last = frames.last().unwrap();
    assert_eq!(last["type"], "error", "{frames:?}");
    assert_eq!(last["code"], "upstream");
    assert_eq!(notices(&frames).len(), 1);
    assert_eq!(upstream.requests().len(), 2);
    server.shutdown().await;
}

#[tokio::test]
async fn a_failure_after_text_reached_the_client_is_not_retried() {
    let upstream = FakeUpstream::start().await;
    // Round 1 streams text beside its tool call; round 2 fails.
    upstream.push(Reply::text(&["[NEED_TOOL] let me look"]));
    upstream.push(Reply::Sse(vec![
        Piece::Raw(chunk(json!({"role":"assistant","content":"Reading it. "}))),
        Piece::Raw(chunk(
            json!({"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"list_dir","arguments":"{\"path\":\".\"}"}}]}),
        )),
        Piece::Raw(format!(
            "data: {}\n\ndata: [DONE]\n\n",
            json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]})
        )),
    ]));
    upstream.push(retry_after(503, "0"));
    let server = TestServer::builder().upstream(&upstream).start().await;
    let frames = chat(&server, json!({"type":"chat","id":"r","input":"look"})).await;
    let last = frames.last().unwrap();
    assert_eq!(last["type"], "error", "{frames:?}");
    assert!(last["message"].as_str().unwrap().contains("HTTP 503"));
    assert!(frames.iter().any(|f| f["type"] == "text"), "{frames:?}");
    assert!(notices(&frames).is_empty(), "{frames:?}");
    assert_eq!(upstream.requests().len(), 3, "no retry");
    server.shutdown().await;
}

#[tokio::test]
async fn a_fallback_model_takes_over_after_the_retries() {
    let upstream = FakeUpstream::start().await;
    upstream.push(retry_after(529, "0"));
    upstream.push(retry_after(529, "0"));
    upstream.push(Reply::text(&["from the backup"]));
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(|c| {
            c.agent.retry.retries = 1;
            c.agent.retry.fallback_models = vec!["backup-model".into()];
        })
        .start()
        .await;
    let frames = direct_chat(&server).await;
    assert_eq!(frames.last().unwrap()["type"], "done", "{frames:?}");
    assert_eq!(text_of(&frames), "from the backup");
    let messages: Vec<&str> = notices(&frames)
        .iter()
        .map(|n| n["message"].as_str().unwrap())
        .collect();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert!(
        messages[1].contains("switching to backup-model"),
        "{messages:?}"
    );
    let models: Vec<Value> = upstream
        .requests()
        .iter()
        .map(|r| r.body["model"].clone())
        .collect();
    assert_eq!(models, ["fake-model", "fake-model", "backup-model"]);
    // A non-retryable failure goes to no fallback.
    upstream.push(Reply::Status(401, "no".into()));
    let frames = direct_chat(&server).await;
    assert_eq!(frames.last().unwrap()["type"], "error");
    assert_eq!(upstream.requests().len(), 4);
    server.shutdown().await;
}
