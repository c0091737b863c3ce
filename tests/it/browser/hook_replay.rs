//! The Hooks tab replays recorded hook traffic (docs/protocol.md §21): a real chat through the
//! page is recorded; the operator makes the guard stricter, the server reloads the hook file, and
//! "Replay the last N recorded events" shows exactly the tool's event CHANGED, continue → block,
//! with the new reason; "Only changed" hides the rest. A server that records nothing, or that
//! wants the admin token, says so in plain words.

use std::time::Duration;

use serde_json::json;

use super::chromium::Chromium;
use super::driver::Page;
use super::firefox::Firefox;
use super::hookwire_page::*;
use crate::common::*;
use crate::hook_replay::{recorded, HOOKS, STRICTER};
use hookwire::hooks::record::RecordSettings;

#[tokio::test]
async fn the_hooks_tab_replays_recorded_traffic_after_a_hook_file_is_edited_in_chromium() {
    let Some(mut browser) = Chromium::launch().await else {
        return;
    };
    the_hooks_tab_replays_recorded_traffic(&mut browser, "chromium").await;
}

#[tokio::test]
async fn the_hooks_tab_replays_recorded_traffic_after_a_hook_file_is_edited_in_firefox() {
    let Some(mut browser) = Firefox::launch().await else {
        return;
    };
    the_hooks_tab_replays_recorded_traffic(&mut browser, "firefox").await;
}

async fn the_hooks_tab_replays_recorded_traffic(browser: &mut impl Page, name: &str) {
    let upstream = FakeUpstream::start().await;
    let records = tempfile::tempdir().unwrap();
    let settings = RecordSettings::new(records.path());
    let server = crate::hook_replay::recording_server(&upstream, settings).await;
    browser.open(&server.url("/")).await;
    tool_round(
        &upstream,
        &[("r1", "read_file", json!({"path": "note.txt"}))],
        "done",
    );
    browser.send("read the note").await;
    browser.wait_last_answer("done").await;
    let landed = eventually(Duration::from_secs(10), || async {
        recorded(records.path()).len() >= 2
    })
    .await;
    assert!(landed, "{:?}", recorded(records.path()));

    // The operator makes the guard stricter; the server reloads the file.
    let generation = server.sources.hook_files_generation();
    std::fs::write(server.workspace.path().join("server-hooks.yaml"), STRICTER).unwrap();
    let reloaded = eventually(Duration::from_secs(10), || async {
        server.sources.hook_files_generation() > generation
    })
    .await;
    assert!(reloaded, "the edited hook file was not reloaded");

    browser.open_panel_tab("hooks").await;
    let before = browser.replay_shown().await;
    assert_eq!(
        (&before["button"], &before["live"]),
        (
            &json!("Replay the last 50 recorded events"),
            &json!("polite")
        ),
        "{before:#}"
    );
    let running = browser.replay_recorded(10).await;
    assert_eq!(
        running[0], true,
        "the button is off while it runs: {running}"
    );
    assert_eq!(running[1], "Replaying…", "{running}");
    assert!(
        running[2].as_str().unwrap().starts_with("Replaying"),
        "{running}"
    );
    browser.wait_replayed().await;
    let shown = browser.replay_shown().await;
    assert_eq!(shown["state"], "done", "{shown:#}");
    assert_eq!(shown["status"], "2 events replayed, 1 changed", "{shown:#}");
    assert_eq!(
        (&shown["button"], &shown["disabled"]),
        (&json!("Replay the last 10 recorded events"), &json!(false))
    );
    assert_eq!(
        shown["headers"],
        json!(["Result", "Event, when", "Outcome", "Decided by"])
    );
    let rows = shown["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{shown:#}");
    let row = |i: usize, fields: &[&str]| -> Vec<String> {
        fields
            .iter()
            .map(|f| rows[i][*f].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        row(0, &["mark", "event", "outcome"]),
        ["same", "pre_send_message", "continue"],
        "{shown:#}"
    );
    assert_eq!(
        row(1, &["mark", "event", "outcome"]),
        ["CHANGED", "pre_tool_execution", "continue → block"],
        "{shown:#}"
    );
    let when = &row(1, &["when"])[0];
    assert!(
        when.starts_with("20") && when.ends_with(" UTC"),
        "when it was recorded: {shown:#}"
    );
    assert!(
        row(1, &["decided"])[0].ends_with("guard"),
        "the hook that decided: {shown:#}"
    );
    assert_eq!(
        rows[1]["detail"],
        json!(["reason:", "− (none)", "+ no tools today"]),
        "{shown:#}"
    );
    // The panel scrolled down to the replay, for the screenshot (a test artifact).
    browser
        .eval("(() => { const p = document.getElementById('panel'); p.scrollTop = p.scrollHeight; })()")
        .await;
    browser
        .screenshot(&format!("{name}-hooks-replay.png"))
        .await;

    browser.replay_only_changed(true).await;
    let only = browser.replay_shown().await;
    let events: Vec<&str> = only["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["event"].as_str().unwrap())
        .collect();
    assert_eq!(events, ["pre_tool_execution"], "{only:#}");
    assert_eq!(only["status"], "2 events replayed, 1 changed");
    browser.replay_only_changed(false).await;
    assert_eq!(
        browser.replay_shown().await["rows"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    server.shutdown().await;
}

/// A server that records nothing says how to start; one with `admin_token` says the page did not
/// send it, without opening the sign-in panel.
#[tokio::test]
async fn the_hooks_tab_says_why_it_cannot_replay_in_chromium() {
    let Some(mut browser) = Chromium::launch().await else {
        return;
    };
    let upstream = FakeUpstream::start().await;
    let server = TestServer::builder().upstream(&upstream).start().await;
    browser.open(&server.url("/")).await;
    browser.open_panel_tab("hooks").await;
    browser.replay_recorded(50).await;
    browser.wait_replayed().await;
    let shown = browser.replay_shown().await;
    assert_eq!(shown["state"], "failed", "{shown:#}");
    assert!(
        shown["status"].as_str().unwrap().starts_with(
            "This server records no hook traffic: set hooks.record.dir (or HOOKWIRE_HOOK_RECORD_DIR)"
        ),
        "{shown:#}"
    );
    assert_eq!(shown["rows"], json!([]));
    assert_eq!(shown["disabled"], false);
    server.shutdown().await;

    let records = tempfile::tempdir().unwrap();
    let settings = RecordSettings::new(records.path());
    let guarded = TestServer::builder()
        .upstream(&upstream)
        .hooks(HOOKS)
        .config(move |c| {
            c.hook_record = Some(settings);
            c.admin_token = Some("the-operator-token-0123".into());
        })
        .start()
        .await;
    browser.open(&guarded.url("/")).await;
    browser.open_panel_tab("hooks").await;
    browser.replay_recorded(50).await;
    browser.wait_replayed().await;
    let shown = browser.replay_shown().await;
    assert!(
        shown["status"]
            .as_str()
            .unwrap()
            .starts_with("Replaying recorded traffic needs the admin token (admin_token)"),
        "{shown:#}"
    );
    assert_eq!(
        browser.hidden(SIGN_IN).await,
        json!(true),
        "the operator's token is no reason to sign in"
    );
    guarded.shutdown().await;
}
