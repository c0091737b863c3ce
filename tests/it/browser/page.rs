//! What a person meets on the page beside the protocol: the transcript and the composer in one
//! column at every width, Markdown from real models (rendered at most once per frame while it
//! streams), feedback from Send to the first frame, the starters of an empty conversation, the
//! theme switch, the favicon, the banner and the conversation controls' small things.
//! Retry / Regenerate / Edit are in `forks.rs`, accessibility in `accessibility.rs`, the
//! screenshots of the README and docs/ in `screenshots.rs`.

use serde_json::{json, Value};

use super::chromium::Chromium;
use super::driver::Page;
use super::firefox::Firefox;
use super::hookwire_page::*;
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
    browser.send("hello").await;
    browser.wait_answer().await;
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
pub const RICH: &str = "| file | lines |\n|---|---:|\n| a.rs | 12 |\n\n- one\n  - one.a\n- two\n\n1. first\n\n   ```sh\n   ls -la\n   ```\n\n2. second\n\n~~old~~ new\n\n````markdown\n```rust\nfn main() {}\n```\n````\n";

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
    browser.toggle_tools().await;
    browser.send("show me markdown").await;
    browser.wait_answer().await;
    let shape = "(() => { const a = document.querySelector('.msg.assistant'); return {
        cells: Array.from(a.querySelectorAll('table td')).map(e => e.textContent),
        nested: Array.from(a.querySelectorAll('ul ul li')).map(e => e.textContent),
        ordered: Array.from(a.querySelectorAll('ol')).map(o => [o.start, o.children.length]),
        codeInList: a.querySelector('ol li pre code')?.textContent,
        strike: a.querySelector('s')?.textContent,
        fence: Array.from(a.querySelectorAll('pre code')).map(c => c.textContent),
        copies: a.querySelectorAll('.code-block > .code-head > button.copy-code').length,
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
    browser.toggle_tools().await;
    browser.send("take your time").await;
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
    browser.wait_answer().await;
    assert_eq!(
        [
            browser.count(".working").await,
            browser.count(".streaming").await,
            browser.first_text(ANSWER).await
        ],
        [json!(0), json!(0), json!("Late answer.")]
    );
    browser.send("go on forever").await;
    browser.wait_streaming(2, "tick").await;
    assert_eq!(
        browser
            .eval("[document.querySelectorAll('.working').length, document.querySelectorAll('.msg.assistant')[1].classList.contains('streaming'), getComputedStyle(document.querySelector('.msg.assistant.streaming > :last-child'), '::after').content]")
            .await,
        json!([0, true, "\"\""]),
        "a cursor while it streams"
    );
    browser.stop().await;
    browser.wait_count(".streaming, .working", 0).await;
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
        browser.texts(".empty button.starter").await,
        [
            "list the files",
            "read README.md",
            "search for HOOKWIRE_AUTH_TOKEN"
        ]
    );
    browser.click_first(".empty button.starter").await;
    browser.wait_answer().await;
    assert_eq!(browser.first_text(USER_MESSAGE).await, "list the files");
    let tool = browser.first_text(TOOL_SUMMARY).await;
    assert!(tool.as_str().unwrap().contains("list_dir"), "{tool}");
    let answer = browser.first_text(ANSWER).await;
    assert!(
        answer
            .as_str()
            .unwrap()
            .starts_with("The workspace has 4 entries"),
        "{answer}"
    );
    assert_eq!(browser.count(".empty").await, 0);
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
    browser.set_theme("dark").await;
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
    browser.set_theme("light").await;
    browser.reload_and_wait().await;
    assert_eq!(
        browser.eval(colours).await,
        json!(["rgb(255, 255, 255)", "light"])
    );

    // An empty conversation offers no export.
    assert_eq!(browser.exports_hidden().await, json!([true, true]));

    // While a reply streams, New and Delete say they stop it first; Stop before any text: no usage line.
    upstream.push(Reply::endless());
    browser.toggle_tools().await;
    browser.send("go on").await;
    browser.wait_streaming(1, "tick").await;
    assert_eq!(
        browser
            .eval("[document.getElementById('new-chat').title.endsWith('stops the streaming reply first; what it wrote so far is kept)'), document.getElementById('busy-note').hidden]")
            .await,
        json!([true, false])
    );
    browser.stop().await;
    browser.wait_idle().await;
    assert_eq!(
        browser
            .eval("[document.getElementById('new-chat').title, document.getElementById('busy-note').hidden, document.body.innerText.includes('0 in')]")
            .await,
        json!(["Start a new conversation (this one stays in the list)", true, false])
    );
    assert_eq!(browser.exports_hidden().await, json!([false, false]));

    // Delete asks again, and disarms when the focus goes elsewhere.
    browser.arm_delete().await;
    assert_eq!(browser.delete_label().await, json!("Delete for good?"));
    // Headless Firefox never gives the document focus, so no focus event fires there: the blur
    // is checked where the page has focus, the few seconds everywhere.
    let focused = browser
        .eval("(() => { document.getElementById('input').focus(); return document.hasFocus(); })()")
        .await;
    if focused == json!(true) {
        assert_eq!(
            browser.delete_label().await,
            json!("Delete"),
            "disarmed when the focus left it"
        );
        browser.delete_chat().await;
    }
    assert_eq!(browser.delete_label().await, json!("Delete for good?"));
    browser
        .wait_for("document.getElementById('delete-conversation').textContent === 'Delete'")
        .await;
    assert_eq!(
        browser.count(USER_MESSAGE).await,
        json!(1),
        "nothing was deleted"
    );

    // A long conversation opens at its bottom.
    let long: String = (1..=80).map(|i| format!("line {i}\n\n")).collect();
    upstream.push(Reply::text(&[&long]));
    browser.send("a long answer please").await;
    browser.wait_answers(2).await;
    browser.reload_and_wait().await;
    browser
        .wait_for("(() => { const t = document.getElementById('transcript'); return t.scrollHeight > t.clientHeight + 200 && t.scrollTop + t.clientHeight >= t.scrollHeight - 2; })()")
        .await;
    server.shutdown().await;

    // The demo banner: dismissed, it stays away.
    let demo = TestServer::builder().workspace(workspace()).start().await;
    browser.open(&demo.url("/")).await;
    assert_eq!(browser.hidden("banner").await, json!(false));
    // No voice configured: neither the speaker nor the microphone is shown.
    browser.wait_info("loaded").await;
    assert_eq!(browser.hidden("speaker").await, json!(true));
    assert_eq!(browser.hidden("mic").await, json!(true));
    browser.dismiss_banner().await;
    browser.reload_and_wait().await;
    assert_eq!(
        browser.hidden("banner").await,
        json!(true),
        "dismissed for good"
    );
    demo.shutdown().await;
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
    browser.toggle_tools().await;
    browser
        .eval("(() => { window.__renders = 0; window.__frames = 0;
            // A rendering replaces the bubble's content at once: one mutation with no neighbours.
            new MutationObserver((records) => { for (const r of records) {
              if (r.target.classList && r.target.classList.contains('assistant') && r.addedNodes.length && !r.previousSibling && !r.nextSibling) window.__renders++;
            } }).observe(document.getElementById('transcript'), { childList: true, subtree: true });
            const tick = () => { window.__frames++; requestAnimationFrame(tick); }; requestAnimationFrame(tick); })()")
        .await;
    browser.send("many words").await;
    browser.wait_answer().await;
    let answer = browser.first_text(ANSWER).await;
    assert!(answer.as_str().unwrap().contains("word399"), "{answer}");
    let counts = browser.eval("[window.__renders, window.__frames]").await;
    let (renders, frames) = (counts[0].as_u64().unwrap(), counts[1].as_u64().unwrap());
    assert!(
        renders >= 1 && renders <= frames + 1 && renders < 400,
        "{renders} renderings in {frames} frames for 400 pieces"
    );
    server.shutdown().await;
}
