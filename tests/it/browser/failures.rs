//! A failed chat on the page: what happened in plain words (the error code and the server's
//! message folded away as technical details), and under it the ways on that can work for that
//! failure: Retry only where trying again can help; for a conversation the model can no longer
//! take, Compact, Start a new chat and Drop the oldest turns.

use serde_json::{json, Value};

use super::chromium::Chromium;
use super::driver::Page;
use super::firefox::Firefox;
use super::hookwire_page::*;
use crate::agent::workspace;
use crate::common::*;

#[tokio::test]
async fn failures_in_plain_words_with_ways_that_work_in_chromium() {
    let Some(mut browser) = Chromium::launch().await else {
        return;
    };
    failures_in_plain_words_with_ways_that_work(&mut browser).await;
}

#[tokio::test]
async fn failures_in_plain_words_with_ways_that_work_in_firefox() {
    let Some(mut browser) = Firefox::launch().await else {
        return;
    };
    failures_in_plain_words_with_ways_that_work(&mut browser).await;
}

/// The headline never is the code or the raw message, which stay in the folded details.
fn assert_plain(failure: &Value, code: &str) {
    let title = failure["title"].as_str().unwrap();
    assert!(
        !title.contains(code) && !title.contains("messages[") && !title.contains("HTTP"),
        "{failure}"
    );
    assert!(
        failure["detail"].as_str().unwrap().starts_with(code),
        "{failure}"
    );
    assert_eq!(failure["detail_open"], json!(false), "{failure}");
}

/// The model service refuses the server's key: no Retry (it would fail the same), a new chat
/// offered. The server refuses a stored history (`bad_frame` naming `messages[3]`): no Retry;
/// Edit opens the message before the refused one, and the edited conversation goes on.
async fn failures_in_plain_words_with_ways_that_work(browser: &mut impl Page) {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::Status(401, "invalid api key".into()));
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
    let failure = browser.failure().await;
    assert_plain(&failure, "upstream");
    assert_eq!(
        failure["title"], "The model service refused this server’s credentials.",
        "{failure}"
    );
    assert!(
        failure["detail"]
            .as_str()
            .unwrap()
            .contains("HTTP 401: invalid api key"),
        "{failure}"
    );
    assert_eq!(failure["actions"], json!(["Start a new chat"]), "{failure}");

    // A history the server refuses: its fourth message has a number for its text.
    browser.take_action("Start a new chat").await;
    browser.wait_empty_chat().await;
    let history = json!([
        {"role": "user", "content": "first"}, {"role": "assistant", "content": "one"},
        {"role": "user", "content": "second"}, {"role": "assistant", "content": 7},
    ]);
    browser.put_stored("history", &history).await;
    browser.reload_and_wait().await;
    browser.send("third").await;
    browser.wait_idle_with(CHAT_ERROR).await;
    let failure = browser.failure().await;
    assert_plain(&failure, "bad_frame");
    assert!(
        failure["detail"].as_str().unwrap().contains("messages[3]"),
        "{failure}"
    );
    assert_eq!(
        failure["actions"],
        json!(["Edit a message", "Start a new chat"]),
        "{failure}"
    );
    browser.take_action("Edit a message").await;
    assert_eq!(
        browser
            .eval("document.querySelector('.edit-form textarea')?.value ?? null")
            .await,
        "second",
        "Edit opens the last message before the refused one"
    );
    upstream.push(Reply::text(&["Fine now."]));
    browser
        .eval("(() => { const a = document.querySelector('.edit-form textarea'); a.value = ''; a.focus(); })()")
        .await;
    browser.type_keys_and_enter("second, again").await;
    browser.wait_answers(2).await;
    browser.wait_shown(ACTIONS).await;
    assert_eq!(browser.count(CHAT_ERROR).await, json!(0));
    assert_eq!(browser.texts(ACTIONS).await, vec!["Regenerate"]);
    server.shutdown().await;
}

#[tokio::test]
async fn a_conversation_too_long_for_the_model_has_ways_out_in_chromium() {
    let Some(mut browser) = Chromium::launch().await else {
        return;
    };
    a_conversation_too_long_for_the_model_has_ways_out(&mut browser).await;
}

#[tokio::test]
async fn a_conversation_too_long_for_the_model_has_ways_out_in_firefox() {
    let Some(mut browser) = Firefox::launch().await else {
        return;
    };
    a_conversation_too_long_for_the_model_has_ways_out(&mut browser).await;
}

/// The model says the conversation is over its window (`context_too_long`): Compact, Start a new
/// chat, Drop the oldest turns, and no Retry. Drop cuts the oldest turn and says which; then
/// Retry sends the message again without it. Compact summarises; then Retry works too.
async fn a_conversation_too_long_for_the_model_has_ways_out(browser: &mut impl Page) {
    let upstream = FakeUpstream::start().await;
    let too_long = || {
        Reply::Status(
            400,
            "This model's maximum context length is 4096 tokens".into(),
        )
    };
    upstream.push(Reply::text(&["one"]));
    upstream.push(Reply::text(&["two"]));
    upstream.push(too_long());
    let server = TestServer::builder()
        .workspace(workspace())
        .upstream(&upstream)
        .config(|c| {
            c.agent.retry.retries = 0;
            c.agent.context.keep_recent_groups = 1;
        })
        .start()
        .await;
    browser.open(&server.url("/")).await;
    browser.toggle_tools().await;
    for (n, input) in [(1, "first"), (2, "second")] {
        browser.send(input).await;
        browser.wait_answers(n).await;
    }
    browser.send("third").await;
    browser.wait_idle_with(CHAT_ERROR).await;
    let failure = browser.failure().await;
    assert_plain(&failure, "context_too_long");
    assert_eq!(
        failure["title"], "This conversation has grown too long for the model.",
        "{failure}"
    );
    assert_eq!(
        failure["actions"],
        json!([
            "Compact the conversation",
            "Start a new chat",
            "Drop the oldest turns"
        ]),
        "{failure}"
    );

    browser.take_action("Drop the oldest turns").await;
    assert_eq!(
        browser.first_text(".cut-divider").await,
        "Dropped the oldest turn (2 messages) to make room: “first”.",
    );
    let history = browser.stored("history").await;
    let contents: Vec<&str> = history
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(contents, ["second", "two"]);
    assert_eq!(
        browser.failure().await["actions"],
        json!(["Retry", "Start a new chat"]),
        "made shorter, it may fit now"
    );
    upstream.push(Reply::text(&["three"]));
    browser.take_action("Retry").await;
    browser.wait_count(CHAT_ERROR, 0).await;
    browser.wait_shown(ACTIONS).await;
    assert_eq!(browser.last_answer().await, "three");
    let sent: Vec<String> = upstream
        .requests()
        .pop()
        .unwrap()
        .messages()
        .into_iter()
        .map(|(_, c)| c)
        .collect();
    assert!(
        !sent.iter().any(|c| c == "first") && sent.iter().any(|c| c == "third"),
        "{sent:?}"
    );

    // Too long again: Compact summarises the older part, then Retry goes through.
    upstream.push(too_long());
    browser.send("fourth").await;
    browser.wait_idle_with(CHAT_ERROR).await;
    upstream.push(Reply::text(&["SUMMARY: second and third."]));
    browser.take_action("Compact the conversation").await;
    browser.wait_idle_with(DIVIDER).await;
    assert_eq!(
        browser.failure().await["actions"],
        json!(["Retry", "Start a new chat"])
    );
    upstream.push(Reply::text(&["four"]));
    browser.take_action("Retry").await;
    browser.wait_count(CHAT_ERROR, 0).await;
    browser.wait_shown(ACTIONS).await;
    assert_eq!(browser.last_answer().await, "four");
    server.shutdown().await;
}
