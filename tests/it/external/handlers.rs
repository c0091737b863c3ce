//! The handlers besides commands (a real HTTP hook server, `llm` and `agent` hooks) and the
//! example hooks of `examples/hooks/`.

use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};

use super::server_with_hooks;
use crate::agent::workspace;
use crate::common::*;

#[derive(Clone, Default)]
struct HookServer {
    seen: Arc<Mutex<Vec<Value>>>,
}

async fn hook_endpoint(
    State(state): State<HookServer>,
    Json(body): Json<Value>,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    state.seen.lock().unwrap().push(body.clone());
    if body["user_input"] == "fail" {
        return (
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            "hook server broke",
        )
            .into_response();
    }
    Json(json!({"user_input": format!("{} (via http)", body["user_input"].as_str().unwrap_or(""))}))
        .into_response()
}

#[tokio::test]
async fn http_hooks_post_the_event_and_apply_the_answer() {
    let hooks = HookServer::default();
    let app = Router::new()
        .route("/hook", post(hook_endpoint))
        .with_state(hooks.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let upstream = FakeUpstream::start().await;
    let yaml = format!("pre_send_message:\n  - type: http\n    url: http://{addr}/hook\n");
    let server = server_with_hooks(&upstream, &yaml, None, &[]).start().await;
    chat(
        &server,
        json!({"type":"chat","input":"hello","enable_tools":false}),
    )
    .await;
    assert!(upstream.requests()[0]
        .messages()
        .iter()
        .any(|(_, c)| c == "hello (via http)"));
    assert_eq!(hooks.seen.lock().unwrap()[0]["event"], "pre_send_message");
    // A non-2xx answer is an error: logged, the chat goes on unchanged.
    let frames = chat(
        &server,
        json!({"type":"chat","input":"fail","enable_tools":false}),
    )
    .await;
    assert_eq!(frames.last().unwrap()["type"], "done");
    assert!(upstream.requests()[1]
        .messages()
        .iter()
        .any(|(_, c)| c == "fail"));
    server.shutdown().await;
}

#[tokio::test]
async fn llm_hooks_ask_the_model_with_the_template_filled() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["[NEED_TOOL] go"]));
    upstream.push(Reply::tool_calls(&[(
        "c1",
        "read_file",
        json!({"path":"README.md"}),
    )]));
    // The judge's answer (prose around the JSON is fine).
    upstream.push(Reply::text(&[
        "Verdict: {\"action\": \"skip\", \"reason\": \"the judge said no\"}",
    ]));
    upstream.push(Reply::text(&["final"]));
    let yaml = "pre_tool_execution:\n  - type: llm\n    prompt: 'Is it safe to run {{tool_name}} with {{tool_arguments}}?'\n";
    let server = server_with_hooks(&upstream, yaml, None, &[]).start().await;
    let frames = chat(&server, json!({"type":"chat","input":"go"})).await;
    let result = frames.iter().find(|f| f["type"] == "tool_result").unwrap();
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains("the judge said no"),
        "{result}"
    );
    let judge = &upstream.requests()[2];
    let prompt = &judge.messages()[0].1;
    assert!(
        prompt.starts_with("Is it safe to run read_file with {\"path\":\"README.md\"}?"),
        "{prompt}"
    );
    assert!(prompt.contains("Reply with exactly one JSON object"));
    assert!(judge.tool_names().is_none());
    server.shutdown().await;
}

#[tokio::test]
async fn agent_hooks_run_a_sub_agent_whose_answer_is_the_result() {
    let upstream = FakeUpstream::start().await;
    // The sub-agent's planning round answers directly with the result JSON.
    upstream.push(Reply::text(&[
        "{\"user_input\": \"rewritten by the agent\"}",
    ]));
    upstream.push(Reply::text(&["ok"]));
    let yaml =
        "pre_send_message:\n  - type: agent\n    prompt: 'Rewrite this politely: {{user_input}}'\n";
    let server = server_with_hooks(&upstream, yaml, None, &[]).start().await;
    chat(
        &server,
        json!({"type":"chat","input":"gimme","enable_tools":false}),
    )
    .await;
    let requests = upstream.requests();
    let task = requests[0]
        .messages()
        .iter()
        .find(|(r, _)| r == "user")
        .unwrap()
        .1
        .clone();
    assert!(task.starts_with("Rewrite this politely: gimme"), "{task}");
    assert!(requests[1]
        .messages()
        .iter()
        .any(|(r, c)| r == "user" && c == "rewritten by the agent"));
    server.shutdown().await;
}

#[tokio::test]
async fn the_example_hooks_guard_audit_inject_and_judge() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["[NEED_TOOL] read"]));
    upstream.push(Reply::tool_calls(&[
        ("c1", "read_file", json!({"path":".env"})),
        ("c2", "read_file", json!({"path":"README.md"})),
    ]));
    upstream.push(Reply::text(&["incomplete"]));
    upstream.push(Reply::text(&[
        "{\"retry_feedback\": \"say what the readme says\"}",
    ])); // judge, 1st
    upstream.push(Reply::text(&["It says hello."]));
    upstream.push(Reply::text(&["{}"])); // judge, 2nd
    let dir = workspace();
    std::fs::write(dir.path().join(".env"), "SECRET=1\n").unwrap();
    let dot = dir.path().join(".hookwire");
    std::fs::create_dir_all(&dot).unwrap();
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/hooks");
    for entry in std::fs::read_dir(&examples).unwrap().flatten() {
        std::fs::copy(entry.path(), dot.join(entry.file_name())).unwrap();
    }
    let server = TestServer::builder()
        .workspace(dir)
        .upstream(&upstream)
        .trust_workspace_hooks()
        .start()
        .await;
    let frames = chat(
        &server,
        json!({"type":"chat","input":"what does the readme say?"}),
    )
    .await;
    let results: Vec<&Value> = frames
        .iter()
        .filter(|f| f["type"] == "tool_result")
        .collect();
    assert_eq!(results[0]["is_error"], true);
    assert!(results[0]["content"]
        .as_str()
        .unwrap()
        .contains("reading .env files is not allowed"));
    assert_eq!(results[1]["is_error"], false);
    assert_eq!(
        frames.last().unwrap()["message"]["content"],
        "incomplete\n\nIt says hello."
    );
    let requests = upstream.requests();
    assert!(
        requests[0].messages()[0].1.contains("The current time is"),
        "the time injector ran"
    );
    assert!(requests[3].messages()[0]
        .1
        .starts_with("You review an assistant's final answer"));
    assert!(requests[4]
        .messages()
        .iter()
        .any(|(r, c)| r == "user" && c == "say what the readme says"));
    let audit =
        std::fs::read_to_string(server.workspace.path().join(".hookwire/audit.log")).unwrap();
    let lines: Vec<Value> = audit
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{audit}");
    assert_eq!(lines[0]["event"], "post_tool_execution_failure");
    assert_eq!(lines[1]["tool_name"], "read_file");
    server.shutdown().await;
}
