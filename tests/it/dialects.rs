//! Hook dialects (docs/protocol.md §9): hooks written for Claude Code, Gemini CLI and the seed
//! documents, in the style of each one's documented examples, run unchanged. Each test asserts
//! what reached (or did not reach) the upstream request. Scripts read their input with `jq`, as
//! the Claude Code and Gemini CLI examples do.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use crate::common::*;

/// What the workspace's `.env` holds: it must never reach the model.
const SECRET: &str = "hunter2-secret";

/// A server on `upstream` whose workspace holds README.md, b.txt, a `.env` and `files`
/// (`*.sh` executable); the workspace is the test's own, so its hook files are trusted.
fn start<'a>(upstream: &'a FakeUpstream, files: &[(&str, &str)]) -> TestServerBuilder<'a> {
    let files: Vec<(String, String)> = files
        .iter()
        .map(|(name, body)| (name.to_string(), body.to_string()))
        .collect();
    TestServer::builder()
        .workspace(crate::agent::workspace())
        .upstream(upstream)
        .prepare(move |root| {
            let files: Vec<(&str, &str)> = files
                .iter()
                .map(|(n, b)| (n.as_str(), b.as_str()))
                .collect();
            write_files(root, &files);
        })
        .file(".env", format!("API_KEY={SECRET}\n"))
        .trust_workspace_hooks()
}

fn write_files(root: &Path, files: &[(&str, &str)]) {
    for (name, body) in files {
        let path = root.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, body).unwrap();
        if name.ends_with(".sh") {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
}

async fn chat(server: &TestServer, frame: Value) -> Vec<Value> {
    let frames = server.connect().await.chat(frame).await;
    assert_eq!(frames.last().unwrap()["type"], "done", "{frames:#?}");
    frames
}

/// Every request the upstream got, as text.
fn all_sent(upstream: &FakeUpstream) -> String {
    upstream
        .requests()
        .iter()
        .map(|r| r.body.to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The system prompt of a request.
fn system(request: &Recorded) -> String {
    request.messages()[0].1.clone()
}

// ─── Claude Code ───

/// The guard from Claude Code's hooks guide, as a project would ship it: `Read` + `file_path`,
/// denying `.env` by `permissionDecision`.
const PROTECT_ENV_DECISION: &str = r#"#!/bin/bash
input=$(cat)
tool_name=$(echo "$input" | jq -r '.tool_name')
file_path=$(echo "$input" | jq -r '.tool_input.file_path // empty')
if [ "$tool_name" = "Read" ] && [[ "$file_path" == *.env ]]; then
  jq -n '{
    hookSpecificOutput: {
      hookEventName: "PreToolUse",
      permissionDecision: "deny",
      permissionDecisionReason: "Reading .env files is not allowed"
    }
  }'
fi
exit 0
"#;

fn claude_settings(event: &str, matcher: &str, command: &str) -> String {
    json!({"hooks": {event: [{"matcher": matcher, "hooks": [{"type": "command", "command": command}]}]}})
        .to_string()
}

#[tokio::test]
async fn claude_pre_tool_use_guard_denies_env_by_permission_decision() {
    let upstream = FakeUpstream::start().await;
    tool_round(
        &upstream,
        &[
            ("c1", "read_file", json!({"path": ".env"})),
            ("c2", "read_file", json!({"path": "README.md"})),
        ],
        "done",
    );
    let settings = claude_settings(
        "PreToolUse",
        "Read",
        "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/protect-env.sh",
    );
    let files = [
        (".claude/settings.json", settings.as_str()),
        (".claude/hooks/protect-env.sh", PROTECT_ENV_DECISION),
    ];
    let server = start(&upstream, &files).start().await;
    let frames = chat(&server, json!({"type":"chat","input":"read .env"})).await;
    let results = tool_results(&upstream.requests()[2]);
    assert!(
        results[0].contains("Reading .env files is not allowed"),
        "{results:?}"
    );
    assert!(
        results[1].contains("hello from the readme"),
        "the guard lets other files through"
    );
    assert!(
        !all_sent(&upstream).contains(SECRET),
        "the secret reached the model"
    );
    let denied = frames
        .iter()
        .find(|f| f["type"] == "tool_result" && f["call_id"] == "c1")
        .unwrap();
    assert_eq!(denied["is_error"], true);
    server.shutdown().await;
}

#[tokio::test]
async fn claude_pre_tool_use_guard_denies_by_exit_2() {
    let upstream = FakeUpstream::start().await;
    tool_round(
        &upstream,
        &[("c1", "read_file", json!({"path": ".env"}))],
        "done",
    );
    let script = r#"#!/bin/bash
file_path=$(jq -r '.tool_input.file_path // empty')
if [[ "$file_path" == *".env"* ]]; then
  echo "Blocked: $file_path holds secrets" >&2
  exit 2
fi
exit 0
"#;
    // A server-level Claude Code settings.json: found by its shape.
    let dir = tempfile::tempdir().unwrap();
    let server_file = dir.path().join("settings.json");
    std::fs::write(
        &server_file,
        claude_settings(
            "PreToolUse",
            "Read|Edit",
            "$CLAUDE_PROJECT_DIR/.claude/hooks/block-env.sh",
        ),
    )
    .unwrap();
    let files = [(".claude/hooks/block-env.sh", script)];
    let server = start(&upstream, &files)
        .config(|c| c.hooks_file = Some(server_file))
        .start()
        .await;
    chat(&server, json!({"type":"chat","input":"read .env"})).await;
    let results = tool_results(&upstream.requests()[2]);
    let workspace = server.workspace.path().canonicalize().unwrap();
    assert!(
        results[0].contains(&format!(
            "Blocked: {}/.env holds secrets",
            workspace.display()
        )),
        "the reason, with Claude Code's absolute file_path: {results:?}"
    );
    assert!(!all_sent(&upstream).contains(SECRET));
    server.shutdown().await;
}

#[tokio::test]
async fn claude_hook_acting_only_on_its_own_event_name_runs() {
    let upstream = FakeUpstream::start().await;
    tool_round(
        &upstream,
        &[(
            "c1",
            "search_text",
            json!({"pattern": "API_KEY", "path": ".env"}),
        )],
        "done",
    );
    // A script that refuses to act on an event it does not know (it would only warn).
    let script = r#"#!/bin/bash
input=$(cat)
event=$(echo "$input" | jq -r '.hook_event_name')
if [ "$event" != "PreToolUse" ]; then
  echo "warning: unexpected event $event" >&2
  exit 0
fi
path=$(echo "$input" | jq -r '.tool_input.file_path // .tool_input.path // empty')
case "$path" in
  *.env) echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no secrets via '"$(echo "$input" | jq -r .tool_name)"'"}}' ;;
esac
"#;
    let settings = claude_settings("PreToolUse", "Read|Grep", ".claude/hooks/guard.sh");
    let files = [
        (".claude/settings.local.json", settings.as_str()),
        (".claude/hooks/guard.sh", script),
    ];
    let server = start(&upstream, &files).start().await;
    chat(&server, json!({"type":"chat","input":"grep .env"})).await;
    let results = tool_results(&upstream.requests()[2]);
    assert!(results[0].contains("no secrets via Grep"), "{results:?}");
    assert!(!all_sent(&upstream).contains(SECRET));
    server.shutdown().await;
}

#[tokio::test]
async fn claude_updated_input_is_mapped_back_to_hookwire_arguments() {
    let upstream = FakeUpstream::start().await;
    tool_round(
        &upstream,
        &[("c1", "read_file", json!({"path": ".env"}))],
        "done",
    );
    // Redirects the read to a safe file, by Claude Code's absolute `file_path`.
    let script = r#"#!/bin/bash
input=$(cat)
cwd=$(echo "$input" | jq -r '.cwd')
jq -n --arg f "$cwd/b.txt" '{hookSpecificOutput: {hookEventName: "PreToolUse",
  permissionDecision: "allow", updatedInput: {file_path: $f}}}'
"#;
    let settings = claude_settings("PreToolUse", "Read", ".claude/hooks/redirect.sh");
    let files = [
        (".claude/settings.json", settings.as_str()),
        (".claude/hooks/redirect.sh", script),
    ];
    let server = start(&upstream, &files).start().await;
    let frames = chat(&server, json!({"type":"chat","input":"read"})).await;
    let call = frames.iter().find(|f| f["type"] == "tool_call").unwrap();
    assert_eq!(call["arguments"], json!({"path": "b.txt"}));
    assert!(tool_results(&upstream.requests()[2])[0].contains("bee"));
    assert!(!all_sent(&upstream).contains(SECRET));
    server.shutdown().await;
}

#[tokio::test]
async fn claude_user_prompt_submit_adds_context_by_plain_stdout() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["hi"]));
    let script = "#!/bin/bash\ncat >/dev/null\necho \"Sprint goal: ship CONTEXT-FROM-STDOUT\"\n";
    let settings = claude_settings("UserPromptSubmit", "", ".claude/hooks/context.sh");
    let files = [
        (".claude/settings.json", settings.as_str()),
        (".claude/hooks/context.sh", script),
    ];
    let server = start(&upstream, &files).start().await;
    let frames = chat(
        &server,
        json!({"type":"chat","input":"hello","enable_tools":false}),
    )
    .await;
    assert!(system(&upstream.requests()[0]).contains("Sprint goal: ship CONTEXT-FROM-STDOUT"));
    assert_eq!(frames.last().unwrap()["reason"], "completed");
    server.shutdown().await;
}

#[tokio::test]
async fn claude_user_prompt_submit_block_refuses_the_prompt() {
    let upstream = FakeUpstream::start().await;
    let script = r#"#!/bin/bash
prompt=$(jq -r '.prompt')
if echo "$prompt" | grep -qi "password"; then
  echo '{"decision": "block", "reason": "Prompts may not ask for passwords"}'
fi
"#;
    let settings = claude_settings("UserPromptSubmit", "", ".claude/hooks/prompt.sh");
    let files = [
        (".claude/settings.json", settings.as_str()),
        (".claude/hooks/prompt.sh", script),
    ];
    let server = start(&upstream, &files).start().await;
    let frames = server
        .connect()
        .await
        .chat(json!({"type":"chat","input":"what is the admin password?"}))
        .await;
    let last = frames.last().unwrap();
    assert_eq!(last["code"], "hook_blocked", "{last}");
    assert_eq!(last["message"], "Prompts may not ask for passwords");
    assert!(
        upstream.requests().is_empty(),
        "the prompt never reached the model"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn claude_session_start_additional_context_reaches_every_chat_of_the_session() {
    let upstream = FakeUpstream::start().await;
    let script = r#"#!/bin/bash
source=$(jq -r '.source')
jq -n --arg s "$source" '{hookSpecificOutput: {hookEventName: "SessionStart",
  additionalContext: ("Conventions (" + $s + "): SESSION-CONTEXT-7")}}'
"#;
    let settings = claude_settings("SessionStart", "startup", ".claude/hooks/session.sh");
    let files = [
        (".claude/settings.json", settings.as_str()),
        (".claude/hooks/session.sh", script),
    ];
    let server = start(&upstream, &files).start().await;
    let mut client = server.connect().await;
    for input in ["one", "two"] {
        let frames = client
            .chat(json!({"type":"chat","input":input,"enable_tools":false}))
            .await;
        assert_eq!(frames.last().unwrap()["type"], "done");
    }
    for request in upstream.requests() {
        assert!(
            system(&request).contains("Conventions (startup): SESSION-CONTEXT-7"),
            "{:?}",
            request.messages()
        );
    }
    server.shutdown().await;
}

#[tokio::test]
async fn claude_post_tool_use_block_feeds_the_model_and_the_loop_goes_on() {
    let upstream = FakeUpstream::start().await;
    tool_round(
        &upstream,
        &[("c1", "read_file", json!({"path": "README.md"}))],
        "final answer",
    );
    let script = r#"#!/bin/bash
input=$(cat)
content=$(echo "$input" | jq -r '.tool_response.file.content')
if echo "$content" | grep -q "readme"; then
  echo '{"decision": "block", "reason": "Cite the README when you use it (POST-FEEDBACK)"}'
fi
"#;
    let settings = claude_settings("PostToolUse", "Read", ".claude/hooks/post.sh");
    let files = [
        (".claude/settings.json", settings.as_str()),
        (".claude/hooks/post.sh", script),
    ];
    let server = start(&upstream, &files).start().await;
    let frames = chat(&server, json!({"type":"chat","input":"read it"})).await;
    let result = &tool_results(&upstream.requests()[2])[0];
    assert!(result.contains("hello from the readme"), "{result}");
    assert!(result.contains("POST-FEEDBACK"), "{result}");
    let done = frames.last().unwrap();
    assert_eq!(done["reason"], "completed");
    assert_eq!(done["message"]["content"], "final answer");
    server.shutdown().await;
}

#[tokio::test]
async fn claude_stop_hook_reads_the_transcript_and_keeps_the_model_going_once() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["Draft. TODO: the tests"]));
    upstream.push(Reply::text(&["All done, tests included."]));
    // Reads the last assistant message from the transcript; `stop_hook_active` stops the loop.
    let script = r#"#!/bin/bash
input=$(cat)
transcript=$(echo "$input" | jq -r '.transcript_path')
echo "$transcript" >> .claude/transcripts.txt
cp "$transcript" ".claude/copy-$(wc -l < .claude/transcripts.txt | tr -d ' ').jsonl"
if [ "$(echo "$input" | jq -r '.stop_hook_active')" = "true" ]; then
  exit 0
fi
last=$(tail -n 1 "$transcript" | jq -r '.message.content[] | select(.type == "text") | .text')
if echo "$last" | grep -q "TODO"; then
  jq -n '{decision: "block", reason: "You left a TODO. Finish it before stopping."}'
fi
"#;
    let settings = claude_settings("Stop", "", ".claude/hooks/stop.sh");
    let files = [
        (".claude/settings.json", settings.as_str()),
        (".claude/hooks/stop.sh", script),
    ];
    let server = start(&upstream, &files).start().await;
    let history = json!([{"role":"user","content":"earlier question"},{"role":"assistant","content":"earlier answer"}]);
    let frames = chat(
        &server,
        json!({"type":"chat","input":"write it","messages":history,"enable_tools":false}),
    )
    .await;
    let requests = upstream.requests();
    assert_eq!(requests.len(), 2, "the model went on once, then stopped");
    assert!(requests[1]
        .messages()
        .iter()
        .any(|(role, content)| role == "user"
            && content == "You left a TODO. Finish it before stopping."));
    assert!(frames.last().unwrap()["message"]["content"]
        .as_str()
        .unwrap()
        .contains("All done"));
    // The transcript: Claude Code's JSONL, outside the workspace, gone after the chat.
    let root = server.workspace.path();
    let paths = std::fs::read_to_string(root.join(".claude/transcripts.txt")).unwrap();
    let paths: Vec<&str> = paths.lines().collect();
    assert_eq!(paths.len(), 2);
    assert_eq!(paths[0], paths[1], "one transcript per chat");
    let workspace = root.canonicalize().unwrap();
    assert!(!Path::new(paths[0]).starts_with(&workspace), "{}", paths[0]);
    let first: Vec<Value> = std::fs::read_to_string(root.join(".claude/copy-1.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let texts: Vec<(&str, String)> = first
        .iter()
        .map(|line| {
            let content = &line["message"]["content"];
            let text = content
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| content[0]["text"].as_str().unwrap_or("").to_string());
            (line["type"].as_str().unwrap(), text)
        })
        .collect();
    assert_eq!(
        texts,
        [
            ("user", "earlier question".to_string()),
            ("assistant", "earlier answer".to_string()),
            ("user", "write it".to_string()),
            ("assistant", "Draft. TODO: the tests".to_string()),
        ]
    );
    let gone = eventually(Duration::from_secs(5), || async {
        !Path::new(paths[0]).exists()
    })
    .await;
    assert!(gone, "the transcript outlived its chat");
    server.shutdown().await;
}

#[tokio::test]
async fn claude_input_has_its_documented_fields() {
    let upstream = FakeUpstream::start().await;
    tool_round(
        &upstream,
        &[("c1", "read_file", json!({"path": "README.md", "offset": 2}))],
        "x",
    );
    let dump = |name: &str| format!("cat > .claude/{name}.json");
    let settings = json!({"hooks": {
        "PreToolUse": [{"matcher": "Read", "hooks": [{"type": "command", "command": dump("pre")}]}],
        "PostToolUse": [{"matcher": "read_file", "hooks": [{"type": "command", "command": dump("post")}]}],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": dump("prompt")}]}]
    }})
    .to_string();
    let server = start(&upstream, &[(".claude/settings.json", &settings)])
        .start()
        .await;
    chat(&server, json!({"type":"chat","input":"read"})).await;
    let root = server.workspace.path();
    let read = |name: &str| -> Value {
        serde_json::from_str(
            &std::fs::read_to_string(root.join(format!(".claude/{name}.json"))).unwrap(),
        )
        .unwrap()
    };
    let workspace = root.canonicalize().unwrap().display().to_string();
    let pre = read("pre");
    assert_eq!(pre["hook_event_name"], "PreToolUse");
    assert_eq!(pre["tool_name"], "Read");
    assert_eq!(
        pre["tool_input"],
        json!({"file_path": format!("{workspace}/README.md"), "offset": 2})
    );
    assert_eq!(pre["tool_use_id"], "c1");
    assert_eq!(pre["cwd"], workspace);
    assert_eq!(pre["permission_mode"], "default");
    assert!(pre["transcript_path"].as_str().unwrap().ends_with(".jsonl"));
    assert!(
        pre.get("tool_arguments").is_none(),
        "no hookwire fields in Claude input"
    );
    let post = read("post");
    assert_eq!(
        post["tool_response"]["file"]["filePath"],
        format!("{workspace}/README.md")
    );
    assert!(post["tool_response"]["file"]["content"]
        .as_str()
        .unwrap()
        .contains("hello from the readme"));
    assert_eq!(read("prompt")["prompt"], "read");
    server.shutdown().await;
}

#[tokio::test]
async fn an_untrusted_claude_settings_file_does_not_run_and_one_without_hooks_is_no_hook_file() {
    let upstream = FakeUpstream::start().await;
    tool_round(
        &upstream,
        &[("c1", "read_file", json!({"path": "README.md"}))],
        "x",
    );
    let settings = claude_settings("PreToolUse", "Read", "touch pwned; exit 2");
    let dir = crate::agent::workspace();
    write_files(
        dir.path(),
        &[
            (".claude/settings.json", settings.as_str()),
            (".gemini/settings.json", r#"{"theme": "dark"}"#),
        ],
    );
    let state = tempfile::tempdir().unwrap();
    let state_dir = state.path().to_path_buf();
    let server = TestServer::builder()
        .workspace(dir)
        .upstream(&upstream)
        .config(move |c| c.state_dir = Some(state_dir))
        .start()
        .await;
    chat(&server, json!({"type":"chat","input":"read"})).await;
    assert!(!server.workspace.path().join("pwned").exists());
    assert!(tool_results(&upstream.requests()[2])[0].contains("hello from the readme"));
    let (_, body) = http_get(server.addr, "/api/info").await;
    let info: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        info["untrusted_hook_files"],
        json!([".claude/settings.json"])
    );
    server.shutdown().await;
}

// ─── Gemini CLI ───

#[tokio::test]
async fn gemini_before_tool_denies_and_after_tool_logs() {
    let upstream = FakeUpstream::start().await;
    tool_round(
        &upstream,
        &[
            ("c1", "read_file", json!({"path": ".env"})),
            ("c2", "read_file", json!({"path": "README.md"})),
        ],
        "done",
    );
    // From Gemini CLI's hooks guide: a security check on BeforeTool, a logger on AfterTool.
    let guard = r#"#!/usr/bin/env bash
input=$(cat)
file_path=$(echo "$input" | jq -r '.tool_input.file_path // empty')
if [[ "$file_path" == *.env ]]; then
  echo '{"decision": "deny", "reason": "Security Policy: .env files are off limits", "systemMessage": "Blocked a read of .env"}'
  exit 0
fi
echo '{"decision": "allow"}'
"#;
    let logger = r#"#!/usr/bin/env bash
input=$(cat)
echo "$input" | jq -c '{event: .hook_event_name, tool: .tool_name, file: .tool_input.file_path, chars: (.tool_response.llmContent | length), error: .tool_response.error, at: .timestamp, session: .session_id, session_env: env.GEMINI_SESSION_ID, cwd_env: env.GEMINI_CWD}' >> .gemini/tool-log.jsonl
echo '{"suppressOutput": true}'
"#;
    let settings = json!({"hooks": {
        "BeforeTool": [{"matcher": "read_file|write_file", "hooks": [
            {"name": "secret-guard", "type": "command", "command": "$GEMINI_PROJECT_DIR/.gemini/hooks/guard.sh", "timeout": 5000}]}],
        "AfterTool": [{"matcher": "read_.*", "hooks": [
            {"name": "logger", "type": "command", "command": ".gemini/hooks/log.sh"}]}]
    }})
    .to_string();
    let files = [
        (".gemini/settings.json", settings.as_str()),
        (".gemini/hooks/guard.sh", guard),
        (".gemini/hooks/log.sh", logger),
    ];
    let server = start(&upstream, &files).start().await;
    let frames = chat(&server, json!({"type":"chat","input":"read"})).await;
    let results = tool_results(&upstream.requests()[2]);
    assert!(
        results[0].contains("Security Policy: .env files are off limits"),
        "{results:?}"
    );
    assert!(results[1].contains("hello from the readme"));
    assert!(!all_sent(&upstream).contains(SECRET));
    assert!(frames
        .iter()
        .any(|f| f["type"] == "notice" && f["message"] == "Blocked a read of .env"));
    let log =
        std::fs::read_to_string(server.workspace.path().join(".gemini/tool-log.jsonl")).unwrap();
    let lines: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // AfterTool stands for both outcomes: the refused call is logged with its error.
    assert_eq!(lines.len(), 2, "{log}");
    let workspace = server.workspace.path().canonicalize().unwrap();
    assert!(lines[0]["error"]
        .as_str()
        .unwrap()
        .contains("Security Policy"));
    assert_eq!(lines[1]["event"], "AfterTool");
    assert_eq!(lines[1]["tool"], "read_file");
    assert_eq!(
        lines[1]["file"],
        format!("{}/README.md", workspace.display())
    );
    assert_eq!(lines[1]["error"], Value::Null);
    assert!(lines[1]["chars"].as_u64().unwrap() > 0);
    assert!(lines[1]["at"].as_str().unwrap().ends_with('Z'));
    // As Gemini CLI does, the session's id and the folder are in the environment too.
    assert!(lines[1]["session"].as_str().is_some_and(|s| !s.is_empty()));
    assert_eq!(lines[1]["session_env"], lines[1]["session"]);
    assert_eq!(
        std::path::Path::new(lines[1]["cwd_env"].as_str().unwrap())
            .canonicalize()
            .unwrap(),
        workspace
    );
    server.shutdown().await;
}

#[tokio::test]
async fn gemini_before_agent_context_and_after_tool_context_reach_the_model() {
    let upstream = FakeUpstream::start().await;
    tool_round(&upstream, &[("c1", "list_dir", json!({}))], "done");
    let settings = json!({"hooks": {
        "BeforeAgent": [{"hooks": [{"type": "command",
            "command": "echo '{\"hookSpecificOutput\": {\"hookEventName\": \"BeforeAgent\", \"additionalContext\": \"Use British spelling.\"}}'"}]}],
        "AfterTool": [{"matcher": "list_directory", "hooks": [{"type": "command",
            "command": "echo '{\"hookSpecificOutput\": {\"additionalContext\": \"3 files <hidden>\"}}'"}]}]
    }})
    .to_string();
    let server = start(&upstream, &[(".gemini/settings.json", &settings)])
        .start()
        .await;
    chat(&server, json!({"type":"chat","input":"list"})).await;
    let first = upstream.requests()[0].messages();
    assert!(first
        .iter()
        .any(|(role, content)| role == "user" && content == "list\n\nUse British spelling."));
    let result = &tool_results(&upstream.requests()[2])[0];
    assert!(
        result.ends_with("<hook_context>3 files &lt;hidden&gt;</hook_context>"),
        "{result}"
    );
    server.shutdown().await;
}

// ─── the jcli format (jcli) and the OpenHarness format (OpenHarness) ───

#[tokio::test]
async fn seed_001_script_reads_jcli_hook_event_and_rewrites_user_input() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["ok"]));
    // As the jcli format's example `inject_time.py` would, in sh.
    let script = r#"#!/bin/sh
[ "$JCLI_HOOK_EVENT" = "pre_send_message" ] || { echo "unexpected event: $JCLI_HOOK_EVENT" >&2; exit 1; }
[ "$JCLI_CWD" = "$(pwd)" ] || exit 1
jq '{user_input: ("[" + env.JCLI_HOOK_EVENT + "] " + .user_input)}'
"#;
    let yaml = "pre_send_message:\n  - command: \"sh .jcli/hooks/inject.sh\"\n    timeout: 5\n    on_error: skip\n";
    let files = [
        (".jcli/hooks.yaml", yaml),
        (".jcli/hooks/inject.sh", script),
    ];
    let server = start(&upstream, &files).start().await;
    chat(
        &server,
        json!({"type":"chat","input":"hello","enable_tools":false}),
    )
    .await;
    let messages = upstream.requests()[0].messages();
    assert_eq!(
        messages.last().unwrap(),
        &("user".to_string(), "[pre_send_message] hello".to_string())
    );
    server.shutdown().await;
}

#[tokio::test]
async fn seed_004_exit_2_guard_in_openharness_hooks() {
    let upstream = FakeUpstream::start().await;
    tool_round(
        &upstream,
        &[("c1", "read_file", json!({"path": ".env"}))],
        "done",
    );
    let script = r#"#!/bin/sh
input=$(cat)
case "$(echo "$input" | jq -r '.tool_input.path')" in
  *.env) echo "policy: $(echo "$input" | jq -r .hook_event_name) refuses secrets" >&2; exit 2 ;;
esac
"#;
    let yaml = "before_tool_dispatch:\n  - command: .openharness/hooks/guard.sh\n    matcher: '^read_file$'\n";
    let files = [
        (".openharness/hooks/guard.yaml", yaml),
        (".openharness/hooks/guard.sh", script),
    ];
    let server = start(&upstream, &files).start().await;
    chat(&server, json!({"type":"chat","input":"read"})).await;
    let results = tool_results(&upstream.requests()[2]);
    assert!(
        results[0].contains("policy: before_tool_dispatch refuses secrets"),
        "{results:?}"
    );
    assert!(!all_sent(&upstream).contains(SECRET));
    server.shutdown().await;
}

// ─── the examples, installed where their comments say ───

/// Installs `examples/hooks/<from>` at `<to>` in a fresh workspace, then runs a chat that reads
/// `.env` and README.md: the secret never reaches the model, the README does.
async fn run_example(installs: &[(&str, &str)]) -> (TestServer, FakeUpstream, Vec<Value>) {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/hooks");
    let files: Vec<(String, String)> = installs
        .iter()
        .map(|(from, to)| {
            let body = std::fs::read_to_string(examples.join(from)).unwrap();
            (to.to_string(), body)
        })
        .collect();
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let upstream = FakeUpstream::start().await;
    tool_round(
        &upstream,
        &[
            ("c1", "read_file", json!({"path": ".env"})),
            ("c2", "read_file", json!({"path": "README.md"})),
        ],
        "done",
    );
    let server = start(&upstream, &files).start().await;
    let frames = chat(&server, json!({"type":"chat","input":"hello"})).await;
    let results = tool_results(&upstream.requests()[2]);
    assert!(results[1].contains("hello from the readme"), "{results:?}");
    assert!(
        !all_sent(&upstream).contains(SECRET),
        "the secret reached the model"
    );
    (server, upstream, frames)
}

#[tokio::test]
async fn the_claude_example_guards_env_and_adds_context() {
    let (server, upstream, _) = run_example(&[
        ("claude-settings.json", ".claude/settings.json"),
        ("claude-protect-env.sh", ".claude/hooks/protect-env.sh"),
    ])
    .await;
    let requests = upstream.requests();
    assert!(tool_results(&requests[2])[0].contains("Read on .env files is not allowed"));
    assert!(system(&requests[0]).contains("Today is"));
    server.shutdown().await;
}

#[tokio::test]
async fn the_gemini_example_guards_env_and_logs_tools() {
    let (server, upstream, frames) = run_example(&[
        ("gemini-settings.json", ".gemini/settings.json"),
        ("gemini-secret-guard.sh", ".gemini/hooks/secret-guard.sh"),
        ("gemini-tool-log.sh", ".gemini/hooks/tool-log.sh"),
    ])
    .await;
    assert!(tool_results(&upstream.requests()[2])[0].contains("Security policy"));
    assert!(frames
        .iter()
        .any(|f| f["type"] == "notice" && f["message"] == "Blocked a read of a .env file"));
    let log =
        std::fs::read_to_string(server.workspace.path().join(".gemini/tool-log.jsonl")).unwrap();
    assert_eq!(log.lines().count(), 2, "{log}");
    server.shutdown().await;
}

#[tokio::test]
async fn the_jcli_example_tags_the_input_and_logs_reads() {
    let (server, upstream, _) = run_example(&[
        ("jcli-hooks.yaml", ".jcli/hooks.yaml"),
        ("jcli-inject-time.py", ".jcli/hooks/inject_time.py"),
        // The secret is guarded by the hookwire example, as a jcli user would add it.
        ("guard-env.sh", ".hookwire/guard-env.sh"),
        ("hooks.yaml", ".hookwire/hooks.yaml"),
        ("current-time.sh", ".hookwire/current-time.sh"),
        ("audit-log.sh", ".hookwire/audit-log.sh"),
    ])
    .await;
    let first = upstream.requests()[0].messages();
    assert_eq!(
        first[1],
        (
            "user".to_string(),
            "The user prefers short answers.".to_string()
        )
    );
    let (_, input) = first.iter().rev().find(|(role, _)| role == "user").unwrap();
    assert!(
        input.starts_with("[20") && input.ends_with("] hello"),
        "{input}"
    );
    let reads = std::fs::read_to_string(server.workspace.path().join(".jcli/reads.log")).unwrap();
    assert!(
        reads.contains("read_file {\"path\":\"README.md\"}"),
        "{reads}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn the_openharness_example_guards_env() {
    let (server, upstream, _) = run_example(&[
        ("openharness-guard.yaml", ".openharness/hooks/guard.yaml"),
        ("openharness-guard.sh", ".openharness/hooks/guard.sh"),
    ])
    .await;
    assert!(tool_results(&upstream.requests()[2])[0].contains("policy: .env files hold secrets"));
    server.shutdown().await;
}

#[tokio::test]
async fn a_claude_settings_file_added_later_is_loaded_without_a_restart() {
    let upstream = FakeUpstream::start().await;
    // Another tool's settings, without hooks: not a hook file.
    let files = [(".claude/settings.json", r#"{"permissions": {"allow": []}}"#)];
    let server = start(&upstream, &files).start().await;
    assert_eq!(server.sources.hook_count(), 0);
    let before = server.sources.hook_files_generation();
    let settings = claude_settings("UserPromptSubmit", "", "echo LOADED-LATER");
    std::fs::write(
        server.workspace.path().join(".claude/settings.json"),
        settings,
    )
    .unwrap();
    let reloaded = eventually(Duration::from_secs(5), || async {
        server.sources.hook_files_generation() > before && server.sources.hook_count() == 1
    })
    .await;
    assert!(reloaded, "the new hooks were never loaded");
    chat(
        &server,
        json!({"type":"chat","input":"hi","enable_tools":false}),
    )
    .await;
    assert!(system(&upstream.requests()[0]).contains("LOADED-LATER"));
    server.shutdown().await;
}

#[tokio::test]
async fn claude_allow_with_a_reason_shows_the_reason_to_the_person() {
    for answer in [
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "permissionDecisionReason": "ALLOWED-BECAUSE-SAFE"}}),
        json!({"decision": "approve", "reason": "ALLOWED-BECAUSE-SAFE"}),
    ] {
        let upstream = FakeUpstream::start().await;
        tool_round(
            &upstream,
            &[("c1", "read_file", json!({"path": "README.md"}))],
            "done",
        );
        let command = format!("echo '{answer}'");
        let settings = claude_settings("PreToolUse", "Read", &command);
        let files = [(".claude/settings.json", settings.as_str())];
        let server = start(&upstream, &files).start().await;
        let frames = chat(&server, json!({"type":"chat","input":"read"})).await;
        let notice = frames
            .iter()
            .find(|f| f["type"] == "notice" && f["message"] == "ALLOWED-BECAUSE-SAFE");
        assert!(notice.is_some(), "{answer}: {frames:#?}");
        let results = tool_results(&upstream.requests()[2]);
        assert!(
            results[0].contains("hello from the readme"),
            "the tool ran: {results:?}"
        );
        assert!(
            !all_sent(&upstream).contains("ALLOWED-BECAUSE-SAFE"),
            "not for the model"
        );
        server.shutdown().await;
    }
}
