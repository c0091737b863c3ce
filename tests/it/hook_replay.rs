//! Hook regression replay (docs/protocol.md §21): real chats through the server record their hook
//! events (redacted, 0600); `hookwire hooks replay` (the binary) runs them through the hooks as
//! they are now — the same hooks exit 0, a changed guard exits 1 naming exactly the event that
//! changed (in text and JSON), an unreadable recording exits 2 — and a model-judged hook replayed
//! with `--repeat 5` against a model that answers differently reports the rate of each outcome.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::common::*;
use hookwire::hooks::record::{RecordLine, RecordSettings};

const SECRET: &str = "sk-abcdefghijklmnopqrstuv0123";

pub(crate) const HOOKS: &str = "\
pre_send_message:
  - name: screen
    command: 'cat > /dev/null'
pre_tool_execution:
  - name: guard
    command: 'cat > /dev/null'
";

/// The same events, but the guard now refuses every tool.
pub(crate) const STRICTER: &str = "\
pre_send_message:
  - name: screen
    command: 'cat > /dev/null'
pre_tool_execution:
  - name: guard
    command: 'cat > /dev/null; echo \"no tools today\" >&2; exit 2'
";

/// A server with [`HOOKS`] and a note to read, recording into `settings.dir`.
pub(crate) async fn recording_server(
    upstream: &FakeUpstream,
    settings: RecordSettings,
) -> TestServer {
    TestServer::builder()
        .upstream(upstream)
        .file("note.txt", "a note")
        .hooks(HOOKS)
        .config(move |c| {
            c.hook_record = Some(settings);
            c.agent.context.window_tokens = Some(32_000);
        })
        .start()
        .await
}

/// The recordings of `dir`, every line.
pub(crate) fn recorded(dir: &Path) -> Vec<(PathBuf, RecordLine)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut lines = Vec::new();
    for entry in entries.flatten() {
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        for line in text.lines() {
            lines.push((entry.path(), serde_json::from_str(line).unwrap()));
        }
    }
    lines
}

/// `hookwire hooks replay ARGS…` in `workspace` with the hook file `hooks`: exit code, stdout,
/// stderr. Awaited, not blocked on: the fake upstream answers from this test's runtime.
async fn replay(
    workspace: &Path,
    hooks: &Path,
    args: &[&str],
    upstream: Option<&FakeUpstream>,
) -> (i32, String, String) {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_hookwire"));
    command
        .args(["hooks", "replay"])
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOOKWIRE_WORKSPACE", workspace)
        .env("HOOKWIRE_SKILLS_DIR", workspace.join(".no-skills"))
        .env("HOOKWIRE_HOOKS", hooks);
    if let Some(upstream) = upstream {
        command
            .env("HOOKWIRE_LLM_BASE_URL", &upstream.base_url)
            .env("HOOKWIRE_LLM_API_KEY", "test-key")
            .env("HOOKWIRE_MODEL", "fake-model");
    }
    let output = command.output().await.unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test]
async fn real_chats_are_recorded_and_replayed_and_a_changed_guard_is_named() {
    let upstream = FakeUpstream::start().await;
    let records = tempfile::tempdir().unwrap();
    let record_dir = records.path().join("hooks");
    let settings = RecordSettings::new(&record_dir);
    let server = recording_server(&upstream, settings).await;
    tool_round(
        &upstream,
        &[("r1", "read_file", json!({"path": "note.txt"}))],
        "done",
    );
    // The key on a line of its own, and a quoted URL with a query: the recording must hide the
    // one and stay valid JSON around the other.
    let input = format!(
        "read note.txt; my key is\n{SECRET} and fetch(\"https://api.example/v1?limit=10\")"
    );
    let frames = chat(&server, json!({"type": "chat", "input": input})).await;
    assert_eq!(frames.last().unwrap()["type"], "done", "{frames:#?}");

    // Both events that ran hooks are on disk, redacted, in a file only the server may read.
    let landed = eventually(std::time::Duration::from_secs(10), || async {
        recorded(&record_dir).len() >= 2
    })
    .await;
    assert!(landed, "{:?}", recorded(&record_dir));
    let lines = recorded(&record_dir);
    let events: Vec<&str> = lines.iter().map(|(_, l)| l.event.as_str()).collect();
    assert_eq!(
        events,
        ["pre_send_message", "pre_tool_execution"],
        "{lines:#?}"
    );
    let (file, sent) = &lines[0];
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert!(file
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .starts_with("hooks-20"));
    let text = std::fs::read_to_string(file).unwrap();
    assert!(
        !text.contains(SECRET),
        "the recording holds the key: {text}"
    );
    assert_eq!(
        sent.input["user_input"],
        "read note.txt; my key is\n*** and fetch(\"https://api.example/v1?limit=***\")"
    );
    let tool = &lines[1].1;
    assert_eq!(tool.input["tool_name"], "read_file");
    assert_eq!(tool.input["tool_input"], json!({"path": "note.txt"}));
    assert_eq!(tool.decision.outcome, "continue");
    assert_eq!(tool.hooks.len(), 1);
    assert_eq!(tool.hooks[0].name, "guard");
    assert_eq!(tool.hooks[0].outcome, "success");
    assert!(
        tool.hooks[0].source.starts_with("server "),
        "{:?}",
        tool.hooks[0]
    );
    assert!(tool.chat_id.is_some());
    server.shutdown().await;

    // The same hooks: nothing changed.
    let workspace = tempfile::tempdir().unwrap();
    let same = workspace.path().join("hooks.yaml");
    std::fs::write(&same, HOOKS).unwrap();
    let dir = record_dir.to_str().unwrap();
    let (code, out, err) = replay(workspace.path(), &same, &[dir], None).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("2 event(s) replayed, 0 changed"), "{out}");

    // A stricter guard: exactly the tool's event changes, allow → block.
    let stricter = workspace.path().join("stricter.yaml");
    std::fs::write(&stricter, STRICTER).unwrap();
    let (code, out, err) = replay(
        workspace.path(),
        &same,
        &[dir, "--hooks", stricter.to_str().unwrap()],
        None,
    )
    .await;
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("2 event(s) replayed, 1 changed"), "{out}");
    let changed: Vec<&str> = out.lines().filter(|l| l.starts_with("CHANGED")).collect();
    assert_eq!(changed.len(), 1, "{out}");
    assert!(changed[0].contains("pre_tool_execution"), "{out}");
    assert!(changed[0].contains("continue → block"), "{out}");
    assert!(changed[0].contains("guard"), "{out}");
    assert!(out.contains("+ no tools today"), "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("same") && l.contains("pre_send_message")),
        "{out}"
    );

    let (code, out, _) = replay(
        workspace.path(),
        &stricter,
        &[dir, "--json", "--only-changed"],
        None,
    )
    .await;
    assert_eq!(code, 1, "{out}");
    let objects: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(objects.len(), 1, "{out}");
    let event = &objects[0];
    assert_eq!(event["changed"], true);
    assert_eq!(event["event"], "pre_tool_execution");
    assert_eq!(event["old"]["outcome"], "continue");
    assert_eq!(event["new"]["outcome"], "block");
    assert_eq!(event["new"]["reason"], "no tools today");
    assert_eq!(event["new"]["decided_by"], "guard");

    // A guard that rewrites instead of refusing: the outcome stays, the rewritten field is the
    // change.
    let rewriter = workspace.path().join("rewriter.yaml");
    std::fs::write(
        &rewriter,
        HOOKS.replace(
            "  - name: guard\n    command: 'cat > /dev/null'",
            "  - name: guard\n    command: 'cat > /dev/null; echo \"{\\\"tool_arguments\\\": {\\\"path\\\": \\\"other.txt\\\"}}\"'",
        ),
    )
    .unwrap();
    let (code, out, err) = replay(
        workspace.path(),
        &rewriter,
        &[dir, "--json", "--only-changed"],
        None,
    )
    .await;
    assert_eq!(code, 1, "{out}{err}");
    let event: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(event["new"]["outcome"], "continue", "{event}");
    assert_eq!(
        event["new"]["changed"],
        json!({"tool_arguments": {"path": "other.txt"}}),
        "{event}"
    );
}

#[tokio::test]
async fn an_unreadable_recording_exits_2_naming_its_line() {
    let workspace = tempfile::tempdir().unwrap();
    let hooks = workspace.path().join("hooks.yaml");
    std::fs::write(&hooks, HOOKS).unwrap();
    let bad = workspace.path().join("hooks-2026-01-01.jsonl");
    std::fs::write(&bad, "{\"not\": \"a record\"}\n").unwrap();
    let (code, out, err) = replay(workspace.path(), &hooks, &[bad.to_str().unwrap()], None).await;
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("hooks-2026-01-01.jsonl:1"), "{err}");
    let (code, _, err) = replay(
        workspace.path(),
        &hooks,
        &["/no/such/recording.jsonl"],
        None,
    )
    .await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("/no/such/recording.jsonl"), "{err}");
}

#[tokio::test]
async fn a_model_judged_hook_replayed_five_times_reports_the_rate_of_each_outcome() {
    let upstream = FakeUpstream::start().await;
    let workspace = tempfile::tempdir().unwrap();
    let hooks = workspace.path().join("hooks.yaml");
    std::fs::write(
        &hooks,
        "pre_tool_execution:\n  - name: judge\n    type: llm\n    prompt: 'JUDGE {{tool_name}}'\n",
    )
    .unwrap();
    let line = json!({
        "at": "2026-11-27T10:00:00.000Z", "chat_id": "chat-1", "event": "pre_tool_execution",
        "input": {"event": "pre_tool_execution", "tool_name": "read_file",
                  "tool_input": {"path": "note.txt"}, "session_id": "s1"},
        "decision": {"outcome": "continue"},
        "hooks": [{"name": "judge", "source": "server hooks.yaml:2", "outcome": "success", "ms": 3.0}]
    });
    let recording = workspace.path().join("hooks-2026-11-27.jsonl");
    std::fs::write(&recording, format!("{line}\n")).unwrap();
    for answer in [
        "{}",
        "{\"action\":\"skip\",\"reason\":\"risky\"}",
        "{}",
        "{}",
        "{\"action\":\"skip\",\"reason\":\"risky\"}",
    ] {
        upstream.push(Reply::text(&[answer]));
    }
    let (code, out, err) = replay(
        workspace.path(),
        &hooks,
        &[recording.to_str().unwrap(), "--repeat", "5", "--json"],
        Some(&upstream),
    )
    .await;
    assert_eq!(code, 1, "{out}{err}");
    let event: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(
        event["rates"],
        json!({"skip": 0.4, "continue": 0.6}),
        "{event}"
    );
    assert_eq!(
        event["new"]["outcome"], "continue",
        "the most frequent outcome"
    );
    assert_eq!(event["changed"], true);
    let asked = upstream
        .requests()
        .iter()
        .filter(|r| {
            r.messages()
                .iter()
                .any(|(_, c)| c.contains("JUDGE read_file"))
        })
        .count();
    assert_eq!(asked, 5, "one model call per run");

    // In text: the rates under the event.
    for _ in 0..5 {
        upstream.push(Reply::text(&["{}"]));
    }
    let (code, out, _) = replay(
        workspace.path(),
        &hooks,
        &[recording.to_str().unwrap(), "--repeat", "5"],
        Some(&upstream),
    )
    .await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("rates: continue 100%"), "{out}");
}

#[tokio::test]
async fn after_a_hook_file_is_edited_the_server_replays_its_last_recorded_events() {
    let upstream = FakeUpstream::start().await;
    let records = tempfile::tempdir().unwrap();
    let settings = RecordSettings::new(records.path());
    let server = recording_server(&upstream, settings).await;
    let ask = |body: Value| {
        reqwest::Client::new()
            .post(server.url("/api/hooks/replay"))
            .json(&body)
            .send()
    };
    tool_round(
        &upstream,
        &[("r1", "read_file", json!({"path": "note.txt"}))],
        "done",
    );
    chat(&server, json!({"type": "chat", "input": "read the note"})).await;
    let landed = eventually(std::time::Duration::from_secs(10), || async {
        recorded(records.path()).len() >= 2
    })
    .await;
    assert!(landed);

    // As loaded: the same decisions.
    let report: Value = ask(json!({"last": 10}))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(report["replayed"], 2, "{report}");
    assert_eq!(report["changed"], 0, "{report}");

    // The guard is edited; once the server has reloaded it, the tool's event changes.
    let generation = server.sources.hook_files_generation();
    std::fs::write(server.workspace.path().join("server-hooks.yaml"), STRICTER).unwrap();
    let reloaded = eventually(std::time::Duration::from_secs(10), || async {
        server.sources.hook_files_generation() > generation
    })
    .await;
    assert!(reloaded, "the edited hook file was not reloaded");
    let report: Value = ask(json!({"last": 10}))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(report["changed"], 1, "{report}");
    let events = report["events"].as_array().unwrap();
    let changed: Vec<&Value> = events.iter().filter(|e| e["changed"] == true).collect();
    assert_eq!(changed[0]["event"], "pre_tool_execution");
    assert_eq!(changed[0]["old"]["outcome"], "continue");
    assert_eq!(changed[0]["new"]["outcome"], "block");
    // The last one only: the newest event.
    let report: Value = ask(json!({"last": 1})).await.unwrap().json().await.unwrap();
    assert_eq!(
        report["events"][0]["event"], "pre_tool_execution",
        "{report}"
    );
}

#[tokio::test]
async fn the_replay_route_is_for_the_operator_and_says_when_nothing_is_recorded() {
    let upstream = FakeUpstream::start().await;
    // A token for everyone who chats, none for the operator: refused.
    let shared = TestServer::builder()
        .upstream(&upstream)
        .config(|c| c.auth_token = Some("chat-token-0123456789".into()))
        .start()
        .await;
    let response = reqwest::Client::new()
        .post(shared.url("/api/hooks/replay"))
        .bearer_auth("chat-token-0123456789")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 403);
    let body: Value = response.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("admin_token"),
        "{body}"
    );

    // An open server that records nothing says how to start.
    let open = TestServer::builder().upstream(&upstream).start().await;
    let response = reqwest::Client::new()
        .post(open.url("/api/hooks/replay"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 404);
    let body: Value = response.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("hooks.record"),
        "{body}"
    );
}

#[tokio::test]
async fn a_recording_folder_inside_the_workspace_is_refused_at_start() {
    let workspace = tempfile::tempdir().unwrap();
    let mut config = test_config(None, workspace.path());
    config.hook_record = Some(RecordSettings::new(workspace.path().join("records")));
    let refused = match hookwire::app::agent_parts(&config) {
        Ok(_) => panic!("a recording the model's tools could read was accepted"),
        Err(error) => error.to_string(),
    };
    assert!(refused.contains("inside the workspace"), "{refused}");
    assert!(!workspace.path().join("records").exists());
}

#[tokio::test]
async fn an_event_whose_hooks_all_filtered_it_out_is_not_recorded() {
    let upstream = FakeUpstream::start().await;
    let records = tempfile::tempdir().unwrap();
    let settings = RecordSettings::new(records.path());
    let server = TestServer::builder()
        .upstream(&upstream)
        .file("note.txt", "a note")
        .hooks(
            "pre_send_message:\n  - command: 'cat > /dev/null'\n\
             pre_tool_execution:\n  - filter: { tool_name: list_dir }\n    command: 'cat > /dev/null'\n\
             run_completed:\n  - command: 'cat > /dev/null'\n",
        )
        .config(move |c| {
            c.hook_record = Some(settings);
            c.agent.context.window_tokens = Some(32_000);
        })
        .start()
        .await;
    tool_round(
        &upstream,
        &[("r1", "read_file", json!({"path": "note.txt"}))],
        "done",
    );
    chat(&server, json!({"type": "chat", "input": "read the note"})).await;
    // The chat's last event is recorded after its tool's: once it is there, the tool's would be.
    let landed = eventually(std::time::Duration::from_secs(10), || async {
        recorded(records.path())
            .iter()
            .any(|(_, line)| line.event == "run_completed")
    })
    .await;
    assert!(landed);
    let events: Vec<String> = recorded(records.path())
        .into_iter()
        .map(|(_, l)| l.event)
        .collect();
    assert_eq!(events, ["pre_send_message", "run_completed"]);
}
