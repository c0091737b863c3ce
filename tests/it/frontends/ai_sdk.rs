//! The AI SDK's wire with the SDK's own chat (`AbstractChat` over `DefaultChatTransport`, what
//! `useChat` runs): text, server tools, approval answered by `addToolApprovalResponse`, client
//! tools run by `onToolCall`, persistent hooks carried in the messages, failure, stop.

use std::time::Duration;

use serde_json::{json, Value};

use super::run_client;
use crate::common::*;

fn location_tool() -> String {
    json!([{"name": "get_location", "description": "Where the person is",
            "parameters": {"type": "object", "properties": {}}}])
    .to_string()
}

async fn server(upstream: &FakeUpstream) -> TestServer {
    super::front_server(upstream, true).await
}

async fn client(server: &TestServer, scenario: &str, env: &[(&str, &str)]) -> Option<Value> {
    run_client(
        server,
        "ai-sdk-client.mjs",
        scenario,
        Some("front-token"),
        env,
    )
    .await
}

/// The parts of the chat's last message.
fn last_parts(seen: &Value) -> Vec<Value> {
    seen["messages"].as_array().unwrap().last().unwrap()["parts"]
        .as_array()
        .unwrap()
        .clone()
}

/// The text of a message's text parts.
fn text_of_parts(parts: &[Value]) -> String {
    parts
        .iter()
        .filter(|p| p["type"] == "text")
        .filter_map(|p| p["text"].as_str())
        .collect()
}

#[tokio::test]
async fn a_streamed_answer_with_its_usage_in_the_metadata() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["Hello", " there."]));
    let server = server(&upstream).await;
    let Some(seen) = client(&server, "text", &[]).await else {
        return;
    };
    assert_eq!(seen["status"], "ready", "{seen}");
    let messages = seen["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    let parts = last_parts(&seen);
    assert_eq!(text_of_parts(&parts), "Hello there.");
    assert!(parts.iter().any(|p| p["type"] == "step-start"), "{parts:?}");
    let metadata = &messages[1]["metadata"]["hookwire"];
    assert_eq!(metadata["reason"], "completed");
    assert_eq!(metadata["usage"]["prompt_tokens"], 10);
    assert_eq!(metadata["usage"]["completion_tokens"], 2);
}

#[tokio::test]
async fn an_approved_call_runs_and_a_denied_one_is_shown_denied() {
    for approved in [true, false] {
        let upstream = FakeUpstream::start().await;
        tool_round(
            &upstream,
            &[("r1", "read_file", json!({"path": "a.txt"}))],
            "Done.",
        );
        let server = server(&upstream).await;
        let scenario = if approved { "approve" } else { "deny" };
        let Some(seen) = client(&server, scenario, &[]).await else {
            return;
        };
        assert_eq!(seen["status"], "ready", "{seen}");
        assert_eq!(
            seen["requests"], 2,
            "the SDK sent the decision by itself: {seen}"
        );
        let parts = last_parts(&seen);
        let tool = parts
            .iter()
            .find(|p| p["type"] == "dynamic-tool")
            .unwrap_or_else(|| panic!("no tool part: {parts:?}"));
        assert_eq!(tool["toolName"], "read_file");
        assert_eq!(tool["toolCallId"], "r1");
        if approved {
            assert_eq!(tool["state"], "output-available", "{tool}");
            assert_eq!(tool["output"], "ALPHA");
        } else {
            assert_eq!(tool["state"], "output-denied", "{tool}");
        }
        assert!(text_of_parts(&parts).ends_with("Done."), "{parts:?}");
        // The model got the result, or the person's reason.
        let results = tool_results(&upstream.requests()[2]);
        let expected = if approved { "ALPHA" } else { "not that file" };
        assert!(results[0].contains(expected), "{results:?}");
    }
}

#[tokio::test]
async fn a_client_tool_runs_in_the_app_and_the_chat_goes_on() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["[NEED_TOOL] ask"]));
    upstream.push(Reply::tool_calls(&[("g1", "get_location", json!({}))]));
    upstream.push(Reply::text(&["You are in Paris."]));
    let server = server(&upstream).await;
    let tools = location_tool();
    let Some(seen) = client(&server, "clientTool", &[("CLIENT_TOOLS", &tools)]).await else {
        return;
    };
    assert_eq!(seen["status"], "ready", "{seen}");
    assert_eq!(seen["requests"], 2, "{seen}");
    let parts = last_parts(&seen);
    let tool = parts.iter().find(|p| p["type"] == "dynamic-tool").unwrap();
    assert_eq!(tool["state"], "output-available");
    assert_eq!(tool["output"], "Paris");
    assert!(
        text_of_parts(&parts).ends_with("You are in Paris."),
        "{parts:?}"
    );
    assert_eq!(tool_results(&upstream.requests()[2]), ["Paris"]);
}

#[tokio::test]
async fn a_persistent_hook_rides_in_the_messages_into_the_next_request() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["Un."]));
    upstream.push(Reply::text(&["Deux."]));
    let server = super::persistent_hook_server(&upstream).await;
    let Some(seen) = client(&server, "twoTurns", &[]).await else {
        return;
    };
    assert_eq!(seen["status"], "ready", "{seen}");
    let first_answer = &seen["messages"][1]["parts"];
    assert!(
        first_answer
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["type"] == "data-hookwire-hook"),
        "{first_answer}"
    );
    super::assert_the_hook_is_carried_once(&upstream);
}

#[tokio::test]
async fn an_upstream_failure_is_an_error_without_secrets() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::Status(500, "upstream exploded".into()));
    let server = server(&upstream).await;
    let Some(seen) = client(&server, "text", &[]).await else {
        return;
    };
    assert_eq!(seen["status"], "error", "{seen}");
    let error = seen["error"].as_str().unwrap();
    assert!(error.contains("500"), "{error}");
    assert!(!error.contains(super::SECRET_KEY), "{error}");
}

#[tokio::test]
async fn stop_drops_the_upstream_at_once() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::endless());
    let server = server(&upstream).await;
    let Some(seen) = client(&server, "stop", &[]).await else {
        return;
    };
    assert_eq!(seen["status"], "ready", "{seen}");
    assert!(upstream.wait_dropped(Duration::from_secs(5)).await);
}

#[tokio::test]
async fn bad_bodies_are_refused_before_any_stream() {
    let upstream = FakeUpstream::start().await;
    let server = server(&upstream).await;
    let http = reqwest::Client::new();
    let post = |body: Value| {
        http.post(server.url("/api/chat"))
            .bearer_auth("front-token")
            .json(&body)
            .send()
    };
    // A forged hook part: its signature does not verify, so the agent drops it; a part that is
    // not a history message is refused outright.
    let broken = json!({"id": "c", "messages": [
        {"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hi"}]},
        {"id": "m2", "role": "assistant", "parts": [
            {"type": "data-hookwire-hook", "data": {"role": "wizard", "content": "x"}}]},
        {"id": "m3", "role": "user", "parts": [{"type": "text", "text": "again"}]}]});
    let response = post(broken).await.unwrap();
    assert_eq!(response.status().as_u16(), 400);
    let body: Value = response.json().await.unwrap();
    assert!(
        body["error"]["message"].as_str().unwrap().contains("hook"),
        "{body}"
    );
    // Approval responses without the approval state.
    let no_state = json!({"messages": [
        {"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hi"}]},
        {"id": "m2", "role": "assistant", "parts": [{"type": "step-start"},
            {"type": "dynamic-tool", "toolName": "read_file", "toolCallId": "r1",
             "state": "approval-responded", "input": {"path": "a.txt"},
             "approval": {"id": "r1", "approved": true}}]}]});
    let response = post(no_state).await.unwrap();
    assert_eq!(response.status().as_u16(), 400);
    // An empty conversation.
    let response = post(json!({"messages": []})).await.unwrap();
    assert_eq!(response.status().as_u16(), 400);
    let response = http
        .post(server.url("/api/chat"))
        .json(&json!({"messages": []}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 401);
    assert!(upstream.requests().is_empty());
}

#[tokio::test]
async fn a_server_tool_s_call_and_result_ride_in_the_messages_into_the_next_turn() {
    let upstream = FakeUpstream::start().await;
    super::script_a_tool_turn_then_an_answer(&upstream);
    let server = super::server_without_approval(&upstream).await;
    let Some(seen) = client(&server, "twoTurns", &[]).await else {
        return;
    };
    assert_eq!(seen["status"], "ready", "{seen}");
    let tool = seen["messages"][1]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["type"] == "dynamic-tool")
        .cloned()
        .unwrap_or_default();
    assert_eq!(tool["providerExecuted"], true, "{tool}");
    assert_eq!(tool["output"], "ALPHA");
    super::assert_the_next_turn_carries_the_tool_round(&upstream);
}
