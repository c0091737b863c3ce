//! With telemetry on, a turn's details on the page name its trace (the `start` frame's
//! `trace_id`), the one an operator finds in the tracing backend: for a chat that ended and for
//! one that failed.

use std::time::Duration;

use serde_json::Value;

use super::chromium::Chromium;
use super::driver::Page;
use super::firefox::Firefox;
use super::hookwire_page::*;
use crate::common::*;
use crate::telemetry::{hex, named, receiver};

#[tokio::test]
async fn a_turn_shows_its_trace_id_in_chromium() {
    let Some(mut browser) = Chromium::launch().await else {
        return;
    };
    a_turn_shows_its_trace_id(&mut browser).await;
}

#[tokio::test]
async fn a_turn_shows_its_trace_id_in_firefox() {
    let Some(mut browser) = Firefox::launch().await else {
        return;
    };
    a_turn_shows_its_trace_id(&mut browser).await;
}

/// The trace id of the turn `index`, read once its details are opened (`null`: none shown).
async fn shown_trace_id(browser: &mut impl Page, index: usize) -> Value {
    browser
        .eval(&format!(
            "(() => {{ const t = document.querySelectorAll('.turn')[{index}]; if (!t || t.tagName !== 'DETAILS') return null;
               t.open = true; const code = t.querySelector('.trace-id code');
               return code && code.getClientRects().length ? code.textContent : null; }})()"
        ))
        .await
}

async fn a_turn_shows_its_trace_id(browser: &mut impl Page) {
    let (base, received) = receiver().await;
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["Hello there."]));
    upstream.push(Reply::Status(400, "model overloaded".into()));
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(move |c| {
            c.telemetry.otlp_endpoint = Some(base);
            c.telemetry.batch_delay = Some(Duration::from_millis(50));
        })
        .start()
        .await;
    browser.open(&server.url("/")).await;

    browser.send("hello").await;
    browser.wait_count(TURN, 1).await;
    let first = shown_trace_id(browser, 0).await;
    // A chat that fails has no usage to show, and its trace is the one worth looking up.
    browser.send("again").await;
    browser.wait_idle_with(CHAT_ERROR).await;
    let second = shown_trace_id(browser, 1).await;

    assert!(
        eventually(Duration::from_secs(10), || async {
            named(&received.spans(), "invoke_agent").len() == 2
        })
        .await,
        "two chat spans exported"
    );
    let mut exported: Vec<String> = named(&received.spans(), "invoke_agent")
        .iter()
        .map(|span| hex(&span.trace_id))
        .collect();
    let mut shown: Vec<String> = [&first, &second]
        .iter()
        .map(|id| {
            id.as_str()
                .unwrap_or_else(|| panic!("no trace id shown: {first} / {second}"))
                .to_string()
        })
        .collect();
    assert_ne!(shown[0], shown[1], "each chat is a trace of its own");
    exported.sort();
    shown.sort();
    assert_eq!(
        shown, exported,
        "the page names the traces that were exported"
    );
    server.shutdown().await;
}
