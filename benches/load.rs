//! `cargo bench --bench load`: hookwire under load against the floor of its stack, in one run.
//!
//! The floor is `relay.rs` (axum WebSocket + reqwest + serde_json, no agent, no hooks) served in
//! a process of its own, as hookwire is (the binary `cargo bench` builds, with the production
//! profile's settings; default settings and the repository's default skills). Each has a fake
//! upstream of its own, in a process of its own, streaming 200 tokens per chat: the first after
//! 50 ms, then one every 20 ms. This process is only the clients.
//!
//! - `load` (the default): 1,000 WebSocket clients chatting, in rounds (`HOOKWIRE_LOAD_ROUNDS`,
//!   3): in each the floor and hookwire run back to back, the one that goes first alternating:
//!   chats/s, time to first token p50 / p99, the gap between text frames p99 (what it adds to the
//!   upstream's 20 ms), server CPU per token; each as a ratio to the floor in the same round,
//!   reported as the median of the rounds with its spread. Then memory: start-up RSS (hookwire with the default
//!   skills, the floor), what the burst left and what is given back within a minute of idleness,
//!   and the server RSS per idle connection at 10,000 connections.
//! - `soak`: 10,000 connections to hookwire for 10 minutes (`HOOKWIRE_SOAK_MINUTES`), each
//!   chatting (20 tokens) with a pause of 10–30 s between chats; RSS and the allocator's figures
//!   (what the program holds, what the allocator keeps resident) sampled every 10 s.
//! - `hooks` (`under_load/hooks.rs`): hookwire with hooks against hookwire with none (no skills,
//!   no hook file), under the same load, each chat one tool round (`read_file` of a small file),
//!   in rounds (`HOOKWIRE_LOAD_ROUNDS`, 2 here): (a) a skill's prompt hook, (b) a command hook at
//!   `pre_tool_execution` (`cat > /dev/null`), then its cost per call against a bare spawn of
//!   the same command under the same load, (c) both, (d) an http hook at `pre_tool_execution`
//!   to a local endpoint, and an http hook that sleeps 2 s for every 100th chat (the other
//!   chats' figures against none). CPU includes the hooks' processes. `HOOKWIRE_LOAD_HOOKS=http`
//!   (or `-- hooks http`) runs one variant.
//! - `rounds`: 2,000 connections chatting in rounds; the heap per connection after each round
//!   (a leak grows with the rounds, a buffer's high-water mark is one step).
//! - `wires` (`under_load/wires.rs`): 1,000 clients chatting on each wire of docs/protocol.md
//!   §19 in turn, the WebSocket, AG-UI (`POST /ag-ui`), the AI SDK (`POST /api/chat`) and OpenAI's
//!   chunks (`POST /v1/chat/completions`), against one hookwire (default settings, the
//!   repository's skills: hooks on), in rounds (`HOOKWIRE_LOAD_ROUNDS`, 3) whose order rotates;
//!   the HTTP clients hold a kept-alive HTTP/1.1 connection each and read the raw chunked body for
//!   their wire's markers. Each wire's chats/s, first token, gap p99 and server CPU per token over
//!   the WebSocket's of the same round (goal ≤ 1.05 for first token and CPU per token); a chat
//!   with another count of text deltas than the upstream's 200 counts as failed.
//! - `aisdk-node` (`under_load/wires.rs`, `under_load/aisdk-server.mjs`): the AI SDK wire's
//!   clients against hookwire's `/api/chat` and against the AI SDK's own Node server (`ai` +
//!   `@ai-sdk/openai-compatible` from tests/frontends, `streamText` piped as the SDK's UI message
//!   stream), each with a fake upstream of its own, in rounds, the one that goes first
//!   alternating: hookwire / node of chats/s, first token, CPU per token, CPU share and chats/s
//!   per core used (chats/s over the server's CPU share; goal ≥ 3).
//! - `streaming10k` (`under_load/streaming.rs`): 10,000 WebSocket clients all chatting back to
//!   back against hookwire, at the usual pace and at a slower one (`HOOKWIRE_STREAMING_SLOW_MS`,
//!   300, with `HOOKWIRE_STREAMING_SLOW_TOKENS`, 50, tokens; 0 ms skips it): chats/s and tokens/s
//!   against what the pace asks, first token, gap p99, RSS per active chat, every 5 s the CPU and
//!   open files of hookwire, the upstream and the clients and the machine's busy share, and the
//!   warnings hookwire logged (what ran out: files, CPU).
//!
//! - `serve`: the floor and hookwire as the load starts them, their addresses and pids printed,
//!   until this process's input closes: for an outside load generator
//!   (`benches/outside/ws_load.py`).
//!
//! `HOOKWIRE_LOAD_VERSUS=path` puts another build of hookwire in the floor's place (two builds
//! compared in one run; the figures still say "floor").
//!
//! `HOOKWIRE_LOAD_ROUNDS`, `HOOKWIRE_LOAD_CLIENTS` and `HOOKWIRE_LOAD_SECONDS` change the
//! rounds (3), the load's clients (1000; 10,000 for `streaming10k`) and the measured window
//! (20 s); `HOOKWIRE_LOAD_ONLY=hookwire` (or `floor`) loads that server alone and prints its pid,
//! for `perf record -g -p PID`.
//!
//! `HOOKWIRE_LOAD_WRAP="valgrind --tool=callgrind"` runs the servers under that command: with a
//! few clients (`HOOKWIRE_LOAD_CLIENTS=10`) and `HOOKWIRE_LOAD_ONLY`, the instructions a server
//! spends per streamed token, counted between `callgrind_control -z PID` and `-d PID` and divided
//! by its `sendto` calls in that time (one per token while the server keeps up, as with 10
//! clients: hookwire writes frames ready together in one, so a saturated hookwire makes fewer;
//! `perf stat -e syscalls:sys_enter_sendto -p PID`). Unlike CPU time, the count does not move
//! with the machine's load (docs/performance.md).

#[path = "relay.rs"]
mod relay;
#[path = "shared/rusage.rs"]
mod rusage;
#[path = "under_load/streaming.rs"]
mod streaming;
#[path = "under_load/wires.rs"]
mod wires;

#[path = "under_load/hooks.rs"]
mod hooks;

use std::convert::Infallible;
use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use futures::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message;

const ROLE: &str = "HOOKWIRE_LOAD_ROLE";
const FIRST_TOKEN: Duration = Duration::from_millis(50);
const TOKEN_INTERVAL: Duration = Duration::from_millis(20);

fn main() {
    let role = std::env::var(ROLE).unwrap_or_default();
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
    match role.as_str() {
        "upstream" => runtime.block_on(serve_upstream()),
        "relay" => runtime.block_on(serve_relay()),
        _ if std::env::args().any(|a| a == "soak") => runtime.block_on(soak()),
        _ if std::env::args().any(|a| a == "rounds") => runtime.block_on(rounds()),
        _ if std::env::args().any(|a| a == "hooks") => runtime.block_on(hooks::under_load()),
        _ if std::env::args().any(|a| a == "wires") => runtime.block_on(wires::wires()),
        _ if std::env::args().any(|a| a == "aisdk-node") => runtime.block_on(wires::aisdk_node()),
        _ if std::env::args().any(|a| a == "streaming10k") => {
            runtime.block_on(streaming::streaming10k())
        }
        _ => runtime.block_on(load()),
    }
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

// ---------------------------------------------------------------------------------------------
// The child processes: the fake upstream and the floor relay.

/// The fake upstream's pace: `tokens` per chat, the first after FIRST_TOKEN, then one every
/// `interval`.
#[derive(Clone, Copy)]
struct Pace {
    tokens: usize,
    interval: Duration,
    /// `-- hooks`: each chat does one tool round first (`hooks::tool_round_reply`).
    tool_round: bool,
}

impl Pace {
    /// The load's: 200 tokens, one every 20 ms.
    const USUAL: Pace = Pace {
        tokens: 200,
        interval: TOKEN_INTERVAL,
        tool_round: false,
    };

    /// How long a chat streams when nothing is in the way.
    fn chat_length(self) -> Duration {
        FIRST_TOKEN + self.interval * self.tokens.saturating_sub(1) as u32
    }
}

/// The fake upstream: every request gets its pace's tokens on the clock of the request (so a
/// late poll does not shift later tokens).
async fn serve_upstream() {
    let pace = Pace {
        tokens: env_number("HOOKWIRE_LOAD_TOKENS", 200) as usize,
        interval: Duration::from_millis(env_number(
            "HOOKWIRE_LOAD_TOKEN_MS",
            TOKEN_INTERVAL.as_millis() as u64,
        )),
        tool_round: std::env::var_os(hooks::TOOL_ROUND).is_some(),
    };
    let app = Router::new()
        .route("/v1/chat/completions", post(completions))
        // The `hooks` mode's http hook endpoint (`/hook`) and the upstream's counts (`/stats`).
        .merge(hooks::upstream_routes::<Pace>())
        .with_state(pace);
    let Ok(listener) = tokio::net::TcpListener::bind("127.0.0.1:0").await else {
        eprintln!("upstream: cannot bind");
        return;
    };
    if let Ok(addr) = listener.local_addr() {
        eprintln!("listening on http://{addr}");
    }
    let _ = axum::serve(listener, app).await;
}

async fn completions(State(pace): State<Pace>, body: Bytes) -> Response {
    if pace.tool_round {
        // The planning call and the tool call; the call with the tool's result streams below.
        if let Some(reply) = hooks::tool_round_reply(&body) {
            return reply;
        }
    }
    let start = tokio::time::Instant::now();
    let received = monotonic_ns();
    // The clients' input is `go@<ns>`: the request carries it only to tell that it is one of
    // theirs; the first token says when the request arrived and when that token left, so a
    // client can split its time to first token into the server's two paths (`Samples::split_first_token`).
    let timed = body.windows(3).any(|w| w == b"go@");
    let chunks = futures::stream::unfold(0usize, move |i| async move {
        let text = if i < pace.tokens {
            tokio::time::sleep_until(start + FIRST_TOKEN + pace.interval * i as u32).await;
            let token = if i == 0 && timed {
                format!("tok0@{received}@{} ", monotonic_ns())
            } else {
                format!("tok{i} ")
            };
            format!(
                "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"fake\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{token}\"}},\"finish_reason\":null}}]}}\n\n"
            )
        } else if i == pace.tokens {
            "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"fake\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n".to_string()
        } else {
            return None;
        };
        Some((Ok::<_, Infallible>(Bytes::from(text)), i + 1))
    });
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(chunks))
        .unwrap_or_default()
}

async fn serve_relay() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let Ok(upstream) = std::env::var("HOOKWIRE_LOAD_UPSTREAM") else {
        eprintln!("relay: no upstream");
        return;
    };
    match relay::start(&upstream).await {
        Ok(addr) => eprintln!("listening on http://{addr}"),
        Err(error) => {
            eprintln!("relay: {error}");
            return;
        }
    }
    std::future::pending::<()>().await;
}

/// The allocator's figures (`hookwire_allocator_bytes`).
struct Heap {
    /// What the program holds.
    allocated: u64,
    /// The pages that hold it.
    active: u64,
    /// The allocator's own bookkeeping.
    metadata: u64,
    /// What the allocator keeps in RAM.
    resident: u64,
}

impl std::fmt::Display for Heap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "heap allocated {:.1} MiB (in {:.1} MiB of pages, metadata {:.1} MiB), resident {:.1} MiB",
            mib(self.allocated),
            mib(self.active),
            mib(self.metadata),
            mib(self.resident)
        )
    }
}

/// A child process, killed when dropped.
struct Server {
    child: Child,
    addr: String,
    /// Its open sockets once it listened (the listener's): what a count of them starts from.
    base_sockets: usize,
    /// What its log said that was not `info`.
    log: Arc<Mutex<LogTally>>,
}

/// The warnings and errors of a child's log (stderr): how many, and the first few kinds.
#[derive(Default)]
struct LogTally {
    warnings: u64,
    errors: u64,
    /// Up to 5 kinds of line (a line without its digits: times, ports and counts differ), each
    /// with its first line and how many there were.
    kinds: Vec<(String, String, u64)>,
}

impl LogTally {
    fn add(&mut self, line: &str) {
        // hookwire's text log (` WARN `, ` ERROR `), node's (`Error:` and its stack).
        if line.contains(" WARN ") {
            self.warnings += 1;
        } else if line.contains(" ERROR ") || line.contains("Error") {
            self.errors += 1;
        } else {
            return;
        }
        let kind: String = line.chars().filter(|c| !c.is_ascii_digit()).collect();
        if let Some((_, _, count)) = self.kinds.iter_mut().find(|(k, _, _)| *k == kind) {
            *count += 1;
        } else if self.kinds.len() < 5 {
            self.kinds.push((kind, line.chars().take(300).collect(), 1));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn spawn(mut command: Command) -> Option<Server> {
        let mut child = match command.stderr(Stdio::piped()).spawn() {
            Ok(child) => child,
            Err(error) => {
                eprintln!("cannot start {command:?}: {error}");
                return None;
            }
        };
        let stderr = child.stderr.take()?;
        let mut lines = std::io::BufReader::new(stderr).lines();
        let addr = lines.by_ref().map_while(Result::ok).find_map(|line| {
            line.split("listening on http://")
                .nth(1)
                .map(|a| a.trim().to_string())
        });
        // Keep draining its log so that it never blocks on a full pipe, counting what went wrong.
        let log = Arc::new(Mutex::new(LogTally::default()));
        let tally = log.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                if let Ok(mut tally) = tally.lock() {
                    tally.add(&line);
                }
            }
        });
        let base_sockets = open_sockets(child.id()).unwrap_or(0);
        let server = Server {
            child,
            addr: addr?,
            base_sockets,
            log,
        };
        Some(server)
    }

    /// `"N warnings, M errors"` of its log so far, and the first line of each kind with its count.
    fn log_summary(&self) -> String {
        let Ok(tally) = self.log.lock() else {
            return String::new();
        };
        let mut text = format!("{} warnings, {} errors", tally.warnings, tally.errors);
        for (_, line, count) in &tally.kinds {
            text.push_str(&format!("\n      {count}× {line}"));
        }
        text
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn rss(&self) -> u64 {
        rss_bytes(self.pid()).unwrap_or(0)
    }

    /// hookwire's allocator figures from `/metrics` (`hookwire_allocator_bytes`).
    async fn heap(&self) -> Option<Heap> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut stream = tokio::net::TcpStream::connect(&self.addr).await.ok()?;
        let request = format!(
            "GET /metrics HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.addr
        );
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut text = String::new();
        stream.read_to_string(&mut text).await.ok()?;
        let figure = |kind: &str| {
            let series = format!("hookwire_allocator_bytes{{kind=\"{kind}\"}} ");
            text.lines()
                .find_map(|line| line.strip_prefix(&series))
                .and_then(|value| value.trim().parse::<f64>().ok())
                .map(|value| value as u64)
        };
        Some(Heap {
            allocated: figure("allocated")?,
            active: figure("active")?,
            metadata: figure("metadata")?,
            resident: figure("resident")?,
        })
    }

    fn ws_url(&self) -> String {
        format!("ws://{}/ws", self.addr)
    }
}

fn own_exe_as(role: &str) -> Option<Command> {
    let exe = std::env::current_exe().ok()?;
    let mut command = Command::new(exe);
    command.env(ROLE, role);
    Some(command)
}

/// The command that runs a server under test (hookwire or the floor; not the fake upstream):
/// `program` itself, or under the command line of `HOOKWIRE_LOAD_WRAP` (such as
/// `valgrind --tool=callgrind`, whose counts do not move with the machine's load).
fn server_command(program: &std::ffi::OsStr) -> Command {
    let wrap = std::env::var("HOOKWIRE_LOAD_WRAP").unwrap_or_default();
    let mut words = wrap.split_whitespace();
    match words.next() {
        Some(wrapper) => {
            let mut command = Command::new(wrapper);
            command.args(words).arg(program);
            command
        }
        None => Command::new(program),
    }
}

fn start_upstream(tokens: usize) -> Option<Server> {
    start_upstream_paced(Pace {
        tokens,
        ..Pace::USUAL
    })
}

fn start_upstream_paced(pace: Pace) -> Option<Server> {
    let mut command = own_exe_as("upstream")?;
    command
        .env("HOOKWIRE_LOAD_TOKENS", pace.tokens.to_string())
        .env(
            "HOOKWIRE_LOAD_TOKEN_MS",
            pace.interval.as_millis().to_string(),
        );
    Server::spawn(command)
}

fn start_relay(upstream: &Server) -> Option<Server> {
    let mut command = server_command(std::env::current_exe().ok()?.as_os_str());
    command.env(ROLE, "relay").env(
        "HOOKWIRE_LOAD_UPSTREAM",
        format!("http://{}/v1", upstream.addr),
    );
    Server::spawn(command)
}

/// hookwire's release binary with its defaults (the repository's skills, logs at `info`), only
/// `max_connections` raised for the 10,000-connection figures.
fn start_hookwire(upstream: &Server, scratch: &std::path::Path) -> Option<Server> {
    start_hookwire_with(upstream, scratch, "load", None)
}

/// hookwire as [`start_hookwire`] starts it, with the hook file `hooks` (its http hooks may call
/// the upstream's `/hook`); `name` tells its files from another's in `scratch`.
fn start_hookwire_with(
    upstream: &Server,
    scratch: &std::path::Path,
    name: &str,
    hooks: Option<&str>,
) -> Option<Server> {
    Server::spawn(hookwire_command(upstream, scratch, name, hooks)?)
}

/// The command [`start_hookwire_with`] starts (its workspace is `scratch/workspace`).
fn hookwire_command(
    upstream: &Server,
    scratch: &std::path::Path,
    name: &str,
    hooks: Option<&str>,
) -> Option<Command> {
    let binary = std::ffi::OsStr::new(env!("CARGO_BIN_EXE_hookwire"));
    hookwire_command_of(binary, upstream, scratch, name, hooks)
}

/// [`hookwire_command`] with another build of hookwire.
fn hookwire_command_of(
    binary: &std::ffi::OsStr,
    upstream: &Server,
    scratch: &std::path::Path,
    name: &str,
    hooks: Option<&str>,
) -> Option<Command> {
    let config = scratch.join(format!("{name}.yaml"));
    let mut text = format!(
        "limits:\n  max_connections: 30000\nhttp_hooks:\n  allowed_urls: [\"http://{}/hook\"]\n",
        upstream.addr
    );
    if let Some(hooks) = hooks {
        let file = scratch.join(format!("{name}-hooks.yaml"));
        std::fs::write(&file, hooks).ok()?;
        text.push_str(&format!("hooks: {}\n", file.display()));
    }
    std::fs::write(&config, text).ok()?;
    let workspace = scratch.join("workspace");
    std::fs::create_dir_all(&workspace).ok()?;
    let mut command = server_command(binary);
    command
        .args(["serve", "--addr", "127.0.0.1:0", "--log-format", "text"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("HOOKWIRE_CONFIG", &config)
        .env("HOOKWIRE_WORKSPACE", &workspace)
        .env("HOOKWIRE_STATE_DIR", scratch.join("state"))
        .env(
            "HOOKWIRE_LLM_BASE_URL",
            format!("http://{}/v1", upstream.addr),
        )
        .env("HOOKWIRE_LLM_API_KEY", "k")
        .env_remove("RUST_LOG")
        .env_remove("HOOKWIRE_SKILLS_DIR")
        .env_remove("HOOKWIRE_SECRET");
    Some(command)
}

// ---------------------------------------------------------------------------------------------
// Process figures.

/// How many sockets the process has open (its listeners, its clients' connections and its own
/// to an upstream).
fn open_sockets(pid: u32) -> Option<usize> {
    let entries = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    Some(
        entries
            .filter_map(Result::ok)
            .filter(|entry| {
                std::fs::read_link(entry.path())
                    .is_ok_and(|target| target.to_string_lossy().starts_with("socket:"))
            })
            .count(),
    )
}

fn rss_bytes(pid: u32) -> Option<u64> {
    status_bytes(pid, "VmRSS:")
}

/// The anonymous part of the RSS (the heap and the stacks; the rest is the binary's own pages
/// and the libraries', which the kernel may drop and read again).
fn anonymous_bytes(pid: u32) -> Option<u64> {
    status_bytes(pid, "RssAnon:")
}

/// A figure of `/proc/PID/status`, in bytes.
fn status_bytes(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// User + system CPU time of a process.
fn cpu_time(pid: u32) -> Duration {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return Duration::ZERO;
    };
    let Some(after) = stat.rsplit_once(')').map(|(_, rest)| rest) else {
        return Duration::ZERO;
    };
    // Fields after the command: state is field 3, utime 14 and stime 15, and the waited-for
    // children's (a command hook's processes) cutime 16 and cstime 17.
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i - 3).and_then(|f| f.parse::<u64>().ok());
    let (Some(user), Some(system)) = (ticks(14), ticks(15)) else {
        return Duration::ZERO;
    };
    let children = ticks(16).unwrap_or(0) + ticks(17).unwrap_or(0);
    // SAFETY: sysconf only reads a constant of the system.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    Duration::from_secs_f64((user + system + children) as f64 / hz)
}

/// The machine's idle ticks and all its ticks so far (`/proc/stat`'s `cpu` line: idle and iowait
/// against the first eight fields; guest time, the two after, is counted in user time already).
fn machine_ticks() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?.strip_prefix("cpu ")?;
    let ticks: Vec<u64> = line
        .split_whitespace()
        .take(8)
        .filter_map(|f| f.parse().ok())
        .collect();
    let idle = ticks.get(3)? + ticks.get(4).copied().unwrap_or(0);
    Some((idle, ticks.iter().sum()))
}

/// `CLOCK_MONOTONIC` in ns: one clock for every process of the machine (an `Instant` cannot
/// leave its process).
fn monotonic_ns() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec to a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

// ---------------------------------------------------------------------------------------------
// The clients.

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// The clients' read buffer. tungstenite zeroes its whole read buffer before every read (128 KiB
/// by default, snapview/tungstenite-rs#547): with that, 1,000 clients spent 63% of their CPU in
/// `memset`, most of a core, and took it from the servers they measured.
const CLIENT_READ_BUFFER: usize = 4096;

/// Opens `count` connections, 64 at a time, with TCP_NODELAY as browsers have it.
async fn connect_many(url: &str, count: usize) -> Vec<Socket> {
    let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
        .read_buffer_size(CLIENT_READ_BUFFER);
    let mut sockets = Vec::with_capacity(count);
    let mut pending = futures::stream::iter(0..count)
        .map(|_| tokio_tungstenite::connect_async_with_config(url.to_string(), Some(config), true))
        .buffer_unordered(64);
    let mut failures = 0;
    while let Some(result) = pending.next().await {
        match result {
            Ok((socket, _)) => sockets.push(socket),
            Err(error) => {
                failures += 1;
                if failures <= 3 {
                    eprintln!("connect failed: {error}");
                }
            }
        }
    }
    sockets
}

#[derive(serde::Deserialize)]
struct FrameType<'a> {
    #[serde(rename = "type", borrow)]
    kind: &'a str,
    #[serde(default, borrow)]
    delta: Option<std::borrow::Cow<'a, str>>,
}

/// What one chat's frames showed.
enum ChatOutcome {
    Done,
    Failed,
    Closed,
    /// Still running when the measured window ended, and dropped: neither done nor failed.
    Cut,
}

/// What all clients saw during the measured window.
#[derive(Default)]
struct Samples {
    /// Time to first text frame, µs.
    first_token: Vec<u32>,
    /// Time between consecutive text frames of a chat, µs.
    gaps: Vec<u32>,
    /// The first token's way, µs: from the client's `chat` to the upstream's request (the
    /// server's inbound path: reading the frame, starting the chat, the model request)...
    inbound: Vec<u32>,
    /// ...and from the upstream's first token to the client's first `text` (outbound).
    outbound: Vec<u32>,
    /// Each chat's inbound plus outbound: the server's whole part of its first token, without
    /// the fake upstream's own 50 ms and its timer's lag (which the server's CPU share moves on
    /// a saturated machine, but which is not the server's work).
    server_way: Vec<u32>,
}

impl Samples {
    fn append(&mut self, other: Samples) {
        self.first_token.extend(other.first_token);
        self.gaps.extend(other.gaps);
        self.inbound.extend(other.inbound);
        self.outbound.extend(other.outbound);
        self.server_way.extend(other.server_way);
    }

    /// Splits a first token `tok0@<upstream received>@<upstream sent>` into the two paths.
    fn split_first_token(&mut self, delta: &str, chat_sent: u64, received: u64) {
        let mut fields = delta.trim_end().split('@').skip(1);
        let (Some(Ok(upstream_received)), Some(Ok(upstream_sent))) = (
            fields.next().map(str::parse::<u64>),
            fields.next().map(str::parse::<u64>),
        ) else {
            return;
        };
        let micros =
            |from: u64, to: u64| (to.saturating_sub(from) / 1000).min(u32::MAX as u64) as u32;
        let (inbound, outbound) = (
            micros(chat_sent, upstream_received),
            micros(upstream_sent, received),
        );
        self.inbound.push(inbound);
        self.outbound.push(outbound);
        self.server_way.push(inbound.saturating_add(outbound));
    }
}

struct Window {
    start: Instant,
    end: Instant,
}

impl Window {
    fn contains(&self, at: Instant) -> bool {
        at >= self.start && at < self.end
    }
}

/// One chat on `socket`; its samples go to `samples` when they fall in the window.
async fn one_chat(
    socket: &mut Socket,
    id: u64,
    window: &Window,
    samples: &mut Samples,
    tokens: &AtomicU64,
) -> ChatOutcome {
    one_chat_saying(socket, id, "", window, samples, tokens).await
}

/// [`one_chat`] with `extra` after the input (plain words: it is not escaped for JSON).
async fn one_chat_saying(
    socket: &mut Socket,
    id: u64,
    extra: &str,
    window: &Window,
    samples: &mut Samples,
    tokens: &AtomicU64,
) -> ChatOutcome {
    let sent_ns = monotonic_ns();
    let input = match extra {
        "" => format!("go@{sent_ns}"),
        extra => format!("go@{sent_ns} {extra}"),
    };
    let frame = format!(r#"{{"type":"chat","id":"c{id}","input":"{input}"}}"#);
    let sent = Instant::now();
    if socket.send(Message::text(frame)).await.is_err() {
        return ChatOutcome::Closed;
    }
    let mut last_text: Option<Instant> = None;
    while let Some(message) = socket.next().await {
        let Ok(Message::Text(text)) = message else {
            match message {
                Ok(Message::Close(_)) | Err(_) => return ChatOutcome::Closed,
                _ => continue,
            }
        };
        let now = Instant::now();
        let received_ns = monotonic_ns();
        let Ok(frame) = serde_json::from_str::<FrameType>(text.as_str()) else {
            continue;
        };
        match frame.kind {
            "text" => {
                if window.contains(now) {
                    tokens.fetch_add(1, Ordering::Relaxed);
                    match last_text {
                        None => {
                            samples
                                .first_token
                                .push((now - sent).as_micros().min(u32::MAX as u128) as u32);
                            if let Some(delta) = frame.delta {
                                samples.split_first_token(&delta, sent_ns, received_ns);
                            }
                        }
                        Some(last) => samples
                            .gaps
                            .push((now - last).as_micros().min(u32::MAX as u128) as u32),
                    }
                }
                last_text = Some(now);
            }
            "done" => return ChatOutcome::Done,
            "error" => return ChatOutcome::Failed,
            _ => {}
        }
    }
    ChatOutcome::Closed
}

struct LoadFigures {
    chats_per_second: f64,
    /// Text frames (or deltas) delivered per second.
    tokens_per_second: f64,
    failed: u64,
    first_token_p50: f64,
    first_token_p99: f64,
    gap_p99: f64,
    /// The first token's way through the server, p50 (`Samples::inbound`, `outbound`), ms.
    inbound_p50: f64,
    outbound_p50: f64,
    /// The two together per chat (`Samples::server_way`), p50 and p99, ms.
    server_way_p50: f64,
    server_way_p99: f64,
    cpu_per_token: Duration,
    cpu_share: f64,
    /// The load generator's own CPU (this process: the clients) per token, and the machine's idle
    /// share over the window: what the server under test competed with.
    load_cpu_per_token: Duration,
    machine_idle: f64,
    peak_rss: u64,
    /// hookwire's heap (`allocated`, from `/metrics`) at its highest in the window, over what its
    /// connections held idle before the chats began, per client: an active chat's own memory.
    heap_per_chat: Option<f64>,
    /// The server's upstream connections that were open (pooled, idle, left by a run before)
    /// when the idle figure was read: their memory is in it, not in `heap_per_chat`.
    upstream_pooled: Option<usize>,
}

fn percentile(values: &mut [u32], p: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_unstable();
    let index = ((values.len() as f64 - 1.0) * p).round() as usize;
    values[index] as f64 / 1000.0
}

/// One client of [`run_clients`]: a connection that chats back to back.
trait Chatter: Send + 'static {
    /// One chat, whose input ends with `extra`; its samples go to `samples`, and its tokens are
    /// counted in `tokens`, when they fall in `window`.
    fn chat(
        &mut self,
        id: u64,
        extra: &str,
        window: &Window,
        samples: &mut Samples,
        tokens: &AtomicU64,
    ) -> impl std::future::Future<Output = ChatOutcome> + Send;

    /// Closes the connection once the run is over.
    fn hang_up(self) -> impl std::future::Future<Output = ()> + Send;
}

/// The load's WebSocket client: [`one_chat`].
impl Chatter for Socket {
    async fn chat(
        &mut self,
        id: u64,
        extra: &str,
        window: &Window,
        samples: &mut Samples,
        tokens: &AtomicU64,
    ) -> ChatOutcome {
        one_chat_saying(self, id, extra, window, samples, tokens).await
    }

    async fn hang_up(mut self) {
        let _ = tokio_tungstenite::WebSocketStream::close(&mut self, None).await;
    }
}

/// `clients` connections chatting back to back against `server`; figures of the `seconds`
/// window after a ramp of one chat's length.
async fn run_load(server: &Server, clients: usize, seconds: u64) -> Option<LoadFigures> {
    run_load_marking(server, clients, seconds, None)
        .await
        .map(|(figures, _)| figures)
}

/// Some chats of a run say `text` after their input: every `every`th of the run (counted over
/// all clients).
#[derive(Clone, Copy)]
struct Marked {
    every: u64,
    text: &'static str,
}

/// [`run_load`], with the chats `marked` picks saying its text; the figures are the other chats',
/// the marked chats' samples come apart.
async fn run_load_marking(
    server: &Server,
    clients: usize,
    seconds: u64,
    marked: Option<Marked>,
) -> Option<(LoadFigures, Samples)> {
    let sockets = connect_many(&server.ws_url(), clients).await;
    if sockets.len() < clients {
        eprintln!("only {} of {clients} connections opened", sockets.len());
        return None;
    }
    run_clients(server, sockets, seconds, Pace::USUAL, marked).await
}

/// `clients` chatting back to back against `server`, whose upstream streams at `pace`; figures
/// of the `seconds` window after a ramp of one chat's length (at least 5 s). The chats `marked`
/// picks say its text: the figures are the other chats', the marked chats' samples come apart.
async fn run_clients<C: Chatter>(
    server: &Server,
    clients: Vec<C>,
    seconds: u64,
    pace: Pace,
    marked: Option<Marked>,
) -> Option<(LoadFigures, Samples)> {
    let count = clients.len().max(1);
    // The connections are open and idle: what the chats add comes on top.
    let idle_heap = settled_heap(server).await;
    let upstream_pooled =
        open_sockets(server.pid()).map(|open| open.saturating_sub(count + server.base_sockets));
    let ramp = pace.chat_length().max(Duration::from_secs(5));
    let start = Instant::now() + ramp;
    let window = Arc::new(Window {
        start,
        end: start + Duration::from_secs(seconds),
    });
    let completed = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let tokens = Arc::new(AtomicU64::new(0));
    let samples = Arc::new(Mutex::new((Samples::default(), Samples::default())));
    let stop = Arc::new(AtomicBool::new(false));
    let chats = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for (n, mut client) in clients.into_iter().enumerate() {
        let (window, completed, failed, tokens, samples, stop, chats) = (
            window.clone(),
            completed.clone(),
            failed.clone(),
            tokens.clone(),
            samples.clone(),
            stop.clone(),
            chats.clone(),
        );
        tasks.push(tokio::spawn(async move {
            // Starts spread over the first second: the clients do not all ask at one instant.
            tokio::time::sleep(Duration::from_micros((n as u64 * 1_000_000) / count as u64)).await;
            let (mut mine, mut mine_marked) = (Samples::default(), Samples::default());
            let mut id = 0;
            while !stop.load(Ordering::Relaxed) {
                id += 1;
                let nth = chats.fetch_add(1, Ordering::Relaxed) + 1;
                let (extra, into) = match marked {
                    Some(m) if nth.is_multiple_of(m.every) => (m.text, &mut mine_marked),
                    _ => ("", &mut mine),
                };
                let outcome = client.chat(id, extra, &window, into, &tokens).await;
                let now = Instant::now();
                match outcome {
                    ChatOutcome::Done if window.contains(now) => {
                        completed.fetch_add(1, Ordering::Relaxed);
                    }
                    ChatOutcome::Done => {}
                    ChatOutcome::Failed => {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                    ChatOutcome::Closed => {
                        failed.fetch_add(1, Ordering::Relaxed);
                        break;
                    }
                    ChatOutcome::Cut => break,
                }
                if now >= window.end {
                    break;
                }
            }
            if let Ok(mut all) = samples.lock() {
                all.0.append(mine);
                all.1.append(mine_marked);
            }
            client.hang_up().await;
        }));
    }
    tokio::time::sleep_until(start.into()).await;
    let cpu_before = cpu_time(server.pid());
    let (load_cpu_before, machine_before) = (rusage::own_cpu(), machine_ticks());
    let tokens_before = tokens.load(Ordering::Relaxed);
    let mut peak_rss = server.rss();
    let mut peak_heap = 0;
    while Instant::now() < window.end {
        tokio::time::sleep(Duration::from_millis(500)).await;
        peak_rss = peak_rss.max(server.rss());
        if let Some(heap) = server.heap().await {
            peak_heap = peak_heap.max(heap.allocated);
        }
    }
    let cpu = cpu_time(server.pid()).saturating_sub(cpu_before);
    let load_cpu = rusage::own_cpu().saturating_sub(load_cpu_before);
    let machine_idle = match (machine_before, machine_ticks()) {
        (Some((idle_before, all_before)), Some((idle, all))) if all > all_before => {
            idle.saturating_sub(idle_before) as f64 / (all - all_before) as f64 * 100.0
        }
        _ => f64::NAN,
    };
    let window_tokens = tokens.load(Ordering::Relaxed) - tokens_before;
    stop.store(true, Ordering::Relaxed);
    for task in tasks {
        let _ = task.await;
    }
    let (mut samples, marked_samples) = std::mem::take(&mut *samples.lock().ok()?);
    let interval_ms = pace.interval.as_secs_f64() * 1000.0;
    let figures = LoadFigures {
        chats_per_second: completed.load(Ordering::Relaxed) as f64 / seconds as f64,
        tokens_per_second: window_tokens as f64 / seconds as f64,
        failed: failed.load(Ordering::Relaxed),
        first_token_p50: percentile(&mut samples.first_token, 0.5),
        first_token_p99: percentile(&mut samples.first_token, 0.99),
        gap_p99: (percentile(&mut samples.gaps, 0.99) - interval_ms).max(0.01),
        inbound_p50: percentile(&mut samples.inbound, 0.5),
        outbound_p50: percentile(&mut samples.outbound, 0.5),
        server_way_p50: percentile(&mut samples.server_way, 0.5),
        server_way_p99: percentile(&mut samples.server_way, 0.99),
        cpu_per_token: cpu / window_tokens.max(1) as u32,
        cpu_share: cpu.as_secs_f64() / seconds as f64 * 100.0,
        load_cpu_per_token: load_cpu / window_tokens.max(1) as u32,
        machine_idle,
        peak_rss,
        heap_per_chat: idle_heap.map(|idle| peak_heap.saturating_sub(idle) as f64 / count as f64),
        upstream_pooled,
    };
    Some((figures, marked_samples))
}

fn print_figures(name: &str, f: &LoadFigures) {
    println!(
        "  {name:<9} chats/s {:7.1}  first token p50 {:6.1} ms (in {:4.1}, out {:4.1}) p99 {:6.1} ms  gap p99 +{:5.1} ms  CPU {:5.1}% of a core, {:5.1} µs/token  peak RSS {:6.1} MiB  failed {}",
        f.chats_per_second,
        f.first_token_p50,
        f.inbound_p50,
        f.outbound_p50,
        f.first_token_p99,
        f.gap_p99,
        f.cpu_share,
        f.cpu_per_token.as_secs_f64() * 1e6,
        mib(f.peak_rss),
        f.failed
    );
    if let Some(per_chat) = f.heap_per_chat {
        // An upstream connection pooled by an earlier run is in the idle figure: with most of
        // them pooled, this is the chat's own memory, without them it includes its connection.
        let pooled = f
            .upstream_pooled
            .map(|n| format!("; {n} upstream connections were open already, in the idle figure"))
            .unwrap_or_default();
        println!(
            "            heap per active chat {:.1} KiB (the allocator's `allocated` at its highest, over the idle connections'{pooled})",
            per_chat / 1024.0
        );
    }
    println!(
        "            beside it: the load generator {:.1} µs/token, the machine idle {:.1}%",
        f.load_cpu_per_token.as_secs_f64() * 1e6,
        f.machine_idle
    );
}

/// A compared figure: its name, its goal, how to read it from a run.
type Compared = (&'static str, &'static str, fn(&LoadFigures) -> f64);

/// What is compared between the two servers, each as hookwire's figure over the floor's in the
/// same round: its name, the goal as printed, and how to read it from a run.
const COMPARED: &[Compared] = &[
    ("chats/s", "≥ 0.99", |f| f.chats_per_second),
    ("first token p50", "≤ 1.05", |f| f.first_token_p50),
    ("first token p99", "≤ 1.05", |f| f.first_token_p99),
    ("gap p99", "≤ 1.15", |f| f.gap_p99),
    ("CPU per token", "≤ 1.05", |f| {
        f.cpu_per_token.as_secs_f64()
    }),
    // Not goals of their own: the first token without the fake upstream's part (its 50 ms and
    // its timer's lag, which grows when the server under test takes more of the machine).
    ("server's way p50", "", |f| f.server_way_p50),
    ("server's way p99", "", |f| f.server_way_p99),
];

/// The ratios of each round (the first server of each pair over the second, run back to back:
/// hookwire over the floor, or hooks over none), as their median and their spread: one run proves
/// nothing on a small, shared machine.
fn print_ratios(rounds: &[(LoadFigures, LoadFigures)], with_goals: bool) {
    println!("  ratios, median of {} rounds [min–max]:", rounds.len());
    for (name, goal, read) in COMPARED {
        let mut ratios: Vec<f64> = rounds
            .iter()
            .map(|(ours, floor)| read(ours) / read(floor).max(1e-12))
            .collect();
        ratios.sort_by(f64::total_cmp);
        let (low, high) = (ratios[0], ratios[ratios.len() - 1]);
        let goal = if with_goals && !goal.is_empty() {
            format!(" (goal {goal})")
        } else {
            String::new()
        };
        println!(
            "    {name:<16} {:.2} [{low:.2}–{high:.2}]{goal}",
            median(&ratios)
        );
    }
}

/// The median of `values`: the middle one, or the mean of the middle two of an even count (the
/// upper of the two alone would lean every figure of 2 or 4 rounds one way); NaN without values.
fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let middle = sorted.len() / 2;
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[middle],
        _ => (sorted[middle - 1] + sorted[middle]) / 2.0,
    }
}

async fn settle() {
    tokio::time::sleep(Duration::from_secs(1)).await;
}

/// hookwire's heap (`allocated`) once it stopped falling (what an earlier run left is being
/// freed while its sessions end): two readings of the gauge, which is refreshed every second,
/// within 1% of each other, or the last after 15 s. `None` for a server without the figure.
async fn settled_heap(server: &Server) -> Option<u64> {
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut last = server.heap().await?.allocated;
    loop {
        tokio::time::sleep(Duration::from_millis(1100)).await;
        let now = server.heap().await?.allocated;
        if now.abs_diff(last) * 100 <= last || Instant::now() >= deadline {
            return Some(now.min(last));
        }
        last = now;
    }
}

async fn load() {
    let clients = env_number("HOOKWIRE_LOAD_CLIENTS", 1000) as usize;
    let seconds = env_number("HOOKWIRE_LOAD_SECONDS", 20);
    // Fewer tokens a chat weigh what a chat costs once (its start, its model request, its end)
    // against what each token costs: a ratio that grows as chats shorten is per chat.
    let tokens = env_number("HOOKWIRE_LOAD_CHAT_TOKENS", 200) as usize;
    let Ok(scratch) = tempfile::tempdir() else {
        eprintln!("cannot make a scratch folder");
        return;
    };
    // Each server has a fake upstream of its own: the idle connections one server leaves in
    // its upstream's pool are not in the way of the other's run.
    let (Some(floor_upstream), Some(hookwire_upstream)) =
        (start_upstream(tokens), start_upstream(tokens))
    else {
        return;
    };
    // `HOOKWIRE_LOAD_VERSUS=path`: another build of hookwire in the floor's place, to compare
    // two builds in one run (the figures still say "floor").
    let floor = match std::env::var_os("HOOKWIRE_LOAD_VERSUS") {
        Some(binary) => {
            hookwire_command_of(&binary, &floor_upstream, scratch.path(), "versus", None)
                .and_then(Server::spawn)
        }
        None => start_relay(&floor_upstream),
    };
    let (Some(floor), Some(hookwire)) = (floor, start_hookwire(&hookwire_upstream, scratch.path()))
    else {
        return;
    };
    settle().await;
    let (floor_start, hookwire_start) = (floor.rss(), hookwire.rss());
    let hookwire_start_anonymous = anonymous_bytes(hookwire.pid()).unwrap_or(0);
    // One server alone, for a profiler to attach to (`perf record -p PID`): no ratios.
    if let Ok(only) = std::env::var("HOOKWIRE_LOAD_ONLY") {
        let server = if only == "floor" { &floor } else { &hookwire };
        println!("{only}: pid {}", server.pid());
        if let Some(figures) = run_load(server, clients, seconds).await {
            print_figures(&only, &figures);
        }
        for _ in 0..12 {
            tokio::time::sleep(Duration::from_secs(10)).await;
            println!("  idle: RSS {:.1} MiB", mib(server.rss()));
        }
        return;
    }

    // Both servers for an outside load generator (`benches/outside/ws_load.py`): their
    // addresses and pids, then nothing until this process's input closes.
    if std::env::args().any(|a| a == "serve") {
        for (name, server) in [("floor", &floor), ("hookwire", &hookwire)] {
            println!("serving {name} {} pid {}", server.ws_url(), server.pid());
        }
        let _ = tokio::task::spawn_blocking(|| std::io::stdin().lines().for_each(drop)).await;
        return;
    }
    let rounds = env_number("HOOKWIRE_LOAD_ROUNDS", 3).max(1) as usize;
    println!("{clients} clients chatting at once ({tokens} tokens: first after 50 ms, then every 20 ms), {seconds} s measured, {rounds} rounds of both servers back to back:");
    let mut pairs = Vec::with_capacity(rounds);
    let mut peak_rss = 0;
    for round in 0..rounds {
        // Who goes first alternates, so neither always gets the warmer (or the busier) machine.
        let hookwire_first = round % 2 == 1;
        let (mut ours, mut theirs) = (None, None);
        for runs_hookwire in [hookwire_first, !hookwire_first] {
            let server = if runs_hookwire { &hookwire } else { &floor };
            let Some(figures) = run_load(server, clients, seconds).await else {
                return;
            };
            print_figures(if runs_hookwire { "hookwire" } else { "floor" }, &figures);
            if runs_hookwire {
                peak_rss = peak_rss.max(figures.peak_rss);
                ours = Some(figures);
            } else {
                theirs = Some(figures);
            }
            settle().await;
        }
        if let (Some(ours), Some(theirs)) = (ours, theirs) {
            pairs.push((ours, theirs));
        }
    }
    println!("  hookwire / floor:");
    print_ratios(&pairs, true);
    // The burst is over: watch what hookwire gives back in a minute of idleness.
    let after_burst = hookwire.rss();
    let heap_after_burst = hookwire.heap().await;
    let idle_from = Instant::now();
    let idle = Duration::from_secs(60).saturating_sub(idle_from.elapsed());
    tokio::time::sleep(idle).await;
    let after_idle = hookwire.rss();
    let after_idle_anonymous = anonymous_bytes(hookwire.pid()).unwrap_or(0);
    let heap_after_idle = hookwire.heap().await;
    println!(
        "memory: start-up RSS hookwire {:.1} MiB (default skills), floor {:.1} MiB, ratio {:.2} (goal ≤ 30 MiB); \
         after the burst {:.1} MiB (peak {:.1}), after a minute idle {:.1} MiB: {:.0}% of the burst's growth given back",
        mib(hookwire_start),
        mib(floor_start),
        hookwire_start as f64 / floor_start.max(1) as f64,
        mib(after_burst),
        mib(peak_rss),
        mib(after_idle),
        100.0 * peak_rss.saturating_sub(after_idle) as f64
            / peak_rss.saturating_sub(hookwire_start).max(1) as f64,
    );
    println!(
        "  anonymous memory (heap, stacks): {:.1} MiB at start, {:.1} MiB after a minute idle",
        mib(hookwire_start_anonymous),
        mib(after_idle_anonymous)
    );
    if let (Some(burst), Some(idle)) = (heap_after_burst, heap_after_idle) {
        println!("  the allocator's figures: after the burst {burst}; after a minute idle {idle}");
    }
    drop(hookwire);
    idle_memory(&hookwire_upstream, &floor_start, scratch.path()).await;
}

/// Server RSS per idle connection, 10,000 connections, hookwire and the floor.
async fn idle_memory(upstream: &Server, _floor_start: &u64, scratch: &std::path::Path) {
    const CONNECTIONS: usize = 10_000;
    let mut figures = Vec::new();
    for name in ["hookwire", "floor"] {
        let server = if name == "hookwire" {
            start_hookwire(upstream, scratch)
        } else {
            start_relay(upstream)
        };
        let Some(server) = server else {
            return;
        };
        // Warm the allocator and the runtime with a few connections first.
        let warm = connect_many(&server.ws_url(), 100).await;
        settle().await;
        let before = server.rss();
        let sockets = connect_many(&server.ws_url(), CONNECTIONS).await;
        settle().await;
        let after = server.rss();
        let per = after.saturating_sub(before) as f64 / sockets.len().max(1) as f64;
        figures.push(per);
        println!(
            "  idle connections, {name}: {:.0} bytes of server RSS each ({} connections, {:.1} → {:.1} MiB)",
            per,
            sockets.len(),
            mib(before),
            mib(after)
        );
        drop(sockets);
        drop(warm);
    }
    if let [ours, floor] = figures[..] {
        println!(
            "idle connection at 10,000: hookwire {:.1} KB, floor {:.1} KB, ratio {:.2} (goal ≤ 8 KB)",
            ours / 1000.0,
            floor / 1000.0,
            ours / floor.max(1.0)
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The soak.

/// hookwire started on an upstream of 20-token chats, settled; the scratch folder and the
/// upstream live as long as it.
struct ShortChats {
    _scratch: tempfile::TempDir,
    _upstream: Server,
    hookwire: Server,
}

async fn short_chats() -> Option<ShortChats> {
    let scratch = tempfile::tempdir().ok()?;
    let upstream = start_upstream(20)?;
    let hookwire = start_hookwire(&upstream, scratch.path())?;
    settle().await;
    Some(ShortChats {
        _scratch: scratch,
        _upstream: upstream,
        hookwire,
    })
}

async fn soak() {
    const CONNECTIONS: usize = 10_000;
    let minutes = env_number("HOOKWIRE_SOAK_MINUTES", 10);
    let Some(chats) = short_chats().await else {
        return;
    };
    let hookwire = &chats.hookwire;
    let start_rss = hookwire.rss();
    let sockets = connect_many(&hookwire.ws_url(), CONNECTIONS).await;
    println!(
        "soak: {} connections for {minutes} min, chats of 20 tokens with 10–30 s between them; start-up RSS {:.1} MiB",
        sockets.len(),
        mib(start_rss)
    );
    let end = Instant::now() + Duration::from_secs(minutes * 60);
    let completed = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let tokens = Arc::new(AtomicU64::new(0));
    let window = Arc::new(Window { start: end, end });
    let mut tasks = Vec::new();
    for (n, mut socket) in sockets.into_iter().enumerate() {
        let (completed, failed, tokens, window) = (
            completed.clone(),
            failed.clone(),
            tokens.clone(),
            window.clone(),
        );
        tasks.push(tokio::spawn(async move {
            // A cheap spread of pauses without a random number generator.
            let mut pause = 10_000 + (n as u64 * 7919) % 20_000;
            tokio::time::sleep(Duration::from_millis(pause / 2)).await;
            let mut id = 0;
            let mut samples = Samples::default();
            while Instant::now() < end {
                id += 1;
                match one_chat(&mut socket, id, &window, &mut samples, &tokens).await {
                    ChatOutcome::Done => completed.fetch_add(1, Ordering::Relaxed),
                    ChatOutcome::Failed => failed.fetch_add(1, Ordering::Relaxed),
                    ChatOutcome::Closed => {
                        failed.fetch_add(1, Ordering::Relaxed);
                        return;
                    }
                    // `one_chat` runs every chat to its end.
                    ChatOutcome::Cut => 0,
                };
                pause = 10_000 + (pause * 7919 + 13) % 20_000;
                let left = end.saturating_duration_since(Instant::now());
                tokio::time::sleep(Duration::from_millis(pause).min(left)).await;
            }
            let _ = socket.close(None).await;
        }));
    }
    let started = Instant::now();
    let mut samples = Vec::new();
    while Instant::now() < end {
        tokio::time::sleep(Duration::from_secs(10)).await;
        let rss = hookwire.rss();
        samples.push(rss);
        let heap = hookwire
            .heap()
            .await
            .map(|h| h.to_string())
            .unwrap_or_default();
        println!(
            "  {:4.0} s: RSS {:6.1} MiB ({heap}), chats done {}, failed {}",
            started.elapsed().as_secs_f64(),
            mib(rss),
            completed.load(Ordering::Relaxed),
            failed.load(Ordering::Relaxed)
        );
    }
    for task in tasks {
        let _ = task.await;
    }
    // Flat: the last minute's mean against the second minute's (the first is the ramp).
    let mean = |s: &[u64]| s.iter().sum::<u64>() as f64 / s.len().max(1) as f64;
    if samples.len() >= 12 {
        let second = mean(&samples[6..12]);
        let last = mean(&samples[samples.len() - 6..]);
        println!(
            "soak: RSS second minute {:.1} MiB, last minute {:.1} MiB, ratio {:.3}; {} chats, {} failed",
            mib(second as u64),
            mib(last as u64),
            last / second,
            completed.load(Ordering::Relaxed),
            failed.load(Ordering::Relaxed)
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Rounds.

/// `-- rounds`: what a connection's chats leave behind. `HOOKWIRE_ROUNDS_CONNECTIONS` (2,000)
/// connections chat in rounds (`HOOKWIRE_ROUNDS`, 40; every connection one 20-token chat per
/// round, all at once), and after each round, once the server is idle, its heap as the
/// allocator counts it (`hookwire_allocator_bytes`): per connection, against the first round.
/// Growth that follows the rounds is a leak; a one-time step is a buffer's high-water mark
/// (docs/performance.md names the two known ones).
async fn rounds() {
    let connections = env_number("HOOKWIRE_ROUNDS_CONNECTIONS", 2000) as usize;
    let rounds = env_number("HOOKWIRE_ROUNDS", 40);
    let Some(chats) = short_chats().await else {
        return;
    };
    let hookwire = &chats.hookwire;
    let mut sockets = connect_many(&hookwire.ws_url(), connections).await;
    // An empty window: no latency samples, only the chats.
    let window = Window {
        start: Instant::now(),
        end: Instant::now(),
    };
    let tokens = AtomicU64::new(0);
    let mut first = None;
    let began = Instant::now();
    for round in 1..=rounds {
        let results = futures::future::join_all(sockets.iter_mut().map(|socket| {
            let mut samples = Samples::default();
            let window = &window;
            let tokens = &tokens;
            async move { one_chat(socket, round, window, &mut samples, tokens).await }
        }))
        .await;
        let failed = results
            .iter()
            .filter(|r| !matches!(r, ChatOutcome::Done))
            .count();
        // The figures are refreshed every second: one refresh after the round.
        tokio::time::sleep(Duration::from_millis(1200)).await;
        let Some(heap) = hookwire.heap().await else {
            eprintln!("no allocator figures on /metrics");
            return;
        };
        let base = *first.get_or_insert(heap.allocated);
        println!(
            "round {round:3} at {:5.1} s: {heap}, RSS {:.1} MiB, {:+.0} bytes per connection since round 1, failed {failed}",
            began.elapsed().as_secs_f64(),
            mib(hookwire.rss()),
            (heap.allocated as f64 - base as f64) / connections as f64
        );
    }
}
