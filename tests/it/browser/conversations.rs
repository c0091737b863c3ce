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
use crate::agent::workspace;
use crate::common::*;

/// The current conversation's stored `name` (history, transcript, …), as JSON text or null.
pub fn stored(name: &str) -> String {
    format!("localStorage.getItem('hookwire.conversation.' + JSON.parse(localStorage.getItem('hookwire.current')) + '.{name}')")
}

/// The titles in the Chats list, top first, and the title in the header.
const TITLES: &str = "[Array.from(document.querySelectorAll('#conversations .title')).map(e => e.textContent), document.getElementById('conversation-title').textContent]";

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
    browser
        .eval("document.getElementById('tools-switch').click()")
        .await;
    let idle_with = |answers: usize| {
        format!("document.body.dataset.state === 'idle' && document.querySelectorAll('.msg.assistant').length === {answers}")
    };

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
        browser.eval(TITLES).await,
        json!([["old question"], "old question"]),
        "the old conversation is the first one"
    );
    assert_eq!(
        browser
            .eval("[document.querySelector('.msg.user').innerText, localStorage.getItem('hookwire.history'), localStorage.getItem('hookwire.transcript')]")
            .await,
        json!(["old question", null, null]),
        "it is on screen, and the old keys are gone"
    );
    upstream.push(Reply::text(&["Alpha answer."]));
    browser.type_and_enter("alpha question").await;
    browser.wait_for(&idle_with(2)).await;
    assert_eq!(
        last_inputs(&upstream),
        ["old question", "alpha question"],
        "its history went on"
    );

    // New: an empty conversation; its chat carries none of the first one.
    browser
        .eval("document.getElementById('new-chat').click()")
        .await;
    browser
        .wait_for("document.querySelectorAll('.msg').length === 0 && !!document.querySelector('#transcript .empty')")
        .await;
    upstream.push(Reply::text(&["Beta answer."]));
    browser.type_and_enter("beta question").await;
    browser.wait_for(&idle_with(1)).await;
    assert_eq!(last_inputs(&upstream), ["beta question"]);
    assert_eq!(
        browser.eval(TITLES).await,
        json!([["beta question", "old question"], "beta question"]),
        "named after their first message, the one used last on top"
    );

    // Switch back by clicking it: its transcript, and its history goes with the next chat.
    browser
        .eval("Array.from(document.querySelectorAll('#conversations .open')).find(b => b.innerText.includes('old question')).click()")
        .await;
    browser.wait_for(&idle_with(2)).await;
    assert_eq!(
        browser
            .eval("Array.from(document.querySelectorAll('.msg.user')).map(e => e.innerText)")
            .await,
        json!(["old question", "alpha question"])
    );
    upstream.push(Reply::text(&["Gamma answer."]));
    browser.type_and_enter("gamma question").await;
    browser.wait_for(&idle_with(3)).await;
    assert_eq!(
        last_inputs(&upstream),
        ["old question", "alpha question", "gamma question"],
        "nothing of the other conversation"
    );

    // A reload: the same conversation on screen, both in the list.
    browser.reload_and_wait().await;
    assert_eq!(
        browser.eval(TITLES).await,
        json!([["old question", "beta question"], "old question"])
    );
    assert_eq!(
        browser
            .eval("document.querySelectorAll('.msg.assistant').length")
            .await,
        json!(3)
    );

    // Rename from the keyboard: the title field takes the focus with its text selected.
    browser
        .eval("document.getElementById('rename-conversation').click()")
        .await;
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
        browser.eval(TITLES).await,
        json!([["Renamed talk", "beta question"], "Renamed talk"]),
        "the name survives a reload"
    );

    // Export: both files land in the downloads folder; the JSON holds the history.
    browser
        .eval("document.getElementById('export-json').click()")
        .await;
    let text = downloaded(browser.downloads(), "renamed-talk.json", |t| {
        serde_json::from_str::<Value>(t).is_ok()
    })
    .await;
    let exported: Value = serde_json::from_str(&text).unwrap();
    let history: Value =
        serde_json::from_str(browser.eval(&stored("history")).await.as_str().unwrap()).unwrap();
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
    browser
        .eval("document.getElementById('export-md').click()")
        .await;
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
    browser
        .eval("document.getElementById('delete-conversation').click()")
        .await;
    assert_eq!(
        browser.eval(TITLES).await,
        json!([["Renamed talk", "beta question"], "Renamed talk"]),
        "one click only asks"
    );
    browser
        .eval("document.getElementById('delete-conversation').click()")
        .await;
    browser.wait_for(&idle_with(1)).await;
    assert_eq!(
        browser.eval(TITLES).await,
        json!([["beta question"], "beta question"])
    );
    assert_eq!(
        browser
            .eval("Object.keys(localStorage).filter(k => k.startsWith('hookwire.conversation.')).length")
            .await,
        json!(2),
        "the deleted one's keys are gone: beta's history and transcript are left"
    );

    // A phone-sized screen: the panel opens over the chat, fits, and a pick closes it.
    browser.set_viewport(390, 800).await;
    browser.reload_and_wait().await;
    assert_eq!(
        browser
            .eval("document.getElementById('panel').hidden")
            .await,
        json!(true)
    );
    browser
        .eval("(() => { document.getElementById('toggle-panel').click(); document.getElementById('tab-conversations').click(); })()")
        .await;
    let fits = browser
        .eval("(() => { const p = document.getElementById('panel').getBoundingClientRect(); return !document.getElementById('panel').hidden && document.documentElement.scrollWidth <= 390 && p.right <= 390 && p.top >= document.querySelector('header').getBoundingClientRect().bottom; })()")
        .await;
    assert_eq!(fits, json!(true), "the open panel fits the phone's screen");
    browser.screenshot(&format!("{name}-phone-chats.png")).await;
    browser
        .eval("document.getElementById('new-chat').click()")
        .await;
    browser
        .wait_for("document.querySelectorAll('.msg').length === 0 && document.getElementById('panel').hidden")
        .await;
    browser
        .eval("(() => { document.getElementById('toggle-panel').click(); document.querySelector('#conversations .open:not([aria-current])').click(); })()")
        .await;
    browser.wait_for(&idle_with(1)).await;
    assert_eq!(
        browser
            .eval("[document.getElementById('panel').hidden, document.querySelector('.msg.user').innerText]")
            .await,
        json!([true, "beta question"]),
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

/// The history conversation `title` keeps, as `[role, content]` pairs.
fn history_of(title: &str) -> String {
    format!(
        "(() => {{ const meta = JSON.parse(localStorage.getItem('hookwire.conversations')).find(m => m.title === {title:?});
            return meta && JSON.parse(localStorage.getItem('hookwire.conversation.' + meta.id + '.history')).map(m => [m.role, m.content]); }})()"
    )
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
    browser
        .eval("document.getElementById('tools-switch').click()")
        .await;
    let streaming = |answers: usize| {
        format!("document.body.dataset.state === 'running' && document.querySelectorAll('.msg.assistant').length === {answers} && Array.from(document.querySelectorAll('.msg.assistant')).pop().innerText.includes('tick')")
    };
    let controls = "['new-chat', 'rename-conversation', 'delete-conversation'].map(id => document.getElementById(id).disabled).concat([document.getElementById('busy-note').hidden])";

    // Rename while it streams: at once, and the reply goes on.
    upstream.push(Reply::endless());
    browser.type_and_enter("first question").await;
    browser.wait_for(&streaming(1)).await;
    assert_eq!(
        browser.eval(controls).await,
        json!([false, false, false, false])
    );
    browser
        .eval("document.getElementById('rename-conversation').click()")
        .await;
    browser
        .eval("(() => { const i = document.querySelector('.rename-input'); i.value = 'Streaming one'; i.form.requestSubmit(); })()")
        .await;
    assert_eq!(
        browser.eval(TITLES).await,
        json!([["Streaming one"], "Streaming one"])
    );
    assert_eq!(
        browser.eval("document.body.dataset.state").await,
        json!("running"),
        "the reply still streams"
    );

    // New: the reply stops, what it wrote stays in its conversation, the new one is on screen.
    browser
        .eval("document.getElementById('new-chat').click()")
        .await;
    browser
        .wait_for("document.body.dataset.state === 'idle' && document.querySelectorAll('.msg').length === 0 && !!document.querySelector('#transcript .empty')")
        .await;
    assert_eq!(
        browser.eval(TITLES).await,
        json!([["New conversation", "Streaming one"], "New conversation"])
    );
    let kept = browser.eval(&history_of("Streaming one")).await;
    assert_eq!(kept[0], json!(["user", "first question"]), "{kept}");
    assert_eq!(kept[1][0], "assistant", "{kept}");
    assert!(kept[1][1].as_str().unwrap().starts_with("tick"), "{kept}");
    assert_eq!(kept.as_array().unwrap().len(), 2, "{kept}");
    // The new conversation chats at once: the server's chat had ended (no `busy`).
    upstream.push(Reply::text(&["Second answer."]));
    browser.type_and_enter("second question").await;
    browser
        .wait_for("document.body.dataset.state === 'idle' && document.querySelectorAll('.msg.assistant').length === 1")
        .await;
    assert_eq!(last_inputs(&upstream), ["second question"]);

    // Another conversation while it streams: the same, and back again shows both partial answers.
    browser
        .eval("Array.from(document.querySelectorAll('#conversations .open')).find(b => b.innerText.includes('Streaming one')).click()")
        .await;
    browser
        .wait_for("document.body.dataset.state === 'idle' && document.querySelector('.msg.user')?.innerText === 'first question'")
        .await;
    upstream.push(Reply::endless());
    browser.type_and_enter("third question").await;
    browser.wait_for(&streaming(2)).await;
    browser
        .eval("Array.from(document.querySelectorAll('#conversations .open')).find(b => b.innerText.includes('second question')).click()")
        .await;
    browser
        .wait_for("document.body.dataset.state === 'idle' && document.querySelector('.msg.user')?.innerText === 'second question'")
        .await;
    let kept = browser.eval(&history_of("Streaming one")).await;
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
    browser
        .eval("Array.from(document.querySelectorAll('#conversations .open')).find(b => b.innerText.includes('Streaming one')).click()")
        .await;
    browser
        .wait_for("document.body.dataset.state === 'idle' && document.querySelectorAll('.msg.assistant').length === 2")
        .await;
    let id = browser
        .eval("JSON.parse(localStorage.getItem('hookwire.current'))")
        .await;
    upstream.push(Reply::endless());
    browser.type_and_enter("fourth question").await;
    browser.wait_for(&streaming(3)).await;
    browser
        .eval("(() => { const d = document.getElementById('delete-conversation'); d.focus(); d.click(); d.click(); })()")
        .await;
    browser
        .wait_for("document.body.dataset.state === 'idle' && document.querySelector('.msg.user')?.innerText === 'second question'")
        .await;
    assert_eq!(
        browser.eval(TITLES).await,
        json!([["second question"], "second question"])
    );
    assert_eq!(
        browser
            .eval(&format!(
                "Object.keys(localStorage).filter(k => k.includes({id}))"
            ))
            .await,
        json!([]),
        "nothing of the deleted conversation is left"
    );
    upstream.push(Reply::text(&["Fifth answer."]));
    browser.type_and_enter("fifth question").await;
    browser
        .wait_for("document.body.dataset.state === 'idle' && document.querySelectorAll('.msg.assistant').length === 2")
        .await;
    assert_eq!(
        last_inputs(&upstream),
        ["second question", "fifth question"]
    );
    assert_eq!(
        browser
            .eval("document.querySelectorAll('.toast.error').length")
            .await,
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
    let colours = "(() => { const s = (q) => getComputedStyle(document.querySelector(q)); return [s('body').backgroundColor, s('body').color, s('#composer textarea').backgroundColor]; })()";
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
    browser.type_and_enter("hello").await;
    browser
        .wait_for(
            "document.body.dataset.state === 'idle' && !!document.querySelector('.msg.assistant')",
        )
        .await;
    browser.screenshot("chromium-dark.png").await;
    server.shutdown().await;
}
