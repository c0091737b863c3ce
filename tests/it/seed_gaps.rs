//! What seeds 000, 001 and 004 say that hookwire now does: each result at every event its seed
//! names, filters and matchers as the seeds define them, the OpenHarness format's envelope and capabilities.
//! Each test asserts what reached the upstream request (or the client).

use std::path::Path;

use serde_json::{json, Value};

use crate::common::*;

/// A server whose server-level hook file is `yaml`, in a workspace with README.md and b.txt.
async fn with_hooks(upstream: &FakeUpstream, yaml: &str) -> TestServer {
    with_hooks_and(upstream, yaml, |_| {}).await
}

async fn with_hooks_and(
    upstream: &FakeUpstream,
    yaml: &str,
    prepare: impl FnOnce(&Path),
) -> TestServer {
    TestServer::builder()
        .workspace(crate::agent::workspace())
        .upstream(upstream)
        .hooks(yaml)
        .prepare(prepare)
        .start()
        .await
}

#[tokio::test]
async fn tool_matcher_takes_patterns() {
    let upstream = FakeUpstream::start().await;
    tool_round(
        &upstream,
        &[
            ("c1", "read_file", json!({"path": "README.md"})),
            ("c2", "list_dir", json!({})),
        ],
        "final",
    );
    let yaml = r#"
pre_tool_execution:
  - command: echo '{"action":"skip","reason":"PATTERN MATCHED"}'
    filter: { tool_matcher: "read_.*" }
"#;
    let server = with_hooks(&upstream, yaml).await;
    chat(&server, json!({"type":"chat","input":"go"})).await;
    let results = tool_results(&upstream.requests()[2]);
    assert!(results[0].contains("PATTERN MATCHED"), "{results:?}");
    assert!(
        results[1].contains("README.md"),
        "list_dir ran: {results:?}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn run_completed_matchers_match_the_trigger_type() {
    let upstream = FakeUpstream::start().await;
    let yaml = r#"
run_completed:
  - command: touch ran-for-chat
    matcher: '^chat$'
  - command: touch ran-for-cron
    matcher: '^cron$'
"#;
    let server = with_hooks(&upstream, yaml).await;
    chat(
        &server,
        json!({"type":"chat","input":"hi","enable_tools":false}),
    )
    .await;
    let root = server.workspace.path();
    assert!(root.join("ran-for-chat").exists());
    assert!(!root.join("ran-for-cron").exists());
    server.shutdown().await;
}

#[tokio::test]
async fn seed_004_envelope_has_workspace_id_and_model_request() {
    let upstream = FakeUpstream::start().await;
    let yaml = "before_model_call:\n  - command: 'cat > model.json'\n";
    let server = with_hooks(&upstream, yaml).await;
    chat(
        &server,
        json!({"type":"chat","input":"hi","enable_tools":false}),
    )
    .await;
    let input: Value = serde_json::from_str(
        &std::fs::read_to_string(server.workspace.path().join("model.json")).unwrap(),
    )
    .unwrap();
    assert!(input["workspace_id"].as_str().unwrap().starts_with("ws-"));
    assert_eq!(input["model_request"]["model"], "fake-model");
    let messages = input["model_request"]["messages"].as_array().unwrap();
    assert_eq!(
        messages.last().unwrap(),
        &json!({"role":"user","content":"hi"})
    );
    assert_eq!(input["model_request"]["tools"], json!([]));
    server.shutdown().await;
}

#[tokio::test]
async fn the_prompt_handler_injects_the_envelope() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["[NEED_TOOL] go"]));
    upstream.push(Reply::tool_calls(&[(
        "c1",
        "read_file",
        json!({"path": "README.md"}),
    )]));
    upstream.push(Reply::text(&["{}"])); // the prompt hook's answer
    upstream.push(Reply::text(&["final"]));
    let yaml = "before_tool_dispatch:\n  - type: prompt\n    prompt: Is this tool call safe?\n";
    let server = with_hooks(&upstream, yaml).await;
    chat(&server, json!({"type":"chat","input":"go"})).await;
    let asked = upstream.requests()[2].messages();
    let (_, prompt) = asked.last().unwrap();
    assert!(prompt.starts_with("Is this tool call safe?"), "{prompt}");
    assert!(
        prompt.contains("\"hook_event_name\":\"before_tool_dispatch\""),
        "{prompt}"
    );
    assert!(prompt.contains("\"tool_name\":\"read_file\""), "{prompt}");
    server.shutdown().await;
}

#[tokio::test]
async fn seed_004_rewrites_need_a_declared_capability() {
    let upstream = FakeUpstream::start().await;
    tool_round(
        &upstream,
        &[("c1", "read_file", json!({"path": "README.md"}))],
        "final",
    );
    let yaml = r#"
after_tool_dispatch:
  - command: echo '{"tool_output":"REPLACED"}'
    capabilities: [tool_output]
  - command: echo '{"tool_output":"NOT ALLOWED"}'
"#;
    let server = with_hooks(&upstream, yaml).await;
    chat(&server, json!({"type":"chat","input":"go"})).await;
    assert_eq!(tool_results(&upstream.requests()[2]), ["REPLACED"]);
    server.shutdown().await;
}

#[tokio::test]
async fn seed_001_retry_feedback_before_the_message_follows_the_input() {
    let upstream = FakeUpstream::start().await;
    let yaml =
        "pre_send_message:\n  - command: echo '{\"retry_feedback\":\"Answer in French.\"}'\n";
    let server = with_hooks(&upstream, yaml).await;
    let frames = chat(
        &server,
        json!({"type":"chat","input":"hello","enable_tools":false}),
    )
    .await;
    assert_eq!(frames.last().unwrap()["type"], "done");
    let messages = upstream.requests()[0].messages();
    let n = messages.len();
    assert_eq!(
        &messages[n - 2..],
        &[
            ("user".to_string(), "hello".to_string()),
            ("user".to_string(), "Answer in French.".to_string())
        ]
    );
    server.shutdown().await;
}

#[tokio::test]
async fn seed_001_retry_feedback_before_a_tool_is_its_result() {
    let upstream = FakeUpstream::start().await;
    tool_round(
        &upstream,
        &[("c1", "read_file", json!({"path": "README.md"}))],
        "final",
    );
    let yaml =
        "pre_tool_execution:\n  - command: echo '{\"retry_feedback\":\"Use list_dir first.\"}'\n";
    let server = with_hooks(&upstream, yaml).await;
    chat(&server, json!({"type":"chat","input":"go"})).await;
    let results = tool_results(&upstream.requests()[2]);
    assert!(results[0].contains("Use list_dir first."), "{results:?}");
    assert!(!results[0].contains("hello from the readme"));
    server.shutdown().await;
}

#[tokio::test]
async fn seed_001_session_start_inject_messages_reach_the_chats_first_call() {
    let upstream = FakeUpstream::start().await;
    // The jcli format's own example.
    let yaml = "session_start:\n  - command: \"echo '{\\\"inject_messages\\\": [{\\\"role\\\": \\\"user\\\", \\\"content\\\": \\\"当前用户: jack\\\"}]}'\"\n";
    let server = with_hooks(&upstream, yaml).await;
    let history =
        json!([{"role":"user","content":"before"},{"role":"assistant","content":"reply"}]);
    chat(
        &server,
        json!({"type":"chat","input":"hi","messages":history,"enable_tools":false}),
    )
    .await;
    let messages = upstream.requests()[0].messages();
    assert_eq!(
        messages[1],
        ("user".to_string(), "当前用户: jack".to_string())
    );
    assert_eq!(messages[2], ("user".to_string(), "before".to_string()));
    server.shutdown().await;
}

#[tokio::test]
async fn seed_001_action_stop_at_stop_ends_the_chat_there() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["the answer"]));
    let yaml = r#"
stop:
  - command: echo '{"action":"stop","reason":"enough for today"}'
  - command: echo '{"retry_feedback":"never asked"}'
"#;
    let server = with_hooks(&upstream, yaml).await;
    let frames = chat(
        &server,
        json!({"type":"chat","input":"hi","enable_tools":false}),
    )
    .await;
    let done = frames.last().unwrap();
    assert_eq!(done["reason"], "stopped", "{frames:?}");
    assert_eq!(done["message"]["content"], "the answer");
    assert!(frames
        .iter()
        .any(|f| f["type"] == "notice" && f["message"] == "enough for today"));
    assert_eq!(upstream.requests().len(), 1);
    server.shutdown().await;
}

#[tokio::test]
async fn rewriting_the_planning_reply_keeps_the_tools_on() {
    let upstream = FakeUpstream::start().await;
    tool_round(
        &upstream,
        &[("c1", "read_file", json!({"path": "README.md"}))],
        "final",
    );
    let yaml = r#"
post_llm_response:
  - command: |
      jq 'if (.assistant_output | startswith("[NEED_TOOL]")) then {assistant_output: "Plan, as rewritten"} else {} end'
"#;
    let server = with_hooks(&upstream, yaml).await;
    let frames = chat(&server, json!({"type":"chat","input":"go"})).await;
    let plan = frames.iter().find(|f| f["type"] == "plan").unwrap();
    assert_eq!(plan["content"], "Plan, as rewritten");
    assert!(frames.iter().any(|f| f["type"] == "tool_call"));
    assert_eq!(upstream.requests().len(), 3);
    server.shutdown().await;
}

#[tokio::test]
async fn after_tool_call_prompt_hooks_inject_once_per_tool_call() {
    let upstream = FakeUpstream::start().await;
    tool_round(
        &upstream,
        &[
            ("c1", "read_file", json!({"path": "README.md"})),
            ("c2", "read_file", json!({"path": "b.txt"})),
            ("c3", "list_dir", json!({})),
        ],
        "final",
    );
    let dir = crate::agent::workspace();
    let hooks = dir.path().join("skills/s/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    std::fs::write(hooks.join("every.md"), "AFTER EVERY CALL").unwrap();
    std::fs::write(hooks.join("reads.md"), "AFTER A READ").unwrap();
    let entries = json!({"hooks": [
        {"name":"every","file":"every.md","timing":"after_tool_call","role":"system","persistent":false},
        {"name":"reads","file":"reads.md","timing":"after_tool_call","role":"system","persistent":false,"tool_filter":["read_file"]}
    ]});
    std::fs::write(hooks.join("hooks.json"), entries.to_string()).unwrap();
    let skills = dir.path().join("skills");
    let server = TestServer::builder()
        .workspace(dir)
        .upstream(&upstream)
        .skills(skills)
        .start()
        .await;
    chat(&server, json!({"type":"chat","input":"go","skills":["s"]})).await;
    let last = upstream.requests()[2].messages();
    let count = |text: &str| last.iter().filter(|(_, c)| c == text).count();
    assert_eq!(count("AFTER EVERY CALL"), 3);
    assert_eq!(count("AFTER A READ"), 2);
    server.shutdown().await;
}

#[tokio::test]
async fn an_agent_hook_may_name_a_configured_agent() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["[NEED_TOOL] go"]));
    upstream.push(Reply::tool_calls(&[(
        "c1",
        "read_file",
        json!({"path": "README.md"}),
    )]));
    // The reviewer's own run: it answers at once, without tools.
    upstream.push(Reply::text(&[
        r#"{"decision": "block", "reason": "REVIEWER REFUSED"}"#,
    ]));
    upstream.push(Reply::text(&["final"]));
    let dir = crate::agent::workspace();
    let file = dir.path().join("server-hooks.yaml");
    std::fs::write(
        &file,
        "before_tool_dispatch:\n  - type: agent\n    agent: reviewer\n    prompt: Review this tool call.\n",
    )
    .unwrap();
    let server = TestServer::builder()
        .workspace(dir)
        .upstream(&upstream)
        .config(|c| {
            c.hooks_file = Some(file);
            c.hook_agents.insert(
                "reviewer".into(),
                hookwire::config::HookAgent {
                    system_prompt: Some("REVIEWER PROMPT".into()),
                    max_steps: Some(1),
                    ..Default::default()
                },
            );
        })
        .start()
        .await;
    chat(&server, json!({"type":"chat","input":"go"})).await;
    let requests = upstream.requests();
    let review = requests[2].messages();
    assert!(review[0].1.starts_with("REVIEWER PROMPT"), "{review:?}");
    assert!(review
        .iter()
        .any(|(_, content)| content.starts_with("Review this tool call.")
            && content.contains("\"tool_name\":\"read_file\"")));
    assert!(tool_results(&requests[3])[0].contains("REVIEWER REFUSED"));
    server.shutdown().await;
}
