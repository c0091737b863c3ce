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
