//! Workspace hook files are code from the workspace (docs/protocol.md §8): they run only once
//! `hookwire trust` pinned their SHA-256 outside the workspace, or `trust_workspace_hooks` says
//! the workspace is the operator's own. Server-level files always run.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use crate::binary::Hookwire;
use crate::common::*;

/// A workspace hook file that runs a shell command the moment anyone connects or chats: what a
/// cloned repository could ship.
const ATTACK_YAML: &str = "session_start:\n  - command: 'touch pwned-on-connect'\n\
                           pre_send_message:\n  - command: 'touch pwned'\n";

/// A workspace holding the attack file.
fn attacked_workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".hookwire")).unwrap();
    std::fs::write(dir.path().join(".hookwire/hooks.yaml"), ATTACK_YAML).unwrap();
    dir
}

/// One chat on the demo model, to its end: every `pre_send_message` hook has run by then.
async fn one_chat(server: &TestServer) -> Vec<Value> {
    let frames = server
        .connect()
        .await
        .chat(json!({"type":"chat","input":"hi","enable_tools":false}))
        .await;
    assert_eq!(frames.last().unwrap()["type"], "done", "{frames:?}");
    frames
}

async fn info(addr: std::net::SocketAddr) -> Value {
    let (status, body) = http_get(addr, "/api/info").await;
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

#[tokio::test]
async fn a_cloned_workspace_hook_file_does_not_run_until_trusted() {
    let dir = attacked_workspace();
    // The operator's own hook file runs as always: it is the proof that hooks ran at all.
    let server_file = dir.path().join("server-hooks.yaml");
    std::fs::write(
        &server_file,
        "pre_send_message:\n  - command: 'touch server-ran'\n",
    )
    .unwrap();
    let server = TestServer::builder()
        .workspace(dir)
        .config(|c| c.hooks_file = Some(server_file))
        .start()
        .await;
    one_chat(&server).await;
    let root = server.workspace.path().to_path_buf();
    assert!(root.join("server-ran").exists(), "the server hook ran");
    assert!(
        !root.join("pwned").exists(),
        "an untrusted workspace hook ran"
    );
    let info = info(server.addr).await;
    assert_eq!(
        info["untrusted_hook_files"],
        json!([".hookwire/hooks.yaml"]),
        "{info}"
    );
    assert_eq!(server.sources.hook_count(), 1, "only the server hook");
    assert!(!root.join("pwned-on-connect").exists());
    server.shutdown().await;
}

// ─── the binary: `hookwire trust`, `check` and `serve` ───

const BIN: &str = env!("CARGO_BIN_EXE_hookwire");

/// Runs `hookwire ARGS` with only PATH and `envs` set (never the real home), no terminal.
fn hookwire(args: &[&str], envs: &[(&str, &Path)]) -> Output {
    let mut command = Command::new(BIN);
    command
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .stdin(Stdio::null());
    for (key, value) in envs {
        command.env(key, value);
    }
    command.output().unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).to_string()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).to_string()
}

/// `hookwire trust --workspace WS --yes` with the state dir `state`; asserts it succeeded.
fn trust(workspace: &Path, state: &Path) -> Output {
    let output = hookwire(
        &["trust", "--workspace", workspace.to_str().unwrap(), "--yes"],
        &[("HOOKWIRE_STATE_DIR", state)],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    output
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `hookwire serve` on 127.0.0.1:0 with its log collected line by line; killed when dropped.
/// A `hookwire serve` of `workspace` with its state dir, killed however the test ends.
struct Served(Hookwire);

impl Served {
    fn start(workspace: &Path, state: &Path) -> Served {
        let mut command = Command::new(BIN);
        command
            .args(["serve", "--addr", "127.0.0.1:0"])
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOOKWIRE_WORKSPACE", workspace)
            .env("HOOKWIRE_STATE_DIR", state)
            .env("HOOKWIRE_SKILLS_DIR", workspace.join(".no-skills"))
            .env("RUST_LOG", "info");
        Served(Hookwire::launch(command, workspace.to_path_buf(), None))
    }

    /// Waits for a `WARN` line of the log that contains every one of `parts`.
    async fn warned(&self, parts: &[&str]) -> bool {
        self.0
            .logged(|line| line.contains("WARN") && parts.iter().all(|p| line.contains(p)))
            .await
    }

    fn log(&self) -> String {
        self.0.log().join("\n")
    }

    async fn untrusted(&self) -> Value {
        info(self.0.addr).await["untrusted_hook_files"].clone()
    }

    /// Waits until `/api/info` lists exactly `files` as untrusted.
    async fn wait_untrusted(&self, files: Value) {
        let listed = eventually(Duration::from_secs(10), || async {
            self.untrusted().await == files
        });
        assert!(
            listed.await,
            "untrusted {} instead of {files}\n{}",
            self.untrusted().await,
            self.log()
        );
    }

    async fn chat(&self) {
        let frames = self.0.chat("hi").await;
        assert_eq!(frames.last().unwrap()["type"], "done", "{frames:?}");
    }
}

#[tokio::test]
async fn trusting_with_yes_pins_each_file_privately_and_its_hooks_run() {
    let dir = attacked_workspace();
    let state = tempfile::tempdir().unwrap();
    let state_dir = state.path().join("hookwire");
    let output = trust(dir.path(), &state_dir);
    let shown = stdout(&output);
    // Each file and each hook in it: event, type, command.
    for part in [
        ".hookwire/hooks.yaml",
        "session_start",
        "touch pwned-on-connect",
        "pre_send_message",
        "command  touch pwned",
    ] {
        assert!(shown.contains(part), "{part:?} not in:\n{shown}");
    }
    let store = state_dir.join("trust.json");
    let canonical = dir.path().canonicalize().unwrap();
    assert_eq!(
        read_json(&store),
        json!({"version": 1, "workspaces": {canonical.to_str().unwrap(): {
            ".hookwire/hooks.yaml": sha256_hex(ATTACK_YAML.as_bytes())
        }}})
    );
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&store), 0o600);
    assert_eq!(mode(&state_dir), 0o700);

    let server = TestServer::builder()
        .workspace(dir)
        .config(|c| c.state_dir = Some(state_dir))
        .start()
        .await;
    one_chat(&server).await;
    assert!(
        server.workspace.path().join("pwned").exists(),
        "trusted: it runs"
    );
    assert_eq!(info(server.addr).await["untrusted_hook_files"], json!([]));
    server.shutdown().await;
}

#[test]
fn without_a_terminal_nothing_is_trusted_unless_yes() {
    let dir = attacked_workspace();
    let state = tempfile::tempdir().unwrap();
    let output = hookwire(
        &["trust", "--workspace", dir.path().to_str().unwrap()],
        &[("HOOKWIRE_STATE_DIR", state.path())],
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(stdout(&output).contains("touch pwned"), "shown anyway");
    assert!(
        stderr(&output).contains("pass --yes"),
        "{}",
        stderr(&output)
    );
    assert!(!state.path().join("trust.json").exists());
}

#[tokio::test]
async fn a_running_server_follows_trust_edits_and_revocation() {
    let dir = attacked_workspace();
    let root = dir.path();
    let state = tempfile::tempdir().unwrap();
    let server = Served::start(root, state.path());
    // Not trusted: a warning names the file and the command that trusts it.
    assert!(
        server
            .warned(&[
                ".hookwire/hooks.yaml",
                "not trusted",
                "hookwire trust --workspace"
            ])
            .await,
        "{}",
        server.log()
    );
    server.wait_untrusted(json!([".hookwire/hooks.yaml"])).await;
    server.chat().await;
    assert!(!root.join("pwned").exists());

    // Trusted while it runs: loaded without a restart.
    trust(root, state.path());
    server.wait_untrusted(json!([])).await;
    server.chat().await;
    assert!(root.join("pwned").exists(), "trusted: it runs");

    // Edited: untrusted again, its hooks stop.
    std::fs::remove_file(root.join("pwned")).unwrap();
    let edited = ATTACK_YAML.replace("touch pwned'", "touch pwned-edited'");
    std::fs::write(root.join(".hookwire/hooks.yaml"), edited).unwrap();
    server.wait_untrusted(json!([".hookwire/hooks.yaml"])).await;
    assert!(
        server
            .warned(&[".hookwire/hooks.yaml", "changed since it was trusted"])
            .await,
        "{}",
        server.log()
    );
    server.chat().await;
    assert!(!root.join("pwned").exists() && !root.join("pwned-edited").exists());

    // Trusted again, then revoked: the hooks stop once more.
    trust(root, state.path());
    server.wait_untrusted(json!([])).await;
    let output = hookwire(
        &["trust", "--workspace", root.to_str().unwrap(), "--revoke"],
        &[("HOOKWIRE_STATE_DIR", state.path())],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    server.wait_untrusted(json!([".hookwire/hooks.yaml"])).await;
    server.chat().await;
    assert!(!root.join("pwned-edited").exists());
}

#[tokio::test]
async fn a_new_file_beside_trusted_ones_is_not_trusted() {
    let dir = attacked_workspace();
    let state = tempfile::tempdir().unwrap();
    trust(dir.path(), state.path());
    let state_dir = state.path().to_path_buf();
    let server = TestServer::builder()
        .workspace(dir)
        .config(|c| c.state_dir = Some(state_dir))
        .start()
        .await;
    let root = server.workspace.path().to_path_buf();
    std::fs::create_dir_all(root.join(".hookwire/hooks")).unwrap();
    std::fs::write(
        root.join(".hookwire/hooks/extra.yaml"),
        "pre_send_message:\n  - command: 'touch extra-ran'\n",
    )
    .unwrap();
    let seen = eventually(Duration::from_secs(10), || async {
        info(server.addr).await["untrusted_hook_files"] == json!([".hookwire/hooks/extra.yaml"])
    });
    assert!(seen.await, "{}", info(server.addr).await);
    one_chat(&server).await;
    assert!(root.join("pwned").exists(), "the trusted file still runs");
    assert!(!root.join("extra-ran").exists(), "the new one does not");
    server.shutdown().await;
}

#[tokio::test]
async fn a_file_that_changes_stops_running_even_when_the_reload_is_refused() {
    let dir = attacked_workspace();
    let state = tempfile::tempdir().unwrap();
    trust(dir.path(), state.path());
    let server_file = dir.path().join("server-hooks.yaml");
    std::fs::write(
        &server_file,
        "pre_send_message:\n  - command: 'touch server-ran'\n",
    )
    .unwrap();
    let state_dir = state.path().to_path_buf();
    let file = server_file.clone();
    let server = TestServer::builder()
        .workspace(dir)
        .config(move |c| {
            c.state_dir = Some(state_dir);
            c.hooks_file = Some(file);
        })
        .start()
        .await;
    let root = server.workspace.path().to_path_buf();
    // The operator's file breaks (a reload is refused) while the workspace file changes.
    std::fs::write(&server_file, "pre_send_message: [[[\n").unwrap();
    std::fs::write(root.join(".hookwire/hooks.yaml"), "stop: []\n").unwrap();
    let hooks = server.sources.clone();
    let settled = eventually(Duration::from_secs(10), || async {
        !hooks.hook_file_problems().is_empty() && hooks.untrusted_hook_files().len() == 1
    });
    assert!(
        settled.await,
        "{:?} {:?}",
        hooks.hook_file_problems(),
        hooks.untrusted_hook_files()
    );
    one_chat(&server).await;
    assert!(
        root.join("server-ran").exists(),
        "the last good server file"
    );
    assert!(
        !root.join("pwned").exists(),
        "no longer trusted, no longer run"
    );
    assert_eq!(
        info(server.addr).await["untrusted_hook_files"],
        json!([".hookwire/hooks.yaml"])
    );
    server.shutdown().await;
}

#[test]
fn list_shows_each_trusted_file_as_it_is_now_and_revoke_forgets_a_workspace() {
    let state = tempfile::tempdir().unwrap();
    let env = [("HOOKWIRE_STATE_DIR", state.path())];
    let list = || {
        let output = hookwire(&["trust", "--list"], &env);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        stdout(&output)
    };
    assert!(list().contains("no workspace is trusted"), "{}", list());
    let (one, two) = (attacked_workspace(), attacked_workspace());
    trust(one.path(), state.path());
    trust(two.path(), state.path());
    let (one_path, two_path) = (
        one.path().canonicalize().unwrap(),
        two.path().canonicalize().unwrap(),
    );
    let shown = list();
    assert!(shown.contains(one_path.to_str().unwrap()), "{shown}");
    assert!(shown.contains(two_path.to_str().unwrap()), "{shown}");
    assert_eq!(shown.matches(".hookwire/hooks.yaml").count(), 2, "{shown}");
    assert_eq!(shown.matches("unchanged").count(), 2, "{shown}");
    std::fs::write(two.path().join(".hookwire/hooks.yaml"), "stop: []\n").unwrap();
    assert!(list().contains("changed since"), "{}", list());

    let revoke = |workspace: &Path| {
        let output = hookwire(
            &[
                "trust",
                "--workspace",
                workspace.to_str().unwrap(),
                "--revoke",
            ],
            &env,
        );
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        stdout(&output)
    };
    assert!(revoke(one.path()).contains("no longer trusted"));
    let shown = list();
    assert!(!shown.contains(one_path.to_str().unwrap()), "{shown}");
    assert!(shown.contains(two_path.to_str().unwrap()), "{shown}");
    assert!(revoke(one.path()).contains("was not trusted"));
    // A workspace that is gone can still be revoked, by the path it had.
    drop(two);
    assert!(revoke(&two_path).contains("no longer trusted"));
    assert!(list().contains("no workspace is trusted"));
}

#[tokio::test]
async fn trust_workspace_hooks_trusts_every_workspace_file() {
    let dir = attacked_workspace();
    let output = hookwire(
        &["check", "--workspace", dir.path().to_str().unwrap()],
        &[("HOOKWIRE_TRUST_WORKSPACE_HOOKS", Path::new("true"))],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    let server = TestServer::builder()
        .workspace(dir)
        .trust_workspace_hooks()
        .start()
        .await;
    one_chat(&server).await;
    assert!(server.workspace.path().join("pwned").exists());
    assert_eq!(info(server.addr).await["untrusted_hook_files"], json!([]));
    server.shutdown().await;
}

#[tokio::test]
async fn a_corrupt_trust_file_trusts_nothing_and_is_never_overwritten() {
    let dir = attacked_workspace();
    let root = dir.path();
    let state = tempfile::tempdir().unwrap();
    let store = state.path().join("trust.json");
    std::fs::write(&store, "{ this is not json").unwrap();
    let server = Served::start(root, state.path());
    assert!(
        server
            .warned(&[
                ".hookwire/hooks.yaml",
                "trust.json",
                "not a valid trust file"
            ])
            .await,
        "{}",
        server.log()
    );
    server.wait_untrusted(json!([".hookwire/hooks.yaml"])).await;
    server.chat().await;
    assert!(!root.join("pwned").exists());
    drop(server);

    let output = hookwire(
        &["trust", "--workspace", root.to_str().unwrap(), "--yes"],
        &[("HOOKWIRE_STATE_DIR", state.path())],
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("fix or remove it"),
        "{}",
        stderr(&output)
    );
    let output = hookwire(
        &["trust", "--list"],
        &[("HOOKWIRE_STATE_DIR", state.path())],
    );
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        std::fs::read_to_string(&store).unwrap(),
        "{ this is not json"
    );
}

#[tokio::test]
async fn a_trust_file_inside_the_workspace_is_never_read() {
    let dir = attacked_workspace();
    // The workspace vouches for itself, with the right hash.
    let canonical = dir.path().canonicalize().unwrap();
    let forged = dir.path().join(".state");
    std::fs::create_dir(&forged).unwrap();
    std::fs::write(
        forged.join("trust.json"),
        json!({"version": 1, "workspaces": {canonical.to_str().unwrap(): {
            ".hookwire/hooks.yaml": sha256_hex(ATTACK_YAML.as_bytes())
        }}})
        .to_string(),
    )
    .unwrap();
    let output = hookwire(
        &[
            "trust",
            "--workspace",
            dir.path().to_str().unwrap(),
            "--yes",
        ],
        &[("HOOKWIRE_STATE_DIR", &forged)],
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("inside the workspace"),
        "{}",
        stderr(&output)
    );
    let server = TestServer::builder()
        .workspace(dir)
        .config(|c| c.state_dir = Some(forged))
        .start()
        .await;
    one_chat(&server).await;
    assert!(!server.workspace.path().join("pwned").exists());
    assert_eq!(
        info(server.addr).await["untrusted_hook_files"],
        json!([".hookwire/hooks.yaml"])
    );
    server.shutdown().await;
}

#[test]
fn check_fails_on_untrusted_files_and_warns_about_a_public_address() {
    let dir = attacked_workspace();
    let state = tempfile::tempdir().unwrap();
    let workspace = dir.path().to_str().unwrap();
    let env = [("HOOKWIRE_STATE_DIR", state.path())];
    let check = |extra: &[&str], env: &[(&str, &Path)]| {
        let mut args = vec!["check", "--workspace", workspace, "--skills-dir", workspace];
        args.extend(extra);
        hookwire(&args, env)
    };
    let output = check(&[], &env);
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    let canonical = dir.path().canonicalize().unwrap();
    let expected = format!(
        "error: {}: not trusted; review and trust it with: hookwire trust --workspace ",
        canonical.join(".hookwire/hooks.yaml").display()
    );
    assert!(stdout(&output).contains(&expected), "{}", stdout(&output));

    trust(dir.path(), state.path());
    let output = check(&[], &env);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    assert!(!stdout(&output).contains("trust"), "{}", stdout(&output));

    // A public address without a token is a warning: check still passes.
    let output = check(&["--addr", "0.0.0.0:8080"], &env);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    assert!(
        stdout(&output).contains("warning: addr: not a loopback address and no auth_token"),
        "{}",
        stdout(&output)
    );
    let with_token = [env[0], ("HOOKWIRE_AUTH_TOKEN", Path::new("t0ken"))];
    let output = check(&["--addr", "0.0.0.0:8080"], &with_token);
    assert!(
        !stdout(&output).contains("warning: addr"),
        "{}",
        stdout(&output)
    );
}

#[tokio::test]
async fn a_broken_hook_file_is_logged_as_not_trusted_with_the_command_then_with_its_errors() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".claude")).unwrap();
    // A Claude Code settings file whose hook has no command: an error `hookwire check` shows.
    let broken = r#"{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command"}]}]}}"#;
    std::fs::write(dir.path().join(".claude/settings.json"), broken).unwrap();
    let workspace = dir.path().to_path_buf();
    let state = tempfile::tempdir().unwrap();
    let state_dir = state.path().to_str().unwrap().to_string();
    let server = Hookwire::start_in(
        dir,
        "stop: []\n",
        &[("HOOKWIRE_STATE_DIR", &state_dir)],
        |command| command,
    );
    // Untrusted, it is never parsed: the log says so and names the command that shows its errors.
    assert!(
        server
            .logged(|line| line.contains(".claude/settings.json")
                && line
                    .contains("not trusted; review and trust it with: hookwire trust --workspace"))
            .await,
        "{:?}",
        server.log()
    );
    // That command shows the errors and trusts nothing.
    let output = hookwire(
        &["trust", "--workspace", workspace.to_str().unwrap(), "--yes"],
        &[("HOOKWIRE_STATE_DIR", state.path())],
    );
    let shown = stdout(&output);
    assert!(
        shown.contains(".claude/settings.json  (has problems: not trusted)"),
        "{shown}"
    );
    assert!(
        shown.contains("command hooks need a non-empty `command`"),
        "{shown}"
    );
    // A file that is loaded (the server's own) and breaks: the log line has its errors.
    std::fs::write(
        server.path("server-hooks.yaml"),
        "stop:\n  - type: command\n",
    )
    .unwrap();
    assert!(
        server
            .logged(|line| line.contains("server-hooks.yaml:2")
                && line.contains("command hooks need a non-empty `command`")
                && line.contains("keeping the last good hook files"))
            .await,
        "{:?}",
        server.log()
    );
}

/// How many upstream requests had a message containing `marker`.
fn asked_with(upstream: &FakeUpstream, marker: &str) -> usize {
    upstream
        .requests()
        .iter()
        .filter(|r| r.messages().iter().any(|(_, text)| text.contains(marker)))
        .count()
}

#[tokio::test]
async fn an_openharness_prompt_hook_reads_its_prompt_file_which_trust_pins_too() {
    let upstream = FakeUpstream::start().await;
    let dir = tempfile::tempdir().unwrap();
    let hooks = dir.path().join(".openharness/hooks");
    std::fs::create_dir_all(hooks.join("prompts")).unwrap();
    std::fs::write(
        hooks.join("judge.yaml"),
        "after_model_call:\n  - type: prompt\n    prompt_file: prompts/judge.md\n",
    )
    .unwrap();
    std::fs::write(
        hooks.join("prompts/judge.md"),
        "JUDGE-FROM-FILE: is it fine?",
    )
    .unwrap();
    let workspace = dir.path().to_path_buf();
    let state = tempfile::tempdir().unwrap();
    let shown = stdout(&trust(&workspace, state.path()));
    assert!(
        shown.contains(".openharness/hooks/prompts/judge.md"),
        "the prompt file is shown: {shown}"
    );
    let state_dir = state.path().to_path_buf();
    let server = TestServer::builder()
        .workspace(dir)
        .upstream(&upstream)
        .config(move |c| c.state_dir = Some(state_dir))
        .start()
        .await;
    upstream.push(Reply::text(&["the answer"]));
    upstream.push(Reply::text(&["{}"]));
    let frames = server
        .connect()
        .await
        .chat(json!({"type":"chat","input":"hi","enable_tools":false}))
        .await;
    assert_eq!(frames.last().unwrap()["type"], "done", "{frames:?}");
    assert_eq!(
        asked_with(&upstream, "JUDGE-FROM-FILE"),
        1,
        "the hook asked with the file's text"
    );

    // The prompt file changes after it was trusted: at the next load (the hook file touched),
    // its hook file is not trusted any more.
    let hooks = server.workspace.path().join(".openharness/hooks");
    std::fs::write(hooks.join("prompts/judge.md"), "JUDGE-CHANGED").unwrap();
    std::fs::write(
        hooks.join("judge.yaml"),
        "after_model_call:\n  - type: prompt\n    prompt_file: prompts/judge.md\n\n",
    )
    .unwrap();
    let addr = server.addr;
    let untrusted = eventually(Duration::from_secs(10), || async move {
        info(addr).await["untrusted_hook_files"]
            .as_array()
            .is_some_and(|files| !files.is_empty())
    })
    .await;
    let listed = info(addr).await["untrusted_hook_files"].clone();
    assert!(untrusted, "{listed}");
    assert!(
        listed.to_string().contains(".openharness/hooks/"),
        "{listed}"
    );
    upstream.push(Reply::text(&["again"]));
    chat(
        &server,
        json!({"type":"chat","input":"hi","enable_tools":false}),
    )
    .await;
    assert_eq!(
        asked_with(&upstream, "JUDGE-CHANGED"),
        0,
        "never runs untrusted text"
    );
    server.shutdown().await;
}

#[test]
fn a_prompt_file_outside_the_openharness_hooks_folder_is_refused_at_load() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = dir.path().join(".openharness/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    std::fs::write(dir.path().join("secret.md"), "SECRET").unwrap();
    std::fs::write(
        hooks.join("judge.yaml"),
        "after_model_call:\n  - type: prompt\n    prompt_file: ../../secret.md\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(dir.path().join("secret.md"), hooks.join("link.md")).unwrap();
    std::fs::write(
        hooks.join("linked.yaml"),
        "run_completed:\n  - type: agent\n    prompt_file: link.md\n",
    )
    .unwrap();
    let state = tempfile::tempdir().unwrap();
    let output = hookwire(
        &[
            "trust",
            "--workspace",
            dir.path().to_str().unwrap(),
            "--yes",
        ],
        &[("HOOKWIRE_STATE_DIR", state.path())],
    );
    let shown = stdout(&output);
    assert!(
        shown.contains("judge.yaml  (has problems: not trusted)"),
        "{shown}"
    );
    assert!(
        shown.contains("linked.yaml  (has problems: not trusted)"),
        "{shown}"
    );
    assert!(
        shown.contains("prompt_file \"../../secret.md\" must be a path inside .openharness/hooks/"),
        "{shown}"
    );
    assert!(
        shown.contains("prompt_file \"link.md\" leads outside .openharness/hooks/"),
        "{shown}"
    );
    assert!(!shown.contains("SECRET"), "{shown}");
}
