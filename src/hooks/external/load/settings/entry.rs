//! One hook entry of a settings file built into a hook: its handler (a `command`, exec form
//! with `args` included; `http`; `prompt`; `agent`), `async`, `timeout` in the dialect's unit;
//! what hookwire does not do is a warning, what is wrong an error.

use std::collections::BTreeMap;
use std::time::Duration;

use regex::Regex;
use serde_json::{Map, Value};

use super::super::{check_env, timeout_of, Built};
use crate::hooks::external::hook::{Dialect, Filter, Handler, OnError};

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
pub(super) fn build(
    entry: &Map<String, Value>,
    dialect: Dialect,
    level: &str,
    matcher: Option<Regex>,
) -> BuildResult {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    for key in entry.keys() {
        if !known_field(dialect, key) {
            warnings.push(format!("`{key}` is not used by hookwire; ignored"));
        }
    }
    let kind = text(entry, "type", &mut errors).unwrap_or_else(|| "command".into());
    let handler = match kind.as_str() {
        "command" => command(entry, level, &mut errors, &mut warnings),
        "http" => http(entry, &mut errors, &mut warnings),
        "prompt" => Handler::Llm {
            prompt: required(entry, "prompt", "prompt", &mut errors),
            model: text(entry, "model", &mut errors),
            envelope: false,
        },
        "agent" => Handler::Agent {
            prompt: required(entry, "prompt", "agent", &mut errors),
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
    let run_async = run_async(entry, dialect, &mut warnings);
    if entry.contains_key("if") {
        warnings
            .push("`if` is not supported: the hook runs for every call its matcher matches".into());
    }
    let timeout = timeout(entry, dialect, &handler, &mut errors);
    if !errors.is_empty() {
        return Err((errors, warnings));
    }
    let built = Built {
        // A `name` that is not text names nothing: the hook goes by its place.
        name: entry
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_string),
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

/// A text field of the entry; one that is there but not text is an error.
fn text(entry: &Map<String, Value>, key: &str, errors: &mut Vec<String>) -> Option<String> {
    match entry.get(key) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            errors.push(format!("`{key}` must be a string"));
            None
        }
    }
}

/// A text field a `kind` hook needs.
fn required(entry: &Map<String, Value>, key: &str, kind: &str, errors: &mut Vec<String>) -> String {
    match text(entry, key, errors) {
        Some(value) if !value.trim().is_empty() => value,
        _ => {
            errors.push(format!("{kind} hooks need a non-empty `{key}`"));
            String::new()
        }
    }
}

/// A `command` hook: the command (with its `args` quoted, the exec form), its `env`.
fn command(
    entry: &Map<String, Value>,
    level: &str,
    errors: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> Handler {
    let mut command = required(entry, "command", "command", errors);
    if let Some(args) = entry.get("args").and_then(Value::as_array) {
        // Exec form: no shell of its own, so each piece is quoted for `sh -c`.
        let mut pieces = vec![shell_quote(&command)];
        pieces.extend(args.iter().filter_map(Value::as_str).map(shell_quote));
        command = pieces.join(" ");
    }
    if let Some(shell) = text(entry, "shell", errors).filter(|s| s != "bash" && s != "sh") {
        warnings.push(format!("shell {shell:?}: hookwire runs commands with sh"));
    }
    let env: BTreeMap<String, String> = match entry.get("env") {
        None | Some(Value::Null) => BTreeMap::new(),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(name, value)| {
                let value = value
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| value.to_string());
                (name.clone(), value)
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

/// An `http` hook: its URL and the headers given as text.
fn http(
    entry: &Map<String, Value>,
    errors: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> Handler {
    let url = required(entry, "url", "http", errors);
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

/// Claude Code's `async` (and `asyncRewake`): the hook runs off the chat's path (hookwire's
/// `async: true`).
fn run_async(entry: &Map<String, Value>, dialect: Dialect, warnings: &mut Vec<String>) -> bool {
    let flag = |key: &str| entry.get(key).and_then(Value::as_bool) == Some(true);
    if dialect == Dialect::Claude && flag("asyncRewake") {
        warnings.push(
            "asyncRewake: hookwire runs this hook like `async`; its exit code 2 does not wake the model"
                .into(),
        );
    }
    dialect == Dialect::Claude && (flag("async") || flag("asyncRewake"))
}

/// The entry's `timeout` in its dialect's unit, or the handler's default.
fn timeout(
    entry: &Map<String, Value>,
    dialect: Dialect,
    handler: &Handler,
    errors: &mut Vec<String>,
) -> Duration {
    let given = match entry.get("timeout") {
        None | Some(Value::Null) => return handler.default_timeout(),
        Some(value) => value.as_f64(),
    };
    match given.map(|value| timeout_of(value, dialect)) {
        Some(Ok(timeout)) => timeout,
        Some(Err(error)) => {
            errors.push(error.to_string());
            handler.default_timeout()
        }
        None => {
            errors.push("`timeout` must be a number".into());
            handler.default_timeout()
        }
    }
}

/// `text` quoted for `sh -c`.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}
