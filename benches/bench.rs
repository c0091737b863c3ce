//! `cargo bench`: hookwire's costs measured against a baseline taken in the same run, reported
//! as ratios (the machine is small and noisy, so absolute numbers vary more than ratios).
//!
//! 1. A streamed chat end to end (WebSocket → hookwire → fake upstream over HTTP/SSE → back) vs
//!    reading the same SSE stream from the fake upstream directly with reqwest.
//! 2. A short chat whose first token arrives at once (the latency a person feels) vs a minimal
//!    relay (`relay.rs`: axum WebSocket + reqwest + serde_json, no agent, no hooks).
//! 3. The memory of an idle WebSocket connection: the server's RSS growth per connection, with
//!    the server in its own process.
//!
//! 4. Token estimation of a 100-message history (what deciding on compaction costs per model
//!    call) vs serialising the same history with `serde_json`.
//!
//! 5. A chat whose one tool round calls an MCP server's tool (the test server of
//!    `tests/mcp_server`, over stdio) vs the same chat calling the built-in `read_file`.
//!
//! 6. Sealing a 100 KB approval state (encrypt and decrypt, XChaCha20-Poly1305 under an HKDF
//!    key) vs signing it only (HMAC-SHA256, as states were before): both deflate and base64.
//!
//! 7. A 20-turn agent conversation (3 tool rounds a turn, results of 2 KB, in the history):
//!    request bytes per turn with micro compaction vs without, and the token estimate of a call
//!    vs serialising its request (`micro/mod.rs`, a module, not a bench target of its own).
//!
//! 8. The real model (tests/it/real_model.rs: llama.cpp's llama-server with SmolLM2-135M, as
//!    the real-model tests installed it under `target/real-model/`): time to first token and
//!    tokens/s through hookwire vs straight from llama-server. Skipped when not installed.
//!
//! `cargo bench --bench bench -- tokens` runs only (4), which needs no server; `-- mcp` only (5);
//! `-- state` only (6); `-- micro` only (7); `-- real-model` only (8).
//!
//! Client frame parsing against a bare `serde_json` parse is measured inside the crate (the
//! parser is private): `cargo test --release --lib -- --ignored --nocapture parse_cost`.

#[path = "../tests/it/common.rs"]
mod common;
mod micro;
#[path = "../tests/it/real_model.rs"]
#[allow(dead_code)] // the module's tests are not built here, only its figures
mod real_model;
mod relay;

use std::hint::black_box;
use std::time::{Duration, Instant};

use common::{FakeUpstream, Reply, TestServer};
use futures::StreamExt;
use serde_json::json;

fn main() {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("cannot start a runtime: {error}");
            return;
        }
    };
    let only_tokens = std::env::args().any(|arg| arg == "tokens");
    let only_mcp = std::env::args().any(|arg| arg == "mcp");
    if std::env::args().any(|arg| arg == "state") {
        bench_approval_state();
        return;
    }
    if std::env::args().any(|arg| arg == "micro") {
        runtime.block_on(micro::bench_micro_compaction());
        return;
    }
    let only_real_model = std::env::args().any(|arg| arg == "real-model");
    if only_real_model {
        runtime.block_on(bench_real_model());
        return;
    }
    if !only_tokens && !only_mcp {
        runtime.block_on(bench_chat());
        runtime.block_on(bench_short_chat());
        runtime.block_on(bench_idle_memory());
    }
    if !only_mcp {
        bench_token_estimate();
    }
    if !only_tokens {
        runtime.block_on(bench_mcp_round());
    }
    if !only_tokens && !only_mcp {
        bench_approval_state();
        runtime.block_on(micro::bench_micro_compaction());
        runtime.block_on(bench_real_model());
    }
}

/// (8): hookwire against llama-server alone, when the real-model tests installed it.
async fn bench_real_model() {
    match real_model::already_installed() {
        Some(installed) => println!("{}", real_model::figures(&installed, 10).await),
        None => {
            println!("real model: skipped (run `cargo test --test it real_model::` to install it)")
        }
    }
}

const STATE_BYTES: usize = 100 * 1024;
const SEALS: usize = 200;

/// (6): one state sealed and opened, against signed and verified, alternating, medians.
fn bench_approval_state() {
    let cost = hookwire::agent::StateCost::new(STATE_BYTES);
    let median = |mut v: Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let (mut sealed, mut signed) = (Vec::new(), Vec::new());
    let (mut sealed_len, mut signed_len) = (0, 0);
    for _ in 0..SEALS {
        let started = Instant::now();
        sealed_len = black_box(cost.seal_and_open());
        sealed.push(started.elapsed());
        let started = Instant::now();
        signed_len = black_box(cost.sign_and_verify());
        signed.push(started.elapsed());
    }
    assert!(sealed_len > 0 && signed_len > 0, "a state did not open");
    let (sealed, signed) = (median(sealed), median(signed));
    println!(
        "approval state of {} bytes of JSON ({sealed_len} bytes sealed, {signed_len} signed; median of {SEALS}): encrypt+decrypt {:.0} µs, sign+verify {:.0} µs, ratio {:.2}",
        cost.json_bytes(),
        sealed.as_secs_f64() * 1e6,
        signed.as_secs_f64() * 1e6,
        sealed.as_secs_f64() / signed.as_secs_f64().max(1e-9)
    );
}

const MCP_CHATS: usize = 50;

/// The test MCP server, built in this profile if it is not there yet.
fn mcp_test_server() -> Option<std::path::PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let binary = exe.parent()?.parent()?.join("examples/mcp_test_server");
    if !binary.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let built = std::process::Command::new(cargo)
            .args([
                "build",
                "--release",
                "--quiet",
                "--example",
                "mcp_test_server",
            ])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .ok()?;
        if !built.success() {
            return None;
        }
    }
    Some(binary)
}

/// One chat: a plan, one round calling `tool` with `arguments`, then the answer.
async fn tool_chat(
    ws: &mut common::Client,
    upstream: &FakeUpstream,
    id: usize,
    tool: &str,
    arguments: serde_json::Value,
) -> Duration {
    common::tool_round(upstream, &[("t1", tool, arguments)], "done");
    let started = Instant::now();
    let frames = ws
        .chat(json!({"type":"chat","id":format!("m{id}"),"input":"go"}))
        .await;
    let elapsed = started.elapsed();
    let result = frames.iter().find(|f| f["type"] == "tool_result");
    assert_eq!(
        result.map(|f| f["is_error"].clone()),
        Some(json!(false)),
        "{frames:?}"
    );
    elapsed
}

async fn bench_mcp_round() {
    let Some(binary) = mcp_test_server() else {
        eprintln!("mcp round: cannot build the MCP test server; skipped");
        return;
    };
    let upstream = FakeUpstream::start().await;
    let settings = match hookwire::mcp::McpServerSettings::new(
        "test",
        hookwire::mcp::McpServerSpec {
            command: Some(binary.display().to_string()),
            auto_approve: vec!["*".into()],
            ..Default::default()
        },
        hookwire::mcp::McpOrigin::Config,
    ) {
        Ok(settings) => settings,
        Err(error) => {
            eprintln!("mcp round: {error}");
            return;
        }
    };
    let server = TestServer::start(Some(&upstream), move |c| c.mcp_servers = vec![settings]).await;
    std::fs::write(server.workspace.path().join("note.txt"), "ALPHA NOTE").ok();
    // The server starts in the background: wait for its tools.
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let (_, body) = common::http_get(server.addr, "/api/info").await;
        if body.contains("\"state\":\"running\"") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut ws = server.connect().await;
    let (mut ours, mut baseline) = (Vec::new(), Vec::new());
    // Interleaved, so that noise from the rest of the machine falls on both alike.
    for i in 0..MCP_CHATS {
        baseline.push(
            tool_chat(
                &mut ws,
                &upstream,
                2 * i,
                "read_file",
                json!({"path":"note.txt"}),
            )
            .await,
        );
        ours.push(
            tool_chat(
                &mut ws,
                &upstream,
                2 * i + 1,
                "mcp__test__read_note",
                json!({"name":"alpha"}),
            )
            .await,
        );
    }
    server.shutdown().await;
    let median = |mut v: Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let (ours, baseline) = (median(ours), median(baseline));
    println!(
        "chat with one tool round (median of {MCP_CHATS}): an MCP tool over stdio {ours:?}, the built-in read_file {baseline:?}, ratio {:.2}, added {:.3} ms",
        ours.as_secs_f64() / baseline.as_secs_f64(),
        (ours.as_secs_f64() - baseline.as_secs_f64()) * 1000.0
    );
}

const HISTORY: usize = 100;
const ESTIMATES: usize = 50;

/// A 100-message history like a real one: user questions, assistant answers, and every fourth
/// exchange a tool call with a file-sized result.
fn history() -> Vec<hookwire::agent::Message> {
    use hookwire::agent::{Message, Role, ToolCall};
    let prose = "The handler reads the frame, checks its size and parses it strictly; \
                 an unknown field is a bad_frame error with the field named. ";
    let code = "fn main() {\n    let config = Config::load()?;\n    serve(config).await\n}\n";
    let mut messages = vec![Message::system(prose.repeat(4))];
    let mut i = 0;
    while messages.len() < HISTORY {
        messages.push(Message::user(format!("question {i}: {}", prose.repeat(2))));
        if i % 4 == 3 {
            let call = ToolCall {
                id: format!("call_{i}"),
                name: "read_file".into(),
                arguments: format!(r#"{{"path":"src/file{i}.rs"}}"#),
            };
            messages.push(Message::assistant_with_tools("", vec![call]));
            let mut result = Message::new(Role::Tool, code.repeat(20));
            result.tool_call_id = Some(format!("call_{i}"));
            messages.push(result);
        }
        messages.push(Message::assistant(prose.repeat(6)));
        i += 1;
    }
    messages.truncate(HISTORY);
    messages
}

/// The history in the OpenAI request shape, as serde_json would send it.
fn history_json(messages: &[hookwire::agent::Message]) -> serde_json::Value {
    let items: Vec<serde_json::Value> = messages
        .iter()
        .map(|m| {
            let mut item = json!({"role": m.role.as_str(), "content": m.content});
            if !m.tool_calls.is_empty() {
                item["tool_calls"] = m
                    .tool_calls
                    .iter()
                    .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
                    .collect();
            }
            if let Some(id) = &m.tool_call_id {
                item["tool_call_id"] = json!(id);
            }
            item
        })
        .collect();
    json!({"model": "gpt-4o", "messages": items})
}

fn bench_token_estimate() {
    let messages = history();
    let request = history_json(&messages);
    // The tokenizer is built at start in the server (`app::agent_parts`): not part of a chat.
    hookwire::llm::warm_up();
    let median = |mut v: Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let mut ours = Vec::new();
    let mut baseline = Vec::new();
    let mut tokens = 0;
    let mut bytes = 0;
    for _ in 0..ESTIMATES {
        let started = Instant::now();
        tokens = black_box(hookwire::llm::estimate_tokens(black_box(&messages)));
        ours.push(started.elapsed());
        let started = Instant::now();
        bytes = match serde_json::to_string(black_box(&request)) {
            Ok(text) => black_box(text.len()),
            Err(_) => 0,
        };
        baseline.push(started.elapsed());
    }
    let (ours, baseline) = (median(ours), median(baseline));
    println!(
        "token estimate of a {HISTORY}-message history ({tokens} tokens, {bytes} bytes of JSON; median of {ESTIMATES}): {ours:?}, serde_json serialisation {baseline:?}, ratio {:.1}",
        ours.as_secs_f64() / baseline.as_secs_f64().max(1e-9)
    );
}

const CHUNKS: usize = 200;
const CHATS: usize = 30;

async fn bench_chat() {
    let upstream = FakeUpstream::start().await;
    let pieces: Vec<String> = (0..CHUNKS).map(|i| format!("tok{i} ")).collect();
    let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
    let reply = Reply::text(&pieces);

    // Baseline: the same SSE body read straight from the fake upstream.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    let url = format!("{}/chat/completions", upstream.base_url);
    let mut baseline = Vec::new();
    for _ in 0..CHATS {
        upstream.push(reply.clone());
        let started = Instant::now();
        let response = match client
            .post(&url)
            .json(&json!({"model":"m","messages":[],"stream":true}))
            .send()
            .await
        {
            Ok(response) => response,
            Err(error) => {
                eprintln!("baseline request failed: {error}");
                return;
            }
        };
        let mut body = response.bytes_stream();
        while let Some(chunk) = body.next().await {
            black_box(chunk.ok());
        }
        baseline.push(started.elapsed());
    }

    let server = TestServer::start(Some(&upstream), |_| {}).await;
    let mut ws = server.connect().await;
    let mut ours = Vec::new();
    for i in 0..CHATS {
        upstream.push(reply.clone());
        let started = Instant::now();
        let frames = ws
            .chat(json!({"type":"chat","id":format!("b{i}"),"input":"go","enable_tools":false}))
            .await;
        ours.push(started.elapsed());
        assert_eq!(
            frames.last().map(|f| f["type"].clone()),
            Some(json!("done"))
        );
    }
    server.shutdown().await;
    let median = |mut v: Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let (ours, baseline) = (median(ours), median(baseline));
    println!(
        "streamed chat ({CHUNKS} chunks, median of {CHATS}): through hookwire {ours:?}, upstream read directly {baseline:?}, ratio {:.2}",
        ours.as_secs_f64() / baseline.as_secs_f64()
    );
}

const SHORT_CHATS: usize = 300;

/// Times `SHORT_CHATS` one-token chats on one connection to `url`, interleaved by the caller.
async fn short_chat(ws: &mut common::Client, upstream: &FakeUpstream, id: usize) -> Duration {
    upstream.push(Reply::text(&["hi"]));
    let started = Instant::now();
    let frames = ws
        .chat(json!({"type":"chat","id":format!("s{id}"),"input":"hi","enable_tools":false}))
        .await;
    let elapsed = started.elapsed();
    assert_eq!(
        frames.last().map(|f| f["type"].clone()),
        Some(json!("done"))
    );
    elapsed
}

async fn bench_short_chat() {
    let upstream = FakeUpstream::start().await;
    let relay_addr = match relay::start(&upstream.base_url).await {
        Ok(addr) => addr,
        Err(error) => {
            eprintln!("cannot start the relay: {error}");
            return;
        }
    };
    let Ok((relay_ws, _)) = tokio_tungstenite::connect_async(format!("ws://{relay_addr}/ws")).await
    else {
        eprintln!("cannot connect to the relay");
        return;
    };
    let mut relay_ws = common::Client { ws: relay_ws };
    let server = TestServer::start(Some(&upstream), |_| {}).await;
    let mut ours_ws = server.connect().await;
    let (mut ours, mut baseline) = (Vec::new(), Vec::new());
    // Interleaved, so that noise from the rest of the machine falls on both alike.
    for i in 0..SHORT_CHATS {
        baseline.push(short_chat(&mut relay_ws, &upstream, i).await);
        ours.push(short_chat(&mut ours_ws, &upstream, i).await);
    }
    server.shutdown().await;
    let median = |mut v: Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let (ours, baseline) = (median(ours), median(baseline));
    println!(
        "short chat, first token at once (median of {SHORT_CHATS}): hookwire {ours:?}, minimal relay {baseline:?}, ratio {:.2}, added {:.3} ms (target ≤ 0.3 ms)",
        ours.as_secs_f64() / baseline.as_secs_f64(),
        (ours.as_secs_f64() - baseline.as_secs_f64()) * 1000.0
    );
}

/// Resident memory of a process, in bytes.
fn rss_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

async fn bench_idle_memory() {
    const CONNECTIONS: usize = 1000;
    let workspace = std::env::temp_dir();
    let mut child = match std::process::Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(["serve", "--addr", "127.0.0.1:0", "--log-format", "text"])
        .env("HOOKWIRE_WORKSPACE", &workspace)
        .env(
            "HOOKWIRE_SKILLS_DIR",
            workspace.join("hookwire-bench-no-skills"),
        )
        .env("RUST_LOG", "info")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .stderr(std::process::Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(error) => {
            eprintln!("cannot start the server: {error}");
            return;
        }
    };
    let addr = {
        use std::io::BufRead;
        let Some(stderr) = child.stderr.take() else {
            return;
        };
        let mut lines = std::io::BufReader::new(stderr).lines();
        let found = lines.by_ref().map_while(Result::ok).find_map(|l| {
            l.split("listening on http://")
                .nth(1)
                .map(|a| a.trim().to_string())
        });
        std::thread::spawn(move || lines.for_each(drop));
        match found {
            Some(addr) => addr,
            None => {
                eprintln!("the server printed no address");
                let _ = child.kill();
                return;
            }
        }
    };
    let url = format!("ws://{addr}/ws");
    // Warm up the allocator and the runtime with a few connections first.
    let mut sockets = Vec::new();
    for _ in 0..50 {
        if let Ok((ws, _)) = tokio_tungstenite::connect_async(&url).await {
            sockets.push(ws);
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = rss_bytes(child.id()).unwrap_or(0);
    for _ in 0..CONNECTIONS {
        match tokio_tungstenite::connect_async(&url).await {
            Ok((ws, _)) => sockets.push(ws),
            Err(error) => {
                eprintln!("connect failed: {error}");
                break;
            }
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = rss_bytes(child.id()).unwrap_or(0);
    let opened = sockets.len() - 50;
    let per_connection = after.saturating_sub(before) / opened.max(1) as u64;
    println!(
        "idle WebSocket connection: {per_connection} bytes of server RSS each ({opened} connections, {} KiB → {} KiB; limit 20 KB)",
        before / 1024,
        after / 1024
    );
    drop(sockets);
    let _ = child.kill();
    let _ = child.wait();
}
