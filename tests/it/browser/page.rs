//! What a person meets on the page beside the protocol: the transcript and the composer in one
//! column at every width, Markdown from real models, feedback from Send to the first frame, the
//! approval card after a decision, Retry / Regenerate / Edit, the theme switch, the favicon,
//! accessibility (axe-core on every view), and the README's screenshots.

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
    let server = TestServer::start_in(workspace(), None, |_| {}, |b| b).await;
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
    let server = TestServer::start_in(workspace(), Some(&upstream), |_| {}, |b| b).await;
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
    let server = TestServer::start_in(workspace(), Some(&upstream), |_| {}, |b| b).await;
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
