//! `examples/ag-ui/run.mjs`, the AG-UI script a user copies, run as the README says
//! (`node run.mjs "<message>"`, `HOOKWIRE_URL`) against a server: the answer streams out, and a
//! call that needs approval is asked about on stdin and, answered `y`, runs and the answer follows.

use std::process::Stdio;
use std::sync::OnceLock;

use serde_json::json;
use tokio::io::AsyncWriteExt;

use super::npm_folder;
use crate::common::*;

/// `examples/ag-ui` with its packages installed; `None` (skipped) without node or npm.
fn ag_ui_example() -> Option<std::path::PathBuf> {
    static INSTALLED: OnceLock<Result<std::path::PathBuf, String>> = OnceLock::new();
    npm_folder(
        &INSTALLED,
        "examples/ag-ui",
        &[],
        "the AG-UI example's tests",
    )
}

/// What `run.mjs <message>` printed against `server`, `stdin` typed in; `None` when skipped.
async fn run_example(server: &TestServer, message: &str, stdin: &str) -> Option<String> {
    let dir = ag_ui_example()?;
    let mut child = tokio::process::Command::new("node")
        .arg("run.mjs")
        .arg(message)
        .current_dir(dir)
        .env("HOOKWIRE_URL", server.url("/ag-ui"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.as_bytes()).await.unwrap();
    drop(input);
    let output = tokio::time::timeout(std::time::Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("run.mjs ended in time")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(
        output.status.success(),
        "run.mjs failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    Some(stdout)
}

#[tokio::test]
async fn the_ag_ui_example_prints_the_answer_as_it_streams() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["Hello ", "from ", "hookwire."]));
    let server = TestServer::builder().upstream(&upstream).start().await;
    let Some(printed) = run_example(&server, "say hello", "").await else {
        return;
    };
    assert!(printed.contains("Hello from hookwire.\n"), "{printed}");
    assert!(!printed.contains("[y/n]"), "nothing to approve: {printed}");
    let sent = &upstream.requests()[0].body["messages"];
    assert!(sent.to_string().contains("say hello"), "{sent}");
}

#[tokio::test]
async fn the_ag_ui_example_asks_before_a_tool_and_goes_on_when_approved() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["[NEED_TOOL] read it"]));
    upstream.push(Reply::tool_calls(&[(
        "r1",
        "read_file",
        json!({"path": "a.txt"}),
    )]));
    upstream.push(Reply::text(&["The file says ALPHA."]));
    let server = TestServer::builder()
        .upstream(&upstream)
        .file("a.txt", "ALPHA")
        .config(|c| c.agent.approval.require_approval = vec!["read_file".into()])
        .start()
        .await;
    let Some(printed) = run_example(&server, "read a.txt", "y\n").await else {
        return;
    };
    let asked = printed
        .find("[y/n]")
        .unwrap_or_else(|| panic!("asked: {printed}"));
    let tool = printed
        .find("[tool] read_file(")
        .unwrap_or_else(|| panic!("the tool call: {printed}"));
    let answer = printed
        .find("The file says ALPHA.")
        .unwrap_or_else(|| panic!("the answer: {printed}"));
    assert!(tool < asked && asked < answer, "in that order: {printed}");
    assert!(printed.contains(r#"{"path":"a.txt"}"#), "{printed}");
    // The approved call ran: its output reached the model.
    let last = upstream.requests().pop().unwrap();
    let result = last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["tool_call_id"] == "r1")
        .map(|m| m["content"].to_string())
        .unwrap_or_default();
    assert!(result.contains("ALPHA"), "{}", last.body);
}
