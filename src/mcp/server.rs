//! One MCP server while hookwire runs: its supervisor (start, list the tools, follow
//! `tools/list_changed`, restart with back-off after a crash, stop) and its tools as [`Tool`]s.
//!
//! A tool keeps being offered while its server is down (its last known list), and a call then
//! answers `is_error` with the reason: the model learns the tool failed and why, the chat goes
//! on. Calls go through the same bounds as the built-in tools: the call's time limit (the
//! server is told to cancel a call that passes it) and the output cap.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, PoisonError, RwLock, Weak};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{Peer, RoleClient, ServiceError};
use serde_json::Value;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::connection::{connect, plain, Connection, McpError};
use super::content::{output, tool_name};
use super::settings::{McpServerSettings, McpTransport};
use crate::telemetry;
use crate::tools::{Tool, ToolLimits, ToolOutput, ToolSpec};
use crate::types::redact;

/// Connecting, the handshake and the first tool list may take this long (a stdio server may
/// be fetched by its package runner first, as `npx -y` does).
pub(crate) const START_TIMEOUT: Duration = Duration::from_secs(60);
/// A refresh of the tool list after `tools/list_changed` may take this long.
const LIST_TIMEOUT: Duration = Duration::from_secs(30);
/// The first wait before a restart; it doubles with each failure in a row, up to
/// [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// A server that ran this long before it failed starts again with [`FIRST_BACKOFF`].
const STABLE_AFTER: Duration = Duration::from_secs(60);

/// Looks up a variable of the server's own environment.
pub(crate) type Lookup = Arc<dyn Fn(&str) -> Option<OsString> + Send + Sync>;

/// What every server of one hookwire shares.
#[derive(Clone)]
pub(crate) struct McpContext {
    /// The workspace root: where stdio servers run unless their `cwd` says otherwise.
    pub(crate) workspace: PathBuf,
    /// The bounds of a call (the time limit unless the server's `timeout_seconds` says
    /// otherwise; the output cap).
    pub(crate) limits: ToolLimits,
    /// The server's own environment (the passed variables, `${NAME}`s).
    pub(crate) lookup: Lookup,
}

/// Where a server is in its life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Phase {
    /// `enabled: false`.
    Disabled,
    /// Not started yet (the server has not started), or starting.
    Starting,
    Running,
    /// It failed; a restart is due.
    Down(String),
    /// Stopped with the server.
    Stopped,
}

/// Why a server takes no call now (what the call's result says).
#[derive(Debug, thiserror::Error)]
enum Unavailable {
    #[error("the MCP server {0} is down: {1}")]
    Down(String, String),
    #[error("the MCP server {0} is disabled")]
    Disabled(String),
    #[error("the MCP server {0} was stopped")]
    Stopped(String),
    #[error("the MCP server {0} is starting; try again in a moment")]
    Starting(String),
}

impl Phase {
    pub(crate) fn as_str(&self) -> &'static str {
        match self {
            Phase::Disabled => "disabled",
            Phase::Starting => "starting",
            Phase::Running => "running",
            Phase::Down(_) => "down",
            Phase::Stopped => "stopped",
        }
    }
}

struct State {
    phase: Phase,
    /// The live session, while `Running`.
    peer: Option<Peer<RoleClient>>,
    /// Counts the sessions: which one a call went over.
    session: u64,
    /// The last tools listed (kept while the server is down).
    tools: Vec<Arc<McpTool>>,
    /// Tools the server lists that cannot be offered, and why.
    skipped: Vec<String>,
    restarts: u32,
}

/// One configured server.
pub(crate) struct McpServer {
    pub(crate) settings: McpServerSettings,
    context: McpContext,
    state: RwLock<State>,
    tools_changed: Arc<Notify>,
    /// A call found the session broken (an HTTP server that went away says so no other way):
    /// why, for the supervisor to reconnect.
    lost: Notify,
    /// The session the failed call went over (a later session ignores it), and why.
    lost_reason: std::sync::Mutex<(u64, String)>,
    stop: CancellationToken,
}

/// A server's state as `/api/info` and the log show it.
#[derive(Debug, Clone, PartialEq)]
pub struct McpServerStatus {
    pub name: String,
    /// `config` or `workspace`.
    pub origin: &'static str,
    /// `starting`, `running`, `down`, `stopped` or `disabled`.
    pub state: &'static str,
    /// Why it is down.
    pub reason: Option<String>,
    /// Its tools, as the model sees them.
    pub tools: Vec<String>,
    /// Tools it lists that are not offered, and why.
    pub skipped: Vec<String>,
    pub restarts: u32,
}

impl McpServer {
    pub(crate) fn new(settings: McpServerSettings, context: McpContext) -> Arc<Self> {
        let phase = if settings.enabled {
            Phase::Starting
        } else {
            Phase::Disabled
        };
        Arc::new(Self {
            settings,
            context,
            state: RwLock::new(State {
                phase,
                peer: None,
                session: 0,
                tools: Vec::new(),
                skipped: Vec::new(),
                restarts: 0,
            }),
            tools_changed: Arc::new(Notify::new()),
            lost: Notify::new(),
            lost_reason: std::sync::Mutex::new((0, String::new())),
            stop: CancellationToken::new(),
        })
    }

    /// A call over session `session` failed in the transport: that session is gone; the
    /// supervisor reconnects (unless it already has).
    fn lost(&self, session: u64, why: String) {
        *self
            .lost_reason
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = (session, why);
        self.lost.notify_one();
    }

    pub(crate) fn name(&self) -> &str {
        &self.settings.name
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// The tools offered now: the last listed, unless the server is disabled or stopped.
    pub(crate) fn tools(&self) -> Vec<Arc<McpTool>> {
        let state = self.read();
        match state.phase {
            Phase::Disabled | Phase::Stopped => Vec::new(),
            _ => state.tools.clone(),
        }
    }

    pub(crate) fn status(&self) -> McpServerStatus {
        let state = self.read();
        McpServerStatus {
            name: self.settings.name.clone(),
            origin: self.settings.origin.as_str(),
            state: state.phase.as_str(),
            reason: match &state.phase {
                Phase::Down(reason) => Some(reason.clone()),
                _ => None,
            },
            tools: state.tools.iter().map(|t| t.name.clone()).collect(),
            skipped: state.skipped.clone(),
            restarts: state.restarts,
        }
    }

    /// The live session and its number, or why there is none.
    fn peer(&self) -> Result<(Peer<RoleClient>, u64), Unavailable> {
        let state = self.read();
        let name = self.settings.name.clone();
        match (&state.phase, &state.peer) {
            (Phase::Running, Some(peer)) => Ok((peer.clone(), state.session)),
            (Phase::Down(reason), _) => Err(Unavailable::Down(name, reason.clone())),
            (Phase::Disabled, _) => Err(Unavailable::Disabled(name)),
            (Phase::Stopped, _) => Err(Unavailable::Stopped(name)),
            _ => Err(Unavailable::Starting(name)),
        }
    }

    fn set_phase(&self, phase: Phase) {
        let mut state = self.write();
        if phase != Phase::Running {
            state.peer = None;
        }
        state.phase = phase;
    }

    /// Stops the supervisor (and with it the server) at its next step.
    pub(crate) fn stop(&self) {
        self.stop.cancel();
    }

    /// Runs the server until [`McpServer::stop`]: starts it, follows its tool list, and
    /// restarts it with back-off whenever it fails or ends.
    pub(crate) async fn supervise(self: Arc<Self>) {
        let mut backoff = FIRST_BACKOFF;
        loop {
            self.set_phase(Phase::Starting);
            let started = Instant::now();
            let Some(reason) = self.run_once().await else {
                self.set_phase(Phase::Stopped);
                return;
            };
            if started.elapsed() >= STABLE_AFTER {
                backoff = FIRST_BACKOFF;
            }
            let wait = format!("{reason}; restarting in {:.1}s", backoff.as_secs_f64());
            tracing::warn!(server = %self.settings.name, "MCP server down: {wait}");
            // What `/api/info` and a call's result show: no URL's secrets (the log has them).
            self.set_phase(Phase::Down(redact::urls_in(&wait)));
            tokio::select! {
                _ = self.stop.cancelled() => {
                    self.set_phase(Phase::Stopped);
                    return;
                }
                _ = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
            self.write().restarts += 1;
        }
    }

    /// One life of the server: connect, list, serve until it ends. `Some(why)` it ended; `None`
    /// when it was stopped.
    async fn run_once(self: &Arc<Self>) -> Option<String> {
        let start = async {
            let connection = connect(
                &self.settings,
                &self.context.workspace,
                &*self.context.lookup,
                self.tools_changed.clone(),
            )
            .await?;
            let listed = list(&connection.peer).await?;
            Ok::<_, McpError>((connection, listed))
        };
        let stdio = matches!(self.settings.transport, McpTransport::Stdio { .. });
        let span = telemetry::Span::start(
            || "initialize".to_string(),
            telemetry::Kind::Client,
            || telemetry::mcp_start_attributes(&self.settings.name, stdio),
        );
        let started = tokio::select! {
            // Dropping the start kills a stdio server's process group.
            _ = self.stop.cancelled() => return None,
            started = tokio::time::timeout(START_TIMEOUT, span.run(start)) => started,
        };
        if !matches!(started, Ok(Ok(_))) {
            span.error(|| "the MCP server did not start".to_string());
        }
        span.end();
        let (mut connection, listed) = match started {
            Err(_) => return Some(McpError::StartTimeout(START_TIMEOUT.as_secs()).to_string()),
            Ok(Err(reason)) => return Some(reason.to_string()),
            Ok(Ok(started)) => started,
        };
        self.replace_tools(listed);
        let session = {
            let mut state = self.write();
            state.peer = Some(connection.peer.clone());
            state.phase = Phase::Running;
            state.session += 1;
            state.session
        };
        tracing::info!(
            server = %self.settings.name,
            tools = self.read().tools.len(),
            "MCP server running ({})",
            self.settings.describe()
        );
        loop {
            tokio::select! {
                _ = self.stop.cancelled() => {
                    self.set_phase(Phase::Stopped);
                    connection.close().await;
                    return None;
                }
                _ = self.tools_changed.notified() => {
                    match tokio::time::timeout(LIST_TIMEOUT, list(&connection.peer)).await {
                        Ok(Ok(listed)) => {
                            self.replace_tools(listed);
                            tracing::info!(server = %self.settings.name, tools = self.read().tools.len(), "MCP server's tool list changed");
                        }
                        Ok(Err(error)) => tracing::warn!(server = %self.settings.name, "cannot list the changed tools: {error}"),
                        Err(_) => tracing::warn!(server = %self.settings.name, "the changed tool list did not come within {}s", LIST_TIMEOUT.as_secs()),
                    }
                }
                reason = connection.closed() => {
                    self.set_phase(Phase::Starting);
                    return Some(reason);
                }
                _ = self.lost.notified() => {
                    let (lost, why) = self.lost_reason.lock().unwrap_or_else(PoisonError::into_inner).clone();
                    if lost != session {
                        continue; // an earlier session's: this one is new
                    }
                    self.set_phase(Phase::Starting);
                    connection.close().await;
                    return Some(why);
                }
            }
        }
    }

    /// The tools of `listed` as hookwire offers them.
    fn replace_tools(self: &Arc<Self>, listed: Vec<rmcp::model::Tool>) {
        let (tools, skipped) = self.tools_of(listed);
        for why in &skipped {
            tracing::warn!(server = %self.settings.name, "tool not offered: {why}");
        }
        let mut state = self.write();
        state.tools = tools;
        state.skipped = skipped;
    }

    fn tools_of(
        self: &Arc<Self>,
        listed: Vec<rmcp::model::Tool>,
    ) -> (Vec<Arc<McpTool>>, Vec<String>) {
        let server = &self.settings.name;
        let mut tools: Vec<Arc<McpTool>> = Vec::new();
        let mut skipped = Vec::new();
        for tool in listed {
            let Some(name) = tool_name(server, &tool.name) else {
                skipped.push(format!(
                    "{:?}: its name would be longer than {} characters",
                    tool.name,
                    super::content::MAX_TOOL_NAME
                ));
                continue;
            };
            if tools.iter().any(|t| t.name == name) {
                skipped.push(format!(
                    "{:?}: another tool of the server is also called {name}",
                    tool.name
                ));
                continue;
            }
            let approval = (!self.settings.auto_approves(&tool.name, &name)).then(|| {
                format!(
                    "the tools of the MCP server {server} need approval (its auto_approve does \
                     not list {})",
                    tool.name
                )
            });
            tools.push(Arc::new(McpTool {
                spec: ToolSpec {
                    name: name.clone(),
                    description: tool
                        .description
                        .as_deref()
                        .or(tool.title.as_deref())
                        .unwrap_or_default()
                        .to_string(),
                    parameters: Value::Object((*tool.input_schema).clone()),
                },
                name,
                remote: tool.name.to_string(),
                approval,
                timeout: self.settings.timeout.unwrap_or(self.context.limits.timeout),
                max_output_bytes: self.context.limits.max_output_bytes,
                server: Arc::downgrade(self),
            }));
        }
        (tools, skipped)
    }
}

/// Every tool the server lists, page by page.
async fn list(peer: &Peer<RoleClient>) -> Result<Vec<rmcp::model::Tool>, McpError> {
    peer.list_all_tools()
        .await
        .map_err(|error| McpError::ListTools(plain(error)))
}

/// A tool of an MCP server, as the agent sees it.
pub(crate) struct McpTool {
    /// `mcp__<server>__<tool>`.
    pub(crate) name: String,
    spec: ToolSpec,
    /// The name the server knows it by.
    remote: String,
    /// Why its calls wait for approval; `None` when `auto_approve` lists it.
    approval: Option<String>,
    timeout: Duration,
    max_output_bytes: usize,
    /// Weak: the server holds its tools.
    server: Weak<McpServer>,
}

#[async_trait]
impl Tool for McpTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    fn needs_approval(&self) -> Option<String> {
        self.approval.clone()
    }

    async fn run(&self, arguments: Value) -> ToolOutput {
        let Some(server) = self.server.upgrade() else {
            return ToolOutput::error(format!(
                "{} did not run: its MCP server was stopped",
                self.name
            ));
        };
        let arguments = match arguments {
            Value::Object(map) => Some(map),
            Value::Null => None,
            _ => return ToolOutput::error("arguments must be a JSON object"),
        };
        let (peer, session) = match server.peer() {
            Ok(found) => found,
            Err(why) => return ToolOutput::error(format!("{} did not run: {why}", self.name)),
        };
        let mut params = CallToolRequestParams::new(self.remote.clone());
        params.arguments = arguments;
        // Dropping the call (time limit, chat cancelled) sends the server
        // `notifications/cancelled` for it.
        match tokio::time::timeout(self.timeout, peer.call_tool(params)).await {
            Err(_) => ToolOutput::error(format!(
                "{} timed out after {}s (the MCP server {} was told to cancel the call)",
                self.name,
                self.timeout.as_secs_f64(),
                server.name()
            )),
            Ok(Err(error)) => {
                let text = format!(
                    "the MCP server {} failed the call of {}: {}",
                    server.name(),
                    self.remote,
                    redact::urls_in(&plain(&error))
                );
                if matches!(
                    error,
                    ServiceError::TransportSend(_) | ServiceError::TransportClosed
                ) {
                    server.lost(session, format!("a call failed: {}", plain(&error)));
                }
                ToolOutput::error(text)
            }
            Ok(Ok(result)) => output(result, self.max_output_bytes),
        }
    }
}

/// Starts the server once, lists its tools and stops it (`hookwire check --probe`): its tools
/// (name as the model would see it, name as the server knows it, the first line of its
/// description) or why it failed.
pub(crate) async fn probe(
    settings: &McpServerSettings,
    context: &McpContext,
) -> Result<Vec<(String, String, String)>, McpError> {
    let start = async {
        let connection: Connection = connect(
            settings,
            &context.workspace,
            &*context.lookup,
            Arc::new(Notify::new()),
        )
        .await?;
        let listed = list(&connection.peer).await;
        connection.close().await;
        listed
    };
    let listed = tokio::time::timeout(START_TIMEOUT, start)
        .await
        .map_err(|_| McpError::StartTimeout(START_TIMEOUT.as_secs()))??;
    Ok(listed
        .into_iter()
        .map(|tool| {
            let name = tool_name(&settings.name, &tool.name)
                .unwrap_or_else(|| format!("({} cannot be offered: name too long)", tool.name));
            let description = tool.description.as_deref().unwrap_or_default();
            let first_line: String = description.lines().next().unwrap_or_default().to_string();
            let first_line = match first_line.char_indices().nth(100) {
                Some((cut, _)) => format!("{}…", &first_line[..cut]),
                None => first_line,
            };
            (name, tool.name.to_string(), first_line)
        })
        .collect())
}
