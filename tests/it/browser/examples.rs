//! `examples/ai-sdk`, the React page with the AI SDK's `useChat` a user copies, built as its
//! README says (`npm ci && npm run build`) and served by hookwire from its `dist/`
//! (`static_dir`), in Chromium: send a message, see the approval card with the tool's name,
//! approve, see the tool card's output and the answer.

use std::sync::OnceLock;

use serde_json::json;

use super::chromium::Chromium;
use super::driver::Page;
use crate::common::*;
use crate::frontends::npm_folder;

/// The example page's elements (its `data-testid`s), written once.
struct AiSdkExample;

impl AiSdkExample {
    const PROMPT: &'static str = "[data-testid=prompt]";
    const SEND: &'static str = "[data-testid=send]";
    const APPROVAL_CARD: &'static str = "[data-testid=approval-card]";
    const APPROVE: &'static str = "[data-testid=approve]";
    const TOOL_CARD: &'static str = "[data-testid=tool-card]";
    const TOOL_OUTPUT: &'static str = "[data-testid=tool-card] [data-testid=tool-output]";
    const USER: &'static str = "[data-testid=message-user]";
    const ANSWER: &'static str = "[data-testid=message-assistant]";
    const ERROR: &'static str = "[data-testid=error]";
}

/// `examples/ai-sdk/dist`, built; `None` (skipped) without node or npm.
fn built_page() -> Option<std::path::PathBuf> {
    static BUILT: OnceLock<Result<std::path::PathBuf, String>> = OnceLock::new();
    let dir = npm_folder(
        &BUILT,
        "examples/ai-sdk",
        &[&["run", "build"]],
        "the AI SDK example's browser test",
    )?;
    Some(dir.join("dist"))
}

/// `document.querySelector(selector)`'s text, or `""` when there is none.
fn text_js(selector: &str) -> String {
    format!(
        "document.querySelector({}) ?.innerText ?? ''",
        json!(selector)
    )
}

#[tokio::test]
async fn the_ai_sdk_example_asks_approval_and_shows_the_tool_and_the_answer_in_chromium() {
    let Some(dist) = built_page() else {
        return;
    };
    let Some(mut browser) = Chromium::launch().await else {
        return;
    };
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["[NEED_TOOL] read it"]));
    upstream.push(Reply::tool_calls(&[(
        "r1",
        "read_file",
        json!({"path": "a.txt"}),
    )]));
    let server = TestServer::builder()
        .upstream(&upstream)
        .file("a.txt", "ALPHA BRAVO")
        .config(move |c| {
            c.static_dir = dist;
            c.agent.approval.require_approval = vec!["read_file".into()];
        })
        .start()
        .await;
    browser.navigate(&server.url("/")).await;
    let prompt = json!(AiSdkExample::PROMPT);
    browser
        .wait_for(&format!("document.querySelector({prompt}) !== null"))
        .await;

    // Type like a person (the input's React state follows), then click Send.
    browser
        .eval(&format!("document.querySelector({prompt}).focus()"))
        .await;
    browser
        .call("Input.insertText", json!({"text": "What is in a.txt?"}))
        .await;
    let send = json!(AiSdkExample::SEND);
    browser
        .wait_for(&format!(
            "document.querySelector({send})?.disabled === false"
        ))
        .await;
    browser
        .eval(&format!("document.querySelector({send}).click()"))
        .await;

    // The call waits for approval: a card with the tool's name, its input, Approve.
    browser
        .wait_for(&format!(
            "document.querySelector({}) !== null",
            json!(AiSdkExample::APPROVE)
        ))
        .await;
    let card = browser.eval(&text_js(AiSdkExample::APPROVAL_CARD)).await;
    let card = card.as_str().unwrap();
    assert!(
        card.contains("read_file")
            && card.contains("a.txt")
            && card.contains("Waiting for your approval"),
        "{card}"
    );
    let user = browser.eval(&text_js(AiSdkExample::USER)).await;
    assert!(
        user.as_str().unwrap().contains("What is in a.txt?"),
        "{user}"
    );

    // Approve: the SDK sends the decision by itself, hookwire runs the call, the answer follows.
    upstream.push(Reply::text(&["The file says ALPHA BRAVO."]));
    browser
        .eval(&format!(
            "document.querySelector({}).click()",
            json!(AiSdkExample::APPROVE)
        ))
        .await;
    browser
        .wait_for(&format!(
            "({}).includes('ALPHA BRAVO')",
            text_js(AiSdkExample::TOOL_OUTPUT)
        ))
        .await;
    browser
        .wait_for(&format!(
            "Array.from(document.querySelectorAll({})).some(m => m.innerText.includes('The file says ALPHA BRAVO.'))",
            json!(AiSdkExample::ANSWER)
        ))
        .await;
    let tool = browser.eval(&text_js(AiSdkExample::TOOL_CARD)).await;
    let tool = tool.as_str().unwrap();
    assert!(
        tool.contains("read_file") && tool.contains("Done"),
        "{tool}"
    );
    let no_more_approvals = format!(
        "document.querySelectorAll({}).length",
        json!(AiSdkExample::APPROVAL_CARD)
    );
    assert_eq!(browser.eval(&no_more_approvals).await, json!(0));
    assert_eq!(browser.eval(&text_js(AiSdkExample::ERROR)).await, json!(""));
    browser.screenshot("ai-sdk-example.png").await;
}
