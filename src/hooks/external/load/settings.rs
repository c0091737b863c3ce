//! Claude Code's and Gemini CLI's `settings.json` as hook files (docs/protocol.md §9):
//!
//! ```json
//! {"hooks": {"PreToolUse": [{"matcher": "Read", "hooks": [{"type": "command", "command": "…"}]}]}}
//! ```
//!
//! Each hook is the same [`HookDef`] a YAML file gives, in the dialect its event is spelled in
//! (in a Gemini file, the names both tools share are Gemini's). The rest of the file is the
//! other tool's business: settings hookwire does not act on are warnings, never errors, so the
//! file a person already has loads as it is. What hookwire cannot do — an event it does not
//! have, an `mcp_tool` hook — is a warning and the hook does not run; what it does differently
//! — `if`, `asyncRewake` — is a warning (the hook runs for every call its matcher matches; an
//! `asyncRewake` hook runs like an `async` one). `async: true` runs the hook off the chat's path,
//! as hookwire's own `async: true` does. Claude Code's `disableAllHooks` and Gemini CLI's `hooksConfig.enabled: false` /
//! `hooksConfig.disabled` are honoured.
//!
//! JSON carries no line numbers; a hook's line is where its `command` (`url`, `prompt`) key
//! is, found by a forward search (for the trust listing and logs; 0 when not found).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};

use super::{
    check_env, compile_matcher, ignored_matcher, matcher_applies, timeout_of, unsupported_event,
    Built, Place,
};
use crate::hooks::external::hook::{Dialect, Event, Filter, Handler, HookDef, OnError, Spelling};
use crate::types::Problem;

/// The events only Gemini CLI has: a `settings.json` naming one is Gemini's.
const GEMINI_ONLY: [&str; 9] = [
    "BeforeTool",
    "AfterTool",
    "BeforeAgent",
    "AfterAgent",
    "BeforeModel",
    "AfterModel",
    "PreCompress",
    "BeforeToolSelection",
    "hooksConfig",
];

/// Whether `text` is a settings file with hooks, and whose: a JSON object whose `hooks` is an
/// object. Gemini CLI's when an event (or `hooksConfig`) only it has is named, else Claude
/// Code's.
pub(crate) fn detect(text: &str) -> Option<Dialect> {
    let value: Value = serde_json::from_str(text).ok()?;
    let hooks = value.get("hooks")?.as_object()?;
    let gemini = hooks
        .keys()
        .any(|name| GEMINI_ONLY.contains(&name.as_str()))
        || value.get("hooksConfig").is_some();
    Some(if gemini {
        Dialect::Gemini
    } else {
        Dialect::Claude
    })
}

/// Whether a settings file is a hook file at all: it has a `hooks` key (or is not JSON, so its
/// problem is reported).
pub(crate) fn has_hooks(bytes: &[u8]) -> bool {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(value) => value.get("hooks").is_some_and(|hooks| !hooks.is_null()),
        Err(_) => true,
    }
}

/// The field of a hook entry for problems: `hooks.PreToolUse[0].hooks[1]`.
fn field(event: &str, group: usize, hook: Option<usize>) -> String {
    match hook {
        Some(hook) => format!("hooks.{event}[{group}].hooks[{hook}]"),
        None => format!("hooks.{event}[{group}]"),
    }
}

/// Parses a settings file of `dialect` (for the names both tools share). Returns the hooks and
/// every problem (errors: the file should not be used; warnings: what hookwire ignores).
pub(crate) fn parse_settings(
    path: &Path,
    text: &str,
    level: &'static str,
    dialect: Dialect,
) -> (Vec<HookDef>, Vec<Problem>) {
    let mut problems = Vec::new();
    let root: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(error) => {
            let problem = Problem::error(format!("not valid JSON: {error}"))
                .in_file(path)
                .at_line(error.line() as u64);
            return (Vec::new(), vec![problem]);
        }
    };
    let Some(root) = root.as_object() else {
        return (
            Vec::new(),
            vec![Problem::error("a settings file must be a JSON object").in_file(path)],
        );
    };
    let hooks = match root.get("hooks") {
        None | Some(Value::Null) => return (Vec::new(), Vec::new()),
        Some(Value::Object(hooks)) => hooks,
        Some(_) => {
            let problem = Problem::error("`hooks` must be an object of events").in_file(path);
            return (Vec::new(), vec![problem]);
        }
    };
    if root.get("disableAllHooks").and_then(Value::as_bool) == Some(true) {
        let problem = Problem::warning("disableAllHooks is true: none of its hooks run");
        return (Vec::new(), vec![problem.in_file(path)]);
    }
    let config = root.get("hooksConfig");
    if config
        .and_then(|c| c.get("enabled"))
        .and_then(Value::as_bool)
        == Some(false)
    {
        let problem = Problem::warning("hooksConfig.enabled is false: none of its hooks run");
        return (Vec::new(), vec![problem.in_file(path)]);
    }
    let disabled: Vec<&str> = config
        .and_then(|c| c.get("disabled"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut defs = Vec::new();
    let mut index = 0;
    for (event_name, groups) in hooks {
        let (hook_dialect, events) = match Event::spelling(event_name, Some(dialect)) {
            Spelling::Known(d, events) => (d, events),
            Spelling::Unsupported(d) => {
                problems.push(unsupported_event(event_name, d).in_file(path));
                continue;
            }
            Spelling::Unknown => {
                problems.push(
                    Problem::error(format!("unknown event {event_name:?}"))
                        .in_file(path)
                        .in_field(format!("hooks.{event_name}")),
                );
                continue;
            }
        };
        let Some(groups) = groups.as_array() else {
            problems.push(
                Problem::error("must be a list of matcher groups")
                    .in_file(path)
                    .in_field(format!("hooks.{event_name}")),
            );
            continue;
        };
        let mut cursor = text.find(&format!("\"{event_name}\"")).unwrap_or(0);
        for (g, group) in groups.iter().enumerate() {
            let at = |problem: Problem, hook: Option<usize>| {
                problem.in_file(path).in_field(field(event_name, g, hook))
            };
            let Some(group) = group.as_object() else {
                problems.push(at(Problem::error("must be an object"), None));
                continue;
            };
            for key in group.keys() {
                if !matches!(key.as_str(), "matcher" | "hooks" | "sequential") {
                    let message = format!("`{key}` is not used by hookwire; ignored");
                    problems.push(at(Problem::warning(message), None));
                }
            }
            let matcher = match group.get("matcher") {
                None | Some(Value::Null) => None,
                Some(Value::String(text)) => {
                    match matcher(text, hook_dialect, events, event_name) {
                        Ok((matcher, warning)) => {
                            if let Some(warning) = warning {
                                problems.push(at(Problem::warning(warning), None));
                            }
                            matcher
                        }
                        Err(error) => {
                            problems.push(at(Problem::error(error), None));
                            continue;
                        }
                    }
                }
                Some(_) => {
                    problems.push(at(Problem::error("`matcher` must be a string"), None));
                    continue;
                }
            };
            // Claude Code runs an event's matching hooks side by side; so does Gemini CLI, but
            // for a group that says `sequential: true`.
            let parallel = match hook_dialect {
                Dialect::Gemini => group.get("sequential").and_then(Value::as_bool) != Some(true),
                _ => true,
            };
            let Some(entries) = group.get("hooks").and_then(Value::as_array) else {
                problems.push(at(Problem::error("needs a `hooks` list"), None));
                continue;
            };
            for (h, entry) in entries.iter().enumerate() {
                let Some(entry) = entry.as_object() else {
                    problems.push(at(Problem::error("must be an object"), Some(h)));
                    continue;
                };
                let (line, next) = locate(text, cursor, entry);
                cursor = next;
                let built = build(entry, hook_dialect, level, matcher.clone());
                let this = index;
                index += 1;
                let (built, warnings, errors) = match built {
                    Ok((built, warnings)) => (built, warnings, Vec::new()),
                    Err((errors, warnings)) => (None, warnings, errors),
                };
                for message in warnings {
                    problems.push(at(Problem::warning(message), Some(h)).at_line(line));
                }
                for message in errors {
                    problems.push(at(Problem::error(message), Some(h)).at_line(line));
                }
                let Some(built) = built else {
                    continue;
                };
                let id = entry_string(entry, "name").or_else(|| entry_string(entry, "command"));
                if id.is_some_and(|id| disabled.contains(&id.as_str())) {
                    continue;
                }
                let place = Place {
                    event_name,
                    dialect: hook_dialect,
                    level,
                    file: path,
                    line,
                    index: this,
                    parallel,
                };
                defs.extend(built.define(events, &place));
            }
        }
    }
    (defs, problems)
}

/// A group's matcher, and a warning when the event takes none.
fn matcher(
    text: &str,
    dialect: Dialect,
    events: &[Event],
    event_name: &str,
) -> Result<(Option<regex::Regex>, Option<String>), String> {
    if !events.iter().all(|e| matcher_applies(*e, dialect)) {
        let trivial = matches!(text.trim(), "" | "*");
        return Ok((
            None,
            (!trivial).then(|| ignored_matcher(event_name, dialect)),
        ));
    }
    let tool_event = events.iter().any(|e| e.is_tool_event());
    compile_matcher(text, dialect, tool_event)
        .map(|m| (m, None))
        .map_err(|error| error.to_string())
}

fn entry_string(entry: &Map<String, Value>, key: &str) -> Option<String> {
    entry.get(key).and_then(Value::as_str).map(str::to_string)
}

/// The line of a hook entry's defining key, searched from `cursor`; and where the next search
/// starts.
fn locate(text: &str, cursor: usize, entry: &Map<String, Value>) -> (u64, usize) {
    let key = ["command", "url", "prompt", "server", "type"]
        .into_iter()
        .find(|key| entry.contains_key(*key))
        .unwrap_or("type");
    let needle = format!("\"{key}\"");
    match text.get(cursor..).and_then(|rest| rest.find(&needle)) {
        Some(offset) => {
            let at = cursor + offset;
            let line = text[..at].matches('\n').count() as u64 + 1;
            (line, at + needle.len())
        }
        None => (0, cursor),
    }
}

/// The fields of a hook entry each dialect documents; others are warnings.
fn known_field(dialect: Dialect, key: &str) -> bool {
    let common = matches!(key, "type" | "command" | "timeout");
    match dialect {
        Dialect::Gemini => common || matches!(key, "name" | "description" | "env"),
        _ => {
            common
                || matches!(
                    key,
                    "args"
                        | "shell"
                        | "url"
                        | "headers"
                        | "allowedEnvVars"
                        | "prompt"
                        | "model"
                        | "async"
                        | "asyncRewake"
                        | "if"
                        | "statusMessage"
                        | "once"
                        | "continueOnBlock"
                        | "server"
                        | "tool"
                        | "input"
                        | "name"
                )
        }
    }
}

/// The hook and its warnings (no hook: one hookwire cannot run), or the errors and warnings.
type BuildResult = Result<(Option<Built>, Vec<String>), (Vec<String>, Vec<String>)>;

/// The hook one entry describes.
fn build(
    entry: &Map<String, Value>,
    dialect: Dialect,
    level: &str,
    matcher: Option<regex::Regex>,
) -> BuildResult {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    for key in entry.keys() {
        if !known_field(dialect, key) {
            warnings.push(format!("`{key}` is not used by hookwire; ignored"));
        }
    }
    let text = |key: &str, errors: &mut Vec<String>| -> Option<String> {
        match entry.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => {
                errors.push(format!("`{key}` must be a string"));
                None
            }
        }
    };
    let required = |key: &str, kind: &str, errors: &mut Vec<String>| -> String {
        match text(key, errors) {
            Some(value) if !value.trim().is_empty() => value,
            _ => {
                errors.push(format!("{kind} hooks need a non-empty `{key}`"));
                String::new()
            }
        }
    };
    let kind = text("type", &mut errors).unwrap_or_else(|| "command".into());
    let handler = match kind.as_str() {
        "command" => {
            let mut command = required("command", "command", &mut errors);
            if let Some(args) = entry.get("args").and_then(Value::as_array) {
                // Exec form: no shell of its own, so each piece is quoted for `sh -c`.
                let mut pieces = vec![shell_quote(&command)];
                pieces.extend(args.iter().filter_map(Value::as_str).map(shell_quote));
                command = pieces.join(" ");
            }
            if let Some(shell) = text("shell", &mut errors).filter(|s| s != "bash" && s != "sh") {
                warnings.push(format!("shell {shell:?}: hookwire runs commands with sh"));
            }
            let env: BTreeMap<String, String> = match entry.get("env") {
                None | Some(Value::Null) => BTreeMap::new(),
                Some(Value::Object(map)) => map
                    .iter()
                    .map(|(k, v)| {
                        (
                            k.clone(),
                            v.as_str()
                                .map(str::to_string)
                                .unwrap_or_else(|| v.to_string()),
                        )
                    })
                    .collect(),
                Some(_) => {
                    errors.push("`env` must be an object".into());
                    BTreeMap::new()
                }
            };
            errors.extend(check_env(&env, level));
            Handler::Command { command, env }
        }
        "http" => {
            let url = required("url", "http", &mut errors);
            let scheme_ok = url.starts_with("http://") || url.starts_with("https://");
            if !url.is_empty() && !scheme_ok {
                errors.push(format!("url {url:?} must start with http:// or https://"));
            }
            let headers = entry
                .get("headers")
                .and_then(Value::as_object)
                .map(|map| {
                    map.iter()
                        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                        .collect()
                })
                .unwrap_or_default();
            if entry.contains_key("allowedEnvVars") {
                warnings.push("allowedEnvVars: hookwire sends header values as written".into());
            }
            Handler::Http { url, headers }
        }
        "prompt" => Handler::Llm {
            prompt: required("prompt", "prompt", &mut errors),
            model: text("model", &mut errors),
            envelope: false,
        },
        "agent" => Handler::Agent {
            prompt: required("prompt", "agent", &mut errors),
            agent: None,
        },
        "mcp_tool" => {
            warnings
                .push("mcp_tool hooks are not supported by hookwire; this one never runs".into());
            return Ok((None, warnings));
        }
        other => {
            errors.push(format!("unknown hook type {other:?}"));
            return Err((errors, warnings));
        }
    };
    let flag = |key: &str| entry.get(key).and_then(Value::as_bool) == Some(true);
    // Claude Code's `async`: the hook runs off the chat's path (hookwire's `async: true`).
    let run_async = dialect == Dialect::Claude && (flag("async") || flag("asyncRewake"));
    if dialect == Dialect::Claude && flag("asyncRewake") {
        warnings.push(
            "asyncRewake: hookwire runs this hook like `async`; its exit code 2 does not wake the model"
                .into(),
        );
    }
    if entry.contains_key("if") {
        warnings
            .push("`if` is not supported: the hook runs for every call its matcher matches".into());
    }
    let timeout = match entry.get("timeout") {
        None | Some(Value::Null) => handler.default_timeout(),
        Some(value) => match value.as_f64().map(|v| timeout_of(v, dialect)) {
            Some(Ok(timeout)) => timeout,
            Some(Err(error)) => {
                errors.push(error.to_string());
                handler.default_timeout()
            }
            None => {
                errors.push("`timeout` must be a number".into());
                handler.default_timeout()
            }
        },
    };
    if !errors.is_empty() {
        return Err((errors, warnings));
    }
    let built = Built {
        name: text("name", &mut errors),
        handler,
        timeout,
        on_error: OnError::Skip,
        filter: Filter {
            matcher,
            ..Filter::default()
        },
        capabilities: None,
        run_async,
        on_full: Default::default(),
    };
    Ok((Some(built), warnings))
}

/// `text` quoted for `sh -c`.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests;
