//! Test support: a fake OpenAI-compatible upstream served over real HTTP with SSE, a real
//! hookwire server on 127.0.0.1:0, and a real WebSocket client.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use futures::{SinkExt, Stream, StreamExt};
use hookwire::agent::AgentClientBuilder;
use hookwire::app::{agent_parts, Sources};
use hookwire::config::{CliSettings, Config, FileConfig};
use hookwire::server::{AppState, RunningServer};
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message as WsMessage;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

// ─── the fake upstream ───

/// One piece of a scripted SSE body.
#[derive(Clone, Debug)]
pub enum Piece {
    /// Raw bytes, sent as they are (may split an event anywhere).
    Raw(String),
    /// Raw bytes that need not be valid UTF-8 on their own (a split character).
    Bytes(Vec<u8>),
    Sleep(Duration),
    /// Waits until the test opens the gate.
    Until(Gate),
    /// Never sends anything more (until the client goes away).
    Hang,
}

/// A point where a scripted reply waits until the test opens it: a pause that ends on an event
/// the test controls, not on a clock.
#[derive(Clone, Debug, Default)]
pub struct Gate(Arc<tokio::sync::Notify>);

impl Gate {
    pub fn new() -> Gate {
        Gate::default()
    }

    /// Lets the reply waiting at the gate (or the next one to reach it) go on.
    pub fn open(&self) {
        self.0.notify_one();
    }

    async fn pass(&self) {
        self.0.notified().await;
    }
}

/// What the fake upstream answers to one request.
#[derive(Clone, Debug)]
pub enum Reply {
    Sse(Vec<Piece>),
    Status(u16, String),
    /// A status with response headers (`Retry-After`).
    StatusWith(u16, Vec<(&'static str, String)>, String),
    /// Waits this long before sending the response headers.
    Delay(Duration, Box<Reply>),
    /// Waits for the gate before sending the response headers.
    After(Gate, Box<Reply>),
}

pub fn chunk(delta: Value) -> String {
    format!(
        "data: {}\n\n",
        json!({"id":"chatcmpl-1","object":"chat.completion.chunk","model":"fake","choices":[{"index":0,"delta":delta,"finish_reason":null}]})
    )
}

fn finish_chunk(reason: &str) -> String {
    format!(
        "data: {}\n\n",
        json!({"id":"chatcmpl-1","object":"chat.completion.chunk","model":"fake","choices":[{"index":0,"delta":{},"finish_reason":reason}]})
    )
}

fn usage_chunk(prompt: u64, completion: u64) -> String {
    format!(
        "data: {}\n\n",
        json!({"id":"chatcmpl-1","object":"chat.completion.chunk","model":"fake","choices":[],"usage":{"prompt_tokens":prompt,"completion_tokens":completion,"total_tokens":prompt+completion}})
    )
}

impl Reply {
    /// A text reply streamed in the given pieces, with usage 10/len and `[DONE]`.
    pub fn text(pieces: &[&str]) -> Reply {
        let mut body = vec![Piece::Raw(chunk(json!({"role":"assistant","content":""})))];
        for piece in pieces {
            body.push(Piece::Raw(chunk(json!({"content": piece}))));
        }
        body.push(Piece::Raw(finish_chunk("stop")));
        body.push(Piece::Raw(usage_chunk(10, pieces.len() as u64)));
        body.push(Piece::Raw("data: [DONE]\n\n".into()));
        Reply::Sse(body)
    }

    /// A reply that calls tools: `(id, name, arguments JSON)`; arguments arrive in two fragments.
    pub fn tool_calls(calls: &[(&str, &str, Value)]) -> Reply {
        let mut body = vec![Piece::Raw(chunk(
            json!({"role":"assistant","content":null}),
        ))];
        for (index, (id, name, arguments)) in calls.iter().enumerate() {
            let arguments = arguments.to_string();
            let (first, second) = arguments.split_at(arguments.len() / 2);
            body.push(Piece::Raw(chunk(json!({"tool_calls":[{"index":index,"id":id,"type":"function","function":{"name":name,"arguments":first}}]}))));
            body.push(Piece::Raw(chunk(
                json!({"tool_calls":[{"index":index,"function":{"arguments":second}}]}),
            )));
        }
        body.push(Piece::Raw(finish_chunk("tool_calls")));
        body.push(Piece::Raw(usage_chunk(20, 5)));
        body.push(Piece::Raw("data: [DONE]\n\n".into()));
        Reply::Sse(body)
    }

    /// Text that keeps streaming (one piece every 20 ms) until the client goes away.
    pub fn endless() -> Reply {
        let mut body = vec![Piece::Raw(chunk(json!({"role":"assistant","content":""})))];
        for _ in 0..5_000 {
            body.push(Piece::Raw(chunk(json!({"content":"tick "}))));
            body.push(Piece::Sleep(Duration::from_millis(20)));
        }
        Reply::Sse(body)
    }
}

/// A recorded upstream request.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub body: Value,
    pub headers: HeaderMap,
    /// The path and query asked for.
    pub uri: Uri,
}

impl Recorded {
    /// The `messages` as `(role, content)` pairs.
    pub fn messages(&self) -> Vec<(String, String)> {
        self.body["messages"]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .map(|m| {
                        (
                            m["role"].as_str().unwrap_or("").to_string(),
                            m["content"].as_str().unwrap_or("").to_string(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn tool_names(&self) -> Option<Vec<String>> {
        self.body.get("tools").map(|tools| {
            tools
                .as_array()
                .into_iter()
                .flatten()
                .map(|t| t["function"]["name"].as_str().unwrap_or("").to_string())
                .collect()
        })
    }
}

async fn other_path(State(state): State<UpstreamState>, uri: Uri) -> Response {
    match state.other_paths.lock().unwrap().get(uri.path()) {
        Some(body) => axum::Json(body.clone()).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

#[derive(Clone, Default)]
struct UpstreamState {
    script: Arc<Mutex<VecDeque<Reply>>>,
    requests: Arc<Mutex<Vec<Recorded>>>,
    /// Bodies dropped before they were fully sent (the client went away).
    dropped: Arc<AtomicUsize>,
    /// JSON answers of other paths (a local server's `/props`, `/v1/models`, …); others 404.
    other_paths: Arc<Mutex<std::collections::HashMap<String, Value>>>,
}

pub struct FakeUpstream {
    pub base_url: String,
    state: UpstreamState,
}

impl FakeUpstream {
    pub async fn start() -> FakeUpstream {
        let state = UpstreamState::default();
        let app = upstream_app(&state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeUpstream {
            base_url: format!("http://{addr}/v1"),
            state,
        }
    }

    /// The same fake upstream served over HTTPS (`tests/data/tls/server.pem`, signed by
    /// `ca.pem`), offering HTTP/2 and HTTP/1.1 by ALPN as hosted model APIs do; an HTTP/2
    /// connection takes at most `streams_per_connection` requests at once
    /// (`SETTINGS_MAX_CONCURRENT_STREAMS`).
    pub async fn start_tls(streams_per_connection: u32) -> FakeUpstream {
        use hyper_util::rt::{TokioExecutor, TokioIo};
        use hyper_util::service::TowerToHyperService;
        use tokio_rustls::rustls::pki_types::pem::PemObject;
        use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

        let certs = CertificateDer::pem_file_iter(tls_file("server.pem"))
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = PrivateKeyDer::from_pem_file(tls_file("server.key")).unwrap();
        let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
        let mut tls = tokio_rustls::rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .unwrap();
        tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));

        let state = UpstreamState::default();
        let service = TowerToHyperService::new(upstream_app(&state));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let (acceptor, service) = (acceptor.clone(), service.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(socket).await else {
                        return;
                    };
                    let mut server =
                        hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
                    server
                        .http2()
                        .max_concurrent_streams(streams_per_connection);
                    let _ = server.serve_connection(TokioIo::new(tls), service).await;
                });
            }
        });
        FakeUpstream {
            base_url: format!("https://{addr}/v1"),
            state,
        }
    }

    /// The certificate authority a client must trust to reach [`FakeUpstream::start_tls`].
    pub fn tls_authority() -> std::path::PathBuf {
        tls_file("ca.pem")
    }

    /// Queues replies, answered in order; with the queue empty the answer is `Reply::text(["ok"])`.
    pub fn push(&self, reply: Reply) {
        self.state.script.lock().unwrap().push_back(reply);
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.state.requests.lock().unwrap().clone()
    }

    /// Answers `path` (any method, below the server's root, e.g. `/props`) with `body`, as a
    /// local model server states what it runs.
    pub fn answer_json(&self, path: &str, body: Value) {
        self.state
            .other_paths
            .lock()
            .unwrap()
            .insert(path.to_string(), body);
    }

    /// The same upstream behind a front that closes its first connection once the request's
    /// head is read, without an answer (as a server does with a kept-alive connection it closes
    /// just as it is reused); later connections go through to the upstream.
    pub async fn hanging_up_once(&self) -> FakeUpstream {
        use tokio::io::AsyncReadExt;
        let target = self
            .base_url
            .trim_start_matches("http://")
            .trim_end_matches("/v1")
            .to_string();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let mut first = true;
            while let Ok((mut client, _)) = listener.accept().await {
                if std::mem::take(&mut first) {
                    let mut head = Vec::new();
                    let mut buffer = [0u8; 4096];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match client.read(&mut buffer).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => head.extend_from_slice(&buffer[..n]),
                        }
                    }
                    drop(client);
                    continue;
                }
                let target = target.clone();
                tokio::spawn(async move {
                    if let Ok(mut server) = tokio::net::TcpStream::connect(&target).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
            }
        });
        FakeUpstream {
            base_url: format!("http://{addr}/v1"),
            state: self.state.clone(),
        }
    }

    pub fn dropped(&self) -> usize {
        self.state.dropped.load(Ordering::SeqCst)
    }

    /// Waits until a streamed body was dropped by the client, up to `limit`.
    pub async fn wait_dropped(&self, limit: Duration) -> bool {
        eventually(limit, || async { self.dropped() > 0 }).await
    }
}

/// A file of the test-only TLS data (`tests/data/tls/README.md`).
fn tls_file(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/tls")
        .join(name)
}

/// The fake upstream's routes over `state`, however it is served.
fn upstream_app(state: &UpstreamState) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(completions))
        // Anthropic's Messages API: the same script and records (tests/it/anthropic.rs).
        .route("/v1/messages", post(completions))
        .fallback(other_path)
        .with_state(state.clone())
}

/// Counts a body as dropped if it is dropped before its end.
struct DropGuard {
    finished: bool,
    dropped: Arc<AtomicUsize>,
}

impl Drop for DropGuard {
    fn drop(&mut self) {
        if !self.finished {
            self.dropped.fetch_add(1, Ordering::SeqCst);
        }
    }
}

fn sse_body(
    pieces: Vec<Piece>,
    dropped: Arc<AtomicUsize>,
) -> impl Stream<Item = Result<Bytes, std::io::Error>> {
    let guard = DropGuard {
        finished: false,
        dropped,
    };
    futures::stream::unfold(
        (pieces.into_iter(), guard),
        |(mut pieces, mut guard)| async move {
            loop {
                match pieces.next() {
                    None => {
                        guard.finished = true;
                        drop(guard);
                        return None;
                    }
                    Some(Piece::Raw(text)) => {
                        return Some((Ok(Bytes::from(text)), (pieces, guard)))
                    }
                    Some(Piece::Bytes(bytes)) => {
                        return Some((Ok(Bytes::from(bytes)), (pieces, guard)))
                    }
                    Some(Piece::Sleep(d)) => tokio::time::sleep(d).await,
                    Some(Piece::Until(gate)) => gate.pass().await,
                    Some(Piece::Hang) => std::future::pending::<()>().await,
                }
            }
        },
    )
}

async fn completions(
    State(state): State<UpstreamState>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    state
        .requests
        .lock()
        .unwrap()
        .push(Recorded { body, headers, uri });
    let reply = state
        .script
        .lock()
        .unwrap()
        .pop_front()
        .unwrap_or_else(|| Reply::text(&["ok"]));
    respond(reply, state.dropped.clone()).await
}

async fn respond(mut reply: Reply, dropped: Arc<AtomicUsize>) -> Response {
    loop {
        match reply {
            Reply::Delay(d, inner) => {
                tokio::time::sleep(d).await;
                reply = *inner;
            }
            Reply::After(gate, inner) => {
                gate.pass().await;
                reply = *inner;
            }
            Reply::Status(code, text) => {
                return (StatusCode::from_u16(code).unwrap(), text).into_response();
            }
            Reply::StatusWith(code, headers, text) => {
                let mut response = Response::builder().status(code);
                for (name, value) in headers {
                    response = response.header(name, value);
                }
                return response.body(Body::from(text)).unwrap();
            }
            Reply::Sse(pieces) => {
                return Response::builder()
                    .header("content-type", "text/event-stream")
                    .body(Body::from_stream(sse_body(pieces, dropped)))
                    .unwrap();
            }
        }
    }
}

/// Waits until `check` holds, looking every 10 ms, for at most `limit`; returns whether it held.
/// Use it instead of fixed sleeps: a test waits exactly as long as the condition needs.
/// The model's side of a chat that uses tools: the planning reply asks for them, one round
/// calls `calls`, then the answer is `last`.
pub fn tool_round(upstream: &FakeUpstream, calls: &[(&str, &str, Value)], last: &str) {
    upstream.push(Reply::text(&["[NEED_TOOL] go"]));
    upstream.push(Reply::tool_calls(calls));
    upstream.push(Reply::text(&[last]));
}

/// The tool messages of a request, in order.
pub fn tool_results(request: &Recorded) -> Vec<String> {
    request
        .messages()
        .into_iter()
        .filter(|(role, _)| role == "tool")
        .map(|(_, content)| content)
        .collect()
}

/// Runs one chat on a new connection and returns its frames.
pub async fn chat(server: &TestServer, frame: Value) -> Vec<Value> {
    server.connect().await.chat(frame).await
}

pub async fn eventually<F, Fut>(limit: Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if check().await {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Shell for a hook that is slow for as long as a test needs, not for a fixed time: it waits
/// until the test creates the file `release` in the hook's folder (the workspace) with
/// [`TestServer::release`].
pub const UNTIL_RELEASED: &str = "while [ ! -e release ]; do sleep 0.01; done";

// ─── what the server signs and pins, computed independently of it ───

/// HMAC-SHA256 hex of `fields` joined by newlines, as docs/protocol.md §4 and §8 write it.
pub fn mac_hex(secret: &str, fields: &[&str]) -> String {
    use hmac::Mac;
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(fields.join("\n").as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

/// SHA-256 hex of `bytes`: what `trust.json` pins for a file.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

// ─── the hookwire server ───

pub struct TestServer {
    pub addr: std::net::SocketAddr,
    server: Option<RunningServer>,
    pub workspace: tempfile::TempDir,
    /// The server's skills and hook files, to count their reloads.
    pub sources: Sources,
}

/// A config for tests: port 0, a temp workspace, the given upstream (or the demo model).
pub fn test_config(upstream: Option<&FakeUpstream>, workspace: &std::path::Path) -> Config {
    let cli = CliSettings {
        addr: Some("127.0.0.1:0".into()),
        workspace: Some(workspace.to_path_buf()),
        static_dir: Some(std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("static")),
        skills_dir: Some(workspace.join(".no-skills")),
        llm_base_url: upstream.map(|u| u.base_url.clone()),
        llm_api_key: upstream.map(|_| "test-key".to_string()),
        model: Some("fake-model".into()),
        ..Default::default()
    };
    let mut config = Config::resolve(&cli, FileConfig::default(), |_| None).unwrap();
    // The tests assert the request as the agent built it; those about layouts choose theirs.
    config.llm.message_style = hookwire::config::MessageStyleSetting::Openai;
    config
}

/// A step that fills the workspace before the server starts.
type Prepare<'a> = Box<dyn FnOnce(&Path) + 'a>;
/// A change to the config, given the workspace's root.
type Tweak<'a> = Box<dyn FnOnce(&mut Config, &Path) + 'a>;
/// A change to the agent before it is built (hooks, tools).
type AgentTweak<'a> = Box<dyn FnOnce(AgentClientBuilder) -> AgentClientBuilder + 'a>;

/// How a test's server is made, one setting at a time:
/// `TestServer::builder().upstream(&upstream).hooks(yaml).config(|c| …).start().await`.
/// Without an upstream it runs the demo model; without a workspace, in an empty temp folder.
/// Files, hook files and config changes apply in the order they are given.
#[must_use = "a builder starts nothing until `start`"]
pub struct TestServerBuilder<'a> {
    upstream: Option<&'a FakeUpstream>,
    workspace: Option<tempfile::TempDir>,
    prepare: Vec<Prepare<'a>>,
    config: Vec<Tweak<'a>>,
    agent: Vec<AgentTweak<'a>>,
}

impl<'a> TestServerBuilder<'a> {
    /// The model upstream (otherwise, or with `None`, the demo model).
    pub fn upstream(mut self, upstream: impl Into<Option<&'a FakeUpstream>>) -> Self {
        self.upstream = upstream.into();
        self
    }

    /// A workspace the test prepared (otherwise an empty temp folder).
    pub fn workspace(mut self, workspace: tempfile::TempDir) -> Self {
        self.workspace = Some(workspace);
        self
    }

    /// A file in the workspace (its folders made): `name` is relative to the workspace's root.
    pub fn file(self, name: &str, text: impl Into<String>) -> Self {
        let (name, text) = (name.to_string(), text.into());
        self.prepare(move |root| {
            let path = root.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        })
    }

    /// An executable file in the workspace.
    pub fn script(self, name: &str, text: impl Into<String>) -> Self {
        let name = name.to_string();
        self.file(&name, text).prepare(move |root| {
            use std::os::unix::fs::PermissionsExt;
            let executable = std::fs::Permissions::from_mode(0o755);
            std::fs::set_permissions(root.join(name), executable).unwrap();
        })
    }

    /// Anything else the workspace needs, given its root.
    pub fn prepare(mut self, prepare: impl FnOnce(&Path) + 'a) -> Self {
        self.prepare.push(Box::new(prepare));
        self
    }

    /// The server-level hook file: `text` written as `name` in the workspace.
    pub fn hooks_file(self, name: &str, text: &str) -> Self {
        let owned = name.to_string();
        self.file(name, text)
            .config_in(move |c, root| c.hooks_file = Some(root.join(owned)))
    }

    /// The server-level hook file `server-hooks.yaml` in the workspace.
    pub fn hooks(self, yaml: &str) -> Self {
        self.hooks_file("server-hooks.yaml", yaml)
    }

    /// The workspace's own hook files are trusted (the workspace is the test's own).
    pub fn trust_workspace_hooks(self) -> Self {
        self.config(|c| c.trust_workspace_hooks = true)
    }

    /// The skills folder: relative to the workspace's root, or absolute.
    pub fn skills(self, dir: impl AsRef<Path>) -> Self {
        let dir = dir.as_ref().to_path_buf();
        self.config_in(move |c, root| c.skills_dir = root.join(dir))
    }

    /// A change to the config.
    pub fn config(self, tweak: impl FnOnce(&mut Config) + 'a) -> Self {
        self.config_in(move |c, _| tweak(c))
    }

    /// A change to the config that needs the workspace's root.
    pub fn config_in(mut self, tweak: impl FnOnce(&mut Config, &Path) + 'a) -> Self {
        self.config.push(Box::new(tweak));
        self
    }

    /// Hooks or tools added to the agent before it is built.
    pub fn agent(
        mut self,
        tweak: impl FnOnce(AgentClientBuilder) -> AgentClientBuilder + 'a,
    ) -> Self {
        self.agent.push(Box::new(tweak));
        self
    }

    /// Fills the workspace, resolves the config and serves the agent on 127.0.0.1:0.
    pub async fn start(self) -> TestServer {
        let workspace = self
            .workspace
            .unwrap_or_else(|| tempfile::tempdir().unwrap());
        let root = workspace.path();
        for prepare in self.prepare {
            prepare(root);
        }
        let mut config = test_config(self.upstream, root);
        for tweak in self.config {
            tweak(&mut config, root);
        }
        let demo = config.llm.is_demo();
        let parts = agent_parts(&config).unwrap();
        let builder = self
            .agent
            .into_iter()
            .fold(parts.builder, |b, tweak| tweak(b));
        let state = AppState::new(config, builder.build(), demo, parts.sources.clone());
        let server = RunningServer::start(state).await.unwrap();
        TestServer {
            addr: server.addr,
            server: Some(server),
            workspace,
            sources: parts.sources,
        }
    }
}

impl TestServer {
    pub fn builder<'a>() -> TestServerBuilder<'a> {
        TestServerBuilder {
            upstream: None,
            workspace: None,
            prepare: Vec::new(),
            config: Vec::new(),
            agent: Vec::new(),
        }
    }

    /// Lets the hooks waiting in [`UNTIL_RELEASED`] go on.
    pub fn release(&self) {
        std::fs::write(self.workspace.path().join("release"), "").unwrap();
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    pub async fn connect(&self) -> Client {
        let (ws, _) = tokio_tungstenite::connect_async(format!("ws://{}/ws", self.addr))
            .await
            .unwrap();
        Client { ws }
    }

    pub async fn shutdown(mut self) {
        if let Some(server) = self.server.take() {
            server.shutdown().await;
        }
    }
}

/// The first frame of type `kind`.
pub fn frame_of<'a>(frames: &'a [Value], kind: &str) -> &'a Value {
    frames
        .iter()
        .find(|f| f["type"] == kind)
        .unwrap_or_else(|| panic!("no {kind} frame in {frames:#?}"))
}

/// A plain HTTP GET: `(status, body)`.
pub async fn http_get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.unwrap();
    let text = String::from_utf8_lossy(&raw).to_string();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_string()
    };
    (status, body)
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || rest.len() < size {
            break;
        }
        out.push_str(&rest[..size]);
        body = rest[size..].trim_start_matches("\r\n");
    }
    out
}

// ─── the WebSocket client ───

pub struct Client {
    pub ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
}

impl Client {
    pub async fn send(&mut self, frame: Value) {
        self.ws
            .send(WsMessage::text(frame.to_string()))
            .await
            .unwrap();
    }

    pub async fn send_text(&mut self, text: &str) {
        self.ws
            .send(WsMessage::text(text.to_string()))
            .await
            .unwrap();
    }

    /// The next JSON frame (pings skipped); panics after 10 s or if the socket closes.
    pub async fn frame(&mut self) -> Value {
        match self.next_message(Duration::from_secs(10)).await {
            Some(WsMessage::Text(text)) => serde_json::from_str(text.as_str()).unwrap(),
            other => panic!("expected a text frame, got {other:?}"),
        }
    }

    /// The next non-ping message, or None when the stream ends or `limit` passes.
    pub async fn next_message(&mut self, limit: Duration) -> Option<WsMessage> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let message = tokio::time::timeout_at(deadline, self.ws.next())
                .await
                .ok()??
                .ok()?;
            match message {
                WsMessage::Ping(_) | WsMessage::Pong(_) => continue,
                other => return Some(other),
            }
        }
    }

    /// Frames until (and including) the chat's `done` or `error`.
    pub async fn until_end(&mut self) -> Vec<Value> {
        let mut frames = Vec::new();
        loop {
            let frame = self.frame().await;
            let end =
                frame["type"] == "done" || (frame["type"] == "error" && frame.get("id").is_some());
            frames.push(frame);
            if end {
                return frames;
            }
        }
    }

    /// Sends a chat and collects its frames.
    pub async fn chat(&mut self, frame: Value) -> Vec<Value> {
        self.send(frame).await;
        self.until_end().await
    }

    /// The close frame's code, waiting up to `limit`.
    pub async fn close_code(&mut self, limit: Duration) -> Option<u16> {
        match self.next_message(limit).await {
            Some(WsMessage::Close(Some(frame))) => Some(frame.code.into()),
            _ => None,
        }
    }
}

/// The concatenated `text` deltas of a chat's frames.
pub fn text_of(frames: &[Value]) -> String {
    frames
        .iter()
        .filter(|f| f["type"] == "text")
        .filter_map(|f| f["delta"].as_str())
        .collect()
}

/// The frame types, in order.
pub fn types_of(frames: &[Value]) -> Vec<String> {
    let mut types: Vec<String> = Vec::new();
    for frame in frames {
        let kind = frame["type"].as_str().unwrap_or("?").to_string();
        // Consecutive text frames count once, so assertions do not depend on chunking.
        if kind == "text" && types.last().map(String::as_str) == Some("text") {
            continue;
        }
        types.push(kind);
    }
    types
}
