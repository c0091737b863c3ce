//! What a hook is, the vocabulary every other room speaks: one configured hook ([`HookDef`]:
//! its handler, filter, dialect, place), the events and their spellings ([`event`]), what each
//! event carries, may change and may decide ([`rules`]), the values a chain works on and what a
//! hook's answer says once read ([`values`]), and a loaded set of hooks ([`HookSet`]). Nothing
//! here reads a file, runs a hook or knows a dialect's JSON.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

use regex::Regex;

pub(crate) mod event;
pub(crate) mod rules;
mod set;
pub(crate) mod values;

pub(crate) use event::{Dialect, Event, Spelling, TRIGGER_TYPE};
pub(crate) use set::HookSet;
pub(crate) use values::{Control, Envelope, EventState, HookOutput, RunResult};

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

    pub(crate) fn default_timeout(&self) -> Duration {
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
    /// (`run::queue`); its answer counts only for its `systemMessage`.
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

/// The level of the hooks the model registers (`session`: what the protocol has always called
/// them, in `hook_trace` frames, `/api/hooks` and the `session_hook` frame).
pub(crate) const REGISTERED_LEVEL: &str = "session";

impl HookDef {
    /// Whether the model registered it (`register_hook`) rather than a file.
    pub(crate) fn is_registered(&self) -> bool {
        self.level == REGISTERED_LEVEL
    }

    /// The id its figures for `/api/hooks` are kept under: its [`HookDef::id`], or for a
    /// registered hook (which has no file) its event and name.
    pub(crate) fn figures_id(&self) -> String {
        if self.is_registered() {
            crate::hooks::stats::registered_hook_id(&self.event_name, &self.name)
        } else {
            self.id()
        }
    }

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
    /// (hookwire's, and its dialect's when it differs: `wire::tools::names`), the model, and
    /// the event's other subject.
    pub(crate) fn applies(
        &self,
        event: Event,
        tools: [Option<&str>; 2],
        model: &str,
        trigger: Option<&str>,
    ) -> bool {
        let subject = Subject {
            tools,
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

/// A prompt file a hook was built from (`prompt_file:`, the OpenHarness format), which trust
/// pins with the hook file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PromptFile {
    /// As the hook file names it, joined to the folder (the key trust pins it under).
    pub(crate) path: PathBuf,
    /// Of the bytes the prompt was read from.
    pub(crate) sha256: String,
}
