//! The YAML config file's shape. Unknown keys are an error, so typos do not pass silently.

use std::path::PathBuf;

use serde::Deserialize;

use super::{LogFormat, Provider};

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
    /// The token `/api/hooks` and `/metrics` need instead (else `HOOKWIRE_ADMIN_TOKEN`).
    pub admin_token: Option<String>,
    /// `auth:`: sign-in with JWTs (`auth.jwt`).
    #[serde(default)]
    pub auth: super::AuthFile,
    /// Trust every workspace hook file without review (else `HOOKWIRE_TRUST_WORKSPACE_HOOKS`).
    pub trust_workspace_hooks: Option<bool>,
    /// Where `trust.json` lives (else `HOOKWIRE_STATE_DIR`, `$XDG_STATE_HOME/hookwire`,
    /// `~/.local/state/hookwire`).
    pub state_dir: Option<PathBuf>,
    #[serde(default)]
    pub session_hooks: SessionHooksFile,
    #[serde(default)]
    pub http_hooks: HttpHooksFile,
    /// The server-level hook file (else `HOOKWIRE_HOOKS`, else `hooks.yaml` beside this file),
    /// or `{file, record}`: that file, and the recording of hook traffic.
    pub hooks: Option<HooksFile>,
    /// Let the model register `command` session hooks too (default: only `llm`).
    pub allow_session_command_hooks: Option<bool>,
    /// Named agents that `agent` hooks may ask (`agent: NAME`; the OpenHarness format).
    #[serde(default)]
    pub hook_agents: std::collections::BTreeMap<String, HookAgent>,
    #[serde(default)]
    pub agent: AgentFile,
    /// The planning call's texts; the mode is `agent.planning` (a mode written here is refused
    /// with a message that says so).
    #[serde(default, deserialize_with = "planning_texts")]
    pub planning: PlanningFile,
    #[serde(default)]
    pub prompts: PromptsFile,
    #[serde(default)]
    pub limits: LimitsFile,
    #[serde(default)]
    pub context: ContextFile,
    #[serde(default)]
    pub tools: ToolsFile,
    #[serde(default)]
    pub approval: ApprovalFile,
    #[serde(default)]
    pub upstream: UpstreamFile,
    /// MCP servers whose tools the agent may call, by name (their tools are
    /// `mcp__<name>__<tool>`).
    #[serde(default)]
    pub mcp_servers: std::collections::BTreeMap<String, McpServerFile>,
    /// Spoken answers and transcribed speech (docs/voice.md).
    #[serde(default)]
    pub voice: crate::voice::VoiceFile,
    /// `telemetry:` (docs/protocol.md §17).
    #[serde(default)]
    pub telemetry: TelemetryFile,
    /// `quotas:` per person and per tenant (docs/protocol.md §20).
    #[serde(default)]
    pub quotas: super::QuotasFile,
    /// Where the quotas' counters live (else `HOOKWIRE_SHARED_STATE`; unset = in memory).
    pub shared_state: Option<String>,
    /// Refuse chats while `shared_state` cannot be reached, instead of counting in memory.
    pub shared_state_fail_closed: Option<bool>,
    /// `tenants.<name>`: the skills, hook files, tools and quotas of a tenant's people.
    #[serde(default)]
    pub tenants: std::collections::BTreeMap<String, super::TenantFile>,
}

/// `telemetry:`: OpenTelemetry traces over OTLP/HTTP (docs/telemetry.md).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetryFile {
    /// The OTLP/HTTP base URL; `OTEL_EXPORTER_OTLP_ENDPOINT` wins over it.
    pub otlp_endpoint: Option<String>,
    /// Prompts, answers, tool arguments and results on the spans (off: they may hold secrets).
    pub capture_content: Option<bool>,
    /// How long finished spans wait to be sent together, in milliseconds (else
    /// `OTEL_BSP_SCHEDULE_DELAY`, else 5000).
    pub batch_delay_ms: Option<u64>,
    /// What a client's `traceparent` becomes: `parent` (the default) or `link`.
    pub client_trace_context: Option<crate::telemetry::ClientTraceContext>,
}

/// One of `mcp_servers:`: a stdio server (`command`, `args`, `env`, `cwd`) or a streamable
/// HTTP one (`url`, `headers`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerFile {
    /// `stdio` or `http`; unset = decided by `command` or `url`.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    /// The server's environment besides PATH, HOME, LANG, LC_ALL, TZ, TMPDIR; values may name
    /// server variables as `${NAME}`.
    #[serde(default)]
    pub env: std::collections::BTreeMap<String, String>,
    /// Where a stdio server runs, against the workspace (default: the workspace).
    pub cwd: Option<PathBuf>,
    pub url: Option<String>,
    /// Sent with every request; values may name server variables as `${NAME}`.
    #[serde(default)]
    pub headers: std::collections::BTreeMap<String, String>,
    /// `false`: not started, no tools (default true).
    pub enabled: Option<bool>,
    /// How long one tool call may take (default: the tool bound, 10).
    pub timeout_seconds: Option<f64>,
    /// Tools that run without the person's approval (the server's names, or `"*"`).
    #[serde(default)]
    pub auto_approve: Vec<String>,
}

/// `tools:` (docs/protocol.md §11).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsFile {
    /// Tools whose calls wait for the person's approval: a list of names, or `"*"` for all.
    pub require_approval: Option<OneOrMany>,
}

/// A list of names, or one name (`"*"`).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    pub fn into_vec(self) -> Vec<String> {
        match self {
            OneOrMany::One(name) => vec![name],
            OneOrMany::Many(names) => names,
        }
    }
}

/// `approval:`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalFile {
    /// How long an `approval` state may be resumed (3600).
    pub ttl_seconds: Option<f64>,
}

/// `upstream:`: which API, and how requests are laid out for it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamFile {
    /// `openai` (default) or `anthropic` (else `--provider` / `HOOKWIRE_PROVIDER`).
    pub provider: Option<Provider>,
    /// `auto` (default), `strict` or `openai` (else `--message-style` /
    /// `HOOKWIRE_MESSAGE_STYLE`).
    pub message_style: Option<MessageStyleSetting>,
    /// `false` for a model whose chat template has no system role (strict style only).
    pub system_role: Option<bool>,
    /// The reply's length limit sent with every call (Anthropic requires one).
    pub max_tokens: Option<u32>,
    /// Tries after a retryable failure, before anything reached the client (2).
    pub retries: Option<usize>,
    /// The longest wait before a retry, the server's `Retry-After` included (20).
    pub max_retry_wait_seconds: Option<f64>,
    /// Models tried in turn once the retries of a retryable failure are used up.
    pub fallback_models: Option<Vec<String>>,
}

/// `upstream.message_style`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum MessageStyleSetting {
    /// Messages as the agent built them (what OpenAI's API takes).
    Openai,
    /// One leading system message, no two messages of the same role in a row (chat templates).
    Strict,
    /// `strict` unless the base URL is OpenAI's (or Azure's): the default, since local servers
    /// render chat templates.
    #[default]
    Auto,
}

/// `context:` (docs/protocol.md §10).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextFile {
    /// The model's context window; unset = the built-in table by model name.
    pub window_tokens: Option<u64>,
    /// The fraction of the window at which compaction starts (0.8).
    pub compact_threshold: Option<f64>,
    /// The fraction of the window at which old tool results are stubbed (0.6).
    pub micro_threshold: Option<f64>,
    /// Agent rounds whose tool results the model sees in full (2).
    pub micro_keep_rounds: Option<usize>,
    /// Message groups of the history that auto compaction keeps as they are (4).
    pub keep_recent_groups: Option<usize>,
    /// The instructions of the summary call.
    pub summary_prompt: Option<String>,
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
    /// The prompt of the `native` planning call.
    pub native_prompt: Option<String>,
}

/// `planning:` as a section; `planning: native` (the mode, which is `agent.planning`) is
/// refused with a message that says where it goes.
fn planning_texts<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<PlanningFile, D::Error> {
    struct Texts;
    impl<'de> serde::de::Visitor<'de> for Texts {
        type Value = PlanningFile;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("the planning call's texts (marker, prompt, native_prompt)")
        }
        fn visit_str<E: serde::de::Error>(self, mode: &str) -> Result<PlanningFile, E> {
            Err(E::custom(format!(
                "the top-level `planning:` holds the planning call's texts (marker, prompt, \
                 native_prompt); the mode goes under `agent:` (`agent: {{planning: {mode}}}`)"
            )))
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<PlanningFile, A::Error> {
            PlanningFile::deserialize(serde::de::value::MapAccessDeserializer::new(map))
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<PlanningFile, E> {
            Ok(PlanningFile::default())
        }
    }
    deserializer.deserialize_any(Texts)
}

/// `agent:`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentFile {
    /// `marker` (default), `native` or `off` (else `--planning` / `HOOKWIRE_PLANNING`).
    pub planning: Option<PlanningSetting>,
}

/// `agent.planning`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum PlanningSetting {
    /// A planning call without tools; the marker asks for the agent loop.
    #[default]
    Marker,
    /// The first call offers the tools; a tool call starts the agent loop.
    Native,
    /// No planning call: the agent loop with the tools from the start.
    Off,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptsFile {
    pub system: Option<String>,
    pub first_step: Option<String>,
    pub each_step: Option<String>,
    /// The last call's prompt at a limit (`limits.summary_on_limit`).
    pub summary: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsFile {
    pub max_message_bytes: Option<usize>,
    pub max_history_messages: Option<usize>,
    pub max_input_chars: Option<usize>,
    pub max_steps: Option<usize>,
    /// The chat's summed usage at which the agent loop ends (`done` reason `max_tokens`).
    pub max_total_tokens: Option<u64>,
    /// At `max_steps` / `max_total_tokens`, ask the model for a summary without tools (default
    /// true).
    pub summary_on_limit: Option<bool>,
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
    /// Runs of `async: true` hooks that may wait for a worker (default 1024).
    pub async_hook_queue: Option<usize>,
    /// Tool results longer than this (characters) are cut in `done.turn` (default 16 000).
    pub history_tool_result_chars: Option<usize>,
    /// Of those, the runs one connection may hold (default 64).
    pub async_hook_queue_per_connection: Option<usize>,
    /// Model calls the hooks of one chat, or of one connection's `session_start` and
    /// `session_end`, may make (default 32; 0 = hooks never call the model).
    pub max_hook_model_calls: Option<usize>,
}

/// `hooks:`: the server-level hook file's path, or a section with it and the recording.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum HooksFile {
    Path(PathBuf),
    Section(HooksSection),
}

/// `hooks: {file, record}`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HooksSection {
    pub file: Option<PathBuf>,
    pub record: Option<RecordFile>,
}

/// `hooks.record`: recording hook traffic for `hookwire hooks replay` (docs/protocol.md §21).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordFile {
    /// Where the recordings go (else `HOOKWIRE_HOOK_RECORD_DIR`); unset: nothing is recorded.
    pub dir: Option<PathBuf>,
    /// The share of chats recorded, 0 to 1 (default 1).
    pub sample: Option<f64>,
    /// A file past this many bytes is followed by a new one (default 64 MiB).
    pub max_bytes: Option<u64>,
    /// Recordings kept; older ones are removed (default 20).
    pub keep_files: Option<usize>,
}
