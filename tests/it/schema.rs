//! The published JSON Schemas (docs/schema/): generated from the types the server serializes,
//! checked in, and proven against what a real server sends and accepts and what real hooks read. A stale file fails
//! `checked_in_schemas_are_current`; `HOOKWIRE_WRITE_SCHEMA=1 cargo test --test it schema::`
//! rewrites them.

use std::path::PathBuf;

use serde_json::{json, Value};

use crate::agent::workspace;
use crate::common::*;

fn schema_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/schema")
}

/// Every generated schema with its path under docs/schema/.
fn generated() -> Vec<(&'static str, Value)> {
    let mut schemas = hookwire::server::frame_schemas();
    schemas.extend(hookwire::hooks::hook_schemas());
    schemas
}

/// A schema as it is checked in: pretty JSON and a final newline.
fn rendered(schema: &Value) -> String {
    format!("{}\n", serde_json::to_string_pretty(schema).unwrap())
}

#[test]
fn checked_in_schemas_are_current() {
    let write = std::env::var("HOOKWIRE_WRITE_SCHEMA").is_ok_and(|v| v == "1");
    let mut stale = Vec::new();
    for (path, schema) in generated() {
        let file = schema_dir().join(path);
        let text = rendered(&schema);
        if write {
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, &text).unwrap();
        } else if std::fs::read_to_string(&file).ok().as_deref() != Some(text.as_str()) {
            stale.push(format!("docs/schema/{path}"));
        }
    }
    assert!(
        stale.is_empty(),
        "stale or missing JSON Schemas: {stale:?}; the types changed. Regenerate them with\n  \
         HOOKWIRE_WRITE_SCHEMA=1 cargo test --test it schema::checked_in_schemas_are_current\n\
         and commit docs/schema/"
    );
}

/// The checked-in schema at `path` under docs/schema/, as a validator.
fn validator(path: &str) -> jsonschema::Validator {
    let text = std::fs::read_to_string(schema_dir().join(path)).unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

/// Every instance valid under the schema at `path`, each failure named.
fn assert_valid(path: &str, instances: &[Value]) {
    let validator = validator(path);
    let failures: Vec<String> = instances
        .iter()
        .filter_map(|instance| {
            let errors: Vec<String> = validator
                .iter_errors(instance)
                .map(|e| format!("{} at {}", e, e.instance_path()))
                .collect();
            (!errors.is_empty()).then(|| format!("{instance}\n  {}", errors.join("\n  ")))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "not valid under docs/schema/{path}:\n{}",
        failures.join("\n")
    );
}

/// A skill whose hook writes a persistent system message (the `hook` frame).
fn write_skill(skills: &std::path::Path) {
    let hooks = skills.join("notes/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    std::fs::write(hooks.join("keep.md"), "Keep answers short.").unwrap();
    std::fs::write(
        hooks.join("hooks.json"),
        json!({"hooks":[{"name":"keep","file":"keep.md","timing":"after_user_input","role":"system","persistent":true}]})
            .to_string(),
    )
    .unwrap();
}

/// One server, one connection, chats that between them send every kind of server frame a chat
/// against a model produces: each frame, and each frame the client sent, is valid under the
/// checked-in schemas.
#[tokio::test]
async fn real_frames_are_valid_under_the_frame_schemas() {
    let upstream = FakeUpstream::start().await;
    let dir = workspace();
    std::fs::write(dir.path().join("a.txt"), "ALPHA").unwrap();
    let skills = dir.path().join("skills");
    write_skill(&skills);
    let server = TestServer::builder()
        .workspace(dir)
        .upstream(&upstream)
        .config(move |c| {
            c.skills_dir = skills;
            c.agent.secret = Some("schema-secret".into());
            c.agent.approval.require_approval = vec!["read_file".into()];
            c.agent.context.keep_recent_groups = 1;
        })
        .start()
        .await;
    let mut client = server.connect().await;
    let (mut sent, mut received) = (Vec::new(), Vec::new());

    // A ping, and a frame the server refuses, as the client schema does.
    let ping = json!({"type":"ping","id":"p1"});
    client.send(ping.clone()).await;
    sent.push(ping);
    received.push(client.frame().await);
    let refused = json!({"type":"chat","id":"b1"});
    assert!(!validator("frames/client.json").is_valid(&refused));
    client.send(refused).await;
    let error = client.frame().await;
    assert_eq!(error["code"], "bad_frame", "{error}");
    received.push(error);

    // A traced chat: plan, a listed directory, a call that waits for approval.
    upstream.push(Reply::text(&["[NEED_TOOL] read it"]));
    upstream.push(Reply::tool_calls(&[
        ("l1", "list_dir", json!({"path":"."})),
        ("r1", "read_file", json!({"path":"a.txt"})),
    ]));
    let ask = json!({"type":"chat","id":"c1","input":"read a.txt","skills":["notes"],"trace":true,
                     "enable_tools":true,"conversation_id":"conv-1"});
    let first = client.chat(ask.clone()).await;
    sent.push(ask);
    let done = frame_of(&first, "done").clone();
    assert_eq!(done["reason"], "approval_required", "{first:#?}");

    // The resumed chat, on the history the client holds; the model registers a session hook.
    upstream.push(Reply::tool_calls(&[(
        "h1",
        "register_hook",
        json!({"event":"stop","prompt":"JUDGE: {{assistant_output}}"}),
    )]));
    upstream.push(Reply::text(&["ALPHA, it says."]));
    upstream.push(Reply::text(&["{}"]));
    let mut history = vec![json!({"role":"user","content":"read a.txt"})];
    history.extend(
        first
            .iter()
            .filter(|f| f["type"] == "hook")
            .map(|f| f["message"].clone()),
    );
    history.extend(done["turn"].as_array().unwrap().iter().skip(1).cloned());
    let resume = json!({"type":"chat","id":"c2","messages":history,"skills":["notes"],"trace":true,
        "resume":{"state":frame_of(&first, "approval")["state"],
                  "decisions":[{"call_id":"r1","decision":"allow"}]}});
    let second = client.chat(resume.clone()).await;
    sent.push(resume);
    let hook = frame_of(&second, "session_hook")["hook"].clone();

    // A compaction of a longer history, with the stored session hook sent back.
    upstream.push(Reply::text(&["The user read a.txt."]));
    let mut history = Vec::new();
    for turn in ["one", "two", "three"] {
        history.push(json!({"role":"user","content":turn}));
        history.push(json!({"role":"assistant","content":format!("answer {turn}")}));
    }
    let compact = json!({"type":"compact","id":"k1","messages":history,"session_hooks":[hook]});
    let third = client.chat(compact.clone()).await;
    sent.push(compact);

    let cancel = json!({"type":"cancel","id":"k1"});
    client.send(cancel.clone()).await;
    sent.push(cancel);

    received.extend(first.iter().chain(&second).chain(&third).cloned());
    let kinds: std::collections::BTreeSet<&str> =
        received.iter().filter_map(|f| f["type"].as_str()).collect();
    for kind in [
        "pong",
        "error",
        "start",
        "hook",
        "plan",
        "hook_trace",
        "tool_call",
        "tool_result",
        "approval",
        "session_hook",
        "text",
        "compact",
        "done",
    ] {
        assert!(kinds.contains(kind), "no {kind} frame among {kinds:?}");
    }
    assert_valid("frames/server.json", &received);
    assert_valid("frames/client.json", &sent);
    server.shutdown().await;
}

/// The schemas say no to what the server never sends or accepts, so the test above can fail.
#[test]
fn the_frame_schemas_refuse_what_is_not_a_frame() {
    let server = validator("frames/server.json");
    for frame in [
        json!({"type":"text","id":"c1"}),
        json!({"type":"text","id":"c1","delta":"x","extra":1}),
        json!({"type":"done","id":"c1","reason":"finished","message":{"role":"assistant","content":""},
               "usage":{"prompt_tokens":0,"completion_tokens":0,"hook_calls":0,"hook_prompt_tokens":0,"hook_completion_tokens":0},"turn":[]}),
        json!({"type":"error","code":"teapot","message":"m"}),
        json!({"type":"shout","id":"c1"}),
    ] {
        assert!(!server.is_valid(&frame), "{frame}");
    }
    let client = validator("frames/client.json");
    for frame in [
        json!({"type":"chat","input":""}),
        json!({"type":"chat","input":"x","messages":[{"role":"function","content":"x"}]}),
        json!({"type":"chat","resume":{"state":"s","decisions":[{"call_id":"a","decision":"maybe"}]}}),
        json!({"type":"hello"}),
    ] {
        assert!(!client.is_valid(&frame), "{frame}");
    }
}

/// Every event a hook of each dialect can see in a chat with a tool round, a failed tool and a
/// compaction: each hook is a real command that writes its stdin to a file.
const CAPTURE_EVENTS: &[(&str, &[&str])] = &[
    (
        "native",
        &[
            "session_start",
            "pre_send_message",
            "post_send_message",
            "pre_llm_request",
            "post_llm_response",
            "pre_tool_execution",
            "post_tool_execution",
            "post_tool_execution_failure",
            "stop",
            "run_completed",
            "before_context_build",
            "after_context_build",
            "pre_auto_compact",
            "post_auto_compact",
            "before_tool_dispatch",
            "after_tool_dispatch",
            "before_model_call",
        ],
    ),
    (
        "claude",
        &[
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PostToolUse",
            "PostToolUseFailure",
            "Stop",
            "PreCompact",
            "PostCompact",
        ],
    ),
    (
        "gemini",
        &[
            "BeforeAgent",
            "BeforeModel",
            "AfterModel",
            "BeforeTool",
            "AfterTool",
            "AfterAgent",
            "PreCompress",
        ],
    ),
];

#[tokio::test]
async fn real_hook_payloads_are_valid_under_the_hook_schemas() {
    let upstream = FakeUpstream::start().await;
    let mut yaml = String::new();
    for (dialect, events) in CAPTURE_EVENTS {
        for event in *events {
            yaml.push_str(&format!(
                "{event}:\n  - command: 'cat > payloads/{dialect}.{event}.$$.json'\n"
            ));
        }
    }
    let server = TestServer::builder()
        .upstream(&upstream)
        .hooks_file("hooks.yaml", &yaml)
        .prepare(|dir| std::fs::create_dir_all(dir.join("payloads")).unwrap())
        .file("a.txt", "ALPHA")
        .config(|c| c.agent.context.keep_recent_groups = 1)
        .start()
        .await;
    upstream.push(Reply::text(&["[NEED_TOOL] read"]));
    upstream.push(Reply::tool_calls(&[
        ("l1", "list_dir", json!({"path":"."})),
        ("r1", "read_file", json!({"path":"missing.txt"})),
    ]));
    upstream.push(Reply::text(&["Only a.txt."]));
    let mut client = server.connect().await;
    let frames = client
        .chat(json!({"type":"chat","id":"c1","input":"what is there?"}))
        .await;
    assert_eq!(frames.last().unwrap()["type"], "done", "{frames:#?}");
    upstream.push(Reply::text(&["The user asked twice."]));
    let mut history = Vec::new();
    for turn in ["one", "two", "three"] {
        history.push(json!({"role":"user","content":turn}));
        history.push(json!({"role":"assistant","content":format!("answer {turn}")}));
    }
    let frames = client
        .chat(json!({"type":"compact","id":"k1","messages":history}))
        .await;
    assert_eq!(frames.last().unwrap()["type"], "done", "{frames:#?}");

    let dir = server.workspace.path().join("payloads");
    let mut captured: Vec<(String, String, Value)> = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let mut parts = name.split('.');
        let (dialect, event) = (parts.next().unwrap(), parts.next().unwrap());
        let text = std::fs::read_to_string(&path).unwrap();
        let payload: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{name} is not JSON ({e}): {text:?}"));
        captured.push((dialect.to_string(), event.to_string(), payload));
    }
    for (dialect, events) in CAPTURE_EVENTS {
        for event in *events {
            assert!(
                captured.iter().any(|(d, e, _)| d == dialect && e == event),
                "no {dialect} {event} payload captured"
            );
        }
        let payloads: Vec<Value> = captured
            .iter()
            .filter(|(d, _, _)| d == dialect)
            .map(|(_, _, payload)| payload.clone())
            .collect();
        assert_valid(&format!("hooks/{dialect}/input.json"), &payloads);
    }
    server.shutdown().await;
}

/// Answers of each dialect as hooks write them (the docs' and the tests' examples) are valid
/// under the output schemas, and a wrongly typed one is not.
#[test]
fn hook_answers_are_valid_under_the_output_schemas() {
    assert_valid(
        "hooks/native/output.json",
        &[
            json!({}),
            json!({"user_input":"x","inject_messages":[{"role":"user","content":"now"}],"additional_context":"ctx",
                   "retry_feedback":"again","system_message":"hi","action":"skip","reason":"nope"}),
            json!({"continue": false, "stopReason": "budget", "systemMessage": "stopped",
                   "hookSpecificOutput": {"hookEventName":"before_model_call","system_prompt":"new"}}),
            json!({"hookSpecificOutput":{"tool_input":{"path":"b"}}}),
            json!({"tool_arguments":"{\"path\":\"b\"}","decision":"block"}),
        ],
    );
    assert_valid(
        "hooks/claude/output.json",
        &[
            json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask",
                   "permissionDecisionReason": "check first"}, "systemMessage": "asked"}),
            json!({"decision": "block", "reason": "old"}),
            json!({"continue": false, "stopReason": "halt"}),
            json!({"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": {"file_path": "/ws/b"},
                   "additionalContext": "note"}}),
        ],
    );
    assert_valid(
        "hooks/gemini/output.json",
        &[
            json!({"decision": "deny", "reason": "no"}),
            json!({"hookSpecificOutput": {"tool_input": {"file_path": "/ws/b"}}}),
            json!({"hookSpecificOutput": {"llm_response": {"candidates": [{"content": {"role": "model", "parts": ["new"]}}]}}}),
        ],
    );
    for (path, answer) in [
        ("hooks/native/output.json", json!({"action":"explode"})),
        (
            "hooks/native/output.json",
            json!({"inject_messages":[{"role":"tool","content":"x"}]}),
        ),
        (
            "hooks/claude/output.json",
            json!({"hookSpecificOutput":{"permissionDecision":"maybe"}}),
        ),
        ("hooks/gemini/output.json", json!({"systemMessage": 3})),
    ] {
        assert!(!validator(path).is_valid(&answer), "{path}: {answer}");
    }
}
