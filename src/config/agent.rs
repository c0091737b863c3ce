//! The agent's settings: the model name, prompts, planning, the chat's limits, `context:`, and the
//! approval and retry policies it applies.

use std::path::PathBuf;
use std::time::Duration;

use super::values::at_least;
use super::{
    CliSettings, ConfigError, ContextFile, FileConfig, PlanningSetting, Provider,
    DEFAULT_ANTHROPIC_MODEL,
};
use crate::agent::{prompts, AgentConfig, ContextSettings, Planning};

/// What the agent gets from the settings; `file`'s sections it reads are taken out of it.
pub(super) struct AgentInputs {
    pub(super) provider: Provider,
    pub(super) hook_timeout: Duration,
    pub(super) workspace: PathBuf,
    pub(super) secret: Option<String>,
}

pub(super) fn agent_config(
    cli: &CliSettings,
    file: &mut FileConfig,
    inputs: AgentInputs,
) -> Result<AgentConfig, ConfigError> {
    let defaults = AgentConfig::default();
    let prompts = std::mem::take(&mut file.prompts);
    let planning = std::mem::take(&mut file.planning);
    let limits = &file.limits;
    let agent =
        AgentConfig {
            model: cli.model.clone().or(file.model.take()).unwrap_or_else(|| {
                match inputs.provider {
                    Provider::Openai => defaults.model,
                    Provider::Anthropic => DEFAULT_ANTHROPIC_MODEL.into(),
                }
            }),
            system_prompt: prompts.system.unwrap_or(defaults.system_prompt),
            planning_prompt: planning.prompt.unwrap_or(defaults.planning_prompt),
            marker: planning
                .marker
                .unwrap_or_else(|| prompts::DEFAULT_MARKER.into()),
            first_step_prompt: prompts.first_step.unwrap_or(defaults.first_step_prompt),
            each_step_prompt: prompts.each_step.unwrap_or(defaults.each_step_prompt),
            summary_prompt: prompts.summary.unwrap_or(defaults.summary_prompt),
            max_steps: limits.max_steps.unwrap_or(defaults.max_steps),
            max_total_tokens: limits.max_total_tokens,
            max_hook_model_calls: limits
                .max_hook_model_calls
                .unwrap_or(defaults.max_hook_model_calls),
            summary_on_limit: limits.summary_on_limit.unwrap_or(defaults.summary_on_limit),
            max_retries: limits.max_retries.unwrap_or(defaults.max_retries),
            max_tool_calls_per_round: limits
                .max_tool_calls_per_round
                .unwrap_or(defaults.max_tool_calls_per_round),
            history_tool_result_chars: limits
                .history_tool_result_chars
                .unwrap_or(defaults.history_tool_result_chars),
            hook_timeout: inputs.hook_timeout,
            workspace: inputs.workspace,
            secret: inputs.secret,
            context: std::mem::take(&mut file.context).resolve()?,
            approval: super::tools::approval_settings(
                std::mem::take(&mut file.tools),
                std::mem::take(&mut file.approval),
            )?,
            retry: file.upstream.retry_policy()?,
            planning: match cli.planning.or(file.agent.planning).unwrap_or_default() {
                PlanningSetting::Marker => Planning::Marker,
                PlanningSetting::Native => Planning::Native,
                PlanningSetting::Off => Planning::Off,
            },
            native_planning_prompt: planning
                .native_prompt
                .unwrap_or(defaults.native_planning_prompt),
        };
    check(&agent)?;
    Ok(agent)
}

/// The chat's limits below their minimum, an empty marker.
fn check(agent: &AgentConfig) -> Result<(), ConfigError> {
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
    Ok(())
}

impl ContextFile {
    /// `context:`: a window of at least one token, a threshold in (0, 1], at least one round
    /// kept.
    fn resolve(self) -> Result<ContextSettings, ConfigError> {
        let defaults = ContextSettings::default();
        if let Some(window) = self.window_tokens {
            at_least(
                "context.window_tokens",
                usize::try_from(window).unwrap_or(usize::MAX),
                1,
            )?;
        }
        let compact_threshold = fraction(
            "context.compact_threshold",
            self.compact_threshold.unwrap_or(defaults.compact_threshold),
        )?;
        let micro_threshold = fraction(
            "context.micro_threshold",
            self.micro_threshold.unwrap_or(defaults.micro_threshold),
        )?;
        let micro_keep_rounds = self.micro_keep_rounds.unwrap_or(defaults.micro_keep_rounds);
        at_least("context.micro_keep_rounds", micro_keep_rounds, 1)?;
        let keep_recent_groups = self
            .keep_recent_groups
            .unwrap_or(defaults.keep_recent_groups);
        let summary_prompt = match self.summary_prompt {
            Some(prompt) if prompt.trim().is_empty() => {
                return Err(ConfigError::Invalid {
                    setting: "context.summary_prompt",
                    expected: "the instructions of the summary call (leave it out for the \
                               default)",
                    value: "an empty text".into(),
                })
            }
            Some(prompt) => prompt,
            None => defaults.summary_prompt,
        };
        Ok(ContextSettings {
            window_tokens: self.window_tokens,
            compact_threshold,
            micro_threshold,
            micro_keep_rounds,
            keep_recent_groups,
            summary_prompt,
            learned: Default::default(),
        })
    }
}

/// A fraction of the context window: above 0, at most 1.
fn fraction(setting: &'static str, value: f64) -> Result<f64, ConfigError> {
    if !(value > 0.0 && value <= 1.0) {
        return Err(ConfigError::Invalid {
            setting,
            expected: "a fraction of the window above 0 and at most 1",
            value: value.to_string(),
        });
    }
    Ok(value)
}
