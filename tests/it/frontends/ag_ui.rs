//! The AG-UI wire with `@ag-ui/client`'s stock `HttpAgent` (every event also parsed with
//! `@ag-ui/core`'s schema): a plain answer, steps and tool calls, client tools, approval as an
//! interrupt resumed by `resume` entries, persistent hooks carried in the state, failure, abort.

use std::time::Duration;

use serde_json::{json, Value};

use super::run_client;
use crate::common::*;

async fn server(upstream: &FakeUpstream) -> TestServer {
    super::front_server(upstream, true).await
}

async fn client(server: &TestServer, scenario: &str) -> Option<Value> {
    run_client(
        server,
        "ag-ui-client.mjs",
        scenario,
        Some("front-token"),
        &[],
    )
    .await
}

/// The event types of run `index`.
fn events(seen: &Value, index: usize) -> Vec<String> {
    seen["runs"][index]["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap().to_string())
        .collect()
}

/// The agent's messages of `role`.
fn messages_of<'a>(seen: &'a Value, role: &str) -> Vec<&'a Value> {
    seen["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == role)
        .collect()
}

#[tokio::test]
async fn a_plain_answer_is_one_run_with_its_usage() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["Hello", " there."]));
    let server = server(&upstream).await;
    let Some(seen) = client(&server, "text").await else {
        return;
    };
    let kinds = events(&seen, 0);
    assert_eq!(kinds.first().unwrap(), "RUN_STARTED", "{kinds:?}");
    assert_eq!(kinds.last().unwrap(), "RUN_FINISHED", "{kinds:?}");
    assert!(kinds.contains(&"STEP_STARTED".to_string()), "{kinds:?}");
    assert_eq!(
        kinds.iter().filter(|k| k.starts_with("RUN_")).count(),
        2,
        "{kinds:?}"
    );
    let finished = &seen["runs"][0]["finished"];
    assert_eq!(finished["outcome"]["type"], "success", "{finished}");
    assert_eq!(finished["usage"][0]["inputTokens"], 10, "{finished}");
    let answers = messages_of(&seen, "assistant");
    assert_eq!(answers.last().unwrap()["content"], "Hello there.");
}

#[tokio::test]
async fn a_client_tool_is_pending_then_the_next_run_goes_on_from_its_result() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["[NEED_TOOL] ask"]));
    upstream.push(Reply::tool_calls(&[("g1", "get_location", json!({}))]));
    upstream.push(Reply::text(&["You are in Paris."]));
    let server = server(&upstream).await;
    let Some(seen) = client(&server, "clientTool").await else {
        return;
    };
    let first = &seen["runs"][0]["finished"]["outcome"];
    assert_eq!(first["type"], "success", "{seen}");
    assert_eq!(first["pendingToolCallIds"], json!(["g1"]), "{seen}");
    assert!(events(&seen, 0).contains(&"TOOL_CALL_START".to_string()));
    assert_eq!(seen["runs"][1]["finished"]["outcome"]["type"], "success");
    let answers = messages_of(&seen, "assistant");
    assert_eq!(answers.last().unwrap()["content"], "You are in Paris.");
    assert_eq!(tool_results(&upstream.requests()[2]), ["Paris"]);
}

#[tokio::test]
async fn approval_is_an_interrupt_and_resume_entries_go_on() {
    for approved in [true, false] {
        let upstream = FakeUpstream::start().await;
        tool_round(
            &upstream,
            &[("r1", "read_file", json!({"path": "a.txt"}))],
            "Done.",
        );
        let server = server(&upstream).await;
        let scenario = if approved { "approve" } else { "deny" };
        let Some(seen) = client(&server, scenario).await else {
            return;
        };
        let outcome = &seen["runs"][0]["finished"]["outcome"];
        assert_eq!(outcome["type"], "interrupt", "{seen}");
        let interrupt = &outcome["interrupts"][0];
        assert_eq!(interrupt["toolCallId"], "r1");
        assert_eq!(interrupt["reason"], "tool_approval");
        assert!(interrupt["expiresAt"].is_string() || interrupt["expiresAt"].is_number());
        // The sealed state rode in the agent's state, untouched by the application.
        assert!(seen["state"]["hookwire"].is_object(), "{}", seen["state"]);
        assert_eq!(
            seen["runs"][1]["finished"]["outcome"]["type"], "success",
            "{seen}"
        );
        let results = tool_results(&upstream.requests()[2]);
        let expected = if approved { "ALPHA" } else { "not that file" };
        assert!(results[0].contains(expected), "{results:?}");
        let answers = messages_of(&seen, "assistant");
        assert_eq!(answers.last().unwrap()["content"], "Done.");
    }
}

#[tokio::test]
async fn a_persistent_hook_rides_in_the_state_into_the_next_run() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["Un."]));
    upstream.push(Reply::text(&["Deux."]));
    let server = super::persistent_hook_server(&upstream).await;
    let Some(seen) = client(&server, "twoTurns").await else {
        return;
    };
    assert!(events(&seen, 0).contains(&"STATE_SNAPSHOT".to_string()));
    super::assert_the_hook_is_carried_once(&upstream);
}

#[tokio::test]
async fn an_upstream_failure_is_one_run_error_without_secrets() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::Status(500, "upstream exploded".into()));
    let server = server(&upstream).await;
    let Some(seen) = client(&server, "text").await else {
        return;
    };
    let kinds = events(&seen, 0);
    assert_eq!(kinds.last().unwrap(), "RUN_ERROR", "{kinds:?}");
    assert!(!kinds.contains(&"RUN_FINISHED".to_string()));
    let error = &seen["runs"][0]["error"];
    assert_eq!(error["code"], "upstream", "{error}");
    assert!(!error.to_string().contains(super::SECRET_KEY), "{error}");
}

#[tokio::test]
async fn abort_drops_the_upstream_at_once() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::endless());
    let server = server(&upstream).await;
    let Some(_) = client(&server, "abort").await else {
        return;
    };
    assert!(upstream.wait_dropped(Duration::from_secs(5)).await);
}

#[tokio::test]
async fn bad_input_is_refused_before_any_stream() {
    let upstream = FakeUpstream::start().await;
    let server = server(&upstream).await;
    let http = reqwest::Client::new();
    let post = |body: Value| {
        http.post(server.url("/ag-ui"))
            .bearer_auth("front-token")
            .json(&body)
            .send()
    };
    let orphan = json!({"threadId": "t", "runId": "r", "state": {}, "tools": [], "context": [],
        "forwardedProps": {}, "messages": [
            {"id": "u1", "role": "user", "content": "hi"},
            {"id": "t1", "role": "tool", "toolCallId": "nope", "content": "x"}]});
    let response = post(orphan).await.unwrap();
    assert_eq!(response.status().as_u16(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "bad_frame", "{body}");
    let clash = json!({"threadId": "t", "runId": "r", "state": {}, "context": [],
        "forwardedProps": {}, "messages": [{"id": "u1", "role": "user", "content": "hi"}],
        "tools": [{"name": "read_file", "description": "mine", "parameters": {}}]});
    let response = post(clash).await.unwrap();
    assert_eq!(response.status().as_u16(), 400);
    let response = http
        .post(server.url("/ag-ui"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 401);
    assert!(upstream.requests().is_empty());
}

#[tokio::test]
async fn a_server_tool_s_call_and_result_ride_in_the_messages_into_the_next_run() {
    let upstream = FakeUpstream::start().await;
    super::script_a_tool_turn_then_an_answer(&upstream);
    let server = super::server_without_approval(&upstream).await;
    let Some(seen) = client(&server, "twoTurns").await else {
        return;
    };
    assert_eq!(
        seen["runs"][1]["finished"]["outcome"]["type"], "success",
        "{seen}"
    );
    assert_eq!(messages_of(&seen, "tool")[0]["content"], "ALPHA");
    super::assert_the_next_turn_carries_the_tool_round(&upstream);
}
