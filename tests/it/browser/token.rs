//! The access token in the page's URL fragment (`/#token=…`): the page keeps it for the tab,
//! takes it out of the address bar, and without it says what to do; in Chromium, behind the
//! shipped nginx config, it chats with a server that needs the token, and neither the server's
//! log nor nginx's access log holds it (a fragment never leaves the browser; the WebSocket
//! carries the token in `Sec-WebSocket-Protocol`, which nothing logs).

use serde_json::json;

use super::chromium::Chromium;
use super::driver::Page;
use super::firefox::Firefox;
use super::hookwire_page::*;
use crate::agent::workspace;
use crate::binary::Hookwire;
use crate::common::TestServer;
use crate::nginx::{self, Nginx};

const TOKEN: &str = "tok3n-CANARY-0f9e8d";

#[tokio::test]
async fn the_page_connects_with_a_fragment_token_and_no_log_holds_it_in_chromium() {
    let Some(nginx_binary) = nginx::required("the fragment token test") else {
        return;
    };
    let Some(mut browser) = Chromium::launch().await else {
        return;
    };
    let static_dir = concat!(env!("CARGO_MANIFEST_DIR"), "/static");
    let server = Hookwire::start(
        "{}\n",
        &[
            ("HOOKWIRE_AUTH_TOKEN", TOKEN),
            ("HOOKWIRE_STATIC_DIR", static_dir),
            ("RUST_LOG", "debug"),
        ],
    );
    let nginx = Nginx::start(&nginx_binary, &[server.addr]).await;
    browser
        .open(&format!("http://{}/#token={TOKEN}", nginx.addr))
        .await;
    // The address bar no longer shows it.
    let href = browser.eval("location.href").await;
    assert!(!href.to_string().contains(TOKEN), "{href}");
    browser.send("hello").await;
    browser.wait_answer().await;
    // nginx logs a WebSocket when it closes: stop the server behind it.
    let mut server = server;
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let closed = crate::common::eventually(std::time::Duration::from_secs(15), || async {
        nginx
            .log()
            .iter()
            .any(|line| line.contains("GET /ws") && line.contains(" 101 "))
    })
    .await;
    let logged = nginx.log();
    assert!(closed, "the WebSocket went through nginx: {logged:#?}");
    for line in logged.iter().chain(server.log().iter()) {
        assert!(!line.contains(TOKEN), "the token in a log: {line}");
    }
}

#[tokio::test]
async fn the_page_brings_the_access_token_in_chromium() {
    let Some(mut browser) = Chromium::launch().await else {
        return;
    };
    the_page_brings_the_access_token(&mut browser).await;
}

#[tokio::test]
async fn the_page_brings_the_access_token_in_firefox() {
    let Some(mut browser) = Firefox::launch().await else {
        return;
    };
    the_page_brings_the_access_token(&mut browser).await;
}

/// A server with `auth_token`: the page opened as `/#token=…` keeps the token for the tab, takes
/// it out of the address bar, chats with it, still has it after a reload, and without it shows
/// the sign-in panel, whose pasted token works as well.
async fn the_page_brings_the_access_token(browser: &mut impl Page) {
    let server = TestServer::builder()
        .workspace(workspace())
        .config(|c| c.auth_token = Some("tok en/1".into()))
        .start()
        .await;
    browser.open(&server.url("/#token=tok%20en%2F1")).await;
    assert_eq!(
        (
            browser.eval("location.hash").await,
            browser.tab_token().await,
            browser.info().await
        ),
        (json!(""), json!("\"tok en/1\""), json!("loaded")),
        "the token left the address bar for the tab's storage, and the API answered"
    );
    browser.send("hello").await;
    browser.wait_answers(1).await;
    browser.reload_and_wait().await;
    assert_eq!(
        browser.info().await,
        json!("loaded"),
        "after a reload the token comes from the tab's storage"
    );
    browser.forget_tab_token().await;
    browser.reload().await;
    browser.wait_info("failed").await;
    browser.wait_sign_in().await;
    let shown = browser.text(SIGN_IN).await;
    assert!(
        shown
            .as_str()
            .unwrap()
            .contains("This server needs you to sign in"),
        "{shown}"
    );
    // The token pasted into the panel: the page connects with it and keeps it for the tab.
    browser.sign_in("tok en/1").await;
    browser.wait_ready().await;
    assert_eq!(browser.tab_token().await, json!("\"tok en/1\""));
    server.shutdown().await;
}
