//! Hot reload of skills and hook files: nothing reloads on an idle server (even while hooks write
//! logs into the workspace and files are read), one edit reloads exactly once, and a chat that is
//! running when an edit lands finishes on the set it started with.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::agent::workspace;
use crate::common::*;

/// The server-level hook file: appends to a log in the workspace root on every chat.
const SERVER_YAML: &str = "pre_send_message:\n  - command: 'echo chat >> events.log'\n";
/// The workspace-level hook file: appends to a log inside `.hookwire` on every chat.
const WORKSPACE_YAML: &str =
    "post_send_message:\n  - command: 'echo chat >> .hookwire/audit.log'\n";

/// A server with a skill (`ws/skills/style`), a server hook file (`ws/server-hooks.yaml`) and a
/// workspace hook file (`ws/.hookwire/hooks.yaml`).
async fn server_with_skills_and_hooks(upstream: &FakeUpstream, server_yaml: &str) -> TestServer {
    TestServer::builder()
        .workspace(workspace())
        .upstream(upstream)
        .file(
            "skills/style/SKILL.md",
            "---\ndescription: Keeps answers short.\n---\n",
        )
        .file(
            "skills/style/hooks/hooks.json",
            json!({"hooks":[{"name":"brief","file":"brief.md","timing":"after_user_input","role":"system","persistent":false}]})
                .to_string(),
        )
        .file("skills/style/hooks/brief.md", "SKILL TEXT ONE")
        .hooks(server_yaml)
        .file(".hookwire/hooks.yaml", WORKSPACE_YAML)
        .skills("skills")
        // The workspace is the test's own (docs/protocol.md §8).
        .trust_workspace_hooks()
        .start()
        .await
}

/// Every file the reloaders care about in such a server.
fn watched_files(root: &Path) -> Vec<PathBuf> {
    [
        "server-hooks.yaml",
        ".hookwire/hooks.yaml",
        "skills/style/SKILL.md",
        "skills/style/hooks/hooks.json",
        "skills/style/hooks/brief.md",
    ]
    .iter()
    .map(|f| root.join(f))
    .collect()
}

fn reloads(server: &TestServer) -> (u64, u64) {
    (
        server.sources.skills_generation(),
        server.sources.hook_files_generation(),
    )
}

/// Whether the last upstream request carries `text` in one of its messages.
fn last_request_has(upstream: &FakeUpstream, text: &str) -> bool {
    upstream
        .requests()
        .last()
        .is_some_and(|r| r.messages().iter().any(|(_, c)| c.contains(text)))
}

fn chat_frame() -> Value {
    json!({"type":"chat","input":"hi","enable_tools":false})
}

#[tokio::test]
async fn an_idle_server_does_not_reload_while_hooks_write_logs_and_files_are_read() {
    let upstream = FakeUpstream::start().await;
    let server = server_with_skills_and_hooks(&upstream, SERVER_YAML).await;
    let root = server.workspace.path().to_path_buf();
    let mut client = server.connect().await;
    let mut chats = 0;
    // Not a wait for a condition: the point is that nothing happens during the whole window.
    let mut pace = tokio::time::interval(Duration::from_millis(250));
    let window = Instant::now() + Duration::from_secs(5);
    while Instant::now() < window {
        pace.tick().await;
        let frames = client.chat(chat_frame()).await;
        assert_eq!(frames.last().unwrap()["type"], "done", "{frames:?}");
        chats += 1;
        for file in watched_files(&root) {
            std::fs::read_to_string(file).unwrap();
        }
    }
    assert_eq!(reloads(&server), (0, 0), "reloads (skills, hook files)");
    // The hooks really wrote their logs all along.
    let lines = |file: &str| {
        std::fs::read_to_string(root.join(file))
            .unwrap()
            .lines()
            .count()
    };
    assert_eq!(lines("events.log"), chats);
    assert_eq!(lines(".hookwire/audit.log"), chats);
    server.shutdown().await;
}

#[tokio::test]
async fn one_edit_of_a_hook_file_reloads_it_exactly_once() {
    let upstream = FakeUpstream::start().await;
    let server = server_with_skills_and_hooks(&upstream, SERVER_YAML).await;
    let root = server.workspace.path().to_path_buf();
    let hook_file = root.join(".hookwire/hooks.yaml");

    // Saving the same bytes again is no change.
    std::fs::write(&hook_file, WORKSPACE_YAML).unwrap();
    let changed = eventually(Duration::from_secs(1), || async {
        reloads(&server) != (0, 0)
    });
    assert!(
        !changed.await,
        "reloaded an unchanged file: {:?}",
        reloads(&server)
    );

    let edited = "pre_send_message:\n  - command: echo '{\"user_input\":\"EDITED\"}'\n";
    std::fs::write(&hook_file, edited).unwrap();
    let reloaded = eventually(Duration::from_secs(5), || async {
        server.sources.hook_files_generation() >= 1
    });
    assert!(reloaded.await, "the edit was never reloaded");
    let more = eventually(Duration::from_secs(1), || async {
        reloads(&server) != (0, 1)
    });
    assert!(!more.await, "(skills, hook files) = {:?}", reloads(&server));

    server.connect().await.chat(chat_frame()).await;
    assert!(
        last_request_has(&upstream, "EDITED"),
        "{:?}",
        upstream.requests()
    );
    server.shutdown().await;
}

#[tokio::test]
async fn one_edit_of_a_skill_reloads_the_skills_exactly_once() {
    let upstream = FakeUpstream::start().await;
    let server = server_with_skills_and_hooks(&upstream, SERVER_YAML).await;
    let text = server.workspace.path().join("skills/style/hooks/brief.md");

    std::fs::write(&text, "SKILL TEXT TWO").unwrap();
    let reloaded = eventually(Duration::from_secs(5), || async {
        server.sources.skills_generation() >= 1
    });
    assert!(reloaded.await, "the edit was never reloaded");
    let more = eventually(Duration::from_secs(1), || async {
        reloads(&server) != (1, 0)
    });
    assert!(!more.await, "(skills, hook files) = {:?}", reloads(&server));

    server.connect().await.chat(chat_frame()).await;
    assert!(last_request_has(&upstream, "SKILL TEXT TWO"));
    server.shutdown().await;
}

#[tokio::test]
async fn a_running_chat_finishes_on_the_hooks_it_started_with() {
    let upstream = FakeUpstream::start().await;
    // The model answers only once the edit is loaded, so the edit lands while the chat runs.
    let gate = Gate::new();
    upstream.push(Reply::After(gate.clone(), Box::new(Reply::text(&["slow"]))));
    let yaml = |tag: &str| {
        format!("run_completed:\n  - command: echo '{{\"assistant_output\":\"{tag}\"}}'\n    capabilities: [assistant_output]\n")
    };
    let server = server_with_skills_and_hooks(&upstream, &yaml("OLD SET")).await;
    let server_file = server.workspace.path().join("server-hooks.yaml");
    let mut client = server.connect().await;

    client.send(chat_frame()).await;
    let asked = eventually(Duration::from_secs(5), || async {
        !upstream.requests().is_empty()
    });
    assert!(asked.await, "the chat never reached the model");
    let before = server.sources.hook_files_generation();
    std::fs::write(&server_file, yaml("NEW SET")).unwrap();
    let reloaded = eventually(Duration::from_secs(5), || async {
        server.sources.hook_files_generation() > before
    });
    assert!(reloaded.await, "the edit was never reloaded");
    gate.open();

    let frames = client.until_end().await;
    assert_eq!(
        frames.last().unwrap()["message"]["content"],
        "OLD SET",
        "{frames:?}"
    );
    let frames = client.chat(chat_frame()).await;
    assert_eq!(
        frames.last().unwrap()["message"]["content"],
        "NEW SET",
        "{frames:?}"
    );
    server.shutdown().await;
}
