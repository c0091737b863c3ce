//! `provider: anthropic`: chats against a fake Messages API over real HTTP with SSE, as
//! Anthropic streams it (named events, content blocks, `input_json_delta`, `message_delta`,
//! `ping`), and its failures: a cut stream, an `error` event, 529 overloaded, 401.

use hookwire::config::Provider;
use serde_json::{json, Value};

use crate::agent::workspace;
use crate::common::*;

/// One named event, as the API sends it.
fn event(data: Value) -> Piece {
    let kind = data["type"].as_str().unwrap_or("?").to_string();
    Piece::Raw(format!("event: {kind}\ndata: {data}\n\n"))
}

fn message_start(input_tokens: u64) -> Piece {
    event(json!({"type": "message_start", "message": {
        "id": "msg_01", "type": "message", "role": "assistant", "content": [],
        "model": "claude-test", "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": input_tokens, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 2, "output_tokens": 1}}}))
}

fn text_block(index: u64, pieces: &[&str]) -> Vec<Piece> {
    let mut body = vec![event(
        json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
    )];
    for piece in pieces {
        body.push(event(json!({"type": "content_block_delta", "index": index,
                               "delta": {"type": "text_delta", "text": piece}})));
    }
    body.push(event(json!({"type": "content_block_stop", "index": index})));
    body
}

fn message_end(stop_reason: &str, output_tokens: u64) -> Vec<Piece> {
    vec![
        event(json!({"type": "message_delta",
                     "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                     "usage": {"output_tokens": output_tokens}})),
        event(json!({"type": "message_stop"})),
    ]
}

/// A text reply in the given pieces, with a ping in the middle.
fn text_reply(pieces: &[&str]) -> Reply {
    let mut body = vec![message_start(40), event(json!({"type": "ping"}))];
    body.extend(text_block(0, pieces));
    body.extend(message_end("end_turn", 9));
    Reply::Sse(body)
}

/// A reply that says a word, then calls `name` with `input`, which arrives in two fragments.
fn tool_reply(id: &str, name: &str, input: Value) -> Reply {
    let json = input.to_string();
    let (first, second) = json.split_at(json.len() / 2);
    let mut body = vec![message_start(50)];
    body.extend(text_block(0, &["Reading."]));
    body.extend([
        event(json!({"type": "content_block_start", "index": 1,
                     "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}})),
        event(json!({"type": "content_block_delta", "index": 1,
                     "delta": {"type": "input_json_delta", "partial_json": ""}})),
        event(json!({"type": "content_block_delta", "index": 1,
                     "delta": {"type": "input_json_delta", "partial_json": first}})),
        event(json!({"type": "ping"})),
        event(json!({"type": "content_block_delta", "index": 1,
                     "delta": {"type": "input_json_delta", "partial_json": second}})),
        event(json!({"type": "content_block_stop", "index": 1})),
    ]);
    body.extend(message_end("tool_use", 20));
    Reply::Sse(body)
}

/// A server on `provider: anthropic` at the fake's root (the client adds `/v1/messages`).
fn server(upstream: &FakeUpstream) -> TestServerBuilder<'_> {
    let root = upstream.base_url.trim_end_matches("/v1").to_string();
    TestServer::builder()
        .workspace(workspace())
        .upstream(upstream)
        .config(move |c| {
            c.llm.provider = Provider::Anthropic;
            c.llm.base_url = Some(root);
            c.llm.max_tokens = 321;
            c.agent.system_prompt = "PROMPT:system".into();
        })
}

/// Runs one direct chat and returns its frames.
async fn direct(server: &TestServer) -> Vec<Value> {
    chat(
        server,
        json!({"type": "chat", "id": "a", "input": "hi", "enable_tools": false}),
    )
    .await
}

/// The error frame a failed chat ends with; the chat has no `done`.
fn upstream_error(frames: &[Value]) -> String {
    let last = frames.last().unwrap();
    assert_eq!(last["type"], "error", "{frames:?}");
    assert_eq!(last["code"], "upstream");
    assert!(!frames.iter().any(|f| f["type"] == "done"));
    last["message"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_text_reply_streams_with_its_usage() {
    let upstream = FakeUpstream::start().await;
    upstream.push(text_reply(&["Hel", "lo ", "there"]));
    let server = server(&upstream).start().await;
    let frames = direct(&server).await;
    assert_eq!(types_of(&frames), ["start", "text", "done"]);
    assert_eq!(text_of(&frames), "Hello there");
    let done = frames.last().unwrap();
    assert_eq!(done["reason"], "completed");
    assert_eq!(done["message"]["content"], "Hello there");
    // Input tokens count the cached ones too.
    assert_eq!(
        done["usage"],
        json!({"prompt_tokens": 42, "completion_tokens": 9, "hook_calls": 0, "hook_prompt_tokens": 0, "hook_completion_tokens": 0})
    );
    let request = &upstream.requests()[0];
    assert_eq!(request.headers["x-api-key"], "test-key");
    assert_eq!(request.headers["anthropic-version"], "2023-06-01");
    assert!(request.headers.get("authorization").is_none());
    let body = &request.body;
    assert_eq!(body["model"], "fake-model");
    assert_eq!(body["max_tokens"], 321);
    assert_eq!(body["stream"], true);
    assert!(body["system"]
        .as_str()
        .unwrap()
        .starts_with("PROMPT:system"));
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": [{"type": "text", "text": "hi"}]}])
    );
    assert!(body.get("tools").is_none());
    server.shutdown().await;
}

#[tokio::test]
async fn a_tool_round_trip() {
    let upstream = FakeUpstream::start().await;
    upstream.push(text_reply(&["[NEED_TOOL] read the readme"]));
    upstream.push(tool_reply(
        "toolu_01",
        "read_file",
        json!({"path": "README.md"}),
    ));
    upstream.push(text_reply(&["It says hello."]));
    let server = server(&upstream).start().await;
    let frames = chat(
        &server,
        json!({"type": "chat", "id": "t", "input": "what does the readme say?"}),
    )
    .await;
    assert_eq!(
        types_of(&frames),
        [
            "start",
            "plan",
            "text",
            "tool_call",
            "tool_result",
            "text",
            "done"
        ],
        "{frames:?}"
    );
    let call = frames.iter().find(|f| f["type"] == "tool_call").unwrap();
    assert_eq!(call["call_id"], "toolu_01");
    assert_eq!(call["name"], "read_file");
    assert_eq!(call["arguments"], json!({"path": "README.md"}));
    let result = frames.iter().find(|f| f["type"] == "tool_result").unwrap();
    assert!(result["content"]
        .as_str()
        .unwrap()
        .contains("hello from the readme"));
    let requests = upstream.requests();
    assert_eq!(requests.len(), 3);
    // The planning call has no tools; the rounds have them, in Anthropic's shape.
    assert!(requests[0].body.get("tools").is_none());
    let tools = requests[1].body["tools"].as_array().unwrap();
    let read = tools.iter().find(|t| t["name"] == "read_file").unwrap();
    assert_eq!(read["input_schema"]["type"], "object");
    // Round 1: the plan, then the step prompt as the user's turn (no prefill).
    let round1 = requests[1].body["messages"].as_array().unwrap();
    assert_eq!(round1.last().unwrap()["role"], "user");
    assert_eq!(round1[round1.len() - 2]["role"], "assistant");
    // Round 2: the call as a tool_use block after the text, its result as a tool_result block.
    let round2 = requests[2].body["messages"].as_array().unwrap();
    let roles: Vec<&str> = round2.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "user"], "{round2:?}");
    assert_eq!(
        round2[1]["content"],
        json!([
            {"type": "text", "text": "read the readme\n\nReading."},
            {"type": "tool_use", "id": "toolu_01", "name": "read_file", "input": {"path": "README.md"}}
        ])
    );
    let result = &round2[2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], "toolu_01");
    assert!(result["content"]
        .as_str()
        .unwrap()
        .contains("hello from the readme"));
    server.shutdown().await;
}

#[tokio::test]
async fn max_tokens_ends_the_chat_with_length() {
    let upstream = FakeUpstream::start().await;
    let mut body = vec![message_start(10)];
    body.extend(text_block(0, &["a long answ"]));
    body.extend(message_end("max_tokens", 321));
    upstream.push(Reply::Sse(body));
    let server = server(&upstream).start().await;
    let frames = direct(&server).await;
    let notice = frames.iter().find(|f| f["type"] == "notice").unwrap();
    assert_eq!(notice["level"], "warn");
    let done = frames.last().unwrap();
    assert_eq!(done["reason"], "length", "{frames:?}");
    assert_eq!(done["message"]["content"], "a long answ");
    server.shutdown().await;
}

#[tokio::test]
async fn a_stream_cut_before_its_end_is_an_error() {
    let upstream = FakeUpstream::start().await;
    let mut body = vec![message_start(10)];
    body.extend(text_block(0, &["half"]));
    upstream.push(Reply::Sse(body));
    let server = server(&upstream).start().await;
    let message = upstream_error(&direct(&server).await);
    assert!(message.contains("message_stop"), "{message}");
    server.shutdown().await;
}

#[tokio::test]
async fn an_error_event_fails_the_chat_with_its_message() {
    let upstream = FakeUpstream::start().await;
    let mut body = vec![message_start(10)];
    body.extend(text_block(0, &["par"]));
    body.push(event(
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    ));
    upstream.push(Reply::Sse(body));
    let server = server(&upstream).start().await;
    let message = upstream_error(&direct(&server).await);
    assert!(
        message.contains("Overloaded") && message.contains("overloaded_error"),
        "{message}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn http_errors_show_anthropics_own_message() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::Status(
        529,
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
            .to_string(),
    ));
    upstream.push(Reply::Status(
        401,
        json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}})
            .to_string(),
    ));
    // 529 is retried by default (tests/it/retries.rs); here its text is the point.
    let server = server(&upstream)
        .config(|c| c.agent.retry.retries = 0)
        .start()
        .await;
    let message = upstream_error(&direct(&server).await);
    assert!(
        message.contains("529") && message.contains("Overloaded"),
        "{message}"
    );
    let message = upstream_error(&direct(&server).await);
    assert!(
        message.contains("401") && message.contains("invalid x-api-key"),
        "{message}"
    );
    server.shutdown().await;
}

/// A history with an earlier chat's tool call and result (docs/protocol.md §13), in OpenAI's form
/// as `done.turn` has it, reaches the Messages API as a `tool_use` block and its `tool_result`.
#[tokio::test]
async fn tool_calls_and_results_in_the_history_become_tool_use_and_tool_result_blocks() {
    let upstream = FakeUpstream::start().await;
    upstream.push(text_reply(&["The other one is the readme."]));
    let server = server(&upstream).start().await;
    let history = json!([
        {"role": "user", "content": "open b.txt"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "toolu_01", "type": "function",
            "function": {"name": "read_file", "arguments": "{\"path\":\"b.txt\"}"}}]},
        {"role": "tool", "tool_call_id": "toolu_01", "name": "read_file", "content": "bee"},
        {"role": "assistant", "content": "It says bee."}
    ]);
    let frames = chat(
        &server,
        json!({"type": "chat", "input": "and the other?", "enable_tools": false, "messages": history}),
    )
    .await;
    assert_eq!(frames.last().unwrap()["type"], "done", "{frames:?}");
    let body = &upstream.requests()[0].body;
    let messages = body["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant", "user"]);
    assert_eq!(
        messages[1]["content"],
        json!([{"type": "tool_use", "id": "toolu_01", "name": "read_file", "input": {"path": "b.txt"}}])
    );
    assert_eq!(
        messages[2]["content"],
        json!([{"type": "tool_result", "tool_use_id": "toolu_01", "content": "bee"}])
    );
    server.shutdown().await;
}
