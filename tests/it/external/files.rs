//! Where hooks come from: a hook file that does not load, one edited while the server runs, and
//! the hooks the model registers (session hooks on the wire).

use std::time::Duration;

use serde_json::{json, Value};

use super::server_with_hooks;
use crate::common::*;

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
