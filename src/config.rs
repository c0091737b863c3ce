//! Settings, in one merge: flag, then environment variable, then the YAML config file, then the
//! default (docs/protocol.md §1). clap handles flag-then-env; [`Config::resolve`] adds the file and
//! the defaults.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use serde::Deserialize;

use crate::agent::{prompts, AgentConfig};

/// The command line.
#[derive(Debug, Parser)]
#[command(
    name = "hookwire",
    version,
    about = "A stateless WebSocket chat backend for LLM agents, built around hooks"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub settings: CliSettings,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Subcommand)]
pub enum Command {
    /// Run the server (the default).
    Serve,
    /// Load skills and hook files as `serve` would, print every problem, exit 1 if any error.
    Check,
    /// Show the workspace's hook files and what they run; trust them once confirmed.
    Trust(TrustArgs),
}

/// `hookwire trust [--workspace DIR] [--yes | --list | --revoke]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Args)]
pub struct TrustArgs {
    /// Trust the files shown without asking (needed when stdin is not a terminal).
    #[arg(long, conflicts_with_all = ["list", "revoke"])]
    pub yes: bool,
    /// Show every trusted workspace and its files.
    #[arg(long, conflicts_with = "revoke")]
    pub list: bool,
    /// Forget the workspace: its hook files stop loading.
    #[arg(long)]
    pub revoke: bool,
}

/// Flags, each with its environment variable (clap resolves flag before env).
#[derive(Debug, Default, Clone, Args)]
pub struct CliSettings {
    /// YAML config file.
    #[arg(long, env = "HOOKWIRE_CONFIG", global = true)]
    pub config: Option<PathBuf>,
    /// Listen address (port 0 = pick a free port).
    #[arg(long, env = "HOOKWIRE_ADDR", global = true)]
    pub addr: Option<String>,
    /// Skill folders.
    #[arg(long, env = "HOOKWIRE_SKILLS_DIR", global = true)]
    pub skills_dir: Option<PathBuf>,
    /// Root that the file tools may read; nothing outside it.
    #[arg(long, env = "HOOKWIRE_WORKSPACE", global = true)]
    pub workspace: Option<PathBuf>,
    /// The browser page.
    #[arg(long, env = "HOOKWIRE_STATIC_DIR", global = true)]
    pub static_dir: Option<PathBuf>,
    /// OpenAI-compatible API root (else OPENAI_BASE_URL).
    #[arg(long, env = "HOOKWIRE_LLM_BASE_URL", global = true)]
    pub llm_base_url: Option<String>,
    /// Bearer token (else OPENAI_API_KEY).
    #[arg(
        long,
        env = "HOOKWIRE_LLM_API_KEY",
        global = true,
        hide_env_values = true
    )]
    pub llm_api_key: Option<String>,
    /// Model name sent upstream.
    #[arg(long, env = "HOOKWIRE_MODEL", global = true)]
    pub model: Option<String>,
    /// Seconds the upstream may stay silent before the chat fails.
    #[arg(long, env = "HOOKWIRE_LLM_TIMEOUT", global = true)]
    pub llm_timeout: Option<f64>,
    /// `text` or `json`; the level comes from RUST_LOG.
    #[arg(long, env = "HOOKWIRE_LOG_FORMAT", global = true)]
    pub log_format: Option<LogFormat>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// The config file. Unknown keys are an error, so typos do not pass silently.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    pub addr: Option<String>,
    pub skills_dir: Option<PathBuf>,
    pub workspace: Option<PathBuf>,
    pub static_dir: Option<PathBuf>,
    pub llm_base_url: Option<String>,
    pub llm_api_key: Option<String>,
    pub model: Option<String>,
    pub llm_timeout: Option<f64>,
    pub llm_connect_timeout: Option<f64>,
    pub secret: Option<String>,
    pub log_format: Option<LogFormat>,
    /// Skills enabled when a chat names none; unset = every skill that loaded.
    pub default_skills: Option<Vec<String>>,
    /// `Origin`s a browser request may come from; unset = the same origin only.
    pub allowed_origins: Option<Vec<String>>,
    /// `Host` names the server answers; unset = loopback names when bound to loopback, else any.
    pub allowed_hosts: Option<Vec<String>>,
    /// The token `/ws`, `/api/*` and `/metrics` need (else `HOOKWIRE_AUTH_TOKEN`).
    pub auth_token: Option<String>,
    /// Trust every workspace hook file without review (else `HOOKWIRE_TRUST_WORKSPACE_HOOKS`).
    pub trust_workspace_hooks: Option<bool>,
    /// Where `trust.json` lives (else `HOOKWIRE_STATE_DIR`, `$XDG_STATE_HOME/hookwire`,
    /// `~/.local/state/hookwire`).
    pub state_dir: Option<PathBuf>,
    #[serde(default)]
    pub session_hooks: SessionHooksFile,
    #[serde(default)]
    pub http_hooks: HttpHooksFile,
    /// The server-level hook file (else `HOOKWIRE_HOOKS`, else `hooks.yaml` beside this file).
    pub hooks: Option<PathBuf>,
    /// Let the model register `command` session hooks too (default: only `llm`).
    pub allow_session_command_hooks: Option<bool>,
    /// Named agents that `agent` hooks may ask (`agent: NAME`; seed 004).
    #[serde(default)]
    pub hook_agents: std::collections::BTreeMap<String, HookAgent>,
    #[serde(default)]
    pub planning: PlanningFile,
    #[serde(default)]
    pub prompts: PromptsFile,
    #[serde(default)]
    pub limits: LimitsFile,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionHooksFile {
    pub enabled: Option<bool>,
    pub ttl_seconds: Option<f64>,
    pub max_per_chat: Option<usize>,
}

/// A hook agent: a bounded sub-run of the agent loop (read-only tools, no hooks) with its own
/// system prompt and, optionally, model and rounds.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookAgent {
    pub system_prompt: Option<String>,
    pub model: Option<String>,
    /// Agent rounds (default 4).
    pub max_steps: Option<usize>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpHooksFile {
    pub allowed_urls: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanningFile {
    pub marker: Option<String>,
    pub prompt: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptsFile {
    pub system: Option<String>,
    pub first_step: Option<String>,
    pub each_step: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsFile {
    pub max_message_bytes: Option<usize>,
    pub max_history_messages: Option<usize>,
    pub max_input_chars: Option<usize>,
    pub max_steps: Option<usize>,
    pub max_retries: Option<usize>,
    pub max_connections: Option<usize>,
    pub shutdown_grace_seconds: Option<f64>,
    pub ping_interval_seconds: Option<f64>,
    pub idle_timeout_seconds: Option<f64>,
    pub hook_chain_timeout_seconds: Option<f64>,
    pub write_stall_seconds: Option<f64>,
    pub max_frame_bytes: Option<usize>,
    pub max_tool_calls_per_round: Option<usize>,
    pub header_read_timeout_seconds: Option<f64>,
    pub max_pending_connections: Option<usize>,
}

/// Limits of the chat protocol.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// Largest WebSocket message after reassembly (larger → close 1009).
    pub max_message_bytes: usize,
    pub max_history_messages: usize,
    /// Longest `input`, in Unicode scalar values.
    pub max_input_chars: usize,
    /// Open WebSocket sessions (more → HTTP 503 before the upgrade).
    pub max_connections: usize,
    /// How long running chats get to end on shutdown before their sockets close with 1001.
    pub shutdown_grace: Duration,
    /// The server pings this often.
    pub ping_interval: Duration,
    /// A connection that sends nothing (pongs included) this long is closed with 1001.
    pub idle_timeout: Duration,
    /// Time the hooks of one event (a chain) may take in all.
    pub hook_chain_timeout: Duration,
    /// A connection whose writes make no progress this long is closed (1008) and its chat
    /// cancelled: a client that stops reading cannot hold a session.
    pub write_stall: Duration,
    /// Largest outgoing frame: hook- and tool-supplied fields are cut (with a marker) to fit,
    /// long text deltas are split.
    pub max_frame_bytes: usize,
    /// How long a client may take to send the request headers before the socket is closed.
    pub header_read_timeout: Duration,
    /// Connections accepted but not yet upgraded (or answered); more wait in the kernel backlog.
    pub max_pending_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_message_bytes: 1024 * 1024,
            max_history_messages: 1000,
            max_input_chars: 100_000,
            max_connections: 10_000,
            shutdown_grace: Duration::from_secs(10),
            ping_interval: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(90),
            hook_chain_timeout: crate::hooks::external::runner::DEFAULT_CHAIN_BUDGET,
            write_stall: Duration::from_secs(30),
            max_frame_bytes: 1024 * 1024,
            header_read_timeout: Duration::from_secs(10),
            max_pending_connections: 1024,
        }
    }
}

/// Where the model comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmSettings {
    /// `None` with no key either = the demo model.
    pub base_url: Option<String>,
    pub api_key: Option<String>,
    pub connect_timeout: Duration,
    /// Silence allowed before the first byte and between events.
    pub idle_timeout: Duration,
}

impl LlmSettings {
    pub fn is_demo(&self) -> bool {
        self.base_url.is_none() && self.api_key.is_none()
    }

    /// The API root to call: the configured one, or OpenAI's when only a key is set.
    pub fn effective_base_url(&self) -> Option<String> {
        match (&self.base_url, &self.api_key) {
            (Some(url), _) => Some(url.clone()),
            (None, Some(_)) => Some("https://api.openai.com/v1".into()),
            (None, None) => None,
        }
    }
}

/// Every setting, resolved.
#[derive(Debug, Clone)]
pub struct Config {
    pub addr: String,
    pub skills_dir: PathBuf,
    pub workspace: PathBuf,
    pub static_dir: PathBuf,
    pub llm: LlmSettings,
    pub log_format: LogFormat,
    pub default_skills: Option<Vec<String>>,
    /// `Origin`s a browser request may come from; `None` = the same origin only.
    pub allowed_origins: Option<Vec<String>>,
    /// `Host` names the server answers; `None` = loopback names on a loopback bind, else any.
    pub allowed_hosts: Option<Vec<String>>,
    /// The bearer token of `/ws`, `/api/*` and `/metrics`.
    pub auth_token: Option<String>,
    /// Every workspace hook file loads without review (the workspace is the operator's own).
    pub trust_workspace_hooks: bool,
    /// Where `trust.json` is kept; `None` when no home or state folder is known (then no
    /// workspace hook file is trusted unless `trust_workspace_hooks`).
    pub state_dir: Option<PathBuf>,
    pub session_hooks: SessionHookSettings,
    /// URL prefixes that workspace-level http hooks may call (none by default).
    pub http_hook_urls: Vec<String>,
    pub limits: Limits,
    /// The agent's settings (model name, prompts, marker, steps, secret, workspace).
    pub agent: AgentConfig,
    /// The config file used, if any (server-level hook files live beside it).
    pub config_file: Option<PathBuf>,
    /// The server-level hook file, if there is one.
    pub hooks_file: Option<PathBuf>,
    pub allow_session_command_hooks: bool,
    /// The agents `agent` hooks may name.
    pub hook_agents: std::collections::BTreeMap<String, HookAgent>,
}

/// What the model may do with `register_hook` (README "Security model").
#[derive(Debug, Clone, PartialEq)]
pub struct SessionHookSettings {
    /// `false` removes the `register_hook` tool.
    pub enabled: bool,
    /// How long a registered hook stays valid (its `expires_at`, covered by the signature).
    pub ttl: Duration,
    /// Session hooks one chat runs at most; more are ignored with a notice.
    pub max_per_chat: usize,
}

impl Default for SessionHookSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            ttl: Duration::from_secs(24 * 60 * 60),
            max_per_chat: 16,
        }
    }
}

/// A setting that could not be used, or a config file that could not be read; the message names
/// the setting (or the file) and why.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Not YAML, a wrong type, an unknown key.
    #[error("config file {}: {source}", path.display())]
    Parse {
        path: PathBuf,
        // Boxed: the parser's error is large, and every `Result` of the merge would carry it.
        source: Box<serde_saphyr::Error>,
    },
    #[error("{setting} must be a positive number of seconds, got {value}")]
    NotSeconds { setting: &'static str, value: f64 },
    #[error("{setting} must be at least {min}")]
    TooSmall { setting: &'static str, min: usize },
    #[error("{setting} must not be empty")]
    Empty { setting: &'static str },
    /// A setting that is not `true`/`false`, or a list that is not comma-separated names.
    #[error("{setting} must be {expected}, got {value:?}")]
    Invalid {
        setting: &'static str,
        expected: &'static str,
        value: String,
    },
    /// Settings that are each fine but unsafe together.
    #[error("{0}")]
    Unsafe(&'static str),
}

impl ConfigError {
    /// The setting that is wrong (`limits.max_steps`); `None` when the file itself is.
    pub fn setting(&self) -> Option<&'static str> {
        match self {
            ConfigError::Read { .. } | ConfigError::Parse { .. } => None,
            ConfigError::NotSeconds { setting, .. }
            | ConfigError::TooSmall { setting, .. }
            | ConfigError::Empty { setting }
            | ConfigError::Invalid { setting, .. } => Some(setting),
            ConfigError::Unsafe(_) => None,
        }
    }
}

/// `value` must be at least `min`.
fn at_least(setting: &'static str, value: usize, min: usize) -> Result<(), ConfigError> {
    if value < min {
        return Err(ConfigError::TooSmall { setting, min });
    }
    Ok(())
}

/// `http_hooks.allowed_urls`: each entry an absolute http(s) URL, so a typo is an error at start
/// rather than an entry that silently allows nothing.
fn allowed_urls(entries: Vec<String>) -> Result<Vec<String>, ConfigError> {
    for entry in &entries {
        let parsed = reqwest::Url::parse(entry);
        if !matches!(&parsed, Ok(url) if matches!(url.scheme(), "http" | "https") && url.has_host())
        {
            return Err(ConfigError::Invalid {
                setting: "http_hooks.allowed_urls",
                expected: "absolute http:// or https:// URLs",
                value: entry.clone(),
            });
        }
    }
    Ok(entries)
}

/// `a, b,,c` → `["a", "b", "c"]`.
fn comma_list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(String::from)
        .collect()
}

fn boolean(setting: &'static str, value: &str) -> Result<bool, ConfigError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(ConfigError::Invalid {
            setting,
            expected: "true or false",
            value: value.to_string(),
        }),
    }
}

fn seconds(setting: &'static str, value: f64) -> Result<Duration, ConfigError> {
    if !value.is_finite() || value <= 0.0 || value > 86_400.0 * 365.0 {
        return Err(ConfigError::NotSeconds { setting, value });
    }
    Ok(Duration::from_secs_f64(value))
}

impl Config {
    /// Reads the config file named by the flags (if any) and merges everything.
    pub fn load(cli: &CliSettings) -> Result<Self, ConfigError> {
        let file = match &cli.config {
            Some(path) => Self::read_file(path)?,
            None => FileConfig::default(),
        };
        // Raw values: an empty `HOOKWIRE_SECRET` must be seen to be refused.
        Self::resolve(cli, file, |name| std::env::var(name).ok())
    }

    pub fn read_file(path: &Path) -> Result<FileConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let options = serde_saphyr::options! { strict_booleans: true };
        serde_saphyr::from_str_with_options(&text, options).map_err(|source| ConfigError::Parse {
            path: path.to_path_buf(),
            source: Box::new(source),
        })
    }

    /// The merge: `cli` (flag, then env, from clap) → `file` → defaults. `env` looks up the
    /// variables that are not flags of their own (`OPENAI_*`, `HOOKWIRE_SECRET`, …); an empty
    /// value counts as unset, except for the secret, where it is refused.
    pub fn resolve(
        cli: &CliSettings,
        file: FileConfig,
        raw_env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let env = |name: &str| raw_env(name).filter(|v| !v.is_empty());
        let secret = raw_env("HOOKWIRE_SECRET").or(file.secret.clone());
        if secret.as_deref() == Some("") {
            return Err(ConfigError::Empty { setting: "secret" });
        }
        let allow_session_command_hooks = file.allow_session_command_hooks.unwrap_or(false);
        if allow_session_command_hooks && secret.is_none() {
            return Err(ConfigError::Unsafe(
                "allow_session_command_hooks needs a secret (HOOKWIRE_SECRET): without one any \
                 client could send a command hook of its own and run it",
            ));
        }
        let list_env = |name: &'static str| env(name).map(|v| comma_list(&v));
        let trust_workspace_hooks = match env("HOOKWIRE_TRUST_WORKSPACE_HOOKS") {
            Some(value) => boolean("HOOKWIRE_TRUST_WORKSPACE_HOOKS", &value)?,
            None => file.trust_workspace_hooks.unwrap_or(false),
        };
        let state_dir = env("HOOKWIRE_STATE_DIR")
            .map(PathBuf::from)
            .or(file.state_dir.clone())
            .or_else(|| env("XDG_STATE_HOME").map(|d| PathBuf::from(d).join("hookwire")))
            .or_else(|| env("HOME").map(|h| PathBuf::from(h).join(".local/state/hookwire")));
        let session_defaults = SessionHookSettings::default();
        let session_hooks = SessionHookSettings {
            enabled: file
                .session_hooks
                .enabled
                .unwrap_or(session_defaults.enabled),
            ttl: file
                .session_hooks
                .ttl_seconds
                .map(|v| seconds("session_hooks.ttl_seconds", v))
                .transpose()?
                .unwrap_or(session_defaults.ttl),
            max_per_chat: file
                .session_hooks
                .max_per_chat
                .unwrap_or(session_defaults.max_per_chat),
        };
        let auth_token = env("HOOKWIRE_AUTH_TOKEN").or(file.auth_token.clone());
        if auth_token.as_deref().is_some_and(|t| t.trim().is_empty()) {
            return Err(ConfigError::Empty {
                setting: "auth_token",
            });
        }
        let llm_timeout = cli
            .llm_timeout
            .or(file.llm_timeout)
            .map(|v| seconds("llm_timeout", v))
            .transpose()?;
        let connect_timeout = file
            .llm_connect_timeout
            .map(|v| seconds("llm_connect_timeout", v))
            .transpose()?;
        let defaults = Limits::default();
        let limits = Limits {
            max_message_bytes: file
                .limits
                .max_message_bytes
                .unwrap_or(defaults.max_message_bytes),
            max_history_messages: file
                .limits
                .max_history_messages
                .unwrap_or(defaults.max_history_messages),
            max_input_chars: file
                .limits
                .max_input_chars
                .unwrap_or(defaults.max_input_chars),
            max_connections: file
                .limits
                .max_connections
                .unwrap_or(defaults.max_connections),
            shutdown_grace: match file.limits.shutdown_grace_seconds {
                Some(v) => seconds("limits.shutdown_grace_seconds", v)?,
                None => defaults.shutdown_grace,
            },
            ping_interval: match file.limits.ping_interval_seconds {
                Some(v) => seconds("limits.ping_interval_seconds", v)?,
                None => defaults.ping_interval,
            },
            idle_timeout: match file.limits.idle_timeout_seconds {
                Some(v) => seconds("limits.idle_timeout_seconds", v)?,
                None => defaults.idle_timeout,
            },
            hook_chain_timeout: match file.limits.hook_chain_timeout_seconds {
                Some(v) => seconds("limits.hook_chain_timeout_seconds", v)?,
                None => defaults.hook_chain_timeout,
            },
            write_stall: match file.limits.write_stall_seconds {
                Some(v) => seconds("limits.write_stall_seconds", v)?,
                None => defaults.write_stall,
            },
            max_frame_bytes: file
                .limits
                .max_frame_bytes
                .unwrap_or(defaults.max_frame_bytes),
            header_read_timeout: match file.limits.header_read_timeout_seconds {
                Some(v) => seconds("limits.header_read_timeout_seconds", v)?,
                None => defaults.header_read_timeout,
            },
            max_pending_connections: file
                .limits
                .max_pending_connections
                .unwrap_or(defaults.max_pending_connections),
        };
        at_least("limits.max_message_bytes", limits.max_message_bytes, 1024)?;
        at_least("limits.max_frame_bytes", limits.max_frame_bytes, 4096)?;
        at_least(
            "limits.max_pending_connections",
            limits.max_pending_connections,
            1,
        )?;
        at_least("limits.max_connections", limits.max_connections, 1)?;
        let workspace = cli
            .workspace
            .clone()
            .or(file.workspace)
            .unwrap_or_else(|| PathBuf::from("."));
        let agent_defaults = AgentConfig::default();
        let agent = AgentConfig {
            model: cli
                .model
                .clone()
                .or(file.model)
                .unwrap_or(agent_defaults.model),
            system_prompt: file.prompts.system.unwrap_or(agent_defaults.system_prompt),
            planning_prompt: file
                .planning
                .prompt
                .unwrap_or(agent_defaults.planning_prompt),
            marker: file
                .planning
                .marker
                .unwrap_or_else(|| prompts::DEFAULT_MARKER.into()),
            first_step_prompt: file
                .prompts
                .first_step
                .unwrap_or(agent_defaults.first_step_prompt),
            each_step_prompt: file
                .prompts
                .each_step
                .unwrap_or(agent_defaults.each_step_prompt),
            max_steps: file.limits.max_steps.unwrap_or(agent_defaults.max_steps),
            max_retries: file
                .limits
                .max_retries
                .unwrap_or(agent_defaults.max_retries),
            max_tool_calls_per_round: file
                .limits
                .max_tool_calls_per_round
                .unwrap_or(agent_defaults.max_tool_calls_per_round),
            hook_timeout: limits.hook_chain_timeout,
            workspace: workspace.clone(),
            secret,
        };
        at_least(
            "limits.max_tool_calls_per_round",
            agent.max_tool_calls_per_round,
            1,
        )?;
        at_least("limits.max_steps", agent.max_steps, 1)?;
        if agent.marker.trim().is_empty() {
            return Err(ConfigError::Empty {
                setting: "planning.marker",
            });
        }
        Ok(Config {
            addr: cli
                .addr
                .clone()
                .or(file.addr)
                .unwrap_or_else(|| "127.0.0.1:8080".into()),
            skills_dir: cli
                .skills_dir
                .clone()
                .or(file.skills_dir)
                .unwrap_or_else(|| PathBuf::from("./skills")),
            workspace,
            static_dir: cli
                .static_dir
                .clone()
                .or(file.static_dir)
                .unwrap_or_else(|| PathBuf::from("./static")),
            llm: LlmSettings {
                base_url: cli
                    .llm_base_url
                    .clone()
                    .or_else(|| env("OPENAI_BASE_URL"))
                    .or(file.llm_base_url),
                api_key: cli
                    .llm_api_key
                    .clone()
                    .or_else(|| env("OPENAI_API_KEY"))
                    .or(file.llm_api_key),
                connect_timeout: connect_timeout.unwrap_or(Duration::from_secs(10)),
                idle_timeout: llm_timeout.unwrap_or(Duration::from_secs(60)),
            },
            log_format: cli.log_format.or(file.log_format).unwrap_or_default(),
            default_skills: file.default_skills,
            allowed_origins: list_env("HOOKWIRE_ALLOWED_ORIGINS").or(file.allowed_origins),
            allowed_hosts: list_env("HOOKWIRE_ALLOWED_HOSTS").or(file.allowed_hosts),
            auth_token,
            trust_workspace_hooks,
            state_dir,
            session_hooks,
            http_hook_urls: allowed_urls(file.http_hooks.allowed_urls.unwrap_or_default())?,
            limits,
            agent,
            hooks_file: env("HOOKWIRE_HOOKS")
                .map(PathBuf::from)
                .or(file.hooks)
                .or_else(|| {
                    let beside = cli.config.as_ref()?.parent()?.join("hooks.yaml");
                    beside.is_file().then_some(beside)
                }),
            allow_session_command_hooks,
            hook_agents: file.hook_agents,
            config_file: cli.config.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn file(yaml: &str) -> FileConfig {
        let options = serde_saphyr::options! { strict_booleans: true };
        match serde_saphyr::from_str_with_options(yaml, options) {
            Ok(file) => file,
            Err(e) => panic!("bad test yaml: {e}"),
        }
    }

    #[test]
    fn defaults_match_the_protocol() {
        let config =
            Config::resolve(&CliSettings::default(), FileConfig::default(), no_env).unwrap();
        assert_eq!(config.addr, "127.0.0.1:8080");
        assert_eq!(config.skills_dir, PathBuf::from("./skills"));
        assert_eq!(config.agent.model, "gpt-4o-mini");
        assert_eq!(config.llm.idle_timeout, Duration::from_secs(60));
        assert_eq!(config.llm.connect_timeout, Duration::from_secs(10));
        assert_eq!(config.agent.marker, "[NEED_TOOL]");
        assert_eq!(config.agent.max_steps, 8);
        assert!(config.llm.is_demo());
        assert_eq!(config.limits, Limits::default());
        assert_eq!(config.allowed_origins, None);
        assert_eq!(config.allowed_hosts, None);
        assert_eq!(config.auth_token, None);
        assert!(!config.trust_workspace_hooks);
        assert_eq!(config.state_dir, None, "no HOME, no XDG_STATE_HOME");
        assert_eq!(config.session_hooks, SessionHookSettings::default());
        assert!(config.http_hook_urls.is_empty());
    }

    #[test]
    fn trust_settings_come_from_env_then_file() {
        let env = |name: &str| {
            let value = match name {
                "HOOKWIRE_ALLOWED_ORIGINS" => "https://a.example, https://b.example,",
                "HOOKWIRE_ALLOWED_HOSTS" => "chat.example",
                "HOOKWIRE_AUTH_TOKEN" => "tok",
                "HOOKWIRE_TRUST_WORKSPACE_HOOKS" => "true",
                "XDG_STATE_HOME" => "/state",
                "HOME" => "/home/me",
                _ => return None,
            };
            Some(value.to_string())
        };
        let yaml = "allowed_origins: [https://file.example]\nauth_token: file-token\n\
                    session_hooks: {enabled: false, ttl_seconds: 60, max_per_chat: 2}\n\
                    http_hooks: {allowed_urls: ['http://127.0.0.1:9/']}\n";
        let config = Config::resolve(&CliSettings::default(), file(yaml), env).unwrap();
        assert_eq!(
            config.allowed_origins,
            Some(vec!["https://a.example".into(), "https://b.example".into()])
        );
        assert_eq!(config.allowed_hosts, Some(vec!["chat.example".into()]));
        assert_eq!(config.auth_token.as_deref(), Some("tok"));
        assert!(config.trust_workspace_hooks);
        assert_eq!(config.state_dir, Some(PathBuf::from("/state/hookwire")));
        assert!(!config.session_hooks.enabled);
        assert_eq!(config.session_hooks.ttl, Duration::from_secs(60));
        assert_eq!(config.session_hooks.max_per_chat, 2);
        assert_eq!(
            config.http_hook_urls,
            vec!["http://127.0.0.1:9/".to_string()]
        );
        let home_only = |name: &str| (name == "HOME").then(|| "/home/me".to_string());
        let config = Config::resolve(&CliSettings::default(), file(yaml), home_only).unwrap();
        assert_eq!(
            config.state_dir,
            Some(PathBuf::from("/home/me/.local/state/hookwire"))
        );
        assert_eq!(config.auth_token.as_deref(), Some("file-token"));
        let error = Config::resolve(
            &CliSettings::default(),
            file("http_hooks: {allowed_urls: ['127.0.0.1:9/hook']}\n"),
            no_env,
        );
        assert_eq!(
            error.unwrap_err().setting(),
            Some("http_hooks.allowed_urls")
        );
        let bad = |name: &str| (name == "HOOKWIRE_TRUST_WORKSPACE_HOOKS").then(|| "maybe".into());
        let error = Config::resolve(&CliSettings::default(), FileConfig::default(), bad);
        assert!(error.unwrap_err().to_string().contains("true or false"));
    }

    #[test]
    fn unsafe_secrets_and_tokens_are_refused() {
        let empty_env = |name: &str| (name == "HOOKWIRE_SECRET").then(String::new);
        let error = Config::resolve(&CliSettings::default(), FileConfig::default(), empty_env);
        assert_eq!(error.unwrap_err().setting(), Some("secret"));
        let error = Config::resolve(&CliSettings::default(), file("secret: ''\n"), no_env);
        assert_eq!(error.unwrap_err().setting(), Some("secret"));
        let error = Config::resolve(&CliSettings::default(), file("auth_token: ' '\n"), no_env);
        assert_eq!(error.unwrap_err().setting(), Some("auth_token"));
        let commands = "allow_session_command_hooks: true\n";
        let error = Config::resolve(&CliSettings::default(), file(commands), no_env)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("allow_session_command_hooks needs a secret"),
            "{error}"
        );
        let with_secret = format!("{commands}secret: k\n");
        assert!(Config::resolve(&CliSettings::default(), file(&with_secret), no_env).is_ok());
    }

    #[test]
    fn flag_beats_file_beats_default() {
        let cli = CliSettings {
            model: Some("from-flag".into()),
            ..Default::default()
        };
        let config =
            Config::resolve(&cli, file("model: from-file\naddr: 127.0.0.1:9\n"), no_env).unwrap();
        assert_eq!(config.agent.model, "from-flag");
        assert_eq!(config.addr, "127.0.0.1:9");
    }

    #[test]
    fn openai_env_is_the_fallback_for_base_url_and_key() {
        let env = |name: &str| match name {
            "OPENAI_BASE_URL" => Some("http://127.0.0.1:1/v1".to_string()),
            "OPENAI_API_KEY" => Some("sk-env".to_string()),
            _ => None,
        };
        let config = Config::resolve(
            &CliSettings::default(),
            file("llm_base_url: http://file/v1\n"),
            env,
        )
        .unwrap();
        assert_eq!(
            config.llm.base_url.as_deref(),
            Some("http://127.0.0.1:1/v1")
        );
        assert_eq!(config.llm.api_key.as_deref(), Some("sk-env"));
        let cli = CliSettings {
            llm_base_url: Some("http://flag/v1".into()),
            ..Default::default()
        };
        let config = Config::resolve(&cli, FileConfig::default(), env).unwrap();
        assert_eq!(config.llm.base_url.as_deref(), Some("http://flag/v1"));
    }

    #[test]
    fn key_without_url_means_openai() {
        let cli = CliSettings {
            llm_api_key: Some("sk".into()),
            ..Default::default()
        };
        let config = Config::resolve(&cli, FileConfig::default(), no_env).unwrap();
        assert!(!config.llm.is_demo());
        assert_eq!(
            config.llm.effective_base_url().as_deref(),
            Some("https://api.openai.com/v1")
        );
    }

    #[test]
    fn file_sections_are_read_and_unknown_keys_refused() {
        let config = Config::resolve(
            &CliSettings::default(),
            file("planning:\n  marker: '<<TOOLS>>'\nlimits:\n  max_steps: 3\n  hook_chain_timeout_seconds: 2.5\ndefault_skills: [a, b]\n"),
            no_env,
        )
        .unwrap();
        assert_eq!(config.agent.marker, "<<TOOLS>>");
        assert_eq!(config.agent.max_steps, 3);
        assert_eq!(
            config.limits.hook_chain_timeout,
            Duration::from_millis(2500)
        );
        assert_eq!(
            config.default_skills,
            Some(vec!["a".to_string(), "b".to_string()])
        );
        let options = serde_saphyr::options! { strict_booleans: true };
        let bad: Result<FileConfig, _> = serde_saphyr::from_str_with_options("modle: x\n", options);
        assert!(bad.is_err());
    }

    #[test]
    fn bad_timeouts_are_refused_with_the_setting_named() {
        let cli = CliSettings {
            llm_timeout: Some(-1.0),
            ..Default::default()
        };
        let error = Config::resolve(&cli, FileConfig::default(), no_env).unwrap_err();
        assert!(
            matches!(
                error,
                ConfigError::NotSeconds {
                    setting: "llm_timeout",
                    value: -1.0
                }
            ),
            "{error:?}"
        );
        assert_eq!(
            error.to_string(),
            "llm_timeout must be a positive number of seconds, got -1"
        );
        let error = Config::resolve(
            &CliSettings::default(),
            file("limits:\n  hook_chain_timeout_seconds: 0\n"),
            no_env,
        )
        .unwrap_err();
        assert_eq!(error.setting(), Some("limits.hook_chain_timeout_seconds"));
        assert!(
            error
                .to_string()
                .contains("limits.hook_chain_timeout_seconds"),
            "{error}"
        );
    }

    #[test]
    fn limits_below_their_minimum_are_refused_with_the_same_text() {
        let cases = [
            (
                "limits:\n  max_message_bytes: 10\n",
                "limits.max_message_bytes must be at least 1024",
            ),
            (
                "limits:\n  max_frame_bytes: 10\n",
                "limits.max_frame_bytes must be at least 4096",
            ),
            (
                "limits:\n  max_pending_connections: 0\n",
                "limits.max_pending_connections must be at least 1",
            ),
            (
                "limits:\n  max_connections: 0\n",
                "limits.max_connections must be at least 1",
            ),
            (
                "limits:\n  max_tool_calls_per_round: 0\n",
                "limits.max_tool_calls_per_round must be at least 1",
            ),
            (
                "limits:\n  max_steps: 0\n",
                "limits.max_steps must be at least 1",
            ),
            (
                "planning:\n  marker: '  '\n",
                "planning.marker must not be empty",
            ),
        ];
        for (yaml, shown) in cases {
            let error = Config::resolve(&CliSettings::default(), file(yaml), no_env).unwrap_err();
            assert_eq!(error.to_string(), shown);
            assert!(error.setting().is_some_and(|s| shown.starts_with(s)));
        }
    }

    #[test]
    fn file_errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.yaml");
        let error = Config::read_file(&missing).unwrap_err();
        assert!(matches!(error, ConfigError::Read { .. }), "{error:?}");
        assert!(error
            .to_string()
            .starts_with(&format!("cannot read config file {}: ", missing.display())));
        let typo = dir.path().join("typo.yaml");
        std::fs::write(&typo, "modle: x\n").unwrap();
        let error = Config::read_file(&typo).unwrap_err();
        assert!(matches!(error, ConfigError::Parse { .. }), "{error:?}");
        assert!(error
            .to_string()
            .starts_with(&format!("config file {}: ", typo.display())));
        assert_eq!(error.setting(), None);
    }
}
