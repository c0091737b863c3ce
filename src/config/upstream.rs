//! Where the model comes from: the provider, its base URL and key, the timeouts, how requests are
//! laid out (`upstream:`), and the retry policy of its calls.

use std::time::Duration;

use super::values::{at_least, seconds};
use super::{CliSettings, ConfigError, FileConfig, MessageStyleSetting, Provider, UpstreamFile};
use crate::agent::RetryPolicy;
use crate::llm::MessageStyle;

/// OpenAI's API root: the base URL when only a key is set.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
/// Anthropic's API root (the client adds `/v1/messages`).
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";
/// The model of `provider: anthropic` when none is named.
pub const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";
/// `upstream.max_tokens` when unset.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

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

    /// The timeouts, then the provider, then its base URL and key (the provider's own
    /// variables: `OPENAI_*` or `ANTHROPIC_*`), then how requests are laid out (`upstream:`).
    pub(super) fn resolve(
        cli: &CliSettings,
        file: &FileConfig,
        env: &impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let idle_timeout = cli
            .llm_timeout
            .or(file.llm_timeout)
            .map(|v| seconds("llm_timeout", v))
            .transpose()?;
        let connect_timeout = file
            .llm_connect_timeout
            .map(|v| seconds("llm_connect_timeout", v))
            .transpose()?;
        let defaults = LlmSettings::default();
        let provider = provider(cli, file, env);
        let (url_var, key_var) = match provider {
            Provider::Openai => ("OPENAI_BASE_URL", "OPENAI_API_KEY"),
            Provider::Anthropic => ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"),
        };
        let upstream = &file.upstream;
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
            connect_timeout: connect_timeout.unwrap_or(defaults.connect_timeout),
            idle_timeout: idle_timeout.unwrap_or(defaults.idle_timeout),
            message_style: cli
                .message_style
                .or(upstream.message_style)
                .unwrap_or_default(),
            system_role: upstream.system_role.unwrap_or(defaults.system_role),
            max_tokens: upstream.max_tokens.unwrap_or(defaults.max_tokens),
        };
        settings.check()?;
        Ok(settings)
    }

    /// Settings that are each readable but cannot be used (alone or together).
    fn check(&self) -> Result<(), ConfigError> {
        if let Some(url) = &self.base_url {
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
            usize::try_from(self.max_tokens).unwrap_or(usize::MAX),
            1,
        )?;
        if !self.system_role && self.message_style == MessageStyleSetting::Openai {
            return Err(ConfigError::Invalid {
                setting: "upstream.system_role",
                expected: "true unless upstream.message_style is strict or auto (the openai \
                           style sends system messages as they are)",
                value: "false".into(),
            });
        }
        // The demo model stands in only when nothing was asked for: naming Anthropic means
        // Claude.
        if self.provider == Provider::Anthropic && self.is_demo() {
            return Err(ConfigError::Missing {
                setting: "provider",
                what: "provider anthropic needs an API key: set ANTHROPIC_API_KEY (or \
                       HOOKWIRE_LLM_API_KEY), or a base URL (--llm-base-url) of a server that \
                       speaks the Messages API",
            });
        }
        Ok(())
    }
}

/// The provider named by flag or file; else Anthropic when only an Anthropic key and nothing of
/// OpenAI's is set (the person meant Claude, not the demo); else OpenAI.
fn provider(
    cli: &CliSettings,
    file: &FileConfig,
    env: &impl Fn(&str) -> Option<String>,
) -> Provider {
    let openai_settings = cli.llm_base_url.is_some()
        || cli.llm_api_key.is_some()
        || file.llm_base_url.is_some()
        || file.llm_api_key.is_some()
        || env("OPENAI_BASE_URL").is_some()
        || env("OPENAI_API_KEY").is_some();
    let implied =
        (!openai_settings && env("ANTHROPIC_API_KEY").is_some()).then_some(Provider::Anthropic);
    cli.provider
        .or(file.upstream.provider)
        .or(implied)
        .unwrap_or_default()
}

impl UpstreamFile {
    /// `upstream.retries`, `.max_retry_wait_seconds`, `.fallback_models`.
    pub(super) fn retry_policy(&self) -> Result<RetryPolicy, ConfigError> {
        let defaults = RetryPolicy::default();
        let fallback_models = self.fallback_models.clone().unwrap_or_default();
        if let Some(empty) = fallback_models.iter().find(|m| m.trim().is_empty()) {
            return Err(ConfigError::Invalid {
                setting: "upstream.fallback_models",
                expected: "model names",
                value: format!("{empty:?}"),
            });
        }
        Ok(RetryPolicy {
            retries: self.retries.unwrap_or(defaults.retries),
            max_wait: match self.max_retry_wait_seconds {
                Some(v) => seconds("upstream.max_retry_wait_seconds", v)?,
                None => defaults.max_wait,
            },
            fallback_models,
        })
    }
}
