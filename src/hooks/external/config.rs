//! Hook files in YAML, seed 001's shape: event name → list of hooks.
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
//! before_model_call:               # seed 004 names are aliases
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

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use regex::Regex;
use serde::Deserialize;
use serde_saphyr::Spanned;

use super::event::{Dialect, Event, Spelling, CAPABILITIES, TRIGGER_TYPE};
use crate::types::Problem;

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
    /// input JSON is added after the prompt (`type: prompt`, seed 004: the runtime injects the
    /// envelope); `type: llm` (seed 001) sends the filled template only.
    Llm {
        prompt: String,
        model: Option<String>,
        envelope: bool,
    },
    /// A sub-run of the agent loop (at most 4 rounds) with the read-only tools; its final JSON
    /// is the result. `agent` names one of the server's configured hook agents (seed 004:
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
    /// The event name as configured (seed 004 hooks get their own name back).
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
    /// `None` = not declared: seed 001 result fields apply, `hookSpecificOutput` patches do not.
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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHook {
    name: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    url: Option<String>,
    headers: Option<BTreeMap<String, String>>,
    prompt: Option<String>,
    /// OpenHarness format: the prompt read from a file beside the hook file.
    prompt_file: Option<String>,
    model: Option<String>,
    timeout: Option<f64>,
    on_error: Option<String>,
    env: Option<BTreeMap<String, String>>,
    filter: Option<RawFilter>,
    matcher: Option<String>,
    capabilities: Option<Vec<String>>,
    /// `type: agent`: the configured hook agent to ask.
    agent: Option<String>,
    /// Run off the chat's path (PROTOCOL section 11).
    #[serde(rename = "async")]
    run_async: Option<bool>,
    /// `drop` (the default) or `wait`: an async run that finds the queue full.
    on_full: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFilter {
    tool_name: Option<String>,
    tool_matcher: Option<String>,
    model_prefix: Option<String>,
}

type RawFile = HashMap<Spanned<String>, Option<RawEvent>>;

/// An event's hooks: a list, or `{parallel: true, hooks: [...]}` to run them side by side.
#[derive(Debug, Default)]
struct RawEvent {
    parallel: bool,
    hooks: Vec<Spanned<RawHook>>,
}

impl<'de> Deserialize<'de> for RawEvent {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = RawEvent;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a list of hooks, or a mapping with `hooks` (and `parallel`)")
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<RawEvent, A::Error> {
                let mut hooks = Vec::new();
                while let Some(hook) = seq.next_element()? {
                    hooks.push(hook);
                }
                Ok(RawEvent {
                    parallel: false,
                    hooks,
                })
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<RawEvent, A::Error> {
                let mut event = RawEvent::default();
                let mut seen_hooks = false;
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "parallel" => event.parallel = map.next_value()?,
                        "hooks" => {
                            event.hooks = map.next_value::<Option<Vec<_>>>()?.unwrap_or_default();
                            seen_hooks = true;
                        }
                        other => {
                            return Err(serde::de::Error::unknown_field(
                                other,
                                &["parallel", "hooks"],
                            ))
                        }
                    }
                }
                if !seen_hooks {
                    return Err(serde::de::Error::missing_field("hooks"));
                }
                Ok(event)
            }
        }
        deserializer.deserialize_any(Visit)
    }
}

/// Parses one hook file. Returns the hooks that are valid and every problem (errors, with the
/// file and, where known, the line and the entry, and warnings); a file with any error should
/// not be used.
pub(crate) fn parse_hooks(
    path: &Path,
    text: &str,
    level: &'static str,
) -> (Vec<HookDef>, Vec<Problem>) {
    if text.trim().is_empty() {
        return (Vec::new(), Vec::new());
    }
    let options = serde_saphyr::options! { strict_booleans: true };
    let raw: RawFile = match serde_saphyr::from_str_with_options(text, options) {
        Ok(raw) => raw,
        Err(error) => {
            return (
                Vec::new(),
                vec![Problem::error(one_line(&error.to_string())).in_file(path)],
            )
        }
    };
    let mut events: Vec<(Spanned<String>, RawEvent)> = raw
        .into_iter()
        .map(|(k, v)| (k, v.unwrap_or_default()))
        .collect();
    events.sort_by_key(|(k, _)| k.referenced.line());
    let mut hooks = Vec::new();
    let mut problems = Vec::new();
    let mut index = 0;
    for (event_name, entries) in events {
        let line = event_name.referenced.line();
        let (dialect, canonical) = match Event::spelling(&event_name.value, None) {
            Spelling::Known(dialect, events) => (dialect, events),
            Spelling::Unsupported(dialect) => {
                problems.push(
                    unsupported_event(&event_name.value, dialect)
                        .in_file(path)
                        .at_line(line),
                );
                continue;
            }
            Spelling::Unknown => {
                problems.push(
                    Problem::error(format!(
                        "unknown event {:?} (expected one of {})",
                        event_name.value,
                        Event::known_names().join(", ")
                    ))
                    .in_file(path)
                    .at_line(line),
                );
                continue;
            }
        };
        let parallel = entries.parallel;
        for (position, entry) in entries.hooks.into_iter().enumerate() {
            let line = entry.referenced.line();
            let field = format!("{}[{position}]", event_name.value);
            let at = |problem: Problem| problem.in_file(path).at_line(line).in_field(field.clone());
            let mut raw = entry.value;
            let prompt_file = match with_prompt_file(path, &mut raw) {
                Ok(prompt_file) => prompt_file,
                Err(error) => {
                    problems.push(at(Problem::error(error)));
                    index += 1;
                    continue;
                }
            };
            match build(raw, level, dialect, canonical) {
                Ok((built, warnings)) => {
                    problems.extend(warnings.into_iter().map(|w| at(Problem::warning(w))));
                    let place = Place {
                        event_name: &event_name.value,
                        dialect,
                        level,
                        file: path,
                        line,
                        index,
                        parallel,
                    };
                    hooks.extend(built.define(canonical, &place).into_iter().map(|mut hook| {
                        hook.prompt_file = prompt_file.clone();
                        hook
                    }));
                }
                Err(errors) => problems.extend(errors.into_iter().map(|e| at(Problem::error(e)))),
            }
            index += 1;
        }
    }
    (hooks, problems)
}

/// Reads an entry's `prompt_file` into its `prompt`; returns the file read.
fn with_prompt_file(path: &Path, raw: &mut RawHook) -> Result<Option<PromptFile>, String> {
    let Some(name) = raw.prompt_file.take() else {
        return Ok(None);
    };
    if raw.prompt.is_some() {
        return Err("give `prompt` or `prompt_file`, not both".into());
    }
    if !matches!(raw.kind.as_deref(), Some("prompt" | "llm" | "agent")) {
        return Err("`prompt_file` applies to prompt, llm and agent hooks".into());
    }
    let (text, file) = prompt_file::read(path, &name)?;
    raw.prompt = Some(text);
    Ok(Some(file))
}

/// The warning for a hook under an event of Claude Code or Gemini CLI that hookwire lacks.
pub(super) fn unsupported_event(name: &str, dialect: Dialect) -> Problem {
    Problem::warning(format!(
        "{name} is a {} event that hookwire does not have; its hooks never run",
        match dialect {
            Dialect::Gemini => "Gemini CLI",
            _ => "Claude Code",
        }
    ))
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default()
}

pub(super) fn one_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// An entry's hook, before it is placed under its events.
#[derive(Debug, Clone)]
pub(super) struct Built {
    pub(crate) name: Option<String>,
    pub(crate) handler: Handler,
    pub(crate) timeout: Duration,
    pub(crate) on_error: OnError,
    pub(crate) filter: Filter,
    pub(crate) capabilities: Option<BTreeSet<String>>,
    pub(crate) run_async: bool,
    pub(crate) on_full: OnFull,
}

/// Where an entry was configured.
pub(super) struct Place<'a> {
    pub(crate) event_name: &'a str,
    pub(crate) dialect: Dialect,
    pub(crate) level: &'static str,
    pub(crate) file: &'a Path,
    pub(crate) line: u64,
    pub(crate) index: usize,
    /// Its hooks run side by side with their neighbours.
    pub(crate) parallel: bool,
}

impl Built {
    /// One hook per canonical event the configured name stands for.
    pub(super) fn define(self, events: &[Event], place: &Place<'_>) -> Vec<HookDef> {
        let name = self
            .name
            .unwrap_or_else(|| format!("{}:{}", file_name(place.file), place.line));
        events
            .iter()
            .map(|event| HookDef {
                name: name.clone(),
                event: *event,
                event_name: place.event_name.to_string(),
                dialect: place.dialect,
                index: place.index,
                handler: self.handler.clone(),
                timeout: self.timeout,
                on_error: self.on_error,
                filter: self.filter.clone(),
                capabilities: self.capabilities.clone(),
                run_async: self.run_async,
                parallel: place.parallel,
                on_full: self.on_full,
                level: place.level,
                file: place.file.to_path_buf(),
                line: place.line,
                prompt_file: None,
            })
            .collect()
    }
}

/// The longest timeout a hook may have.
const MAX_TIMEOUT: Duration = Duration::from_secs(600);

/// A configured `timeout` in the dialect's unit (Gemini CLI: milliseconds; the others:
/// seconds), or why it is wrong.
pub(super) fn timeout_of(value: f64, dialect: Dialect) -> Result<Duration, String> {
    let (seconds, unit, most) = match dialect {
        Dialect::Gemini => (value / 1000.0, "milliseconds", 600_000),
        _ => (value, "seconds", 600),
    };
    if value.is_finite() && seconds > 0.0 && seconds <= MAX_TIMEOUT.as_secs_f64() {
        Ok(Duration::from_secs_f64(seconds))
    } else {
        Err(format!(
            "timeout {value} must be a number of {unit} between 0 and {most}"
        ))
    }
}

/// The hook an entry describes and its warnings, or what is wrong with it (messages; the
/// caller adds where).
fn build(
    raw: RawHook,
    level: &str,
    dialect: Dialect,
    events: &[Event],
) -> Result<(Built, Vec<String>), Vec<String>> {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    let kind = raw.kind.clone().unwrap_or_else(|| {
        if raw.url.is_some() {
            "http".into()
        } else {
            "command".into()
        }
    });
    let required = |value: &Option<String>, field: &str, errors: &mut Vec<String>| -> String {
        match value {
            Some(v) if !v.trim().is_empty() => v.clone(),
            _ => {
                errors.push(format!("{kind} hooks need a non-empty `{field}`"));
                String::new()
            }
        }
    };
    let handler = match kind.as_str() {
        "command" | "bash" => Handler::Command {
            command: required(&raw.command, "command", &mut errors),
            env: raw.env.clone().unwrap_or_default(),
        },
        "http" => {
            let url = required(&raw.url, "url", &mut errors);
            let scheme_ok = url.starts_with("http://") || url.starts_with("https://");
            if !url.is_empty() && !scheme_ok {
                errors.push(format!("url {url:?} must start with http:// or https://"));
            }
            Handler::Http {
                url,
                headers: raw.headers.clone().unwrap_or_default(),
            }
        }
        "llm" | "prompt" => Handler::Llm {
            prompt: required(&raw.prompt, "prompt", &mut errors),
            model: raw.model.clone(),
            envelope: kind == "prompt",
        },
        "agent" => Handler::Agent {
            prompt: required(&raw.prompt, "prompt", &mut errors),
            agent: raw.agent.clone(),
        },
        other => {
            errors.push(format!(
                "unknown handler type {other:?} (expected command, http, llm, prompt or agent)"
            ));
            Handler::Command {
                command: String::new(),
                env: BTreeMap::new(),
            }
        }
    };
    match (&handler, &raw.env) {
        (Handler::Command { env, .. }, _) => errors.extend(check_env(env, level)),
        (_, Some(_)) => errors.push(format!("`env` applies to command hooks, not {kind}")),
        (_, None) => {}
    }
    if raw.agent.is_some() && !matches!(handler, Handler::Agent { .. }) {
        errors.push(format!("`agent` applies to agent hooks, not {kind}"));
    }
    let timeout = match raw.timeout.map(|value| timeout_of(value, dialect)) {
        None => handler.default_timeout(),
        Some(Ok(timeout)) => timeout,
        Some(Err(error)) => {
            errors.push(error);
            handler.default_timeout()
        }
    };
    let on_error = match raw.on_error.as_deref() {
        None | Some("skip") => OnError::Skip,
        Some("abort") => OnError::Abort,
        Some("block") => OnError::Block,
        Some(other) => {
            errors.push(format!(
                "on_error {other:?} must be \"skip\", \"abort\" or \"block\""
            ));
            OnError::Skip
        }
    };
    let raw_filter = raw.filter.unwrap_or_default();
    let tool_event = events.iter().any(|e| e.is_tool_event());
    let matcher = match raw.matcher.as_deref() {
        None => None,
        Some(text) if !events.iter().all(|e| matcher_applies(*e, dialect)) => {
            if !(dialect.is_foreign() && matches!(text.trim(), "" | "*")) {
                let name = events.first().map(|e| e.as_str()).unwrap_or_default();
                warnings.push(ignored_matcher(name, dialect));
            }
            None
        }
        Some(text) => match compile_matcher(text, dialect, tool_event) {
            Ok(matcher) => matcher,
            Err(error) => {
                errors.push(error);
                None
            }
        },
    };
    let tool_matcher = match raw_filter.tool_matcher.as_deref().map(str::trim) {
        None => None,
        // Anchored: the whole name matches the pattern, as the exact alternatives always did.
        Some(pattern) => match Regex::new(&format!("^(?:{pattern})$")) {
            Ok(regex) => Some(regex),
            Err(error) => {
                errors.push(format!(
                    "filter.tool_matcher is not a valid pattern: {}",
                    one_line(&error.to_string())
                ));
                None
            }
        },
    };
    let filter = Filter {
        tool_name: raw_filter.tool_name,
        tool_matcher,
        model_prefix: raw_filter.model_prefix,
        matcher,
    };
    let capabilities = raw.capabilities.map(|list| {
        let mut set = BTreeSet::new();
        for capability in list {
            let canonical = match capability.as_str() {
                "tool_input" => "tool_arguments".to_string(),
                "tool_output" => "tool_result".to_string(),
                other => other.to_string(),
            };
            if !CAPABILITIES.contains(&canonical.as_str()) {
                errors.push(format!(
                    "unknown capability {capability:?} (expected one of {})",
                    CAPABILITIES.join(", ")
                ));
            }
            set.insert(canonical);
        }
        set
    });
    let run_async = raw.run_async.unwrap_or(false);
    if run_async && raw.on_error.is_some() {
        // Nothing waits for an async hook's answer, so its failure has nothing to refuse.
        warnings
            .push("on_error does not apply to an async hook (its failure is only logged)".into());
    }
    let on_full = match raw.on_full.as_deref() {
        None | Some("drop") => OnFull::Drop,
        Some("wait") => OnFull::Wait,
        Some(other) => {
            errors.push(format!("on_full {other:?} must be \"drop\" or \"wait\""));
            OnFull::Drop
        }
    };
    if raw.on_full.is_some() && !run_async {
        warnings.push("on_full applies to async hooks only (async: true); ignored".into());
    }
    if errors.is_empty() {
        let built = Built {
            name: raw.name,
            handler,
            timeout,
            on_error,
            filter,
            capabilities,
            run_async,
            on_full,
        };
        Ok((built, warnings))
    } else {
        Err(errors)
    }
}

mod env;
mod matcher;
mod prompt_file;

pub(crate) use env::check_env;
pub(crate) use matcher::{compile_matcher, ignored_matcher, matcher_applies};
pub(crate) use prompt_file::PromptFile;

#[cfg(test)]
mod tests;
