//! The page laid out as people know chat pages: a one-line composer that grows, with Send that
//! becomes Stop while a reply runs and its secondary actions small and labelled; on a phone the
//! conversation has most of the screen; Copy above a code block, not over it; Edit on hover or
//! focus; Compact only when there is something to compact; the chat list by date, with search;
//! the panel's switches in plain words.

use serde_json::{json, Value};

use super::chromium::Chromium;
use super::driver::Page;
use super::firefox::Firefox;
use super::hookwire_page::*;
use crate::common::*;

#[tokio::test]
async fn a_chat_page_as_people_know_them_in_chromium() {
    let Some(mut browser) = Chromium::launch().await else {
        return;
    };
    a_chat_page_as_people_know_them(&mut browser, true).await;
}

#[tokio::test]
async fn a_chat_page_as_people_know_them_in_firefox() {
    let Some(mut browser) = Firefox::launch().await else {
        return;
    };
    // Headless Firefox does not match :focus-within for a focus given by a script while its
    // window is not focused; the keyboard's view of Edit is checked in Chromium.
    a_chat_page_as_people_know_them(&mut browser, false).await;
}

fn height(rect: &Value) -> f64 {
    rect["bottom"].as_f64().unwrap() - rect["top"].as_f64().unwrap()
}

async fn a_chat_page_as_people_know_them(browser: &mut impl Page, focus_shows: bool) {
    let upstream = FakeUpstream::start().await;
    let server = TestServer::builder()
        .workspace(crate::agent::workspace())
        .upstream(&upstream)
        .start()
        .await;
    browser.set_viewport(1280, 800).await;
    browser.open(&server.url("/")).await;
    browser.toggle_tools().await;

    // The panel's switches say what they do.
    let panel = browser.text("panel").await;
    let panel = panel.as_str().unwrap();
    assert!(
        panel.contains("Let the model use tools")
            && panel.contains("Show hook activity under answers"),
        "{panel}"
    );

    // An empty conversation: nothing to compact, and the button says why.
    assert_eq!(browser.disabled("compact").await, json!(true));
    assert_eq!(
        browser.tooltip("compact").await,
        "Nothing to compact: the conversation is empty"
    );
    // One line to start with; it grows with what is typed.
    let one_line = height(&browser.rect("#input").await);
    assert!(one_line < 45.0, "one line: {one_line}");
    browser
        .eval("(() => { const i = document.getElementById('input'); i.value = 'a\\nb\\nc\\nd'; i.dispatchEvent(new Event('input')); })()")
        .await;
    let grown = height(&browser.rect("#input").await);
    assert!(grown > one_line * 2.0, "grown to four lines: {grown}");
    browser
        .eval("(() => { const i = document.getElementById('input'); i.value = ''; i.dispatchEvent(new Event('input')); })()")
        .await;

    // Send, shown while idle, becomes Stop while a reply runs.
    assert_eq!(
        (browser.hidden("send").await, browser.hidden("stop").await),
        (json!(false), json!(true))
    );
    upstream.push(Reply::endless());
    browser.send("go on").await;
    browser.wait_streaming(1, "tick").await;
    assert_eq!(
        (browser.hidden("send").await, browser.hidden("stop").await),
        (json!(true), json!(false)),
        "Stop in Send's place while the reply runs"
    );
    browser.stop().await;
    browser.wait_idle().await;
    assert_eq!(
        (browser.hidden("send").await, browser.hidden("stop").await),
        (json!(false), json!(true))
    );
    assert_eq!(
        browser.tooltip("compact").await,
        "Nothing to compact yet: the conversation has only one turn"
    );
    assert_eq!(browser.disabled("compact").await, json!(true));

    // A code block: Copy sits above the code, not over its first line.
    upstream.push(Reply::text(&[
        "Run:\n\n```sh\nls -la src/ | sort -k5 -n | tail -n 5 | cut -c1-200 | while read line; do echo $line; done\n```\n",
    ]));
    browser.send("which command?").await;
    browser.wait_answers(2).await;
    let copy = browser.rect(".copy-code").await;
    let code = browser.rect(".code-block pre").await;
    assert!(
        copy["bottom"].as_f64() <= code["top"].as_f64(),
        "Copy {copy} is above the code {code}"
    );
    assert_eq!(browser.disabled("compact").await, json!(false), "two turns");

    // Edit shows on hover or focus, not all the time (it is still reached by keyboard).
    browser.eval("document.activeElement.blur()").await;
    assert_eq!(browser.opacity(".msg.user .edit-message").await, json!(0));
    if focus_shows {
        browser
            .eval("document.querySelector('.msg.user .edit-message').focus()")
            .await;
        assert_eq!(browser.opacity(".msg.user .edit-message").await, json!(1));
    }

    // The chat list: by date, with a search over titles and messages.
    browser.new_chat().await;
    upstream.push(Reply::text(&["Zebras have stripes."]));
    browser.send("tell me about zebras").await;
    browser.wait_answers(1).await;
    // The first conversation was last used four days ago.
    browser
        .eval("(() => { const list = JSON.parse(localStorage.getItem('hookwire.conversations')); const old = list.find(m => m.title === 'go on'); old.updated -= 4 * 86400000; localStorage.setItem('hookwire.conversations', JSON.stringify(list)); })()")
        .await;
    browser.reload_and_wait().await;
    browser.open_panel_tab("conversations").await;
    assert_eq!(
        browser.chat_groups().await,
        json!([
            ["Today", ["tell me about zebras"]],
            ["Previous 7 days", ["go on"]]
        ])
    );
    browser.search_chats("stripes").await;
    assert_eq!(
        browser.chat_groups().await,
        json!([["Today", ["tell me about zebras"]]]),
        "found by what the answer says"
    );
    browser.search_chats("giraffe").await;
    assert_eq!(browser.chat_groups().await, json!([]));
    assert_eq!(browser.text("no-match").await, "No chat matches “giraffe”.");
    browser.search_chats("").await;

    // A phone: with the demo banner, the conversation still has most of the screen.
    browser.set_viewport(390, 844).await;
    browser
        .eval("localStorage.removeItem('hookwire.demoBannerDismissed')")
        .await;
    server.shutdown().await;
    let demo = TestServer::builder()
        .workspace(crate::demo::workspace())
        .start()
        .await;
    browser.open(&demo.url("/")).await;
    browser.send("list the files").await;
    browser.wait_answers(1).await;
    assert_eq!(browser.hidden("banner").await, json!(false));
    let transcript = height(&browser.rect("#transcript").await);
    let screen = browser.eval("window.innerHeight").await.as_f64().unwrap();
    assert!(
        transcript >= 0.7 * screen,
        "the conversation has {transcript} of {screen} px"
    );
    demo.shutdown().await;
}
