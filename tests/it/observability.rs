//! Hook observability (docs/protocol.md §12): `GET /api/hooks` with each hook's place and
//! figures, `hook_trace` frames for a chat that asks for them, and `hookwire hooks test`.

use serde_json::{json, Value};

use crate::common::*;

const SERVER_HOOKS: &str = "\
pre_tool_execution:
  - name: guard
    command: 'echo \"no reading of secrets\" >&2; exit 2'
    matcher: read_file
  - name: widen
    command: 'echo \"{\\\"tool_arguments\\\":{\\\"path\\\":\\\".\\\"}}\"'
    matcher: list_dir
";

const WORKSPACE_HOOKS: &str = "\
post_send_message:
  - name: note
    command: 'true'
";

/// A server with a server hook file, a trusted workspace hook file and the repository's skills.
async fn server(upstream: &FakeUpstream) -> TestServer {
    TestServer::builder()
        .upstream(upstream)
        .hooks(SERVER_HOOKS)
        .file(".hookwire/hooks.yaml", WORKSPACE_HOOKS)
        .trust_workspace_hooks()
        .skills(crate::demo::skills_dir())
        .start()
        .await
}

async fn api_hooks(server: &TestServer) -> Value {
    let (status, body) = http_get(server.addr, "/api/hooks").await;
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

fn hook<'a>(list: &'a Value, name: &str) -> &'a Value {
    list["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["name"] == name)
        .unwrap_or_else(|| panic!("no hook {name} in {list:#}"))
}

#[tokio::test]
async fn api_hooks_lists_every_hook_with_its_place_and_figures_that_move() {
    let upstream = FakeUpstream::start().await;
    let server = server(&upstream).await;
    let list = api_hooks(&server).await;
    let guard = hook(&list, "guard");
    assert_eq!(guard["level"], "server");
    assert_eq!(guard["event"], "pre_tool_execution");
    assert_eq!(guard["dialect"], "hookwire");
    assert_eq!(guard["type"], "command");
    assert_eq!(guard["matcher"], "read_file");
    assert_eq!(guard["line"], 2);
    assert!(guard["file"]
        .as_str()
        .unwrap()
        .ends_with("server-hooks.yaml"));
    assert!(guard["command"]
        .as_str()
        .unwrap()
        .contains(r#"echo "no reading of secrets" >&2; exit 2"#));
    assert_eq!(guard["trusted"], true);
    assert_eq!(guard["metrics"]["runs"], 0);
    assert!(guard["metrics"]["p50_ms"].is_null());
    let note = hook(&list, "note");
    assert_eq!(note["level"], "workspace");
    assert!(note["file"]
        .as_str()
        .unwrap()
        .ends_with(".hookwire/hooks.yaml"));
    let skill_hooks = list["skill_hooks"].as_array().unwrap();
    let brevity = skill_hooks
        .iter()
        .find(|h| h["name"] == "brevity")
        .unwrap_or_else(|| panic!("{list:#}"));
    assert_eq!(brevity["skill"], "concise");
    assert!(
        brevity["file"]
            .as_str()
            .unwrap()
            .ends_with("concise/hooks/brevity.md"),
        "{brevity}"
    );

    // A chat that runs the guard (it blocks) and the workspace hook.
    tool_round(
        &upstream,
        &[("r1", "read_file", json!({"path":"secret.txt"}))],
        "I may not read it.",
    );
    let frames = server
        .connect()
        .await
        .chat(json!({"type":"chat","input":"read secret.txt"}))
        .await;
    assert_eq!(frames.last().unwrap()["type"], "done");
    let list = api_hooks(&server).await;
    let guard = &hook(&list, "guard")["metrics"];
    assert_eq!(guard["runs"], 1, "{guard}");
    assert_eq!(guard["blocked"], 1);
    assert_eq!(
        (&guard["successes"], &guard["skipped"]),
        (&json!(0), &json!(0))
    );
    assert!(guard["total_ms"].as_f64().unwrap() > 0.0, "{guard}");
    assert_eq!(hook(&list, "note")["metrics"]["successes"], 1);
    assert!(guard["p50_ms"].as_f64().unwrap() > 0.0);
    assert!(guard["p95_ms"].as_f64().unwrap() >= guard["p50_ms"].as_f64().unwrap());
    assert_eq!(hook(&list, "note")["metrics"]["runs"], 1);
    assert_eq!(
        hook(&list, "widen")["metrics"]["runs"],
        0,
        "its matcher did not match"
    );
}

#[tokio::test]
async fn api_hooks_shows_an_untrusted_workspace_file_with_the_command_that_trusts_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".hookwire")).unwrap();
    std::fs::write(dir.path().join(".hookwire/hooks.yaml"), WORKSPACE_HOOKS).unwrap();
    let state = tempfile::tempdir().unwrap();
    let state_dir = state.path().to_path_buf();
    let server = TestServer::builder()
        .workspace(dir)
        .config(move |c| c.state_dir = Some(state_dir))
        .start()
        .await;
    let list = api_hooks(&server).await;
    assert!(list["hooks"].as_array().unwrap().is_empty(), "{list:#}");
    let untrusted = &list["untrusted"][0];
    assert!(untrusted["file"]
        .as_str()
        .unwrap()
        .ends_with(".hookwire/hooks.yaml"));
    assert!(
        untrusted["trust_command"]
            .as_str()
            .unwrap()
            .contains("hookwire trust"),
        "{untrusted}"
    );
}

#[tokio::test]
async fn a_traced_chat_gets_a_hook_trace_frame_per_run_with_what_changed() {
    let upstream = FakeUpstream::start().await;
    let server = server(&upstream).await;
    upstream.push(Reply::text(&["[NEED_TOOL] look"]));
    upstream.push(Reply::tool_calls(&[
        ("l1", "list_dir", json!({"path":"sub"})),
        ("r1", "read_file", json!({"path":"secret.txt"})),
    ]));
    upstream.push(Reply::text(&["done"]));
    let frames = server
        .connect()
        .await
        .chat(json!({"type":"chat","id":"t1","input":"look around","trace":true,"skills":["concise"]}))
        .await;
    let traces: Vec<&Value> = frames
        .iter()
        .filter(|f| f["type"] == "hook_trace")
        .collect();
    let find = |hook: &str| {
        traces
            .iter()
            .find(|t| t["hook"] == hook)
            .unwrap_or_else(|| panic!("no trace of {hook}: {traces:#?}"))
    };
    let guard = find("guard");
    assert_eq!(guard["id"], "t1");
    assert_eq!(guard["event"], "pre_tool_execution");
    assert_eq!(guard["level"], "server");
    assert_eq!(guard["outcome"], "block");
    assert!(guard["ms"].as_f64().unwrap() > 0.0);
    let widen = find("widen");
    assert_eq!(widen["outcome"], "success");
    assert_eq!(widen["changed"], json!(["tool_arguments"]));
    let note = find("note");
    assert_eq!(note["level"], "workspace");
    assert_eq!(note["changed"], json!([]));
    let brevity = find("concise/brevity");
    assert_eq!(brevity["level"], "skill");
    assert_eq!(brevity["changed"], json!(["messages"]));
    // The trace comes before the call it guarded is shown.
    let at = |pred: &dyn Fn(&Value) -> bool| frames.iter().position(pred).unwrap();
    assert!(
        at(&|f| f["type"] == "hook_trace" && f["hook"] == "guard")
            < at(&|f| f["type"] == "tool_call" && f["call_id"] == "r1")
    );

    // Without `trace`, none.
    tool_round(&upstream, &[("r2", "read_file", json!({"path":"x"}))], "no");
    let frames = server
        .connect()
        .await
        .chat(json!({"type":"chat","input":"again"}))
        .await;
    assert!(
        !types_of(&frames).contains(&"hook_trace".to_string()),
        "{frames:#?}"
    );
}

fn hooks_test(hooks: &str, event: &str, input: &str) -> (i32, String) {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let hooks_file = dir.path().join("hooks.yaml");
    std::fs::write(&hooks_file, hooks).unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(["hooks", "test", event, "--input", "-"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOOKWIRE_WORKSPACE", dir.path())
        .env("HOOKWIRE_HOOKS", &hooks_file)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

#[test]
fn hooks_test_runs_the_real_handlers_and_exits_like_the_decision() {
    // A blocking guard: exit 2, its reason printed.
    let (code, out) = hooks_test(
        SERVER_HOOKS,
        "pre_tool_execution",
        r#"{"tool_name":"read_file","tool_input":{"path":"secret.txt"}}"#,
    );
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("guard") && out.contains("block"), "{out}");
    // The hook's reason (what it printed), not its command, is what `hooks test` shows.
    assert!(out.contains("no reading of secrets"), "{out}");
    // A tool refused by a block is a denial, not a skip.
    assert!(
        out.contains("decision: deny: no reading of secrets"),
        "{out}"
    );

    // A rewrite: exit 0, the change shown as a diff.
    let (code, out) = hooks_test(
        SERVER_HOOKS,
        "PreToolUse",
        r#"{"tool_name":"list_dir","tool_input":{"path":"sub"}}"#,
    );
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("widen") && out.contains("tool_arguments:"),
        "{out}"
    );
    assert!(out.contains("-   \"path\": \"sub\""), "{out}");
    assert!(out.contains("+   \"path\": \".\""), "{out}");
    assert!(out.contains("decision: continue"), "{out}");

    // It says which files it loaded.
    assert!(out.contains("hook files: hooks.yaml"), "{out}");

    // A hook that fails: exit 1, with its exit code and its stderr (bounded). An unknown
    // event: exit 1, with the names it takes.
    let failing = "stop:\n  - command: 'echo \"config missing\" >&2; echo second >&2; \
                   head -c 5000 /dev/zero | tr \"\\\\0\" x >&2; exit 7'\n";
    let (code, out) = hooks_test(failing, "stop", r#"{"assistant_output":"hi"}"#);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("failure"), "{out}");
    assert!(
        out.contains("→ failure in")
            && out.contains("  exit code 7: config missing\n  | second\n  | xxx"),
        "{out}"
    );
    assert!(out.len() < 2000, "stderr is cut: {out}");
    // A hook without a name is named by its place, once.
    assert!(out.contains("hooks.yaml:2 → failure"), "{out}");
    assert!(!out.contains("hooks.yaml:2 (hooks.yaml:2)"), "{out}");
    let (code, out) = hooks_test(failing, "no_such_event", "{}");
    assert_eq!(code, 1);
    assert!(
        out.contains("unknown event") && out.contains("PreToolUse"),
        "{out}"
    );
}

#[tokio::test]
async fn a_skip_is_counted_apart_from_blocks_with_successes_and_the_time_in_all() {
    let upstream = FakeUpstream::start().await;
    tool_round(
        &upstream,
        &[
            ("r1", "read_file", json!({"path":"README.md"})),
            ("r2", "list_dir", json!({})),
        ],
        "done",
    );
    let yaml = "\
pre_tool_execution:
  - name: skipper
    command: 'echo \"{\\\"action\\\":\\\"skip\\\"}\"'
    matcher: read_file
  - name: fine
    command: 'true'
";
    let server = TestServer::builder()
        .upstream(&upstream)
        .hooks_file("hooks.yaml", yaml)
        .start()
        .await;
    let frames = server
        .connect()
        .await
        .chat(json!({"type":"chat","input":"look"}))
        .await;
    assert_eq!(frames.last().unwrap()["type"], "done", "{frames:#?}");
    let list = api_hooks(&server).await;
    let skipper = &hook(&list, "skipper")["metrics"];
    assert_eq!(
        (
            &skipper["runs"],
            &skipper["skipped"],
            &skipper["blocked"],
            &skipper["successes"]
        ),
        (&json!(1), &json!(1), &json!(0), &json!(0)),
        "{skipper}"
    );
    let fine = &hook(&list, "fine")["metrics"];
    assert_eq!(
        (&fine["runs"], &fine["successes"]),
        (&json!(1), &json!(1)),
        "{fine} (after the skip the chain ended)"
    );
    let total = fine["total_ms"].as_f64().unwrap();
    let p50 = fine["p50_ms"].as_f64().unwrap();
    assert!(total >= p50 && total > 0.0, "{fine}");
}

#[tokio::test]
async fn the_connection_hooks_count_connection_events_only() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["hi"]));
    let yaml = "session_start:\n  - command: 'true'\n";
    let server = TestServer::builder()
        .upstream(&upstream)
        .hooks_file("hooks.yaml", yaml)
        .start()
        .await;
    let frames = server
        .connect()
        .await
        .chat(json!({"type":"chat","input":"hi","enable_tools":false}))
        .await;
    assert_eq!(frames.last().unwrap()["type"], "done");
    let (_, metrics) = http_get(server.addr, "/metrics").await;
    let chat_events: Vec<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("hookwire_hook_runs_total"))
        .filter(|l| l.contains("hook=\"external-connection\"") && !l.contains("event=\"session_"))
        .collect();
    assert!(chat_events.is_empty(), "{chat_events:?}");
}

#[tokio::test]
async fn skill_and_session_hooks_have_figures_like_the_other_hooks() {
    let upstream = FakeUpstream::start().await;
    let dir = tempfile::tempdir().unwrap();
    let hooks_dir = dir.path().join("skills/tally-skill/hooks");
    std::fs::create_dir_all(&hooks_dir).unwrap();
    std::fs::write(hooks_dir.join("tally.md"), "Count your words.").unwrap();
    std::fs::write(
        hooks_dir.join("hooks.json"),
        json!({"hooks":[{"name":"tally","file":"tally.md","timing":"after_user_input","role":"system","persistent":false}]})
            .to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("skills/tally-skill/SKILL.md"),
        "---\ndescription: counts\n---\n",
    )
    .unwrap();
    let skills = dir.path().join("skills");
    let server = TestServer::builder()
        .workspace(dir)
        .upstream(&upstream)
        .config(move |c| c.skills_dir = skills)
        .start()
        .await;
    let expires_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 3600;
    // The session hook's name is this test's own: the figures are kept per process.
    let session_hook = json!({"event":"stop","type":"llm","name":"figures-session-judge",
        "prompt":"JUDGE {{assistant_output}}","expires_at":expires_at});
    upstream.push(Reply::text(&["the answer"]));
    upstream.push(Reply::text(&["{}"]));
    let frames = chat(
        &server,
        json!({"type":"chat","input":"hi","enable_tools":false,"skills":["tally-skill"],
               "session_hooks":[session_hook]}),
    )
    .await;
    assert_eq!(frames.last().unwrap()["type"], "done", "{frames:?}");
    let list = api_hooks(&server).await;
    let tally = list["skill_hooks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["name"] == "tally")
        .unwrap_or_else(|| panic!("{list:#}"));
    let figures = &tally["metrics"];
    assert_eq!(figures["runs"], 1, "{tally}");
    assert_eq!(figures["successes"], 1, "{tally}");
    assert_eq!(
        (&figures["blocked"], &figures["skipped"]),
        (&json!(0), &json!(0))
    );
    assert!(figures["total_ms"].as_f64().is_some(), "{tally}");
    let judge = list["session_hooks"]
        .as_array()
        .unwrap_or_else(|| panic!("no session_hooks in {list:#}"))
        .iter()
        .find(|h| h["name"] == "figures-session-judge" && h["event"] == "stop")
        .unwrap_or_else(|| panic!("{list:#}"));
    let figures = &judge["metrics"];
    assert_eq!(figures["runs"], 1, "{judge}");
    assert_eq!(figures["successes"], 1, "{judge}");
    assert!(figures["total_ms"].as_f64().unwrap() > 0.0, "{judge}");
    server.shutdown().await;
}

#[test]
fn hooks_test_shows_the_context_a_hook_adds_as_a_diff() {
    let hooks = "pre_llm_request:\n  - name: rules\n    command: 'echo \"{\\\"additional_context\\\":\\\"REMEMBER THE RULES\\\"}\"'\n";
    let (code, out) = hooks_test(hooks, "pre_llm_request", r#"{"messages":[]}"#);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("rules") && out.contains("additional_context:"),
        "{out}"
    );
    assert!(out.contains("+ REMEMBER THE RULES"), "{out}");
    // A Claude Code hook's additionalContext, the same way.
    let claude = "UserPromptSubmit:\n  - command: 'echo \"{\\\"hookSpecificOutput\\\":{\\\"hookEventName\\\":\\\"UserPromptSubmit\\\",\\\"additionalContext\\\":\\\"TODAY IS MONDAY\\\"}}\"'\n";
    let (code, out) = hooks_test(claude, "UserPromptSubmit", r#"{"prompt":"hi"}"#);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("+ TODAY IS MONDAY"), "{out}");
}

/// Without a hook file (the README's first hook run without `HOOKWIRE_HOOKS`), `hooks test` says
/// so and how to give one, instead of only "no hook runs".
#[test]
fn hooks_test_says_when_no_hook_file_is_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("input.json");
    std::fs::write(&input, "{}").unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(["hooks", "test", "pre_tool_execution", "--input"])
        .arg(&input)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOOKWIRE_WORKSPACE", dir.path())
        .current_dir(dir.path())
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&output.stdout);
    assert!(out.contains("no hook file is loaded"), "{out}");
    assert!(out.contains("HOOKWIRE_HOOKS=hooks.yaml"), "{out}");
}
