//! The binary: `serve` prints the real address, settings come flag → env → file → default,
//! SIGTERM shuts down cleanly, `check` reports problems.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::common::http_get;

const BIN: &str = env!("CARGO_BIN_EXE_hookwire");

/// Starts `hookwire serve` and returns it with the address from its `listening on` line.
pub(crate) fn spawn_server(args: &[&str], envs: &[(&str, &str)]) -> (Child, std::net::SocketAddr) {
    let workspace = std::env::temp_dir();
    let mut command = Command::new(BIN);
    command
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOOKWIRE_WORKSPACE", &workspace)
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (key, value) in envs {
        command.env(key, value);
    }
    let mut child = command.spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.split("listening on http://").nth(1) {
                let _ = tx.send(rest.trim().to_string());
            }
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("a `listening on` line");
    (child, addr.parse().unwrap())
}

fn sigterm(child: &Child) {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Waits for `child` to exit, up to `limit`; kills it if it does not.
fn wait_exit(mut child: Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let pid = child.id().to_string();
    let (tx, rx) = std::sync::mpsc::channel();
    // `wait` blocks until the exit itself, on a thread, so the test can give up at its limit.
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    match rx.recv_timeout(limit) {
        Ok(Ok(status)) => Some(status),
        _ => {
            // The waiting thread reaps it once it is dead.
            let _ = Command::new("kill").args(["-KILL", &pid]).status();
            None
        }
    }
}

#[tokio::test]
async fn serve_prints_the_real_address_and_stops_on_sigterm() {
    let (child, addr) = spawn_server(&["serve", "--addr", "127.0.0.1:0"], &[]);
    assert_ne!(addr.port(), 0);
    assert_eq!(http_get(addr, "/healthz").await, (200, "ok".to_string()));
    let (_, body) = http_get(addr, "/api/info").await;
    let info: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(info["demo"], true, "no URL and no key: the demo model");
    sigterm(&child);
    let status = wait_exit(child, Duration::from_secs(10)).expect("exit after SIGTERM");
    assert!(status.success(), "{status:?}");
}

#[test]
fn flag_beats_env_beats_file() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("hookwire.yaml");
    std::fs::write(
        &config,
        "model: from-file\nllm_base_url: http://127.0.0.1:9/v1\n",
    )
    .unwrap();
    let config = config.to_str().unwrap();

    let model_of = |args: Vec<&str>, envs: Vec<(&str, &str)>| {
        let (mut child, addr) = spawn_server(&args, &envs);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let info = runtime.block_on(async { http_get(addr, "/api/info").await.1 });
        let _ = child.kill();
        let _ = child.wait();
        let info: Value = serde_json::from_str(&info).unwrap();
        info["model"].as_str().unwrap().to_string()
    };
    let base = vec!["--addr", "127.0.0.1:0", "--config", config];
    assert_eq!(model_of(base.clone(), vec![]), "from-file");
    assert_eq!(
        model_of(base.clone(), vec![("HOOKWIRE_MODEL", "from-env")]),
        "from-env"
    );
    let mut with_flag = base.clone();
    with_flag.extend(["--model", "from-flag"]);
    assert_eq!(
        model_of(with_flag, vec![("HOOKWIRE_MODEL", "from-env")]),
        "from-flag"
    );
}

#[test]
fn bad_config_file_is_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("bad.yaml");
    std::fs::write(&config, "modle: typo\n").unwrap();
    let output = Command::new(BIN)
        .args([
            "--addr",
            "127.0.0.1:0",
            "--config",
            config.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("bad.yaml") && stderr.contains("modle"),
        "{stderr}"
    );
}

#[test]
fn check_shows_the_context_window_in_use() {
    let dir = tempfile::tempdir().unwrap();
    let run = |config: &str| {
        let file = dir.path().join("hookwire.yaml");
        std::fs::write(&file, config).unwrap();
        let output = Command::new(BIN)
            .args(["check", "--config", file.to_str().unwrap()])
            .args(["--workspace", dir.path().to_str().unwrap()])
            .args(["--skills-dir", dir.path().to_str().unwrap()])
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let stdout = run("model: claude-sonnet-4-5\n");
    assert!(
        stdout.contains("window 200000 tokens (built-in table for claude-sonnet-4-5)")
            && stdout.contains("threshold 160000 tokens")
            && stdout.contains("micro threshold 120000 tokens (context.micro_threshold 0.6)")
            && stdout.contains("last 2 agent round(s)"),
        "{stdout}"
    );
    let stdout = run(
        "model: my-model\ncontext:\n  window_tokens: 50000\n  compact_threshold: 0.5\n  micro_threshold: 0.4\n  micro_keep_rounds: 3\n",
    );
    assert!(
        stdout.contains("window 50000 tokens (context.window_tokens)")
            && stdout.contains("threshold 25000 tokens")
            && stdout.contains("micro threshold 20000 tokens (context.micro_threshold 0.4)")
            && stdout.contains("last 3 agent round(s)"),
        "{stdout}"
    );
}

#[test]
fn check_prints_the_upstream_and_its_message_style() {
    let dir = tempfile::tempdir().unwrap();
    let run = |config: &str, args: &[&str], env: &[(&str, &str)]| {
        let file = dir.path().join("hookwire.yaml");
        std::fs::write(&file, config).unwrap();
        let mut command = Command::new(BIN);
        command
            .args(["check", "--config", file.to_str().unwrap()])
            .args(["--workspace", dir.path().to_str().unwrap()])
            .args(["--skills-dir", dir.path().to_str().unwrap()])
            .args(args);
        for name in [
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_BASE_URL",
            "HOOKWIRE_PROVIDER",
        ] {
            command.env_remove(name);
        }
        let output = command.envs(env.iter().copied()).output().unwrap();
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stdout).into_owned()
                + &String::from_utf8_lossy(&output.stderr),
        )
    };
    let (ok, out) = run(
        "upstream: {message_style: auto, system_role: false}\n",
        &[
            "--llm-base-url",
            "http://127.0.0.1:11434/v1",
            "--model",
            "gemma2",
        ],
        &[],
    );
    assert!(ok, "{out}");
    assert!(
        out.contains(
            "upstream: openai at http://127.0.0.1:11434/v1, model gemma2, \
             message style strict, no system role (auto)"
        ),
        "{out}"
    );
    let (ok, out) = run(
        "upstream: {max_tokens: 2000}\n",
        &["--provider", "anthropic"],
        &[("ANTHROPIC_API_KEY", "sk-ant-test")],
    );
    assert!(ok, "{out}");
    assert!(
        out.contains("upstream: anthropic at https://api.anthropic.com, model claude-sonnet-4-5")
            && out.contains("max_tokens 2000"),
        "{out}"
    );
    assert!(
        !out.contains("sk-ant-test"),
        "the key is never printed: {out}"
    );
    // A setting that cannot work is refused, naming it.
    let (ok, out) = run(
        "upstream: {message_style: openai, system_role: false}\n",
        &[],
        &[],
    );
    assert!(!ok && out.contains("upstream.system_role"), "{out}");
}

/// `hookwire check` in an empty folder with exactly `env` (and PATH): its exit and output.
fn check_with_env(args: &[&str], env: &[(&str, &str)]) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(BIN)
        .arg("check")
        .args(["--workspace", dir.path().to_str().unwrap()])
        .args(["--skills-dir", dir.path().to_str().unwrap()])
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(env.iter().copied())
        .output()
        .unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned()
            + &String::from_utf8_lossy(&output.stderr),
    )
}

#[test]
fn empty_variables_count_as_unset() {
    let (ok, out) = check_with_env(
        &[],
        &[
            ("HOOKWIRE_LLM_BASE_URL", ""),
            ("HOOKWIRE_LLM_API_KEY", ""),
            ("HOOKWIRE_LLM_TIMEOUT", ""),
            ("HOOKWIRE_MODEL", ""),
            ("HOOKWIRE_PROVIDER", ""),
            ("HOOKWIRE_MESSAGE_STYLE", ""),
            ("OPENAI_BASE_URL", ""),
            ("ANTHROPIC_API_KEY", ""),
        ],
    );
    assert!(ok, "{out}");
    assert!(
        out.contains("upstream: the built-in demo model"),
        "an empty base URL is no URL: {out}"
    );
    // The same variable with a value is used.
    let (ok, out) = check_with_env(&[], &[("HOOKWIRE_LLM_BASE_URL", "http://127.0.0.1:9/v1")]);
    assert!(ok, "{out}");
    assert!(
        out.contains("upstream: openai at http://127.0.0.1:9/v1"),
        "{out}"
    );
}

#[test]
fn check_says_what_anthropic_needs() {
    let (ok, out) = check_with_env(&["--provider", "anthropic"], &[]);
    assert!(!ok);
    assert_eq!(
        out.trim(),
        "error: provider anthropic needs an API key: set ANTHROPIC_API_KEY (or \
         HOOKWIRE_LLM_API_KEY), or a base URL (--llm-base-url) of a server that speaks the \
         Messages API\n1 problem(s) found"
    );
}

#[tokio::test]
async fn an_anthropic_key_alone_selects_anthropic() {
    let (ok, out) = check_with_env(&[], &[("ANTHROPIC_API_KEY", "sk-ant-canary")]);
    assert!(ok, "{out}");
    assert!(
        out.contains("upstream: anthropic at https://api.anthropic.com, model claude-sonnet-4-5"),
        "{out}"
    );
    assert!(!out.contains("sk-ant-canary"), "{out}");
    let (mut child, addr) = spawn_server(
        &["serve", "--addr", "127.0.0.1:0"],
        &[("ANTHROPIC_API_KEY", "sk-ant-canary")],
    );
    let (_, body) = http_get(addr, "/api/info").await;
    let _ = child.kill();
    let _ = child.wait();
    let info: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(info["demo"], false, "{info}");
    assert_eq!(info["model"], "claude-sonnet-4-5", "{info}");
}

#[test]
fn check_passes_on_a_good_setup() {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(BIN)
        .args([
            "check",
            "--workspace",
            dir.path().to_str().unwrap(),
            "--skills-dir",
            dir.path().to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
}

#[test]
fn check_reports_broken_skills_with_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = dir.path().join("skills/broken/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    std::fs::write(
        hooks.join("hooks.json"),
        r#"{"hooks":[{"name":"x","file":"x.md","timing":"whenever","role":"system","persistent":false}]}"#,
    )
    .unwrap();
    std::fs::write(hooks.join("x.md"), "text").unwrap();
    let output = Command::new(BIN)
        .args(["check", "--workspace", dir.path().to_str().unwrap()])
        .args(["--skills-dir", dir.path().join("skills").to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout
            .contains("broken/hooks/hooks.json: hooks[0] (x).timing: unknown timing \"whenever\""),
        "{stdout}"
    );
}

#[test]
fn text_logs_to_a_pipe_carry_no_colour_codes() {
    let mut child = Command::new(BIN)
        .args(["serve", "--addr", "127.0.0.1:0"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOOKWIRE_WORKSPACE", std::env::temp_dir())
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut lines = Vec::new();
    while !lines
        .iter()
        .any(|l: &String| l.contains("listening on http://"))
    {
        match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(line) => lines.push(line),
            Err(_) => break,
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("WARN") && l.contains("demo model")),
        "a warning (coloured on a terminal) and the listening line: {lines:?}"
    );
    assert!(
        lines.iter().all(|l| !l.contains("\x1b[")),
        "no ANSI escape in a pipe: {lines:?}"
    );
}

#[test]
fn check_names_a_hook_whose_script_is_missing_and_says_what_it_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("ws");
    std::fs::create_dir_all(workspace.join(".hookwire")).unwrap();
    std::fs::write(workspace.join(".hookwire/ok.sh"), "exit 0\n").unwrap();
    let skills = dir.path().join("skills");
    std::fs::create_dir(&skills).unwrap();
    let hooks = dir.path().join("hooks.yaml");
    std::fs::write(
        &hooks,
        "stop:\n  - command: sh .hookwire/ok.sh\n  - command: sh .hookwire/x.sh\n\
         \x20 - command: ./gone.sh --flag\n  - command: python3 -u nothere.py\n\
         \x20 - command: echo hi\n  - command: sh -c 'exit 0'\n  - command: \"$HOME/x.sh\"\n",
    )
    .unwrap();
    let output = Command::new(BIN)
        .args(["check", "--workspace", workspace.to_str().unwrap()])
        .args(["--skills-dir", skills.to_str().unwrap()])
        .env("HOOKWIRE_HOOKS", &hooks)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    for (line, script) in [(3, ".hookwire/x.sh"), (4, "./gone.sh"), (5, "nothere.py")] {
        assert!(
            stdout.contains(&format!(
                "error: {}:{line}: command: the script {script} does not exist",
                hooks.display(),
            )),
            "{script}: {stdout}"
        );
    }
    assert!(!stdout.contains("ok.sh does not exist"), "{stdout}");
    assert_eq!(stdout.matches("does not exist").count(), 3, "{stdout}");
    assert!(
        stdout.contains(
            "loaded: 0 skill(s) (0 prompt hook(s)), 1 hook file(s) with 7 hook(s), 0 MCP server(s)"
        ),
        "{stdout}"
    );
}

#[test]
fn a_fatal_error_is_said_once_and_check_exits_1_on_a_broken_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = dir.path().join("hooks.yaml");
    std::fs::write(&hooks, "stop:\n  - command: x\n    on_eror: skip\n").unwrap();
    let output = Command::new(BIN)
        .args(["--addr", "127.0.0.1:0", "--workspace"])
        .arg(dir.path())
        .env("HOOKWIRE_HOOKS", &hooks)
        .env("HOOKWIRE_STATE_DIR", dir.path().join("state"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr.matches("unknown field `on_eror`").count(),
        1,
        "{stderr}"
    );

    // `check` reports a config file it cannot read as the problem it found: exit 1, as for
    // any other error (docs/protocol.md §1).
    let config = dir.path().join("hookwire.yaml");
    std::fs::write(&config, "modle: x\n").unwrap();
    let output = Command::new(BIN)
        .args(["check", "--config", config.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert!(
        stdout.contains(&format!(
            "error: config file {}:1: unknown field `modle`",
            config.display()
        )) && stdout.contains("did you mean `model`?")
            && stdout.contains("1 problem(s) found"),
        "{stdout}"
    );
}
