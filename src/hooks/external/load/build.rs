//! One entry of a hook file built into a hook: its handler, timeout, `on_error`, filter,
//! matcher, capabilities and async settings checked, each problem a message (the caller says
//! where).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use regex::Regex;

use super::raw::{one_line, RawHook};
use super::{check_env, compile_matcher, ignored_matcher, matcher_applies, HookSpecError};
use crate::hooks::external::hook::rules::CAPABILITIES;
use crate::hooks::external::hook::{Dialect, Event, Filter, Handler, HookDef, OnError, OnFull};

/// An entry's hook, before it is placed under its events.
#[derive(Debug, Clone)]
pub(crate) struct Built {
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
pub(crate) struct Place<'a> {
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
    pub(crate) fn define(self, events: &[Event], place: &Place<'_>) -> Vec<HookDef> {
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
pub(crate) fn timeout_of(value: f64, dialect: Dialect) -> Result<Duration, HookSpecError> {
    let (seconds, unit, most) = match dialect {
        Dialect::Gemini => (value / 1000.0, "milliseconds", 600_000),
        _ => (value, "seconds", 600),
    };
    if value.is_finite() && seconds > 0.0 && seconds <= MAX_TIMEOUT.as_secs_f64() {
        Ok(Duration::from_secs_f64(seconds))
    } else {
        Err(HookSpecError::Timeout { value, unit, most })
    }
}

/// The hook an entry describes and its warnings, or what is wrong with it (messages; the
/// caller adds where).
pub(super) fn build(
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
    let handler = handler_of(&raw, &kind, &mut errors);
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
            errors.push(error.to_string());
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
    let filter = filter_of(&raw, dialect, events, &mut errors, &mut warnings);
    let capabilities = raw
        .capabilities
        .clone()
        .map(|list| capabilities_of(list, &mut errors));
    let (run_async, on_full) = async_of(&raw, &mut errors, &mut warnings);
    if !errors.is_empty() {
        return Err(errors);
    }
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
}

/// The handler an entry of `kind` describes; what it lacks goes to `errors`.
fn handler_of(raw: &RawHook, kind: &str, errors: &mut Vec<String>) -> Handler {
    let required = |value: &Option<String>, field: &str, errors: &mut Vec<String>| -> String {
        match value {
            Some(v) if !v.trim().is_empty() => v.clone(),
            _ => {
                errors.push(format!("{kind} hooks need a non-empty `{field}`"));
                String::new()
            }
        }
    };
    match kind {
        "command" | "bash" => Handler::Command {
            command: required(&raw.command, "command", errors),
            env: raw.env.clone().unwrap_or_default(),
        },
        "http" => {
            let url = required(&raw.url, "url", errors);
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
            prompt: required(&raw.prompt, "prompt", errors),
            model: raw.model.clone(),
            envelope: kind == "prompt",
        },
        "agent" => Handler::Agent {
            prompt: required(&raw.prompt, "prompt", errors),
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
    }
}

/// The entry's `filter:` and `matcher` (read in its dialect; a matcher where the event takes
/// none is a warning, unless a foreign dialect's empty or `*`).
fn filter_of(
    raw: &RawHook,
    dialect: Dialect,
    events: &[Event],
    errors: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> Filter {
    let raw_filter = raw.filter.clone().unwrap_or_default();
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
                errors.push(error.to_string());
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
    Filter {
        tool_name: raw_filter.tool_name,
        tool_matcher,
        model_prefix: raw_filter.model_prefix,
        matcher,
    }
}

/// The declared capabilities, under their canonical names (`tool_input` is `tool_arguments`,
/// `tool_output` is `tool_result`); an unknown one goes to `errors`.
fn capabilities_of(list: Vec<String>, errors: &mut Vec<String>) -> BTreeSet<String> {
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
}

/// `async` and `on_full`, with a warning for what does not apply.
fn async_of(raw: &RawHook, errors: &mut Vec<String>, warnings: &mut Vec<String>) -> (bool, OnFull) {
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
    (run_async, on_full)
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default()
}
