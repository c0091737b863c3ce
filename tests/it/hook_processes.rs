//! Command hooks that are killed (timeout, cancelled chat) are reaped: `ps` shows no
//! `<defunct>` child of the server. The server runs as a process of its own, so its children are
//! exactly the hooks' processes, and as a child subreaper, like PID 1 of a container: the killed
//! hook's own children are handed to it, not to init.

use std::time::Duration;

use serde_json::json;

use crate::binary::Hookwire;
use crate::common::*;

/// The hook's shell waits on a long sleep.
const SLOW_HOOK: &str = "sleep 30 & echo $$ > hook.pid; wait";

/// The server with the slow hook at `pre_send_message`, timing out after `timeout_seconds`.
fn start(timeout_seconds: f64) -> Hookwire {
    let hooks =
        format!("pre_send_message:\n  - command: '{SLOW_HOOK}'\n    timeout: {timeout_seconds}\n");
    Hookwire::start(&hooks, &[])
}

/// Waits until the hook has written its pid.
async fn hook_started(server: &Hookwire) {
    server.written("hook.pid").await;
}

#[tokio::test]
async fn a_hook_killed_at_its_timeout_leaves_no_zombie() {
    let server = start(0.3);
    let mut client = server.connect().await;
    let frames = client
        .chat(json!({"type":"chat","input":"hi","enable_tools":false}))
        .await;
    assert_eq!(frames.last().unwrap()["type"], "done");
    hook_started(&server).await;
    let clean = eventually(Duration::from_secs(2), || async {
        server.zombies().is_empty()
    })
    .await;
    assert!(clean, "zombies of the server: {:?}", server.zombies());
}

#[tokio::test]
async fn a_hook_killed_by_a_cancelled_chat_leaves_no_zombie() {
    let server = start(20.0);
    let mut client = server.connect().await;
    client
        .send(json!({"type":"chat","id":"slow","input":"hi","enable_tools":false}))
        .await;
    assert_eq!(client.frame().await["type"], "start");
    hook_started(&server).await;
    client.send(json!({"type":"cancel","id":"slow"})).await;
    assert_eq!(
        client.until_end().await.last().unwrap()["reason"],
        "cancelled"
    );
    let clean = eventually(Duration::from_secs(2), || async {
        server.zombies().is_empty()
    })
    .await;
    assert!(clean, "zombies of the server: {:?}", server.zombies());
}

/// A hook whose script is missing (`sh x.sh` exits 2 with the shell's "cannot open") is a failed
/// run, not a block: with `on_error: skip` (the default) the call goes on, and the trace says
/// `failure`; with `on_error: block` it refuses, as a failure does.
#[tokio::test]
async fn a_missing_script_is_a_failure_not_a_block() {
    for (on_error, runs) in [("skip", true), ("block", false)] {
        let upstream = FakeUpstream::start().await;
        tool_round(
            &upstream,
            &[("r1", "read_file", json!({"path": "a.txt"}))],
            "done",
        );
        let yaml = format!(
            "pre_tool_execution:\n  - name: guard\n    command: sh .hookwire/missing-guard.sh\n    on_error: {on_error}\n"
        );
        let server = TestServer::builder()
            .upstream(&upstream)
            .file("a.txt", "ALPHA")
            .hooks(&yaml)
            .start()
            .await;
        let frames = chat(
            &server,
            json!({"type": "chat", "input": "read", "trace": true}),
        )
        .await;
        let trace = frames
            .iter()
            .find(|f| f["type"] == "hook_trace" && f["hook"] == "guard")
            .unwrap_or_else(|| panic!("no trace of the guard: {frames:#?}"));
        assert_eq!(trace["outcome"], "failure", "{trace}");
        let result = frame_of(&frames, "tool_result");
        assert_eq!(result["content"] == "ALPHA", runs, "{on_error}: {result}");
        assert!(
            !result["content"].as_str().unwrap().contains("cannot open"),
            "the shell's error is not a reason the model sees: {result}"
        );
    }
}
