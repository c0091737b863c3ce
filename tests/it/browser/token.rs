//! The access token in the page's URL fragment (`/#token=…`): the page in Chromium, behind the
//! shipped nginx config, chats with a server that needs the token, and neither the server's log
//! nor nginx's access log holds it (a fragment never leaves the browser; the WebSocket carries
//! the token in `Sec-WebSocket-Protocol`, which nothing logs).

use super::chromium::Chromium;
use super::driver::Page;
use crate::binary::Hookwire;
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
    browser.type_and_enter("hello").await;
    browser
        .wait_for(
            "document.body.dataset.state === 'idle' && !!document.querySelector('.msg.assistant')",
        )
        .await;
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
