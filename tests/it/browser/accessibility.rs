//! Accessibility: axe-core finds no serious or critical violation on any view, and every control
//! is reached by keyboard with a visible focus.

use serde_json::{json, Value};

use super::chromium::Chromium;
use super::driver::Page;
use super::firefox::Firefox;
use super::hookwire_page::*;
use super::page::RICH;
use crate::common::*;
use crate::hook_replay::{recorded, HOOKS, STRICTER};
use hookwire::hooks::record::RecordSettings;

/// axe-core (vendored from the npm registry in `tests/vendor/`), injected into the page.
const AXE: &str = include_str!("../../vendor/axe.min.js");

/// The serious and critical accessibility violations on the page as it is now, one line each
/// (rule, impact, the elements).
async fn axe_violations(browser: &mut impl Page) -> Vec<String> {
    if browser.eval("typeof window.axe").await != json!("object") {
        // Evaluated as a script in the page's global scope, so `window.axe` is defined.
        browser
            .eval(&format!(
                "(0, eval)({})",
                serde_json::to_string(AXE).unwrap()
            ))
            .await;
    }
    let found = browser
        .eval("(async () => { const r = await axe.run(document, {resultTypes: ['violations']});
            return r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
              .map(v => v.id + ' (' + v.impact + '): ' + v.nodes.map(n => n.target.join(' ') + ' ' + (n.failureSummary || '').replace(/\\s+/g, ' ')).join(' | ')); })()")
        .await;
    found
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn accessibility_of_every_view_in_chromium() {
    let Some(mut browser) = Chromium::launch().await else {
        return;
    };
    accessibility_of_every_view(&mut browser).await;
}

#[tokio::test]
async fn accessibility_of_every_view_in_firefox() {
    let Some(mut browser) = Firefox::launch().await else {
        return;
    };
    accessibility_of_every_view(&mut browser).await;
}

/// axe-core finds no serious or critical violation on any view: the empty chat, a chat with
/// Markdown and a tool card, an approval card, the Skills and Hooks tabs (with a replay of recorded
/// traffic), the dark theme, a phone,
/// the sign-in panel.
async fn accessibility_of_every_view(browser: &mut impl Page) {
    let upstream = FakeUpstream::start().await;
    let dir = crate::demo::workspace();
    let records = tempfile::tempdir().unwrap();
    let settings = RecordSettings::new(records.path());
    let server = TestServer::builder()
        .workspace(dir)
        .upstream(&upstream)
        .hooks(HOOKS)
        .config(move |c| {
            c.skills_dir = crate::demo::skills_dir();
            c.agent.approval.require_approval = vec!["read_file".into()];
            c.hook_record = Some(settings);
        })
        .start()
        .await;
    browser.set_viewport(1280, 900).await;
    browser.open(&server.url("/")).await;
    let mut found = Vec::new();
    let mut check = |view: &str, violations: Vec<String>| {
        found.extend(violations.into_iter().map(|v| format!("{view}: {v}")));
    };
    check("empty chat", axe_violations(browser).await);

    upstream.push(Reply::text(&["[NEED_TOOL] list them"]));
    upstream.push(Reply::tool_calls(&[(
        "l1",
        "list_dir",
        json!({"path":"."}),
    )]));
    upstream.push(Reply::text(&[RICH]));
    browser.send("list the files").await;
    browser.wait_answer().await;
    browser.click_first(TOOL_SUMMARY).await;
    check("chat with a tool card", axe_violations(browser).await);

    upstream.push(Reply::text(&["[NEED_TOOL] read"]));
    upstream.push(Reply::tool_calls(&[(
        "r1",
        "read_file",
        json!({"path":"notes.txt"}),
    )]));
    browser.send("read my notes").await;
    browser.wait_idle_with(APPROVE).await;
    check("approval", axe_violations(browser).await);

    for tab in ["skills", "hooks"] {
        browser.open_panel_tab(tab).await;
        if tab == "hooks" {
            browser.wait_hooks_refreshed(1).await;
        }
        check(&format!("{tab} tab"), axe_violations(browser).await);
    }
    // The replay of the recorded traffic after the guard was made stricter: a CHANGED row with
    // what differs.
    let landed = eventually(std::time::Duration::from_secs(10), || async {
        recorded(records.path()).len() >= 2
    })
    .await;
    assert!(landed, "{:?}", recorded(records.path()));
    let generation = server.sources.hook_files_generation();
    std::fs::write(server.workspace.path().join("server-hooks.yaml"), STRICTER).unwrap();
    let reloaded = eventually(std::time::Duration::from_secs(10), || async {
        server.sources.hook_files_generation() > generation
    })
    .await;
    assert!(reloaded, "the edited hook file was not reloaded");
    browser.replay_recorded(50).await;
    browser.wait_replayed().await;
    let replay = browser.replay_shown().await;
    assert!(
        replay["rows"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["mark"] == "CHANGED"),
        "{replay:#}"
    );
    check("hooks tab with a replay", axe_violations(browser).await);

    browser.set_theme("dark").await;
    check("dark theme", axe_violations(browser).await);

    browser.set_viewport(390, 800).await;
    browser.reload_and_wait().await;
    check("phone", axe_violations(browser).await);
    browser.toggle_panel().await;
    check("phone with the panel", axe_violations(browser).await);

    // The sign-in panel of a server that needs a token, saying why a token was refused.
    let guarded = TestServer::builder()
        .workspace(crate::demo::workspace())
        .config(|c| c.auth_token = Some("the right one".into()))
        .start()
        .await;
    browser.set_viewport(1280, 900).await;
    browser.navigate(&guarded.url("/")).await;
    browser.wait_sign_in().await;
    browser.sign_in("a wrong one").await;
    browser
        .wait_sign_in_problem("the token was refused: wrong token")
        .await;
    check("sign-in panel", axe_violations(browser).await);
    // Escape does not keep the focus there: the panel steps aside for the message box.
    browser
        .eval("document.activeElement.dispatchEvent(new KeyboardEvent('keydown', {key: 'Escape', bubbles: true}))")
        .await;
    assert_eq!(
        (
            browser.hidden(SIGN_IN).await,
            browser.eval("document.activeElement.id").await
        ),
        (json!(true), json!("input"))
    );
    assert!(found.is_empty(), "{found:#?}");
    guarded.shutdown().await;
    server.shutdown().await;
}

/// Every visible control is reached with Tab, in order, and shows where the focus is.
#[tokio::test]
async fn every_control_is_reached_by_keyboard_with_a_visible_focus_in_chromium() {
    let Some(mut browser) = Chromium::launch().await else {
        return;
    };
    let upstream = FakeUpstream::start().await;
    let server = TestServer::builder()
        .workspace(crate::demo::workspace())
        .upstream(&upstream)
        .skills(crate::demo::skills_dir())
        .start()
        .await;
    browser.set_viewport(1280, 900).await;
    browser.open(&server.url("/")).await;
    upstream.push(Reply::text(&["[NEED_TOOL] list them"]));
    upstream.push(Reply::tool_calls(&[(
        "l1",
        "list_dir",
        json!({"path":"."}),
    )]));
    upstream.push(Reply::text(&["Here:\n\n```sh\nls\n```\n"]));
    browser.send("list the files").await;
    browser.wait_answer().await;
    // A name for each element, and whether its focus shows (an outline or a ring).
    browser
        .eval("window.__name = (e) => e.id ? '#' + e.id : e.tagName.toLowerCase() + '.' + (e.className || '').toString().split(' ')[0] + ':' + (e.innerText || e.value || e.getAttribute('aria-label') || '').trim().slice(0, 20)")
        .await;
    let controls = browser
        .eval("Array.from(document.querySelectorAll('button, input, select, textarea, a[href], summary, [tabindex]')).filter(e => !e.disabled && e.tabIndex >= 0 && e.getClientRects().length && getComputedStyle(e).visibility !== 'hidden').map(window.__name)")
        .await;
    browser.eval("document.activeElement.blur()").await;
    let mut reached = Vec::new();
    let mut unseen = Vec::new();
    for _ in 0..controls.as_array().unwrap().len() + 5 {
        for kind in ["keyDown", "keyUp"] {
            browser
                .call(
                    "Input.dispatchKeyEvent",
                    json!({"type": kind, "key": "Tab", "code": "Tab", "windowsVirtualKeyCode": 9}),
                )
                .await;
        }
        let at = browser
            .eval("(() => { const e = document.activeElement; const s = getComputedStyle(e); return [window.__name(e), (s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0) || s.boxShadow !== 'none']; })()")
            .await;
        let name = at[0].as_str().unwrap().to_string();
        if at[1] != json!(true) {
            unseen.push(name.clone());
        }
        if !reached.contains(&name) {
            reached.push(name);
        }
    }
    let missing: Vec<&Value> = controls
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| !reached.contains(&c.as_str().unwrap().to_string()))
        .collect();
    assert!(
        missing.is_empty(),
        "not reached with Tab: {missing:?}; reached {reached:?}"
    );
    unseen.retain(|n| n != "body.:" && !n.starts_with("body"));
    assert!(unseen.is_empty(), "focus not visible on {unseen:?}");
    server.shutdown().await;
}
