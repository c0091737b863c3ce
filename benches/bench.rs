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
//! 8. A chat with 16 session `llm` hooks on `pre_tool_execution` and 128 tool calls (the
//!    amplification chat of docs/protocol.md §15): upstream calls and wall time with
//!    `limits.max_hook_model_calls` at its default (32) vs raised out of reach.
//!
//! 9. Voice: the time from the text that completes the first sentence to that sentence's
//!    `audio` frame, with espeak-ng as the speech command, vs running espeak-ng alone on it.
//!
//! 10. A chat with one tool round with OpenTelemetry export on (to a local OTLP/HTTP receiver
//!     that discards what it gets) vs the same chat with it off.
//!
//! 11. A chat whose one event has 5 command hooks (each a 20 ms guard), run side by side
//!     (`parallel: true`) vs one after another.
//!
//! 12. A real model (tests/it/real_model.rs: llama.cpp's llama-server with SmolLM2-135M, as the
//!     real-model tests installed it under `target/real-model/`): time to first token and
//!     tokens/s of the same answer through hookwire vs the request hookwire sends upstream
//!     (captured) sent straight to llama-server. Skipped when not installed.
//!
//! 13. What one command hook adds to a chat (a chat with 10 trivial command hooks on one event,
//!     minus the same chat with none, over 10) vs a bare `sh -c` spawn of the same script with
//!     the same input piped, waited (in this process, which holds the servers too).
//!
//! 14. One streamed chat over each front-end wire (AG-UI, the AI SDK, OpenAI) vs the same chat
//!     over the WebSocket: time to first token and CPU per token (`wires/mod.rs`).
//!
//! 15. A short chat whose quotas are counted in a real `redis-server` vs the same chat without
//!     quotas, and the store's round trips alone (`quota/mod.rs`; skipped without `redis-server`).
//!
//! 16. A chat with five hook events whose hook traffic is recorded vs the same chat without
//!     recording (`record/mod.rs`).
//!
//! `cargo bench --bench bench -- tokens` runs only (4), which needs no server; `-- mcp` only (5);
//! `-- state` only (6); `-- micro` only (7); `-- hook_cost` only (8); `-- voice` only (9);
//! `-- telemetry` only (10); `-- hooks` only (11); `-- real-model` only (12); `-- command_hook`
//! only (13); `-- wires` only (14); `-- quota` only (15); `-- record`
//! only (16).
//!
//! Client frame parsing against a bare `serde_json` parse is measured inside the crate (the
//! parser is private): `cargo test --release --lib -- --ignored --nocapture parse_cost`.

#[path = "../tests/it/common.rs"]
mod common;
mod micro;
mod quota;
#[path = "../tests/it/real_model.rs"]
#[allow(dead_code)] // its tests are not built here, only its figures
mod real_model;
mod record;
#[path = "../tests/it/redis_server.rs"]
mod redis_server;
mod relay;
#[path = "shared/rusage.rs"]
#[allow(dead_code)] // this target reads only its own CPU, not its children's
mod rusage;
mod wires;

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
    if std::env::args().any(|arg| arg == "command_hook") {
        runtime.block_on(bench_command_hook());
        return;
    }
    if std::env::args().any(|arg| arg == "hooks") {
        runtime.block_on(bench_parallel_hooks());
        return;
    }
    if std::env::args().any(|arg| arg == "state") {
        bench_approval_state();
        return;
    }
    if std::env::args().any(|arg| arg == "micro") {
        runtime.block_on(micro::bench_micro_compaction());
        return;
    }
    if std::env::args().any(|arg| arg == "hook_cost") {
        runtime.block_on(bench_hook_cost());
        return;
    }
    if std::env::args().any(|arg| arg == "voice") {
        runtime.block_on(bench_voice());
        return;
    }
    if std::env::args().any(|arg| arg == "telemetry") {
        runtime.block_on(bench_telemetry());
        return;
    }
    if std::env::args().any(|arg| arg == "wires") {
        runtime.block_on(wires::bench_wires());
        return;
    }
    if std::env::args().any(|arg| arg == "record") {
        runtime.block_on(record::bench_record());
        return;
    }
    if std::env::args().any(|arg| arg == "quota") {
        runtime.block_on(quota::bench_quota());
        return;
    }
    if std::env::args().any(|arg| arg == "real-model") {
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
        runtime.block_on(bench_hook_cost());
        runtime.block_on(bench_voice());
        runtime.block_on(bench_telemetry());
        runtime.block_on(bench_parallel_hooks());
        runtime.block_on(bench_real_model());
        runtime.block_on(bench_command_hook());
        runtime.block_on(wires::bench_wires());
        runtime.block_on(quota::bench_quota());
        runtime.block_on(record::bench_record());
    }
}

/// A local HTTP endpoint that answers every request with `body`, and its address.
async fn answering(body: &'static str) -> Option<std::net::SocketAddr> {
    let app = axum::Router::new().fallback(move || async move { body });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.ok()?;
    let addr = listener.local_addr().ok()?;
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Some(addr)
}

/// The middle of `times` (the upper one of an even count).
fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// (12): hookwire against llama-server alone, when the real-model tests installed it.
async fn bench_real_model() {
    match real_model::already_installed() {
        Some(installed) => println!("{}", real_model::figures(&installed, 10).await),
        None => println!(
            "real model: skipped (not installed; `cargo test --test it real_model::` installs it)"
        ),
    }
}

const TELEMETRY_CHATS: usize = 50;

/// (10): chats with export on vs off, interleaved on two servers, one upstream each.
async fn bench_telemetry() {
    let Some(receiver) = answering("").await else {
        eprintln!("telemetry: cannot bind a receiver; skipped");
        return;
    };
    let (upstream_on, upstream_off) = (FakeUpstream::start().await, FakeUpstream::start().await);
    let on = TestServer::builder()
        .upstream(&upstream_on)
        .config(move |c| {
            c.telemetry.otlp_endpoint = Some(format!("http://{receiver}"));
            c.telemetry.batch_delay = Some(Duration::from_millis(200));
        })
        .start()
        .await;
    let off = TestServer::builder().upstream(&upstream_off).start().await;
    for server in [&on, &off] {
        std::fs::write(server.workspace.path().join("note.txt"), "ALPHA NOTE").ok();
    }
    let (mut ws_on, mut ws_off) = (on.connect().await, off.connect().await);
    let (mut ours, mut baseline) = (Vec::new(), Vec::new());
    let note = || json!({"path":"note.txt"});
    for i in 0..TELEMETRY_CHATS {
        baseline.push(tool_chat(&mut ws_off, &upstream_off, i, "read_file", note()).await);
        ours.push(tool_chat(&mut ws_on, &upstream_on, i, "read_file", note()).await);
    }
    on.shutdown().await;
    off.shutdown().await;
    let (ours, baseline) = (median(ours), median(baseline));
    println!(
        "chat with one tool round (median of {TELEMETRY_CHATS}): traces exported {ours:?}, telemetry off {baseline:?}, ratio {:.2}, added {:.3} ms",
        ours.as_secs_f64() / baseline.as_secs_f64(),
        (ours.as_secs_f64() - baseline.as_secs_f64()) * 1000.0
    );
}

const STATE_BYTES: usize = 100 * 1024;
const SEALS: usize = 200;

/// (6): one state sealed and opened, against signed and verified, alternating, medians.
fn bench_approval_state() {
    let cost = hookwire::agent::StateCost::new(STATE_BYTES);
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

const VOICE_CHATS: usize = 15;
const FIRST_SENTENCE: &str = "The quick brown fox jumps over the lazy dog. ";

/// espeak-ng alone on the first sentence: text on stdin, the WAV read to its end.
fn espeak_alone() -> Option<Duration> {
    use std::io::Write;
    let started = Instant::now();
    let mut child = std::process::Command::new("espeak-ng")
        .arg("--stdout")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .ok()?;
    child
        .stdin
        .take()?
        .write_all(FIRST_SENTENCE.as_bytes())
        .ok()?;
    let output = child.wait_with_output().ok()?;
    (output.status.success() && !output.stdout.is_empty()).then(|| started.elapsed())
}

async fn bench_voice() {
    if espeak_alone().is_none() {
        eprintln!("voice: espeak-ng is not installed; skipped");
        return;
    }
    let upstream = FakeUpstream::start().await;
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(|c| {
            c.voice.tts = Some(hookwire::voice::settings::TtsSettings {
                engine: hookwire::voice::settings::TtsEngine::Command {
                    command: "espeak-ng --stdout".into(),
                    env: Default::default(),
                },
                format: "wav".into(),
                timeout: Duration::from_secs(30),
                concurrency: 2,
            });
        })
        .start()
        .await;
    let mut ws = server.connect().await;
    let (mut ours, mut baseline) = (Vec::new(), Vec::new());
    for i in 0..VOICE_CHATS {
        upstream.push(Reply::text(&[FIRST_SENTENCE, "Then it rests."]));
        ws.send(json!({"type":"chat","id":format!("v{i}"),"input":"speak","voice":true}))
            .await;
        let mut first_text = None;
        loop {
            let frame = ws.frame().await;
            match frame["type"].as_str() {
                Some("text") if first_text.is_none() => first_text = Some(Instant::now()),
                Some("audio") if frame["seq"] == 0 => {
                    if let Some(at) = first_text {
                        ours.push(at.elapsed());
                    }
                }
                Some("done" | "error") => break,
                _ => {}
            }
        }
        if let Some(alone) = espeak_alone() {
            baseline.push(alone);
        }
    }
    server.shutdown().await;
    if ours.is_empty() || baseline.is_empty() {
        eprintln!("voice: no audio frame came; skipped");
        return;
    }
    let (ours, baseline) = (median(ours), median(baseline));
    println!(
        "voice, first sentence's text to its audio frame (median of {VOICE_CHATS}): {ours:?}, espeak-ng alone {baseline:?}, ratio {:.2}, added {:.3} ms",
        ours.as_secs_f64() / baseline.as_secs_f64(),
        (ours.as_secs_f64() - baseline.as_secs_f64()) * 1000.0
    );
}

const HOOK_COST_CHATS: usize = 5;

/// The amplification chat on a server whose chats' hooks may make `max_hook_model_calls` model
/// calls: (upstream calls per chat, median wall time).
async fn hook_cost_run(max_hook_model_calls: usize) -> Option<(usize, Duration)> {
    let upstream = FakeUpstream::start().await;
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(|c| {
            c.agent.max_tool_calls_per_round = 128;
            c.agent.max_hook_model_calls = max_hook_model_calls;
        })
        .start()
        .await;
    let expires = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_secs()
        + 3600;
    // No secret on this server: the client's session hooks are taken as sent.
    let hooks: Vec<serde_json::Value> = (0..16)
        .map(|n| {
            json!({"event":"pre_tool_execution","type":"llm",
                        "prompt":format!("check {n}: {{{{tool_name}}}}"),"expires_at":expires})
        })
        .collect();
    let ids: Vec<String> = (0..128).map(|n| format!("l{n}")).collect();
    let calls: Vec<(&str, &str, serde_json::Value)> = ids
        .iter()
        .map(|id| (id.as_str(), "list_dir", json!({"path":"."})))
        .collect();
    let mut ws = server.connect().await;
    let mut times = Vec::new();
    let mut requests = 0;
    for i in 0..HOOK_COST_CHATS {
        let before = upstream.requests().len();
        upstream.push(Reply::text(&["[NEED_TOOL] list"]));
        upstream.push(Reply::tool_calls(&calls));
        let started = Instant::now();
        let frames = ws
            .chat(json!({"type":"chat","id":format!("h{i}"),"input":"list","session_hooks":hooks}))
            .await;
        times.push(started.elapsed());
        if frames.last().map(|f| f["type"].clone()) != Some(json!("done")) {
            eprintln!("the amplification chat did not end with done: {frames:?}");
            return None;
        }
        requests = upstream.requests().len() - before;
    }
    server.shutdown().await;
    times.sort();
    Some((requests, times[times.len() / 2]))
}

async fn bench_hook_cost() {
    let Some((capped_calls, capped)) = hook_cost_run(32).await else {
        return;
    };
    let Some((open_calls, open)) = hook_cost_run(1_000_000).await else {
        return;
    };
    println!(
        "amplification chat (16 session llm hooks x 128 tool calls, median of {HOOK_COST_CHATS}): \
         max_hook_model_calls 32: {capped_calls} upstream calls, {capped:?}; \
         raised out of reach: {open_calls} upstream calls, {open:?}; \
         ratio calls {:.3}, time {:.3}",
        capped_calls as f64 / open_calls as f64,
        capped.as_secs_f64() / open.as_secs_f64()
    );
}

const HOOK_CHATS: usize = 20;

/// A hook file with 5 guards of 20 ms on `pre_llm_request`, side by side or not.
fn five_guards(parallel: bool) -> String {
    let hooks = "    - command: sleep 0.02\n".repeat(5);
    format!("pre_llm_request:\n  parallel: {parallel}\n  hooks:\n{hooks}")
}

/// (11): the same short chat on two servers, the guards side by side vs one after another.
async fn bench_parallel_hooks() {
    let upstream = FakeUpstream::start().await;
    let sequential_yaml = five_guards(false);
    let parallel_yaml = five_guards(true);
    let sequential = TestServer::builder()
        .upstream(&upstream)
        .hooks_file("hooks.yaml", &sequential_yaml)
        .start()
        .await;
    let parallel = TestServer::builder()
        .upstream(&upstream)
        .hooks_file("hooks.yaml", &parallel_yaml)
        .start()
        .await;
    let (mut seq_ws, mut par_ws) = (sequential.connect().await, parallel.connect().await);
    let (mut seq, mut par) = (Vec::new(), Vec::new());
    for i in 0..HOOK_CHATS {
        seq.push(short_chat(&mut seq_ws, &upstream, i).await);
        par.push(short_chat(&mut par_ws, &upstream, i).await);
    }
    sequential.shutdown().await;
    parallel.shutdown().await;
    let (seq, par) = (median(seq), median(par));
    println!(
        "one event with 5 command hooks of 20 ms (median of {HOOK_CHATS} chats): side by side {par:?}, one after another {seq:?}, ratio {:.2}",
        par.as_secs_f64() / seq.as_secs_f64()
    );
}

const COMMAND_HOOK_CHATS: usize = 40;
const COMMAND_HOOKS: usize = 10;
const TRIVIAL_HOOK: &str = "cat >/dev/null; exit 0";

/// (13): chats with 10 trivial command hooks vs none, interleaved, the difference per hook; and
/// batches of 10 bare `sh -c` spawns of the same script, interleaved with them.
async fn bench_command_hook() {
    let upstream = FakeUpstream::start().await;
    let hooks = format!(
        "pre_llm_request:\n  hooks:\n{}",
        format!("    - command: \"{TRIVIAL_HOOK}\"\n").repeat(COMMAND_HOOKS)
    );
    let with = TestServer::builder()
        .upstream(&upstream)
        .hooks_file("hooks.yaml", &hooks)
        .start()
        .await;
    let without = TestServer::builder().upstream(&upstream).start().await;
    let (mut with_ws, mut without_ws) = (with.connect().await, without.connect().await);
    let input = json!({"hook_event_name": "pre_llm_request", "messages": [{"role": "user", "content": "hi"}]}).to_string();
    let (mut hooked, mut plain) = (Vec::new(), Vec::new());
    let (mut bare, mut forked) = (Vec::new(), Vec::new());
    for i in 0..COMMAND_HOOK_CHATS {
        hooked.push(short_chat(&mut with_ws, &upstream, i).await);
        plain.push(short_chat(&mut without_ws, &upstream, i).await);
        let started = Instant::now();
        for _ in 0..COMMAND_HOOKS {
            bare_spawn(TRIVIAL_HOOK, input.as_bytes()).await;
        }
        bare.push(started.elapsed());
        let started = Instant::now();
        for _ in 0..COMMAND_HOOKS {
            forked_spawn(TRIVIAL_HOOK, input.as_bytes()).await;
        }
        forked.push(started.elapsed());
    }
    with.shutdown().await;
    without.shutdown().await;
    let per_hook = median(hooked).saturating_sub(median(plain)) / COMMAND_HOOKS as u32;
    let bare = median(bare) / COMMAND_HOOKS as u32;
    let forked = median(forked) / COMMAND_HOOKS as u32;
    println!(
        "one trivial command hook (median of {COMMAND_HOOK_CHATS} chats with {COMMAND_HOOKS} hooks minus without): {per_hook:?} a hook, a bare `sh -c` spawn {bare:?}, ratio {:.2}",
        per_hook.as_secs_f64() / bare.as_secs_f64()
    );
    println!(
        "  a bare spawn that sets its own PATH and names `sh` (the standard library forks rather than posix_spawn): {forked:?}, ratio {:.2} to the bare spawn",
        forked.as_secs_f64() / bare.as_secs_f64()
    );
}

/// [`bare_spawn`] with the environment cleared and `PATH` set while the program is a bare
/// name: the standard library then forks the process (the lookup must use the child's `PATH`).
async fn forked_spawn(script: &str, input: &[u8]) {
    use tokio::io::AsyncWriteExt;
    let Ok(mut child) = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(script)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
    else {
        eprintln!("command_hook: cannot start sh");
        return;
    };
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(input).await;
    }
    let _ = black_box(child.wait_with_output().await);
}

/// `sh -c script` with `input` on stdin, its output read, waited.
async fn bare_spawn(script: &str, input: &[u8]) {
    use tokio::io::AsyncWriteExt;
    let Ok(mut child) = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(script)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
    else {
        eprintln!("command_hook: cannot start sh");
        return;
    };
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(input).await;
    }
    let _ = black_box(child.wait_with_output().await);
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
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(move |c| c.mcp_servers = vec![settings])
        .start()
        .await;
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

/// The history in the OpenAI request shape, as serde_json would send it (also the micro
/// compaction bench's request bytes).
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

    let server = TestServer::builder().upstream(&upstream).start().await;
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
    let server = TestServer::builder().upstream(&upstream).start().await;
    let mut ours_ws = server.connect().await;
    let (mut ours, mut baseline) = (Vec::new(), Vec::new());
    // Interleaved, so that noise from the rest of the machine falls on both alike.
    for i in 0..SHORT_CHATS {
        baseline.push(short_chat(&mut relay_ws, &upstream, i).await);
        ours.push(short_chat(&mut ours_ws, &upstream, i).await);
    }
    server.shutdown().await;
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
