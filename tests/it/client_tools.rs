//! Client tools over the native WebSocket (docs/protocol.md §19): tools the client declares and
//! runs itself. A call to one passes the tool hooks and approval, is streamed as `tool_call`, and
//! ends the chat with `done` reason `tool_calls` and `pending_tool_calls`; the next chat sends the
//! history ending with the results and no `input`, and the agent loop goes on from them.

use serde_json::{json, Value};

use crate::common::*;

fn location_tool() -> Value {
    json!({"name": "get_location", "description": "Where the person is, from their browser",
           "parameters": {"type": "object", "properties": {"precision": {"type": "string"}}}})
}

/// The history the client holds after a chat: what it sent, its input, then `done.turn`.
fn history_after(sent: &[Value], input: &str, frames: &[Value]) -> Vec<Value> {
    let mut history = sent.to_vec();
    if !input.is_empty() {
        history.push(json!({"role": "user", "content": input}));
    }
    history.extend(
        frame_of(frames, "done")["turn"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .filter(|m| m["role"] != "user" || m["content"] != input),
    );
    history
}

#[tokio::test]
async fn a_client_tool_call_ends_the_chat_and_the_next_chat_goes_on_from_its_result() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["[NEED_TOOL] ask the browser"]));
    upstream.push(Reply::tool_calls(&[(
        "g1",
        "get_location",
        json!({"precision": "city"}),
    )]));
    let yaml = r#"
pre_tool_execution:
  - command: echo '{"tool_arguments":{"precision":"country"}}'
    filter: { tool_name: get_location }
post_tool_execution:
  - command: echo '{"tool_result":"Paris (checked by a hook)"}'
    filter: { tool_name: get_location }
"#;
    let server = TestServer::builder()
        .upstream(&upstream)
        .hooks(yaml)
        .start()
        .await;
    let frames = chat(
        &server,
        json!({"type": "chat", "id": "c1", "input": "where am I?",
               "client_tools": [location_tool()]}),
    )
    .await;
    assert_eq!(types_of(&frames), ["start", "plan", "tool_call", "done"]);
    // The model was offered the client's tool beside the server's.
    let offered = upstream.requests()[1].tool_names().unwrap();
    assert!(offered.contains(&"get_location".to_string()), "{offered:?}");
    assert!(offered.contains(&"read_file".to_string()), "{offered:?}");
    // The pre hook ran on the client's call: the client gets the arguments as the hook left them.
    let call = frame_of(&frames, "tool_call");
    assert_eq!(call["name"], "get_location");
    assert_eq!(call["arguments"], json!({"precision": "country"}));
    let done = frame_of(&frames, "done");
    assert_eq!(done["reason"], "tool_calls");
    assert_eq!(done["pending_tool_calls"], json!(["g1"]));
    let turn = done["turn"].as_array().unwrap();
    assert_eq!(turn.last().unwrap()["tool_calls"][0]["id"], "g1");
    assert!(
        !turn.iter().any(|m| m["role"] == "tool"),
        "no result is made up for the client's call: {turn:?}"
    );

    // The client runs the tool and sends the history with its result, and no input.
    let mut history = history_after(&[], "where am I?", &frames);
    history.push(json!({"role": "tool", "tool_call_id": "g1", "content": "Paris"}));
    upstream.push(Reply::text(&["You are in Paris."]));
    let frames = chat(
        &server,
        json!({"type": "chat", "id": "c2", "messages": history,
               "client_tools": [location_tool()]}),
    )
    .await;
    let done = frame_of(&frames, "done");
    assert_eq!(done["reason"], "completed", "{frames:?}");
    assert_eq!(text_of(&frames), "You are in Paris.");
    assert!(done.get("pending_tool_calls").is_none());
    // The model saw the result as the post hook left it, once, with the tools still offered.
    let request = &upstream.requests()[2];
    assert_eq!(tool_results(request), ["Paris (checked by a hook)"]);
    assert!(request
        .tool_names()
        .unwrap()
        .contains(&"get_location".into()));
    assert_eq!(
        request
            .messages()
            .iter()
            .filter(|(role, _)| role == "user")
            .count(),
        1,
        "no new user message: {:?}",
        request.messages()
    );
    assert_eq!(upstream.requests().len(), 3, "no planning round again");
}

#[tokio::test]
async fn server_tools_of_the_same_round_run_and_only_the_client_calls_wait() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["[NEED_TOOL] both"]));
    upstream.push(Reply::tool_calls(&[
        ("r1", "read_file", json!({"path": "a.txt"})),
        ("g1", "get_location", json!({})),
    ]));
    let server = TestServer::builder()
        .upstream(&upstream)
        .file("a.txt", "ALPHA")
        .start()
        .await;
    let frames = chat(
        &server,
        json!({"type": "chat", "id": "c1", "input": "go", "client_tools": [location_tool()]}),
    )
    .await;
    assert_eq!(
        types_of(&frames),
        [
            "start",
            "plan",
            "tool_call",
            "tool_result",
            "tool_call",
            "done"
        ]
    );
    assert_eq!(frame_of(&frames, "tool_result")["content"], "ALPHA");
    let done = frame_of(&frames, "done");
    assert_eq!(done["reason"], "tool_calls");
    assert_eq!(done["pending_tool_calls"], json!(["g1"]));
}

#[tokio::test]
async fn a_client_tool_that_needs_approval_waits_for_the_person_then_for_the_client() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["[NEED_TOOL] ask"]));
    upstream.push(Reply::tool_calls(&[("g1", "get_location", json!({}))]));
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(|c| {
            c.agent.secret = Some("client-tools-secret".into());
            c.agent.approval.require_approval = vec!["get_location".into()];
        })
        .start()
        .await;
    let frames = chat(
        &server,
        json!({"type": "chat", "id": "c1", "input": "where?", "client_tools": [location_tool()]}),
    )
    .await;
    assert_eq!(frame_of(&frames, "done")["reason"], "approval_required");
    let state = frame_of(&frames, "approval")["state"].clone();
    let history = history_after(&[], "where?", &frames);
    let frames = chat(
        &server,
        json!({"type": "chat", "id": "c2", "messages": history, "client_tools": [location_tool()],
               "resume": {"state": state, "decisions": [{"call_id": "g1", "decision": "allow"}]}}),
    )
    .await;
    assert_eq!(
        types_of(&frames),
        ["start", "tool_call", "done"],
        "{frames:?}"
    );
    let done = frame_of(&frames, "done");
    assert_eq!(done["reason"], "tool_calls");
    assert_eq!(done["pending_tool_calls"], json!(["g1"]));
    assert_eq!(
        upstream.requests().len(),
        2,
        "the model waits for the result"
    );
}

/// The `bad_frame` message a chat frame gets.
async fn refusal(server: &TestServer, frame: Value) -> String {
    let frames = chat(server, frame).await;
    let error = frame_of(&frames, "error");
    assert_eq!(error["code"], "bad_frame", "{error}");
    error["message"].as_str().unwrap_or_default().to_string()
}

#[tokio::test]
async fn a_client_tool_named_like_a_server_tool_or_badly_is_refused() {
    let upstream = FakeUpstream::start().await;
    let server = TestServer::builder().upstream(&upstream).start().await;
    let clash = json!({"type": "chat", "id": "c1", "input": "x",
                       "client_tools": [{"name": "read_file"}]});
    let message = refusal(&server, clash).await;
    assert!(message.contains("server tool"), "{message}");
    let bad_name = json!({"type": "chat", "id": "c2", "input": "x",
                          "client_tools": [{"name": "has space"}]});
    let message = refusal(&server, bad_name).await;
    assert!(message.contains("client_tools.0.name"), "{message}");
    // No input and a history that does not end with results: `input` is missing.
    let no_input = json!({"type": "chat", "id": "c3",
                          "messages": [{"role": "user", "content": "hi"}]});
    let message = refusal(&server, no_input).await;
    assert!(message.contains("input"), "{message}");
    assert!(upstream.requests().is_empty());
}
