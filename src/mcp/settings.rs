//! What an MCP server is, as configured: the config file's `mcp_servers:` (the operator's) or a
//! trusted workspace's `.mcp.json` (Claude Code's project file). One validation for both, so a
//! server means the same wherever it was written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::process::variables_in;
use crate::types::Problem;

/// The workspace file Claude Code keeps a project's MCP servers in.
pub const PROJECT_FILE: &str = ".mcp.json";

/// One MCP server.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct McpServerSettings {
    /// Its tools are `mcp__<name>__<tool>`: letters, digits, `_` and `-`, no `__`.
    pub name: String,
    pub transport: McpTransport,
    /// `false`: configured, but not started and its tools not offered.
    pub enabled: bool,
    /// How long one tool call may take; `None` = the tool bound (10 s).
    pub timeout: Option<Duration>,
    /// Tools (as the server names them, or `mcp__…` names, or `"*"`) that run without the
    /// person's approval; every other tool of the server waits for it.
    pub auto_approve: Vec<String>,
    pub origin: McpOrigin,
}

/// How hookwire talks to the server.
#[derive(Debug, Clone, PartialEq)]
pub enum McpTransport {
    /// A child process speaking JSON-RPC on its stdin and stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        /// Its whole environment besides `PATH`, `HOME`, `LANG`, `LC_ALL`, `TZ`, `TMPDIR`; values
        /// may name server variables as `${NAME}` (config file only).
        env: BTreeMap<String, String>,
        /// Where it runs; relative to the workspace; `None` = the workspace.
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP at `url`.
    Http {
        url: String,
        /// Sent with every request; values may name server variables as `${NAME}` (config
        /// file only).
        headers: BTreeMap<String, String>,
    },
}

/// Who configured a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpOrigin {
    /// The config file's `mcp_servers:`: the operator's.
    Config,
    /// The workspace's `.mcp.json`, loaded because the workspace trusts it.
    Workspace,
}

impl McpOrigin {
    pub fn as_str(self) -> &'static str {
        match self {
            McpOrigin::Config => "config",
            McpOrigin::Workspace => "workspace",
        }
    }
}

/// A server as written, before validation: the config file's keys (Claude Code's `.mcp.json`
/// keys are a subset).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct McpServerSpec {
    /// `stdio` or `http` (Claude Code also writes `streamable-http`); absent = decided by
    /// `command` or `url`.
    pub kind: Option<String>,
    pub command: Option<String>,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub cwd: Option<PathBuf>,
    pub url: Option<String>,
    pub headers: BTreeMap<String, String>,
    pub enabled: Option<bool>,
    pub timeout: Option<Duration>,
    pub auto_approve: Vec<String>,
}

/// Headers the MCP transport sets itself.
const RESERVED_HEADERS: [&str; 3] = ["accept", "mcp-session-id", "last-event-id"];

/// Why an MCP server's settings are refused (shown with the file and field they came from).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpSettingsError {
    #[error(
        "the server name {0:?} must be letters, digits, `_` and `-` (it is part of its \
         tools' names, mcp__<server>__<tool>)"
    )]
    NameCharacters(String),
    #[error(
        "the server name {0:?} may not contain `__` (it separates the parts of \
         mcp__<server>__<tool>)"
    )]
    NameSeparator(String),
    #[error(
        "the legacy SSE transport is not supported: give the server's \
         streamable HTTP endpoint as `url`"
    )]
    LegacySse,
    #[error("type {0:?} is not a transport hookwire knows (stdio or http)")]
    UnknownTransport(String),
    #[error("give `command` or `url`, not both")]
    CommandAndUrl,
    #[error("give `command` (a stdio server) or `url` (streamable HTTP)")]
    NoCommandOrUrl,
    #[error("type http needs `url`, not `command`")]
    HttpWithCommand,
    #[error("type stdio needs `command`, not `url`")]
    StdioWithUrl,
    #[error("`command` is empty")]
    EmptyCommand,
    #[error("`headers` are for an HTTP server (`url`)")]
    HeadersOnStdio,
    #[error("`args`, `env` and `cwd` are for a stdio server (`command`)")]
    StdioKeysOnHttp,
    #[error("url {0:?} is not an absolute http:// or https:// URL")]
    BadUrl(String),
    #[error("{0:?} is not a valid header name")]
    BadHeaderName(String),
    #[error("the header {0} is set by the MCP transport itself")]
    ReservedHeader(String),
    #[error("auto_approve has an empty name ({0:?}): list tool names, or \"*\"")]
    EmptyAutoApprove(String),
}

impl McpServerSettings {
    /// `spec` checked: a valid name, one transport, and only the keys of that transport.
    pub fn new(
        name: &str,
        spec: McpServerSpec,
        origin: McpOrigin,
    ) -> Result<Self, McpSettingsError> {
        check_name(name)?;
        let kind = spec.kind.as_deref().map(str::to_ascii_lowercase);
        let transport = match (kind.as_deref(), spec.command, spec.url) {
            (Some("sse"), ..) => return Err(McpSettingsError::LegacySse),
            (Some(other), ..) if !matches!(other, "stdio" | "http" | "streamable-http") => {
                return Err(McpSettingsError::UnknownTransport(other.to_string()))
            }
            (_, Some(_), Some(_)) => return Err(McpSettingsError::CommandAndUrl),
            (_, None, None) => return Err(McpSettingsError::NoCommandOrUrl),
            (Some("http" | "streamable-http"), Some(_), None) => {
                return Err(McpSettingsError::HttpWithCommand)
            }
            (Some("stdio"), None, Some(_)) => return Err(McpSettingsError::StdioWithUrl),
            (_, Some(command), None) => {
                if command.trim().is_empty() {
                    return Err(McpSettingsError::EmptyCommand);
                }
                if !spec.headers.is_empty() {
                    return Err(McpSettingsError::HeadersOnStdio);
                }
                McpTransport::Stdio {
                    command,
                    args: spec.args,
                    env: spec.env,
                    cwd: spec.cwd,
                }
            }
            (_, None, Some(url)) => {
                if !spec.args.is_empty() || !spec.env.is_empty() || spec.cwd.is_some() {
                    return Err(McpSettingsError::StdioKeysOnHttp);
                }
                check_url(&url)?;
                for name in spec.headers.keys() {
                    check_header_name(name)?;
                }
                McpTransport::Http {
                    url,
                    headers: spec.headers,
                }
            }
        };
        if let Some(empty) = spec.auto_approve.iter().find(|n| n.trim().is_empty()) {
            return Err(McpSettingsError::EmptyAutoApprove(empty.clone()));
        }
        Ok(Self {
            name: name.to_string(),
            transport,
            enabled: spec.enabled.unwrap_or(true),
            timeout: spec.timeout,
            auto_approve: spec.auto_approve,
            origin,
        })
    }

    /// Whether a call of the server's tool `tool` (as the server names it; `full` is its
    /// `mcp__` name) runs without approval.
    pub fn auto_approves(&self, tool: &str, full: &str) -> bool {
        self.auto_approve
            .iter()
            .any(|name| name == "*" || name == tool || name == full)
    }

    /// The values that may name server variables (`${NAME}`), with what they belong to.
    pub(crate) fn expandable(&self) -> Vec<(String, &str)> {
        match &self.transport {
            McpTransport::Stdio { env, .. } => env
                .iter()
                .map(|(name, value)| (format!("env {name}"), value.as_str()))
                .collect(),
            McpTransport::Http { headers, .. } => headers
                .iter()
                .map(|(name, value)| (format!("header {name}"), value.as_str()))
                .collect(),
        }
    }

    /// What keeps this server from starting in this environment: a `${NAME}` that is not set
    /// (or, in a workspace file, any `${NAME}`: the workspace gets no server variable, as in a
    /// workspace hook's `env:`).
    pub(crate) fn environment_problems(
        &self,
        lookup: &dyn Fn(&str) -> Option<std::ffi::OsString>,
    ) -> Vec<String> {
        let mut problems = Vec::new();
        for (what, value) in self.expandable() {
            let names = match variables_in(value) {
                Ok(names) => names,
                Err(error) => {
                    problems.push(format!("{what}: {error}"));
                    continue;
                }
            };
            if let (Some(first), McpOrigin::Workspace) = (names.first(), self.origin) {
                problems.push(format!(
                    "{what} names a server variable (${{{first}}}); only the config file's \
                     mcp_servers may (move this server there)"
                ));
                continue;
            }
            for name in names {
                if lookup(name).is_none() {
                    problems.push(format!(
                        "{what} names ${{{name}}}, which is not set in the server's environment"
                    ));
                }
            }
        }
        if let McpTransport::Stdio { env, .. } = &self.transport {
            for name in env.keys() {
                if name == crate::process::RUN_MARKER {
                    problems.push(format!("env name {name} is reserved by hookwire"));
                }
            }
        }
        problems
    }

    /// The working directory of a stdio server: its `cwd` against the workspace.
    pub(crate) fn working_dir(&self, workspace: &Path) -> PathBuf {
        match &self.transport {
            McpTransport::Stdio { cwd: Some(cwd), .. } => workspace.join(cwd),
            _ => workspace.to_path_buf(),
        }
    }

    /// One line: what it runs or calls.
    pub fn describe(&self) -> String {
        match &self.transport {
            McpTransport::Stdio { command, args, .. } => {
                let mut line = format!("stdio: {command}");
                for arg in args {
                    line.push(' ');
                    line.push_str(arg);
                }
                line
            }
            McpTransport::Http { url, .. } => format!("http: {url}"),
        }
    }
}

/// Server names become part of tool names, which models allow only `[A-Za-z0-9_-]` in; `__`
/// separates the parts, so a name may not hold it.
fn check_name(name: &str) -> Result<(), McpSettingsError> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(McpSettingsError::NameCharacters(name.to_string()));
    }
    if name.contains("__") {
        return Err(McpSettingsError::NameSeparator(name.to_string()));
    }
    Ok(())
}

fn check_url(url: &str) -> Result<(), McpSettingsError> {
    match reqwest::Url::parse(url) {
        Ok(parsed) if matches!(parsed.scheme(), "http" | "https") && parsed.has_host() => Ok(()),
        _ => Err(McpSettingsError::BadUrl(url.to_string())),
    }
}

fn check_header_name(name: &str) -> Result<(), McpSettingsError> {
    if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
        return Err(McpSettingsError::BadHeaderName(name.to_string()));
    }
    if RESERVED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
        return Err(McpSettingsError::ReservedHeader(name.to_string()));
    }
    Ok(())
}

/// Claude Code's project file: `{"mcpServers": {NAME: {command, args, env} | {type, url,
/// headers}}}`.
#[derive(Debug, Deserialize)]
struct ProjectFile {
    #[serde(rename = "mcpServers", default)]
    mcp_servers: BTreeMap<String, ProjectServer>,
}

#[derive(Debug, Deserialize)]
struct ProjectServer {
    #[serde(rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    /// Keys hookwire does not use (Claude Code's own, or another tool's): shown as warnings.
    #[serde(flatten)]
    other: BTreeMap<String, serde_json::Value>,
}

/// The servers of a `.mcp.json` read as `bytes`, and the problems of each server that cannot
/// be used (it is left out; the others load). `file` is only for the problems.
pub fn parse_project_file(bytes: &[u8], file: &Path) -> (Vec<McpServerSettings>, Vec<Problem>) {
    let parsed: ProjectFile = match serde_json::from_slice(bytes) {
        Ok(parsed) => parsed,
        Err(error) => {
            return (
                Vec::new(),
                vec![Problem::error(format!("not a valid {PROJECT_FILE}: {error}")).in_file(file)],
            )
        }
    };
    let mut servers = Vec::new();
    let mut problems = Vec::new();
    for (name, server) in parsed.mcp_servers {
        let field = format!("mcpServers.{name}");
        for key in server.other.keys() {
            problems.push(
                Problem::warning(format!("{key} is not used by hookwire"))
                    .in_file(file)
                    .in_field(field.clone()),
            );
        }
        let spec = McpServerSpec {
            kind: server.kind,
            command: server.command,
            args: server.args,
            env: server.env,
            cwd: server.cwd,
            url: server.url,
            headers: server.headers,
            ..McpServerSpec::default()
        };
        match McpServerSettings::new(&name, spec, McpOrigin::Workspace) {
            Ok(settings) => servers.push(settings),
            Err(error) => problems.push(
                Problem::error(error.to_string())
                    .in_file(file)
                    .in_field(field),
            ),
        }
    }
    (servers, problems)
}
