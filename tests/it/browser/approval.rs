//! Approval on the page: a call waiting for approval shows its arguments with Approve / Deny;
//! Approve (from the keyboard) runs it; after a reload, Deny with a reason reaches the model; the
//! cards say what was decided, also after a reload.

use serde_json::{json, Value};

use super::chromium::Chromium;
use super::driver::Page;
use super::firefox::Firefox;
use super::hookwire_page::*;
use crate::common::*;

#[tokio::test]
async fn approve_and_deny_from_the_page_in_chromium() {
    let Some(mut browser) = Chromium::launch().await else {
        return;
    };
    approve_and_deny_from_the_page(&mut browser).await;
}

#[tokio::test]
async fn approve_and_deny_from_the_page_in_firefox() {
    let Some(mut browser) = Firefox::launch().await else {
        return;
    };
    approve_and_deny_from_the_page(&mut browser).await;
}

/// A call waiting for approval shows its arguments with Approve / Deny; Approve (from the
/// keyboard) runs it and the answer follows; after a reload, Deny with a reason reaches the model.
async fn approve_and_deny_from_the_page(browser: &mut impl Page) {
    let upstream = FakeUpstream::start().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "SECRET NOTES").unwrap();
    let server = TestServer::builder()
        .workspace(dir)
        .upstream(&upstream)
        .config(|c| c.agent.approval.require_approval = vec!["read_file".into()])
        .start()
        .await;
    browser.open(&server.url("/")).await;

    upstream.push(Reply::text(&["[NEED_TOOL] read the notes"]));
    upstream.push(Reply::tool_calls(&[(
        "r1",
        "read_file",
        json!({"path":"notes.txt"}),
    )]));
    browser.send("read my notes").await;
    browser.wait_idle_with(APPROVE).await;
    let text = browser.first_text(APPROVAL_CARD).await;
    let text = text.as_str().unwrap();
    assert!(
        text.contains("read_file") && text.contains("notes.txt"),
        "{text}"
    );
    assert!(
        text.contains("Waiting for your approval")
            && text.contains("this server asks you before it runs read_file"),
        "the reason in words for the person: {text}"
    );
    assert_eq!(
        browser
            .eval("document.querySelector('.approval-card').getAttribute('role')")
            .await,
        "group"
    );
    // Keyboard: focus Approve and press Enter (a real button takes it).
    upstream.push(Reply::text(&["Your notes say SECRET NOTES."]));
    browser.approve_by_keyboard().await;
    browser.wait_answers(1).await;
    let answer = browser.first_text(ANSWER).await;
    assert!(
        answer.as_str().unwrap().contains("SECRET NOTES"),
        "{answer}"
    );
    let tool = browser.first_text(TOOL_CARD).await;
    assert!(tool.as_str().unwrap().contains("read_file"), "{tool}");
    assert_eq!(
        browser.approval_card(0).await,
        json!(["You approved this call", "Approved", 0]),
        "the title says what was decided"
    );
    assert_eq!(browser.stored("approval").await, Value::Null);

    // A second call waits; the page is reloaded before the decision; Deny with a reason.
    upstream.push(Reply::text(&["[NEED_TOOL] read again"]));
    upstream.push(Reply::tool_calls(&[(
        "r2",
        "read_file",
        json!({"path":"notes.txt"}),
    )]));
    browser.send("read them again").await;
    browser.wait_count(DENY, 1).await;
    browser.reload_and_wait().await;
    browser.wait_idle_with(DENY).await;
    upstream.push(Reply::text(&["Understood, I left them alone."]));
    browser.deny("not twice").await;
    browser.wait_answers(2).await;
    let last = upstream.requests().pop().unwrap();
    let denied = last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["tool_call_id"] == "r2")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        denied.contains("denied") && denied.contains("not twice"),
        "{denied}"
    );
    // The second card says it was denied, and why, also after a reload.
    for _ in 0..2 {
        assert_eq!(
            browser.approval_card(1).await,
            json!(["You denied this call", "Denied, because: not twice", 0])
        );
        browser.reload_and_wait().await;
    }
    // The history the page keeps has both answers and no waiting approval.
    let history = browser.stored("history").await;
    let contents: Vec<&Value> = history
        .as_array()
        .unwrap()
        .iter()
        .map(|m| &m["content"])
        .collect();
    assert!(
        contents.contains(&&json!("Your notes say SECRET NOTES.")),
        "{history}"
    );
    assert!(
        contents.contains(&&json!("Understood, I left them alone.")),
        "{history}"
    );
    assert_eq!(browser.stored("approval").await, Value::Null);
    server.shutdown().await;
}
