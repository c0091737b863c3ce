//! The front-end wires (docs/protocol.md §19) driven by the client libraries applications use,
//! from the npm registry, pinned in `tests/frontends/package.json` (installed with `npm ci` into
//! `tests/frontends/node_modules` on first use): `openai` for the OpenAI-compatible wire, the AI
//! SDK's `AbstractChat` (the class behind `useChat`) for `/api/chat`. A node script per library
//! plays the application and prints what it saw as JSON; the tests assert on that and on what the
//! fake upstream received. The examples a user copies run as they are (`examples.rs`: the AG-UI
//! script; the AI SDK page in Chromium is `browser/examples.rs`). Without node or npm a test says
//! it was skipped; under `CI=true` it fails instead.

mod ag_ui;
mod ai_sdk;
mod examples;
mod openai;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::{json, Value};

use crate::common::TestServer;

/// `tests/frontends`, with its `node_modules` installed; `None` (skipped) without node or npm.
fn client_libraries() -> Option<PathBuf> {
    static INSTALLED: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    npm_folder(
        &INSTALLED,
        "tests/frontends",
        &[],
        "the front-end client tests",
    )
}

/// The folder `path` (in the repository, with a `package.json` and its lockfile) once its
/// `node_modules` is installed with `npm ci` (kept from an earlier run) and each of `then` (npm
/// arguments, e.g. `["run", "build"]`) has run, all once per test run (`done` remembers);
/// `None`, after saying `who` were skipped, without node or npm. Under `CI=true` a failure here
/// fails the test instead.
pub(crate) fn npm_folder(
    done: &'static OnceLock<Result<PathBuf, String>>,
    path: &str,
    then: &[&[&str]],
    who: &str,
) -> Option<PathBuf> {
    let ready = done.get_or_init(|| {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
        let install: &[&str] = &["ci", "--no-audit", "--no-fund"];
        let installed = dir.join("node_modules/.package-lock.json").exists();
        for args in (!installed).then_some(install).iter().chain(then) {
            let output = std::process::Command::new("npm")
                .args(*args)
                .current_dir(&dir)
                .output()
                .map_err(|error| format!("npm cannot run: {error}"))?;
            if !output.status.success() {
                return Err(format!(
                    "npm {} in {path} failed: {}",
                    args.join(" "),
                    String::from_utf8_lossy(&output.stderr)
                ));
            }
        }
        Ok(dir)
    });
    match ready {
        Ok(dir) => crate::frontend::find_node().map(|_| dir.clone()),
        Err(why) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("{who} need node and npm, and CI=true requires them: {why}")
        }
        Err(why) => {
            eprintln!("SKIPPED: {who} need node and npm: {why}");
            None
        }
    }
}

/// Runs `script`'s `scenario` against `server` (with `token` and `env`), and returns what it
/// printed. `None` when the client libraries cannot run here (outside CI).
async fn run_client(
    server: &TestServer,
    script: &str,
    scenario: &str,
    token: Option<&str>,
    env: &[(&str, &str)],
) -> Option<Value> {
    let dir = client_libraries()?;
    let mut command = tokio::process::Command::new("node");
    command
        .arg(dir.join(script))
        .arg(scenario)
        .env("HOOKWIRE_URL", server.url("").trim_end_matches('/'))
        .kill_on_drop(true);
    if let Some(token) = token {
        command.env("HOOKWIRE_TOKEN", token);
    }
    command.envs(env.iter().copied());
    let output = command.output().await.unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{script} {scenario} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    Some(
        serde_json::from_str(stdout.trim()).unwrap_or_else(|error| {
            panic!("{script} {scenario} printed no JSON ({error}): {stdout}")
        }),
    )
}

/// With `allowed_origins`, a page of a listed origin may call the front-end routes from the
/// browser: the CORS preflight (which carries no token) is answered, the answer names the
/// origin; another origin is refused, and without `allowed_origins` a cross-origin page is too.
#[tokio::test]
async fn pages_of_allowed_origins_may_call_the_front_end_routes_from_a_browser() {
    use crate::common::{FakeUpstream, Reply};
    let upstream = FakeUpstream::start().await;
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(|c| {
            c.auth_token = Some("front-token".into());
            c.allowed_origins = Some(vec!["http://app.test".into()]);
        })
        .start()
        .await;
    let http = reqwest::Client::new();
    let preflight = |origin: &str| {
        http.request(reqwest::Method::OPTIONS, server.url("/api/chat"))
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header(
                "access-control-request-headers",
                "authorization,content-type",
            )
            .send()
    };
    let allowed = preflight("http://app.test").await.unwrap();
    assert!(allowed.status().is_success(), "{}", allowed.status());
    let header = |response: &reqwest::Response, name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_ascii_lowercase()
    };
    assert_eq!(
        header(&allowed, "access-control-allow-origin"),
        "http://app.test"
    );
    assert!(header(&allowed, "access-control-allow-headers").contains("authorization"));
    let refused = preflight("http://evil.test").await.unwrap();
    assert_eq!(refused.status().as_u16(), 403);
    upstream.push(Reply::text(&["Hi."]));
    let body = serde_json::json!({"messages": [
        {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]});
    let answer = http
        .post(server.url("/api/chat"))
        .header("origin", "http://app.test")
        .bearer_auth("front-token")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status().as_u16(), 200);
    assert_eq!(
        header(&answer, "access-control-allow-origin"),
        "http://app.test"
    );
    assert!(
        header(&answer, "access-control-expose-headers").contains("x-vercel-ai-ui-message-stream")
    );
    assert!(answer.text().await.unwrap().contains("Hi."));

    let same_origin_only = TestServer::builder().upstream(&upstream).start().await;
    let response = http
        .request(reqwest::Method::OPTIONS, same_origin_only.url("/api/chat"))
        .header("origin", "http://app.test")
        .header("access-control-request-method", "POST")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 403);
}

/// The model's side of two turns: a plan, a round reading `a.txt`, an answer; then an answer.
fn script_a_tool_turn_then_an_answer(upstream: &crate::common::FakeUpstream) {
    use crate::common::Reply;
    upstream.push(Reply::text(&["[NEED_TOOL] read it"]));
    upstream.push(Reply::tool_calls(&[(
        "r1",
        "read_file",
        serde_json::json!({"path": "a.txt"}),
    )]));
    upstream.push(Reply::text(&["It says ALPHA."]));
    upstream.push(Reply::text(&["Still ALPHA."]));
}

/// A server with `a.txt`, the token, and no approval asked.
async fn server_without_approval(upstream: &crate::common::FakeUpstream) -> TestServer {
    TestServer::builder()
        .upstream(upstream)
        .file("a.txt", "ALPHA")
        .config(|c| c.auth_token = Some("front-token".into()))
        .start()
        .await
}

/// The second turn's model request holds the first turn's call and its result, once.
fn assert_the_next_turn_carries_the_tool_round(upstream: &crate::common::FakeUpstream) {
    let requests = upstream.requests();
    assert_eq!(
        requests.len(),
        4,
        "three calls for the first turn, one for the second"
    );
    let next = &requests[3];
    assert_eq!(
        crate::common::tool_results(next),
        ["ALPHA"],
        "{:?}",
        next.messages()
    );
    let calls: Vec<&serde_json::Value> = next.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["tool_calls"].is_array())
        .collect();
    assert_eq!(calls.len(), 1, "{:?}", next.body["messages"]);
    assert_eq!(calls[0]["tool_calls"][0]["function"]["name"], "read_file");
}

/// A skill `keep` whose persistent system hook follows every user input.
fn persistent_skill(root: &Path) {
    let hooks = root.join("skills/keep/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    std::fs::write(hooks.join("rule.md"), "ANSWER IN FRENCH").unwrap();
    std::fs::write(
        hooks.join("hooks.json"),
        json!({"hooks": [{"name": "rule", "file": "rule.md", "timing": "after_user_input",
                          "role": "system", "persistent": true}]})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        root.join("skills/keep/SKILL.md"),
        "---\ndescription: keeps a rule\n---\n",
    )
    .unwrap();
}

/// A server whose skill `keep` adds a persistent system hook after every input, signed.
async fn persistent_hook_server(upstream: &crate::common::FakeUpstream) -> TestServer {
    TestServer::builder()
        .upstream(upstream)
        .prepare(persistent_skill)
        .skills("skills")
        .config(|c| {
            c.auth_token = Some("front-token".into());
            c.agent.secret = Some("front-secret".into());
            c.agent.planning = hookwire::agent::Planning::Off;
        })
        .start()
        .await
}

/// The first turn's model request has the hook's message once; the second has the copy the
/// client carried back (signed, checked) once, beside the second input's own copy.
fn assert_the_hook_is_carried_once(upstream: &crate::common::FakeUpstream) {
    let copies = |request: &crate::common::Recorded| {
        request
            .messages()
            .iter()
            .filter(|(_, content)| content == "ANSWER IN FRENCH")
            .count()
    };
    let requests = upstream.requests();
    assert_eq!(copies(&requests[0]), 1);
    assert_eq!(copies(&requests[1]), 2, "{:?}", requests[1].messages());
}

/// The upstream's API key in the front-end tests: no answer may show it.
const SECRET_KEY: &str = "sk-upstream-secret-front-ends";

/// A server with the token, `a.txt` and no retries; with `approval`, a secret (the approval
/// state sealed under it) and `read_file` asking the person first.
async fn front_server(upstream: &crate::common::FakeUpstream, approval: bool) -> TestServer {
    TestServer::builder()
        .upstream(upstream)
        .file("a.txt", "ALPHA")
        .config(move |c| {
            c.auth_token = Some("front-token".into());
            c.llm.api_key = Some(SECRET_KEY.into());
            c.agent.retry.retries = 0;
            if approval {
                c.agent.secret = Some("front-secret".into());
                c.agent.approval.require_approval = vec!["read_file".into()];
            }
        })
        .start()
        .await
}
