//! The screenshots of the README and docs/ (kept in `docs/images/`), taken from a real page.

use serde_json::json;

use super::chromium::Chromium;
use super::driver::Page;
use super::hookwire_page::*;
use crate::common::*;

/// The screenshots of the README and docs/page.md, saved as `target/browser/docs/<name>.png` and
/// copied to `docs/images/`:
/// a demo conversation (`screenshot`), a call waiting for approval (`approval`), the Hooks tab
/// with meaningful hooks at every level (`hooks-tab`), a traced turn with a blocked call
/// (`trace`), the Skills tab (`skills-tab`), the dark theme (`dark`) and a phone (`phone`). The
/// folders have plain names (`…/my-project`, `…/etc/hookwire`), so no temp path shows.
#[tokio::test]
async fn readme_screenshots_in_chromium() {
    let Some(mut browser) = Chromium::launch().await else {
        return;
    };
    // A fixed, plain folder: the trust command shows the workspace's whole path.
    let base = std::env::temp_dir().join("hookwire-docs");
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(base.join("etc/hookwire")).unwrap();
    let server_hooks = base.join("etc/hookwire/hooks.yaml");
    std::fs::write(
        &server_hooks,
        "pre_tool_execution:\n  # Files named like secrets stay closed, whatever the model asks.\n  - name: no-secrets\n    matcher: read_file\n    command: 'if grep -qi secret; then echo \"files with secrets stay closed\" >&2; exit 2; fi'\n",
    )
    .unwrap();
    let project = tempfile::Builder::new()
        .prefix("my-project")
        .rand_bytes(0)
        .tempdir_in(&base)
        .unwrap();
    let root = project.path().to_path_buf();
    let demo = crate::demo::workspace();
    for entry in ["README.md", "notes.txt"] {
        std::fs::copy(demo.path().join(entry), root.join(entry)).unwrap();
    }
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::copy(demo.path().join("src/main.rs"), root.join("src/main.rs")).unwrap();
    std::fs::write(root.join("secret.txt"), "the secret").unwrap();
    std::fs::create_dir_all(root.join(".hookwire/hooks")).unwrap();
    let workspace_hooks = "post_tool_execution:\n  # An audit trail of every tool call, one JSON line each.\n  - name: audit-log\n    command: 'cat >> .hookwire/audit.jsonl'\n";
    std::fs::write(root.join(".hookwire/hooks.yaml"), workspace_hooks).unwrap();
    std::fs::write(
        root.join(".hookwire/hooks/deploy.yaml"),
        "stop:\n  - name: auto-commit\n    command: 'git commit -am wip'\n",
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        let state = base.join("state");
        std::fs::create_dir_all(&state).unwrap();
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
        let canonical = root.canonicalize().unwrap();
        let store = json!({"version": 1, "workspaces": {canonical.to_str().unwrap(): {".hookwire/hooks.yaml": sha256_hex(workspace_hooks.as_bytes())}}});
        std::fs::write(state.join("trust.json"), store.to_string()).unwrap();
        std::fs::set_permissions(
            state.join("trust.json"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
    }
    let state_dir = base.join("state");
    let server = TestServer::builder()
        .workspace(project)
        .config(move |c| {
            c.skills_dir = crate::demo::skills_dir();
            c.hooks_file = Some(server_hooks);
            c.state_dir = Some(state_dir);
            c.agent.approval.require_approval = vec!["read_file".into()];
        })
        .start()
        .await;
    let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/browser/docs");
    std::fs::create_dir_all(&out).unwrap();
    let shoot = async |browser: &mut Chromium, name: &str| {
        let bytes = browser.screenshot_png().await;
        std::fs::write(out.join(format!("{name}.png")), bytes).unwrap();
    };
    browser.set_viewport(1280, 860).await;
    browser.set_desktop_viewport(1280, 860).await;
    browser.open(&server.url("/")).await;
    browser.toggle_trace().await;
    for (n, input) in [(1, "list the files"), (2, "search for TODO")] {
        browser.send(input).await;
        browser.wait_answers(n).await;
    }
    shoot(&mut browser, "screenshot").await;
    browser.dismiss_banner().await;

    browser.set_theme("dark").await;
    shoot(&mut browser, "dark").await;
    browser.set_theme("system").await;

    browser.open_panel_tab("skills").await;
    shoot(&mut browser, "skills-tab").await;

    // A new conversation: a call waits for approval.
    browser.open_panel_tab("conversations").await;
    browser.new_chat().await;
    browser.send("read README.md").await;
    browser.wait_idle_with(APPROVE).await;
    shoot(&mut browser, "approval").await;
    browser.approve().await;
    browser.wait_answers(1).await;

    // The guard blocks a secret; the Hooks tab counts it; the turn's timeline shows it.
    browser.send("read secret.txt").await;
    browser.wait_answers(2).await;
    browser.open_panel_tab("hooks").await;
    browser.wait_hook_metric("no-secrets", "blocked", "1").await;
    let tab = browser.text("hooks").await;
    let tab = tab.as_str().unwrap();
    assert!(
        tab.contains("…/etc/hookwire/hooks.yaml")
            && tab.contains("…/my-project/.hookwire/hooks.yaml")
            && tab.contains("hookwire trust --workspace /tmp/hookwire-docs/my-project")
            && !tab.contains(".tmp"),
        "plain paths: {tab}"
    );
    shoot(&mut browser, "hooks-tab").await;
    browser
        .eval("(() => { const t = document.querySelector('.turn.traced.has-block'); t.querySelector('summary').click(); t.scrollIntoView({block: 'end'}); })()")
        .await;
    shoot(&mut browser, "trace").await;

    // A phone, with the first conversation.
    browser.open_chat("list the files").await;
    browser.set_viewport(390, 844).await;
    browser.reload_and_wait().await;
    shoot(&mut browser, "phone").await;
    server.shutdown().await;
    let _ = std::fs::remove_dir_all(&base);
}

/// The page at a desktop and a phone size, to look at side by side with other chat pages
/// (`target/browser/layout/`): the demo with its banner (`desktop`, `phone`), an answer with a
/// code block and a conversation too long for the model (`code-desktop`, `code-phone`,
/// `failure-phone`), the sign-in panel saying why a token was refused (`sign-in-desktop`), and
/// the chat list (`chats`). The after ones are copied to docs/images/.
#[tokio::test]
async fn layout_screenshots_in_chromium() {
    let Some(mut browser) = Chromium::launch().await else {
        return;
    };
    let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/browser/layout");
    std::fs::create_dir_all(&out).unwrap();
    let shoot = async |browser: &mut Chromium, name: &str| {
        let bytes = browser.screenshot_png().await;
        std::fs::write(out.join(format!("{name}.png")), bytes).unwrap();
    };
    let demo = TestServer::builder()
        .workspace(crate::demo::workspace())
        .config(|c| c.skills_dir = crate::demo::skills_dir())
        .start()
        .await;
    browser.set_desktop_viewport(1280, 800).await;
    browser.open(&demo.url("/")).await;
    browser.send("list the files").await;
    browser.wait_answers(1).await;
    shoot(&mut browser, "desktop").await;
    browser.set_viewport(390, 844).await;
    browser.reload_and_wait().await;
    shoot(&mut browser, "phone").await;
    demo.shutdown().await;

    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&[
        "Run this in the project folder:\n\n```sh\nls -la src/ | sort -k5 -n | tail -n 5\n```\n\nIt lists the five largest files.",
    ]));
    upstream.push(Reply::Status(
        400,
        "This model's maximum context length is 4096 tokens".into(),
    ));
    let server = TestServer::builder()
        .workspace(crate::agent::workspace())
        .upstream(&upstream)
        .config(|c| c.agent.retry.retries = 0)
        .start()
        .await;
    browser.set_desktop_viewport(1280, 800).await;
    browser.open(&server.url("/")).await;
    browser.toggle_tools().await;
    browser.send("which files are largest?").await;
    browser.wait_answers(1).await;
    shoot(&mut browser, "code-desktop").await;
    browser.set_viewport(390, 844).await;
    browser.reload_and_wait().await;
    shoot(&mut browser, "code-phone").await;
    browser.send("and the smallest?").await;
    browser.wait_idle_with(CHAT_ERROR).await;
    shoot(&mut browser, "failure-phone").await;
    browser.set_desktop_viewport(1280, 800).await;
    browser.reload_and_wait().await;
    shoot(&mut browser, "failure-desktop").await;
    server.shutdown().await;

    // A server that signs people in with JWTs, opened with a token that has expired.
    let provider = crate::sign_in::Provider::start().await;
    let settings = provider.settings();
    let jwt = TestServer::builder()
        .workspace(crate::agent::workspace())
        .config(move |c| c.jwt = Some(settings))
        .start()
        .await;
    let mut claims = provider.claims("alice");
    claims["exp"] = json!(crate::sign_in::now() - 3600);
    let expired = crate::sign_in::sign(
        &claims,
        jsonwebtoken::Algorithm::RS256,
        "rsa-1",
        &crate::sign_in::rsa_key(),
    );
    browser.navigate(&jwt.url("/")).await;
    browser.wait_sign_in().await;
    browser.sign_in(&expired).await;
    browser.wait_sign_in_problem("expired").await;
    shoot(&mut browser, "sign-in-desktop").await;
    jwt.shutdown().await;
}
