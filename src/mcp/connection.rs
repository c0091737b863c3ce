//! One live connection to an MCP server, made with the official SDK (`rmcp`): a stdio server is
//! a child process hookwire starts itself (only `process::PASSED_VARIABLES` and what `env:`
//! names in its environment, its own
//! process group, everything it leaves killed: as a command hook's), whose pipes `rmcp` speaks
//! over; an HTTP server is reached over streamable HTTP with hookwire's own HTTP client (no
//! redirects followed). Knows nothing of restarts or tools: the supervisor's job.

use std::collections::{HashMap, VecDeque};
use std::ffi::OsString;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::{NotificationContext, Peer, QuitReason, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ServiceExt};
use tokio::io::AsyncReadExt;
use tokio::sync::Notify;

use super::settings::{McpServerSettings, McpTransport};
use crate::process::expand;
use crate::process::{plain_environment, ServerChild};

/// Lines of a stdio server's stderr kept to say why it ended.
const STDERR_LINES: usize = 5;
/// A stderr line longer than this is cut (a server cannot make hookwire buffer without bound).
const STDERR_LINE_BYTES: usize = 500;
/// How long a stdio server gets to exit by itself once its stdin is closed, before its process
/// group is killed.
const EXIT_GRACE: Duration = Duration::from_secs(2);
/// Connecting to an HTTP server may take this long.
const HTTP_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// What the client side of the protocol does with what a server sends unasked: a changed tool
/// list wakes the supervisor; log messages go to the log.
struct Handler {
    server: String,
    tools_changed: Arc<Notify>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        // The handshake's newest version: a server that lists tools sends `tools/list_changed`
        // on the session it opened (2026-07-28 would need a subscription for it).
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("hookwire", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::debug!(server = %self.server, "the MCP server's tool list changed");
        self.tools_changed.notify_one();
    }

    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        tracing::debug!(server = %self.server, level = ?params.level, data = %params.data, "MCP server log");
    }
}

/// The end of a connection, as a future (the SDK's service task); fused: `closed` may be
/// dropped and called again after it ended.
type Ended = futures::future::Fuse<
    Pin<Box<dyn Future<Output = Result<QuitReason, tokio::task::JoinError>> + Send>>,
>;

/// A server connected and initialized.
pub(crate) struct Connection {
    /// Calls go through this (cheap to clone).
    pub(crate) peer: Peer<RoleClient>,
    /// Ends the SDK's service (which closes the transport: a stdio server's stdin).
    cancel: Option<rmcp::service::RunningServiceCancellationToken>,
    ended: Ended,
    /// How the SDK's service ended, once it did.
    quit: Option<String>,
    /// A stdio server's process; `None` for HTTP.
    child: Option<ServerChild>,
    stderr: Arc<StderrTail>,
    /// The server's name, for the log.
    server: String,
}

/// The last lines a stdio server wrote on stderr.
#[derive(Default)]
pub(crate) struct StderrTail(Mutex<VecDeque<String>>);

impl StderrTail {
    fn push(&self, line: &str) {
        let mut lines = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if lines.len() == STDERR_LINES {
            lines.pop_front();
        }
        lines.push_back(line.to_string());
    }

    /// The last lines, `; `-joined; empty when there are none.
    fn last(&self) -> String {
        let lines = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        lines.iter().cloned().collect::<Vec<_>>().join("; ")
    }
}

/// Why an MCP server could not be started, reached or listed (the server's status and
/// `hookwire check --probe` show it).
#[derive(Debug, thiserror::Error)]
pub(crate) enum McpError {
    /// Its command could not be started.
    #[error(transparent)]
    Spawn(#[from] crate::process::ProcessError),
    #[error("{0} has no stdin or stdout")]
    NoPipes(String),
    /// The handshake failed: why, and how the process ended when it did.
    #[error("the handshake failed: {0}{SEE_THE_LOG}")]
    Handshake(String),
    #[error("{0:?} is not a valid header name")]
    HeaderName(String),
    #[error("the header {0} has a value a header cannot hold")]
    HeaderValue(String),
    #[error("cannot make the HTTP client: {0}")]
    HttpClient(#[source] reqwest::Error),
    #[error("cannot connect to {url}: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("cannot list its tools: {0}")]
    ListTools(String),
    #[error("it did not start within {0}s")]
    StartTimeout(u64),
}

/// Starts (stdio) or reaches (HTTP) the server and initializes the session. `lookup` is the
/// server's environment (`${NAME}`s, the passed variables); `workspace` the folder a stdio
/// server runs in unless its `cwd` says otherwise.
pub(crate) async fn connect(
    settings: &McpServerSettings,
    workspace: &Path,
    lookup: &(dyn Fn(&str) -> Option<OsString> + Send + Sync),
    tools_changed: Arc<Notify>,
) -> Result<Connection, McpError> {
    let handler = Handler {
        server: settings.name.clone(),
        tools_changed,
    };
    let text = |name: &str| lookup(name).map(|value| value.to_string_lossy().into_owned());
    match &settings.transport {
        McpTransport::Stdio {
            command, args, env, ..
        } => {
            let env = plain_environment(lookup, env);
            let cwd = settings.working_dir(workspace);
            let mut child = ServerChild::spawn(command, args, &env, &cwd)?;
            let stderr = Arc::new(StderrTail::default());
            let mut stderr_reader = child
                .stderr
                .take()
                .map(|pipe| tokio::spawn(read_stderr(pipe, settings.name.clone(), stderr.clone())));
            let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
                return Err(McpError::NoPipes(command.clone()));
            };
            // The child is dropped (its group killed) if the handshake fails.
            let service = match handler.serve((stdout, stdin)).await {
                Ok(service) => service,
                Err(error) => {
                    let mut reason = plain(error);
                    if let Ok(Ok(status)) =
                        tokio::time::timeout(Duration::from_millis(500), child.wait()).await
                    {
                        reason.push_str(&format!("; {command} {}", exit_text(status)));
                        // It exited: its stderr ends too; what it said is read to the end
                        // before it is quoted (not raced).
                        if let Some(reader) = stderr_reader.as_mut() {
                            let _ = tokio::time::timeout(Duration::from_millis(500), reader).await;
                        }
                    }
                    log_stderr(&settings.name, &stderr);
                    return Err(McpError::Handshake(reason));
                }
            };
            Ok(Connection::new(
                service,
                Some(child),
                stderr,
                &settings.name,
            ))
        }
        McpTransport::Http { url, headers } => {
            let mut custom = HashMap::new();
            for (name, value) in headers {
                let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                    .map_err(|_| McpError::HeaderName(name.clone()))?;
                let value = reqwest::header::HeaderValue::from_str(&expand(value, &text))
                    .map_err(|_| McpError::HeaderValue(name.to_string()))?;
                custom.insert(name, value);
            }
            let client = http_client()?;
            let config =
                StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(custom);
            let transport = StreamableHttpClientTransport::with_client(client, config);
            let service =
                handler
                    .serve(transport)
                    .await
                    .map_err(|error| McpError::Unreachable {
                        url: url.to_string(),
                        reason: plain(error),
                    })?;
            Ok(Connection::new(
                service,
                None,
                Arc::default(),
                &settings.name,
            ))
        }
    }
}

/// The HTTP client of HTTP servers: redirects are not followed (as for http hooks: a server
/// cannot send the headers, which may hold a token, somewhere else).
fn http_client() -> Result<reqwest::Client, McpError> {
    // reqwest without a default TLS provider panics on its first client without this.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(HTTP_CONNECT_TIMEOUT)
        .build()
        .map_err(McpError::HttpClient)
}

impl Connection {
    fn new(
        service: RunningService<RoleClient, Handler>,
        child: Option<ServerChild>,
        stderr: Arc<StderrTail>,
        server: &str,
    ) -> Self {
        let peer = service.peer().clone();
        let cancel = Some(service.cancellation_token());
        Self {
            peer,
            cancel,
            ended: futures::FutureExt::fuse(Box::pin(service.waiting()) as Pin<Box<_>>),
            quit: None,
            child,
            stderr,
            server: server.to_string(),
        }
    }

    /// Waits until the connection ends by itself (the process exited, the transport closed),
    /// and says why. May be dropped and called again.
    pub(crate) async fn closed(&mut self) -> String {
        use futures::future::FusedFuture;
        let reason = match self.child.as_mut() {
            Some(child) => {
                let mut exited = None;
                if !self.ended.is_terminated() {
                    tokio::select! {
                        status = child.wait() => exited = Some(status),
                        _ = &mut self.ended => {}
                    }
                }
                let status = match exited {
                    Some(status) => Some(status),
                    // Its stdout closed: it usually exited too; say how, if it did.
                    None => tokio::time::timeout(Duration::from_millis(500), child.wait())
                        .await
                        .ok(),
                };
                match status {
                    Some(Ok(status)) => format!("the process {}", exit_text(status)),
                    Some(Err(error)) => format!("the process could not be waited for: {error}"),
                    None => "it closed its stdout".to_string(),
                }
            }
            None => {
                if !self.ended.is_terminated() {
                    let quit = (&mut self.ended).await;
                    self.quit = Some(match quit {
                        Ok(QuitReason::Closed) => "the connection closed".to_string(),
                        Ok(other) => format!("the connection ended ({other:?})"),
                        Err(error) => format!("the connection failed: {error}"),
                    });
                }
                self.quit.clone().unwrap_or_default()
            }
        };
        if self.child.is_none() {
            return reason;
        }
        log_stderr(&self.server, &self.stderr);
        format!("{reason}{SEE_THE_LOG}")
    }

    /// Closes the session: a stdio server's stdin is closed and it gets [`EXIT_GRACE`] to exit,
    /// then its process group is killed.
    pub(crate) async fn close(mut self) {
        if let Some(cancel) = self.cancel.take() {
            cancel.cancel();
        }
        let _ = tokio::time::timeout(EXIT_GRACE, &mut self.ended).await;
        if let Some(mut child) = self.child.take() {
            let _ = tokio::time::timeout(EXIT_GRACE, child.wait()).await;
            // Dropped: whatever is left of its group is killed.
        }
    }
}

/// An SDK error for people: without the Rust type names it carries (`Transport [rmcp::…]`).
pub(crate) fn plain(error: impl std::fmt::Display) -> String {
    let mut text = error.to_string();
    while let Some(start) = text.find("[rmcp::") {
        let Some(length) = text[start..].find("] ") else {
            break;
        };
        text.replace_range(start..start + length + 2, "");
    }
    text
}

/// What a stdio server's end says instead of its stderr: a server may print anything there (its
/// token too), and `/api/info` and the model see the reason; the log is the operator's.
const SEE_THE_LOG: &str = "; see the server log";

/// A stdio server's last stderr lines, to the log only (at `warn`: it ended).
fn log_stderr(server: &str, stderr: &StderrTail) {
    let last = stderr.last();
    if !last.is_empty() {
        tracing::warn!(server = %server, "MCP server's last stderr lines: {last}");
    }
}

/// `exited with status 1`, `was killed by signal 9`.
fn exit_text(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(signal)) => format!("was killed by signal {signal}"),
        (None, None) => format!("ended ({status})"),
    }
}

/// Logs a stdio server's stderr line by line (at `debug`: servers write banners there) and
/// keeps the last lines to say why it ended. Lines are cut at [`STDERR_LINE_BYTES`].
async fn read_stderr(mut pipe: tokio::process::ChildStderr, server: String, tail: Arc<StderrTail>) {
    let mut buffer = [0u8; 4096];
    let mut line: Vec<u8> = Vec::new();
    let emit = |line: &mut Vec<u8>| {
        let text = String::from_utf8_lossy(line);
        let text = text.trim_end();
        if !text.is_empty() {
            tracing::debug!(server = %server, "MCP server stderr: {text}");
            tail.push(&crate::trust::printable(text));
        }
        line.clear();
    };
    loop {
        let read = match pipe.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(read) => read,
        };
        for byte in &buffer[..read] {
            if *byte == b'\n' {
                emit(&mut line);
            } else if line.len() < STDERR_LINE_BYTES {
                line.push(*byte);
            }
        }
    }
    emit(&mut line);
}
