//! What one chat may cost (docs/protocol.md §15): hooks' model calls counted in `done.usage` and
//! capped per chat, session hooks never retried, a fair async queue whose audit runs can wait
//! for room, and a deny reason that is short and guarded like user text.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use crate::agent::workspace;
use crate::common::*;

/// A server on `upstream` whose server hook file is `yaml`, in a workspace with `secret.txt`.
fn with_hooks<'a>(upstream: &'a FakeUpstream, yaml: &str) -> TestServerBuilder<'a> {
    TestServer::builder()
        .workspace(workspace())
        .upstream(upstream)
        .file("secret.txt", "the secret\n")
        .hooks(yaml)
}

/// The upstream requests whose first user message starts with `marker` (a hook's prompt).
fn asked(upstream: &FakeUpstream, marker: &str) -> usize {
    asked_since(upstream, 0, marker)
}

/// Like `asked`, among the requests after the first `since`.
fn asked_since(upstream: &FakeUpstream, since: usize, marker: &str) -> usize {
    upstream
        .requests()
        .iter()
        .skip(since)
        .filter(|request| {
            request
                .messages()
                .iter()
                .find(|(role, _)| role == "user")
                .is_some_and(|(_, content)| content.starts_with(marker))
        })
        .count()
}

fn usage(frames: &[Value]) -> Value {
    let done = frames.last().unwrap();
    assert_eq!(done["type"], "done", "{frames:#?}");
    done["usage"].clone()
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

// ─── hook model calls ───

#[tokio::test]
async fn sixteen_session_hooks_on_128_tool_calls_stop_at_the_cap_and_usage_counts_every_call() {
    let upstream = FakeUpstream::start().await;
    let server = with_hooks(&upstream, "")
        .config(|c| {
            c.agent.secret = Some("k".into());
            c.agent.max_tool_calls_per_round = 128;
        })
        .start()
        .await;
    let mut client = server.connect().await;
    // Chat 1: the model registers 16 llm hooks on every tool call.
    let registrations: Vec<(String, &str, Value)> = (0..16)
        .map(|n| {
            let spec = json!({"event":"pre_tool_execution","prompt":format!("AMPLIFY-{n} {{{{tool_name}}}}")});
            (format!("r{n}"), "register_hook", spec)
        })
        .collect();
    let calls: Vec<(&str, &str, Value)> = registrations
        .iter()
        .map(|(id, name, spec)| (id.as_str(), *name, spec.clone()))
        .collect();
    tool_round(&upstream, &calls, "registered");
    let frames = client
        .chat(json!({"type":"chat","input":"watch every tool call"}))
        .await;
    let hooks: Vec<Value> = frames
        .iter()
        .filter(|f| f["type"] == "session_hook")
        .map(|f| f["hook"].clone())
        .collect();
    assert_eq!(hooks.len(), 16, "{frames:#?}");

    // Chat 2: the client sends them back; the model calls list_dir 128 times in one round. Every
    // hook call is answered "ok" (no JSON), which before made each hook ask twice.
    let before = upstream.requests().len();
    let list_dirs: Vec<(String, &str, Value)> = (0..128)
        .map(|n| (format!("l{n}"), "list_dir", json!({"path":"."})))
        .collect();
    let calls: Vec<(&str, &str, Value)> = list_dirs
        .iter()
        .map(|(id, name, arguments)| (id.as_str(), *name, arguments.clone()))
        .collect();
    upstream.push(Reply::text(&["[NEED_TOOL] list"]));
    upstream.push(Reply::tool_calls(&calls));
    let frames = client
        .chat(json!({"type":"chat","input":"list it all","session_hooks":hooks}))
        .await;
    let usage = usage(&frames);
    // Only chat 2's: in chat 1 each registered hook already ran on the registrations after it
    // (a hook applies from the next event of the chat that registered it), up to the cap.
    let hook_calls = asked_since(&upstream, before, "AMPLIFY-");
    // The cap (limits.max_hook_model_calls, 32), and usage says exactly what the upstream saw.
    assert_eq!(hook_calls, 32, "before: 4,096 hook calls");
    assert_eq!(usage["hook_calls"], json!(hook_calls));
    let chat_calls = upstream.requests().len() - before - hook_calls;
    assert_eq!(chat_calls, 3, "planning, the tool round, the answer");
    // Each reply of the fake upstream reports its usage: 10 prompt tokens and 1 completion
    // token per text reply, 20 and 5 for the tool calls.
    assert_eq!(usage["hook_prompt_tokens"], json!(32 * 10));
    assert_eq!(usage["hook_completion_tokens"], json!(32));
    assert_eq!(usage["prompt_tokens"], json!(10 + 20 + 10 + 32 * 10));
    assert_eq!(usage["completion_tokens"], json!(1 + 5 + 1 + 32));
    let capped: Vec<&Value> = frames
        .iter()
        .filter(|f| {
            f["type"] == "notice"
                && f["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("limits.max_hook_model_calls"))
        })
        .collect();
    assert_eq!(capped.len(), 1, "one notice per chat: {capped:?}");
    assert_eq!(capped[0]["level"], "warn");
    server.shutdown().await;
}

#[tokio::test]
async fn hook_tokens_count_against_max_total_tokens() {
    let upstream = FakeUpstream::start().await;
    // Every tool call asks the model (an operator hook); the chat may use 200 tokens in all.
    let yaml = "pre_tool_execution:\n  - type: llm\n    prompt: 'BUDGET {{tool_name}}'\n";
    let server = with_hooks(&upstream, yaml)
        .config(|c| {
            c.agent.max_total_tokens = Some(200);
            c.agent.summary_on_limit = false;
            c.agent.max_steps = 20;
        })
        .start()
        .await;
    upstream.push(Reply::text(&["[NEED_TOOL] go"]));
    for round in 0..10 {
        upstream.push(Reply::tool_calls(&[(
            &format!("c{round}"),
            "list_dir",
            json!({"path":"."}),
        )]));
        upstream.push(Reply::text(&["{}"]));
    }
    let frames = chat(&server, json!({"type":"chat","input":"loop"})).await;
    let done = frames.last().unwrap();
    assert_eq!(done["reason"], "max_tokens", "{frames:#?}");
    // The planning reply takes 11 tokens, each round 25 and its hook call 11: the total
    // reaches 200 in the 6th round (11 + 5 × 36 + 25), whose hook is then skipped: no hook
    // calls the model past the limit. Without the hooks' tokens it took 8 rounds.
    let rounds = upstream
        .requests()
        .iter()
        .filter(|r| r.tool_names().is_some_and(|t| !t.is_empty()))
        .count();
    assert_eq!(
        rounds, 6,
        "the hooks' tokens count against max_total_tokens"
    );
    let usage = &done["usage"];
    assert_eq!(usage["hook_calls"], json!(5));
    assert_eq!(
        usage["hook_calls"],
        json!(asked(&upstream, "BUDGET")),
        "usage counts every hook call"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_session_hook_asks_the_model_once_an_operator_llm_hook_may_retry() {
    let upstream = FakeUpstream::start().await;
    let yaml = "stop:\n  - type: llm\n    prompt: 'OPERATOR-JUDGE {{assistant_output}}'\n";
    let server = with_hooks(&upstream, yaml).start().await;
    upstream.push(Reply::text(&["the answer"]));
    // Both judges get "ok" (not JSON): the operator's asks again, the model's hook does not.
    let session_hook = json!({"event":"stop","type":"llm",
        "prompt":"SESSION-JUDGE {{assistant_output}}","expires_at":unix_now() + 3600});
    let frames = chat(
        &server,
        json!({"type":"chat","input":"hi","enable_tools":false,"session_hooks":[session_hook]}),
    )
    .await;
    assert_eq!(asked(&upstream, "OPERATOR-JUDGE"), 2);
    assert_eq!(asked(&upstream, "SESSION-JUDGE"), 1, "before: 2");
    assert_eq!(usage(&frames)["hook_calls"], json!(3));
    server.shutdown().await;
}

/// A 503 that asks to be retried at once.
fn busy() -> Reply {
    Reply::StatusWith(
        503,
        vec![("retry-after", "0".to_string())],
        "{\"error\":{\"message\":\"busy\"}}".into(),
    )
}

#[tokio::test]
async fn a_connections_session_start_and_session_end_hooks_share_one_cap_of_model_calls() {
    let upstream = FakeUpstream::start().await;
    // Every hook call is answered "ok" (no JSON), so each llm hook asks twice.
    let yaml = "session_start:
  - type: llm
    prompt: 'CONN-START-1'
  - type: llm
    prompt: 'CONN-START-2'
session_end:
  - type: llm
    prompt: 'CONN-END'
  - command: 'touch ended'
";
    let server = with_hooks(&upstream, yaml)
        .config(|c| c.agent.max_hook_model_calls = 3)
        .start()
        .await;
    let mut client = server.connect().await;
    client.ws.close(None).await.unwrap();
    let ended = server.workspace.path().join("ended");
    assert!(
        eventually(Duration::from_secs(20), || async { ended.exists() }).await,
        "session_end's hooks did not run"
    );
    // The connection's three: session_start's first hook twice, its second once; none is left
    // for session_end (before, each event had a cap of its own: 5 calls).
    assert_eq!(asked(&upstream, "CONN-START"), 3);
    assert_eq!(
        asked(&upstream, "CONN-END"),
        0,
        "the connection's cap is spent"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn an_agent_hooks_retries_and_fallback_models_each_take_a_model_call() {
    let upstream = FakeUpstream::start().await;
    // The hook's sub-agent meets six busy answers; so would the chat, after it.
    for _ in 0..6 {
        upstream.push(busy());
    }
    let yaml = "pre_send_message:\n  - type: agent\n    prompt: 'AGENT-TASK {{user_input}}'\n";
    let server = with_hooks(&upstream, yaml)
        .config(|c| {
            c.agent.max_hook_model_calls = 4;
            c.agent.retry.retries = 2;
            c.agent.retry.fallback_models = vec!["backup-1".into(), "backup-2".into()];
        })
        .start()
        .await;
    let frames = chat(
        &server,
        json!({"type":"chat","input":"hi","enable_tools":false}),
    )
    .await;
    // Four upstream requests, the hook's four calls (before: one call, seven requests).
    assert_eq!(asked(&upstream, "AGENT-TASK"), 4, "{frames:#?}");
    assert_eq!(usage(&frames)["hook_calls"], json!(4));
    server.shutdown().await;
}

// ─── the async queue ───

/// Waits until `file` holds a line containing `needle`.
async fn logged(file: &Path, needle: &str) -> bool {
    eventually(Duration::from_secs(20), || async {
        std::fs::read_to_string(file).is_ok_and(|log| log.contains(needle))
    })
    .await
}

/// `count` calls of `list_dir` in one round.
fn list_dirs(prefix: &str, count: usize) -> Vec<(String, &'static str, Value)> {
    (0..count)
        .map(|n| (format!("{prefix}{n}"), "list_dir", json!({"path":"."})))
        .collect()
}

fn borrowed<'a>(calls: &'a [(String, &'static str, Value)]) -> Vec<(&'a str, &'static str, Value)> {
    calls
        .iter()
        .map(|(id, name, arguments)| (id.as_str(), *name, arguments.clone()))
        .collect()
}

/// An audit hook on every tool call that waits for the file `gate`, then appends its input to
/// `audit.log`.
const GATED_AUDIT: &str = "pre_tool_execution:
  - name: audit
    command: 'while [ ! -e gate ]; do sleep 0.05; done; cat >> audit.log; echo >> audit.log'
    timeout: 60
    async: true
";

#[tokio::test]
async fn one_connection_over_its_share_loses_its_own_runs_not_another_connections() {
    let upstream = FakeUpstream::start().await;
    let server = with_hooks(&upstream, GATED_AUDIT)
        .config(|c| {
            c.limits.async_hook_queue = 16;
            c.limits.async_hook_queue_per_connection = 4;
            c.agent.max_tool_calls_per_round = 64;
        })
        .start()
        .await;
    // The flooder: 24 calls, each an audit run that waits for the gate.
    let flood = list_dirs("f", 24);
    tool_round(&upstream, &borrowed(&flood), "listed");
    let frames = chat(&server, json!({"type":"chat","input":"flood"})).await;
    assert_eq!(frames.last().unwrap()["type"], "done");
    // Another connection's sensitive call: before, the queue was full and its audit dropped.
    tool_round(
        &upstream,
        &[("s1", "read_file", json!({"path":"secret.txt"}))],
        "read",
    );
    let frames = chat(&server, json!({"type":"chat","input":"read the secret"})).await;
    assert_eq!(frames.last().unwrap()["type"], "done");
    std::fs::write(server.workspace.path().join("gate"), "").unwrap();
    let log = server.workspace.path().join("audit.log");
    assert!(
        logged(&log, "secret.txt").await,
        "the sensitive call's audit record is missing"
    );
    // The flooder kept at most its 4 waiting runs and the 4 workers' (the rest were dropped).
    let text = std::fs::read_to_string(&log).unwrap();
    let flooded = text.matches("\"list_dir\"").count();
    assert!(
        (1..=8).contains(&flooded),
        "{flooded} of the flooder's runs ran"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_full_queue_makes_an_on_full_wait_audit_hook_wait_instead_of_dropping() {
    let upstream = FakeUpstream::start().await;
    // `noise` fills the queue from list_dir calls until the gate opens; the sensitive call's
    // own guard opens it just before its audit hook is handed over, while the queue is full.
    let yaml = "pre_tool_execution:
  - name: noise
    command: 'while [ ! -e gate ]; do sleep 0.5; done'
    timeout: 60
    async: true
    filter: {tool_name: list_dir}
  - name: opener
    command: 'touch gate'
    filter: {tool_name: read_file}
  - name: audit
    command: 'cat >> audit.log; echo >> audit.log'
    async: true
    on_full: wait
    filter: {tool_name: read_file}
";
    let server = with_hooks(&upstream, yaml)
        .config(|c| {
            c.limits.async_hook_queue = 8;
            c.agent.max_tool_calls_per_round = 64;
        })
        .start()
        .await;
    let flood = list_dirs("f", 32);
    tool_round(&upstream, &borrowed(&flood), "listed");
    let frames = chat(&server, json!({"type":"chat","input":"flood"})).await;
    assert_eq!(frames.last().unwrap()["type"], "done");
    tool_round(
        &upstream,
        &[("s1", "read_file", json!({"path":"secret.txt"}))],
        "read",
    );
    let frames = chat(&server, json!({"type":"chat","input":"read the secret"})).await;
    assert_eq!(frames.last().unwrap()["type"], "done", "{frames:#?}");
    let log = server.workspace.path().join("audit.log");
    assert!(
        logged(&log, "secret.txt").await,
        "the audit record of the sensitive call was dropped"
    );
    server.shutdown().await;
}

// ─── the deny reason ───

/// A server that asks before `read_file`, with `yaml` as its hook file.
async fn approving(upstream: &FakeUpstream, yaml: &str) -> TestServer {
    with_hooks(upstream, yaml)
        .config(|c| {
            c.agent.secret = Some("approval-secret".into());
            c.agent.approval.require_approval = vec!["read_file".into()];
        })
        .start()
        .await
}

/// The first chat: one round calling `read_file`, which waits for approval.
async fn ask_to_read(server: &TestServer, upstream: &FakeUpstream) -> Vec<Value> {
    upstream.push(Reply::text(&["[NEED_TOOL] read it"]));
    upstream.push(Reply::tool_calls(&[(
        "r1",
        "read_file",
        json!({"path":"secret.txt"}),
    )]));
    let frames = chat(server, json!({"type":"chat","input":"read the secret"})).await;
    assert_eq!(frames.last().unwrap()["reason"], "approval_required");
    frames
}

/// The chat that denies the call with `reason`, on the history the client holds.
fn deny(frames: &[Value], reason: &str) -> Value {
    let mut history = vec![json!({"role":"user","content":"read the secret"})];
    history.extend(
        frames
            .iter()
            .filter(|f| f["type"] == "hook")
            .map(|f| f["message"].clone()),
    );
    history.push(frames.last().unwrap()["message"].clone());
    json!({"type":"chat","id":"c2","messages":history,
           "resume":{"state":frame_of(frames, "approval")["state"],
                     "decisions":[{"call_id":"r1","decision":"deny","reason":reason}]}})
}

#[tokio::test]
async fn a_deny_reason_over_500_characters_is_refused_and_one_of_500_reaches_the_model() {
    let upstream = FakeUpstream::start().await;
    let server = approving(&upstream, "").await;
    let frames = ask_to_read(&server, &upstream).await;
    let before = upstream.requests().len();
    // 48,027 characters went through before.
    let refused = chat(&server, deny(&frames, &"é".repeat(501))).await;
    let error = refused.last().unwrap();
    assert_eq!(error["code"], "bad_frame", "{refused:#?}");
    assert!(
        error["message"].as_str().unwrap().contains("500"),
        "{error}"
    );
    assert_eq!(upstream.requests().len(), before, "the model was not asked");
    // The same state again (states may be replayed until they expire), with 500 characters.
    upstream.push(Reply::text(&["understood"]));
    let reason = "é".repeat(500);
    let resumed = chat(&server, deny(&frames, &reason)).await;
    assert_eq!(resumed.last().unwrap()["type"], "done", "{resumed:#?}");
    let results = tool_results(upstream.requests().last().unwrap());
    assert!(results.iter().any(|r| r.ends_with(&reason)), "{results:?}");
    server.shutdown().await;
}

#[tokio::test]
async fn a_deny_reason_passes_the_input_guards_of_every_dialect_like_user_text() {
    let guard = "command: 'if grep -q FORBIDDEN; then echo \"no forbidden words\" >&2; exit 2; fi'";
    for event in ["pre_send_message", "UserPromptSubmit", "BeforeAgent"] {
        let upstream = FakeUpstream::start().await;
        let server = approving(&upstream, &format!("{event}:\n  - {guard}\n")).await;
        // The guard blocks user text with the word...
        let blocked = chat(&server, json!({"type":"chat","input":"say FORBIDDEN"})).await;
        assert_eq!(blocked.last().unwrap()["code"], "hook_blocked", "{event}");
        // ...and so a deny reason with it: the model never sees it.
        let frames = ask_to_read(&server, &upstream).await;
        let before = upstream.requests().len();
        let refused = chat(&server, deny(&frames, "because FORBIDDEN, that's why")).await;
        let error = refused.last().unwrap();
        assert_eq!(error["code"], "hook_blocked", "{event}: {refused:#?}");
        assert_eq!(upstream.requests().len(), before, "{event}");
        // A reason without it goes through.
        upstream.push(Reply::text(&["fine"]));
        let resumed = chat(&server, deny(&frames, "not today")).await;
        assert_eq!(resumed.last().unwrap()["type"], "done", "{event}");
        let results = tool_results(upstream.requests().last().unwrap());
        assert!(
            results.iter().any(|r| r.ends_with("not today")),
            "{event}: {results:?}"
        );
        server.shutdown().await;
    }
}
