//! The front-end wires under load (docs/protocol.md §19), and the AI SDK's own Node server.
//!
//! - `wires`: 1,000 clients chatting back to back against one hookwire (default settings, the
//!   repository's skills: hooks on) on each wire in turn: the WebSocket, AG-UI (`POST /ag-ui`),
//!   the AI SDK (`POST /api/chat`) and OpenAI's chunks (`POST /v1/chat/completions`), in rounds
//!   whose order rotates; each wire's figures over the WebSocket's of the same round.
//! - `aisdk-node`: the AI SDK wire's clients against hookwire's `/api/chat` and against the AI
//!   SDK's own Node server (`aisdk-server.mjs`: `streamText` over `@ai-sdk/openai-compatible`),
//!   each with a fake upstream of its own, in rounds whose order alternates.
//!
//! The HTTP clients write HTTP/1.1 requests by hand on a kept-alive connection each and read the
//! chunked SSE body raw, 4 KiB at a time, looking only for their wire's markers (no JSON is
//! parsed), as `benches/wires` does: the client's cost stays small beside the server's. A chat
//! still running when the measured window ends is dropped (a saturated server's chats may last
//! minutes); a chat whose count of text deltas is not the upstream's failed.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use futures::{SinkExt, StreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;

use super::{
    connect_many, env_number, median, mib, monotonic_ns, print_figures, run_clients, settle,
    start_hookwire, start_upstream, ChatOutcome, Chatter, LoadFigures, Pace, Samples, Server,
    Socket, Window, CLIENT_READ_BUFFER,
};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Wire {
    WebSocket,
    AgUi,
    AiSdk,
    OpenAi,
}

impl Wire {
    const ALL: [Wire; 4] = [Wire::WebSocket, Wire::AgUi, Wire::AiSdk, Wire::OpenAi];

    fn name(self) -> &'static str {
        match self {
            Wire::WebSocket => "WebSocket",
            Wire::AgUi => "AG-UI",
            Wire::AiSdk => "AI SDK",
            Wire::OpenAi => "OpenAI",
        }
    }

    fn path(self) -> &'static str {
        match self {
            Wire::WebSocket => "/ws",
            Wire::AgUi => "/ag-ui",
            Wire::AiSdk => "/api/chat",
            Wire::OpenAi => "/v1/chat/completions",
        }
    }

    /// The request of chat `id` of client `client`: one user message, `input`.
    fn body(self, client: usize, id: u64, input: &str) -> String {
        match self {
            Wire::WebSocket => format!(r#"{{"type":"chat","id":"c{id}","input":"{input}"}}"#),
            Wire::AgUi => format!(
                r#"{{"threadId":"t{client}","runId":"r{id}","state":{{}},"tools":[],"context":[],"forwardedProps":{{}},"messages":[{{"id":"u{id}","role":"user","content":"{input}"}}]}}"#
            ),
            Wire::AiSdk => format!(
                r#"{{"id":"c{client}","trigger":"submit-message","messages":[{{"id":"u{id}","role":"user","parts":[{{"type":"text","text":"{input}"}}]}}]}}"#
            ),
            Wire::OpenAi => format!(
                r#"{{"model":"hookwire","stream":true,"messages":[{{"role":"user","content":"{input}"}}]}}"#
            ),
        }
    }

    /// What marks a text delta. OpenAI's first chunk carries an empty `content` (with the
    /// role): the fake upstream's tokens all start with `tok`.
    fn delta(self) -> &'static [u8] {
        match self {
            Wire::WebSocket => br#""type":"text","#,
            Wire::AgUi => b"TEXT_MESSAGE_CONTENT",
            Wire::AiSdk => br#""type":"text-delta""#,
            Wire::OpenAi => br#""content":"tok"#,
        }
    }

    /// What marks the chat's good end (`[DONE]` also follows an AI SDK `error`, so the error
    /// marker is looked for as well).
    fn end(self) -> &'static [u8] {
        match self {
            Wire::WebSocket => br#""type":"done""#,
            Wire::AgUi => b"RUN_FINISHED",
            Wire::AiSdk | Wire::OpenAi => b"[DONE]",
        }
    }

    fn error(self) -> &'static [u8] {
        match self {
            Wire::WebSocket | Wire::AiSdk => br#""type":"error""#,
            Wire::AgUi => b"RUN_ERROR",
            Wire::OpenAi => br#"{"error":"#,
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

/// The occurrences of `needle` in `window` that end in its bytes from `old` on (those before
/// were looked at in the read before).
fn count_new(window: &[u8], old: usize, needle: &[u8]) -> usize {
    let mut from = (old + 1).saturating_sub(needle.len());
    let mut count = 0;
    while let Some(at) = window.get(from..).and_then(|rest| find(rest, needle)) {
        count += 1;
        from += at + needle.len();
    }
    count
}

/// What one chat's client saw so far: its deltas' times go to the samples as [`super::one_chat`]
/// puts them.
struct ChatSeen<'a> {
    wire: Wire,
    sent: Instant,
    sent_ns: u64,
    window: &'a Window,
    samples: &'a mut Samples,
    tokens: &'a AtomicU64,
    mishaps: &'a Mishaps,
    deltas: usize,
    last_delta: Option<Instant>,
    ended: bool,
    errored: bool,
}

impl<'a> ChatSeen<'a> {
    /// A chat on `wire` sent now (`sent_ns` on the monotonic clock), nothing seen yet.
    fn sent(
        wire: Wire,
        sent_ns: u64,
        window: &'a Window,
        samples: &'a mut Samples,
        tokens: &'a AtomicU64,
        mishaps: &'a Mishaps,
    ) -> Self {
        ChatSeen {
            wire,
            sent: Instant::now(),
            sent_ns,
            window,
            samples,
            tokens,
            mishaps,
            deltas: 0,
            last_delta: None,
            ended: false,
            errored: false,
        }
    }

    /// The bytes `window[old..]` arrived at `now` (`window[..old]` are the last read's tail).
    fn saw(&mut self, window: &[u8], old: usize, now: Instant) {
        let deltas = count_new(window, old, self.wire.delta());
        if deltas > 0 {
            if self.window.contains(now) {
                self.tokens.fetch_add(deltas as u64, Ordering::Relaxed);
                match self.last_delta {
                    None => {
                        let micros = (now - self.sent).as_micros().min(u32::MAX as u128);
                        self.samples.first_token.push(micros as u32);
                        self.split_first_token(window, monotonic_ns());
                    }
                    Some(last) => {
                        let micros = (now - last).as_micros().min(u32::MAX as u128);
                        self.samples.gaps.push(micros as u32);
                    }
                }
                // Deltas read together arrived together, as WebSocket frames read together do.
                self.samples.gaps.extend(std::iter::repeat_n(0, deltas - 1));
            }
            self.deltas += deltas;
            self.last_delta = Some(now);
        }
        self.ended |= count_new(window, old, self.wire.end()) > 0;
        if !self.errored && count_new(window, old, self.wire.error()) > 0 {
            self.errored = true;
            self.mishaps.saw_error(window);
        }
    }

    /// The fake upstream's first token, `tok0@<received>@<sent> `: the server's two paths.
    fn split_first_token(&mut self, window: &[u8], received_ns: u64) {
        let Some(at) = find(window, b"tok0@") else {
            return;
        };
        let token = &window[at..];
        let end = token
            .iter()
            .position(|&b| b == b' ' || b == b'"')
            .unwrap_or(token.len());
        if let Ok(token) = std::str::from_utf8(&token[..end]) {
            self.samples
                .split_first_token(token, self.sent_ns, received_ns);
        }
    }

    /// Done when the chat ended well with the upstream's count of tokens.
    fn outcome(&self) -> ChatOutcome {
        let mishaps = self.mishaps;
        if self.errored || !self.ended {
            return ChatOutcome::Failed;
        }
        if self.deltas != mishaps.tokens {
            if mishaps.short.fetch_add(1, Ordering::Relaxed) < 3 {
                eprintln!(
                    "{}: a chat ended with {} text deltas, not {}",
                    self.wire.name(),
                    self.deltas,
                    mishaps.tokens
                );
            }
            return ChatOutcome::Failed;
        }
        ChatOutcome::Done
    }
}

/// A WebSocket client that counts its text frames (the load's `one_chat` does not).
pub(super) struct WsClient {
    socket: Socket,
    mishaps: Arc<Mishaps>,
}

impl WsClient {
    async fn one_chat(
        &mut self,
        id: u64,
        window: &Window,
        samples: &mut Samples,
        tokens: &AtomicU64,
    ) -> ChatOutcome {
        let sent_ns = monotonic_ns();
        let frame = Wire::WebSocket.body(0, id, &format!("go@{sent_ns}"));
        let mut seen = ChatSeen::sent(
            Wire::WebSocket,
            sent_ns,
            window,
            samples,
            tokens,
            &self.mishaps,
        );
        if self.socket.send(Message::text(frame)).await.is_err() {
            return ChatOutcome::Closed;
        }
        while let Some(message) = self.socket.next().await {
            let text = match message {
                Ok(Message::Text(text)) => text,
                Ok(Message::Close(_)) | Err(_) => return ChatOutcome::Closed,
                Ok(_) => continue,
            };
            seen.saw(text.as_bytes(), 0, Instant::now());
            if seen.ended || seen.errored {
                return seen.outcome();
            }
        }
        ChatOutcome::Closed
    }
}

/// A chat's outcome, or `None` if it still ran at the window's end. A saturated server's chats
/// may outlast the window by minutes: what they do after it is not measured, so they are not
/// waited for (nor is a stalled server).
async fn within_window(
    window: &Window,
    chat: impl std::future::Future<Output = ChatOutcome>,
) -> Option<ChatOutcome> {
    tokio::time::timeout_at(window.end.into(), chat).await.ok()
}

impl Chatter for WsClient {
    async fn chat(
        &mut self,
        id: u64,
        _extra: &str,
        window: &Window,
        samples: &mut Samples,
        tokens: &AtomicU64,
    ) -> ChatOutcome {
        let chat = self.one_chat(id, window, samples, tokens);
        within_window(window, chat)
            .await
            .unwrap_or(ChatOutcome::Cut)
    }

    async fn hang_up(mut self) {
        let _ = self.socket.close(None).await;
    }
}

/// The bytes kept from one read for the next, so that a marker cut by a read's end is found
/// whole (the longest looked for, `tok0@<ns>@<ns>`, is 44 bytes).
const CARRY: usize = 64;

/// A client of an HTTP wire: one kept-alive HTTP/1.1 connection, requests written by hand, the
/// chunked SSE body read raw. A connection the server closed is opened again for the next chat.
struct HttpClient {
    wire: Wire,
    addr: String,
    client: usize,
    stream: Option<TcpStream>,
    /// The last read's tail (`CARRY` bytes at most), then the read.
    buffer: Box<[u8]>,
    mishaps: Arc<Mishaps>,
}

impl HttpClient {
    async fn connect(addr: &str) -> Option<TcpStream> {
        let stream = TcpStream::connect(addr).await.ok()?;
        stream.set_nodelay(true).ok()?;
        Some(stream)
    }

    async fn one_chat(
        &mut self,
        id: u64,
        window: &Window,
        samples: &mut Samples,
        tokens: &AtomicU64,
    ) -> ChatOutcome {
        if self.stream.is_none() {
            self.stream = Self::connect(&self.addr).await;
        }
        let Some(stream) = self.stream.as_mut() else {
            return ChatOutcome::Closed;
        };
        let sent_ns = monotonic_ns();
        let body = self.wire.body(self.client, id, &format!("go@{sent_ns}"));
        let request = format!(
            "POST {} HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            self.wire.path(),
            self.addr,
            body.len()
        );
        let mut seen = ChatSeen::sent(self.wire, sent_ns, window, samples, tokens, &self.mishaps);
        if stream.write_all(request.as_bytes()).await.is_err() {
            self.stream = None;
            return ChatOutcome::Failed;
        }
        let mut carry = 0;
        let mut head_read = false;
        loop {
            let read = match stream.read(&mut self.buffer[carry..]).await {
                Ok(0) | Err(_) => {
                    self.stream = None;
                    return ChatOutcome::Failed;
                }
                Ok(read) => read,
            };
            let now = Instant::now();
            let bytes = &self.buffer[..carry + read];
            if !head_read {
                if bytes.len() < 12 {
                    carry = bytes.len();
                    continue;
                }
                if !bytes.starts_with(b"HTTP/1.1 200") {
                    // The body of a refusal is not read: the connection is dropped instead.
                    if self.mishaps.refused.fetch_add(1, Ordering::Relaxed) < 3 {
                        let line = bytes.split(|&b| b == b'\r').next().unwrap_or_default();
                        eprintln!("{}: {}", self.wire.name(), String::from_utf8_lossy(line));
                    }
                    self.stream = None;
                    return ChatOutcome::Failed;
                }
                head_read = true;
            }
            seen.saw(bytes, carry, now);
            // The chunked body's last chunk (no pipelining: it ends the read).
            if bytes.ends_with(b"\r\n0\r\n\r\n") {
                return seen.outcome();
            }
            let len = bytes.len();
            carry = len.min(CARRY);
            self.buffer.copy_within(len - carry..len, 0);
        }
    }
}

impl Chatter for HttpClient {
    async fn chat(
        &mut self,
        id: u64,
        _extra: &str,
        window: &Window,
        samples: &mut Samples,
        tokens: &AtomicU64,
    ) -> ChatOutcome {
        let chat = self.one_chat(id, window, samples, tokens);
        let outcome = within_window(window, chat).await;
        if outcome.is_none() {
            // Its connection goes with it: its body was not read to the end.
            self.stream = None;
        }
        outcome.unwrap_or(ChatOutcome::Cut)
    }

    async fn hang_up(mut self) {
        if let Some(mut stream) = self.stream.take() {
            let _ = stream.shutdown().await;
        }
    }
}

/// The chats of a run that went wrong in a way the load's figures do not tell apart.
pub(super) struct Mishaps {
    /// The count of tokens every chat should have (the upstream's).
    tokens: usize,
    /// Ended with another count of text deltas.
    short: AtomicU64,
    /// Answered with another status than 200.
    refused: AtomicU64,
    /// The first error a chat ended with, as the wire said it.
    first_error: std::sync::Mutex<Option<String>>,
}

impl Mishaps {
    pub(super) fn new(tokens: usize) -> Arc<Mishaps> {
        Arc::new(Mishaps {
            tokens,
            short: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            first_error: std::sync::Mutex::new(None),
        })
    }

    /// Keeps the first error seen (the bytes read with it, which hold it whole or its start).
    fn saw_error(&self, bytes: &[u8]) {
        if let Ok(mut first) = self.first_error.lock() {
            first.get_or_insert_with(|| {
                String::from_utf8_lossy(&bytes[..bytes.len().min(300)]).into_owned()
            });
        }
    }

    pub(super) fn describe(&self) -> String {
        let mut text = format!(
            "{} with another count of tokens than {}, {} refused",
            self.short.load(Ordering::Relaxed),
            self.tokens,
            self.refused.load(Ordering::Relaxed)
        );
        if let Some(error) = self.first_error.lock().ok().and_then(|e| e.clone()) {
            text.push_str(&format!("; the first error: {}", error.trim()));
        }
        text
    }
}

/// `count` WebSocket clients of `server`, as many as could connect.
pub(super) async fn ws_clients(
    server: &Server,
    count: usize,
    mishaps: &Arc<Mishaps>,
) -> Vec<WsClient> {
    connect_many(&server.ws_url(), count)
        .await
        .into_iter()
        .map(|socket| WsClient {
            socket,
            mishaps: mishaps.clone(),
        })
        .collect()
}

/// `count` clients of `wire` (an HTTP one) on `server`, their connections opened 64 at a time.
async fn http_clients(
    server: &Server,
    wire: Wire,
    count: usize,
    mishaps: &Arc<Mishaps>,
) -> Vec<HttpClient> {
    let streams: Vec<Option<TcpStream>> = futures::stream::iter(0..count)
        .map(|_| HttpClient::connect(&server.addr))
        .buffer_unordered(64)
        .collect()
        .await;
    streams
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(client, stream)| HttpClient {
            wire,
            addr: server.addr.clone(),
            client,
            stream: Some(stream),
            buffer: vec![0; CARRY + CLIENT_READ_BUFFER].into_boxed_slice(),
            mishaps: mishaps.clone(),
        })
        .collect()
}

/// `clients` clients of `wire` chatting back to back against `server` for `seconds`.
async fn run_wire(
    server: &Server,
    wire: Wire,
    clients: usize,
    seconds: u64,
) -> Option<(LoadFigures, Arc<Mishaps>)> {
    let mishaps = Mishaps::new(Pace::USUAL.tokens);
    let (opened, figures) = if wire == Wire::WebSocket {
        let opened = ws_clients(server, clients, &mishaps).await;
        let count = opened.len();
        (count, whole(opened, clients, server, seconds).await)
    } else {
        let opened = http_clients(server, wire, clients, &mishaps).await;
        let count = opened.len();
        (count, whole(opened, clients, server, seconds).await)
    };
    if opened < clients {
        eprintln!("only {opened} of {clients} connections opened");
    }
    Some((figures?, mishaps))
}

/// The run of `opened` when all `clients` connected.
async fn whole<C: Chatter>(
    opened: Vec<C>,
    clients: usize,
    server: &Server,
    seconds: u64,
) -> Option<LoadFigures> {
    if opened.len() < clients {
        return None;
    }
    run_clients(server, opened, seconds, Pace::USUAL, None)
        .await
        .map(|(figures, _)| figures)
}

/// Prints a run's figures and what went wrong in it.
fn print_run(name: &str, figures: &LoadFigures, mishaps: &Mishaps) {
    print_figures(name, figures);
    let (short, refused) = (
        mishaps.short.load(Ordering::Relaxed),
        mishaps.refused.load(Ordering::Relaxed),
    );
    if short + refused > 0 || figures.failed > 0 {
        println!("            of the failed: {}", mishaps.describe());
    }
}

/// A compared figure: its name, its goal as printed, how to read it from a run.
type Compared = (&'static str, &'static str, fn(&LoadFigures) -> f64);

/// The median of `ratios` and their spread: `median [min–max]`.
fn spread(mut ratios: Vec<f64>) -> String {
    ratios.sort_by(f64::total_cmp);
    match (ratios.first(), ratios.last()) {
        (Some(low), Some(high)) => format!("{:.2} [{low:.2}–{high:.2}]", median(&ratios)),
        _ => "-".to_string(),
    }
}

/// Each figure of `compared` as `ours / theirs` of the same round, median of the rounds [min–max].
fn print_compared(pairs: &[(&LoadFigures, &LoadFigures)], compared: &[Compared]) {
    for (name, goal, read) in compared {
        let ratios = pairs
            .iter()
            .map(|(ours, theirs)| read(ours) / read(theirs).max(1e-12))
            .collect();
        println!("    {name:<18} {}{goal}", spread(ratios));
    }
}

/// `wires`: each wire against the WebSocket on one hookwire, in rounds whose order rotates.
pub(super) async fn wires() {
    let clients = env_number("HOOKWIRE_LOAD_CLIENTS", 1000) as usize;
    let seconds = env_number("HOOKWIRE_LOAD_SECONDS", 20);
    let rounds = env_number("HOOKWIRE_LOAD_ROUNDS", 3).max(1) as usize;
    let Ok(scratch) = tempfile::tempdir() else {
        eprintln!("cannot make a scratch folder");
        return;
    };
    let Some(upstream) = start_upstream(Pace::USUAL.tokens) else {
        return;
    };
    let Some(hookwire) = start_hookwire(&upstream, scratch.path()) else {
        return;
    };
    settle().await;
    println!(
        "{clients} clients chatting at once on each wire against one hookwire (default settings, the repository's skills; {} tokens: first after 50 ms, then every 20 ms), {seconds} s measured, {rounds} rounds of the four wires, the order rotating:",
        Pace::USUAL.tokens
    );
    // figures[round][wire], in Wire::ALL's order.
    let mut figures: Vec<Vec<Option<LoadFigures>>> = Vec::with_capacity(rounds);
    for round in 0..rounds {
        let mut this_round: Vec<Option<LoadFigures>> = Wire::ALL.iter().map(|_| None).collect();
        for turn in 0..Wire::ALL.len() {
            let index = (round + turn) % Wire::ALL.len();
            let wire = Wire::ALL[index];
            let Some((run, mishaps)) = run_wire(&hookwire, wire, clients, seconds).await else {
                eprintln!("the {} run failed", wire.name());
                return;
            };
            print_run(wire.name(), &run, &mishaps);
            this_round[index] = Some(run);
            settle().await;
        }
        figures.push(this_round);
    }
    const COMPARED: &[Compared] = &[
        ("chats/s", "", |f| f.chats_per_second),
        ("first token p50", " (goal ≤ 1.05)", |f| f.first_token_p50),
        ("first token p99", "", |f| f.first_token_p99),
        ("gap p99", "", |f| f.gap_p99),
        ("CPU per token", " (goal ≤ 1.05)", |f| {
            f.cpu_per_token.as_secs_f64()
        }),
    ];
    for (index, wire) in Wire::ALL.into_iter().enumerate().skip(1) {
        let pairs: Vec<(&LoadFigures, &LoadFigures)> = figures
            .iter()
            .filter_map(|round| Some((round[index].as_ref()?, round[0].as_ref()?)))
            .collect();
        println!(
            "  {} / WebSocket, median of {} rounds [min–max]:",
            wire.name(),
            pairs.len()
        );
        print_compared(&pairs, COMPARED);
    }
    println!("hookwire's log: {}", hookwire.log_summary());
}

// ---------------------------------------------------------------------------------------------
// The AI SDK's own Node server.

/// The AI SDK's Node server (`aisdk-server.mjs`) on `upstream`, or why it cannot run.
fn start_node(upstream: &Server) -> Result<Server, String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let modules = root.join("tests/frontends/node_modules");
    for package in ["ai", "@ai-sdk/openai-compatible"] {
        if !modules.join(package).join("package.json").exists() {
            return Err(format!(
                "{} is not installed: run `npm ci` in tests/frontends",
                modules.join(package).display()
            ));
        }
    }
    let mut command = std::process::Command::new("node");
    command
        .arg(root.join("benches/under_load/aisdk-server.mjs"))
        .env(
            "HOOKWIRE_LOAD_UPSTREAM",
            format!("http://{}/v1", upstream.addr),
        )
        .env("NODE_ENV", "production");
    Server::spawn(command).ok_or_else(|| "node did not start (is node on PATH?)".to_string())
}

/// `aisdk-node`: hookwire's `/api/chat` against the AI SDK's own Node server, back to back in
/// rounds, the one that goes first alternating.
pub(super) async fn aisdk_node() {
    let clients = env_number("HOOKWIRE_LOAD_CLIENTS", 1000) as usize;
    let seconds = env_number("HOOKWIRE_LOAD_SECONDS", 20);
    let rounds = env_number("HOOKWIRE_LOAD_ROUNDS", 3).max(1) as usize;
    let Ok(scratch) = tempfile::tempdir() else {
        eprintln!("cannot make a scratch folder");
        return;
    };
    let (Some(ours_upstream), Some(node_upstream)) = (
        start_upstream(Pace::USUAL.tokens),
        start_upstream(Pace::USUAL.tokens),
    ) else {
        return;
    };
    let Some(hookwire) = start_hookwire(&ours_upstream, scratch.path()) else {
        return;
    };
    let node = match start_node(&node_upstream) {
        Ok(node) => node,
        Err(why) => {
            eprintln!("aisdk-node: {why}");
            return;
        }
    };
    settle().await;
    let (hookwire_start, node_start) = (hookwire.rss(), node.rss());
    println!(
        "{clients} AI SDK wire clients (POST /api/chat) chatting at once, {seconds} s measured, {rounds} rounds of hookwire (default settings, the repository's skills: hooks on) and the AI SDK's Node server (ai + @ai-sdk/openai-compatible) back to back:"
    );
    let mut pairs = Vec::with_capacity(rounds);
    for round in 0..rounds {
        let hookwire_first = round % 2 == 0;
        let (mut ours, mut theirs) = (None, None);
        for runs_hookwire in [hookwire_first, !hookwire_first] {
            let (server, name) = if runs_hookwire {
                (&hookwire, "hookwire")
            } else {
                (&node, "node")
            };
            let Some((run, mishaps)) = run_wire(server, Wire::AiSdk, clients, seconds).await else {
                eprintln!("the {name} run failed");
                return;
            };
            print_run(name, &run, &mishaps);
            println!(
                "            tokens/s {:.0} ({:.1} chats' worth), chats/s per core used {:.1}",
                run.tokens_per_second,
                run.tokens_per_second / Pace::USUAL.tokens as f64,
                per_core(&run)
            );
            if runs_hookwire {
                ours = Some(run);
            } else {
                theirs = Some(run);
            }
            settle().await;
        }
        if let (Some(ours), Some(theirs)) = (ours, theirs) {
            pairs.push((ours, theirs));
        }
    }
    const COMPARED: &[Compared] = &[
        ("chats/s", "", |f| f.chats_per_second),
        ("first token p50", "", |f| f.first_token_p50),
        ("first token p99", "", |f| f.first_token_p99),
        ("CPU per token", "", |f| f.cpu_per_token.as_secs_f64()),
        ("CPU share", "", |f| f.cpu_share),
        ("chats/s per core", " (goal ≥ 3)", per_core),
    ];
    let pairs: Vec<(&LoadFigures, &LoadFigures)> = pairs.iter().map(|(a, b)| (a, b)).collect();
    println!(
        "  hookwire / node, median of {} rounds [min–max]:",
        pairs.len()
    );
    print_compared(&pairs, COMPARED);
    // With a fixed number of clients both may reach the same chats/s: a server at a whole core
    // (node runs its JavaScript on one) is the bound, not the clients.
    let busiest = pairs
        .iter()
        .map(|(_, node)| node.cpu_share)
        .fold(0.0, f64::max);
    if busiest >= 90.0 {
        println!(
            "  node used up to {busiest:.0}% of a core: its one JavaScript thread is saturated, so its chats/s is bound by it"
        );
    }
    println!(
        "  start-up RSS: hookwire {:.1} MiB, node {:.1} MiB; peak RSS under load: hookwire {:.1} MiB, node {:.1} MiB",
        mib(hookwire_start),
        mib(node_start),
        mib(pairs.iter().map(|(h, _)| h.peak_rss).max().unwrap_or(0)),
        mib(pairs.iter().map(|(_, n)| n.peak_rss).max().unwrap_or(0)),
    );
    println!("hookwire's log: {}", hookwire.log_summary());
    println!("node's log: {}", node.log_summary());
}

/// Chats/s over the server's cores used (its CPU share of one core, over 100). The chats/s is
/// the tokens delivered in the window over a chat's tokens: a saturated server's chats last
/// longer than the window, and the chats that happen to end in it say little.
fn per_core(figures: &LoadFigures) -> f64 {
    let chats = figures.tokens_per_second / Pace::USUAL.tokens as f64;
    chats / (figures.cpu_share / 100.0).max(1e-6)
}
