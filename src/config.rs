//! Settings, in one merge: flag, then environment variable, then the YAML config file, then the
//! default (docs/protocol.md §1). clap handles flag-then-env; [`Config::resolve`] adds the file and
//! the defaults.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::agent::{
    prompts, AgentConfig, ApprovalSettings, ContextSettings, Planning, RetryPolicy,
};
use crate::llm::MessageStyle;
use crate::mcp::{McpOrigin, McpServerSettings, McpServerSpec};

mod cli;
mod file;

pub use cli::{CheckArgs, Cli, CliSettings, Command, HooksCommand, LogFormat, Provider, TrustArgs};
pub use file::{
    ContextFile, FileConfig, HookAgent, HttpHooksFile, LimitsFile, McpServerFile,
    MessageStyleSetting, PlanningFile, PlanningSetting, PromptsFile, SessionHooksFile,
    UpstreamFile,
};

/// OpenAI's API root: the base URL when only a key is set.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
/// Anthropic's API root (the client adds `/v1/messages`).
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";
/// The model of `provider: anthropic` when none is named.
pub const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";
/// `upstream.max_tokens` when unset.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

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
    /// Runs of `async: true` hooks waiting for a worker; a run that finds the queue full is
    /// dropped (counted in `hookwire_async_hook_drops_total`).
    pub async_hook_queue: usize,
    /// Of those, the runs one connection may hold; more from it are dropped (or wait, for a
    /// hook with `on_full: wait`).
    pub async_hook_queue_per_connection: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_message_bytes: 1024 * 1024,
            max_history_messages: 1000,
            max_input_chars: 100_000,
            max_connections: 10_000,
            shutdown_grace: Duration::from_secs(30),
            ping_interval: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(90),
            hook_chain_timeout: crate::hooks::external::runner::DEFAULT_CHAIN_BUDGET,
            write_stall: Duration::from_secs(30),
            max_frame_bytes: 1024 * 1024,
            header_read_timeout: Duration::from_secs(10),
            max_pending_connections: 1024,
            async_hook_queue: crate::hooks::external::DEFAULT_QUEUE,
            async_hook_queue_per_connection: crate::hooks::external::DEFAULT_QUEUE_PER_CONNECTION,
        }
    }
}

/// Where the model comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmSettings {
    /// The API the model speaks.
    pub provider: Provider,
    /// `None` with no key either = the demo model.
    pub base_url: Option<String>,
    pub api_key: Option<String>,
    pub connect_timeout: Duration,
    /// Silence allowed before the first byte and between events.
    pub idle_timeout: Duration,
    /// `upstream.message_style` as set; [`LlmSettings::message_style`] resolves `auto`.
    pub message_style: MessageStyleSetting,
    /// `upstream.system_role`: whether the model's template has a system role (strict only).
    pub system_role: bool,
    /// `upstream.max_tokens`: the reply's limit, sent to Anthropic (which requires one).
    pub max_tokens: u32,
}

impl Default for LlmSettings {
    fn default() -> Self {
        Self {
            provider: Provider::default(),
            base_url: None,
            api_key: None,
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            message_style: MessageStyleSetting::default(),
            system_role: true,
            max_tokens: DEFAULT_MAX_TOKENS,
        }
    }
}

impl LlmSettings {
    pub fn is_demo(&self) -> bool {
        self.base_url.is_none() && self.api_key.is_none()
    }

    /// The API root to call: the configured one, or the provider's own when only a key is set.
    pub fn effective_base_url(&self) -> Option<String> {
        match (&self.base_url, &self.api_key) {
            (Some(url), _) => Some(url.clone()),
            (None, Some(_)) => Some(match self.provider {
                Provider::Openai => OPENAI_BASE_URL.into(),
                Provider::Anthropic => ANTHROPIC_BASE_URL.into(),
            }),
            (None, None) => None,
        }
    }

    /// How OpenAI-compatible requests are laid out: `auto` decided by the base URL.
    pub fn message_style(&self) -> MessageStyle {
        let strict = MessageStyle::Strict {
            system_role: self.system_role,
        };
        match self.message_style {
            MessageStyleSetting::Openai => MessageStyle::OpenAi,
            MessageStyleSetting::Strict => strict,
            MessageStyleSetting::Auto => match self.effective_base_url() {
                Some(url) => MessageStyle::auto(&url, self.system_role),
                None => MessageStyle::OpenAi,
            },
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
    /// The bearer token of `/api/hooks` and `/metrics` when set (then `auth_token` no longer
    /// opens them): what the operator sees, apart from what every chat user may.
    pub admin_token: Option<String>,
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
    /// The config file's MCP servers, in name order (a trusted workspace's `.mcp.json` adds
    /// its own when the server starts).
    pub mcp_servers: Vec<McpServerSettings>,
    /// `voice:`: speech synthesis and transcription, when configured.
    pub voice: crate::voice::VoiceSettings,
    /// OpenTelemetry export (off unless an endpoint is set).
    pub telemetry: crate::telemetry::TelemetrySettings,
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
#[non_exhaustive]
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
    /// A setting that needs another one that is not there; the text says which and where.
    #[error("{what}")]
    Missing {
        setting: &'static str,
        what: &'static str,
    },
    /// Settings that are each fine but unsafe together.
    #[error("{0}")]
    Unsafe(&'static str),
    /// An entry of `mcp_servers` that cannot be used.
    #[error("mcp_servers.{name}: {reason}")]
    McpServer { name: String, reason: String },
}

impl ConfigError {
    /// The setting that is wrong (`limits.max_steps`); `None` when the file itself is.
    pub fn setting(&self) -> Option<&'static str> {
        match self {
            ConfigError::Read { .. } | ConfigError::Parse { .. } => None,
            ConfigError::NotSeconds { setting, .. }
            | ConfigError::TooSmall { setting, .. }
            | ConfigError::Empty { setting }
            | ConfigError::Invalid { setting, .. }
            | ConfigError::Missing { setting, .. } => Some(setting),
            ConfigError::Unsafe(_) => None,
            ConfigError::McpServer { .. } => Some("mcp_servers"),
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

/// `context:`: a window of at least one token, a threshold in (0, 1], at least one round kept.
fn context_settings(file: file::ContextFile) -> Result<ContextSettings, ConfigError> {
    let defaults = ContextSettings::default();
    if let Some(window) = file.window_tokens {
        at_least(
            "context.window_tokens",
            usize::try_from(window).unwrap_or(usize::MAX),
            1,
        )?;
    }
    let compact_threshold = file.compact_threshold.unwrap_or(defaults.compact_threshold);
    if !(compact_threshold > 0.0 && compact_threshold <= 1.0) {
        return Err(ConfigError::Invalid {
            setting: "context.compact_threshold",
            expected: "a fraction of the window above 0 and at most 1",
            value: compact_threshold.to_string(),
        });
    }
    let micro_threshold = file.micro_threshold.unwrap_or(defaults.micro_threshold);
    if !(micro_threshold > 0.0 && micro_threshold <= 1.0) {
        return Err(ConfigError::Invalid {
            setting: "context.micro_threshold",
            expected: "a fraction of the window above 0 and at most 1",
            value: micro_threshold.to_string(),
        });
    }
    let micro_keep_rounds = file.micro_keep_rounds.unwrap_or(defaults.micro_keep_rounds);
    at_least("context.micro_keep_rounds", micro_keep_rounds, 1)?;
    let keep_recent_groups = file
        .keep_recent_groups
        .unwrap_or(defaults.keep_recent_groups);
    let summary_prompt = match file.summary_prompt {
        Some(prompt) if prompt.trim().is_empty() => {
            return Err(ConfigError::Invalid {
                setting: "context.summary_prompt",
                expected: "the instructions of the summary call (leave it out for the default)",
                value: "an empty text".into(),
            })
        }
        Some(prompt) => prompt,
        None => defaults.summary_prompt,
    };
    Ok(ContextSettings {
        window_tokens: file.window_tokens,
        compact_threshold,
        micro_threshold,
        micro_keep_rounds,
        keep_recent_groups,
        summary_prompt,
    })
}

/// `tools.require_approval` and `approval:`.
fn approval_settings(
    tools: file::ToolsFile,
    approval: file::ApprovalFile,
) -> Result<ApprovalSettings, ConfigError> {
    let defaults = ApprovalSettings::default();
    let mut settings = ApprovalSettings {
        require_approval: tools
            .require_approval
            .map(file::OneOrMany::into_vec)
            .unwrap_or(defaults.require_approval),
        ..ApprovalSettings::default()
    };
    if let Some(empty) = settings
        .require_approval
        .iter()
        .find(|n| n.trim().is_empty())
    {
        return Err(ConfigError::Invalid {
            setting: "tools.require_approval",
            expected: "tool names, or \"*\" for every tool",
            value: format!("{empty:?}"),
        });
    }
    settings.ttl = match approval.ttl_seconds {
        Some(v) => seconds("approval.ttl_seconds", v)?,
        None => defaults.ttl,
    };
    Ok(settings)
}

/// `upstream.retries`, `.max_retry_wait_seconds`, `.fallback_models`.
fn retry_policy(upstream: &file::UpstreamFile) -> Result<RetryPolicy, ConfigError> {
    let defaults = RetryPolicy::default();
    let fallback_models = upstream.fallback_models.clone().unwrap_or_default();
    if let Some(empty) = fallback_models.iter().find(|m| m.trim().is_empty()) {
        return Err(ConfigError::Invalid {
            setting: "upstream.fallback_models",
            expected: "model names",
            value: format!("{empty:?}"),
        });
    }
    Ok(RetryPolicy {
        retries: upstream.retries.unwrap_or(defaults.retries),
        max_wait: match upstream.max_retry_wait_seconds {
            Some(v) => seconds("upstream.max_retry_wait_seconds", v)?,
            None => defaults.max_wait,
        },
        fallback_models,
    })
}

/// `mcp_servers:`: each entry checked as a server (one transport and its keys, a name that fits
/// in tool names, a positive timeout).
fn mcp_servers(
    entries: std::collections::BTreeMap<String, McpServerFile>,
) -> Result<Vec<McpServerSettings>, ConfigError> {
    let mut servers = Vec::new();
    for (name, entry) in entries {
        let fail = |reason: String| ConfigError::McpServer {
            name: name.clone(),
            reason,
        };
        let timeout = match entry.timeout_seconds {
            Some(value) => Some(
                seconds("mcp_servers.timeout_seconds", value).map_err(|e| fail(e.to_string()))?,
            ),
            None => None,
        };
        let spec = McpServerSpec {
            kind: entry.kind,
            command: entry.command,
            args: entry.args,
            env: entry.env,
            cwd: entry.cwd,
            url: entry.url,
            headers: entry.headers,
            enabled: entry.enabled,
            timeout,
            auto_approve: entry.auto_approve,
        };
        servers.push(McpServerSettings::new(&name, spec, McpOrigin::Config).map_err(fail)?);
    }
    Ok(servers)
}

/// Where the model comes from: the provider, then its base URL and key (the provider's own
/// variables: `OPENAI_*` or `ANTHROPIC_*`), then how requests are laid out (`upstream:`).
fn llm_settings(
    cli: &CliSettings,
    file: &FileConfig,
    env: &impl Fn(&str) -> Option<String>,
    connect_timeout: Duration,
    idle_timeout: Duration,
) -> Result<LlmSettings, ConfigError> {
    let upstream = &file.upstream;
    // Only an Anthropic key and nothing of OpenAI's: the person meant Claude, not the demo.
    let openai_settings = cli.llm_base_url.is_some()
        || cli.llm_api_key.is_some()
        || file.llm_base_url.is_some()
        || file.llm_api_key.is_some()
        || env("OPENAI_BASE_URL").is_some()
        || env("OPENAI_API_KEY").is_some();
    let implied =
        (!openai_settings && env("ANTHROPIC_API_KEY").is_some()).then_some(Provider::Anthropic);
    let provider = cli
        .provider
        .or(upstream.provider)
        .or(implied)
        .unwrap_or_default();
    let (url_var, key_var) = match provider {
        Provider::Openai => ("OPENAI_BASE_URL", "OPENAI_API_KEY"),
        Provider::Anthropic => ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"),
    };
    let defaults = LlmSettings::default();
    let settings = LlmSettings {
        provider,
        base_url: cli
            .llm_base_url
            .clone()
            .or_else(|| env(url_var))
            .or_else(|| file.llm_base_url.clone()),
        api_key: cli
            .llm_api_key
            .clone()
            .or_else(|| env(key_var))
            .or_else(|| file.llm_api_key.clone()),
        connect_timeout,
        idle_timeout,
        message_style: cli
            .message_style
            .or(upstream.message_style)
            .unwrap_or_default(),
        system_role: upstream.system_role.unwrap_or(defaults.system_role),
        max_tokens: upstream.max_tokens.unwrap_or(defaults.max_tokens),
    };
    if let Some(url) = &settings.base_url {
        let parsed = reqwest::Url::parse(url.trim());
        if !matches!(&parsed, Ok(u) if matches!(u.scheme(), "http" | "https") && u.has_host()) {
            return Err(ConfigError::Invalid {
                setting: "llm_base_url",
                expected: "an absolute http:// or https:// URL (the API root, e.g. \
                           http://127.0.0.1:11434/v1)",
                // Never the text itself: it may hold a key.
                value: crate::llm::redact_url(url),
            });
        }
    }
    at_least(
        "upstream.max_tokens",
        usize::try_from(settings.max_tokens).unwrap_or(usize::MAX),
        1,
    )?;
    if !settings.system_role && settings.message_style == MessageStyleSetting::Openai {
        return Err(ConfigError::Invalid {
            setting: "upstream.system_role",
            expected: "true unless upstream.message_style is strict or auto (the openai style \
                       sends system messages as they are)",
            value: "false".into(),
        });
    }
    // The demo model stands in only when nothing was asked for: naming Anthropic means Claude.
    if provider == Provider::Anthropic && settings.is_demo() {
        return Err(ConfigError::Missing {
            setting: "provider",
            what: "provider anthropic needs an API key: set ANTHROPIC_API_KEY (or \
                   HOOKWIRE_LLM_API_KEY), or a base URL (--llm-base-url) of a server that speaks \
                   the Messages API",
        });
    }
    Ok(settings)
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

/// A secret shorter than this is guessable offline from one signed value: the server starts,
/// with a warning (and `hookwire check` lists it).
pub const MIN_SECRET_BYTES: usize = 32;

impl Config {
    /// What is weak about the secret, if anything: set but under [`MIN_SECRET_BYTES`].
    pub fn secret_warning(&self) -> Option<String> {
        let secret = self.agent.secret.as_deref()?;
        (secret.len() < MIN_SECRET_BYTES).then(|| {
            format!(
                "the secret is {} bytes long; use at least {MIN_SECRET_BYTES} random bytes \
                 (e.g. `openssl rand -hex 32`): a short one can be guessed from any signed value",
                secret.len()
            )
        })
    }

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
        mut file: FileConfig,
        raw_env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let env = |name: &str| raw_env(name).filter(|v| !v.is_empty());
        let secret = raw_env("HOOKWIRE_SECRET").or(file.secret.clone());
        // Only whitespace is as good as none (a quoted blank in a unit file): refused too.
        if secret.as_deref().is_some_and(|s| s.trim().is_empty()) {
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
        // Raw, like the secret: `HOOKWIRE_AUTH_TOKEN=""` (an unset shell variable) must not
        // quietly turn authentication off.
        let auth_token = raw_env("HOOKWIRE_AUTH_TOKEN").or(file.auth_token.clone());
        if auth_token.as_deref().is_some_and(|t| t.trim().is_empty()) {
            return Err(ConfigError::Empty {
                setting: "auth_token",
            });
        }
        let admin_token = raw_env("HOOKWIRE_ADMIN_TOKEN").or(file.admin_token.clone());
        if admin_token.as_deref().is_some_and(|t| t.trim().is_empty()) {
            return Err(ConfigError::Empty {
                setting: "admin_token",
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
        let llm = llm_settings(
            cli,
            &file,
            &env,
            connect_timeout.unwrap_or(Duration::from_secs(10)),
            llm_timeout.unwrap_or(Duration::from_secs(60)),
        )?;
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
            async_hook_queue: file
                .limits
                .async_hook_queue
                .unwrap_or(defaults.async_hook_queue),
            async_hook_queue_per_connection: file
                .limits
                .async_hook_queue_per_connection
                .unwrap_or(defaults.async_hook_queue_per_connection),
        };
        at_least("limits.max_message_bytes", limits.max_message_bytes, 1024)?;
        at_least("limits.max_frame_bytes", limits.max_frame_bytes, 4096)?;
        at_least(
            "limits.max_pending_connections",
            limits.max_pending_connections,
            1,
        )?;
        at_least("limits.max_connections", limits.max_connections, 1)?;
        at_least("limits.async_hook_queue", limits.async_hook_queue, 1)?;
        at_least(
            "limits.async_hook_queue_per_connection",
            limits.async_hook_queue_per_connection,
            1,
        )?;
        let voice = crate::voice::VoiceSettings::resolve(
            std::mem::take(&mut file.voice),
            &crate::voice::settings::Upstream {
                base_url: llm.base_url.as_deref(),
                api_key: llm.api_key.as_deref(),
            },
            &env,
        )
        .map_err(|e| ConfigError::Invalid {
            setting: e.setting,
            expected: e.expected,
            value: e.value,
        })?;
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
                .unwrap_or_else(|| match llm.provider {
                    Provider::Openai => agent_defaults.model,
                    Provider::Anthropic => DEFAULT_ANTHROPIC_MODEL.into(),
                }),
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
            summary_prompt: file
                .prompts
                .summary
                .unwrap_or(agent_defaults.summary_prompt),
            max_steps: file.limits.max_steps.unwrap_or(agent_defaults.max_steps),
            max_total_tokens: file.limits.max_total_tokens,
            max_hook_model_calls: file
                .limits
                .max_hook_model_calls
                .unwrap_or(agent_defaults.max_hook_model_calls),
            summary_on_limit: file
                .limits
                .summary_on_limit
                .unwrap_or(agent_defaults.summary_on_limit),
            max_retries: file
                .limits
                .max_retries
                .unwrap_or(agent_defaults.max_retries),
            max_tool_calls_per_round: file
                .limits
                .max_tool_calls_per_round
                .unwrap_or(agent_defaults.max_tool_calls_per_round),
            history_tool_result_chars: file
                .limits
                .history_tool_result_chars
                .unwrap_or(agent_defaults.history_tool_result_chars),
            hook_timeout: limits.hook_chain_timeout,
            workspace: workspace.clone(),
            secret,
            context: context_settings(file.context)?,
            approval: approval_settings(file.tools, file.approval)?,
            retry: retry_policy(&file.upstream)?,
            planning: match cli.planning.or(file.agent.planning).unwrap_or_default() {
                PlanningSetting::Marker => Planning::Marker,
                PlanningSetting::Native => Planning::Native,
                PlanningSetting::Off => Planning::Off,
            },
            native_planning_prompt: file
                .planning
                .native_prompt
                .unwrap_or(agent_defaults.native_planning_prompt),
        };
        at_least(
            "limits.max_tool_calls_per_round",
            agent.max_tool_calls_per_round,
            1,
        )?;
        at_least("limits.max_steps", agent.max_steps, 1)?;
        at_least(
            "limits.history_tool_result_chars",
            agent.history_tool_result_chars,
            1,
        )?;
        if let Some(max) = agent.max_total_tokens {
            let max = usize::try_from(max).unwrap_or(usize::MAX);
            at_least("limits.max_total_tokens", max, 1)?;
        }
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
            llm,
            log_format: cli.log_format.or(file.log_format).unwrap_or_default(),
            default_skills: file.default_skills,
            allowed_origins: list_env("HOOKWIRE_ALLOWED_ORIGINS").or(file.allowed_origins),
            allowed_hosts: list_env("HOOKWIRE_ALLOWED_HOSTS").or(file.allowed_hosts),
            auth_token,
            admin_token,
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
            mcp_servers: mcp_servers(file.mcp_servers)?,
            voice,
            telemetry: crate::telemetry::TelemetrySettings {
                otlp_endpoint: file.telemetry.otlp_endpoint,
                capture_content: file.telemetry.capture_content.unwrap_or(false),
                batch_delay: file.telemetry.batch_delay_ms.map(Duration::from_millis),
            },
            config_file: cli.config.clone(),
        })
    }
}

#[cfg(test)]
mod tests;
