//! The OpenAI-compatible wire with the `openai` SDK: hookwire as a model, with server tools and
//! hooks inside and client tools as `tool_calls`.

use std::time::Duration;

use serde_json::{json, Value};

use super::run_client;
use crate::common::*;

async fn server(upstream: &FakeUpstream) -> TestServer {
    super::front_server(upstream, false).await
}

async fn client(server: &TestServer, scenario: &str) -> Option<Value> {
    run_client(
        server,
        "openai-client.mjs",
        scenario,
        Some("front-token"),
        &[],
    )
    .await
}

#[tokio::test]
async fn a_streamed_answer_with_usage_and_the_model_list() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["Hello", " there."]));
    let server = server(&upstream).await;
    let Some(seen) = client(&server, "stream").await else {
        return;
    };
    assert_eq!(seen["text"], "Hello there.");
    assert_eq!(seen["finish"], "stop");
    assert_eq!(seen["usage"]["prompt_tokens"], 10);
    assert_eq!(seen["usage"]["completion_tokens"], 2);
    assert_eq!(seen["usage"]["total_tokens"], 12);
    // Planning is off for the answer: the one upstream request had the user's words.
    let request = &upstream.requests()[0];
    assert!(request
        .messages()
        .iter()
        .any(|(role, content)| role == "user" && content == "hello"));
    let models = client(&server, "models").await.unwrap();
    assert_eq!(models["ids"], json!(["hookwire"]));
}

#[tokio::test]
async fn a_whole_answer_reads_text_parts_and_system_messages() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["Hi."]));
    let server = server(&upstream).await;
    let Some(seen) = client(&server, "whole").await else {
        return;
    };
    assert_eq!(seen["text"], "Hi.");
    assert_eq!(seen["finish"], "stop");
    assert_eq!(seen["object"], "chat.completion");
    assert_eq!(seen["usage"]["total_tokens"], 11);
    let messages = upstream.requests()[0].messages();
    assert!(
        messages.contains(&("system".into(), "be brief".into())),
        "{messages:?}"
    );
    assert!(
        messages.contains(&("user".into(), "hello".into())),
        "{messages:?}"
    );
}

#[tokio::test]
async fn a_client_tool_comes_back_as_tool_calls_and_its_result_goes_on() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["[NEED_TOOL] ask the app"]));
    upstream.push(Reply::tool_calls(&[
        ("r1", "read_file", json!({"path": "a.txt"})),
        ("g1", "get_location", json!({"precision": "city"})),
    ]));
    upstream.push(Reply::text(&["You are in Paris; a.txt says ALPHA."]));
    let server = server(&upstream).await;
    let Some(seen) = client(&server, "clientTool").await else {
        return;
    };
    let first = &seen["first"];
    assert_eq!(first["finish"], "tool_calls");
    // Only the client's call reaches the application; the server's ran inside.
    assert_eq!(first["calls"].as_array().unwrap().len(), 1, "{first}");
    assert_eq!(first["calls"][0]["id"], "g1");
    assert_eq!(first["calls"][0]["function"]["name"], "get_location");
    assert_eq!(
        serde_json::from_str::<Value>(first["calls"][0]["function"]["arguments"].as_str().unwrap())
            .unwrap(),
        json!({"precision": "city"})
    );
    assert_eq!(first["text"], "", "the plan is not the answer");
    let second = &seen["second"];
    assert_eq!(second["text"], "You are in Paris; a.txt says ALPHA.");
    assert_eq!(second["finish"], "stop");
    let requests = upstream.requests();
    assert_eq!(requests.len(), 3);
    // The model gets the client's result. The round's server call and its result never reached
    // the application, so they are not in the history it sends back (docs/frontends.md).
    let results = tool_results(&requests[2]);
    assert!(results.contains(&"Paris".to_string()), "{results:?}");
}

#[tokio::test]
async fn a_call_that_needs_approval_is_refused_with_a_reason_the_model_sees() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["[NEED_TOOL] read"]));
    upstream.push(Reply::tool_calls(&[(
        "r1",
        "read_file",
        json!({"path": "a.txt"}),
    )]));
    upstream.push(Reply::text(&["I may not read it."]));
    let server = TestServer::builder()
        .upstream(&upstream)
        .file("a.txt", "ALPHA")
        .config(|c| {
            c.auth_token = Some("front-token".into());
            c.agent.approval.require_approval = vec!["read_file".into()];
        })
        .start()
        .await;
    let Some(seen) = client(&server, "stream").await else {
        return;
    };
    assert_eq!(seen["text"], "I may not read it.");
    let results = tool_results(&upstream.requests()[2]);
    assert_eq!(results.len(), 1);
    assert!(
        results[0].contains("approval") && !results[0].contains("ALPHA"),
        "{results:?}"
    );
}

#[tokio::test]
async fn an_upstream_failure_is_an_api_error_without_secrets() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::Status(500, "upstream exploded".into()));
    let server = server(&upstream).await;
    let Some(seen) = client(&server, "failure").await else {
        return;
    };
    let thrown = seen["thrown"].as_str().unwrap_or_default();
    assert!(!thrown.is_empty(), "the SDK raised nothing: {seen}");
    assert!(thrown.contains("500"), "{thrown}");
    assert!(!thrown.contains(super::SECRET_KEY), "{thrown}");
}

#[tokio::test]
async fn an_abort_drops_the_upstream_at_once() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::endless());
    let server = server(&upstream).await;
    let Some(seen) = client(&server, "abort").await else {
        return;
    };
    assert_eq!(seen["aborted"], true, "{seen}");
    assert!(upstream.wait_dropped(Duration::from_secs(5)).await);
}

#[tokio::test]
async fn bad_input_auth_and_origin_are_refused_before_any_stream() {
    let upstream = FakeUpstream::start().await;
    let server = server(&upstream).await;
    let Some(seen) = client(&server, "badRequest").await else {
        return;
    };
    assert_eq!(seen["status"], 400, "{seen}");
    let http = reqwest::Client::new();
    let url = server.url("/v1/chat/completions");
    let post = |body: String| {
        http.post(&url)
            .bearer_auth("front-token")
            .header("content-type", "application/json")
            .body(body)
    };
    let answer = |response: reqwest::Response| async move {
        let status = response.status().as_u16();
        let body: Value = response.json().await.unwrap();
        (status, body)
    };
    // A tool result for a call nobody made: the history rules of the WebSocket.
    let orphan = json!({"model": "hookwire", "messages": [
        {"role": "user", "content": "hi"},
        {"role": "tool", "tool_call_id": "nope", "content": "x"}]});
    let (status, body) = answer(post(orphan.to_string()).send().await.unwrap()).await;
    assert_eq!(status, 400);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no earlier assistant"),
        "{body}"
    );
    // A client tool named like a server tool.
    let clash = json!({"model": "hookwire", "messages": [{"role": "user", "content": "hi"}],
                       "tools": [{"type": "function", "function": {"name": "read_file"}}]});
    let (status, body) = answer(post(clash.to_string()).send().await.unwrap()).await;
    assert_eq!(status, 400);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("server tool"),
        "{body}"
    );
    // Not JSON, and a body over the limit.
    let (status, _) = answer(post("{not json".into()).send().await.unwrap()).await;
    assert_eq!(status, 400);
    let big = json!({"messages": [{"role": "user", "content": "x".repeat(2 << 20)}]});
    let (status, body) = answer(post(big.to_string()).send().await.unwrap()).await;
    assert_eq!(status, 413, "{body}");
    // No token, and a foreign page.
    let response = http.post(&url).body("{}").send().await.unwrap();
    let (status, body) = answer(response).await;
    assert_eq!(status, 401);
    assert!(body["error"]["message"].is_string(), "{body}");
    let response = post("{}".into())
        .header("origin", "http://evil.test")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 403);
    assert!(upstream.requests().is_empty());
}
