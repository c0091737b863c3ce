//! Settings, in one merge: flag, then environment variable, then the YAML config file, then the
//! default (docs/protocol.md §1). clap handles flag-then-env; [`Config::resolve`] adds the file and
//! the defaults, each section resolving itself: `access` (secret, tokens, trust), `upstream` (the
//! model), `limits`, `agent` (prompts, planning, `context:`), `tools` (approval, MCP servers).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::agent::AgentConfig;
use crate::mcp::McpServerSettings;

mod access;
mod agent;
mod auth;
mod cli;
mod file;
mod limits;
mod people;
mod record;
mod tools;
mod upstream;
mod values;

pub use access::SessionHookSettings;
pub use auth::{AuthFile, JwtFile, JwtSettings, KeySource};
pub use cli::{CliSettings, LogFormat, Provider};
pub use file::{
    ContextFile, FileConfig, HookAgent, HooksFile, HooksSection, HttpHooksFile, LimitsFile,
    McpServerFile, MessageStyleSetting, PlanningFile, PlanningSetting, PromptsFile, RecordFile,
    SessionHooksFile, UpstreamFile,
};
pub use limits::Limits;
pub use people::{QuotaSettings, QuotasFile, Tenant, TenantFile};
pub use upstream::{
    LlmSettings, ANTHROPIC_BASE_URL, DEFAULT_ANTHROPIC_MODEL, DEFAULT_MAX_TOKENS, OPENAI_BASE_URL,
};

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
    /// `auth.jwt`: the chat routes take a JWT from this identity provider (then `auth_token`
    /// no longer opens them).
    pub jwt: Option<JwtSettings>,
    /// `quotas:` and `shared_state:`: what people and tenants may spend, counted where.
    pub quotas: QuotaSettings,
    /// `tenants.<name>`: what the people of a tenant (the token's tenant claim) get.
    pub tenants: std::collections::BTreeMap<String, Tenant>,
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
    /// `hooks.record`: where hook traffic is recorded; `None`: it is not.
    pub hook_record: Option<crate::hooks::record::RecordSettings>,
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
    /// hookwire runs in a container (`HOOKWIRE_CONTAINER`, which the image sets): its address is
    /// the container's own, so the published port decides who can connect, and a command the log
    /// suggests is one to run inside the container.
    pub container: bool,
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
    #[error("config file {}{}: {message}", path.display(), line.map(|line| format!(":{line}")).unwrap_or_default())]
    Parse {
        path: PathBuf,
        line: Option<u64>,
        /// On one line, with the key a misspelt one may have meant (`crate::types::YamlError`).
        message: String,
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

    /// What to say about the address the server listens on (`loopback`: only loopback), if
    /// anything: with no `auth_token` on an address others may reach, a warning; in a container,
    /// which listens on all of its interfaces, a note (the published port decides who connects).
    pub fn open_address_notice(&self, loopback: bool) -> Option<AddressNotice> {
        // Signed-in people (`auth.jwt`) close it as a token does.
        if self.auth_token.is_some() || self.jwt.is_some() || loopback {
            return None;
        }
        Some(if self.container {
            AddressNotice::Note(
                "no auth_token: in a container, who can connect is decided by how its port is \
                 published (`-p 127.0.0.1:8080:8080` keeps it to this machine); set \
                 HOOKWIRE_AUTH_TOKEN before publishing it wider (docs/deployment.md#docker)",
            )
        } else {
            AddressNotice::Warning(
                "not a loopback address and no auth_token: anyone who can reach it can chat, \
                 read the workspace and spend the model's budget (set HOOKWIRE_AUTH_TOKEN)",
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
        serde_saphyr::from_str_with_options(&text, options).map_err(|error| {
            let refused = crate::types::YamlError::of(&error);
            ConfigError::Parse {
                path: path.to_path_buf(),
                line: refused.line,
                message: refused.message,
            }
        })
    }

    /// The merge: `cli` (flag, then env, from clap) → `file` → defaults. `env` looks up the
    /// variables that are not flags of their own (`OPENAI_*`, `HOOKWIRE_SECRET`, …); an empty
    /// value counts as unset, except for the secret and the tokens, where it is refused.
    pub fn resolve(
        cli: &CliSettings,
        mut file: FileConfig,
        raw_env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let env = |name: &str| raw_env(name).filter(|v| !v.is_empty());
        let access = access::Access::resolve(&file, &raw_env, &env)?;
        let llm = LlmSettings::resolve(cli, &file, &env)?;
        let limits = Limits::resolve(&file.limits)?;
        let voice = Self::voice(&mut file, &llm, &env)?;
        let workspace = cli
            .workspace
            .clone()
            .or(file.workspace.take())
            .unwrap_or_else(|| PathBuf::from("."));
        let agent = agent::agent_config(
            cli,
            &mut file,
            agent::AgentInputs {
                provider: llm.provider,
                hook_timeout: limits.hook_chain_timeout,
                workspace: workspace.clone(),
                secret: access.secret,
            },
        )?;
        let list_env = |name: &'static str| env(name).map(|v| values::comma_list(&v));
        let addr = cli
            .addr
            .clone()
            .or(file.addr)
            .unwrap_or_else(|| "127.0.0.1:8080".into());
        check_addr(&addr)?;
        let (hooks_file, hook_record) = record::hooks_section(file.hooks.take(), &env)?;
        let jwt = auth::JwtSettings::resolve(file.auth.jwt.as_ref(), &env)?;
        let tenants = people::tenants(file.tenants, jwt.as_ref())?;
        Ok(Config {
            addr,
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
            auth_token: access.auth_token,
            admin_token: access.admin_token,
            jwt,
            quotas: QuotaSettings::resolve(
                file.quotas,
                file.shared_state,
                file.shared_state_fail_closed,
                &env,
            )?,
            tenants,
            trust_workspace_hooks: access.trust_workspace_hooks,
            state_dir: access.state_dir,
            session_hooks: access.session_hooks,
            http_hook_urls: access::allowed_urls(file.http_hooks.allowed_urls.unwrap_or_default())?,
            limits,
            agent,
            hook_record,
            hooks_file: env("HOOKWIRE_HOOKS")
                .map(PathBuf::from)
                .or(hooks_file)
                .or_else(|| {
                    let beside = cli.config.as_ref()?.parent()?.join("hooks.yaml");
                    beside.is_file().then_some(beside)
                }),
            allow_session_command_hooks: access.allow_session_command_hooks,
            hook_agents: file.hook_agents,
            mcp_servers: tools::mcp_servers(file.mcp_servers)?,
            voice,
            telemetry: telemetry(file.telemetry),
            config_file: cli.config.clone(),
            container: env("HOOKWIRE_CONTAINER")
                .map(|value| values::boolean("HOOKWIRE_CONTAINER", &value))
                .transpose()?
                .unwrap_or(false),
        })
    }

    /// `voice:`, whose engines default to the model's upstream.
    fn voice(
        file: &mut FileConfig,
        llm: &LlmSettings,
        env: &impl Fn(&str) -> Option<String>,
    ) -> Result<crate::voice::VoiceSettings, ConfigError> {
        crate::voice::VoiceSettings::resolve(
            std::mem::take(&mut file.voice),
            &crate::voice::settings::Upstream {
                base_url: llm.base_url.as_deref(),
                api_key: llm.api_key.as_deref(),
            },
            env,
        )
        .map_err(|e| ConfigError::Invalid {
            setting: e.setting,
            expected: e.expected,
            value: e.value,
        })
    }
}

/// `telemetry:`, resolved.
fn telemetry(file: file::TelemetryFile) -> crate::telemetry::TelemetrySettings {
    crate::telemetry::TelemetrySettings {
        otlp_endpoint: file.otlp_endpoint,
        capture_content: file.capture_content.unwrap_or(false),
        batch_delay: file.batch_delay_ms.map(Duration::from_millis),
        client_trace_context: file.client_trace_context.unwrap_or_default(),
    }
}

/// What [`Config::open_address_notice`] says, and how loudly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressNotice {
    /// Anyone who can reach the address can use the server: a `warn` line, a `check` warning.
    Warning(&'static str),
    /// Only as open as the container's published port: one `info` line.
    Note(&'static str),
}

/// `--addr`: `host:port` with a port of 0 to 65535 (`[v6]:port` for IPv6), caught here rather
/// than when the server binds (`hookwire check` says so).
fn check_addr(addr: &str) -> Result<(), ConfigError> {
    let invalid = || ConfigError::Invalid {
        setting: "addr",
        expected: "host:port, with a port from 0 to 65535 (e.g. 127.0.0.1:8080, [::1]:8080)",
        value: addr.to_string(),
    };
    let (host, port) = addr.rsplit_once(':').ok_or_else(invalid)?;
    let host_ok = !host.is_empty() && (!host.contains(':') || host.starts_with('['));
    if !host_ok || port.parse::<u16>().is_err() {
        return Err(invalid());
    }
    Ok(())
}

#[cfg(test)]
mod tests;
