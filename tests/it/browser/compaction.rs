//! Compaction on the page: the divider where the summarised messages were (they are folded),
//! kept across a reload; the Compact button; the compacted history the next chat sends; a
//! compaction in the middle of an agent loop.

use serde_json::json;

use super::chromium::Chromium;
use super::driver::Page;
use super::firefox::Firefox;
use super::hookwire_page::*;
use crate::common::*;

/// Where the (first) divider stands: the text after it, whether what is before it is folded,
/// which user messages are folded, and whether the first answer is.
const PLACE: &str = "(() => { const d = document.querySelector('.compact-divider');
    const users = [...document.querySelectorAll('.msg.user')];
    const next = d.nextElementSibling;
    return {next: next && next.innerText, before: d.previousElementSibling.classList.contains('folded') || d.previousElementSibling.previousElementSibling.classList.contains('folded'),
            folded: users.map((u) => u.classList.contains('folded')),
            answer: document.querySelector('.msg.assistant').classList.contains('folded')}; })()";

#[tokio::test]
async fn compaction_dividers_and_the_compact_action_in_chromium() {
    let Some(mut browser) = Chromium::launch().await else {
        return;
    };
    compaction_dividers_and_the_compact_action(&mut browser).await;
}

#[tokio::test]
async fn compaction_dividers_and_the_compact_action_in_firefox() {
    let Some(mut browser) = Firefox::launch().await else {
        return;
    };
    compaction_dividers_and_the_compact_action(&mut browser).await;
}

/// An auto compaction shows a divider where the summarised messages were (they are folded) that
/// expands to the summary and survives a reload; the Compact button compacts on request; the
/// compacted history is what the next chat sends; a compaction in the middle of an agent loop
/// (after its tool card) puts its divider where the summarised messages were, not after the card.
async fn compaction_dividers_and_the_compact_action(browser: &mut impl Page) {
    let upstream = FakeUpstream::start().await;
    let long_answer = "alpha ".repeat(700);
    upstream.push(Reply::text(&[&long_answer]));
    upstream.push(Reply::text(&["short two"]));
    upstream.push(Reply::text(&["SUMMARY ONE: a long alpha answer."]));
    upstream.push(Reply::text(&["short three"]));
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(|c| {
            c.agent.secret = Some("page-secret".into());
            c.agent.context.window_tokens = Some(1_000);
            c.agent.context.compact_threshold = 0.5;
            c.agent.context.keep_recent_groups = 1;
        })
        .start()
        .await;
    browser.open(&server.url("/")).await;
    browser.send("one").await;
    browser.wait_answers(1).await;
    browser.send("two").await;
    browser.wait_answers(2).await;
    assert_eq!(
        browser.count(DIVIDER).await,
        json!(0),
        "one group: nothing to summarise yet"
    );
    browser.send("three").await;
    browser.wait_answers(3).await;
    let divider = browser
        .eval("(() => { const d = document.querySelector('.compact-divider'); d.querySelector('summary').click();
               return {label: d.querySelector('summary').innerText, open: d.open, text: d.querySelector('.summary-text').innerText}; })()")
        .await;
    assert_eq!(
        divider["label"], "2 earlier messages summarised",
        "{divider}"
    );
    assert_eq!(divider["open"], true);
    assert_eq!(divider["text"], "SUMMARY ONE: a long alpha answer.");
    let history = browser.stored("history").await;
    let history = history.as_array().unwrap();
    assert_eq!(history[0]["role"], "user", "{history:?}");
    assert_eq!(history[0]["_compact"]["count"], 2, "{history:?}");
    assert_eq!(history[1]["content"], "two");
    assert_eq!(
        history.len(),
        5,
        "summary, two, short two, three, short three"
    );

    // The divider is where the first chat was: before "two", after the folded "one" and its answer.
    let shown = browser.eval(PLACE).await;
    assert_eq!(shown["next"], "two", "{shown}");
    assert_eq!(shown["folded"], json!([true, false, false]), "{shown}");
    assert_eq!(shown["answer"], true, "{shown}");

    // After a reload the divider is still there; the Compact button summarises on request.
    browser.reload_and_wait().await;
    assert_eq!(
        browser.eval(PLACE).await["folded"],
        json!([true, false, false]),
        "folded after a reload"
    );
    browser.wait_idle().await;
    assert_eq!(browser.count(DIVIDER).await, json!(1));
    upstream.push(Reply::text(&["SUMMARY TWO: alpha, then two."]));
    browser.compact().await;
    browser.wait_count(DIVIDER, 2).await;
    let summary_call = upstream.requests().pop().unwrap();
    let input = summary_call.messages().last().unwrap().1.clone();
    assert!(
        input.contains("SUMMARY ONE") && input.contains("short two"),
        "{input}"
    );
    assert!(
        !input.contains("short three"),
        "the last group is kept: {input}"
    );
    assert_eq!(
        browser.texts(&format!("{DIVIDER} summary")).await[1],
        "3 earlier messages summarised"
    );

    // The next chat sends the compacted history, the summary as user text.
    upstream.push(Reply::text(&["short four"]));
    browser.send("four").await;
    browser.wait_answers(4).await;
    let sent = upstream.requests().pop().unwrap().messages();
    let summary = "<summary of the earlier conversation>\nSUMMARY TWO: alpha, then two.\n</summary of the earlier conversation>";
    assert!(
        sent.contains(&("user".to_string(), summary.to_string())),
        "{sent:?}"
    );
    assert!(
        !sent.iter().any(|(_, c)| c.contains("alpha alpha")),
        "{sent:?}"
    );

    // An agent loop whose tool result crosses the threshold: the compaction comes after the
    // tool card, and its divider goes before the kept group ("four"), not after the card.
    let big = format!("BIGFILE {}", "word ".repeat(700));
    std::fs::write(server.workspace.path().join("big.txt"), big).unwrap();
    upstream.push(Reply::text(&["[NEED_TOOL] read it"]));
    upstream.push(Reply::tool_calls(&[(
        "t1",
        "read_file",
        json!({"path":"big.txt"}),
    )]));
    upstream.push(Reply::text(&["SUMMARY THREE: three and four."]));
    upstream.push(Reply::text(&["it is big"]));
    browser.send("read big.txt").await;
    browser.wait_answers(5).await;
    let shown = browser
        .eval("(() => { const dividers = [...document.querySelectorAll('.compact-divider')];
            const last = dividers[dividers.length - 1];
            const card = document.querySelector('.tool-card');
            return {count: dividers.length, next: last.nextElementSibling.innerText,
                    before_card: !!(last.compareDocumentPosition(card) & Node.DOCUMENT_POSITION_FOLLOWING),
                    card_folded: card.classList.contains('folded'),
                    folded: [...document.querySelectorAll('.msg.user')].map((u) => u.classList.contains('folded'))}; })()")
        .await;
    assert_eq!(shown["count"], 3, "{shown}");
    assert_eq!(shown["next"], "four", "{shown}");
    assert_eq!(shown["before_card"], true, "{shown}");
    assert_eq!(shown["card_folded"], false, "{shown}");
    assert_eq!(
        shown["folded"],
        json!([true, true, true, false, false]),
        "{shown}"
    );
    server.shutdown().await;
}
