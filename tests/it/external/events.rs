//! What each event's hooks get and what their answers do: every event at its place with its
//! input, results applied where they are valid, exit codes, filters, `run_failed`.

use std::time::Duration;

use serde_json::{json, Value};

use super::server_with_hooks;
use crate::common::*;

#[tokio::test]
async fn every_event_fires_once_at_its_place_with_its_input() {
    let upstream = FakeUpstream::start().await;
    tool_round(
        &upstream,
        &[("c1", "read_file", json!({"path":"README.md"}))],
        "final",
    );
    let events = [
        "session_start",
        "pre_send_message",
        "post_send_message",
        "pre_llm_request",
        "post_llm_response",
        "pre_tool_execution",
        "post_tool_execution",
        "stop",
        "run_completed",
        "session_end",
    ];
    let yaml: String = events
        .iter()
        .map(|e| format!("{e}:\n  - command: 'cat > \"input-$HOOKWIRE_HOOK_EVENT.json\"; echo \"$HOOKWIRE_HOOK_EVENT\" >> events.log'\n"))
        .collect();
    let server = server_with_hooks(&upstream, &yaml, None, &[]).start().await;
    let root = server.workspace.path().to_path_buf();
    let frames = chat(&server, json!({"type":"chat","input":"read it"})).await;
    assert_eq!(frames.last().unwrap()["reason"], "completed");
    // `session_end` fires once the socket is gone, after the chat; it is the last event.
    let ended = eventually(Duration::from_secs(5), || async {
        std::fs::read_to_string(root.join("events.log"))
            .is_ok_and(|log| log.lines().last() == Some("session_end"))
    })
    .await;
    assert!(ended, "session_end never fired");
    let log = std::fs::read_to_string(root.join("events.log")).unwrap();
    let fired: Vec<&str> = log.lines().collect();
    assert_eq!(
        fired,
        [
            "session_start",
            "pre_send_message",
            "post_send_message",
            "pre_llm_request",
            "post_llm_response", // planning
            "pre_llm_request",
            "post_llm_response",
            "pre_tool_execution",
            "post_tool_execution", // round 1
            "pre_llm_request",
            "post_llm_response",
            "stop",
            "run_completed", // round 2
            "session_end",
        ]
    );
    let read = |event: &str| -> Value {
        serde_json::from_str(
            &std::fs::read_to_string(root.join(format!("input-{event}.json"))).unwrap(),
        )
        .unwrap()
    };
    let pre_send = read("pre_send_message");
    assert_eq!(pre_send["user_input"], "read it");
    assert_eq!(pre_send["hook_event_name"], "pre_send_message");
    assert_eq!(pre_send["agent_name"], "hookwire");
    assert!(pre_send["session_id"]
        .as_str()
        .is_some_and(|s| !s.is_empty()));
    assert!(pre_send["run_id"].as_str().is_some());
    let tool = read("pre_tool_execution");
    assert_eq!(
        (tool["tool_name"].as_str(), tool["tool_arguments"].as_str()),
        (Some("read_file"), Some("{\"path\":\"README.md\"}"))
    );
    assert_eq!(tool["tool_input"], json!({"path":"README.md"}));
    assert!(read("post_tool_execution")["tool_result"]
        .as_str()
        .unwrap()
        .contains("hello from the readme"));
    assert_eq!(read("stop")["assistant_output"], "final");
    assert_eq!(read("pre_llm_request")["model_ref"], "fake-model");
    assert!(
        read("session_start").get("user_input").is_none(),
        "unset fields are omitted"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn results_apply_at_their_events_and_are_ignored_elsewhere() {
    let upstream = FakeUpstream::start().await;
    tool_round(
        &upstream,
        &[("c1", "read_file", json!({"path":"README.md"}))],
        "final",
    );
    let yaml = r#"
pre_send_message:
  - command: echo '{"user_input":"REWRITTEN","system_message":"input rewritten"}'
post_send_message:
  - command: echo '{"user_input":"IGNORED"}'
pre_llm_request:
  - command: echo '{"additional_context":"EXTRA","inject_messages":[{"role":"user","content":"INJECTED"}]}'
pre_tool_execution:
  - command: echo '{"tool_arguments":{"path":"b.txt"}}'
post_tool_execution:
  - command: echo '{"tool_result":"RESULT REPLACED"}'
post_llm_response:
  - command: echo '{}'
run_completed:
  - command: echo '{"assistant_output":"DONE REPLACED"}'
    capabilities: [assistant_output]
"#;
    let server = server_with_hooks(&upstream, yaml, None, &[]).start().await;
    let frames = chat(&server, json!({"type":"chat","input":"original"})).await;
    let requests = upstream.requests();
    assert!(requests[0]
        .messages()
        .iter()
        .any(|(r, c)| r == "user" && c == "REWRITTEN"));
    assert!(!requests[0]
        .messages()
        .iter()
        .any(|(_, c)| c == "IGNORED" || c == "original"));
    assert!(requests[0].messages()[0].1.ends_with("EXTRA"));
    assert_eq!(
        requests[0].messages().last().unwrap(),
        &("user".to_string(), "INJECTED".to_string())
    );
    let call = frames.iter().find(|f| f["type"] == "tool_call").unwrap();
    assert_eq!(call["arguments"], json!({"path":"b.txt"}));
    let result = frames.iter().find(|f| f["type"] == "tool_result").unwrap();
    assert_eq!(result["content"], "RESULT REPLACED");
    assert!(frames
        .iter()
        .any(|f| f["type"] == "notice" && f["message"] == "input rewritten"));
    assert_eq!(
        frames.last().unwrap()["message"]["content"],
        "DONE REPLACED"
    );
    // Per-call: the injection is not in the persistent list.
    assert_eq!(
        requests[2]
            .messages()
            .iter()
            .filter(|(_, c)| c == "INJECTED")
            .count(),
        1
    );
    server.shutdown().await;
}

#[tokio::test]
async fn more_result_fields_at_valid_and_invalid_events() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["[NEED_TOOL] go"]));
    upstream.push(Reply::tool_calls(&[(
        "c1",
        "read_file",
        json!({"path":"missing.txt"}),
    )]));
    upstream.push(Reply::text(&["model text"]));
    let yaml = r#"
pre_llm_request:
  - command: echo '{"messages":[{"role":"system","content":"ONLY THIS"},{"role":"user","content":"REPLACED LIST"}],"tool_result":"NOT HERE"}'
post_tool_execution_failure:
  - command: echo '{"tool_error":"FRIENDLIER ERROR","additional_context":"HINT","systemMessage":"quiet","suppressOutput":true}'
post_send_message:
  - command: echo '{"abort":true}'
"#;
    let server = server_with_hooks(&upstream, yaml, None, &[]).start().await;
    let frames = chat(&server, json!({"type":"chat","input":"go"})).await;
    let requests = upstream.requests();
    for request in &requests {
        assert_eq!(
            request.messages(),
            [
                ("system".to_string(), "ONLY THIS".to_string()),
                ("user".to_string(), "REPLACED LIST".to_string())
            ],
            "messages replace the whole list of each call"
        );
    }
    let result = frames.iter().find(|f| f["type"] == "tool_result").unwrap();
    // The context goes to the system prompt, not into the error.
    assert_eq!(result["content"], "FRIENDLIER ERROR");
    assert!(
        !frames
            .iter()
            .any(|f| f["type"] == "notice" && f["message"] == "quiet"),
        "suppressOutput hides it"
    );
    // `abort` at an observe-only event does not stop the chat.
    assert_eq!(frames.last().unwrap()["reason"], "completed");
    server.shutdown().await;

    // assistant_output at post_llm_response replaces the text that is kept (user_input there is ignored).
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["model text"]));
    let yaml = "post_llm_response:\n  - command: echo '{\"assistant_output\":\"KEPT OUTPUT\",\"user_input\":\"IGNORED\"}'\n";
    let server = server_with_hooks(&upstream, yaml, None, &[]).start().await;
    let frames = chat(
        &server,
        json!({"type":"chat","input":"go","enable_tools":false}),
    )
    .await;
    assert_eq!(
        text_of(&frames),
        "model text",
        "what streamed stays streamed"
    );
    assert_eq!(frames.last().unwrap()["message"]["content"], "KEPT OUTPUT");
    server.shutdown().await;
}

#[tokio::test]
async fn exit_2_blocks_and_other_exit_codes_are_errors() {
    let upstream = FakeUpstream::start().await;
    tool_round(
        &upstream,
        &[("c1", "read_file", json!({"path":".env"}))],
        "final",
    );
    let guard = "#!/bin/sh\ninput=$(cat)\ncase \"$input\" in *'.env'*) echo 'reading .env files is not allowed' >&2; exit 2;; esac\nexit 0\n";
    let yaml =
        "pre_tool_execution:\n  - command: ./guard.sh\npost_send_message:\n  - command: exit 7\n";
    let server = server_with_hooks(&upstream, yaml, None, &[("guard.sh", guard)])
        .start()
        .await;
    let frames = chat(&server, json!({"type":"chat","input":"read .env"})).await;
    let result = frames.iter().find(|f| f["type"] == "tool_result").unwrap();
    assert_eq!(result["is_error"], true);
    assert!(result["content"]
        .as_str()
        .unwrap()
        .contains("reading .env files is not allowed"));
    assert_eq!(
        frames.last().unwrap()["reason"],
        "completed",
        "exit 7 is logged, the chat goes on"
    );

    let blocking = "pre_send_message:\n  - command: \"echo 'no chats today' >&2; exit 2\"\n";
    let upstream2 = FakeUpstream::start().await;
    let server2 = server_with_hooks(&upstream2, blocking, None, &[])
        .start()
        .await;
    let frames = chat(&server2, json!({"type":"chat","input":"hi"})).await;
    let last = frames.last().unwrap();
    assert_eq!(
        (last["code"].as_str(), last["message"].as_str()),
        (Some("hook_blocked"), Some("no chats today"))
    );
    assert!(upstream2.requests().is_empty());
    let (_, metrics) = http_get(server2.addr, "/metrics").await;
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("hookwire_external_hook_runs_total")
                && l.contains("outcome=\"block\"")),
        "{metrics}"
    );
    server.shutdown().await;
    server2.shutdown().await;
}

#[tokio::test]
async fn filters_select_hooks() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["[NEED_TOOL] go"]));
    upstream.push(Reply::tool_calls(&[
        ("c1", "read_file", json!({"path":"README.md"})),
        ("c2", "list_dir", json!({})),
        ("c3", "search_text", json!({"pattern":"hello"})),
    ]));
    upstream.push(Reply::text(&["final"]));
    let yaml = r#"
post_tool_execution:
  - command: echo '{"tool_result":"BY NAME"}'
    filter: { tool_name: read_file, tool_matcher: list_dir }
  - command: echo '{"tool_result":"BY MATCHER"}'
    filter: { tool_matcher: "list_dir|nothing" }
  - command: echo '{"tool_result":"BY REGEX"}'
    matcher: "^search"
  - command: echo '{"tool_result":"WRONG MODEL"}'
    filter: { model_prefix: "gpt-" }
"#;
    let server = server_with_hooks(&upstream, yaml, None, &[]).start().await;
    let frames = chat(&server, json!({"type":"chat","input":"go"})).await;
    let results: Vec<&str> = frames
        .iter()
        .filter(|f| f["type"] == "tool_result")
        .map(|f| f["content"].as_str().unwrap())
        .collect();
    assert_eq!(results, ["BY NAME", "BY MATCHER", "BY REGEX"]);
    server.shutdown().await;
}

#[tokio::test]
async fn run_failed_fires_when_the_chat_fails() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::Status(501, "down for maintenance".into()));
    let yaml = "run_failed:\n  - command: 'cat > failed.json'\nrun_completed:\n  - command: 'touch completed'\n";
    let server = server_with_hooks(&upstream, yaml, None, &[]).start().await;
    let frames = chat(
        &server,
        json!({"type":"chat","input":"hi","enable_tools":false}),
    )
    .await;
    assert_eq!(frames.last().unwrap()["code"], "upstream");
    let input: Value = serde_json::from_str(
        &std::fs::read_to_string(server.workspace.path().join("failed.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        (input["event"].as_str(), input["trigger_type"].as_str()),
        (Some("run_failed"), Some("chat"))
    );
    assert!(
        input["error"]
            .as_str()
            .unwrap()
            .contains("down for maintenance"),
        "{input}"
    );
    assert!(!server.workspace.path().join("completed").exists());
    server.shutdown().await;
}
