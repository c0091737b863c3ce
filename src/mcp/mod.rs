//! Tools from MCP servers (the Model Context Protocol), through the official Rust SDK (`rmcp`).
//!
//! Servers come from the config file's `mcp_servers:` (the operator's) and from the
//! workspace's `.mcp.json` (Claude Code's project file), which is read only when the workspace
//! trusts exactly its bytes (`hookwire trust`, as for workspace hook files). Their tools reach
//! the agent as `mcp__<server>__<tool>` through a [`ToolSource`]: from there they are tools like
//! any other, so their calls go through the same `pre/post_tool_execution` hooks, the per-round
//! cap, the bounds and the approval flow — where they wait for the person's approval unless the
//! server's `auto_approve` lists them ([`Tool::needs_approval`](crate::tools::Tool)).
//!
//! One job a module:
//! - `settings`: what a server is, as configured; `.mcp.json`;
//! - `connection`: one live session (a stdio child started like a command hook, or streamable
//!   HTTP);
//! - `server`: each server's supervisor (start in the background, follow `tools/list_changed`,
//!   restart with back-off, stop with the server) and its tools;
//! - `content`: tool names and results as the model sees them.
//!
//! What this does not do: read `.mcp.json` again while the server runs (a change, or a trust
//! given later, takes a restart), offer MCP resources or prompts, or answer a server's sampling
//! and elicitation requests (declined).

mod connection;
mod content;
mod server;
mod settings;
#[cfg(test)]
mod tests;

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::task::JoinHandle;

pub(crate) use connection::McpError;
pub use server::McpServerStatus;
pub use settings::{
    parse_project_file, McpOrigin, McpServerSettings, McpServerSpec, McpSettingsError,
    McpTransport, PROJECT_FILE,
};

use crate::tools::{Tool, ToolLimits, ToolSource};
use crate::trust::{TrustPolicy, Untrusted};
use crate::types::Problem;
use server::{McpContext, McpServer};

/// How long a shutdown waits for the servers to close (a stdio server gets its stdin closed,
/// then a grace period, then its process group is killed).
const SHUTDOWN_LIMIT: Duration = Duration::from_secs(5);

/// The servers `serve` would run, and what kept others out.
#[derive(Debug, Default)]
pub(crate) struct Configured {
    /// The config file's servers, then the trusted `.mcp.json`'s (in name order each).
    pub(crate) servers: Vec<McpServerSettings>,
    /// `.mcp.json`, when it was left out because the workspace does not trust it.
    pub(crate) untrusted: Option<Untrusted>,
    /// Servers left out (and why), and what is ignored.
    pub(crate) problems: Vec<Problem>,
}

/// The servers of `config_servers` (the config file's; `config_file` only names it in
/// problems) and of the workspace's `.mcp.json` if `trust` trusts it. A server that cannot
/// run in this environment (a `${NAME}` not set, or any in the workspace's file) is left out
/// with an error; a stdio command not found on `PATH` is a warning (it may be installed later).
pub(crate) fn configured(
    config_servers: &[McpServerSettings],
    config_file: Option<&Path>,
    workspace: &Path,
    trust: &TrustPolicy,
    lookup: &dyn Fn(&str) -> Option<OsString>,
) -> Configured {
    let mut out = Configured::default();
    let mut names: BTreeSet<String> = BTreeSet::new();
    let mut candidates: Vec<(McpServerSettings, Option<PathBuf>, String)> = config_servers
        .iter()
        .map(|s| {
            (
                s.clone(),
                config_file.map(Path::to_path_buf),
                format!("mcp_servers.{}", s.name),
            )
        })
        .collect();
    let project = workspace.join(PROJECT_FILE);
    match crate::reload::read_small_file(&project) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => out
            .problems
            .push(Problem::error(format!("cannot read: {error}")).in_file(&project)),
        Ok(bytes) => match trust.current().check(&project, Some(&bytes)) {
            Err(untrusted) => out.untrusted = Some(untrusted),
            Ok(()) => {
                let (servers, problems) = parse_project_file(&bytes, &project);
                out.problems.extend(problems);
                candidates.extend(servers.into_iter().map(|s| {
                    let field = format!("mcpServers.{}", s.name);
                    (s, Some(project.clone()), field)
                }));
            }
        },
    }
    for (server, file, field) in candidates {
        let located = |problem: Problem| {
            let problem = problem.in_field(field.clone());
            match &file {
                Some(file) => problem.in_file(file),
                None => problem,
            }
        };
        if !names.insert(server.name.clone()) {
            out.problems.push(located(Problem::warning(format!(
                "the config file's mcp_servers already has a server {}; this one is left out",
                server.name
            ))));
            continue;
        }
        let problems = server.environment_problems(lookup);
        if !problems.is_empty() {
            for problem in problems {
                out.problems.push(located(Problem::error(format!(
                    "{problem}; the server is left out"
                ))));
            }
            continue;
        }
        if let McpTransport::Stdio { command, .. } = &server.transport {
            if server.enabled && !command_exists(command, &server.working_dir(workspace), lookup) {
                out.problems.push(located(Problem::warning(format!(
                    "{command} is not found on the PATH the server gets; it will fail to start"
                ))));
            }
        }
        out.servers.push(server);
    }
    out
}

/// Whether `command` names a program: a path (against `cwd`), or a file in one of `PATH`'s
/// folders.
fn command_exists(command: &str, cwd: &Path, lookup: &dyn Fn(&str) -> Option<OsString>) -> bool {
    if command.contains('/') {
        return cwd.join(command).is_file();
    }
    let Some(path) = lookup("PATH") else {
        return false;
    };
    std::env::split_paths(&path).any(|folder| folder.join(command).is_file())
}

/// The running MCP servers of one hookwire: a [`ToolSource`] of their tools. Dropping it stops
/// every server (their process groups are killed).
pub struct McpServers {
    servers: Vec<Arc<McpServer>>,
    untrusted: Option<Untrusted>,
    started: AtomicBool,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    /// Each start of a server is a trace of its own (a stdio server gets its `TRACEPARENT`).
    telemetry: crate::telemetry::Telemetry,
}

impl McpServers {
    /// The servers of `configured`, not started yet. `workspace` is where stdio servers run.
    pub(crate) fn new(configured: Configured, workspace: &Path) -> Self {
        let context = McpContext {
            workspace: workspace.to_path_buf(),
            limits: ToolLimits::default(),
            lookup: Arc::new(crate::process::server_variable),
        };
        for problem in &configured.problems {
            tracing::warn!("{}", problem.labelled());
        }
        if let Some(untrusted) = &configured.untrusted {
            tracing::warn!(
                "workspace MCP file {} was not loaded: {}",
                crate::trust::printable(&untrusted.shown),
                untrusted.why()
            );
        }
        Self {
            servers: configured
                .servers
                .into_iter()
                .map(|settings| McpServer::new(settings, context.clone()))
                .collect(),
            untrusted: configured.untrusted,
            started: AtomicBool::new(false),
            tasks: Mutex::new(Vec::new()),
            telemetry: crate::telemetry::Telemetry::off(),
        }
    }

    /// The servers' starts exported as traces by `telemetry`.
    pub(crate) fn with_telemetry(mut self, telemetry: crate::telemetry::Telemetry) -> Self {
        self.telemetry = telemetry;
        self
    }

    /// Starts every enabled server in the background (once): nothing waits for a server to
    /// answer. Needs a tokio runtime.
    pub fn start(&self) {
        if self.started.swap(true, Ordering::SeqCst) {
            return;
        }
        let mut tasks = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
        for server in &self.servers {
            if server.settings.enabled {
                let supervise = server.clone().supervise();
                tasks.push(tokio::spawn(self.telemetry.run_outside_chats(supervise)));
            }
        }
    }

    /// Stops every server and waits (a few seconds at most) until they are closed.
    pub async fn shutdown(&self) {
        for server in &self.servers {
            server.stop();
        }
        let tasks: Vec<JoinHandle<()>> =
            std::mem::take(&mut *self.tasks.lock().unwrap_or_else(PoisonError::into_inner));
        let aborts: Vec<_> = tasks.iter().map(JoinHandle::abort_handle).collect();
        if tokio::time::timeout(SHUTDOWN_LIMIT, futures::future::join_all(tasks))
            .await
            .is_err()
        {
            tracing::warn!(
                "MCP servers still closing after {}s; killed",
                SHUTDOWN_LIMIT.as_secs()
            );
            for abort in aborts {
                abort.abort();
            }
        }
    }

    /// Each server's state and tools.
    pub fn status(&self) -> Vec<McpServerStatus> {
        self.servers.iter().map(|server| server.status()).collect()
    }

    /// `.mcp.json` (workspace-relative), when it was left out because it is not trusted.
    pub fn untrusted_files(&self) -> Vec<String> {
        self.untrusted.iter().map(|u| u.shown.clone()).collect()
    }
}

impl Drop for McpServers {
    fn drop(&mut self) {
        for server in &self.servers {
            server.stop();
        }
        // Aborting drops each connection, which kills a stdio server's process group.
        for task in self
            .tasks
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .drain(..)
        {
            task.abort();
        }
    }
}

impl ToolSource for McpServers {
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.servers
            .iter()
            .flat_map(|server| server.tools())
            .map(|tool| tool as Arc<dyn Tool>)
            .collect()
    }

    fn tool(&self, name: &str) -> Option<Arc<dyn Tool>> {
        let rest = name.strip_prefix("mcp__")?;
        self.servers
            .iter()
            .filter(|server| rest.starts_with(&format!("{}__", server.name())))
            .flat_map(|server| server.tools())
            .find(|tool| tool.name == name)
            .map(|tool| tool as Arc<dyn Tool>)
    }
}

/// Starts `settings`' server once, lists its tools and stops it (`hookwire check --probe`):
/// each tool's name as the model would see it, its name on the server and the first line of
/// its description, or why it failed. `workspace` is where a stdio server runs.
pub(crate) async fn probe(
    settings: &McpServerSettings,
    workspace: &Path,
) -> Result<Vec<(String, String, String)>, McpError> {
    let context = McpContext {
        workspace: workspace.to_path_buf(),
        limits: ToolLimits::default(),
        lookup: Arc::new(crate::process::server_variable),
    };
    server::probe(settings, &context).await
}
