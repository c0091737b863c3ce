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
