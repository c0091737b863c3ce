//! The browser page in real headless Chromium (over the DevTools protocol) and Firefox (over
//! WebDriver BiDi): chat, stream, tool cards, hook chips, history across a reload (checked against
//! what the upstream received), Stop, a connection lost mid-answer, reconnects, and model output
//! that tries to inject HTML. Conversations and exports are in `conversations.rs`, the Hooks tab
//! and the trace timeline in `hooks_tab.rs`.
//! Without a browser the tests say they were skipped and why; under `CI=true` they fail instead.

mod chromium;
mod conversations;
mod driver;
mod firefox;
mod hooks_tab;
mod page;
mod token;
mod trace_id;
mod voice;

use std::time::Duration;

use serde_json::{json, Value};

use self::chromium::Chromium;
use self::driver::Page;
use self::firefox::Firefox;

use crate::agent::workspace;
use crate::common::*;

async fn server_with_example_skills(upstream: &FakeUpstream) -> TestServer {
    let skills = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("skills");
    TestServer::builder()
        .workspace(workspace())
        .upstream(upstream)
        .skills(skills)
        .start()
        .await
}

/// The turn's list of steps: its label, what each step holds, and whether the answer comes right
/// after it.
const STEPS: &str = "(() => { const s = document.querySelectorAll('ol.steps'); if (s.length !== 1) return s.length;
    return [s[0].getAttribute('aria-label'), Array.from(s[0].children).map(li => li.tagName === 'LI' && li.firstElementChild.className),
        s[0].nextElementSibling === document.querySelector('.msg.assistant')]; })()";

const HOSTILE: &str = "The readme says **hello**.\n\n```rust\nfn main() {}\n```\n\n<img src=x onerror=\"window.__pwned=1\"> <script>window.__pwned=2</script> [x](javascript:window.__pwned=3)";

#[tokio::test]
async fn chat_tools_hooks_history_and_reload_in_chromium() {
    let Some(mut browser) = Chromium::launch().await else {
        return;
    };
    chat_tools_hooks_history_and_reload(&mut browser, "chromium").await;
}

#[tokio::test]
async fn chat_tools_hooks_history_and_reload_in_firefox() {
    let Some(mut browser) = Firefox::launch().await else {
        return;
    };
    chat_tools_hooks_history_and_reload(&mut browser, "firefox").await;
}

/// The page's main path in `browser`: a chat with a plan, a tool card, a hook chip and hostile
/// Markdown; a reload that keeps it all and sends it back; a phone-sized screen. Screenshots go
/// to `target/browser/<name>-*.png`.
async fn chat_tools_hooks_history_and_reload(browser: &mut impl Page, name: &str) {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["[NEED_TOOL] read the readme"]));
    upstream.push(Reply::tool_calls(&[(
        "c1",
        "read_file",
        json!({"path":"README.md"}),
    )]));
    let pieces: Vec<String> = HOSTILE.split_inclusive(' ').map(str::to_string).collect();
    upstream.push(Reply::text(
        &pieces.iter().map(String::as_str).collect::<Vec<_>>(),
    ));
    let server = server_with_example_skills(&upstream).await;
    browser.open(&server.url("/")).await;

    browser.type_and_enter("what does the readme say?").await;
    browser
        .wait_for(
            "document.body.dataset.state === 'idle' && !!document.querySelector('.msg.assistant')",
        )
        .await;
    let page = browser
        .eval(
            "(() => { const a = document.querySelector('.msg.assistant'); return {
                text: a.innerText, strong: !!a.querySelector('strong'), code: !!a.querySelector('pre code'),
                imgs: document.querySelectorAll('img').length, scripts: document.querySelectorAll('#transcript script').length,
                links: Array.from(a.querySelectorAll('a')).length, pwned: window.__pwned === undefined ? null : window.__pwned,
                user: document.querySelector('.msg.user').innerText,
                plan: document.querySelector('.plan').innerText,
                tool: document.querySelector('.tool-card summary').innerText,
                toolOpen: document.querySelector('.tool-card').open,
                toolResult: document.querySelector('.tool-card .result').textContent,
                chips: Array.from(document.querySelectorAll('.hook-chip')).map(c => c.innerText),
                history: JSON.parse(localStorage.getItem('hookwire.conversation.' + JSON.parse(localStorage.getItem('hookwire.current')) + '.history')),
                loaded: Array.from(document.scripts).map(s => (s.type === 'module' ? 'module ' : '') + s.getAttribute('src')),
                outside: performance.getEntriesByType('resource').map(e => e.name).filter(n => !n.startsWith(location.origin + '/')) }; })()",
        )
        .await;
    assert_eq!(page["user"], "what does the readme say?");
    assert!(
        page["text"]
            .as_str()
            .unwrap()
            .contains("The readme says hello."),
        "{page}"
    );
    assert_eq!(
        (page["strong"].as_bool(), page["code"].as_bool()),
        (Some(true), Some(true))
    );
    assert!(
        page["text"]
            .as_str()
            .unwrap()
            .contains("<img src=x onerror="),
        "HTML from the model is shown as text"
    );
    assert!(page["text"].as_str().unwrap().contains("<script>"));
    assert_eq!(
        (
            page["imgs"].as_u64(),
            page["scripts"].as_u64(),
            page["links"].as_u64()
        ),
        (Some(0), Some(0), Some(0))
    );
    assert_eq!(page["pwned"], Value::Null, "nothing the model wrote ran");
    assert!(page["plan"].as_str().unwrap().contains("read the readme"));
    assert!(page["tool"].as_str().unwrap().contains("read_file"));
    assert_eq!(
        page["toolOpen"], false,
        "tool cards are collapsed by default"
    );
    assert!(page["toolResult"]
        .as_str()
        .unwrap()
        .contains("hello from the readme"));
    assert_eq!(
        page["chips"],
        json!([]),
        "the example skills' hooks are per call: no chip"
    );
    let history = page["history"].as_array().unwrap();
    let roles: Vec<&str> = history
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["user", "assistant", "assistant", "tool", "assistant"],
        "done.turn: the input, the plan, the call, its result, the answer: {history:?}"
    );
    assert_eq!(history[2]["tool_calls"][0]["id"], "c1");
    assert_eq!(
        page["loaded"],
        json!([
            "theme.js",
            "vendor/markdown-it.min.js",
            "vendor/purify.min.js",
            "vendor/highlight.min.js",
            "module app.js"
        ]),
        "the vendored libraries, then the page's entry module (which imports the rest)"
    );
    assert_eq!(page["outside"], json!([]), "nothing loaded from outside");
    browser.screenshot(&format!("{name}-chat.png")).await;

    // Reload: everything is still there, and the next chat sends the history back.
    assert_eq!(
        browser.eval(STEPS).await,
        json!(["Steps of this turn", ["plan", "tool-card"], true]),
        "the plan and the tool call are the steps of one turn, which the answer follows"
    );
    browser.reload_and_wait().await;
    let after = browser.eval("[document.querySelectorAll('.hook-chip').length, document.querySelectorAll('.tool-card').length, document.querySelectorAll('.msg.assistant').length]").await;
    assert_eq!(after, json!([0, 1, 1]));
    assert_eq!(
        browser.eval(STEPS).await,
        json!(["Steps of this turn", ["plan", "tool-card"], true]),
        "the same steps after a reload"
    );
    upstream.push(Reply::text(&["Second answer."]));
    browser.type_and_enter("and again").await;
    browser.wait_for("document.querySelectorAll('.msg.assistant').length === 2 && document.body.dataset.state === 'idle'").await;
    let last = upstream.requests().pop().unwrap();
    let messages = last.messages();
    assert!(messages
        .iter()
        .any(|(r, c)| r == "user" && c == "what does the readme say?"));
    let brevity = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("skills/concise/hooks/brevity.md"),
    )
    .unwrap();
    let copies = messages
        .iter()
        .filter(|(_, c)| c == brevity.trim_end())
        .count();
    assert_eq!(
        copies, 1,
        "the default skill's hook is not persistent: one copy, never more"
    );
    browser
        .screenshot(&format!("{name}-after-reload.png"))
        .await;

    // A phone-sized screen: nothing overflows sideways, the composer is on screen.
    browser.set_viewport(390, 800).await;
    browser.reload_and_wait().await;
    let fits = browser
        .eval("(() => { const c = document.getElementById('composer').getBoundingClientRect(); return document.documentElement.scrollWidth <= 390 && c.bottom <= 800 && c.width > 300 && document.getElementById('panel').hidden; })()")
        .await;
    assert_eq!(fits, json!(true));
    browser.screenshot(&format!("{name}-phone.png")).await;
    server.shutdown().await;
}

#[tokio::test]
async fn stop_cancels_the_running_chat_in_chromium() {
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
    browser.open(&server.url("/")).await;
    browser
        .eval("document.getElementById('tools-switch').click()")
        .await; // tools off: a direct call
    browser.type_and_enter("go on forever").await;
    browser.wait_for("document.body.dataset.state === 'running' && (document.querySelector('.msg.assistant')?.innerText || '').includes('tick')").await;
    assert_eq!(
        browser
            .eval("document.getElementById('input').disabled")
            .await,
        json!(true),
        "input disabled while running"
    );
    browser
        .eval("document.getElementById('stop').click()")
        .await;
    browser
        .wait_for("document.body.dataset.state === 'idle'")
        .await;
    let note = browser
        .eval("document.querySelector('.note').innerText")
        .await;
    assert_eq!(note, "ended: cancelled");
    assert!(
        upstream.wait_dropped(Duration::from_secs(1)).await,
        "the upstream request was dropped"
    );
    assert_eq!(
        upstream.requests()[0].body.get("tools"),
        None,
        "the tools switch was off"
    );
    server.shutdown().await;
}

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
    browser
        .eval("document.getElementById('tools-switch').click()")
        .await;
    browser.type_and_enter("go on forever").await;
    // Two ticks in, so that the stored partial answer below has more than its first delta.
    browser.wait_for("document.body.dataset.state === 'running' && (document.querySelector('.msg.assistant')?.innerText || '').includes('tick tick')").await;
    relay.cut();
    browser
        .wait_for("!!document.querySelector('.chat-error')")
        .await;
    let page = browser
        .eval(
            "(() => ({ error: document.querySelector('.chat-error').innerText,
                answer: document.querySelector('.msg.assistant').innerText,
                history: localStorage.getItem('hookwire.conversation.' + JSON.parse(localStorage.getItem('hookwire.current')) + '.history'),
                kinds: JSON.parse(localStorage.getItem('hookwire.conversation.' + JSON.parse(localStorage.getItem('hookwire.current')) + '.transcript')).map(i => i.kind),
                saved: JSON.parse(localStorage.getItem('hookwire.conversation.' + JSON.parse(localStorage.getItem('hookwire.current')) + '.transcript'))[1].text }))()",
        )
        .await;
    assert_eq!(page["error"], "connection lost; the reply was cut off");
    assert!(
        page["answer"].as_str().unwrap().starts_with("tick"),
        "the partial answer stays: {page}"
    );
    assert_eq!(
        page["history"],
        Value::Null,
        "a lost chat adds nothing to the history"
    );
    assert_eq!(page["kinds"], json!(["user", "assistant", "error"]));
    assert!(
        page["saved"].as_str().unwrap().starts_with("tick tick"),
        "the partial answer is stored with its text: {page}"
    );

    // The page reconnects by itself, and the next chat does not carry the lost one.
    browser
        .wait_for("document.body.dataset.state === 'idle' && document.getElementById('status-text').innerText === 'connected'")
        .await;
    upstream.push(Reply::text(&["Back again."]));
    browser.type_and_enter("are you there?").await;
    browser.wait_for("document.querySelectorAll('.msg.assistant').length === 2 && document.body.dataset.state === 'idle'").await;
    let last = upstream.requests().pop().unwrap().messages();
    assert!(
        last.iter()
            .any(|(r, c)| r == "user" && c == "are you there?")
            && !last.iter().any(|(_, c)| c == "go on forever"),
        "{last:?}"
    );
    server.shutdown().await;
}

/// Sends a `notice` at the start of every chat.
struct Greeter;

#[async_trait::async_trait]
impl hookwire::hooks::AgentHook for Greeter {
    async fn post_send_message(
        &self,
        ctx: &mut hookwire::hooks::HookContext,
    ) -> hookwire::hooks::HookResult {
        ctx.notify(
            hookwire::agent::NoticeLevel::Warn,
            "a hook says hi",
            "greeter",
        );
        Ok(())
    }
}

#[tokio::test]
async fn notices_errors_and_the_demo_banner_in_chromium() {
    let Some(mut browser) = Chromium::launch().await else {
        return;
    };
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::Status(400, "model overloaded".into()));
    let server = TestServer::builder()
        .workspace(workspace())
        .upstream(&upstream)
        .agent(|b| b.hook(std::sync::Arc::new(Greeter)))
        .start()
        .await;
    browser.open(&server.url("/")).await;
    assert_eq!(
        browser
            .eval("document.getElementById('banner').hidden")
            .await,
        json!(true)
    );
    browser.type_and_enter("hello").await;
    browser
        .wait_for(
            "document.body.dataset.state === 'idle' && !!document.querySelector('.chat-error')",
        )
        .await;
    let shown = browser.eval("[document.querySelector('.chat-error').innerText, document.querySelector('.toast')?.innerText]").await;
    assert!(
        shown[0].as_str().unwrap().contains("upstream")
            && shown[0].as_str().unwrap().contains("model overloaded"),
        "{shown}"
    );
    assert_eq!(shown[1], "a hook says hi");
    let history = browser
        .eval("JSON.parse(localStorage.getItem('hookwire.conversation.' + JSON.parse(localStorage.getItem('hookwire.current')) + '.history') || '[]').length")
        .await;
    assert_eq!(
        history,
        json!(0),
        "a failed chat adds nothing to the history"
    );
    server.shutdown().await;

    let demo = TestServer::builder().workspace(workspace()).start().await;
    browser.open(&demo.url("/")).await;
    assert_eq!(
        browser
            .eval("document.getElementById('banner').hidden")
            .await,
        json!(false),
        "the demo banner shows"
    );
    demo.shutdown().await;
}

#[tokio::test]
async fn skill_toggles_and_session_hooks_persist_in_chromium() {
    let Some(mut browser) = Chromium::launch().await else {
        return;
    };
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["[NEED_TOOL] register"]));
    upstream.push(Reply::tool_calls(&[(
        "r1",
        "register_hook",
        json!({"event":"stop","prompt":"JUDGE {{assistant_output}}"}),
    )]));
    upstream.push(Reply::text(&["registered"]));
    let server = server_with_example_skills(&upstream).await;
    browser.open(&server.url("/")).await;
    browser
        .eval("document.querySelector('#skills input[data-skill=concise]').click()")
        .await;
    browser.type_and_enter("check your answers").await;
    browser
        .wait_for(
            "document.body.dataset.state === 'idle' && !!document.querySelector('.msg.assistant')",
        )
        .await;
    let brevity = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("skills/concise/hooks/brevity.md"),
    )
    .unwrap();
    let first = upstream.requests()[0].messages();
    assert!(
        !first.iter().any(|(_, c)| c == brevity.trim_end()),
        "the switched-off skill's hook is not sent"
    );
    assert!(
        first[0].1.contains("code-reader") && !first[0].1.contains("- concise"),
        "{}",
        first[0].1
    );
    let stored = browser.eval("[localStorage.getItem('hookwire.skills'), JSON.parse(localStorage.getItem('hookwire.conversation.' + JSON.parse(localStorage.getItem('hookwire.current')) + '.sessionHooks')).length, document.querySelectorAll('.hook-chip').length]").await;
    assert_eq!(stored[1], json!(1), "the session hook is stored: {stored}");
    assert!(!stored[0].as_str().unwrap().contains("concise"));

    // After a reload the toggle is still off, and the session hook goes back with the next chat.
    browser.reload_and_wait().await;
    assert_eq!(
        browser
            .eval("document.querySelector('#skills input[data-skill=concise]').checked")
            .await,
        json!(false)
    );
    upstream.push(Reply::text(&["fine"]));
    upstream.push(Reply::text(&["{}"]));
    browser
        .eval("document.getElementById('tools-switch').click()")
        .await;
    browser.type_and_enter("next").await;
    browser.wait_for("document.querySelectorAll('.msg.assistant').length === 2 && document.body.dataset.state === 'idle'").await;
    let judge = upstream.requests().pop().unwrap();
    assert_eq!(
        judge.messages()[0].1.lines().next(),
        Some("JUDGE fine"),
        "the session hook ran"
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
    browser
        .wait_for("document.body.dataset.state === 'offline' && document.getElementById('status-text').innerText.startsWith('offline, retrying')")
        .await;
    // Offline: Send is disabled, and Enter keeps the draft instead of losing it.
    assert_eq!(
        browser
            .eval("document.getElementById('send').disabled")
            .await,
        json!(true),
        "no sending while offline"
    );
    browser.type_and_enter("hello again").await;
    assert_eq!(
        browser
            .eval("[document.getElementById('input').value, document.querySelectorAll('.msg.user').length]")
            .await,
        json!(["hello again", 0]),
        "the draft is kept and nothing was sent"
    );
    // The same address again: the page's back-off finds it without a reload.
    let again = TestServer::builder()
        .workspace(workspace())
        .config(|c| c.addr = addr.to_string())
        .start()
        .await;
    assert_eq!(again.addr, addr);
    browser
        .wait_for("document.body.dataset.state === 'idle' && document.getElementById('status-text').innerText === 'connected'")
        .await;
    browser.type_and_enter("").await; // Enter sends the kept draft
    browser
        .wait_for("document.body.dataset.state === 'idle' && (document.querySelector('.msg.user')?.innerText || '').includes('hello again') && (document.querySelector('.msg.assistant')?.innerText || '').includes('demo')")
        .await;
    again.shutdown().await;
}

/// A real demo conversation with the repository's skills on and hooks traced, after an earlier
/// conversation: "list the files", then "search for TODO" (the README's screenshot of it comes
/// from `page::readme_screenshots_in_chromium`).
#[tokio::test]
async fn a_demo_conversation_in_chromium() {
    let Some(mut browser) = Chromium::launch().await else {
        return;
    };
    let server = TestServer::builder()
        .workspace(crate::demo::workspace())
        .skills(crate::demo::skills_dir())
        .start()
        .await;
    // A desktop screen tall enough for both exchanges.
    browser
        .call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": false}),
        )
        .await;
    browser.open(&server.url("/")).await;
    browser
        .eval("document.getElementById('trace-switch').click()")
        .await;
    browser.type_and_enter("hello").await;
    browser
        .wait_for("document.body.dataset.state === 'idle' && document.querySelectorAll('.msg.assistant').length === 1")
        .await;
    browser
        .eval("document.getElementById('new-chat').click()")
        .await;
    for (count, input) in [(1, "list the files"), (2, "search for TODO")] {
        browser.type_and_enter(input).await;
        browser
            .wait_for(&format!("document.body.dataset.state === 'idle' && document.querySelectorAll('.msg.assistant').length === {count}"))
            .await;
    }
    let page = browser
        .eval(
            "(() => { const all = (s) => Array.from(document.querySelectorAll(s)).map(e => e.innerText); return {
                plans: all('.plan'), tools: all('.tool-card summary'), answers: all('.msg.assistant'),
                chips: all('.hook-chip') }; })()",
        )
        .await;
    let texts = |key: &str| -> Vec<String> {
        page[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect()
    };
    let (plans, tools, answers) = (texts("plans"), texts("tools"), texts("answers"));
    assert_eq!(plans.len(), 2, "{page}");
    assert!(
        plans[0].contains("list_dir") && plans[1].contains("search_text"),
        "{page}"
    );
    assert!(
        tools[0].contains("list_dir") && tools[1].contains("search_text"),
        "{page}"
    );
    assert!(
        answers[0].starts_with("The workspace has 4 entries: README.md"),
        "{page}"
    );
    assert!(
        answers[1].starts_with("Found 3 matches for TODO: ") && answers[1].contains("notes.txt:1"),
        "{page}"
    );
    assert_eq!(
        texts("chips").len(),
        0,
        "no persistent hook, no chip: {page}"
    );
    browser.screenshot("chromium-demo.png").await;
    server.shutdown().await;
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
/// it out of the address bar, chats with it, still has it after a reload, and without it says
/// what to do.
async fn the_page_brings_the_access_token(browser: &mut impl Page) {
    let server = TestServer::builder()
        .workspace(workspace())
        .config(|c| c.auth_token = Some("tok en/1".into()))
        .start()
        .await;
    browser.open(&server.url("/#token=tok%20en%2F1")).await;
    assert_eq!(
        browser
            .eval("[location.hash, sessionStorage.getItem('hookwire.token'), document.body.dataset.info]")
            .await,
        json!(["", "\"tok en/1\"", "loaded"]),
        "the token left the address bar for the tab's storage, and the API answered"
    );
    browser.type_and_enter("hello").await;
    browser
        .wait_for("document.body.dataset.state === 'idle' && document.querySelectorAll('.msg.assistant').length === 1")
        .await;
    browser.reload_and_wait().await;
    assert_eq!(
        browser.eval("document.body.dataset.info").await,
        json!("loaded"),
        "after a reload the token comes from the tab's storage"
    );
    browser
        .eval("sessionStorage.removeItem('hookwire.token')")
        .await;
    browser.reload().await;
    browser
        .wait_for("!!document.body && document.body.dataset.info === 'failed'")
        .await;
    let shown = browser
        .eval("document.getElementById('skills').innerText")
        .await;
    assert!(
        shown.as_str().unwrap().contains("needs an access token"),
        "{shown}"
    );
    server.shutdown().await;
}

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
    let answers = |n: usize| {
        format!("document.querySelectorAll('.msg.assistant').length === {n} && document.body.dataset.state === 'idle'")
    };
    browser.type_and_enter("one").await;
    browser.wait_for(&answers(1)).await;
    browser.type_and_enter("two").await;
    browser.wait_for(&answers(2)).await;
    assert_eq!(
        browser
            .eval("document.querySelectorAll('.compact-divider').length")
            .await,
        json!(0),
        "one group: nothing to summarise yet"
    );
    browser.type_and_enter("three").await;
    browser.wait_for(&answers(3)).await;
    let divider = browser
        .eval("(() => { const d = document.querySelector('.compact-divider'); d.querySelector('summary').click();
               return {label: d.querySelector('summary').innerText, open: d.open, text: d.querySelector('.summary-text').innerText,
                       history: JSON.parse(localStorage.getItem('hookwire.conversation.' + JSON.parse(localStorage.getItem('hookwire.current')) + '.history'))}; })()")
        .await;
    assert_eq!(
        divider["label"], "2 earlier messages summarised",
        "{divider}"
    );
    assert_eq!(divider["open"], true);
    assert_eq!(divider["text"], "SUMMARY ONE: a long alpha answer.");
    let history = divider["history"].as_array().unwrap();
    assert_eq!(history[0]["role"], "user", "{divider}");
    assert_eq!(history[0]["_compact"]["count"], 2, "{divider}");
    assert_eq!(history[1]["content"], "two");
    assert_eq!(
        history.len(),
        5,
        "summary, two, short two, three, short three"
    );

    // The divider is where the first chat was: before "two", after the folded "one" and its answer.
    let place = "(() => { const d = document.querySelector('.compact-divider');
        const users = [...document.querySelectorAll('.msg.user')];
        const next = d.nextElementSibling;
        return {next: next && next.innerText, before: d.previousElementSibling.classList.contains('folded') || d.previousElementSibling.previousElementSibling.classList.contains('folded'),
                folded: users.map((u) => u.classList.contains('folded')),
                answer: document.querySelector('.msg.assistant').classList.contains('folded')}; })()";
    let shown = browser.eval(place).await;
    assert_eq!(shown["next"], "two", "{shown}");
    assert_eq!(shown["folded"], json!([true, false, false]), "{shown}");
    assert_eq!(shown["answer"], true, "{shown}");

    // After a reload the divider is still there; the Compact button summarises on request.
    browser.reload_and_wait().await;
    assert_eq!(
        browser.eval(place).await["folded"],
        json!([true, false, false]),
        "folded after a reload"
    );
    browser
        .wait_for("document.body.dataset.state === 'idle'")
        .await;
    assert_eq!(
        browser
            .eval("document.querySelectorAll('.compact-divider').length")
            .await,
        json!(1)
    );
    upstream.push(Reply::text(&["SUMMARY TWO: alpha, then two."]));
    browser
        .eval("document.getElementById('compact').click()")
        .await;
    browser
        .wait_for("document.querySelectorAll('.compact-divider').length === 2 && document.body.dataset.state === 'idle'")
        .await;
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
        browser
            .eval("document.querySelectorAll('.compact-divider summary')[1].innerText")
            .await,
        json!("3 earlier messages summarised")
    );

    // The next chat sends the compacted history, the summary as user text.
    upstream.push(Reply::text(&["short four"]));
    browser.type_and_enter("four").await;
    browser.wait_for(&answers(4)).await;
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
    browser.type_and_enter("read big.txt").await;
    browser.wait_for(&answers(5)).await;
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
    let idle_with = |selector: &str| {
        format!("document.body.dataset.state === 'idle' && !!document.querySelector('{selector}')")
    };

    upstream.push(Reply::text(&["[NEED_TOOL] read the notes"]));
    upstream.push(Reply::tool_calls(&[(
        "r1",
        "read_file",
        json!({"path":"notes.txt"}),
    )]));
    browser.type_and_enter("read my notes").await;
    browser
        .wait_for(&idle_with(".approval-card button.approve"))
        .await;
    let card = browser
        .eval("(() => { const c = document.querySelector('.approval-card'); return {text: c.innerText, role: c.getAttribute('role')}; })()")
        .await;
    let text = card["text"].as_str().unwrap();
    assert!(
        text.contains("read_file") && text.contains("notes.txt"),
        "{text}"
    );
    assert!(
        text.contains("Waiting for your approval")
            && text.contains("this server asks you before it runs read_file"),
        "the reason in words for the person: {text}"
    );
    assert_eq!(card["role"], "group");
    // Keyboard: focus Approve and press Enter (a real button takes it).
    upstream.push(Reply::text(&["Your notes say SECRET NOTES."]));
    browser
        .eval("document.querySelector('.approval-card button.approve').focus()")
        .await;
    browser.press_enter().await;
    browser
        .wait_for("document.body.dataset.state === 'idle' && document.querySelectorAll('.msg.assistant').length === 1")
        .await;
    let after = browser
        .eval(
            "({answer: document.querySelector('.msg.assistant').innerText,
                 tool: document.querySelector('.tool-card').innerText,
                 outcome: document.querySelector('.approval-outcome').innerText,
                 title: document.querySelector('.approval-title').innerText,
                 approval: localStorage.getItem('hookwire.conversation.' + JSON.parse(localStorage.getItem('hookwire.current')) + '.approval')})",
        )
        .await;
    assert!(
        after["answer"].as_str().unwrap().contains("SECRET NOTES"),
        "{after}"
    );
    assert!(
        after["tool"].as_str().unwrap().contains("read_file"),
        "{after}"
    );
    assert_eq!(after["outcome"], "Approved");
    assert_eq!(
        after["title"], "You approved this call",
        "the title says what was decided"
    );
    assert_eq!(after["approval"], "null");

    // A second call waits; the page is reloaded before the decision; Deny with a reason.
    upstream.push(Reply::text(&["[NEED_TOOL] read again"]));
    upstream.push(Reply::tool_calls(&[(
        "r2",
        "read_file",
        json!({"path":"notes.txt"}),
    )]));
    browser.type_and_enter("read them again").await;
    browser
        .wait_for("document.querySelectorAll('.approval-card button.deny').length === 1 && document.body.dataset.state === 'idle'")
        .await;
    browser.reload_and_wait().await;
    browser
        .wait_for(&idle_with(".approval-card button.deny"))
        .await;
    upstream.push(Reply::text(&["Understood, I left them alone."]));
    browser
        .eval("(() => { const i = document.querySelector('.approval-card .approval-reason'); i.value = 'not twice'; document.querySelector('.approval-card button.deny').click(); })()")
        .await;
    browser
        .wait_for("document.body.dataset.state === 'idle' && document.querySelectorAll('.msg.assistant').length === 2")
        .await;
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
        let card = browser
            .eval("(() => { const c = document.querySelectorAll('.approval-card')[1]; return [c.querySelector('.approval-title').innerText, c.querySelector('.approval-outcome').innerText, c.querySelectorAll('button').length]; })()")
            .await;
        assert_eq!(
            card,
            json!(["You denied this call", "Denied, because: not twice", 0])
        );
        browser.reload_and_wait().await;
    }
    // The history the page keeps has both answers and no waiting approval.
    let stored = browser
        .eval("[JSON.parse(localStorage.getItem('hookwire.conversation.' + JSON.parse(localStorage.getItem('hookwire.current')) + '.history')).map(m => m.content), localStorage.getItem('hookwire.conversation.' + JSON.parse(localStorage.getItem('hookwire.current')) + '.approval')]")
        .await;
    let contents = stored[0].as_array().unwrap();
    assert!(
        contents.contains(&json!("Your notes say SECRET NOTES.")),
        "{stored}"
    );
    assert!(
        contents.contains(&json!("Understood, I left them alone.")),
        "{stored}"
    );
    assert_eq!(stored[1], "null");
    server.shutdown().await;
}

#[tokio::test]
async fn the_page_lists_mcp_tools_by_server_in_chromium() {
    let Some(mut browser) = Chromium::launch().await else {
        return;
    };
    let upstream = FakeUpstream::start().await;
    let server = crate::mcp::start(&upstream, crate::mcp::stdio(&[])).await;
    crate::mcp::running(&server, 1).await;
    browser.open(&server.url("/")).await;
    browser
        .wait_for("!!document.querySelector('#tools-list .tool-group-title')")
        .await;
    let groups = browser
        .eval("Array.from(document.querySelectorAll('#tools-list .tool-group')).map(g => g.innerText)")
        .await;
    let groups: Vec<&str> = groups
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g.as_str().unwrap())
        .collect();
    assert!(
        groups[0].starts_with("built-in") && groups[0].contains("read_file"),
        "{groups:?}"
    );
    let mcp = groups
        .iter()
        .find(|g| g.starts_with("MCP: test"))
        .unwrap_or_else(|| panic!("{groups:?}"));
    assert!(
        mcp.contains("running") && mcp.contains("mcp__test__read_note"),
        "{mcp}"
    );
    assert!(
        !groups[0].contains("mcp__"),
        "MCP tools only under their server: {groups:?}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_follow_up_uses_an_earlier_tool_result_in_chromium() {
    let Some(mut browser) = Chromium::launch().await else {
        return;
    };
    a_follow_up_uses_an_earlier_tool_result(&mut browser).await;
}

#[tokio::test]
async fn a_follow_up_uses_an_earlier_tool_result_in_firefox() {
    let Some(mut browser) = Firefox::launch().await else {
        return;
    };
    a_follow_up_uses_an_earlier_tool_result(&mut browser).await;
}

/// List the files, reload (the tool card is rebuilt from the history even when the drawn
/// transcript is gone), ask about the second file: the upstream request carries the earlier
/// tool call and its result (docs/protocol.md §13).
async fn a_follow_up_uses_an_earlier_tool_result(browser: &mut impl Page) {
    let upstream = FakeUpstream::start().await;
    tool_round(
        &upstream,
        &[("call_ls", "list_dir", json!({"path": "."}))],
        "There are two files.",
    );
    let server = TestServer::builder()
        .workspace(workspace())
        .upstream(&upstream)
        .start()
        .await;
    browser.open(&server.url("/")).await;
    browser.type_and_enter("list the files").await;
    browser
        .wait_for(
            "document.body.dataset.state === 'idle' && !!document.querySelector('.msg.assistant')",
        )
        .await;
    // Forget what was drawn: the view comes back from the history alone.
    browser
        .eval("(localStorage.removeItem('hookwire.conversation.' + JSON.parse(localStorage.getItem('hookwire.current')) + '.transcript'), true)")
        .await;
    browser.reload_and_wait().await;
    let card = browser
        .eval("(() => { const c = document.querySelector('.tool-card'); return c && [c.querySelector('summary').innerText, c.querySelector('.result') && c.querySelector('.result').textContent, document.querySelectorAll('.msg.user').length, document.querySelectorAll('.msg.assistant').length]; })()")
        .await;
    assert!(card[0].as_str().unwrap().contains("list_dir"), "{card}");
    assert!(card[1].as_str().unwrap().contains("b.txt"), "{card}");
    assert_eq!(
        (card[2].as_u64(), card[3].as_u64()),
        (Some(1), Some(1)),
        "{card}"
    );

    upstream.push(Reply::text(&["It says bee."]));
    browser.type_and_enter("what is in the second file?").await;
    browser
        .wait_for("document.querySelectorAll('.msg.assistant').length === 2 && document.body.dataset.state === 'idle'")
        .await;
    let last = upstream.requests().pop().unwrap();
    let messages = last.body["messages"].as_array().unwrap().clone();
    let call = messages
        .iter()
        .position(|m| m["tool_calls"][0]["id"] == "call_ls")
        .unwrap_or_else(|| panic!("no earlier call in {messages:?}"));
    assert_eq!(messages[call + 1]["role"], "tool");
    assert_eq!(messages[call + 1]["tool_call_id"], "call_ls");
    assert!(messages[call + 1]["content"]
        .as_str()
        .unwrap()
        .contains("b.txt"));
    server.shutdown().await;
}
