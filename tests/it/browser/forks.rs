//! Retry, Regenerate and Edit on the page: each goes on from an earlier user message, on screen,
//! in the stored history and in the next request.

use serde_json::{json, Value};

use super::chromium::Chromium;
use super::driver::Page;
use super::firefox::Firefox;
use super::hookwire_page::*;
use crate::agent::workspace;
use crate::common::*;

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
/// the errors, the history as "role: content", and the Retry / Regenerate button.
async fn shown(browser: &mut impl Page) -> Value {
    let history = browser.stored("history").await;
    let history: Vec<String> = history
        .as_array()
        .map(|messages| {
            messages
                .iter()
                .map(|m| {
                    format!(
                        "{}: {}",
                        m["role"].as_str().unwrap(),
                        m["content"].as_str().unwrap()
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    json!({
        "users": browser.texts(USER_MESSAGE).await,
        "answers": browser.texts(ANSWER).await,
        "errors": browser.texts(CHAT_ERROR).await,
        "history": history,
        "actions": browser.texts(".fork-actions button").await,
    })
}

/// Waits until the page is idle with `answers` answers and Retry or Regenerate under them.
async fn wait_forkable(browser: &mut impl Page, answers: usize) {
    browser.wait_answers(answers).await;
    browser.wait_shown(".fork-actions").await;
}

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
    browser.toggle_tools().await;
    browser.send("hello").await;
    browser.wait_idle_with(CHAT_ERROR).await;
    let failed = shown(browser).await;
    assert_eq!(
        failed["actions"],
        json!(["Retry", "Start a new chat"]),
        "{failed}"
    );
    assert_eq!(failed["history"], json!([]));

    upstream.push(Reply::text(&["Hi there."]));
    browser.retry().await;
    wait_forkable(browser, 1).await;
    assert_eq!(
        shown(browser).await,
        json!({"users": ["hello"], "answers": ["Hi there."], "errors": [],
               "history": ["user: hello", "assistant: Hi there."], "actions": ["Regenerate"]}),
        "after Retry the history holds one user message"
    );

    upstream.push(Reply::text(&["Hello again, differently."]));
    browser.regenerate().await;
    browser.wait_answers(1).await;
    let answer = browser.last_answer().await;
    assert!(answer.as_str().unwrap().contains("differently"), "{answer}");
    assert_eq!(
        shown(browser).await["history"],
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
    browser.send("and a second question").await;
    wait_forkable(browser, 2).await;
    // Edit the first message (from the keyboard: the form's Enter sends it).
    upstream.push(Reply::text(&["Forked."]));
    browser.edit_message(0).await;
    browser.type_keys_and_enter("hello, edited").await;
    wait_forkable(browser, 1).await;
    assert_eq!(
        shown(browser).await,
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
    assert_eq!(shown(browser).await["users"], json!(["hello, edited"]));
    server.shutdown().await;
}
