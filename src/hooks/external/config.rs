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
//! ```
//!
//! Every problem is reported with the file and line.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use regex::Regex;
use serde::Deserialize;
use serde_saphyr::Spanned;

use super::event::Event;
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
    /// A prompt template sent to the model; its JSON answer is the result.
    Llm {
        prompt: String,
        model: Option<String>,
    },
    /// A sub-run of the agent loop (at most 4 rounds) with the read-only tools; its final JSON
    /// is the result.
    Agent { prompt: String },
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

    fn default_timeout(&self) -> Duration {
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

/// When a hook applies; all set fields must match (AND).
#[derive(Debug, Clone, Default)]
pub(crate) struct Filter {
    /// Exact tool name (tool events only).
    pub(crate) tool_name: Option<String>,
    /// `A|B` alternatives; ignored when `tool_name` is set.
    pub(crate) tool_matcher: Option<Vec<String>>,
    pub(crate) model_prefix: Option<String>,
    /// A regex on the event's subject: the tool name for tool events, the model otherwise.
    pub(crate) matcher: Option<Regex>,
}

impl Filter {
    pub(crate) fn matches(&self, event: Event, tool: Option<&str>, model: &str) -> bool {
        if event.is_tool_event() {
            let tool = tool.unwrap_or_default();
            if let Some(name) = &self.tool_name {
                if name != tool {
                    return false;
                }
            } else if let Some(names) = &self.tool_matcher {
                if !names.iter().any(|n| n == tool) {
                    return false;
                }
            }
        }
        if let Some(prefix) = &self.model_prefix {
            if !model.starts_with(prefix.as_str()) {
                return false;
            }
        }
        if let Some(matcher) = &self.matcher {
            let subject = if event.is_tool_event() {
                tool.unwrap_or_default()
            } else {
                model
            };
            if !matcher.is_match(subject) {
                return false;
            }
        }
        true
    }
}

/// What a hook result may change (seed 004 `capabilities`); the names are the result fields.
pub(crate) const CAPABILITIES: [&str; 9] = [
    "user_input",
    "messages",
    "system_prompt",
    "tool_arguments",
    "tool_result",
    "tool_error",
    "assistant_output",
    "inject_messages",
    "additional_context",
];

/// One configured hook.
#[derive(Debug, Clone)]
pub(crate) struct HookDef {
    /// For logs and metrics: the `name` field, else `file:line`.
    pub(crate) name: String,
    pub(crate) event: Event,
    /// The event name as configured (seed 004 hooks get their own name back).
    pub(crate) event_name: String,
    pub(crate) handler: Handler,
    pub(crate) timeout: Duration,
    pub(crate) on_error: OnError,
    pub(crate) filter: Filter,
    /// `None` = not declared: seed 001 result fields apply, `hookSpecificOutput` patches do not.
    pub(crate) capabilities: Option<BTreeSet<String>>,
    /// `server`, `workspace` or `session`.
    pub(crate) level: &'static str,
    pub(crate) file: PathBuf,
    pub(crate) line: u64,
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
    model: Option<String>,
    timeout: Option<f64>,
    on_error: Option<String>,
    env: Option<BTreeMap<String, String>>,
    filter: Option<RawFilter>,
    matcher: Option<String>,
    capabilities: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFilter {
    tool_name: Option<String>,
    tool_matcher: Option<String>,
    model_prefix: Option<String>,
}

type RawFile = HashMap<Spanned<String>, Option<Vec<Spanned<RawHook>>>>;

/// Parses one hook file. Returns the hooks that are valid and every problem (all errors, with the
/// file and, where known, the line and the entry); a file with any problem should not be used.
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
    let mut events: Vec<(Spanned<String>, Vec<Spanned<RawHook>>)> = raw
        .into_iter()
        .map(|(k, v)| (k, v.unwrap_or_default()))
        .collect();
    events.sort_by_key(|(k, _)| k.referenced.line());
    let mut hooks = Vec::new();
    let mut problems = Vec::new();
    for (event_name, entries) in events {
        let line = event_name.referenced.line();
        let Some(canonical) = Event::parse(&event_name.value) else {
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
        };
        for (index, entry) in entries.into_iter().enumerate() {
            let line = entry.referenced.line();
            match build(entry.value, level) {
                Ok((name, handler, timeout, on_error, filter, capabilities)) => {
                    for event in canonical {
                        hooks.push(HookDef {
                            name: name
                                .clone()
                                .unwrap_or_else(|| format!("{}:{line}", file_name(path))),
                            event: *event,
                            event_name: event_name.value.clone(),
                            handler: handler.clone(),
                            timeout,
                            on_error,
                            filter: filter.clone(),
                            capabilities: capabilities.clone(),
                            level,
                            file: path.to_path_buf(),
                            line,
                        });
                    }
                }
                Err(errors) => {
                    let entry = format!("{}[{index}]", event_name.value);
                    problems.extend(errors.into_iter().map(|message| {
                        Problem::error(message)
                            .in_file(path)
                            .at_line(line)
                            .in_field(entry.clone())
                    }))
                }
            }
        }
    }
    (hooks, problems)
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default()
}

fn one_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

type Built = (
    Option<String>,
    Handler,
    Duration,
    OnError,
    Filter,
    Option<BTreeSet<String>>,
);

/// The hook an entry describes, or what is wrong with it (messages; the caller adds where).
fn build(raw: RawHook, level: &str) -> Result<Built, Vec<String>> {
    let mut errors = Vec::new();
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
        },
        "agent" => Handler::Agent {
            prompt: required(&raw.prompt, "prompt", &mut errors),
        },
        other => {
            errors.push(format!(
                "unknown handler type {other:?} (expected command, http, llm or agent)"
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
    let timeout = match raw.timeout {
        None => handler.default_timeout(),
        Some(seconds) if seconds.is_finite() && seconds > 0.0 && seconds <= 600.0 => {
            Duration::from_secs_f64(seconds)
        }
        Some(seconds) => {
            errors.push(format!(
                "timeout {seconds} must be a number of seconds between 0 and 600"
            ));
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
    let matcher = match raw.matcher.as_deref().map(Regex::new) {
        None => None,
        Some(Ok(regex)) => Some(regex),
        Some(Err(error)) => {
            errors.push(format!(
                "matcher is not a valid regex: {}",
                one_line(&error.to_string())
            ));
            None
        }
    };
    let filter = Filter {
        tool_name: raw_filter.tool_name,
        tool_matcher: raw_filter.tool_matcher.map(|m| {
            m.split('|')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect()
        }),
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
    if errors.is_empty() {
        Ok((raw.name, handler, timeout, on_error, filter, capabilities))
    } else {
        Err(errors)
    }
}

/// Names that a hook's `env` may not set: the marker the runner finds a hook's processes by.
const RESERVED_ENV: [&str; 1] = [super::process::RUN_MARKER];

/// What is wrong with a command hook's `env` map. A value may name server variables as
/// `${NAME}` only in a server-level file, and each must be set when the file loads (a typo
/// would otherwise reach the hook as an empty secret); workspace files are the workspace's
/// and get no server variable.
fn check_env(env: &BTreeMap<String, String>, level: &str) -> Vec<String> {
    let mut errors = Vec::new();
    for (name, value) in env {
        if !is_variable_name(name) {
            errors.push(format!(
                "env name {name:?} must be letters, digits and `_`, not starting with a digit"
            ));
        } else if RESERVED_ENV.contains(&name.as_str()) {
            errors.push(format!("env name {name} is reserved by hookwire"));
        }
        if value.contains('\0') {
            errors.push(format!("env {name} contains a NUL character"));
            continue;
        }
        let names = match variables_in(value) {
            Ok(names) => names,
            Err(error) => {
                errors.push(format!("env {name}: {error}"));
                continue;
            }
        };
        if names.is_empty() {
            continue;
        }
        if level != "server" {
            errors.push(format!(
                "env {name} names a server variable (${{{}}}); only server-level hook files may",
                names[0]
            ));
            continue;
        }
        for variable in names {
            if std::env::var_os(variable).is_none() {
                errors.push(format!(
                    "env {name} names ${{{variable}}}, which is not set in the server's environment"
                ));
            }
        }
    }
    errors
}

fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The pieces of an `env` value: text, and `${NAME}` references.
enum Piece<'a> {
    Text(&'a str),
    Variable(&'a str),
}

/// Splits `value` at its `${NAME}` references. Only `${` is special: a `$` before anything
/// else is text.
fn pieces(value: &str) -> Result<Vec<Piece<'_>>, String> {
    let mut out = Vec::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push(Piece::Text(&rest[..start]));
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("`${{` without a closing `}}` in {value:?}"))?;
        let name = &after[..end];
        if !is_variable_name(name) {
            return Err(format!("${{{name}}} is not a variable name"));
        }
        out.push(Piece::Variable(name));
        rest = &after[end + 1..];
    }
    out.push(Piece::Text(rest));
    Ok(out)
}

/// The server variables an `env` value names.
fn variables_in(value: &str) -> Result<Vec<&str>, String> {
    Ok(pieces(value)?
        .into_iter()
        .filter_map(|piece| match piece {
            Piece::Variable(name) => Some(name),
            Piece::Text(_) => None,
        })
        .collect())
}

/// An `env` value with each `${NAME}` replaced by `lookup(NAME)`. A name not set is empty
/// (loading refused such a file, so this is only reached when the server's environment
/// changed since); a value that does not parse is kept as it is (loading refused it too).
pub(crate) fn expand(value: &str, lookup: &dyn Fn(&str) -> Option<String>) -> String {
    let Ok(pieces) = pieces(value) else {
        return value.to_string();
    };
    pieces
        .into_iter()
        .map(|piece| match piece {
            Piece::Text(text) => text.to_string(),
            Piece::Variable(name) => lookup(name).unwrap_or_default(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> (Vec<HookDef>, Vec<String>) {
        let (hooks, problems) = parse_hooks(Path::new("hooks.yaml"), text, "server");
        assert!(problems.iter().all(Problem::is_error), "{problems:?}");
        (hooks, problems.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn both_vocabularies_and_all_handlers() {
        let (hooks, problems) = parse(
            "pre_tool_execution:\n  - command: ./guard.sh\n    timeout: 5\n    filter:\n      tool_matcher: \"read_file|search_text\"\n\
             before_model_call:\n  - type: http\n    url: http://127.0.0.1:1/h\n    matcher: '^gpt-'\n    capabilities: [system_prompt]\n\
             stop:\n  - type: prompt\n    prompt: 'judge {{assistant_output}}'\n\
             after_tool_dispatch:\n  - type: agent\n    prompt: check\n    on_error: abort\n\
             pre_send_message:\n  - command: x\n    on_error: block\n    env: {A: 'b ${PATH}'}\n",
        );
        assert_eq!(problems, Vec::<String>::new());
        let summary: Vec<(Event, &str, u64)> = hooks
            .iter()
            .map(|h| (h.event, h.handler.kind(), h.line))
            .collect();
        assert_eq!(
            summary,
            vec![
                (Event::PreToolExecution, "command", 2),
                (Event::PreLlmRequest, "http", 7),
                (Event::Stop, "llm", 12),
                (Event::PostToolExecution, "agent", 15),
                (Event::PostToolExecutionFailure, "agent", 15),
                (Event::PreSendMessage, "command", 19),
            ]
        );
        assert_eq!(hooks[0].timeout, Duration::from_secs(5));
        assert_eq!(
            hooks[0].filter.tool_matcher,
            Some(vec!["read_file".to_string(), "search_text".to_string()])
        );
        assert_eq!(hooks[1].event_name, "before_model_call");
        assert_eq!(hooks[2].timeout, Duration::from_secs(30));
        assert_eq!(hooks[3].on_error, OnError::Abort);
        assert_eq!(hooks[5].on_error, OnError::Block);
        let Handler::Command { env, .. } = &hooks[5].handler else {
            panic!("{:?}", hooks[5].handler)
        };
        assert_eq!(env.get("A").map(String::as_str), Some("b ${PATH}"));
    }

    #[test]
    fn env_maps_name_server_variables_only_at_server_level_and_only_set_ones() {
        let problems = |text: &str, level: &'static str| -> Vec<String> {
            let (_, problems) = parse_hooks(Path::new("hooks.yaml"), text, level);
            problems.iter().map(ToString::to_string).collect()
        };
        let hook = |env: &str| format!("stop:\n  - command: x\n    env: {env}\n");
        assert_eq!(
            problems(
                &hook("{TOKEN: 'Bearer ${PATH}', LITERAL: 'a $b'}"),
                "server"
            ),
            Vec::<String>::new()
        );
        let cases = [
            (
                "{TOKEN: '${HOOKWIRE_TEST_NEVER_SET}'}",
                "server",
                "env TOKEN names ${HOOKWIRE_TEST_NEVER_SET}, which is not set",
            ),
            (
                "{TOKEN: '${PATH}'}",
                "workspace",
                "only server-level hook files may",
            ),
            ("{TOKEN: '${PATH'}", "server", "without a closing"),
            ("{TOKEN: '${1X}'}", "server", "is not a variable name"),
            ("{'1X': a}", "server", "env name \"1X\" must be"),
            ("{HOOKWIRE_HOOK_RUN: a}", "server", "is reserved"),
        ];
        for (env, level, expected) in cases {
            let found = problems(&hook(env), level);
            assert!(
                found.iter().any(|p| p.contains(expected)),
                "{env}: expected {expected:?} in {found:?}"
            );
        }
        let http = "stop:\n  - type: http\n    url: http://127.0.0.1:1/\n    env: {A: b}\n";
        assert!(problems(http, "server")[0].contains("`env` applies to command hooks"));
    }

    #[test]
    fn env_values_expand_server_variables() {
        let lookup = |name: &str| (name == "KEY").then(|| "k3y".to_string());
        assert_eq!(expand("Bearer ${KEY}!", &lookup), "Bearer k3y!");
        assert_eq!(expand("${KEY}${KEY} $KEY $", &lookup), "k3yk3y $KEY $");
        assert_eq!(expand("[${GONE}]", &lookup), "[]");
    }

    #[test]
    fn problems_name_file_and_line() {
        let cases = [
            (
                "pre_dance:\n  - command: x\n",
                "hooks.yaml:1: unknown event \"pre_dance\"",
            ),
            (
                "stop:\n  - type: shell\n    command: x\n",
                "hooks.yaml:2: stop[0]: unknown handler type \"shell\"",
            ),
            (
                "stop:\n  - command: x\n    matcher: '('\n",
                "hooks.yaml:2: stop[0]: matcher is not a valid regex",
            ),
            (
                "stop:\n  - command: x\n    timeout: -3\n",
                "hooks.yaml:2: stop[0]: timeout -3",
            ),
            ("stop:\n  - command: x\n    timeout: soon\n", "hooks.yaml"),
            ("stop:\n  - command: x\n    colour: red\n", "colour"),
            (
                "stop:\n  - type: http\n",
                "hooks.yaml:2: stop[0]: http hooks need a non-empty `url`",
            ),
            (
                "stop:\n  - command: x\n    capabilities: [everything]\n",
                "unknown capability \"everything\"",
            ),
            (
                "stop:\n  - command: x\n    on_error: explode\n",
                "on_error \"explode\"",
            ),
        ];
        for (text, expected) in cases {
            let (_, problems) = parse(text);
            assert!(
                problems.iter().any(|p| p.contains(expected)),
                "{text:?}: expected {expected:?} in {problems:?}"
            );
        }
    }

    #[test]
    fn filters_and_together() {
        let (hooks, _) = parse(
            "pre_tool_execution:\n  - command: x\n    matcher: '^read'\n    filter:\n      tool_name: read_file\n      tool_matcher: list_dir\n      model_prefix: gpt-\n",
        );
        let filter = &hooks[0].filter;
        assert!(filter.matches(Event::PreToolExecution, Some("read_file"), "gpt-4o"));
        assert!(
            !filter.matches(Event::PreToolExecution, Some("list_dir"), "gpt-4o"),
            "tool_name beats tool_matcher"
        );
        assert!(!filter.matches(Event::PreToolExecution, Some("read_file"), "llama"));
    }
}
