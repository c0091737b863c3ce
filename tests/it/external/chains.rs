//! An event's chain: server then workspace, each hook on the values the one before left,
//! `on_error`, the chain's budget, and slow hooks killed with their processes.

use std::time::{Duration, Instant};

use serde_json::json;

use super::{alive, server_with_hooks};
use crate::common::*;

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
