//! The settings the command line gives (flags, each with its environment variable), and the
//! value types flags and file share. The command line itself (clap's definitions, the
//! subcommands) is the binary's.

use std::path::PathBuf;

use clap::ValueEnum;
use serde::Deserialize;

use super::{MessageStyleSetting, PlanningSetting};

/// What the command line gave: each flag, or its environment variable (the binary's clap
/// definitions read both, flag first). [`Config::resolve`](super::Config::resolve) puts them
/// before the file.
#[derive(Debug, Default, Clone)]
pub struct CliSettings {
    /// YAML config file.
    pub config: Option<PathBuf>,
    /// Listen address (port 0 = pick a free port).
    pub addr: Option<String>,
    /// Skill folders.
    pub skills_dir: Option<PathBuf>,
    /// Root that the file tools may read; nothing outside it.
    pub workspace: Option<PathBuf>,
    /// The browser page.
    pub static_dir: Option<PathBuf>,
    /// OpenAI-compatible API root (else OPENAI_BASE_URL).
    pub llm_base_url: Option<String>,
    /// Bearer token (else OPENAI_API_KEY).
    pub llm_api_key: Option<String>,
    /// The model API: `openai` (any OpenAI-compatible server) or `anthropic` (the Messages API).
    pub provider: Option<Provider>,
    /// Model name sent upstream.
    pub model: Option<String>,
    /// Seconds the upstream may stay silent before the chat fails.
    pub llm_timeout: Option<f64>,
    /// `text` or `json`; the level comes from RUST_LOG.
    pub log_format: Option<LogFormat>,
    /// How OpenAI-compatible requests are laid out: `auto` (default), `strict` or `openai`.
    pub message_style: Option<MessageStyleSetting>,
    /// How a chat with tools decides to use them: `marker` (default), `native` or `off`.
    pub planning: Option<PlanningSetting>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// Which API the model speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// `POST {base_url}/chat/completions`: OpenAI, and every server that copies its API.
    #[default]
    Openai,
    /// Anthropic's Messages API, `POST {base_url}/v1/messages`.
    Anthropic,
}

impl Provider {
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Openai => "openai",
            Provider::Anthropic => "anthropic",
        }
    }
}
