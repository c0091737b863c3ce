//! The page signing in (`auth.jwt`, docs/page.md "Signing in"): opened without a token it shows
//! the sign-in panel (not a raw error), says why a token was refused, and chats once a good one
//! is pasted; on a connection whose token expired, the failed chat offers "Sign in again", and a
//! fresh token goes to the open connection as an `auth` frame before the chat is sent again,
//! without reconnecting.

use std::time::Duration;

use jsonwebtoken::Algorithm;
use serde_json::json;

use super::chromium::Chromium;
use super::driver::Page;
use super::firefox::Firefox;
use super::hookwire_page::*;
use crate::agent::workspace;
use crate::common::*;
use crate::sign_in::{now, rsa_key, sign, Provider};

#[tokio::test]
async fn the_page_signs_in_and_renews_an_expired_sign_in_in_chromium() {
    let Some(mut browser) = Chromium::launch().await else {
        return;
    };
    the_page_signs_in_and_renews_an_expired_sign_in(&mut browser).await;
}

#[tokio::test]
async fn the_page_signs_in_and_renews_an_expired_sign_in_in_firefox() {
    let Some(mut browser) = Firefox::launch().await else {
        return;
    };
    the_page_signs_in_and_renews_an_expired_sign_in(&mut browser).await;
}

/// Counts the WebSockets the page opens from now on, and the types of the frames it sends (never
/// their contents: a frame may hold a token).
const WATCH_SOCKETS: &str = "(() => { window.__sockets = 0; window.__sent = [];
    const W = window.WebSocket;
    window.WebSocket = new Proxy(W, { construct(target, args) { window.__sockets += 1; return new target(...args); } });
    const send = W.prototype.send;
    W.prototype.send = function (data) { try { window.__sent.push(JSON.parse(data).type); } catch (_) {} return send.call(this, data); };
  })()";

async fn the_page_signs_in_and_renews_an_expired_sign_in(browser: &mut impl Page) {
    let provider = Provider::start().await;
    let upstream = FakeUpstream::start().await;
    let mut settings = provider.settings();
    // The short-lived token expires at its `exp`, not a minute later.
    settings.leeway = Duration::ZERO;
    let server = TestServer::builder()
        .workspace(workspace())
        .upstream(&upstream)
        .config(move |c| c.jwt = Some(settings))
        .start()
        .await;
    let token = |sub: &str, expires: u64| {
        let mut claims = provider.claims(sub);
        claims["exp"] = json!(expires);
        sign(&claims, Algorithm::RS256, "rsa-1", &rsa_key())
    };

    // Opened without a token: the panel, its field focused, and no raw error.
    browser.navigate(&server.url("/")).await;
    browser.wait_sign_in().await;
    let panel = browser.text(SIGN_IN).await;
    assert!(
        panel
            .as_str()
            .unwrap()
            .contains("This server needs you to sign in"),
        "{panel}"
    );
    let shown = browser.eval("document.body.innerText").await;
    assert!(
        !shown.as_str().unwrap().contains("#token=") && !shown.as_str().unwrap().contains("401"),
        "{shown}"
    );
    // A token that does not verify: the panel says why, and stays.
    browser.sign_in("not-a-jwt").await;
    browser
        .wait_sign_in_problem("the token was refused: malformed")
        .await;
    // A good token: the API answers, the page connects, a chat is answered.
    browser.sign_in(&token("alice", now() + 3600)).await;
    browser.wait_ready().await;
    assert_eq!(browser.hidden(SIGN_IN).await, json!(true));
    browser.toggle_tools().await;
    upstream.push(Reply::text(&["hello alice"]));
    browser.send("hello").await;
    browser.wait_answers(1).await;

    // A new tab's sign-in with a token that expires in a few seconds.
    browser.forget_tab_token().await;
    browser.reload().await;
    browser.wait_sign_in().await;
    let expires = now() + 6;
    browser.sign_in(&token("alice", expires)).await;
    browser.wait_connected().await;
    browser.eval(WATCH_SOCKETS).await;
    // The token's `exp` passes (a condition on the clock: nothing to await but the time).
    assert!(eventually(Duration::from_secs(15), || async { now() > expires }).await);
    browser.send("again").await;
    browser.wait_idle_with(CHAT_ERROR).await;
    let failure = browser.failure().await;
    assert_eq!(failure["title"], "Your sign-in has expired.", "{failure}");
    assert_eq!(failure["actions"], json!(["Sign in again"]), "{failure}");
    browser.take_action("Sign in again").await;
    browser.wait_sign_in().await;
    // Another person's token: refused on the connection, said in the panel.
    browser.sign_in(&token("bob", now() + 3600)).await;
    browser.wait_sign_in_problem("another user").await;
    // A fresh token of the same person: taken on the open connection, the chat sent again.
    upstream.push(Reply::text(&["welcome back"]));
    let fresh = token("alice", now() + 3600);
    browser.sign_in(&fresh).await;
    browser.wait_last_answer("welcome back").await;
    assert_eq!(browser.count(CHAT_ERROR).await, json!(0));
    assert_eq!(browser.hidden(SIGN_IN).await, json!(true));
    assert_eq!(
        browser.eval("[window.__sockets, window.__sent]").await,
        json!([0, ["chat", "auth", "ping", "auth", "ping", "chat"]]),
        "the fresh token went on the open connection, then the chat"
    );
    assert_eq!(upstream.requests().len(), 2);
    // Kept for the tab's later connections, and nowhere else.
    assert_eq!(browser.tab_token().await, json!(json!(fresh).to_string()));
    let elsewhere = browser
        .eval(&format!(
            "[location.href, document.documentElement.outerHTML, document.getElementById('sign-in-token').value].some(t => t.includes({}))",
            json!(fresh)
        ))
        .await;
    assert_eq!(elsewhere, json!(false));
    server.shutdown().await;
}
