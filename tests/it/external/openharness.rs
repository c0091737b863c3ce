//! The OpenHarness format: its results need declared capabilities, its control fields, its
//! own events, and its name in `/api/hooks`.

use serde_json::{json, Value};

use super::server_with_hooks;
use crate::common::*;

#[tokio::test]
async fn seed_004_results_need_capabilities_and_retry_feedback_is_bounded() {
    let upstream = FakeUpstream::start().await;
    for _ in 0..4 {
        upstream.push(Reply::text(&["draft"]));
    }
    let yaml = r#"
before_model_call:
  - command: echo '{"hookSpecificOutput":{"system_prompt":"PATCHED PROMPT"}}'
    capabilities: [system_prompt]
  - command: echo '{"hookSpecificOutput":{"system_prompt":"NOT ALLOWED"}}'
after_model_call:
  - command: echo '{"retry_feedback":"try again"}'
"#;
    let server = server_with_hooks(&upstream, yaml, None, &[])
        .config(|c| c.agent.max_retries = 2)
        .start()
        .await;
    let frames = chat(
        &server,
        json!({"type":"chat","input":"hi","enable_tools":false}),
    )
    .await;
    let requests = upstream.requests();
    assert_eq!(
        requests.len(),
        3,
        "one call plus two retries, then the bound holds"
    );
    assert_eq!(requests[0].messages()[0].1, "PATCHED PROMPT");
    assert!(requests[1]
        .messages()
        .iter()
        .any(|(r, c)| r == "user" && c == "try again"));
    assert_eq!(frames.last().unwrap()["type"], "done");
    server.shutdown().await;
}

#[tokio::test]
async fn seed_004_control_fields_stop_the_chat() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["answer"]));
    // A script written for the OpenHarness format's protocol, unchanged.
    let script = "#!/bin/sh\ncat >/dev/null\necho '{\"continue\": false, \"stopReason\": \"budget reached\", \"systemMessage\": \"stopping\"}'\n";
    let yaml = "after_model_call:\n  - command: ./budget.sh\n";
    let server = server_with_hooks(&upstream, yaml, None, &[("budget.sh", script)])
        .start()
        .await;
    let frames = chat(
        &server,
        json!({"type":"chat","input":"hi","enable_tools":false}),
    )
    .await;
    assert_eq!(frames.last().unwrap()["reason"], "stopped");
    assert!(frames
        .iter()
        .any(|f| f["type"] == "notice" && f["message"] == "budget reached"));
    assert!(frames
        .iter()
        .any(|f| f["type"] == "notice" && f["message"] == "stopping"));
    server.shutdown().await;
}

#[tokio::test]
async fn seed_004_context_build_events_fire_and_after_may_replace_the_messages() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["[NEED_TOOL] go"]));
    upstream.push(Reply::tool_calls(&[("c1", "list_dir", json!({}))]));
    upstream.push(Reply::text(&["done"]));
    let yaml = r#"
before_context_build:
  - command: 'cat > before.json'
after_context_build:
  - command: echo '{"messages":[{"role":"system","content":"REBUILT SYSTEM"},{"role":"user","content":"REBUILT INPUT"}]}'
    capabilities: [messages]
"#;
    let server = server_with_hooks(&upstream, yaml, None, &[]).start().await;
    let history =
        json!([{"role":"user","content":"old"},{"role":"assistant","content":"older answer"}]);
    chat(
        &server,
        json!({"type":"chat","input":"new","messages":history}),
    )
    .await;
    let before: Value = serde_json::from_str(
        &std::fs::read_to_string(server.workspace.path().join("before.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(before["hook_event_name"], "before_context_build");
    assert_eq!(
        before["messages"].as_array().unwrap().len(),
        3,
        "system prompt and the history, before the input"
    );
    for request in upstream.requests() {
        let messages = request.messages();
        assert_eq!(
            &messages[..2],
            &[
                ("system".to_string(), "REBUILT SYSTEM".to_string()),
                ("user".to_string(), "REBUILT INPUT".to_string())
            ]
        );
        assert!(
            !messages.iter().any(|(_, c)| c == "older answer"),
            "the rebuilt list persists for every call"
        );
    }
    server.shutdown().await;
}

#[tokio::test]
async fn openharness_own_events_rewrite_only_what_the_hook_declares() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["the answer"]));
    // No capability declared: the rewrites at the OpenHarness format's own events are refused.
    let yaml = r#"
after_context_build:
  - command: echo '{"messages":[{"role":"user","content":"UNDECLARED REBUILD"}]}'
run_completed:
  - command: echo '{"assistant_output":"UNDECLARED DONE"}'
"#;
    let server = server_with_hooks(&upstream, yaml, None, &[]).start().await;
    let frames = chat(
        &server,
        json!({"type":"chat","input":"hi","enable_tools":false}),
    )
    .await;
    assert_eq!(
        frames.last().unwrap()["message"]["content"],
        "the answer",
        "{frames:?}"
    );
    let asked = upstream.requests();
    assert!(
        !asked[0]
            .messages()
            .iter()
            .any(|(_, c)| c == "UNDECLARED REBUILD"),
        "{:?}",
        asked[0].messages()
    );
    server.shutdown().await;

    // Declared: the same answers apply.
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["the answer"]));
    let yaml = r#"
after_context_build:
  - command: echo '{"messages":[{"role":"user","content":"DECLARED REBUILD"}]}'
    capabilities: [messages]
run_completed:
  - command: echo '{"hookSpecificOutput":{"assistant_output":"DECLARED DONE"}}'
    capabilities: [assistant_output]
"#;
    let server = server_with_hooks(&upstream, yaml, None, &[]).start().await;
    let frames = chat(
        &server,
        json!({"type":"chat","input":"hi","enable_tools":false}),
    )
    .await;
    assert_eq!(
        frames.last().unwrap()["message"]["content"],
        "DECLARED DONE"
    );
    assert_eq!(
        upstream.requests()[0].messages(),
        [("user".to_string(), "DECLARED REBUILD".to_string())]
    );
    server.shutdown().await;
}

/// `/api/hooks` names the dialect of a hook under an OpenHarness name `openharness`.
#[tokio::test]
async fn api_hooks_names_the_openharness_dialect() {
    let upstream = FakeUpstream::start().await;
    let yaml = "before_tool_dispatch:\n  - name: oh\n    command: 'true'\n\
                pre_tool_execution:\n  - name: jcli\n    command: 'true'\n";
    let server = server_with_hooks(&upstream, yaml, None, &[]).start().await;
    let (status, body) = http_get(server.addr, "/api/hooks").await;
    assert_eq!(status, 200, "{body}");
    let list: Value = serde_json::from_str(&body).unwrap();
    let dialect = |name: &str| {
        let hooks = list["hooks"].as_array().unwrap();
        let hook = hooks.iter().find(|hook| hook["name"] == name);
        hook.map(|hook| hook["dialect"].clone())
    };
    assert_eq!(dialect("oh"), Some(json!("openharness")));
    assert_eq!(dialect("jcli"), Some(json!("hookwire")));
    server.shutdown().await;
}
