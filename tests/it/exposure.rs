//! What the server shows, and to whom (docs/protocol.md §16): no route or frame shows a secret
//! of a hook or an MCP server; `admin_token` guards the operator's routes; the token travels in
//! `Sec-WebSocket-Protocol`; a wildcard bind answers IP literals and loopback names only; a blank
//! secret refuses to start and a short one is warned about; a killed server's transcript folder
//! is gone after the next start.

use std::time::Duration;

use hookwire::mcp::{McpOrigin, McpServerSettings, McpServerSpec};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::binary::Hookwire;
use crate::common::*;

/// Sends one raw HTTP/1.1 request; the status and the body.
async fn raw(addr: std::net::SocketAddr, request: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    // An upgrade answer (101) keeps the connection open: read the head only then.
    let mut buffer = [0u8; 8192];
    loop {
        let n = stream.read(&mut buffer).await.unwrap_or(0);
        answer.extend_from_slice(&buffer[..n]);
        if n == 0
            || answer.starts_with(b"HTTP/1.1 101") && answer.windows(4).any(|w| w == b"\r\n\r\n")
        {
            break;
        }
    }
    let text = String::from_utf8_lossy(&answer).to_string();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (status, body)
}

fn request(path: &str, headers: &[(&str, &str)], upgrade: bool) -> String {
    let mut text = format!("GET {path} HTTP/1.1\r\n");
    if upgrade {
        text.push_str(
            "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n",
        );
    } else {
        text.push_str("Connection: close\r\n");
    }
    for (name, value) in headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    text + "\r\n"
}

const CANARIES: [&str; 15] = [
    "CANARYENV",
    "CANARYGLUED",
    "CANARYCURLUSER",
    "CANARYREDIS",
    "CANARYPOSTGRES",
    "CANARYAMQP",
    "CANARYHEADER",
    "CANARYFLAG",
    "CANARYPASSWORD",
    "CANARYOPAQUE",
    "CANARYUSERINFO",
    "CANARYQUERY",
    "CANARYSTDERR",
    "CANARYMCPURL",
    "CANARYMCPUSER",
];

#[tokio::test]
async fn no_route_or_frame_shows_a_secret_of_a_hook_or_an_mcp_server() {
    let hooks = "pre_tool_execution:\n  \
      - type: command\n    \
        command: API_KEY=CANARYENV ./notify.sh --token=CANARYFLAG --password CANARYPASSWORD sk0CANARYOPAQUE1234567890\n    \
        env:\n      TOKEN: CANARYENV\n  \
      - type: http\n    \
        url: https://hookuser:CANARYUSERINFO@127.0.0.1:9/hook?key=CANARYQUERY&v=2\n  \
      - type: command\n    \
        command: |-\n      echo 'no secrets here'; mysqldump -pCANARYGLUED app; curl -u bot:CANARYCURLUSER http://h/x; redis-cli -a CANARYREDIS ping; psql postgresql://app:CANARYPOSTGRES@db/app; ./q.sh amqp://guest:CANARYAMQP@mq/; curl -H 'Authorization: Bearer CANARYHEADER' http://h/x\n";
    let stdio = McpServerSettings::new(
        "noisy",
        McpServerSpec {
            command: Some("/bin/sh".into()),
            args: vec![
                "-c".into(),
                "echo 'starting with token CANARYSTDERR' >&2; exit 7".into(),
            ],
            ..McpServerSpec::default()
        },
        McpOrigin::Config,
    )
    .unwrap();
    let http = McpServerSettings::new(
        "remote",
        McpServerSpec {
            url: Some("http://mcpuser:CANARYMCPUSER@127.0.0.1:9/mcp?token=CANARYMCPURL".into()),
            ..McpServerSpec::default()
        },
        McpOrigin::Config,
    )
    .unwrap();
    let upstream = FakeUpstream::start().await;
    let server = TestServer::builder()
        .upstream(&upstream)
        .hooks_file("hooks.yaml", hooks)
        .config(move |c| c.mcp_servers = vec![stdio, http])
        .start()
        .await;
    // Both servers down, with their reasons.
    let info = std::cell::RefCell::new(Value::Null);
    let down = eventually(Duration::from_secs(20), || async {
        let (_, body) = http_get(server.addr, "/api/info").await;
        let now: Value = serde_json::from_str(&body).unwrap();
        let both = now["mcp_servers"]
            .as_array()
            .is_some_and(|list| list.iter().all(|s| s["state"] == "down"));
        *info.borrow_mut() = now;
        both
    })
    .await;
    let info = info.into_inner();
    assert!(down, "{info:#}");
    let reason = |name: &str| {
        info["mcp_servers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap()["reason"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let noisy = reason("noisy");
    assert!(
        noisy.contains("exited with status 7; see the server log"),
        "{noisy}"
    );
    assert!(
        reason("remote").contains("127.0.0.1:9/mcp?token=***"),
        "{}",
        reason("remote")
    );

    upstream.push(Reply::text(&["hello"]));
    let frames = chat(&server, json!({"type":"chat","id":"c1","input":"hi"})).await;
    let mut seen = serde_json::to_string(&frames).unwrap();
    for path in ["/api/hooks", "/api/info", "/api/skills", "/metrics"] {
        let (status, body) = http_get(server.addr, path).await;
        assert_eq!(status, 200, "{path}");
        seen.push_str(&body);
    }
    for canary in CANARIES {
        assert!(!seen.contains(canary), "{canary} shown: {seen}");
    }
    // What is shown is still the hook: its program, its URL's place and keys.
    let (_, hooks) = http_get(server.addr, "/api/hooks").await;
    let hooks: Value = serde_json::from_str(&hooks).unwrap();
    let listed = hooks["hooks"].as_array().unwrap();
    let command = listed[0]["command"].as_str().unwrap();
    assert!(
        command.starts_with("API_KEY=*** ./notify.sh --token=*** --password ***"),
        "{command}"
    );
    assert_eq!(
        listed[1]["url"],
        "https://***@127.0.0.1:9/hook?key=***&v=***"
    );
    // Quoted text is not a secret for being quoted.
    let command = listed[2]["command"].as_str().unwrap();
    assert!(command.contains("echo 'no secrets here'"), "{command}");
    assert!(
        command.contains("curl -u *** http://h/x; redis-cli -a *** ping"),
        "{command}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn the_admin_token_guards_hooks_and_metrics_and_the_chat_token_does_not_open_them() {
    let server = TestServer::builder()
        .config(|c| {
            c.auth_token = Some("chat-token".into());
            c.admin_token = Some("admin-token".into());
        })
        .start()
        .await;
    let host = server.addr.to_string();
    let with = |token: &'static str| {
        vec![
            ("Host", host.clone()),
            ("Authorization", format!("Bearer {token}")),
        ]
    };
    let get = |headers: Vec<(&'static str, String)>, path: &str| {
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        request(path, &headers, false)
    };
    for path in ["/api/hooks", "/metrics"] {
        assert_eq!(
            raw(server.addr, &get(with("chat-token"), path)).await.0,
            401,
            "{path}"
        );
        assert_eq!(
            raw(server.addr, &get(vec![("Host", host.clone())], path))
                .await
                .0,
            401,
            "{path}"
        );
        assert_eq!(
            raw(server.addr, &get(with("admin-token"), path)).await.0,
            200,
            "{path}"
        );
        let query = format!("{path}?token=chat-token");
        assert_eq!(
            raw(server.addr, &get(with("chat-token"), &query)).await.0,
            401,
            "{path}"
        );
    }
    assert_eq!(
        raw(server.addr, &get(with("chat-token"), "/api/info"))
            .await
            .0,
        200
    );
    server.shutdown().await;
}

#[tokio::test]
async fn the_token_travels_as_a_subprotocol_and_the_server_answers_hookwire() {
    let server = TestServer::builder()
        .config(|c| c.auth_token = Some("open (sesame)+1".into()))
        .start()
        .await;
    let mut request = format!("ws://{}/ws", server.addr)
        .into_client_request()
        .unwrap();
    request.headers_mut().insert(
        "sec-websocket-protocol",
        "hookwire, hookwire.token.open%20%28sesame%29%2B1"
            .parse()
            .unwrap(),
    );
    let (ws, response) = tokio_tungstenite::connect_async(request).await.unwrap();
    assert_eq!(
        response.headers()["sec-websocket-protocol"],
        "hookwire",
        "the token's offer is never echoed"
    );
    let frames = Client { ws }
        .chat(json!({"type":"chat","input":"hello","enable_tools":false}))
        .await;
    assert_eq!(frames.last().unwrap()["type"], "done", "{frames:?}");
    // A wrong token in the offer: refused before the upgrade.
    let mut wrong = format!("ws://{}/ws", server.addr)
        .into_client_request()
        .unwrap();
    wrong.headers_mut().insert(
        "sec-websocket-protocol",
        "hookwire, hookwire.token.open".parse().unwrap(),
    );
    assert!(tokio_tungstenite::connect_async(wrong).await.is_err());
    server.shutdown().await;
}

/// DNS rebinding on `0.0.0.0`: the attacker's name resolves to this machine, and the page it
/// serves talks to hookwire with its own Host and Origin.
#[tokio::test]
async fn a_wildcard_bind_refuses_a_rebinding_host_and_answers_ip_literals() {
    let server = TestServer::builder()
        .config(|c| c.addr = "0.0.0.0:0".into())
        .start()
        .await;
    let port = server.addr.port();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let evil = format!("rebind.evil.example:{port}");
    let evil_origin = format!("http://{evil}");
    let hostile = [("Host", evil.as_str()), ("Origin", evil_origin.as_str())];
    assert_eq!(
        raw(addr, &request("/api/info", &hostile, false)).await.0,
        403
    );
    assert_eq!(raw(addr, &request("/ws", &hostile, true)).await.0, 403);
    for host in [format!("127.0.0.1:{port}"), format!("localhost:{port}")] {
        let origin = format!("http://{host}");
        let own = [("Host", host.as_str()), ("Origin", origin.as_str())];
        assert_eq!(
            raw(addr, &request("/api/info", &own, false)).await.0,
            200,
            "{host}"
        );
        assert_eq!(
            raw(addr, &request("/ws", &own, true)).await.0,
            101,
            "{host}"
        );
    }
    server.shutdown().await;
}

#[tokio::test]
async fn a_bracketed_host_with_a_tail_and_a_second_origin_are_refused() {
    let server = TestServer::builder().start().await;
    let port = server.addr.port();
    let tail = format!("[::1].evil.example:{port}");
    assert_eq!(
        raw(
            server.addr,
            &request("/api/info", &[("Host", &tail)], false)
        )
        .await
        .0,
        403
    );
    let host = server.addr.to_string();
    let own = format!("http://{host}");
    let two = [
        ("Host", host.as_str()),
        ("Origin", own.as_str()),
        ("Origin", "http://evil.example"),
    ];
    assert_eq!(raw(server.addr, &request("/ws", &two, true)).await.0, 403);
    let one = [("Host", host.as_str()), ("Origin", own.as_str())];
    assert_eq!(raw(server.addr, &request("/ws", &one, true)).await.0, 101);
    server.shutdown().await;
}

/// A secret under 32 bytes: the server starts and says so; `check` lists it.
#[tokio::test]
async fn a_short_secret_starts_with_a_warning_and_check_lists_it() {
    let server = Hookwire::start("{}\n", &[("HOOKWIRE_SECRET", "short-secret")]);
    assert!(
        server
            .logged(|line| line.contains("the secret is 12 bytes long"))
            .await,
        "{:?}",
        server.log()
    );
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(["check", "--addr", "127.0.0.1:0", "--workspace"])
        .arg(&server.root)
        .env("HOOKWIRE_SECRET", "short-secret")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).to_string()
        + &String::from_utf8_lossy(&output.stderr);
    assert!(
        text.contains("secret") && text.contains("12 bytes long"),
        "{text}"
    );
    assert_eq!(
        output.status.code(),
        Some(0),
        "a warning, not an error: {text}"
    );
}

/// Transcripts hold whole chats: a server killed with SIGKILL cannot remove its folder, so the
/// next server to start in the same temporary directory does.
#[tokio::test]
async fn a_killed_servers_transcript_folder_is_gone_after_the_next_start() {
    let temp = tempfile::tempdir().unwrap();
    let tmpdir = temp.path().to_str().unwrap().to_string();
    let folders = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(temp.path())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("hookwire-transcripts-"))
            })
            .collect()
    };
    let mut first = Hookwire::start("{}\n", &[("TMPDIR", &tmpdir)]);
    let made = folders();
    assert_eq!(made.len(), 1, "{made:?}; the log: {:?}", first.log());
    std::fs::write(made[0].join("hookwire-transcript-left.jsonl"), "{}\n").unwrap();
    first.child.kill().unwrap(); // SIGKILL: nothing of the server runs after it
    first.child.wait().unwrap();
    assert!(made[0].exists(), "a killed server cannot clean up");

    let second = Hookwire::start("{}\n", &[("TMPDIR", &tmpdir)]);
    let now = folders();
    assert!(
        !made[0].exists(),
        "the dead server's folder is gone: {now:?}"
    );
    assert_eq!(now.len(), 1, "the new server's own: {now:?}");
    assert!(
        second
            .logged(|line| line.contains("removed the transcript folder"))
            .await,
        "{:?}",
        second.log()
    );
}

/// `hookwire serve --addr 0.0.0.0:0` with no auth_token, in a workspace with a hook file that is
/// not trusted, with `env` added (state dir outside the workspace).
fn serve_on_all_interfaces(env: &[(&str, &str)]) -> Hookwire {
    let dir = tempfile::tempdir().unwrap();
    let (root, state) = (dir.path().join("ws"), dir.path().join("state"));
    std::fs::create_dir_all(root.join(".hookwire")).unwrap();
    std::fs::write(
        root.join(".hookwire/hooks.yaml"),
        "user_input:\n  - command: 'true'\n",
    )
    .unwrap();
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_hookwire"));
    command
        .args(["serve", "--addr", "0.0.0.0:0"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOOKWIRE_WORKSPACE", &root)
        .env("HOOKWIRE_STATE_DIR", &state)
        .envs(env.iter().copied());
    Hookwire::launch(command, root, Some(dir))
}

/// `hookwire check --addr 0.0.0.0:8080` with `env`: what it prints.
fn check_on_all_interfaces(env: &[(&str, &str)]) -> String {
    let workspace = tempfile::tempdir().unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(["check", "--addr", "0.0.0.0:8080", "--workspace"])
        .arg(workspace.path())
        .env_remove("HOOKWIRE_AUTH_TOKEN")
        .env_remove("HOOKWIRE_CONTAINER")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout).to_string() + &String::from_utf8_lossy(&output.stderr)
}

/// No auth_token on all interfaces is a warning, in the log and from `check`; in a container
/// (`HOOKWIRE_CONTAINER=true`, which the image sets) the published port decides who can connect,
/// so it is one informative line pointing to the docs, and `check` has nothing to say.
#[tokio::test]
async fn no_auth_token_on_all_interfaces_warns_but_in_a_container_informs() {
    let plain = serve_on_all_interfaces(&[]);
    let log = plain.log().join("\n");
    assert!(
        log.lines()
            .any(|l| l.contains("WARN") && l.contains("no auth_token: anyone who can reach it")),
        "{log}"
    );
    assert!(!log.contains("published"), "{log}");

    let container = serve_on_all_interfaces(&[("HOOKWIRE_CONTAINER", "true")]);
    let log = container.log().join("\n");
    let notes: Vec<&str> = log.lines().filter(|l| l.contains("auth_token")).collect();
    assert_eq!(notes.len(), 1, "one line: {log}");
    assert!(notes[0].contains("INFO"), "{log}");
    assert!(
        notes[0].contains("who can connect is decided by how its port is published")
            && notes[0].contains("docs/deployment.md#docker"),
        "{log}"
    );
    assert!(!log.contains("anyone who can reach it"), "{log}");

    let checked = check_on_all_interfaces(&[]);
    assert!(checked.contains("no auth_token"), "{checked}");
    let checked = check_on_all_interfaces(&[("HOOKWIRE_CONTAINER", "true")]);
    assert!(!checked.contains("auth_token"), "{checked}");
}

/// The hint for a workspace hook file that is not trusted names `hookwire trust`; in a container
/// it also says to run it there and to keep the state dir on a volume, since the container's
/// own files do not outlive it.
#[tokio::test]
async fn in_a_container_the_trust_hint_says_where_to_run_it_and_to_keep_the_state() {
    let untrusted = |line: &str| line.contains(".hookwire/hooks.yaml was not loaded");
    let plain = serve_on_all_interfaces(&[]);
    assert!(plain.logged(untrusted).await, "{:?}", plain.log());
    let line = plain.log().into_iter().find(|l| untrusted(l)).unwrap();
    assert!(
        line.contains("review and trust it with: hookwire trust --workspace"),
        "{line}"
    );
    assert!(!line.contains("container"), "{line}");

    let container = serve_on_all_interfaces(&[("HOOKWIRE_CONTAINER", "true")]);
    assert!(container.logged(untrusted).await, "{:?}", container.log());
    let line = container.log().into_iter().find(|l| untrusted(l)).unwrap();
    assert!(
        line.contains(
            "in a container, run it there (docker exec -it CONTAINER hookwire trust --workspace"
        ) && line.contains("on a volume, or the trust is gone with the container")
            && line.contains("docs/deployment.md#workspace-trust-in-a-container"),
        "{line}"
    );
}
