//! Hook files in YAML, the jcli format's shape: event name → list of hooks (read in `raw`, each entry
//! checked in `build`, a file in `parse`).
//!
//! ```yaml
//! pre_tool_execution:
//!   - command: ./guard.sh          # type command (alias bash) is the default
//!     timeout: 5
//!     on_error: skip               # or abort, or block (fail closed)
//!     env: { API_TOKEN: "${GUARD_TOKEN}" }   # server variables only by name
//!     filter: { tool_matcher: "read_file|search_text" }
//!   - type: llm                    # alias prompt
//!     prompt: "Is {{tool_name}} with {{tool_arguments}} safe? ..."
//! before_model_call:               # the OpenHarness format's names are aliases
//!   - type: http
//!     url: http://127.0.0.1:9000/hook
//!     matcher: "^gpt-"
//!     capabilities: [system_prompt]
//! PreToolUse:                      # so are Claude Code's and Gemini CLI's (their dialect)
//!   - command: ./claude-guard.sh
//!     matcher: Read
//! ```
//!
//! The event's spelling is the hook's [`Dialect`]: it decides the JSON the hook gets, how its
//! answer is read, the unit of `timeout` (Gemini: milliseconds) and how `matcher` reads
//! ([`compile_matcher`]). Every problem is reported with the file and line; a matcher where the
//! event takes none is a warning.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

use regex::Regex;

use super::event::{Dialect, Event, TRIGGER_TYPE};

/// What a hook runs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Handler {
    /// `sh -c command`: JSON on stdin, JSON on stdout; exit 2 blocks. `env` is the hook's own
    /// variables, added to the few every hook gets; a value may name a server variable as
    /// `${NAME}` (see [`expand`]).
    Command {
        command: String,
        env: BTreeMap<String, String>,
    },
    /// POST the JSON; a 2xx JSON answer is the result.
    Http {
        url: String,
        headers: BTreeMap<String, String>,
    },
    /// A prompt template sent to the model; its JSON answer is the result. `envelope`: the
    /// input JSON is added after the prompt (`type: prompt`, the OpenHarness format: the runtime injects the
    /// envelope); `type: llm` (the jcli format) sends the filled template only.
    Llm {
        prompt: String,
        model: Option<String>,
        envelope: bool,
    },
    /// A sub-run of the agent loop (at most 4 rounds) with the read-only tools; its final JSON
    /// is the result. `agent` names one of the server's configured hook agents (the OpenHarness format:
    /// 指定 agent); `None` = the default one.
    Agent {
        prompt: String,
        agent: Option<String>,
    },
}

impl Handler {
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Handler::Command { .. } => "command",
            Handler::Http { .. } => "http",
            Handler::Llm { .. } => "llm",
            Handler::Agent { .. } => "agent",
        }
    }

    /// `llm`, `prompt` and `agent` hooks call the model (their calls count in the chat's
    /// usage and against `limits.max_hook_model_calls`).
    pub(crate) fn calls_model(&self) -> bool {
        matches!(self, Handler::Llm { .. } | Handler::Agent { .. })
    }

    pub(super) fn default_timeout(&self) -> Duration {
        match self {
            Handler::Command { .. } | Handler::Http { .. } => Duration::from_secs(10),
            Handler::Llm { .. } | Handler::Agent { .. } => Duration::from_secs(30),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum OnError {
    /// Log the failure and go on with the next hook (the default).
    #[default]
    Skip,
    /// End the chain: the hooks after it do not run for this event.
    Abort,
    /// Fail closed: the action the hook guards is refused (a tool is skipped, a chat is
    /// stopped; see the chain engine).
    Block,
}

/// What an `async: true` hook's run does when the async queue has no room for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum OnFull {
    /// It is dropped (logged and counted); the chat goes on at once (the default).
    #[default]
    Drop,
    /// Its chat waits for room, at most what is left of the chain's budget (audit hooks).
    Wait,
}

/// When a hook applies; all set fields must match (AND).
#[derive(Debug, Clone, Default)]
pub(crate) struct Filter {
    /// Exact tool name (tool events only).
    pub(crate) tool_name: Option<String>,
    /// A pattern the whole tool name must match (`read_.*`, `A|B`); ignored when `tool_name` is
    /// set.
    pub(crate) tool_matcher: Option<Regex>,
    pub(crate) model_prefix: Option<String>,
    /// A regex on the event's subject ([`Subject`]); `None` also where the event takes none.
    pub(crate) matcher: Option<Regex>,
}

/// What a hook's filter is matched against.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Subject<'a> {
    /// Tool events: the tool's names (hookwire's, and the hook's dialect's when it differs).
    pub(crate) tools: [Option<&'a str>; 2],
    pub(crate) model: &'a str,
    /// What `matcher` matches at events that are not about a tool or a model call: the
    /// `trigger_type`, the session's `source` or `reason`, the compaction's `trigger`, …
    pub(crate) other: Option<&'a str>,
}

impl Filter {
    pub(crate) fn matches(&self, event: Event, subject: &Subject<'_>) -> bool {
        let tools = || subject.tools.iter().flatten();
        if event.is_tool_event() {
            if let Some(name) = &self.tool_name {
                if !tools().any(|tool| tool == name) {
                    return false;
                }
            } else if let Some(pattern) = &self.tool_matcher {
                if !tools().any(|tool| pattern.is_match(tool)) {
                    return false;
                }
            }
        }
        if let Some(prefix) = &self.model_prefix {
            if !subject.model.starts_with(prefix.as_str()) {
                return false;
            }
        }
        if let Some(matcher) = &self.matcher {
            let matched = if event.is_tool_event() {
                tools().any(|tool| matcher.is_match(tool))
            } else {
                matcher.is_match(subject.other.unwrap_or(subject.model))
            };
            if !matched {
                return false;
            }
        }
        true
    }
}

/// One configured hook.
#[derive(Debug, Clone)]
pub(crate) struct HookDef {
    /// For logs and metrics: the `name` field, else `file:line`.
    pub(crate) name: String,
    pub(crate) event: Event,
    /// The event name as configured (the OpenHarness format's hooks get their own name back).
    pub(crate) event_name: String,
    /// Decided by `event_name`'s spelling.
    pub(crate) dialect: Dialect,
    /// The entry's place among the hooks of its file, from 0 (an entry under a name that
    /// stands for two events is one entry).
    pub(crate) index: usize,
    pub(crate) handler: Handler,
    pub(crate) timeout: Duration,
    pub(crate) on_error: OnError,
    pub(crate) filter: Filter,
    /// `None` = not declared: the jcli format result fields apply, `hookSpecificOutput` patches do not.
    pub(crate) capabilities: Option<BTreeSet<String>>,
    /// `async: true`: the hook runs off the chat's path, from the async queue
    /// ([`super::queue`]); its answer counts only for its `systemMessage`.
    pub(crate) run_async: bool,
    /// Starts together with the side-by-side hooks next to it (see the chain engine): every
    /// Claude Code and Gemini CLI settings hook (but a Gemini `sequential` group's), and a YAML
    /// event's hooks under `parallel: true`.
    pub(crate) parallel: bool,
    /// `on_full`: what an async run does when the queue has no room for it.
    pub(crate) on_full: OnFull,
    /// `server`, `workspace` or `session`.
    pub(crate) level: &'static str,
    pub(crate) file: PathBuf,
    pub(crate) line: u64,
    /// The file its prompt was read from (`prompt_file:`), which trust pins with `file`.
    pub(crate) prompt_file: Option<PromptFile>,
}

impl HookDef {
    /// Stable while its file keeps it where it is: the file, the line, the entry and the event.
    pub(crate) fn id(&self) -> String {
        format!(
            "{}:{}:{}:{}",
            self.file.display(),
            self.line,
            self.index,
            self.event.as_str()
        )
    }

    /// Whether the hook runs for this call of its event: its filter against the tool's names
    /// (hookwire's and its dialect's), the model, and the event's other subject.
    pub(crate) fn applies(
        &self,
        event: Event,
        tool: Option<&str>,
        model: &str,
        trigger: Option<&str>,
    ) -> bool {
        let alias = tool
            .map(|tool| super::dialect::tools::name_for(self.dialect, tool))
            .filter(|alias| Some(*alias) != tool);
        let subject = Subject {
            tools: [tool, alias],
            model,
            other: self.other_subject(event, trigger),
        };
        self.filter.matches(event, &subject)
    }

    /// What `matcher` matches at an event that is not about a tool or a model call
    /// (`trigger`: a compaction's, `auto` or `manual`).
    fn other_subject<'a>(&self, event: Event, trigger: Option<&'a str>) -> Option<&'a str> {
        use Dialect::*;
        Some(match (event, self.dialect) {
            (Event::RunCompleted | Event::RunFailed, _) => TRIGGER_TYPE,
            // A compaction's trigger: the `SessionStart` that follows a compaction.
            (Event::SessionStart, Claude) if trigger.is_some() => "compact",
            (Event::SessionStart, Claude | Gemini) => "startup",
            (Event::SessionEnd, Claude) => "other",
            (Event::SessionEnd, Gemini) => "exit",
            (Event::PreAutoCompact | Event::PostAutoCompact, Claude | Gemini) => {
                trigger.unwrap_or("auto")
            }
            (Event::Notification, Claude) => "permission_prompt",
            (Event::Notification, Gemini) => "ToolPermission",
            _ => return None,
        })
    }
}

/// What is wrong with one field of a hook's spec (its `timeout`, its `matcher`), for the hook
/// file readers of every dialect, which add where.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum HookSpecError {
    /// A `timeout` out of range in the dialect's unit.
    #[error("timeout {value} must be a number of {unit} between 0 and {most}")]
    Timeout {
        value: f64,
        unit: &'static str,
        most: u32,
    },
    /// A `matcher` that is not a valid regex (the regex error, on one line).
    #[error("matcher is not a valid regex: {0}")]
    Matcher(String),
}

mod build;
mod env;
mod matcher;
mod parse;
mod prompt_file;
mod raw;

pub(crate) use build::{timeout_of, Built, Place};
pub(crate) use env::check_env;
pub(crate) use matcher::{compile_matcher, ignored_matcher, matcher_applies};
pub(crate) use parse::{parse_hooks, unsupported_event};
pub(crate) use prompt_file::PromptFile;
use raw::one_line;

#[cfg(test)]
mod tests;
