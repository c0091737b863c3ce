//! What a hook cannot do (docs/protocol.md §8): see the server's secrets, leave processes behind,
//! fail open when told to fail closed, follow a redirect, flood the server's memory, or call an
//! URL the operator did not allow from a workspace file.
//!
//! The environment and process tests run the real `hookwire` binary: the server's environment is
//! set for it alone (tests share one process), and it is the subreaper of its hooks' orphans.

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;
use futures::StreamExt;
use serde_json::json;

use crate::binary::Hookwire;
use crate::common::*;

const SECRET: &str = "s3cret-signing-key";
const OPENAI_KEY: &str = "sk-openai-key";
const HOOKWIRE_KEY: &str = "sk-hookwire-key";

/// Waits until the process a hook wrote to `file` is gone: killed and reaped (a zombie still has
/// its `/proc` entry).
async fn gone(server: &Hookwire, file: &str) {
    let pid = server.written(file).await.trim().to_string();
    let proc = PathBuf::from(format!("/proc/{pid}"));
    let gone = eventually(Duration::from_secs(5), || async { !proc.exists() }).await;
    let state = std::fs::read_to_string(proc.join("stat")).unwrap_or_default();
    assert!(gone, "{file}: process {pid} is still there: {state}");
}

/// `NAME=value` lines of an `env` dump.
fn variables(dump: &str) -> Vec<(String, String)> {
    dump.lines()
        .filter_map(|line| line.split_once('='))
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect()
}

// ─── the environment ───

#[tokio::test]
async fn a_command_hook_sees_only_the_allowed_environment_not_the_servers_secrets() {
    let server = Hookwire::start(
        "pre_send_message:\n  - command: 'env > env.txt; exit 2'\n",
        &[
            ("HOOKWIRE_SECRET", SECRET),
            ("OPENAI_API_KEY", OPENAI_KEY),
            ("HOOKWIRE_LLM_API_KEY", HOOKWIRE_KEY),
            ("HOOKWIRE_LLM_BASE_URL", "http://127.0.0.1:9/v1"),
            ("SERVER_ONLY", "not for hooks"),
            ("HOME", "/home/hookwire"),
            ("LANG", "C.UTF-8"),
            ("TZ", "UTC"),
            ("TMPDIR", "/tmp"),
        ],
    );
    let frames = server.chat("hi").await;
    assert_eq!(frames.last().unwrap()["code"], "hook_blocked");
    let dump = server.written("env.txt").await;
    for secret in [SECRET, OPENAI_KEY, HOOKWIRE_KEY, "not for hooks"] {
        assert!(!dump.contains(secret), "the hook saw {secret:?}:\n{dump}");
    }
    let mut names: Vec<String> = variables(&dump).into_iter().map(|(n, _)| n).collect();
    // The shell adds its own few (PWD, SHLVL, `_`): not the server's.
    names.retain(|name| !["PWD", "OLDPWD", "SHLVL", "_"].contains(&name.as_str()));
    names.sort();
    assert_eq!(
        names,
        [
            "CLAUDE_PROJECT_DIR",
            "GEMINI_CWD",
            "GEMINI_PROJECT_DIR",
            "HOME",
            "HOOKWIRE_CWD",
            "HOOKWIRE_HOOK_EVENT",
            "HOOKWIRE_HOOK_RUN",
            "JCLI_CWD",
            "JCLI_HOOK_EVENT",
            "LANG",
            "PATH",
            "TMPDIR",
            "TZ",
        ]
    );
    let value = |name: &str| {
        variables(&dump)
            .into_iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
            .unwrap_or_default()
    };
    let workspace = server.root.display().to_string();
    assert_eq!(value("HOOKWIRE_HOOK_EVENT"), "pre_send_message");
    assert_eq!(value("JCLI_HOOK_EVENT"), "pre_send_message");
    for name in [
        "HOOKWIRE_CWD",
        "JCLI_CWD",
        "CLAUDE_PROJECT_DIR",
        "GEMINI_PROJECT_DIR",
        "GEMINI_CWD",
    ] {
        assert_eq!(value(name), workspace, "{name}");
    }
    assert_eq!(value("HOME"), "/home/hookwire");
}

#[tokio::test]
async fn a_secret_reaches_a_hook_only_through_its_env_map() {
    let hooks = r#"
pre_send_message:
  - command: 'env > env.txt; exit 2'
    env:
      AUTHORIZATION: "Bearer ${OPENAI_API_KEY}"
      MODE: strict
"#;
    let server = Hookwire::start(
        hooks,
        &[
            ("OPENAI_API_KEY", OPENAI_KEY),
            ("HOOKWIRE_SECRET", SECRET),
            ("HOOKWIRE_LLM_BASE_URL", "http://127.0.0.1:9/v1"),
        ],
    );
    let frames = server.chat("hi").await;
    assert_eq!(frames.last().unwrap()["code"], "hook_blocked");
    let vars = variables(&server.written("env.txt").await);
    let value = |name: &str| {
        vars.iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(
        value("AUTHORIZATION"),
        Some(format!("Bearer {OPENAI_KEY}").as_str())
    );
    assert_eq!(value("MODE"), Some("strict"));
    assert_eq!(value("OPENAI_API_KEY"), None, "only what the map names");
    assert_eq!(value("HOOKWIRE_SECRET"), None);
}

#[tokio::test]
async fn an_env_map_naming_an_unset_variable_stops_the_server_from_starting() {
    let workspace = tempfile::tempdir().unwrap();
    let hooks_file = workspace.path().join("hooks.yaml");
    std::fs::write(
        &hooks_file,
        "stop:\n  - command: 'true'\n    env: {TOKEN: '${HOOKWIRE_TEST_NEVER_SET}'}\n",
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(["serve", "--addr", "127.0.0.1:0"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOOKWIRE_WORKSPACE", workspace.path())
        .env("HOOKWIRE_HOOKS", &hooks_file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains("HOOKWIRE_TEST_NEVER_SET"),
        "the problem names the variable: {stderr}"
    );
}

/// The hooks run as the server's user, who may read `/proc/PID/environ` of its own processes:
/// the server makes itself non-dumpable so that its hooks cannot read its environment there.
/// Root may read anything, so under root the server runs as `nobody` for this test.
#[tokio::test]
async fn a_hook_cannot_read_the_servers_environment_through_proc() {
    use std::os::unix::fs::PermissionsExt;
    let root = rustix_uid_is_root();
    if root && Command::new("setpriv").arg("--help").output().is_err() {
        eprintln!("skipped: running as root without setpriv to drop to another user");
        return;
    }
    let workspace = tempfile::tempdir().unwrap();
    std::fs::set_permissions(workspace.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let hooks = "pre_send_message:\n  - command: 'cat /proc/$PPID/environ > leak.txt 2>&1; echo done > ran.txt; exit 2'\n";
    let server = Hookwire::start_in(
        workspace,
        hooks,
        &[
            ("HOOKWIRE_SECRET", SECRET),
            ("HOOKWIRE_LLM_BASE_URL", "http://127.0.0.1:9/v1"),
        ],
        |command| {
            if !root {
                return command;
            }
            let mut setpriv = Command::new("setpriv");
            setpriv
                .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
                .arg(command.get_program())
                .args(command.get_args());
            setpriv
        },
    );
    let frames = server.chat("hi").await;
    assert_eq!(frames.last().unwrap()["code"], "hook_blocked");
    server.written("ran.txt").await;
    let leak = std::fs::read_to_string(server.path("leak.txt")).unwrap_or_default();
    assert!(!leak.contains(SECRET), "the hook read the secret: {leak:?}");
}

fn rustix_uid_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|line| line.starts_with("Uid:"))
        .and_then(|line| line.split_whitespace().nth(2))
        == Some("0")
}

// ─── processes ───

/// Each hook starts a process that leaves the hook's process group (`setsid`), one that ignores
/// hang-ups (`nohup`), and one that a subshell orphans; each writes its pid and sleeps.
const ESCAPES: &str = r#"
setsid sh -c 'echo $$ > setsid.pid; exec sleep 300' >/dev/null 2>&1 &
nohup sh -c 'echo $$ > nohup.pid; exec sleep 300' >/dev/null 2>&1 &
(sh -c 'echo $$ > subshell.pid; exec sleep 300' >/dev/null 2>&1 &)
until [ -s setsid.pid ] && [ -s nohup.pid ] && [ -s subshell.pid ]; do sleep 0.01; done
"#;

fn hook_file(event: &str, script: &str, extra: &str) -> String {
    let indented: String = script
        .trim()
        .lines()
        .map(|line| format!("      {line}\n"))
        .collect();
    format!("{event}:\n  - command: |\n{indented}{extra}")
}

/// Waits until every process `ESCAPES` started is gone.
async fn all_gone(server: &Hookwire) {
    for file in ["setsid.pid", "nohup.pid", "subshell.pid"] {
        gone(server, file).await;
    }
}

/// Chats once with the `ESCAPES` hook (plus `then`, and `extra` hook settings); the chat ends
/// with `done`, and every process the hook left is gone.
async fn escapes_are_cleaned_up(then: &str, extra: &str) {
    let script = format!("{ESCAPES}\n{then}");
    let server = Hookwire::start(&hook_file("pre_send_message", &script, extra), &[]);
    let frames = server.chat("hi").await;
    assert_eq!(frames.last().unwrap()["type"], "done", "{frames:?}");
    all_gone(&server).await;
}

#[tokio::test]
async fn processes_a_hook_leaves_behind_are_killed_when_it_exits() {
    escapes_are_cleaned_up("", "").await;
}

#[tokio::test]
async fn processes_a_hook_leaves_behind_are_killed_at_its_timeout() {
    escapes_are_cleaned_up("sleep 300", "    timeout: 1\n").await;
}

#[tokio::test]
async fn processes_a_hook_leaves_behind_are_killed_when_its_chat_is_cancelled() {
    let script = format!("{ESCAPES}\nsleep 300");
    let server = Hookwire::start(&hook_file("pre_send_message", &script, ""), &[]);
    let mut client = server.connect().await;
    client
        .send(json!({"type":"chat","id":"c","input":"hi","enable_tools":false}))
        .await;
    for file in ["setsid.pid", "nohup.pid", "subshell.pid"] {
        server.written(file).await;
    }
    client.send(json!({"type":"cancel","id":"c"})).await;
    let frames = client.until_end().await;
    assert_eq!(frames.last().unwrap()["reason"], "cancelled");
    all_gone(&server).await;
}

/// A leftover process that keeps the hook's stdout open does not hold the run until its
/// timeout: the run ends with the hook's main process, and what it said counts.
#[tokio::test]
async fn a_leftover_holding_the_output_does_not_hold_the_run() {
    let script = r#"
(sh -c 'echo $$ > held.pid; exec sleep 300' &)
until [ -s held.pid ]; do sleep 0.01; done
echo 'blocked before the leftover ended' >&2
exit 2
"#;
    let server = Hookwire::start(
        &hook_file("pre_send_message", script, "    timeout: 60\n"),
        &[],
    );
    let frames = server.chat("hi").await;
    let last = frames.last().unwrap();
    assert_eq!(
        (last["code"].as_str(), last["message"].as_str()),
        (
            Some("hook_blocked"),
            Some("blocked before the leftover ended")
        ),
        "{frames:?}"
    );
    gone(&server, "held.pid").await;
}

// ─── on_error: block ───

async fn in_process(upstream: &FakeUpstream, hooks: &str) -> TestServer {
    TestServer::builder()
        .workspace(crate::agent::workspace())
        .upstream(upstream)
        .hooks(hooks)
        .start()
        .await
}

#[tokio::test]
async fn a_failing_pre_tool_hook_with_on_error_block_skips_the_tool() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["[NEED_TOOL] go"]));
    upstream.push(Reply::tool_calls(&[(
        "c1",
        "read_file",
        json!({"path":"a.txt"}),
    )]));
    upstream.push(Reply::text(&["final"]));
    let hooks = "pre_tool_execution:\n  - name: policy-guard\n    command: 'echo broken >&2; exit 3'\n    on_error: block\n";
    let server = in_process(&upstream, hooks).await;
    let frames = server
        .connect()
        .await
        .chat(json!({"type":"chat","input":"read a.txt"}))
        .await;
    let result = frames.iter().find(|f| f["type"] == "tool_result").unwrap();
    assert_eq!(result["is_error"], true, "{result}");
    let content = result["content"].as_str().unwrap();
    assert!(content.contains("policy-guard"), "{content}");
    assert_eq!(frames.last().unwrap()["reason"], "completed");
    server.shutdown().await;
}

#[tokio::test]
async fn a_failing_or_slow_pre_send_hook_with_on_error_block_refuses_the_chat() {
    for (command, timeout) in [("exit 3", 10.0), ("sleep 30", 0.3)] {
        let upstream = FakeUpstream::start().await;
        let hooks = format!(
            "pre_send_message:\n  - name: gatekeeper\n    command: '{command}'\n    timeout: {timeout}\n    on_error: block\n"
        );
        let server = in_process(&upstream, &hooks).await;
        let frames = server
            .connect()
            .await
            .chat(json!({"type":"chat","input":"hi","enable_tools":false}))
            .await;
        let last = frames.last().unwrap();
        assert_eq!(last["code"], "hook_blocked", "{command}: {frames:?}");
        assert!(
            last["message"].as_str().unwrap().contains("gatekeeper"),
            "{last}"
        );
        assert!(upstream.requests().is_empty(), "{command}");
        server.shutdown().await;
    }
}

// ─── http hooks ───

/// A local HTTP server: every request is counted by path, and answered by `answer`.
#[derive(Clone)]
struct Endpoint {
    hits: Arc<Mutex<Vec<String>>>,
    answer: Arc<dyn Fn(&str) -> Response + Send + Sync>,
}

async fn endpoint(answer: impl Fn(&str) -> Response + Send + Sync + 'static) -> (String, Endpoint) {
    let state = Endpoint {
        hits: Arc::default(),
        answer: Arc::new(answer),
    };
    async fn handle(
        State(state): State<Endpoint>,
        uri: axum::http::Uri,
        method: axum::http::Method,
    ) -> Response {
        state
            .hits
            .lock()
            .unwrap()
            .push(format!("{method} {}", uri.path()));
        (state.answer)(uri.path())
    }
    let app = Router::new()
        .route("/{*path}", any(handle))
        .with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), state)
}

impl Endpoint {
    fn hits(&self) -> Vec<String> {
        self.hits.lock().unwrap().clone()
    }
}

/// The user input the model was sent in the first request.
fn sent_input(upstream: &FakeUpstream) -> String {
    upstream.requests()[0]
        .messages()
        .into_iter()
        .filter(|(role, _)| role == "user")
        .map(|(_, content)| content)
        .next_back()
        .unwrap_or_default()
}

fn rewrite(to: &str) -> Response {
    axum::Json(json!({ "user_input": to })).into_response()
}

#[tokio::test]
async fn an_http_hook_does_not_follow_a_redirect() {
    let (elsewhere, target) = endpoint(|_| rewrite("rewritten elsewhere")).await;
    let location = format!("{elsewhere}/collect");
    let (hook_url, _) = endpoint(move |_| {
        Response::builder()
            .status(302)
            .header("location", location.clone())
            .body(Body::empty())
            .unwrap()
    })
    .await;
    let upstream = FakeUpstream::start().await;
    let hooks = format!("pre_send_message:\n  - type: http\n    url: {hook_url}/hook\n");
    let server = in_process(&upstream, &hooks).await;
    let frames = server
        .connect()
        .await
        .chat(json!({"type":"chat","input":"hi","enable_tools":false}))
        .await;
    assert_eq!(frames.last().unwrap()["type"], "done");
    assert_eq!(
        target.hits(),
        Vec::<String>::new(),
        "the redirect was followed"
    );
    assert_eq!(sent_input(&upstream), "hi", "a 3xx is a failure: no change");
    server.shutdown().await;
}

/// A JSON answer `{"user_input": "xxx…"}` of `size` bytes.
fn big_answer(size: usize) -> Vec<u8> {
    let mut body = br#"{"user_input":""#.to_vec();
    body.resize(size - 2, b'x');
    body.extend_from_slice(b"\"}");
    body
}

#[tokio::test]
async fn an_http_hook_answer_over_1_mib_is_a_failure() {
    let (hook_url, _) = endpoint(move |path| {
        let body = big_answer(2 * 1024 * 1024);
        match path {
            // Declared up front: refused before the body is read.
            "/sized" => body.into_response(),
            // Streamed in 64 KiB chunks with no length.
            _ => {
                let chunks: Vec<Result<Bytes, std::io::Error>> = body
                    .chunks(64 * 1024)
                    .map(|c| Ok(Bytes::copy_from_slice(c)))
                    .collect();
                Body::from_stream(futures::stream::iter(chunks)).into_response()
            }
        }
    })
    .await;
    for path in ["/sized", "/streamed"] {
        let upstream = FakeUpstream::start().await;
        let hooks = format!("pre_send_message:\n  - type: http\n    url: {hook_url}{path}\n");
        let server = in_process(&upstream, &hooks).await;
        let frames = server
            .connect()
            .await
            .chat(json!({"type":"chat","input":"hi","enable_tools":false}))
            .await;
        assert_eq!(frames.last().unwrap()["type"], "done");
        assert_eq!(sent_input(&upstream), "hi", "{path}: the answer was used");
        server.shutdown().await;
    }
}

/// An endless answer is read only up to the cap: the server's memory stays bounded.
#[tokio::test]
async fn an_endless_http_hook_answer_is_not_read_to_its_end() {
    let sent = Arc::new(AtomicUsize::new(0));
    let counter = sent.clone();
    let (hook_url, _) = endpoint(move |_| {
        let counter = counter.clone();
        let chunk = Bytes::from(vec![b' '; 64 * 1024]);
        // 256 MiB of whitespace, then a valid answer: only a reader with no cap gets there.
        let stream = futures::stream::iter(0..4096)
            .map(move |_| Ok::<_, std::io::Error>(chunk.clone()))
            .chain(futures::stream::once(async {
                Ok(Bytes::from_static(b"{\"user_input\":\"flooded\"}"))
            }));
        let stream = stream.inspect(move |c| {
            if let Ok(c) = c {
                counter.fetch_add(c.len(), Ordering::SeqCst);
            }
        });
        Body::from_stream(stream).into_response()
    })
    .await;
    let upstream = FakeUpstream::start().await;
    let hooks =
        format!("pre_send_message:\n  - type: http\n    url: {hook_url}/flood\n    timeout: 60\n");
    let server = in_process(&upstream, &hooks).await;
    let frames = server
        .connect()
        .await
        .chat(json!({"type":"chat","input":"hi","enable_tools":false}))
        .await;
    assert_eq!(frames.last().unwrap()["type"], "done");
    assert_eq!(sent_input(&upstream), "hi");
    let sent = sent.load(Ordering::SeqCst);
    assert!(
        sent < 32 * 1024 * 1024,
        "{} MiB were sent before the hook stopped reading",
        sent / (1024 * 1024)
    );
    server.shutdown().await;
}

#[tokio::test]
async fn workspace_http_hooks_may_call_only_the_allowed_urls() {
    let (base, hits) = endpoint(|path| rewrite(&format!("via {path}"))).await;
    let upstream = FakeUpstream::start().await;
    let workspace = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(workspace.path().join(".hookwire")).unwrap();
    // The allowed hook runs first and rewrites the input; the refused one would rewrite it
    // again.
    std::fs::write(
        workspace.path().join(".hookwire/hooks.yaml"),
        format!(
            "pre_send_message:\n  - type: http\n    url: {base}/allowed/hook\n  - type: http\n    url: {base}/other\n"
        ),
    )
    .unwrap();
    let config = workspace.path().join("config.yaml");
    std::fs::write(
        &config,
        // The openai style: the request shows the input as the hook left it, nothing appended.
        format!("upstream:\n  message_style: openai\nhttp_hooks:\n  allowed_urls: ['{base}/allowed/']\n"),
    )
    .unwrap();
    let server = Hookwire::start_in(
        workspace,
        "",
        &[
            ("HOOKWIRE_CONFIG", config.to_str().unwrap()),
            ("HOOKWIRE_TRUST_WORKSPACE_HOOKS", "true"),
            ("HOOKWIRE_LLM_BASE_URL", &upstream.base_url),
            ("HOOKWIRE_LLM_API_KEY", "k"),
        ],
        |command| command,
    );
    let frames = server.chat("hi").await;
    assert_eq!(frames.last().unwrap()["type"], "done", "{frames:?}");
    assert_eq!(hits.hits(), ["POST /allowed/hook"]);
    assert_eq!(sent_input(&upstream), "via /allowed/hook");
    let logged = server
        .logged(|line| line.contains("/other") && line.contains("http_hooks.allowed_urls"))
        .await;
    assert!(logged, "the refusal is logged: {:?}", server.log());
}

/// Server-level http hooks are the operator's: they are not limited by the allowlist.
#[tokio::test]
async fn server_level_http_hooks_are_not_limited_by_the_allowlist() {
    let (base, hits) = endpoint(|_| rewrite("via the server hook")).await;
    let upstream = FakeUpstream::start().await;
    let hooks = format!("pre_send_message:\n  - type: http\n    url: {base}/anything\n");
    let server = in_process(&upstream, &hooks).await;
    server
        .connect()
        .await
        .chat(json!({"type":"chat","input":"hi","enable_tools":false}))
        .await;
    assert_eq!(hits.hits(), ["POST /anything"]);
    assert_eq!(sent_input(&upstream), "via the server hook");
    server.shutdown().await;
}

/// An http hook that fails is logged without its URL's secrets: no userinfo, no query values,
/// neither in hookwire's words nor in the HTTP client's.
#[tokio::test]
async fn a_failing_http_hook_is_logged_without_the_secrets_of_its_url() {
    // A port nothing listens on: the call fails to connect.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let hooks = format!(
        "pre_send_message:\n  - url: http://hookuser:PASSWORD-IN-URL@127.0.0.1:{port}/hook?key=KEY-IN-QUERY\n"
    );
    let server = Hookwire::start(&hooks, &[]);
    let frames = server.chat("hi").await;
    assert!(!frames.is_empty());
    assert!(
        server.logged(|line| line.contains("hook failed")).await,
        "{:?}",
        server.log()
    );
    let log = server.log().join("\n");
    assert!(!log.contains("PASSWORD-IN-URL"), "{log}");
    assert!(!log.contains("KEY-IN-QUERY"), "{log}");
    assert!(log.contains(&format!("127.0.0.1:{port}/hook")), "{log}");
}
