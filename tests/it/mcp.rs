//! Tools from MCP servers: a real MCP server (`tests/mcp_server`, written with rmcp's server
//! side) over stdio and streamable HTTP on 127.0.0.1; its tools reach the model as
//! `mcp__test__<tool>` and go through the same hooks, approval, bounds and trust as the
//! built-in ones; the server restarts after a crash and follows `tools/list_changed`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use hookwire::mcp::{McpOrigin, McpServerSettings, McpServerSpec};
use serde_json::{json, Value};

use crate::common::*;

/// The test MCP server's binary (`cargo build --all-targets` and `cargo test` build it; a
/// targeted `cargo test --test it` may not have, so it is built here when missing or older
/// than its source).
pub(crate) fn server_binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        let exe = std::env::current_exe().unwrap();
        // target/debug/deps/it-HASH → target/debug/examples/mcp_test_server
        let binary = exe
            .parent()
            .and_then(Path::parent)
            .unwrap()
            .join("examples/mcp_test_server");
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_server/server.rs");
        let modified = |path: &Path| std::fs::metadata(path).and_then(|m| m.modified()).ok();
        if modified(&binary) < modified(&source) {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let status = Command::new(cargo)
                .args(["build", "--quiet", "--example", "mcp_test_server"])
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .status()
                .unwrap();
            assert!(status.success(), "cannot build the MCP test server");
        }
        binary
    })
}

fn spec() -> McpServerSpec {
    McpServerSpec {
        command: Some(server_binary().display().to_string()),
        ..McpServerSpec::default()
    }
}

/// The test server over stdio as `test`, with `auto_approve`.
pub(crate) fn stdio(auto_approve: &[&str]) -> McpServerSettings {
    configured(McpServerSpec {
        auto_approve: auto_approve.iter().map(|s| s.to_string()).collect(),
        ..spec()
    })
}

fn configured(spec: McpServerSpec) -> McpServerSettings {
    McpServerSettings::new("test", spec, McpOrigin::Config).unwrap()
}

async fn info(server: &TestServer) -> Value {
    let (status, body) = http_get(server.addr, "/api/info").await;
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

/// Waits until `/api/info` shows the server `test` running (with `tools` tools at least), and
/// returns its entry.
pub(crate) async fn running(server: &TestServer, tools: usize) -> Value {
    let last = std::cell::RefCell::new(Value::Null);
    let up = eventually(Duration::from_secs(30), || async {
        let now = info(server).await;
        let entry = &now["mcp_servers"][0];
        let up =
            entry["state"] == "running" && entry["tools"].as_array().map_or(0, Vec::len) >= tools;
        *last.borrow_mut() = now;
        up
    })
    .await;
    let last = last.into_inner();
    assert!(up, "the MCP server did not come up: {last:#}");
    last["mcp_servers"][0].clone()
}

pub(crate) async fn start(upstream: &FakeUpstream, server: McpServerSettings) -> TestServer {
    TestServer::builder()
        .upstream(upstream)
        .config(move |c| c.mcp_servers = vec![server])
        .start()
        .await
}

fn chat_frame(id: &str) -> Value {
    json!({"type":"chat","id":id,"input":"use the notes"})
}

fn frame<'a>(frames: &'a [Value], kind: &str) -> &'a Value {
    frames
        .iter()
        .find(|f| f["type"] == kind)
        .unwrap_or_else(|| panic!("no {kind} frame in {frames:#?}"))
}

fn results(frames: &[Value]) -> Vec<&Value> {
    frames
        .iter()
        .filter(|f| f["type"] == "tool_result")
        .collect()
}

#[tokio::test]
async fn the_tools_of_a_stdio_server_are_offered_and_called_with_their_arguments() {
    let upstream = FakeUpstream::start().await;
    let server = start(&upstream, stdio(&["read_note", "media"])).await;
    let entry = running(&server, 6).await;
    assert_eq!(entry["origin"], "config");
    let info = info(&server).await;
    let tools = info["tools"].as_array().unwrap();
    for name in ["read_file", "mcp__test__read_note", "mcp__test__slow"] {
        assert!(tools.contains(&json!(name)), "{name} not in {tools:?}");
    }
    assert!(
        info["mcp_tools"]
            .as_array()
            .unwrap()
            .contains(&json!({"name":"mcp__test__read_note","server":"test"})),
        "{info:#}"
    );

    tool_round(
        &upstream,
        &[
            ("c1", "mcp__test__read_note", json!({"name":"alpha"})),
            ("c2", "mcp__test__read_note", json!({"name":"zulu"})),
            ("c3", "mcp__test__media", json!({})),
        ],
        "done reading",
    );
    let frames = chat(&server, chat_frame("c1")).await;
    assert_eq!(frames.last().unwrap()["reason"], "completed", "{frames:#?}");
    let results = results(&frames);
    assert_eq!(results[0]["name"], "mcp__test__read_note");
    assert_eq!(results[0]["content"], "ALPHA NOTE: the first letter");
    assert_eq!(results[0]["is_error"], false);
    // The server's own error result stays an error.
    assert_eq!(results[1]["content"], "no note named \"zulu\"");
    assert_eq!(results[1]["is_error"], true);
    // Text passes; everything else is one line each.
    assert_eq!(
        results[2]["content"],
        "here are the files\n[image: image/png, 8 bytes]\n\
         [resource: file:///notes/today.txt, text/plain, 12 bytes]\n\
         [resource link: file:///docs/manual.pdf, application/pdf, 4096 bytes]"
    );

    // The model was offered the tool with the server's schema.
    let requests = upstream.requests();
    let offered = requests[1].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "mcp__test__read_note")
        .cloned()
        .unwrap();
    assert_eq!(offered["function"]["description"], "Read a note by name");
    assert_eq!(
        offered["function"]["parameters"]["properties"]["name"]["type"],
        "string"
    );
    assert_eq!(
        tool_results(&requests[2])[0],
        "ALPHA NOTE: the first letter"
    );
}

/// The test server over streamable HTTP on `addr` (port 0: any), and its URL.
fn http_server(workspace: &Path, addr: &str) -> (KillOnDrop, String) {
    let mut child = Command::new(server_binary())
        .args(["--http", addr])
        .current_dir(workspace)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop_sync();
    let url = {
        use std::io::BufRead;
        let mut line = String::new();
        std::io::BufReader::new(child.0.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        line.trim()
            .strip_prefix("listening on ")
            .unwrap()
            .to_string()
    };
    (child, url)
}

#[tokio::test]
async fn a_streamable_http_server_works_the_same() {
    let workspace = tempfile::tempdir().unwrap();
    let (_child, url) = http_server(workspace.path(), "127.0.0.1:0");
    let upstream = FakeUpstream::start().await;
    let settings = configured(McpServerSpec {
        url: Some(url),
        headers: [("X-Test".to_string(), "yes".to_string())].into(),
        auto_approve: vec!["*".into()],
        ..McpServerSpec::default()
    });
    let server = start(&upstream, settings).await;
    running(&server, 6).await;
    tool_round(
        &upstream,
        &[("c1", "mcp__test__read_note", json!({"name":"bravo"}))],
        "ok",
    );
    let frames = chat(&server, chat_frame("c1")).await;
    let result = frame(&frames, "tool_result");
    assert_eq!(
        result["content"], "BRAVO NOTE: the second letter",
        "{frames:#?}"
    );
    assert_eq!(result["is_error"], false);
}

/// Kills the child when the test ends, however it ends.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

trait SpawnKilled {
    fn kill_on_drop_sync(&mut self) -> KillOnDrop;
}

impl SpawnKilled for Command {
    fn kill_on_drop_sync(&mut self) -> KillOnDrop {
        KillOnDrop(self.spawn().unwrap())
    }
}

#[tokio::test]
async fn a_claude_code_pre_tool_use_hook_blocks_mcp_tools_by_its_matcher() {
    let upstream = FakeUpstream::start().await;
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("settings.json");
    std::fs::write(
        &settings,
        json!({"hooks": {"PreToolUse": [{"matcher": "mcp__test__.*", "hooks": [
            {"type": "command", "command": "echo \"no MCP today: $(jq -r .tool_name)\" >&2; exit 2"}
        ]}]}})
        .to_string(),
    )
    .unwrap();
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(move |c| {
            c.mcp_servers = vec![stdio(&["*"])];
            c.hooks_file = Some(settings);
        })
        .start()
        .await;
    running(&server, 6).await;
    tool_round(&upstream, &[("c1", "mcp__test__add_tool", json!({}))], "ok");
    let frames = chat(&server, chat_frame("c1")).await;
    let result = frame(&frames, "tool_result");
    assert_eq!(result["is_error"], true, "{frames:#?}");
    let content = result["content"].as_str().unwrap();
    assert!(
        content.contains("no MCP today: mcp__test__add_tool"),
        "{content}"
    );
    // It never reached the server: the tool it would have added is not there.
    let listed = info(&server).await["mcp_servers"][0]["tools"].clone();
    assert!(!listed
        .as_array()
        .unwrap()
        .contains(&json!("mcp__test__extra")));
}

#[tokio::test]
async fn mcp_tools_wait_for_approval_unless_auto_approve_lists_them() {
    let upstream = FakeUpstream::start().await;
    let server = start(&upstream, stdio(&["read_note"])).await;
    running(&server, 6).await;
    upstream.push(Reply::text(&["[NEED_TOOL] go"]));
    upstream.push(Reply::tool_calls(&[
        ("a1", "mcp__test__read_note", json!({"name":"alpha"})),
        ("a2", "mcp__test__environment", json!({})),
    ]));
    let frames = chat(&server, chat_frame("c1")).await;
    // The auto-approved call ran; the other waits.
    assert_eq!(
        types_of(&frames),
        [
            "start",
            "plan",
            "tool_call",
            "tool_result",
            "approval",
            "done"
        ],
        "{frames:#?}"
    );
    assert_eq!(frame(&frames, "tool_result")["call_id"], "a1");
    let approval = frame(&frames, "approval");
    assert_eq!(approval["calls"][0]["call_id"], "a2");
    assert_eq!(approval["calls"][0]["name"], "mcp__test__environment");
    let reason = approval["calls"][0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("MCP server test") && reason.contains("auto_approve"),
        "{reason}"
    );
    assert_eq!(frames.last().unwrap()["reason"], "approval_required");

    // Allowed: it runs, and the loop goes on.
    upstream.push(Reply::text(&["all read"]));
    let mut history = vec![json!({"role":"user","content":"use the notes"})];
    history.push(frames.last().unwrap()["message"].clone());
    let resumed = chat(
        &server,
        json!({"type":"chat","id":"c2","messages":history,
               "resume":{"state":approval["state"],"decisions":[{"call_id":"a2","decision":"allow"}]}}),
    )
    .await;
    let result = frame(&resumed, "tool_result");
    assert_eq!(result["name"], "mcp__test__environment", "{resumed:#?}");
    assert_eq!(result["is_error"], false);
    assert_eq!(resumed.last().unwrap()["reason"], "completed");
}

#[tokio::test]
async fn a_call_past_its_time_limit_is_an_error_and_the_server_is_told_to_cancel_it() {
    let upstream = FakeUpstream::start().await;
    let settings = configured(McpServerSpec {
        timeout: Some(Duration::from_millis(500)),
        auto_approve: vec!["slow".into()],
        ..spec()
    });
    let server = start(&upstream, settings).await;
    running(&server, 6).await;
    tool_round(
        &upstream,
        &[("s1", "mcp__test__slow", json!({"seconds": 60}))],
        "too slow",
    );
    let started = std::time::Instant::now();
    let frames = chat(&server, chat_frame("c1")).await;
    assert!(started.elapsed() < Duration::from_secs(20));
    let result = frame(&frames, "tool_result");
    assert_eq!(result["is_error"], true);
    assert_eq!(
        result["content"],
        "mcp__test__slow timed out after 0.5s (the MCP server test was told to cancel the call)"
    );
    assert_eq!(frames.last().unwrap()["reason"], "completed");
    let marker = server.workspace.path().join("slow-cancelled");
    assert!(
        eventually(Duration::from_secs(10), || async { marker.exists() }).await,
        "the server never heard of the cancel"
    );
}

#[tokio::test]
async fn a_server_that_crashes_answers_is_error_and_is_restarted() {
    let upstream = FakeUpstream::start().await;
    let server = start(&upstream, stdio(&["*"])).await;
    running(&server, 6).await;
    upstream.push(Reply::text(&["[NEED_TOOL] go"]));
    upstream.push(Reply::tool_calls(&[("x1", "mcp__test__crash", json!({}))]));
    // The next round calls it again at once: the server is down (or its session is gone).
    upstream.push(Reply::tool_calls(&[(
        "x2",
        "mcp__test__read_note",
        json!({"name":"alpha"}),
    )]));
    upstream.push(Reply::text(&["it crashed"]));
    let frames = chat(&server, chat_frame("c1")).await;
    assert_eq!(
        frames.last().unwrap()["reason"],
        "completed",
        "the chat goes on: {frames:#?}"
    );
    let results = results(&frames);
    assert_eq!(results[0]["is_error"], true);
    assert!(
        results[0]["content"]
            .as_str()
            .unwrap()
            .contains("MCP server test"),
        "{results:#?}"
    );
    assert_eq!(results[1]["is_error"], true, "{results:#?}");

    // It comes back by itself, and says it was restarted.
    let last = std::cell::RefCell::new(Value::Null);
    let restarted = eventually(Duration::from_secs(30), || async {
        let now = info(&server).await["mcp_servers"][0].clone();
        let up = now["state"] == "running" && now["restarts"].as_u64() >= Some(1);
        *last.borrow_mut() = now;
        up
    })
    .await;
    assert!(restarted, "{:#}", last.borrow());
    let starts = std::fs::read_to_string(server.workspace.path().join("starts.log")).unwrap();
    assert_eq!(starts.lines().count(), 2, "{starts}");
    tool_round(
        &upstream,
        &[("y1", "mcp__test__read_note", json!({"name":"alpha"}))],
        "fine",
    );
    let frames = chat(&server, chat_frame("c2")).await;
    assert_eq!(
        frame(&frames, "tool_result")["content"],
        "ALPHA NOTE: the first letter"
    );
}

#[tokio::test]
async fn a_down_server_says_why_in_api_info() {
    let upstream = FakeUpstream::start().await;
    let settings = configured(McpServerSpec {
        command: Some("/bin/sh".into()),
        args: vec!["-c".into(), "echo broken config >&2; exit 7".into()],
        ..McpServerSpec::default()
    });
    let server = start(&upstream, settings).await;
    let last = std::cell::RefCell::new(Value::Null);
    let down = eventually(Duration::from_secs(20), || async {
        let now = info(&server).await["mcp_servers"][0].clone();
        let down = now["state"] == "down";
        *last.borrow_mut() = now;
        down
    })
    .await;
    let last = last.into_inner();
    assert!(down, "{last:#}");
    let reason = last["reason"].as_str().unwrap();
    // Its stderr goes to the log only (a server may print its token there).
    assert!(
        reason.contains("exited with status 7; see the server log")
            && !reason.contains("broken config"),
        "{reason}"
    );
    assert!(reason.contains("restarting in"), "{reason}");
    // Chats go on without its tools.
    let frames = chat(&server, json!({"type":"chat","id":"c1","input":"hi"})).await;
    assert_eq!(frames.last().unwrap()["type"], "done", "{frames:#?}");
}

#[tokio::test]
async fn tools_list_changed_refreshes_the_tools() {
    let upstream = FakeUpstream::start().await;
    let server = start(&upstream, stdio(&["*"])).await;
    running(&server, 6).await;
    tool_round(&upstream, &[("t1", "mcp__test__add_tool", json!({}))], "ok");
    let frames = chat(&server, chat_frame("c1")).await;
    assert_eq!(frame(&frames, "tool_result")["content"], "added extra");
    running(&server, 7).await;
    tool_round(&upstream, &[("t2", "mcp__test__extra", json!({}))], "ok");
    let frames = chat(&server, chat_frame("c2")).await;
    assert_eq!(
        frame(&frames, "tool_result")["content"],
        "the extra tool ran",
        "{frames:#?}"
    );
    let offered = upstream.requests().last().unwrap().tool_names();
    assert!(offered
        .unwrap_or_default()
        .contains(&"mcp__test__extra".to_string()));
}

#[tokio::test]
async fn a_stdio_server_gets_only_the_environment_its_env_names() {
    let upstream = FakeUpstream::start().await;
    let settings = configured(McpServerSpec {
        env: [(
            "GREETING".to_string(),
            "hello ${CARGO_PKG_NAME}".to_string(),
        )]
        .into(),
        auto_approve: vec!["environment".into()],
        ..spec()
    });
    let server = start(&upstream, settings).await;
    running(&server, 6).await;
    tool_round(
        &upstream,
        &[("e1", "mcp__test__environment", json!({}))],
        "ok",
    );
    let frames = chat(&server, chat_frame("c1")).await;
    let content = frame(&frames, "tool_result")["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(content.contains("GREETING=hello hookwire"), "{content}");
    let names = content
        .lines()
        .next()
        .unwrap()
        .strip_prefix("names: ")
        .unwrap();
    let allowed = [
        "PATH",
        "HOME",
        "LANG",
        "LC_ALL",
        "TZ",
        "TMPDIR",
        "GREETING",
        "HOOKWIRE_HOOK_RUN",
    ];
    for name in names.split(',') {
        assert!(
            allowed.contains(&name),
            "{name} leaked into the server: {names}"
        );
    }
}

#[tokio::test]
async fn the_server_does_not_wait_for_an_mcp_server_and_stops_it_on_shutdown() {
    let upstream = FakeUpstream::start().await;
    // One that never answers the handshake, and one that does.
    let silent = McpServerSettings::new(
        "silent",
        McpServerSpec {
            command: Some("sleep".into()),
            args: vec!["300".into()],
            ..McpServerSpec::default()
        },
        McpOrigin::Config,
    )
    .unwrap();
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(move |c| {
            c.mcp_servers = vec![silent, stdio(&[])];
        })
        .start()
        .await;
    let (status, _) = http_get(server.addr, "/healthz").await;
    assert_eq!(status, 200);
    let info = info(&server).await;
    assert_eq!(info["mcp_servers"][0]["name"], "silent");
    assert_eq!(info["mcp_servers"][0]["state"], "starting");
    let log = server.workspace.path().join("starts.log");
    let written = || std::fs::read_to_string(&log).is_ok_and(|text| text.ends_with('\n'));
    assert!(eventually(Duration::from_secs(30), || async { written() }).await);
    let pid: i32 = std::fs::read_to_string(&log)
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let alive = |pid: i32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|stat| {
                !stat
                    .rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z')
            })
            .unwrap_or(false)
    };
    assert!(alive(pid));
    // The silent server's `sleep 300`, told from other tests' by its folder (the workspace).
    let workspace = server.workspace.path().canonicalize().unwrap();
    let ours = |pid: &i32| {
        std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd == workspace)
    };
    let sleepers_before: Vec<i32> = processes_named("sleep 300")
        .into_iter()
        .filter(ours)
        .collect();
    assert_eq!(sleepers_before.len(), 1, "the silent MCP server runs");
    server.shutdown().await;
    assert!(
        eventually(Duration::from_secs(10), || async { !alive(pid) }).await,
        "the MCP server outlived the shutdown"
    );
    assert!(
        eventually(Duration::from_secs(10), || async {
            sleepers_before.iter().all(|p| !alive(*p))
        })
        .await
    );
}

/// The pids whose command line is `cmdline` (arguments joined by spaces).
/// The processes whose command line is `cmdline`, the program named by its file name (the
/// server resolves a bare program name in its `PATH`: `sleep 300` runs as `/usr/bin/sleep 300`).
fn processes_named(cmdline: &str) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|raw| {
                    let mut parts: Vec<String> = raw
                        .split(|b| *b == 0)
                        .filter(|part| !part.is_empty())
                        .map(|part| String::from_utf8_lossy(part).into_owned())
                        .collect();
                    if let Some(program) = parts.first_mut() {
                        *program = program.rsplit('/').next().unwrap_or("").to_string();
                    }
                    parts.join(" ") == cmdline
                })
                .unwrap_or(false)
        })
        .collect()
}

// ─── the workspace's .mcp.json, and the commands ───

const BIN: &str = env!("CARGO_BIN_EXE_hookwire");

/// Runs `hookwire ARGS` with only PATH and `envs` set, no terminal.
fn hookwire(args: &[&str], envs: &[(&str, &Path)]) -> std::process::Output {
    let mut command = Command::new(BIN);
    command
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .stdin(Stdio::null());
    for (key, value) in envs {
        command.env(key, value);
    }
    command.output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test]
async fn a_workspace_mcp_json_is_used_only_once_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let workspace = dir.path().join("ws");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(
        workspace.join(".mcp.json"),
        json!({"mcpServers": {"test": {"command": server_binary(), "args": [], "env": {"GREETING": "hi"}}}})
            .to_string(),
    )
    .unwrap();
    let upstream = FakeUpstream::start().await;
    let serve = |workspace: PathBuf, state: PathBuf| {
        let upstream = &upstream;
        async move {
            let temp = tempfile::TempDir::new().unwrap();
            let server = TestServer::builder()
                .workspace(temp)
                .upstream(upstream)
                .config(move |c| {
                    c.workspace = workspace.clone();
                    c.agent.workspace = workspace;
                    c.state_dir = Some(state);
                })
                .start()
                .await;
            server
        }
    };

    // Untrusted: not read, said so, no tools.
    let server = serve(workspace.clone(), state.clone()).await;
    let first = info(&server).await;
    assert_eq!(
        first["untrusted_mcp_files"],
        json!([".mcp.json"]),
        "{first:#}"
    );
    assert_eq!(first["mcp_servers"], json!([]));
    assert!(!workspace.join("starts.log").exists());
    server.shutdown().await;
    let check = hookwire(
        &["check", "--workspace", workspace.to_str().unwrap()],
        &[("HOOKWIRE_STATE_DIR", &state)],
    );
    assert_eq!(check.status.code(), Some(1), "{}", text(&check.stdout));
    assert!(
        text(&check.stdout).contains(".mcp.json: not trusted"),
        "{}",
        text(&check.stdout)
    );

    // The review shows each server and what it runs, and trusts the file.
    let trusted = hookwire(
        &["trust", "--workspace", workspace.to_str().unwrap(), "--yes"],
        &[("HOOKWIRE_STATE_DIR", &state)],
    );
    let shown = text(&trusted.stdout);
    assert_eq!(
        trusted.status.code(),
        Some(0),
        "{shown}{}",
        text(&trusted.stderr)
    );
    assert!(shown.contains(".mcp.json  (not trusted yet"), "{shown}");
    assert!(
        shown.contains(&format!(
            "mcp server test             stdio: {}",
            server_binary().display()
        )),
        "{shown}"
    );
    assert!(shown.contains("env GREETING=hi"), "{shown}");
    assert!(shown.contains("trusted 1 file(s)"), "{shown}");

    // Trusted: its server runs, its tools are offered (and need approval).
    let server = serve(workspace.clone(), state.clone()).await;
    let entry = running(&server, 6).await;
    assert_eq!(entry["origin"], "workspace");
    assert_eq!(info(&server).await["untrusted_mcp_files"], json!([]));
    upstream.push(Reply::text(&["[NEED_TOOL] go"]));
    upstream.push(Reply::tool_calls(&[(
        "w1",
        "mcp__test__read_note",
        json!({"name":"alpha"}),
    )]));
    let frames = chat(&server, chat_frame("c1")).await;
    assert_eq!(
        frames.last().unwrap()["reason"],
        "approval_required",
        "{frames:#?}"
    );
    server.shutdown().await;

    // Changed since: not read again.
    std::fs::write(
        workspace.join(".mcp.json"),
        json!({"mcpServers": {"test": {"command": "/bin/false"}}}).to_string(),
    )
    .unwrap();
    let server = serve(workspace.clone(), state.clone()).await;
    assert_eq!(
        info(&server).await["untrusted_mcp_files"],
        json!([".mcp.json"])
    );
}

#[test]
fn check_probe_starts_each_server_and_lists_its_tools() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("hookwire.yaml");
    std::fs::write(
        &config,
        format!(
            "mcp_servers:\n  test:\n    command: {}\n    auto_approve: [read_note]\n  \
             broken:\n    command: /bin/sh\n    args: ['-c', 'exit 4']\n  \
             off:\n    command: /bin/false\n    enabled: false\n",
            server_binary().display()
        ),
    )
    .unwrap();
    let workspace = dir.path().to_str().unwrap();
    let plain = hookwire(
        &[
            "check",
            "--config",
            config.to_str().unwrap(),
            "--workspace",
            workspace,
        ],
        &[],
    );
    assert_eq!(plain.status.code(), Some(0), "{}", text(&plain.stdout));
    assert!(
        !text(&plain.stdout).contains("mcp: "),
        "no server starts without --probe"
    );

    let probed = hookwire(
        &[
            "check",
            "--probe",
            "--config",
            config.to_str().unwrap(),
            "--workspace",
            workspace,
        ],
        &[],
    );
    let shown = text(&probed.stdout);
    assert_eq!(probed.status.code(), Some(1), "{shown}");
    assert!(
        shown.contains(&format!(
            "mcp: test (stdio: {}, config): 6 tool(s)",
            server_binary().display()
        )),
        "{shown}"
    );
    assert!(
        shown.contains("  mcp__test__read_note  (runs without approval) Read a note by name"),
        "{shown}"
    );
    assert!(
        shown.contains("  mcp__test__slow  (needs approval) Sleep for a while"),
        "{shown}"
    );
    assert!(
        shown.contains("mcp: broken (stdio: /bin/sh -c exit 4, config): failed:"),
        "{shown}"
    );
    assert!(shown.contains("exited with status 4"), "{shown}");
    assert!(
        shown.contains("mcp: off (stdio: /bin/false, config): disabled, not started"),
        "{shown}"
    );
}

#[test]
fn a_bad_mcp_server_entry_is_refused_with_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("hookwire.yaml");
    std::fs::write(
        &config,
        "mcp_servers:\n  both:\n    command: x\n    url: http://127.0.0.1:9/mcp\n",
    )
    .unwrap();
    // `check` names it as the problem it found (exit 1); `serve` refuses to start (exit 2).
    let output = hookwire(&["check", "--config", config.to_str().unwrap()], &[]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stdout).contains("mcp_servers.both: give `command` or `url`, not both"),
        "{}",
        text(&output.stdout)
    );
    let output = hookwire(
        &[
            "--addr",
            "127.0.0.1:0",
            "--config",
            config.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("mcp_servers.both: give `command` or `url`, not both"),
        "{}",
        text(&output.stderr)
    );
}

#[tokio::test]
async fn an_http_server_that_goes_away_is_noticed_at_the_next_call_and_reconnected() {
    let workspace = tempfile::tempdir().unwrap();
    let (child, url) = http_server(workspace.path(), "127.0.0.1:0");
    let upstream = FakeUpstream::start().await;
    let settings = configured(McpServerSpec {
        url: Some(url.clone()),
        auto_approve: vec!["*".into()],
        ..McpServerSpec::default()
    });
    let server = start(&upstream, settings).await;
    running(&server, 6).await;
    drop(child);
    tool_round(
        &upstream,
        &[("h1", "mcp__test__read_note", json!({"name":"alpha"}))],
        "it is gone",
    );
    let frames = chat(&server, chat_frame("c1")).await;
    let result = frame(&frames, "tool_result");
    assert_eq!(result["is_error"], true, "{frames:#?}");
    assert_eq!(frames.last().unwrap()["reason"], "completed");
    let last = std::cell::RefCell::new(Value::Null);
    let down = eventually(Duration::from_secs(20), || async {
        let now = info(&server).await["mcp_servers"][0].clone();
        let down = now["state"] == "down";
        *last.borrow_mut() = now;
        down
    })
    .await;
    assert!(down, "{:#}", last.borrow());
    let reason = last.borrow()["reason"].as_str().unwrap().to_string();
    assert!(reason.contains("error sending request"), "{reason}");
    assert!(
        !reason.contains("rmcp::"),
        "no type names for people: {reason}"
    );

    // Back on the same address: reconnected by itself.
    let addr = url
        .strip_prefix("http://")
        .and_then(|rest| rest.strip_suffix("/mcp"))
        .unwrap();
    let (_child, _) = http_server(workspace.path(), addr);
    running(&server, 6).await;
}
