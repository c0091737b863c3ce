//! What a person meets on the page beside the protocol: the transcript and the composer in one
//! column at every width, Markdown from real models, feedback from Send to the first frame, the
//! approval card after a decision, Retry / Regenerate / Edit, the theme switch, the favicon,
//! accessibility (axe-core on every view), and the screenshots of the README and docs/.

use serde_json::{json, Value};

use super::chromium::Chromium;
use super::driver::Page;
use super::firefox::Firefox;
use crate::agent::workspace;
use crate::common::*;

/// The bounding boxes of the transcript, the composer and (when shown) the side panel.
const BOXES: &str = "(() => { const r = (id) => { const e = document.getElementById(id); if (!e || e.hidden) return null; const b = e.getBoundingClientRect(); return {left: Math.round(b.left), right: Math.round(b.right), top: Math.round(b.top), bottom: Math.round(b.bottom)}; };
    return {transcript: r('transcript'), composer: r('composer'), panel: r('panel'), width: document.documentElement.clientWidth, scroll: document.documentElement.scrollWidth, height: window.innerHeight}; })()";

#[tokio::test]
async fn transcript_and_composer_share_one_column_in_chromium() {
    let Some(mut browser) = Chromium::launch().await else {
        return;
    };
    transcript_and_composer_share_one_column(&mut browser).await;
}

#[tokio::test]
async fn transcript_and_composer_share_one_column_in_firefox() {
    let Some(mut browser) = Firefox::launch().await else {
        return;
    };
    transcript_and_composer_share_one_column(&mut browser).await;
}

/// At 1280, 1920 and phone width, with the side panel shown (desktop) or not (phone): the
/// composer sits under the transcript, left and right edges equal, never under the panel.
async fn transcript_and_composer_share_one_column(browser: &mut impl Page) {
    let server = TestServer::builder().workspace(workspace()).start().await;
    browser.open(&server.url("/")).await;
    browser.type_and_enter("hello").await;
    browser
        .wait_for(
            "document.body.dataset.state === 'idle' && !!document.querySelector('.msg.assistant')",
        )
        .await;
    for (width, height) in [(1280, 800), (1920, 1080), (390, 800)] {
        browser.set_viewport(width, height).await;
        browser.reload_and_wait().await;
        let boxes: Value = browser.eval(BOXES).await;
        let (t, c) = (&boxes["transcript"], &boxes["composer"]);
        assert_eq!(
            (&t["left"], &t["right"]),
            (&c["left"], &c["right"]),
            "at {width}: {boxes}"
        );
        assert!(
            c["top"].as_i64() >= t["bottom"].as_i64(),
            "the composer is under the transcript at {width}: {boxes}"
        );
        assert!(
            c["bottom"].as_i64() <= boxes["height"].as_i64(),
            "the composer is on screen at {width}: {boxes}"
        );
        assert!(
            boxes["scroll"].as_i64() <= boxes["width"].as_i64(),
            "nothing overflows sideways at {width}: {boxes}"
        );
        if width > 700 {
            let panel = &boxes["panel"];
            assert!(panel.is_object(), "the panel is open on a desktop: {boxes}");
            assert!(
                c["right"].as_i64() <= panel["left"].as_i64(),
                "the composer does not reach under the panel at {width}: {boxes}"
            );
        } else {
            assert!(
                c["right"].as_i64().unwrap() - c["left"].as_i64().unwrap() > 300,
                "{boxes}"
            );
        }
    }
    server.shutdown().await;
}

/// Markdown as real models write it, streamed in small pieces.
const RICH: &str = "| file | lines |\n|---|---:|\n| a.rs | 12 |\n\n- one\n  - one.a\n- two\n\n1. first\n\n   ```sh\n   ls -la\n   ```\n\n2. second\n\n~~old~~ new\n\n````markdown\n```rust\nfn main() {}\n```\n````\n";

#[tokio::test]
async fn markdown_from_real_models_in_chromium() {
    let Some(mut browser) = Chromium::launch().await else {
        return;
    };
    markdown_from_real_models(&mut browser).await;
}

#[tokio::test]
async fn markdown_from_real_models_in_firefox() {
    let Some(mut browser) = Firefox::launch().await else {
        return;
    };
    markdown_from_real_models(&mut browser).await;
}

/// A table, a nested list, an ordered list across a code block, strikethrough and a fence of
/// four backticks render as HTML elements (also after a reload); code blocks have a Copy button.
async fn markdown_from_real_models(browser: &mut impl Page) {
    let upstream = FakeUpstream::start().await;
    let pieces: Vec<String> = RICH
        .chars()
        .collect::<Vec<_>>()
        .chunks(7)
        .map(|c| c.iter().collect())
        .collect();
    upstream.push(Reply::text(
        &pieces.iter().map(String::as_str).collect::<Vec<_>>(),
    ));
    let server = TestServer::builder()
        .workspace(workspace())
        .upstream(&upstream)
        .start()
        .await;
    browser.open(&server.url("/")).await;
    browser
        .eval("document.getElementById('tools-switch').click()")
        .await;
    browser.type_and_enter("show me markdown").await;
    browser
        .wait_for(
            "document.body.dataset.state === 'idle' && !!document.querySelector('.msg.assistant')",
        )
        .await;
    let shape = "(() => { const a = document.querySelector('.msg.assistant'); return {
        cells: Array.from(a.querySelectorAll('table td')).map(e => e.textContent),
        nested: Array.from(a.querySelectorAll('ul ul li')).map(e => e.textContent),
        ordered: Array.from(a.querySelectorAll('ol')).map(o => [o.start, o.children.length]),
        codeInList: a.querySelector('ol li pre code')?.textContent,
        strike: a.querySelector('s')?.textContent,
        fence: Array.from(a.querySelectorAll('pre code')).map(c => c.textContent),
        copies: a.querySelectorAll('.code-block > button.copy-code').length,
        raw: a.innerText.includes('|---') || a.innerText.includes('~~') }; })()";
    let expected = json!({
        "cells": ["a.rs", "12"],
        "nested": ["one.a"],
        "ordered": [[1, 2]],
        "codeInList": "ls -la\n",
        "strike": "old",
        "fence": ["ls -la\n", "```rust\nfn main() {}\n```\n"],
        "copies": 2,
        "raw": false,
    });
    assert_eq!(browser.eval(shape).await, expected);
    // Copy puts the block's text on the clipboard and says so.
    browser
        .eval("document.querySelectorAll('.copy-code')[1].click()")
        .await;
    browser
        .wait_for("document.querySelectorAll('.copy-code')[1].dataset.copied === 'true' && document.querySelectorAll('.copy-code')[1].textContent === 'Copied'")
        .await;
    browser.reload_and_wait().await;
    assert_eq!(
        browser.eval(shape).await,
        expected,
        "the same after a reload"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn working_indicator_then_streaming_cursor_in_chromium() {
    let Some(mut browser) = Chromium::launch().await else {
        return;
    };
    working_indicator_then_streaming_cursor(&mut browser).await;
}

#[tokio::test]
async fn working_indicator_then_streaming_cursor_in_firefox() {
    let Some(mut browser) = Firefox::launch().await else {
        return;
    };
    working_indicator_then_streaming_cursor(&mut browser).await;
}

/// While the upstream has not answered, a working indicator shows under the question; once text
/// streams, the indicator is gone and the answer has a cursor; at the end neither is left.
async fn working_indicator_then_streaming_cursor(browser: &mut impl Page) {
    let upstream = FakeUpstream::start().await;
    let gate = Gate::new();
    upstream.push(Reply::After(
        gate.clone(),
        Box::new(Reply::text(&["Late answer."])),
    ));
    upstream.push(Reply::endless());
    let server = TestServer::builder()
        .workspace(workspace())
        .upstream(&upstream)
        .start()
        .await;
    browser.open(&server.url("/")).await;
    browser
        .eval("document.getElementById('tools-switch').click()")
        .await;
    browser.type_and_enter("take your time").await;
    let waiting = browser
        .eval("(() => { const w = document.querySelector('#transcript .working'); return w && {text: w.innerText, role: w.getAttribute('role'), last: w === document.getElementById('transcript').lastElementChild, shown: w.getBoundingClientRect().height > 0, answers: document.querySelectorAll('.msg.assistant').length}; })()")
        .await;
    assert_eq!(
        waiting,
        json!({"text": "Working…", "role": "status", "last": true, "shown": true, "answers": 0}),
        "the indicator shows before the upstream answered"
    );
    assert!(upstream.requests().len() <= 1);
    gate.open();
    browser
        .wait_for(
            "document.body.dataset.state === 'idle' && !!document.querySelector('.msg.assistant')",
        )
        .await;
    assert_eq!(
        browser
            .eval("[document.querySelectorAll('.working').length, document.querySelectorAll('.streaming').length, document.querySelector('.msg.assistant').innerText]")
            .await,
        json!([0, 0, "Late answer."])
    );
    browser.type_and_enter("go on forever").await;
    browser
        .wait_for(
            "(document.querySelectorAll('.msg.assistant')[1]?.innerText || '').includes('tick')",
        )
        .await;
    assert_eq!(
        browser
            .eval("[document.querySelectorAll('.working').length, document.querySelectorAll('.msg.assistant')[1].classList.contains('streaming'), getComputedStyle(document.querySelector('.msg.assistant.streaming > :last-child'), '::after').content]")
            .await,
        json!([0, true, "\"\""]),
        "a cursor while it streams"
    );
    browser
        .eval("document.getElementById('stop').click()")
        .await;
    browser
        .wait_for("document.body.dataset.state === 'idle' && document.querySelectorAll('.streaming, .working').length === 0")
        .await;
    server.shutdown().await;
}

/// The empty state offers prompts the demo answers; one click sends one.
#[tokio::test]
async fn starter_prompts_on_the_empty_state_in_chromium() {
    let Some(mut browser) = Chromium::launch().await else {
        return;
    };
    let server = TestServer::builder()
        .workspace(crate::demo::workspace())
        .skills(crate::demo::skills_dir())
        .start()
        .await;
    browser.open(&server.url("/")).await;
    assert_eq!(
        browser
            .eval("Array.from(document.querySelectorAll('.empty button.starter')).map(b => b.innerText)")
            .await,
        json!(["list the files", "read README.md", "search for TODO"])
    );
    browser
        .eval("document.querySelector('.empty button.starter').click()")
        .await;
    browser
        .wait_for(
            "document.body.dataset.state === 'idle' && !!document.querySelector('.msg.assistant')",
        )
        .await;
    let shown = browser
        .eval("[document.querySelector('.msg.user').innerText, document.querySelector('.tool-card summary').innerText, document.querySelector('.msg.assistant').innerText, document.querySelectorAll('.empty').length]")
        .await;
    assert_eq!(shown[0], "list the files");
    assert!(shown[1].as_str().unwrap().contains("list_dir"), "{shown}");
    assert!(
        shown[2]
            .as_str()
            .unwrap()
            .starts_with("The workspace has 4 entries"),
        "{shown}"
    );
    assert_eq!(shown[3], 0);
    server.shutdown().await;
}

#[tokio::test]
async fn favicon_theme_banner_and_small_things_in_chromium() {
    let Some(mut browser) = Chromium::launch().await else {
        return;
    };
    favicon_theme_banner_and_small_things(&mut browser).await;
}

#[tokio::test]
async fn favicon_theme_banner_and_small_things_in_firefox() {
    let Some(mut browser) = Firefox::launch().await else {
        return;
    };
    favicon_theme_banner_and_small_things(&mut browser).await;
}

/// The page's small things, as a person meets them: the favicon, the theme switch (kept across a
/// reload), the demo banner (dismissed for good), no export for an empty conversation, Delete
/// that disarms when the focus leaves it, the conversation controls explained while a reply
/// streams, no "0 in · 0 out" under a cancelled reply, and a reopened conversation at its bottom.
async fn favicon_theme_banner_and_small_things(browser: &mut impl Page) {
    let upstream = FakeUpstream::start().await;
    let server = TestServer::builder()
        .workspace(workspace())
        .upstream(&upstream)
        .start()
        .await;
    browser.open(&server.url("/")).await;
    let icon = browser
        .eval("(async () => { const r = await fetch('/favicon.ico'); const bitmap = await createImageBitmap(await r.blob());
            const svg = await fetch(document.querySelector('link[rel=icon]').href);
            return [r.status, r.headers.get('content-type'), bitmap.width, svg.status, svg.headers.get('content-type')]; })()")
        .await;
    assert_eq!(icon, json!([200, "image/x-icon", 32, 200, "image/svg+xml"]));

    // Theme: dark, kept across a reload; then light; then the system's again.
    let colours =
        "[getComputedStyle(document.body).backgroundColor, document.getElementById('theme').value]";
    browser
        .eval("(() => { const s = document.getElementById('theme'); s.value = 'dark'; s.dispatchEvent(new Event('change')); })()")
        .await;
    assert_eq!(
        browser.eval(colours).await,
        json!(["rgb(13, 17, 23)", "dark"])
    );
    browser.reload_and_wait().await;
    assert_eq!(
        browser.eval(colours).await,
        json!(["rgb(13, 17, 23)", "dark"]),
        "the theme survives a reload"
    );
    browser
        .eval("(() => { const s = document.getElementById('theme'); s.value = 'light'; s.dispatchEvent(new Event('change')); })()")
        .await;
    browser.reload_and_wait().await;
    assert_eq!(
        browser.eval(colours).await,
        json!(["rgb(255, 255, 255)", "light"])
    );

    // An empty conversation offers no export.
    let exports = "[document.getElementById('export-json').hidden, document.getElementById('export-md').hidden]";
    assert_eq!(browser.eval(exports).await, json!([true, true]));

    // While a reply streams, New and Delete say they stop it first; Stop before any text: no usage line.
    upstream.push(Reply::endless());
    browser
        .eval("document.getElementById('tools-switch').click()")
        .await;
    browser.type_and_enter("go on").await;
    browser
        .wait_for("(document.querySelector('.msg.assistant')?.innerText || '').includes('tick')")
        .await;
    assert_eq!(
        browser
            .eval("[document.getElementById('new-chat').title.endsWith('stops the streaming reply first; what it wrote so far is kept)'), document.getElementById('busy-note').hidden]")
            .await,
        json!([true, false])
    );
    browser
        .eval("document.getElementById('stop').click()")
        .await;
    browser
        .wait_for("document.body.dataset.state === 'idle'")
        .await;
    assert_eq!(
        browser
            .eval("[document.getElementById('new-chat').title, document.getElementById('busy-note').hidden, document.body.innerText.includes('0 in')]")
            .await,
        json!(["Start a new conversation (this one stays in the list)", true, false])
    );
    assert_eq!(browser.eval(exports).await, json!([false, false]));

    // Delete asks again, and disarms when the focus goes elsewhere.
    browser
        .eval("(() => { const d = document.getElementById('delete-conversation'); d.focus(); d.click(); })()")
        .await;
    assert_eq!(
        browser
            .eval("document.getElementById('delete-conversation').textContent")
            .await,
        json!("Delete for good?")
    );
    // Headless Firefox never gives the document focus, so no focus event fires there: the blur
    // is checked where the page has focus, the few seconds everywhere.
    let focused = browser
        .eval("(() => { document.getElementById('input').focus(); return document.hasFocus(); })()")
        .await;
    if focused == json!(true) {
        assert_eq!(
            browser
                .eval("document.getElementById('delete-conversation').textContent")
                .await,
            json!("Delete"),
            "disarmed when the focus left it"
        );
        browser
            .eval("document.getElementById('delete-conversation').click()")
            .await;
    }
    assert_eq!(
        browser
            .eval("document.getElementById('delete-conversation').textContent")
            .await,
        json!("Delete for good?")
    );
    browser
        .wait_for("document.getElementById('delete-conversation').textContent === 'Delete'")
        .await;
    assert_eq!(
        browser
            .eval("document.querySelectorAll('.msg.user').length")
            .await,
        json!(1),
        "nothing was deleted"
    );

    // A long conversation opens at its bottom.
    let long: String = (1..=80).map(|i| format!("line {i}\n\n")).collect();
    upstream.push(Reply::text(&[&long]));
    browser.type_and_enter("a long answer please").await;
    browser
        .wait_for("document.body.dataset.state === 'idle' && document.querySelectorAll('.msg.assistant').length === 2")
        .await;
    browser.reload_and_wait().await;
    browser
        .wait_for("(() => { const t = document.getElementById('transcript'); return t.scrollHeight > t.clientHeight + 200 && t.scrollTop + t.clientHeight >= t.scrollHeight - 2; })()")
        .await;
    server.shutdown().await;

    // The demo banner: dismissed, it stays away.
    let demo = TestServer::builder().workspace(workspace()).start().await;
    browser.open(&demo.url("/")).await;
    assert_eq!(
        browser
            .eval("document.getElementById('banner').hidden")
            .await,
        json!(false)
    );
    browser
        .eval("document.getElementById('dismiss-banner').click()")
        .await;
    browser.reload_and_wait().await;
    assert_eq!(
        browser
            .eval("document.getElementById('banner').hidden")
            .await,
        json!(true),
        "dismissed for good"
    );
    demo.shutdown().await;
}

/// axe-core (vendored from the npm registry in `tests/vendor/`), injected into the page.
const AXE: &str = include_str!("../../vendor/axe.min.js");

/// The serious and critical accessibility violations on the page as it is now, one line each
/// (rule, impact, the elements).
async fn axe_violations(browser: &mut impl Page) -> Vec<String> {
    if browser.eval("typeof window.axe").await != json!("object") {
        // Evaluated as a script in the page's global scope, so `window.axe` is defined.
        browser
            .eval(&format!(
                "(0, eval)({})",
                serde_json::to_string(AXE).unwrap()
            ))
            .await;
    }
    let found = browser
        .eval("(async () => { const r = await axe.run(document, {resultTypes: ['violations']});
            return r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
              .map(v => v.id + ' (' + v.impact + '): ' + v.nodes.map(n => n.target.join(' ') + ' ' + (n.failureSummary || '').replace(/\\s+/g, ' ')).join(' | ')); })()")
        .await;
    found
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn accessibility_of_every_view_in_chromium() {
    let Some(mut browser) = Chromium::launch().await else {
        return;
    };
    accessibility_of_every_view(&mut browser).await;
}

#[tokio::test]
async fn accessibility_of_every_view_in_firefox() {
    let Some(mut browser) = Firefox::launch().await else {
        return;
    };
    accessibility_of_every_view(&mut browser).await;
}

/// axe-core finds no serious or critical violation on any view: the empty chat, a chat with
/// Markdown and a tool card, an approval card, the Skills and Hooks tabs, the dark theme, a phone.
async fn accessibility_of_every_view(browser: &mut impl Page) {
    let upstream = FakeUpstream::start().await;
    let dir = crate::demo::workspace();
    let server = TestServer::builder()
        .workspace(dir)
        .upstream(&upstream)
        .config(|c| {
            c.skills_dir = crate::demo::skills_dir();
            c.agent.approval.require_approval = vec!["read_file".into()];
        })
        .start()
        .await;
    browser.set_viewport(1280, 900).await;
    browser.open(&server.url("/")).await;
    let mut found = Vec::new();
    let mut check = |view: &str, violations: Vec<String>| {
        found.extend(violations.into_iter().map(|v| format!("{view}: {v}")));
    };
    check("empty chat", axe_violations(browser).await);

    upstream.push(Reply::text(&["[NEED_TOOL] list them"]));
    upstream.push(Reply::tool_calls(&[(
        "l1",
        "list_dir",
        json!({"path":"."}),
    )]));
    upstream.push(Reply::text(&[RICH]));
    browser.type_and_enter("list the files").await;
    browser
        .wait_for(
            "document.body.dataset.state === 'idle' && !!document.querySelector('.msg.assistant')",
        )
        .await;
    browser
        .eval("document.querySelector('.tool-card summary').click()")
        .await;
    check("chat with a tool card", axe_violations(browser).await);

    upstream.push(Reply::text(&["[NEED_TOOL] read"]));
    upstream.push(Reply::tool_calls(&[(
        "r1",
        "read_file",
        json!({"path":"notes.txt"}),
    )]));
    browser.type_and_enter("read my notes").await;
    browser
        .wait_for("document.body.dataset.state === 'idle' && !!document.querySelector('.approval-card button.approve')")
        .await;
    check("approval", axe_violations(browser).await);

    for tab in ["skills", "hooks"] {
        browser
            .eval(&format!("document.getElementById('tab-{tab}').click()"))
            .await;
        if tab == "hooks" {
            browser
                .wait_for("document.getElementById('hooks').dataset.refreshes >= '1'")
                .await;
        }
        check(&format!("{tab} tab"), axe_violations(browser).await);
    }

    browser
        .eval("(() => { const s = document.getElementById('theme'); s.value = 'dark'; s.dispatchEvent(new Event('change')); })()")
        .await;
    check("dark theme", axe_violations(browser).await);

    browser.set_viewport(390, 800).await;
    browser.reload_and_wait().await;
    check("phone", axe_violations(browser).await);
    browser
        .eval("document.getElementById('toggle-panel').click()")
        .await;
    check("phone with the panel", axe_violations(browser).await);
    assert!(found.is_empty(), "{found:#?}");
    server.shutdown().await;
}

/// Every visible control is reached with Tab, in order, and shows where the focus is.
#[tokio::test]
async fn every_control_is_reached_by_keyboard_with_a_visible_focus_in_chromium() {
    let Some(mut browser) = Chromium::launch().await else {
        return;
    };
    let upstream = FakeUpstream::start().await;
    let server = TestServer::builder()
        .workspace(crate::demo::workspace())
        .upstream(&upstream)
        .skills(crate::demo::skills_dir())
        .start()
        .await;
    browser.set_viewport(1280, 900).await;
    browser.open(&server.url("/")).await;
    upstream.push(Reply::text(&["[NEED_TOOL] list them"]));
    upstream.push(Reply::tool_calls(&[(
        "l1",
        "list_dir",
        json!({"path":"."}),
    )]));
    upstream.push(Reply::text(&["Here:\n\n```sh\nls\n```\n"]));
    browser.type_and_enter("list the files").await;
    browser
        .wait_for(
            "document.body.dataset.state === 'idle' && !!document.querySelector('.msg.assistant')",
        )
        .await;
    // A name for each element, and whether its focus shows (an outline or a ring).
    browser
        .eval("window.__name = (e) => e.id ? '#' + e.id : e.tagName.toLowerCase() + '.' + (e.className || '').toString().split(' ')[0] + ':' + (e.innerText || e.value || e.getAttribute('aria-label') || '').trim().slice(0, 20)")
        .await;
    let controls = browser
        .eval("Array.from(document.querySelectorAll('button, input, select, textarea, a[href], summary, [tabindex]')).filter(e => !e.disabled && e.tabIndex >= 0 && e.getClientRects().length && getComputedStyle(e).visibility !== 'hidden').map(window.__name)")
        .await;
    browser.eval("document.activeElement.blur()").await;
    let mut reached = Vec::new();
    let mut unseen = Vec::new();
    for _ in 0..controls.as_array().unwrap().len() + 5 {
        for kind in ["keyDown", "keyUp"] {
            browser
                .call(
                    "Input.dispatchKeyEvent",
                    json!({"type": kind, "key": "Tab", "code": "Tab", "windowsVirtualKeyCode": 9}),
                )
                .await;
        }
        let at = browser
            .eval("(() => { const e = document.activeElement; const s = getComputedStyle(e); return [window.__name(e), (s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0) || s.boxShadow !== 'none']; })()")
            .await;
        let name = at[0].as_str().unwrap().to_string();
        if at[1] != json!(true) {
            unseen.push(name.clone());
        }
        if !reached.contains(&name) {
            reached.push(name);
        }
    }
    let missing: Vec<&Value> = controls
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| !reached.contains(&c.as_str().unwrap().to_string()))
        .collect();
    assert!(
        missing.is_empty(),
        "not reached with Tab: {missing:?}; reached {reached:?}"
    );
    unseen.retain(|n| n != "body.:" && !n.starts_with("body"));
    assert!(unseen.is_empty(), "focus not visible on {unseen:?}");
    server.shutdown().await;
}

#[tokio::test]
async fn retry_regenerate_and_edit_in_chromium() {
    let Some(mut browser) = Chromium::launch().await else {
        return;
    };
    retry_regenerate_and_edit(&mut browser).await;
}

#[tokio::test]
async fn retry_regenerate_and_edit_in_firefox() {
    let Some(mut browser) = Firefox::launch().await else {
        return;
    };
    retry_regenerate_and_edit(&mut browser).await;
}

/// What is on screen and in the stored history: the user messages' texts, the answers' texts,
/// the history's (role, content) pairs, and the Retry / Regenerate button.
const SHOWN: &str = "(() => { const all = (s) => Array.from(document.querySelectorAll(s)).map(e => e.innerText);
    const key = 'hookwire.conversation.' + JSON.parse(localStorage.getItem('hookwire.current')) + '.history';
    return {users: all('.msg.user'), answers: all('.msg.assistant'), errors: all('.chat-error'),
      history: JSON.parse(localStorage.getItem(key) || '[]').map(m => m.role + ': ' + m.content),
      actions: all('.fork-actions button')}; })()";

/// Retry after an upstream 500 sends the message again and the history holds it once;
/// Regenerate replaces the last answer; Edit of an earlier message forks the conversation there
/// (what came after it is gone, from the screen, the history and the next request).
async fn retry_regenerate_and_edit(browser: &mut impl Page) {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::Status(500, "model overloaded".into()));
    // No upstream retries: the 500 reaches the person, who retries.
    let server = TestServer::builder()
        .workspace(workspace())
        .upstream(&upstream)
        .config(|c| c.agent.retry.retries = 0)
        .start()
        .await;
    browser.open(&server.url("/")).await;
    browser
        .eval("document.getElementById('tools-switch').click()")
        .await;
    let idle = |answers: usize| {
        format!("document.body.dataset.state === 'idle' && document.querySelectorAll('.msg.assistant').length === {answers} && !!document.querySelector('.fork-actions')")
    };
    browser.type_and_enter("hello").await;
    browser
        .wait_for(
            "document.body.dataset.state === 'idle' && !!document.querySelector('.chat-error')",
        )
        .await;
    let failed = browser.eval(SHOWN).await;
    assert_eq!(failed["actions"], json!(["Retry"]), "{failed}");
    assert_eq!(failed["history"], json!([]));

    upstream.push(Reply::text(&["Hi there."]));
    browser
        .eval("document.querySelector('.fork-actions .retry').click()")
        .await;
    browser.wait_for(&idle(1)).await;
    assert_eq!(
        browser.eval(SHOWN).await,
        json!({"users": ["hello"], "answers": ["Hi there."], "errors": [],
               "history": ["user: hello", "assistant: Hi there."], "actions": ["Regenerate"]}),
        "after Retry the history holds one user message"
    );

    upstream.push(Reply::text(&["Hello again, differently."]));
    browser
        .eval("document.querySelector('.fork-actions .regenerate').click()")
        .await;
    browser
        .wait_for("document.body.dataset.state === 'idle' && (document.querySelector('.msg.assistant')?.innerText || '').includes('differently')")
        .await;
    assert_eq!(
        browser.eval(SHOWN).await["history"],
        json!(["user: hello", "assistant: Hello again, differently."]),
        "Regenerate replaced the last answer"
    );
    let sent = upstream.requests().pop().unwrap().messages();
    assert_eq!(
        sent.iter().filter(|(r, _)| r == "user").count(),
        1,
        "the regenerated request has the question once: {sent:?}"
    );

    upstream.push(Reply::text(&["Two."]));
    browser.type_and_enter("and a second question").await;
    browser.wait_for(&idle(2)).await;
    // Edit the first message (from the keyboard: the form's Enter sends it).
    upstream.push(Reply::text(&["Forked."]));
    browser
        .eval("document.querySelector('.msg.user .edit-message').click()")
        .await;
    browser
        .eval("(() => { const a = document.querySelector('.edit-form textarea'); a.value = ''; a.focus(); })()")
        .await;
    browser.type_keys_and_enter("hello, edited").await;
    browser.wait_for(&idle(1)).await;
    assert_eq!(
        browser.eval(SHOWN).await,
        json!({"users": ["hello, edited"], "answers": ["Forked."], "errors": [],
               "history": ["user: hello, edited", "assistant: Forked."], "actions": ["Regenerate"]}),
        "the conversation forked at the edited message"
    );
    let sent: Vec<String> = upstream
        .requests()
        .pop()
        .unwrap()
        .messages()
        .into_iter()
        .map(|(_, c)| c)
        .collect();
    assert!(
        sent.contains(&"hello, edited".to_string())
            && !sent
                .iter()
                .any(|c| c.contains("second question") || c == "hello"),
        "{sent:?}"
    );
    // After a reload the fork is what is kept.
    browser.reload_and_wait().await;
    assert_eq!(browser.eval(SHOWN).await["users"], json!(["hello, edited"]));
    server.shutdown().await;
}

/// The screenshots of the README and docs/page.md, saved as `target/browser/docs/<name>.png` and copied to `docs/`:
/// a demo conversation (`screenshot`), a call waiting for approval (`approval`), the Hooks tab
/// with meaningful hooks at every level (`hooks-tab`), a traced turn with a blocked call
/// (`trace`), the Skills tab (`skills-tab`), the dark theme (`dark`) and a phone (`phone`). The
/// folders have plain names (`…/my-project`, `…/etc/hookwire`), so no temp path shows.
#[tokio::test]
async fn readme_screenshots_in_chromium() {
    let Some(mut browser) = Chromium::launch().await else {
        return;
    };
    // A fixed, plain folder: the trust command shows the workspace's whole path.
    let base = std::env::temp_dir().join("hookwire-docs");
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(base.join("etc/hookwire")).unwrap();
    let server_hooks = base.join("etc/hookwire/hooks.yaml");
    std::fs::write(
        &server_hooks,
        "pre_tool_execution:\n  # Files named like secrets stay closed, whatever the model asks.\n  - name: no-secrets\n    matcher: read_file\n    command: 'if grep -qi secret; then echo \"files with secrets stay closed\" >&2; exit 2; fi'\n",
    )
    .unwrap();
    let project = tempfile::Builder::new()
        .prefix("my-project")
        .rand_bytes(0)
        .tempdir_in(&base)
        .unwrap();
    let root = project.path().to_path_buf();
    let demo = crate::demo::workspace();
    for entry in ["README.md", "notes.txt"] {
        std::fs::copy(demo.path().join(entry), root.join(entry)).unwrap();
    }
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::copy(demo.path().join("src/main.rs"), root.join("src/main.rs")).unwrap();
    std::fs::write(root.join("secret.txt"), "the secret").unwrap();
    std::fs::create_dir_all(root.join(".hookwire/hooks")).unwrap();
    let workspace_hooks = "post_tool_execution:\n  # An audit trail of every tool call, one JSON line each.\n  - name: audit-log\n    command: 'cat >> .hookwire/audit.jsonl'\n";
    std::fs::write(root.join(".hookwire/hooks.yaml"), workspace_hooks).unwrap();
    std::fs::write(
        root.join(".hookwire/hooks/deploy.yaml"),
        "stop:\n  - name: auto-commit\n    command: 'git commit -am wip'\n",
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        let state = base.join("state");
        std::fs::create_dir_all(&state).unwrap();
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
        let canonical = root.canonicalize().unwrap();
        let store = json!({"version": 1, "workspaces": {canonical.to_str().unwrap(): {".hookwire/hooks.yaml": sha256_hex(workspace_hooks.as_bytes())}}});
        std::fs::write(state.join("trust.json"), store.to_string()).unwrap();
        std::fs::set_permissions(
            state.join("trust.json"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
    }
    let state_dir = base.join("state");
    let server = TestServer::builder()
        .workspace(project)
        .config(move |c| {
            c.skills_dir = crate::demo::skills_dir();
            c.hooks_file = Some(server_hooks);
            c.state_dir = Some(state_dir);
            c.agent.approval.require_approval = vec!["read_file".into()];
        })
        .start()
        .await;
    let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/browser/docs");
    std::fs::create_dir_all(&out).unwrap();
    let shoot = async |browser: &mut Chromium, name: &str| {
        let bytes = browser.screenshot_png().await;
        std::fs::write(out.join(format!("{name}.png")), bytes).unwrap();
    };
    browser.set_viewport(1280, 860).await;
    browser
        .call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 1280, "height": 860, "deviceScaleFactor": 1, "mobile": false}),
        )
        .await;
    browser.open(&server.url("/")).await;
    browser
        .eval("document.getElementById('trace-switch').click()")
        .await;
    let answers = |n: usize| {
        format!("document.body.dataset.state === 'idle' && document.querySelectorAll('.msg.assistant').length === {n}")
    };
    for (n, input) in [(1, "list the files"), (2, "search for TODO")] {
        browser.type_and_enter(input).await;
        browser.wait_for(&answers(n)).await;
    }
    shoot(&mut browser, "screenshot").await;
    browser
        .eval("document.getElementById('dismiss-banner').click()")
        .await;

    browser
        .eval("(() => { const s = document.getElementById('theme'); s.value = 'dark'; s.dispatchEvent(new Event('change')); })()")
        .await;
    shoot(&mut browser, "dark").await;
    browser
        .eval("(() => { const s = document.getElementById('theme'); s.value = 'system'; s.dispatchEvent(new Event('change')); })()")
        .await;

    browser
        .eval("document.getElementById('tab-skills').click()")
        .await;
    shoot(&mut browser, "skills-tab").await;

    // A new conversation: a call waits for approval.
    browser
        .eval("(() => { document.getElementById('tab-conversations').click(); document.getElementById('new-chat').click(); })()")
        .await;
    browser.type_and_enter("read README.md").await;
    browser
        .wait_for("document.body.dataset.state === 'idle' && !!document.querySelector('.approval-card button.approve')")
        .await;
    shoot(&mut browser, "approval").await;
    browser
        .eval("document.querySelector('.approval-card button.approve').click()")
        .await;
    browser.wait_for(&answers(1)).await;

    // The guard blocks a secret; the Hooks tab counts it; the turn's timeline shows it.
    browser.type_and_enter("read secret.txt").await;
    browser.wait_for(&answers(2)).await;
    browser
        .eval("document.getElementById('tab-hooks').click()")
        .await;
    browser
        .wait_for("Array.from(document.querySelectorAll('#hooks .hook-card')).some(c => c.querySelector('.hook-name').textContent === 'no-secrets' && c.querySelector('[data-metric=blocked]')?.textContent === '1')")
        .await;
    let tab = browser
        .eval("document.getElementById('hooks').innerText")
        .await;
    let tab = tab.as_str().unwrap();
    assert!(
        tab.contains("…/etc/hookwire/hooks.yaml")
            && tab.contains("…/my-project/.hookwire/hooks.yaml")
            && tab.contains("hookwire trust --workspace /tmp/hookwire-docs/my-project")
            && !tab.contains(".tmp"),
        "plain paths: {tab}"
    );
    shoot(&mut browser, "hooks-tab").await;
    browser
        .eval("(() => { const t = document.querySelector('.turn.traced.has-block'); t.querySelector('summary').click(); t.scrollIntoView({block: 'end'}); })()")
        .await;
    shoot(&mut browser, "trace").await;

    // A phone, with the first conversation.
    browser
        .eval("Array.from(document.querySelectorAll('#conversations .open')).find(b => b.innerText.includes('list the files')).click()")
        .await;
    browser.set_viewport(390, 844).await;
    browser.reload_and_wait().await;
    shoot(&mut browser, "phone").await;
    server.shutdown().await;
    let _ = std::fs::remove_dir_all(&base);
}

/// While an answer streams in many small pieces, its Markdown is rendered at most once per
/// animation frame (plus the final rendering), not once per piece.
#[tokio::test]
async fn streaming_renders_at_most_once_per_frame_in_chromium() {
    let Some(mut browser) = Chromium::launch().await else {
        return;
    };
    let upstream = FakeUpstream::start().await;
    let pieces: Vec<String> = (0..400).map(|i| format!("word{i} ")).collect();
    upstream.push(Reply::text(
        &pieces.iter().map(String::as_str).collect::<Vec<_>>(),
    ));
    let server = TestServer::builder()
        .workspace(workspace())
        .upstream(&upstream)
        .start()
        .await;
    browser.open(&server.url("/")).await;
    browser
        .eval("(() => { document.getElementById('tools-switch').click();
            window.__renders = 0; window.__frames = 0;
            // A rendering replaces the bubble's content at once: one mutation with no neighbours.
            new MutationObserver((records) => { for (const r of records) {
              if (r.target.classList && r.target.classList.contains('assistant') && r.addedNodes.length && !r.previousSibling && !r.nextSibling) window.__renders++;
            } }).observe(document.getElementById('transcript'), { childList: true, subtree: true });
            const tick = () => { window.__frames++; requestAnimationFrame(tick); }; requestAnimationFrame(tick); })()")
        .await;
    browser.type_and_enter("many words").await;
    browser
        .wait_for("document.body.dataset.state === 'idle' && (document.querySelector('.msg.assistant')?.innerText || '').includes('word399')")
        .await;
    let counts = browser.eval("[window.__renders, window.__frames]").await;
    let (renders, frames) = (counts[0].as_u64().unwrap(), counts[1].as_u64().unwrap());
    assert!(
        renders >= 1 && renders <= frames + 1 && renders < 400,
        "{renders} renderings in {frames} frames for 400 pieces"
    );
    server.shutdown().await;
}
