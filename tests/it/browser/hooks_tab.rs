//! The Hooks tab and the trace on the page: every hook by level (a server hook, a trusted
//! workspace hook, an untrusted file with the command that trusts it, a skill hook, a session
//! hook the model registered) with counts that move after a chat, refreshed while the tab is
//! open; the trace switch and each turn's timeline, where a blocked tool call stands out.

use std::path::Path;

use serde_json::{json, Value};

use super::chromium::Chromium;
use super::driver::Page;
use super::firefox::Firefox;
use super::hookwire_page::*;
use crate::common::*;

const SERVER_HOOKS: &str = "\
pre_tool_execution:
  - name: guard
    command: 'echo \"no reading of secrets\" >&2; exit 2'
    matcher: read_file
";

const WORKSPACE_HOOKS: &str = "\
post_send_message:
  - name: note
    command: 'true'
";

const UNTRUSTED_HOOKS: &str = "\
stop:
  - name: sneaky
    command: 'touch pwned'
";

/// A server with a server hook file (outside the workspace), a workspace hook file trusted in
/// the trust store, another workspace file that is not, and the repository's skills. The
/// returned folder holds the server's hook file and trust store.
pub async fn server_with_hooks(upstream: Option<&FakeUpstream>) -> (TestServer, tempfile::TempDir) {
    let outside = tempfile::tempdir().unwrap();
    let hooks_file = outside.path().join("server-hooks.yaml");
    std::fs::write(&hooks_file, SERVER_HOOKS).unwrap();
    let workspace = match upstream {
        Some(_) => tempfile::tempdir().unwrap(),
        None => crate::demo::workspace(),
    };
    let root = workspace.path();
    std::fs::create_dir_all(root.join(".hookwire/hooks")).unwrap();
    std::fs::write(root.join(".hookwire/hooks.yaml"), WORKSPACE_HOOKS).unwrap();
    std::fs::write(root.join(".hookwire/hooks/extra.yaml"), UNTRUSTED_HOOKS).unwrap();
    std::fs::write(root.join("secret.txt"), "the secret").unwrap();
    trust(
        outside.path(),
        root,
        ".hookwire/hooks.yaml",
        WORKSPACE_HOOKS,
    );
    let state_dir = outside.path().join("state");
    let skills = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("skills");
    let server = TestServer::builder()
        .workspace(workspace)
        .upstream(upstream)
        .config(move |c| {
            c.hooks_file = Some(hooks_file);
            c.state_dir = Some(state_dir);
            c.skills_dir = skills;
        })
        .start()
        .await;
    (server, outside)
}

/// Pins `file` of `workspace` (with `contents`) in the trust store of `<dir>/state`, as
/// `hookwire trust` would.
fn trust(dir: &Path, workspace: &Path, file: &str, contents: &str) {
    use std::os::unix::fs::PermissionsExt;
    let state = dir.join("state");
    std::fs::create_dir_all(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
    let canonical = workspace.canonicalize().unwrap();
    let store = json!({"version": 1, "workspaces": {canonical.to_str().unwrap(): {file: sha256_hex(contents.as_bytes())}}});
    let path = state.join("trust.json");
    std::fs::write(&path, store.to_string()).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

#[tokio::test]
async fn the_hooks_tab_and_the_trace_timeline_in_chromium() {
    let Some(mut browser) = Chromium::launch().await else {
        return;
    };
    the_hooks_tab_and_the_trace_timeline(&mut browser, "chromium").await;
}

#[tokio::test]
async fn the_hooks_tab_and_the_trace_timeline_in_firefox() {
    let Some(mut browser) = Firefox::launch().await else {
        return;
    };
    the_hooks_tab_and_the_trace_timeline(&mut browser, "firefox").await;
}

async fn the_hooks_tab_and_the_trace_timeline(browser: &mut impl Page, name: &str) {
    let upstream = FakeUpstream::start().await;
    let (server, _outside) = server_with_hooks(Some(&upstream)).await;
    browser.open(&server.url("/")).await;
    browser.toggle_trace().await;
    browser.open_panel_tab("hooks").await;
    browser.wait_hooks_refreshed(1).await;
    browser.wait_shown(HOOK_CARD).await;
    let tab = browser.hooks_tab().await;
    let server_hooks = &tab["server"]["hooks"];
    assert_eq!(server_hooks.as_array().unwrap().len(), 1, "{tab:#}");
    let guard = &server_hooks[0];
    assert_eq!(guard["name"], "guard");
    assert_eq!(guard["event"], "pre_tool_execution");
    assert_eq!(guard["matcher"], "read_file");
    assert_eq!(
        guard["tags"],
        json!(["command", "hookwire"]),
        "trust is the workspace's question: no tag on the server's own hooks"
    );
    assert!(
        guard["what"]
            .as_str()
            .unwrap()
            .contains(r#"echo "no reading of secrets" >&2; exit 2"#),
        "{guard}"
    );
    assert!(
        guard["where"]
            .as_str()
            .unwrap()
            .ends_with("/server-hooks.yaml:2"),
        "file:line: {guard}"
    );
    assert_eq!(
        guard["metrics"],
        json!({"runs": "0", "successes": "0", "failures": "0", "timeouts": "0", "blocked": "0", "skipped": "0", "total_ms": "0 ms", "p50_ms": "—", "p95_ms": "—"})
    );
    let note = &tab["workspace"]["hooks"][0];
    assert_eq!(
        (&note["name"], &note["event"], &note["tags"]),
        (
            &json!("note"),
            &json!("post_send_message"),
            &json!(["command", "hookwire", "trusted"])
        ),
        "{tab:#}"
    );
    let untrusted = tab["workspace"]["untrusted"][0].as_str().unwrap();
    assert!(
        untrusted.contains(".hookwire/hooks/extra.yaml") && untrusted.contains("hookwire trust"),
        "the untrusted file with the command that trusts it: {untrusted}"
    );
    assert!(
        tab["skill"]["hooks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["name"] == "concise/brevity"
                && h["event"] == "after_user_input"
                && h["tags"] == json!(["prompt"])),
        "{tab:#}"
    );
    assert_eq!(tab["session"]["count"], "0");
    // Open, it refreshes by itself.
    let seen = browser.hook_refreshes().await;
    browser.wait_hooks_refreshed(seen + 2).await;

    // A traced chat: the guard blocks reading the secret; the model registers a session hook.
    upstream.push(Reply::text(&["[NEED_TOOL] read it, and judge my answers"]));
    upstream.push(Reply::tool_calls(&[
        ("r1", "read_file", json!({"path":"secret.txt"})),
        (
            "h1",
            "register_hook",
            json!({"event":"stop","name":"judge","prompt":"JUDGE {{assistant_output}}"}),
        ),
    ]));
    upstream.push(Reply::text(&["I may not read it."]));
    browser.send("read secret.txt").await;
    browser.wait_idle_with(TURN).await;
    assert_eq!(
        upstream.requests()[0].body["trace"],
        Value::Null,
        "trace stays between the page and hookwire"
    );
    // The counts move, and the session hook is listed under session.
    browser.wait_hook_metric("guard", "runs", "1").await;
    browser.wait_hook_metric("guard", "blocked", "1").await;
    browser.wait_hook_metric("note", "runs", "1").await;
    let tab = browser.hooks_tab().await;
    assert_ne!(
        tab["server"]["hooks"][0]["metrics"]["p50_ms"], "—",
        "{tab:#}"
    );
    assert_eq!(tab["session"]["count"], "1", "{tab:#}");
    let judge = &tab["session"]["hooks"][0];
    assert_eq!(
        (&judge["name"], &judge["event"], &judge["what"]),
        (
            &json!("judge"),
            &json!("stop"),
            &json!("JUDGE {{assistant_output}}")
        )
    );

    // The turn's timeline: collapsed to one line that says a run was blocked; open, the blocked
    // run is marked, in the order the hooks ran.
    let timeline = browser
        .eval(
            "(() => { const t = document.querySelector('.turn.traced'); const before = t.open; t.querySelector('summary').click();
               const rows = Array.from(t.querySelectorAll('.run'));
               const style = (r) => getComputedStyle(r).backgroundColor;
               const blocked = rows.find(r => r.dataset.outcome === 'block'); const other = rows.find(r => r.dataset.outcome !== 'block');
               return { before, open: t.open, line: t.querySelector('summary').innerText, hasBlock: t.classList.contains('has-block'),
                 rows: rows.map(r => r.innerText), standsOut: style(blocked) !== style(other),
                 tool: document.querySelector('.tool-card summary').innerText }; })()",
        )
        .await;
    assert_eq!(
        (&timeline["before"], &timeline["open"]),
        (&json!(false), &json!(true))
    );
    assert_eq!(timeline["hasBlock"], true);
    assert_eq!(timeline["standsOut"], true, "{timeline:#}");
    let line = timeline["line"].as_str().unwrap();
    assert!(
        line.starts_with("fake-model · ")
            && line.contains(" tokens · ")
            && line.contains("1 blocked"),
        "{line}"
    );
    let rows: Vec<&str> = timeline["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    let position = |needle: &str| {
        rows.iter()
            .position(|r| r.contains(needle))
            .unwrap_or_else(|| panic!("no {needle:?} in {rows:#?}"))
    };
    let guard = rows[position("guard")];
    assert!(
        guard.starts_with("pre_tool_execution → guard")
            && guard.contains("(server)")
            && guard.contains("→ block →")
            && guard.contains(" ms → no change"),
        "{guard}"
    );
    assert!(
        rows[position("concise/brevity")].contains("→ no wait → changed messages"),
        "{rows:#?}"
    );
    assert!(position("concise/brevity") < position("guard"), "{rows:#?}");
    assert!(rows[position("note")].contains("(workspace)"), "{rows:#?}");
    assert!(
        timeline["tool"]
            .as_str()
            .unwrap()
            .contains("read_file — failed"),
        "{timeline}"
    );
    browser.screenshot(&format!("{name}-trace.png")).await;

    // After a reload: the timeline, the tab and its session hook are still there; the next chat
    // runs the session hook, and its run is in that turn's timeline.
    browser.reload_and_wait().await;
    browser
        .wait_for(&format!(
            "document.querySelectorAll('.turn.traced .run').length === {} && Array.from(document.querySelectorAll('#hooks .hook-name')).some(n => n.textContent === 'judge')",
            rows.len(),
        ))
        .await;
    upstream.push(Reply::text(&["Fine."]));
    upstream.push(Reply::text(&["{}"]));
    browser.send("how are you?").await;
    browser.wait_count(TRACED_TURN, 2).await;
    let second = browser
        .eval("Array.from(document.querySelectorAll('.turn.traced')[1].querySelectorAll('.run')).map(r => r.textContent)")
        .await;
    assert!(
        second
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r.as_str().unwrap().starts_with("stop → judge")
                && r.as_str().unwrap().contains("(session)")),
        "{second:#}"
    );
    assert!(
        upstream.requests().iter().any(|r| r
            .messages()
            .iter()
            .any(|(_, c)| c.starts_with("JUDGE Fine."))),
        "the session hook ran upstream"
    );

    // Another tab: the refreshing stops.
    browser.open_panel_tab("conversations").await;
    assert_eq!(browser.hooks_polling().await, json!("false"));

    // A phone-sized screen: the tab fits.
    browser.set_viewport(390, 800).await;
    browser.reload_and_wait().await;
    browser.open_panel_tab("hooks").await;
    browser.wait_hooks_refreshed(1).await;
    browser.wait_shown(HOOK_CARD).await;
    assert_eq!(browser.hooks_polling().await, json!("true"));
    assert_eq!(
        browser
            .eval("document.documentElement.scrollWidth <= 390 && document.getElementById('panel').getBoundingClientRect().right <= 390")
            .await,
        json!(true),
        "nothing overflows sideways"
    );
    browser.screenshot(&format!("{name}-phone-hooks.png")).await;
    server.shutdown().await;
}

/// The demo model with hooks at every level: "list the files", then "read secret.txt", which the
/// server's guard blocks, traced (the screenshots of these views in docs/page.md come from
/// `screenshots::readme_screenshots_in_chromium`).
#[tokio::test]
async fn the_hooks_tab_and_a_traced_demo_conversation_in_chromium() {
    let Some(mut browser) = Chromium::launch().await else {
        return;
    };
    let (server, _outside) = server_with_hooks(None).await;
    browser.set_desktop_viewport(1280, 900).await;
    browser.open(&server.url("/")).await;
    browser.toggle_trace().await;
    browser.open_panel_tab("hooks").await;
    for (count, input) in [(1, "list the files"), (2, "read secret.txt")] {
        browser.send(input).await;
        browser.wait_count(TRACED_TURN, count).await;
    }
    browser.wait_hook_metric("guard", "blocked", "1").await;
    browser.wait_hook_metric("note", "runs", "2").await;
    let answer = browser.last_answer().await;
    assert!(
        answer.as_str().unwrap().contains("no reading of secrets"),
        "the demo model answers from the refusal: {answer}"
    );
    browser.screenshot("chromium-hooks-tab.png").await;
    browser
        .eval("(() => { const t = document.querySelectorAll('.turn.traced')[1]; t.querySelector('summary').click(); t.scrollIntoView(); })()")
        .await;
    assert_eq!(
        browser
            .eval("document.querySelector('.turn.traced.has-block').open")
            .await,
        json!(true)
    );
    browser.screenshot("chromium-demo-trace.png").await;
    server.shutdown().await;
}
