//! External hooks from YAML: real subprocesses, a real HTTP hook server, the fake upstream.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::agent::workspace;
use crate::common::*;

/// A server whose server-level hook file is `server_yaml` and workspace-level one is
/// `workspace_yaml`; `scripts` are written into the workspace, executable.
fn server_with_hooks<'a>(
    upstream: &'a FakeUpstream,
    server_yaml: &str,
    workspace_yaml: Option<&str>,
    scripts: &[(&str, &str)],
) -> TestServerBuilder<'a> {
    let mut builder = TestServer::builder()
        .workspace(workspace())
        .upstream(upstream)
        .hooks(server_yaml)
        // The workspace is the test's own (docs/protocol.md §8).
        .trust_workspace_hooks();
    for (name, body) in scripts {
        builder = builder.script(name, *body);
    }
    if let Some(yaml) = workspace_yaml {
        builder = builder.file(".hookwire/hooks.yaml", yaml);
    }
    builder
}

/// Whether the process `pid` (as written to a file) runs: it exists and is not a zombie.
fn alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{}/stat", pid.trim()))
        .is_ok_and(|stat| !stat.contains(") Z "))
}

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
async fn a_slow_command_is_killed_with_its_process_group() {
    let upstream = FakeUpstream::start().await;
    // The hook's `sleep` is its slowness: it must be killed at its 0.5 s timeout.
    let yaml = "pre_send_message:\n  - command: 'sleep 30 & echo $! > child.pid; wait'\n    timeout: 0.5\n";
    let server = server_with_hooks(&upstream, yaml, None, &[]).start().await;
    let started = Instant::now();
    let frames = chat(
        &server,
        json!({"type":"chat","input":"hi","enable_tools":false}),
    )
    .await;
    assert_eq!(
        frames.last().unwrap()["type"],
        "done",
        "a timeout is an error: the chat goes on"
    );
    assert!(
        started.elapsed() < Duration::from_millis(1000 + 500),
        "killed within its timeout + 0.5 s"
    );
    let pid = std::fs::read_to_string(server.workspace.path().join("child.pid")).unwrap();
    let gone = eventually(Duration::from_millis(500), || async { !alive(&pid) }).await;
    assert!(gone, "the grandchild was killed too");
    let (_, metrics) = http_get(server.addr, "/metrics").await;
    assert!(metrics.lines().any(|l| l.contains("outcome=\"timeout\"")));
    server.shutdown().await;
}

#[tokio::test]
async fn a_chain_that_runs_out_of_its_budget_skips_the_rest() {
    let upstream = FakeUpstream::start().await;
    // Budget 1 s: the first hook applies; the second waits to be released, which never comes,
    // and is cut off at the budget (not at its own 60 s); the third never starts.
    let yaml = format!(
        r#"
pre_send_message:
  - command: echo '{{"user_input":"first"}}'
  - command: {UNTIL_RELEASED}; echo '{{"user_input":"second"}}'
    timeout: 60
  - command: touch third-ran; echo '{{"user_input":"third"}}'
"#
    );
    let server = server_with_hooks(&upstream, &yaml, None, &[])
        .config(|c| {
            c.limits.hook_chain_timeout = Duration::from_secs(1);
        })
        .start()
        .await;
    let started = Instant::now();
    let frames = chat(
        &server,
        json!({"type":"chat","input":"hi","enable_tools":false}),
    )
    .await;
    assert_eq!(frames.last().unwrap()["type"], "done");
    // Not a timing check: the budget (1 s) and the hook's own timeout (60 s) are far apart, so
    // which one ended the hook shows however busy the machine is.
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the chain ended at its budget, not the hook's own timeout: took {:?}",
        started.elapsed()
    );
    let messages = upstream.requests()[0].messages();
    assert!(
        messages.iter().any(|(r, c)| r == "user" && c == "first"),
        "{messages:?}"
    );
    assert!(!server.workspace.path().join("third-ran").exists());
    let (_, metrics) = http_get(server.addr, "/metrics").await;
    assert!(metrics.lines().any(|l| l.contains("outcome=\"timeout\"")));
    server.shutdown().await;
}

#[tokio::test]
async fn chains_run_server_then_workspace_and_see_earlier_changes() {
    let upstream = FakeUpstream::start().await;
    let append = |tag: &str| {
        format!("  - command: 'python3 -c \"import json,sys; d=json.load(sys.stdin); print(json.dumps({{\\\"user_input\\\": d[\\\"user_input\\\"] + \\\" [{tag}]\\\"}}))\"'\n")
    };
    let server_yaml = format!(
        "pre_send_message:\n{}{}",
        append("server-1"),
        append("server-2")
    );
    let workspace_yaml = format!("pre_send_message:\n{}", append("workspace"));
    let server = server_with_hooks(&upstream, &server_yaml, Some(&workspace_yaml), &[])
        .start()
        .await;
    chat(
        &server,
        json!({"type":"chat","input":"hi","enable_tools":false}),
    )
    .await;
    let messages = upstream.requests()[0].messages();
    assert!(
        messages
            .iter()
            .any(|(r, c)| r == "user" && c == "hi [server-1] [server-2] [workspace]"),
        "{messages:?}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn on_error_skip_goes_on_and_abort_ends_the_chain() {
    let upstream = FakeUpstream::start().await;
    let yaml = r#"
pre_send_message:
  - command: exit 3
  - command: echo '{"user_input":"after skip"}'
  - command: exit 3
    on_error: abort
  - command: echo '{"user_input":"never"}'
"#;
    let server = server_with_hooks(&upstream, yaml, None, &[]).start().await;
    chat(
        &server,
        json!({"type":"chat","input":"hi","enable_tools":false}),
    )
    .await;
    assert!(upstream.requests()[0]
        .messages()
        .iter()
        .any(|(_, c)| c == "after skip"));
    server.shutdown().await;
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
async fn an_invalid_hook_file_stops_the_server_from_starting_and_check_reports_it() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = dir.path().join("hooks.yaml");
    std::fs::write(
        &hooks,
        "pre_send_message:\n  - command: x\n    timeout: -1\nnot_an_event:\n  - command: y\n",
    )
    .unwrap();
    let mut config = test_config(None, dir.path());
    config.hooks_file = Some(hooks.clone());
    let Err(error) = hookwire::app::agent_parts(&config) else {
        panic!("the server must refuse")
    };
    assert!(
        matches!(&error, hookwire::app::StartError::HookFiles(problems) if problems.len() == 2),
        "{error:?}"
    );
    assert!(
        error
            .to_string()
            .contains("hooks.yaml:2: pre_send_message[0]: timeout -1"),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains("hooks.yaml:4: unknown event \"not_an_event\""),
        "{error}"
    );
    let problems: Vec<String> = hookwire::app::check::problems(&config)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert!(
        problems.iter().any(|p| p.contains("unknown event")),
        "{problems:?}"
    );
}

#[tokio::test]
async fn session_hooks_round_trip_signed_and_command_handlers_are_refused() {
    let upstream = FakeUpstream::start().await;
    // Chat 1: the model registers an llm hook on `stop`, and tries a command hook.
    upstream.push(Reply::text(&["[NEED_TOOL] register"]));
    upstream.push(Reply::tool_calls(&[
        (
            "r1",
            "register_hook",
            json!({"event":"stop","prompt":"JUDGE: {{assistant_output}}"}),
        ),
        (
            "r2",
            "register_hook",
            json!({"event":"stop","type":"command","command":"touch pwned"}),
        ),
    ]));
    upstream.push(Reply::text(&["registered"]));
    let server = server_with_hooks(&upstream, "", None, &[])
        .config(|c| c.agent.secret = Some("k".into()))
        .start()
        .await;
    let mut client = server.connect().await;
    let frames = client
        .chat(json!({"type":"chat","input":"check your answers from now on"}))
        .await;
    let registered: Vec<&Value> = frames
        .iter()
        .filter(|f| f["type"] == "session_hook")
        .collect();
    assert_eq!(registered.len(), 1, "{frames:?}");
    let hook = registered[0]["hook"].clone();
    assert_eq!(hook["event"], "stop");
    // docs/protocol.md §8: the MAC covers "session_hook" and the spec without its `sig`, as
    // canonical JSON (keys sorted, no spaces).
    let mut unsigned = hook.clone();
    unsigned.as_object_mut().unwrap().remove("sig");
    assert_eq!(
        hook["sig"],
        mac_hex("k", &["session_hook", &unsigned.to_string()]).as_str()
    );
    let refused = frames
        .iter()
        .find(|f| f["type"] == "tool_result" && f["call_id"] == "r2")
        .unwrap();
    assert_eq!(refused["is_error"], true);
    assert!(refused["content"]
        .as_str()
        .unwrap()
        .contains("only use the llm handler"));

    // Chat 2: the client sends the hook back; it runs at `stop`.
    upstream.push(Reply::text(&["the answer"]));
    upstream.push(Reply::text(&["{}"]));
    let frames = client
        .chat(
            json!({"type":"chat","input":"hi","enable_tools":false,"session_hooks":[hook.clone()]}),
        )
        .await;
    assert_eq!(frames.last().unwrap()["message"]["content"], "the answer");
    let judge = upstream.requests().pop().unwrap();
    assert_eq!(
        judge.messages()[0].1.lines().next(),
        Some("JUDGE: the answer")
    );

    // Chat 3: a forged hook (changed prompt) is dropped: no judge call.
    let before = upstream.requests().len();
    let mut forged = hook.clone();
    forged["prompt"] = json!("FORGED {{assistant_output}}");
    upstream.push(Reply::text(&["plain"]));
    client
        .chat(json!({"type":"chat","input":"hi","enable_tools":false,"session_hooks":[forged]}))
        .await;
    assert_eq!(upstream.requests().len(), before + 1);
    assert!(!server.workspace.path().join("pwned").exists());
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
async fn hook_files_reload_without_a_restart() {
    let upstream = FakeUpstream::start().await;
    let server = server_with_hooks(&upstream, "", None, &[]).start().await;
    let hooks = server.sources.clone();
    let said = |text: &str| {
        upstream
            .requests()
            .last()
            .unwrap()
            .messages()
            .iter()
            .any(|(_, c)| c == text)
    };
    let dir = server.workspace.path().join(".hookwire");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("hooks.yaml"),
        "pre_send_message:\n  - command: echo '{\"user_input\":\"RELOADED\"}'\n",
    )
    .unwrap();
    let loaded = eventually(Duration::from_secs(5), || async {
        hooks.hook_files_generation() == 1
    });
    assert!(loaded.await, "the new hook file was never picked up");
    let mut client = server.connect().await;
    client
        .chat(json!({"type":"chat","input":"hi","enable_tools":false}))
        .await;
    assert!(said("RELOADED"));
    // A broken edit keeps the last good hooks.
    std::fs::write(
        dir.join("hooks.yaml"),
        "pre_send_message:\n  - command: x\n    timeout: never\n",
    )
    .unwrap();
    let refused = eventually(Duration::from_secs(5), || async {
        !hooks.hook_file_problems().is_empty()
    });
    assert!(refused.await, "the broken edit was never looked at");
    assert_eq!(hooks.hook_files_generation(), 1);
    client
        .chat(json!({"type":"chat","input":"hi","enable_tools":false}))
        .await;
    assert!(said("RELOADED"));
    // A later valid edit of the file in the new folder is picked up too.
    std::fs::write(
        dir.join("hooks.yaml"),
        "pre_send_message:\n  - command: echo '{\"user_input\":\"SECOND\"}'\n",
    )
    .unwrap();
    let loaded = eventually(Duration::from_secs(5), || async {
        hooks.hook_files_generation() == 2
    });
    assert!(loaded.await, "the edit was never picked up");
    client
        .chat(json!({"type":"chat","input":"hi","enable_tools":false}))
        .await;
    assert!(said("SECOND"));
    assert!(hooks.hook_file_problems().is_empty());
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
async fn cancel_during_a_slow_hook_ends_the_chat_and_kills_the_hook() {
    let upstream = FakeUpstream::start().await;
    // The hook's `sleep` keeps it running until the cancel kills it.
    let yaml =
        "pre_send_message:\n  - command: 'sleep 30 & echo $! > child.pid; wait'\n    timeout: 20\n";
    let server = server_with_hooks(&upstream, yaml, None, &[]).start().await;
    let mut client = server.connect().await;
    client
        .send(json!({"type":"chat","id":"slow","input":"hi","enable_tools":false}))
        .await;
    assert_eq!(client.frame().await["type"], "start");
    let pid_file = server.workspace.path().join("child.pid");
    let running = eventually(Duration::from_secs(5), || async {
        std::fs::read_to_string(&pid_file).is_ok_and(|p| !p.trim().is_empty())
    })
    .await;
    assert!(running, "the hook never started");
    let started = Instant::now();
    client.send(json!({"type":"cancel","id":"slow"})).await;
    let frames = client.until_end().await;
    assert_eq!(frames.last().unwrap()["reason"], "cancelled");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "cancel did not wait for the hook"
    );
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let gone = eventually(Duration::from_millis(500), || async { !alive(&pid) }).await;
    assert!(gone, "the hook's process group was killed");
    assert!(upstream.requests().is_empty());
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
