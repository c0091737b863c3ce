//! The page's connection: one lost in the middle of an answer (the partial answer kept, nothing
//! added to the history, the next chat without it), and a server that comes back (the page
//! reconnects by itself; offline, the draft is kept).

use serde_json::{json, Value};

use super::chromium::Chromium;
use super::hookwire_page::*;
use crate::agent::workspace;
use crate::common::*;

/// A TCP relay to `target` on a port of its own; `cut` drops every connection it carries (the
/// page sees its WebSocket close with no `done`), while new ones still get through.
struct Relay {
    addr: std::net::SocketAddr,
    open: std::sync::Arc<std::sync::Mutex<Vec<tokio::task::AbortHandle>>>,
}

impl Relay {
    async fn start(target: std::net::SocketAddr) -> Relay {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let open = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let carried = open.clone();
        tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let task = tokio::spawn(async move {
                    if let Ok(mut server) = tokio::net::TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
                carried.lock().unwrap().push(task.abort_handle());
            }
        });
        Relay { addr, open }
    }

    fn cut(&self) {
        for task in self.open.lock().unwrap().drain(..) {
            task.abort();
        }
    }
}

#[tokio::test]
async fn a_lost_connection_ends_the_running_chat_in_chromium() {
    let Some(mut browser) = Chromium::launch().await else {
        return;
    };
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::endless());
    let server = TestServer::builder()
        .workspace(workspace())
        .upstream(&upstream)
        .start()
        .await;
    let relay = Relay::start(server.addr).await;
    browser.open(&format!("http://{}/", relay.addr)).await;
    browser.toggle_tools().await;
    browser.send("go on forever").await;
    // Two ticks in, so that the stored partial answer below has more than its first delta.
    browser.wait_streaming(1, "tick tick").await;
    relay.cut();
    browser.wait_shown(CHAT_ERROR).await;
    assert_eq!(
        browser.first_text(CHAT_ERROR_TITLE).await,
        "The connection was lost; the reply was cut off."
    );
    let answer = browser.first_text(ANSWER).await;
    assert!(
        answer.as_str().unwrap().starts_with("tick"),
        "the partial answer stays: {answer}"
    );
    assert_eq!(
        browser.stored("history").await,
        Value::Null,
        "a lost chat adds nothing to the history"
    );
    let transcript = browser.stored("transcript").await;
    let kinds: Vec<&Value> = transcript
        .as_array()
        .unwrap()
        .iter()
        .map(|item| &item["kind"])
        .collect();
    assert_eq!(kinds, ["user", "assistant", "error"], "{transcript}");
    assert!(
        transcript[1]["text"]
            .as_str()
            .unwrap()
            .starts_with("tick tick"),
        "the partial answer is stored with its text: {transcript}"
    );

    // The page reconnects by itself, and the next chat does not carry the lost one.
    browser.wait_connected().await;
    upstream.push(Reply::text(&["Back again."]));
    browser.send("are you there?").await;
    browser.wait_answers(2).await;
    let last = upstream.requests().pop().unwrap().messages();
    assert!(
        last.iter()
            .any(|(r, c)| r == "user" && c == "are you there?")
            && !last.iter().any(|(_, c)| c == "go on forever"),
        "{last:?}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn the_page_reconnects_when_the_server_comes_back() {
    let Some(mut browser) = Chromium::launch().await else {
        return;
    };
    let server = TestServer::builder().workspace(workspace()).start().await;
    let addr = server.addr;
    browser.open(&server.url("/")).await;
    server.shutdown().await;
    browser.wait_offline().await;
    // Offline: Send is disabled, and Enter keeps the draft instead of losing it.
    assert_eq!(
        browser.disabled("send").await,
        json!(true),
        "no sending while offline"
    );
    browser.send("hello again").await;
    assert_eq!(
        (browser.draft().await, browser.count(USER_MESSAGE).await),
        (json!("hello again"), json!(0)),
        "the draft is kept and nothing was sent"
    );
    // The same address again: the page's back-off finds it without a reload.
    let again = TestServer::builder()
        .workspace(workspace())
        .config(|c| c.addr = addr.to_string())
        .start()
        .await;
    assert_eq!(again.addr, addr);
    browser.wait_connected().await;
    browser.send("").await; // Enter sends the kept draft
    browser.wait_answers(1).await;
    let (question, answer) = (
        browser.first_text(USER_MESSAGE).await,
        browser.first_text(ANSWER).await,
    );
    assert!(
        question.as_str().unwrap().contains("hello again")
            && answer.as_str().unwrap().contains("demo"),
        "{question} / {answer}"
    );
    again.shutdown().await;
}
