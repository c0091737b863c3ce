//! Several conversations on the page: the single conversation an older page kept becomes the
//! first one, New / switch / rename / delete, each with its own history (checked against what the
//! upstream received), all kept across a reload, exports downloaded as JSON and Markdown, a
//! phone-sized screen; and the dark theme.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use super::chromium::Chromium;
use super::driver::Page;
use super::firefox::Firefox;
use super::hookwire_page::*;
use crate::agent::workspace;
use crate::common::*;

/// The file `name` in `dir` once `complete` says its text is whole (a download is written in
/// pieces), or a failure that lists what the folder holds.
async fn downloaded(dir: &Path, name: &str, complete: impl Fn(&str) -> bool) -> String {
    let path = dir.join(name);
    let whole = |path: &Path| {
        std::fs::read_to_string(path)
            .ok()
            .filter(|text| complete(text))
    };
    let found = eventually(Duration::from_secs(15), || async { whole(&path).is_some() }).await;
    let names: Vec<_> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name())
                .collect()
        })
        .unwrap_or_default();
    assert!(found, "{name} was downloaded; the folder holds {names:?}");
    whole(&path).unwrap()
}

/// The user messages of the last request the upstream received.
fn last_inputs(upstream: &FakeUpstream) -> Vec<String> {
    upstream
        .requests()
        .pop()
        .unwrap()
        .messages()
        .into_iter()
        .filter(|(role, _)| role == "user")
        .map(|(_, content)| content)
        .collect()
}

#[tokio::test]
async fn conversations_switch_survive_reload_and_export_in_chromium() {
    let Some(mut browser) = Chromium::launch().await else {
        return;
    };
    conversations_switch_survive_reload_and_export(&mut browser, "chromium").await;
}

#[tokio::test]
async fn conversations_switch_survive_reload_and_export_in_firefox() {
    let Some(mut browser) = Firefox::launch().await else {
        return;
    };
    conversations_switch_survive_reload_and_export(&mut browser, "firefox").await;
}

async fn conversations_switch_survive_reload_and_export(browser: &mut impl Page, name: &str) {
    let upstream = FakeUpstream::start().await;
    let server = TestServer::builder()
        .workspace(workspace())
        .upstream(&upstream)
        .start()
        .await;
    browser.open(&server.url("/")).await;
    // Tools off: one upstream request per chat, its messages the history plus the input.
    browser.toggle_tools().await;

    // What a page from before conversations kept: one history, one transcript.
    browser
        .eval(
            r#"(() => { localStorage.clear();
                localStorage.setItem('hookwire.tools', 'false');
                localStorage.setItem('hookwire.history', JSON.stringify([{role: 'user', content: 'old question'}, {role: 'assistant', content: 'old answer'}]));
                localStorage.setItem('hookwire.transcript', JSON.stringify([{kind: 'user', text: 'old question'}, {kind: 'assistant', text: 'old answer'}])); })()"#,
        )
        .await;
    browser.reload_and_wait().await;
    assert_eq!(
        browser.chat_titles().await,
        json!([["old question"], "old question"]),
        "the old conversation is the first one"
    );
    assert_eq!(
        [
            browser.first_text(USER_MESSAGE).await,
            browser.local("hookwire.history").await,
            browser.local("hookwire.transcript").await
        ],
        [json!("old question"), Value::Null, Value::Null],
        "it is on screen, and the old keys are gone"
    );
    upstream.push(Reply::text(&["Alpha answer."]));
    browser.send("alpha question").await;
    browser.wait_answers(2).await;
    assert_eq!(
        last_inputs(&upstream),
        ["old question", "alpha question"],
        "its history went on"
    );

    // New: an empty conversation; its chat carries none of the first one.
    browser.new_chat().await;
    browser.wait_empty_chat().await;
    upstream.push(Reply::text(&["Beta answer."]));
    browser.send("beta question").await;
    browser.wait_answers(1).await;
    assert_eq!(last_inputs(&upstream), ["beta question"]);
    assert_eq!(
        browser.chat_titles().await,
        json!([["beta question", "old question"], "beta question"]),
        "named after their first message, the one used last on top"
    );

    // Switch back by clicking it: its transcript, and its history goes with the next chat.
    browser.open_chat("old question").await;
    browser.wait_answers(2).await;
    assert_eq!(
        browser.texts(USER_MESSAGE).await,
        ["old question", "alpha question"]
    );
    upstream.push(Reply::text(&["Gamma answer."]));
    browser.send("gamma question").await;
    browser.wait_answers(3).await;
    assert_eq!(
        last_inputs(&upstream),
        ["old question", "alpha question", "gamma question"],
        "nothing of the other conversation"
    );

    // A reload: the same conversation on screen, both in the list.
    browser.reload_and_wait().await;
    assert_eq!(
        browser.chat_titles().await,
        json!([["old question", "beta question"], "old question"])
    );
    assert_eq!(browser.count(ANSWER).await, json!(3));

    // Rename from the keyboard: the title field takes the focus with its text selected.
    browser.start_rename().await;
    browser
        .wait_for(
            "document.activeElement && document.activeElement.classList.contains('rename-input')",
        )
        .await;
    browser.type_keys_and_enter("Renamed talk").await;
    browser
        .wait_for("document.getElementById('conversation-title').textContent === 'Renamed talk'")
        .await;
    browser.reload_and_wait().await;
    assert_eq!(
        browser.chat_titles().await,
        json!([["Renamed talk", "beta question"], "Renamed talk"]),
        "the name survives a reload"
    );

    // Export: both files land in the downloads folder; the JSON holds the history.
    browser.export_as("json").await;
    let text = downloaded(browser.downloads(), "renamed-talk.json", |t| {
        serde_json::from_str::<Value>(t).is_ok()
    })
    .await;
    let exported: Value = serde_json::from_str(&text).unwrap();
    let history = browser.stored("history").await;
    assert_eq!(exported["messages"], history, "{exported}");
    assert_eq!(
        history.as_array().unwrap().len(),
        6,
        "old, alpha and gamma, each asked and answered"
    );
    assert_eq!(exported["title"], "Renamed talk");
    assert_eq!(exported["format"], "hookwire.conversation");
    assert_eq!(exported["model"], "fake-model");
    assert_eq!(exported["transcript"][0]["text"], "old question");
    browser.export_as("md").await;
    let markdown = downloaded(browser.downloads(), "renamed-talk.md", |t| {
        t.contains("Gamma answer.")
    })
    .await;
    assert!(markdown.starts_with("# Renamed talk\n"), "{markdown}");
    for part in [
        "## You\n\nold question",
        "## Assistant\n\nAlpha answer.",
        "## You\n\ngamma question",
    ] {
        assert!(markdown.contains(part), "{part:?} not in:\n{markdown}");
    }
    assert!(!markdown.contains("beta"), "{markdown}");

    // Delete asks once more, then the other conversation takes its place.
    browser.delete_chat().await;
    assert_eq!(
        browser.chat_titles().await,
        json!([["Renamed talk", "beta question"], "Renamed talk"]),
        "one click only asks"
    );
    browser.delete_chat().await;
    browser.wait_answers(1).await;
    assert_eq!(
        browser.chat_titles().await,
        json!([["beta question"], "beta question"])
    );
    let keys = browser.local_keys("hookwire.conversation.").await;
    assert_eq!(
        keys.as_array().map(Vec::len),
        Some(2),
        "the deleted one's keys are gone: beta's history and transcript are left: {keys}"
    );

    // A phone-sized screen: the panel opens over the chat, fits, and a pick closes it.
    browser.set_viewport(390, 800).await;
    browser.reload_and_wait().await;
    assert_eq!(browser.hidden("panel").await, json!(true));
    browser.open_panel_tab("conversations").await;
    let fits = browser
        .eval("(() => { const p = document.getElementById('panel').getBoundingClientRect(); return !document.getElementById('panel').hidden && document.documentElement.scrollWidth <= 390 && p.right <= 390 && p.top >= document.querySelector('header').getBoundingClientRect().bottom; })()")
        .await;
    assert_eq!(fits, json!(true), "the open panel fits the phone's screen");
    browser.screenshot(&format!("{name}-phone-chats.png")).await;
    browser.new_chat().await;
    browser.wait_empty_chat().await;
    assert_eq!(
        browser.hidden("panel").await,
        json!(true),
        "New on a phone closes the panel"
    );
    browser.toggle_panel().await;
    browser.open_chat("beta question").await;
    browser.wait_answers(1).await;
    assert_eq!(
        (
            browser.hidden("panel").await,
            browser.first_text(USER_MESSAGE).await
        ),
        (json!(true), json!("beta question")),
        "picking a conversation on a phone closes the panel"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn new_switch_rename_and_delete_while_a_reply_streams_in_chromium() {
    let Some(mut browser) = Chromium::launch().await else {
        return;
    };
    new_switch_rename_and_delete_while_a_reply_streams(&mut browser).await;
}

#[tokio::test]
async fn new_switch_rename_and_delete_while_a_reply_streams_in_firefox() {
    let Some(mut browser) = Firefox::launch().await else {
        return;
    };
    new_switch_rename_and_delete_while_a_reply_streams(&mut browser).await;
}

/// While a reply streams, Rename works at once; New, another conversation and Delete stop the
/// reply first (one chat runs per connection), its partial answer kept in its own conversation,
/// and the page goes on without a `busy` error.
async fn new_switch_rename_and_delete_while_a_reply_streams(browser: &mut impl Page) {
    let upstream = FakeUpstream::start().await;
    let server = TestServer::builder()
        .workspace(workspace())
        .upstream(&upstream)
        .start()
        .await;
    browser.open(&server.url("/")).await;
    browser.toggle_tools().await;
    let controls = "['new-chat', 'rename-conversation', 'delete-conversation'].map(id => document.getElementById(id).disabled).concat([document.getElementById('busy-note').hidden])";

    // Rename while it streams: at once, and the reply goes on.
    upstream.push(Reply::endless());
    browser.send("first question").await;
    browser.wait_streaming(1, "tick").await;
    assert_eq!(
        browser.eval(controls).await,
        json!([false, false, false, false])
    );
    browser.rename_to("Streaming one").await;
    assert_eq!(
        browser.chat_titles().await,
        json!([["Streaming one"], "Streaming one"])
    );
    assert_eq!(
        browser.state().await,
        json!("running"),
        "the reply still streams"
    );

    // New: the reply stops, what it wrote stays in its conversation, the new one is on screen.
    browser.new_chat().await;
    browser.wait_empty_chat().await;
    assert_eq!(
        browser.chat_titles().await,
        json!([["New conversation", "Streaming one"], "New conversation"])
    );
    let kept = browser.history_of("Streaming one").await;
    assert_eq!(kept[0], json!(["user", "first question"]), "{kept}");
    assert_eq!(kept[1][0], "assistant", "{kept}");
    assert!(kept[1][1].as_str().unwrap().starts_with("tick"), "{kept}");
    assert_eq!(kept.as_array().unwrap().len(), 2, "{kept}");
    // The new conversation chats at once: the server's chat had ended (no `busy`).
    upstream.push(Reply::text(&["Second answer."]));
    browser.send("second question").await;
    browser.wait_answers(1).await;
    assert_eq!(last_inputs(&upstream), ["second question"]);

    // Another conversation while it streams: the same, and back again shows both partial answers.
    browser.open_chat("Streaming one").await;
    browser.wait_chat_starting("first question").await;
    upstream.push(Reply::endless());
    browser.send("third question").await;
    browser.wait_streaming(2, "tick").await;
    browser.open_chat("second question").await;
    browser.wait_chat_starting("second question").await;
    let kept = browser.history_of("Streaming one").await;
    let roles: Vec<&str> = kept
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m[0].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant"], "{kept}");
    assert_eq!(kept[2][1], "third question");
    assert!(kept[3][1].as_str().unwrap().starts_with("tick"), "{kept}");

    // Delete while it streams: the reply stops, then the conversation and its keys are gone.
    browser.open_chat("Streaming one").await;
    browser.wait_answers(2).await;
    let id = browser.current_id().await;
    upstream.push(Reply::endless());
    browser.send("fourth question").await;
    browser.wait_streaming(3, "tick").await;
    browser.arm_delete().await;
    browser.delete_chat().await;
    browser.wait_chat_starting("second question").await;
    assert_eq!(
        browser.chat_titles().await,
        json!([["second question"], "second question"])
    );
    assert_eq!(
        browser.local_keys(id.as_str().unwrap()).await,
        json!([]),
        "nothing of the deleted conversation is left"
    );
    upstream.push(Reply::text(&["Fifth answer."]));
    browser.send("fifth question").await;
    browser.wait_answers(2).await;
    assert_eq!(
        last_inputs(&upstream),
        ["second question", "fifth question"]
    );
    assert_eq!(
        browser.count(".toast.error").await,
        json!(0),
        "no chat was refused as busy"
    );
    server.shutdown().await;
}

/// The page follows the system's dark setting: dark background, light text, readable bubbles.
#[tokio::test]
async fn the_page_follows_a_dark_system_setting_in_chromium() {
    let Some(mut browser) = Chromium::launch().await else {
        return;
    };
    let server = TestServer::builder().workspace(workspace()).start().await;
    browser.open(&server.url("/")).await;
    let colours = "(() => { const s = (q) => getComputedStyle(document.querySelector(q)); return [s('body').backgroundColor, s('body').color, s('#composer .composer-box').backgroundColor]; })()";
    assert_eq!(
        browser.eval(colours).await,
        json!([
            "rgb(255, 255, 255)",
            "rgb(31, 35, 40)",
            "rgb(255, 255, 255)"
        ])
    );
    browser
        .call(
            "Emulation.setEmulatedMedia",
            json!({"features": [{"name": "prefers-color-scheme", "value": "dark"}]}),
        )
        .await;
    assert_eq!(
        browser.eval(colours).await,
        json!(["rgb(13, 17, 23)", "rgb(230, 237, 243)", "rgb(13, 17, 23)"])
    );
    browser.send("hello").await;
    browser.wait_answer().await;
    browser.screenshot("chromium-dark.png").await;
    server.shutdown().await;
}
