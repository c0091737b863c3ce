//! A chat on the page: streamed answers, tool cards, hook chips, the history across a reload
//! (checked against what the upstream received), model output that tries to inject HTML, Stop,
//! notices and errors, skill switches and session hooks, the MCP tools listed by server, and a
//! demo conversation.

use serde_json::{json, Value};

use super::chromium::Chromium;
use super::driver::Page;
use super::firefox::Firefox;
use super::hookwire_page::*;
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

/// The default skill's hook, as the upstream receives it.
fn brevity() -> String {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("skills/concise/hooks/brevity.md");
    std::fs::read_to_string(path)
        .unwrap()
        .trim_end()
        .to_string()
}

/// The turn's list of steps: its label, what each step holds, and whether the answer comes right
/// after it.
const STEPS: &str = "(() => { const s = document.querySelectorAll('ol.steps'); if (s.length !== 1) return s.length;
    return [s[0].getAttribute('aria-label'), Array.from(s[0].children).map(li => li.tagName === 'LI' && li.firstElementChild.className),
        s[0].nextElementSibling === document.querySelector('.msg.assistant')]; })()";

/// The answer as HTML (what it holds, what it may not: images, scripts, links, anything that
/// ran), the tool card, and what the page loaded.
const ANSWER_SHAPE: &str = "(() => { const a = document.querySelector('.msg.assistant'); return {
    text: a.innerText, strong: !!a.querySelector('strong'), code: !!a.querySelector('pre code'),
    imgs: document.querySelectorAll('img').length, scripts: document.querySelectorAll('#transcript script').length,
    links: Array.from(a.querySelectorAll('a')).length, pwned: window.__pwned === undefined ? null : window.__pwned,
    toolOpen: document.querySelector('.tool-card').open,
    toolResult: document.querySelector('.tool-card .result').textContent,
    loaded: Array.from(document.scripts).map(s => (s.type === 'module' ? 'module ' : '') + s.getAttribute('src')),
    outside: performance.getEntriesByType('resource').map(e => e.name).filter(n => !n.startsWith(location.origin + '/')) }; })()";

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

    browser.send("what does the readme say?").await;
    browser.wait_answer().await;
    let page = browser.eval(ANSWER_SHAPE).await;
    assert_eq!(
        browser.first_text(USER_MESSAGE).await,
        "what does the readme say?"
    );
    let text = page["text"].as_str().unwrap();
    assert!(text.contains("The readme says hello."), "{page}");
    assert_eq!(
        (page["strong"].as_bool(), page["code"].as_bool()),
        (Some(true), Some(true))
    );
    assert!(
        text.contains("<img src=x onerror="),
        "HTML from the model is shown as text"
    );
    assert!(text.contains("<script>"));
    assert_eq!(
        (
            page["imgs"].as_u64(),
            page["scripts"].as_u64(),
            page["links"].as_u64()
        ),
        (Some(0), Some(0), Some(0))
    );
    assert_eq!(page["pwned"], Value::Null, "nothing the model wrote ran");
    let plan = browser.first_text(PLAN).await;
    assert!(plan.as_str().unwrap().contains("read the readme"), "{plan}");
    let tool = browser.first_text(TOOL_SUMMARY).await;
    assert!(tool.as_str().unwrap().contains("read_file"), "{tool}");
    assert_eq!(
        page["toolOpen"], false,
        "tool cards are collapsed by default"
    );
    assert!(page["toolResult"]
        .as_str()
        .unwrap()
        .contains("hello from the readme"));
    assert_eq!(
        browser.texts(HOOK_CHIP).await,
        Vec::<String>::new(),
        "the example skills' hooks are per call: no chip"
    );
    let history = browser.stored("history").await;
    let history = history.as_array().unwrap();
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
    let after = [
        browser.count(HOOK_CHIP).await,
        browser.count(TOOL_CARD).await,
        browser.count(ANSWER).await,
    ];
    assert_eq!(after, [json!(0), json!(1), json!(1)]);
    assert_eq!(
        browser.eval(STEPS).await,
        json!(["Steps of this turn", ["plan", "tool-card"], true]),
        "the same steps after a reload"
    );
    upstream.push(Reply::text(&["Second answer."]));
    browser.send("and again").await;
    browser.wait_answers(2).await;
    let last = upstream.requests().pop().unwrap();
    let messages = last.messages();
    assert!(messages
        .iter()
        .any(|(r, c)| r == "user" && c == "what does the readme say?"));
    let copies = messages.iter().filter(|(_, c)| *c == brevity()).count();
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
        .eval("(() => { const c = document.getElementById('composer').getBoundingClientRect(); return document.documentElement.scrollWidth <= 390 && c.bottom < 800.5 && c.width > 300 && document.getElementById('panel').hidden; })()")
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
    browser.toggle_tools().await; // tools off: a direct call
    browser.send("go on forever").await;
    browser.wait_streaming(1, "tick").await;
    assert_eq!(
        browser.disabled("input").await,
        json!(true),
        "input disabled while running"
    );
    browser.stop().await;
    browser.wait_idle().await;
    assert_eq!(browser.first_text(NOTE).await, "ended: cancelled");
    assert!(
        upstream
            .wait_dropped(std::time::Duration::from_secs(1))
            .await,
        "the upstream request was dropped"
    );
    assert_eq!(
        upstream.requests()[0].body.get("tools"),
        None,
        "the tools switch was off"
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
    assert_eq!(browser.hidden("banner").await, json!(true));
    browser.send("hello").await;
    browser.wait_idle_with(CHAT_ERROR).await;
    let failure = browser.failure().await;
    assert_eq!(
        failure["title"], "The model service refused this conversation.",
        "plain words, not the code: {failure}"
    );
    assert!(
        failure["detail"]
            .as_str()
            .unwrap()
            .contains("upstream: the model API answered HTTP 400: model overloaded"),
        "the technical detail stays: {failure}"
    );
    assert_eq!(browser.first_text(TOAST).await, "a hook says hi");
    assert_eq!(
        browser.stored("history").await,
        Value::Null,
        "a failed chat adds nothing to the history"
    );
    server.shutdown().await;

    let demo = TestServer::builder().workspace(workspace()).start().await;
    browser.open(&demo.url("/")).await;
    assert_eq!(
        browser.hidden("banner").await,
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
    browser.toggle_skill("concise").await;
    browser.send("check your answers").await;
    browser.wait_answer().await;
    let first = upstream.requests()[0].messages();
    assert!(
        !first.iter().any(|(_, c)| *c == brevity()),
        "the switched-off skill's hook is not sent"
    );
    assert!(
        first[0].1.contains("code-reader") && !first[0].1.contains("- concise"),
        "{}",
        first[0].1
    );
    let hooks = browser.stored("sessionHooks").await;
    assert_eq!(
        hooks.as_array().map(Vec::len),
        Some(1),
        "the session hook is stored: {hooks}"
    );
    let skills = browser.local("hookwire.skills").await;
    assert!(!skills.as_str().unwrap().contains("concise"), "{skills}");

    // After a reload the toggle is still off, and the session hook goes back with the next chat.
    browser.reload_and_wait().await;
    assert_eq!(browser.skill_checked("concise").await, json!(false));
    upstream.push(Reply::text(&["fine"]));
    upstream.push(Reply::text(&["{}"]));
    browser.toggle_tools().await;
    browser.send("next").await;
    browser.wait_answers(2).await;
    let judge = upstream.requests().pop().unwrap();
    assert_eq!(
        judge.messages()[0].1.lines().next(),
        Some("JUDGE fine"),
        "the session hook ran"
    );
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
    browser.wait_shown("#tools-list .tool-group-title").await;
    let groups = browser.texts("#tools-list .tool-group").await;
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
    browser.send("list the files").await;
    browser.wait_answer().await;
    // Forget what was drawn: the view comes back from the history alone.
    browser.forget_stored("transcript").await;
    browser.reload_and_wait().await;
    let tool = browser.first_text(TOOL_SUMMARY).await;
    assert!(tool.as_str().unwrap().contains("list_dir"), "{tool}");
    let result = browser
        .eval("document.querySelector('.tool-card .result')?.textContent ?? null")
        .await;
    assert!(result.as_str().unwrap().contains("b.txt"), "{result}");
    assert_eq!(
        [
            browser.count(USER_MESSAGE).await,
            browser.count(ANSWER).await
        ],
        [json!(1), json!(1)]
    );

    upstream.push(Reply::text(&["It says bee."]));
    browser.send("what is in the second file?").await;
    browser.wait_answers(2).await;
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

/// A real demo conversation with the repository's skills on and hooks traced, after an earlier
/// conversation: "list the files", then "search for TODO" (the README's screenshot of it comes
/// from `screenshots::readme_screenshots_in_chromium`).
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
    browser.set_desktop_viewport(1280, 900).await;
    browser.open(&server.url("/")).await;
    browser.toggle_trace().await;
    browser.send("hello").await;
    browser.wait_answers(1).await;
    browser.new_chat().await;
    for (count, input) in [(1, "list the files"), (2, "search for TODO")] {
        browser.send(input).await;
        browser.wait_answers(count).await;
    }
    let plans = browser.texts(PLAN).await;
    let tools = browser.texts(TOOL_SUMMARY).await;
    let answers = browser.texts(ANSWER).await;
    let chips = browser.texts(HOOK_CHIP).await;
    let page = format!("{plans:?} {tools:?} {answers:?}");
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
    assert_eq!(chips.len(), 0, "no persistent hook, no chip: {chips:?}");
    browser.screenshot("chromium-demo.png").await;
    server.shutdown().await;
}
