//! Hooks off the chat's path (docs/protocol.md §11): `async: true` hooks run from a bounded queue,
//! and the connection events (`session_start`, `session_end`) never hold up the connection.
//! Real subprocesses; a slow hook waits for the test to release it ([`UNTIL_RELEASED`]), so what
//! must happen while it runs is checked while it still runs.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::agent::workspace;
use crate::common::*;

/// A server whose server-level hook file is `yaml` (in the workspace, which the test owns).
fn with_hooks<'a>(upstream: &'a FakeUpstream, yaml: &str) -> TestServerBuilder<'a> {
    TestServer::builder()
        .workspace(workspace())
        .upstream(upstream)
        .hooks(yaml)
}

/// Sends a chat and returns its frames and how long the first `text` frame took.
async fn timed_chat(client: &mut Client, frame: Value) -> (Vec<Value>, Duration) {
    let sent = Instant::now();
    client.send(frame).await;
    let mut first_text = None;
    let mut frames = Vec::new();
    loop {
        let frame = client.frame().await;
        if frame["type"] == "text" && first_text.is_none() {
            first_text = Some(sent.elapsed());
        }
        let end = frame["type"] == "done" || frame["type"] == "error";
        frames.push(frame);
        if end {
            break;
        }
    }
    let first_text = first_text.unwrap_or_else(|| panic!("no text: {frames:?}"));
    (frames, first_text)
}

/// Sends a ping and returns how long its pong took.
async fn pong_time(client: &mut Client) -> Duration {
    let sent = Instant::now();
    client.send(json!({"type":"ping","id":"p1"})).await;
    let pong = client.frame().await;
    assert_eq!(pong, json!({"type":"pong","id":"p1"}));
    sent.elapsed()
}

async fn exists(path: &Path, limit: Duration) -> bool {
    eventually(limit, || async { path.exists() }).await
}

/// Whether the process `pid` (as a hook wrote it) runs: it exists and is not a zombie.
fn alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{}/stat", pid.trim()))
        .is_ok_and(|stat| !stat.contains(") Z "))
}

/// The pid a hook writes to `file`, once it is there.
async fn pid_in(file: &Path) -> String {
    let written = eventually(Duration::from_secs(5), || async {
        std::fs::read_to_string(file).is_ok_and(|pid| pid.ends_with('\n'))
    })
    .await;
    assert!(written, "the hook never wrote {}", file.display());
    std::fs::read_to_string(file).unwrap()
}

/// The value of a counter in `/metrics` for the series whose line holds every one of `labels`.
async fn counter(server: &TestServer, name: &str, labels: &[&str]) -> f64 {
    let (_, body) = http_get(server.addr, "/metrics").await;
    body.lines()
        .filter(|line| line.starts_with(name) && labels.iter().all(|l| line.contains(l)))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

// ─── session_start / session_end ───

#[tokio::test]
async fn a_slow_session_start_hook_does_not_delay_pong() {
    let upstream = FakeUpstream::start().await;
    let yaml = format!("session_start:\n  - command: 'touch started; {UNTIL_RELEASED}'\n");
    let server = with_hooks(&upstream, &yaml).start().await;
    let mut client = server.connect().await;
    let took = pong_time(&mut client).await;
    // The hook runs until it is released; before, pong came after it.
    assert!(took < Duration::from_millis(500), "pong took {took:?}");
    let started = server.workspace.path().join("started");
    assert!(
        exists(&started, Duration::from_secs(5)).await,
        "it still ran"
    );
    server.release();
    server.shutdown().await;
}

#[tokio::test]
async fn the_first_chat_waits_for_session_start_context_but_pong_does_not() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["ok"]));
    let answer = r#"{\"inject_messages\": [{\"role\": \"user\", \"content\": \"SESSION-NOTE\"}]}"#;
    let yaml = format!("session_start:\n  - command: \"{UNTIL_RELEASED}; echo '{answer}'\"\n");
    let server = with_hooks(&upstream, &yaml).start().await;
    let mut client = server.connect().await;
    assert!(pong_time(&mut client).await < Duration::from_millis(500));
    // The chat is sent while the hook still runs; the hook answers once released.
    client
        .send(json!({"type":"chat","input":"hi","enable_tools":false}))
        .await;
    server.release();
    let frames = client.until_end().await;
    assert_eq!(frames.last().unwrap()["reason"], "completed", "{frames:?}");
    let messages = upstream.requests()[0].messages();
    assert_eq!(
        messages[1],
        ("user".to_string(), "SESSION-NOTE".to_string()),
        "a chat sent while session_start ran still starts with what it left"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn an_async_session_start_hook_is_never_waited_for() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["ok"]));
    let yaml = format!("session_start:\n  - command: '{UNTIL_RELEASED}'\n    async: true\n");
    let server = with_hooks(&upstream, &yaml).start().await;
    let mut client = server.connect().await;
    let (frames, first_text) = timed_chat(
        &mut client,
        json!({"type":"chat","input":"hi","enable_tools":false}),
    )
    .await;
    assert_eq!(frames.last().unwrap()["reason"], "completed");
    assert!(first_text < Duration::from_secs(1), "{first_text:?}");
    server.release();
    server.shutdown().await;
}

#[tokio::test]
async fn session_end_runs_after_the_close_without_holding_the_connection() {
    let upstream = FakeUpstream::start().await;
    let yaml = format!("session_end:\n  - command: '{UNTIL_RELEASED}; touch ended'\n");
    let server = with_hooks(&upstream, &yaml).start().await;
    let mut client = server.connect().await;
    assert!(pong_time(&mut client).await < Duration::from_millis(500));
    let closing = Instant::now();
    client.ws.close(None).await.unwrap();
    // The server answers the close and ends the TCP connection at once: the hook is not
    // awaited on the connection's way out.
    while client.next_message(Duration::from_secs(10)).await.is_some() {}
    let closed = closing.elapsed();
    assert!(closed < Duration::from_secs(1), "the close took {closed:?}");
    let ended = server.workspace.path().join("ended");
    assert!(!ended.exists(), "the hook was still waiting");
    server.release();
    assert!(
        exists(&ended, Duration::from_secs(10)).await,
        "session_end never ran"
    );
    server.shutdown().await;
}

// ─── async: true ───

#[tokio::test]
async fn an_async_post_send_message_hook_does_not_delay_the_first_token() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["first", " token"]));
    let yaml = format!(
        "post_send_message:\n  - command: '{UNTIL_RELEASED}; touch async-ran'\n    async: true\n"
    );
    let server = with_hooks(&upstream, &yaml).start().await;
    let mut client = server.connect().await;
    let (frames, first_text) = timed_chat(
        &mut client,
        json!({"type":"chat","input":"hi","enable_tools":false}),
    )
    .await;
    assert_eq!(frames.last().unwrap()["reason"], "completed", "{frames:?}");
    // Before, the first token waited for the hook (until it was released).
    assert!(first_text < Duration::from_secs(1), "{first_text:?}");
    let ran = server.workspace.path().join("async-ran");
    assert!(!ran.exists(), "the hook was still waiting");
    server.release();
    assert!(exists(&ran, Duration::from_secs(10)).await, "it ran");
    server.shutdown().await;
}

#[tokio::test]
async fn an_async_run_completed_hook_does_not_delay_done() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["ok"]));
    let yaml = format!(
        "run_completed:\n  - command: '{UNTIL_RELEASED}; touch audited'\n    async: true\n"
    );
    let server = with_hooks(&upstream, &yaml).start().await;
    let started = Instant::now();
    let frames = chat(
        &server,
        json!({"type":"chat","input":"hi","enable_tools":false}),
    )
    .await;
    let took = started.elapsed();
    assert_eq!(frames.last().unwrap()["reason"], "completed", "{frames:?}");
    assert!(took < Duration::from_secs(1), "done took {took:?}");
    let audited = server.workspace.path().join("audited");
    assert!(!audited.exists(), "the hook was still waiting");
    server.release();
    assert!(exists(&audited, Duration::from_secs(10)).await, "it ran");
    server.shutdown().await;
}

#[tokio::test]
async fn a_claude_settings_async_hook_runs_off_the_chats_path() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["ok"]));
    let dir = workspace();
    std::fs::create_dir_all(dir.path().join(".claude")).unwrap();
    let settings = json!({"hooks": {"UserPromptSubmit": [{"hooks": [
        {"type": "command", "command": format!("{UNTIL_RELEASED}; touch claude-async-ran"), "async": true}
    ]}]}});
    std::fs::write(
        dir.path().join(".claude/settings.json"),
        settings.to_string(),
    )
    .unwrap();
    let server = TestServer::builder()
        .workspace(dir)
        .upstream(&upstream)
        .trust_workspace_hooks()
        .start()
        .await;
    let mut client = server.connect().await;
    let (_, first_text) = timed_chat(
        &mut client,
        json!({"type":"chat","input":"hi","enable_tools":false}),
    )
    .await;
    assert!(first_text < Duration::from_secs(1), "{first_text:?}");
    let ran = server.workspace.path().join("claude-async-ran");
    server.release();
    assert!(exists(&ran, Duration::from_secs(10)).await, "it ran");
    server.shutdown().await;
}

#[tokio::test]
async fn an_async_hooks_system_message_reaches_the_chat_while_it_runs_and_its_changes_do_not() {
    let upstream = FakeUpstream::start().await;
    let gate = Gate::new();
    upstream.push(Reply::After(
        gate.clone(),
        Box::new(Reply::text(&["the answer"])),
    ));
    let yaml = r#"
pre_send_message:
  - command: echo '{"systemMessage":"ASYNC-NOTE","user_input":"REWRITTEN"}'
    async: true
"#;
    let server = with_hooks(&upstream, yaml).start().await;
    let mut client = server.connect().await;
    client
        .send(json!({"type":"chat","input":"hi","enable_tools":false}))
        .await;
    // The model's reply waits for the gate: the notice comes while the chat runs.
    let mut frames = Vec::new();
    loop {
        let frame = client.frame().await;
        let notice = frame["type"] == "notice";
        frames.push(frame);
        if notice {
            break;
        }
    }
    let notice = frames.last().unwrap();
    assert_eq!(notice["message"], "ASYNC-NOTE", "{frames:?}");
    assert_eq!(notice["level"], "info");
    gate.open();
    frames.extend(client.until_end().await);
    assert_eq!(frames.last().unwrap()["reason"], "completed", "{frames:?}");
    // Its result is ignored: the input the model got is the person's.
    let messages = upstream.requests()[0].messages();
    assert_eq!(messages.last().unwrap().1, "hi");
    server.shutdown().await;
}

#[tokio::test]
async fn a_full_async_queue_drops_runs_and_counts_them() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["ok"]));
    let hook =
        format!("  - name: overflow-probe\n    command: '{UNTIL_RELEASED}'\n    async: true\n");
    let yaml = format!("post_send_message:\n{}", hook.repeat(20));
    let server = with_hooks(&upstream, &yaml)
        .config(|c| c.limits.async_hook_queue = 1)
        .start()
        .await;
    let frames = chat(
        &server,
        json!({"type":"chat","input":"hi","enable_tools":false}),
    )
    .await;
    assert_eq!(frames.last().unwrap()["reason"], "completed", "{frames:?}");
    let labels = ["hook=\"overflow-probe\"", "event=\"post_send_message\""];
    let dropped = counter(&server, "hookwire_async_hook_drops_total", &labels).await;
    // A queue of 1 and a few runs at a time: most of the 20 do not fit.
    assert!(dropped >= 10.0, "dropped {dropped}");
    server.release();
    server.shutdown().await;
}

#[tokio::test]
async fn an_async_hook_is_bounded_by_its_timeout_and_killed_with_its_processes() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["ok"]));
    let yaml = "post_send_message:\n  - command: 'sleep 60 & echo $! > child.pid; sleep 60'\n    timeout: 1\n    async: true\n";
    let server = with_hooks(&upstream, yaml).start().await;
    chat(
        &server,
        json!({"type":"chat","input":"hi","enable_tools":false}),
    )
    .await;
    let pid = pid_in(&server.workspace.path().join("child.pid")).await;
    let gone = eventually(Duration::from_secs(5), || async { !alive(&pid) }).await;
    assert!(gone, "the hook's process outlived its timeout");
    server.shutdown().await;
}

#[tokio::test]
async fn stopping_the_server_stops_the_async_hooks_still_running() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["ok"]));
    let yaml = "post_send_message:\n  - command: 'echo $$ > hook.pid; sleep 60'\n    timeout: 120\n    async: true\n";
    let server = with_hooks(&upstream, yaml)
        .config(|c| c.limits.shutdown_grace = Duration::from_millis(200))
        .start()
        .await;
    chat(
        &server,
        json!({"type":"chat","input":"hi","enable_tools":false}),
    )
    .await;
    let pid = pid_in(&server.workspace.path().join("hook.pid")).await;
    assert!(alive(&pid));
    server.shutdown().await;
    let gone = eventually(Duration::from_secs(5), || async { !alive(&pid) }).await;
    assert!(gone, "the hook's process outlived the server");
}
