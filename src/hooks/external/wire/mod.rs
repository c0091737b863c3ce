//! A hook's JSON in and out, by dialect (docs/protocol.md §9): the translation layer at the
//! edge of the chain, and the only room that builds or reads a hook's JSON. A hook's
//! [`Dialect`] is the spelling of the event it is configured under; for each dialect there is
//! one input builder ([`input`]), one exit-code contract for commands ([`command_result`]) and
//! one output reader ([`read`]), and everything they produce is the chain's one vocabulary
//! ([`EventState`] in, [`HookOutput`] out). No dialect has a runtime of its own.
//!
//! - hookwire and the OpenHarness format: [`hookwire`] (the jcli format's fields plus the
//!   OpenHarness envelope);
//! - Claude Code: [`claude`]; Gemini CLI: [`gemini`];
//! - the built-in tools under Claude Code's and Gemini CLI's names: [`tools`] (one table);
//! - Claude Code's `transcript_path`: [`transcript`].

mod claude;
mod gemini;
mod hookwire;
pub(crate) mod payload;

pub(crate) mod tools;
pub(crate) mod transcript;

use std::collections::BTreeSet;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::hooks::external::hook::{
    Dialect, Envelope, Event, EventState, HookDef, HookOutput, RunResult,
};
use crate::process::CommandRun;

/// The input JSON for `hook` at `event`.
pub(crate) fn input(
    hook: &HookDef,
    event: Event,
    envelope: &Envelope,
    state: &EventState,
) -> Value {
    match hook.dialect {
        Dialect::Hookwire | Dialect::OpenHarness => {
            hookwire::input(event, &hook.event_name, hook.dialect, envelope, state)
        }
        Dialect::Claude => claude::input(hook, event, envelope, state),
        Dialect::Gemini => gemini::input(hook, event, envelope, state),
    }
}

/// The input of `event` in the native dialect, as a recording keeps it (docs/protocol.md §21):
/// the one shape `hookwire hooks replay` reads back, whatever dialects the hooks speak.
pub(crate) fn native_input(event: Event, envelope: &Envelope, state: &EventState) -> Value {
    hookwire::input(event, event.as_str(), Dialect::Hookwire, envelope, state)
}

/// Whether `hook` fires again at `session_start` after a compaction (with source `compact`):
/// only Claude Code's `SessionStart` hooks do; the other dialects have no such source.
pub(crate) fn fires_after_compaction(hook: &HookDef) -> bool {
    hook.dialect == Dialect::Claude
}

/// Whether a chain of `hooks` needs the chat's transcript: a Claude-dialect hook reads its
/// `transcript_path`.
pub(crate) fn needs_transcript(hooks: &[std::sync::Arc<HookDef>]) -> bool {
    hooks.iter().any(|hook| hook.dialect == Dialect::Claude)
}

/// The text a prompt or agent hook of `dialect` sends to the model: its `prompt` filled from
/// the input, the input itself when `envelope` (the OpenHarness format's `prompt` and every
/// `agent` hook: the runtime hands over the envelope), and the answer it must give.
pub(crate) fn task(dialect: Dialect, prompt: &str, envelope: bool, input: &Value) -> String {
    match dialect {
        Dialect::Claude => claude::task(prompt, input),
        _ => hookwire::task(prompt, envelope, input),
    }
}

/// How a command hook of `dialect` ended, by that dialect's exit-code contract.
pub(crate) fn command_result(dialect: Dialect, run: CommandRun) -> RunResult {
    // `sh x.sh` with no `x.sh` exits 2 (dash: "sh: 0: cannot open x.sh"), the code every dialect
    // reads as a deliberate block: a hook whose script is missing would refuse every call with
    // a shell error as its reason. It is a failure, for `on_error` to decide.
    if let Some(why) = shell_could_not_open(&run) {
        return RunResult::Error(format!("the hook's script could not be opened: {why}"));
    }
    match dialect {
        Dialect::Hookwire | Dialect::OpenHarness => hookwire::command_result(run),
        Dialect::Claude => claude::command_result(run),
        Dialect::Gemini => gemini::command_result(run),
    }
}

/// The shell's own complaint when it could not open the script it was given (`sh x.sh`, exit
/// 2): its first stderr line, or `None` for anything else.
fn shell_could_not_open(run: &CommandRun) -> Option<&str> {
    if run.exit_code != Some(2) {
        return None;
    }
    let line = run.stderr.lines().next()?.trim();
    let from_shell = line.starts_with("sh: ") || line.starts_with("dash: ");
    let cannot_open = line.contains("cannot open ") || line.contains("Can't open ");
    (from_shell && cannot_open).then_some(line)
}

/// Reads a hook's answer (a [`RunResult`] that is not a failure) by its dialect: what it
/// changes, adds and decides at `event`, given the values it was called with. `Err` = the
/// answer is not one its dialect allows (the chain treats that as a failed run).
pub(crate) fn read(
    hook: &HookDef,
    event: Event,
    answer: RunResult,
    state: &EventState,
    envelope: &Envelope,
) -> Result<HookOutput, HookAnswerError> {
    let reading = Reading {
        hook,
        event,
        state,
        root: Path::new(&envelope.cwd),
    };
    let mut output = match hook.dialect {
        Dialect::Hookwire | Dialect::OpenHarness => hookwire::read(hook, answer)?,
        Dialect::Claude => claude::read(&reading, answer)?,
        Dialect::Gemini => gemini::read(&reading, answer)?,
    };
    if let (true, Some(capabilities)) = (hook.dialect.is_foreign(), &hook.capabilities) {
        restrict(&mut output, capabilities);
    }
    Ok(output)
}

/// Drops the changes of a Claude Code or Gemini CLI hook that its declared capabilities leave
/// out (a hook file in YAML may declare them for any dialect); they are logged as refused.
fn restrict(output: &mut HookOutput, capabilities: &BTreeSet<String>) {
    fn keep<T>(
        slot: &mut Option<T>,
        field: &str,
        allowed: &BTreeSet<String>,
        refused: &mut Vec<String>,
    ) {
        if slot.is_some() && !allowed.contains(field) {
            *slot = None;
            refused.push(field.to_string());
        }
    }
    let refused = &mut output.refused;
    keep(&mut output.user_input, "user_input", capabilities, refused);
    keep(&mut output.messages, "messages", capabilities, refused);
    keep(
        &mut output.system_prompt,
        "system_prompt",
        capabilities,
        refused,
    );
    keep(
        &mut output.tool_arguments,
        "tool_arguments",
        capabilities,
        refused,
    );
    keep(
        &mut output.tool_result,
        "tool_result",
        capabilities,
        refused,
    );
    keep(&mut output.tool_error, "tool_error", capabilities, refused);
    keep(
        &mut output.assistant_output,
        "assistant_output",
        capabilities,
        refused,
    );
}

/// `text` after `base`, a blank line between them.
fn appended(base: Option<&str>, text: &str) -> String {
    match base {
        Some(base) if !base.is_empty() => format!("{base}\n\n{text}"),
        _ => text.to_string(),
    }
}

/// What a Claude Code or Gemini CLI answer is read against: the hook, the event, the values it
/// was called with, and the workspace (tool paths in those tools' shapes are absolute).
struct Reading<'a> {
    hook: &'a HookDef,
    event: Event,
    state: &'a EventState,
    root: &'a Path,
}

/// A hook's JSON answer read into its dialect's output type `T` (the type its published schema
/// is generated from): `None` for `null` (nothing to say). Keys `T` does not have land in its
/// `extra` map, for the reader to log; a value of the wrong shape is the error, which names its
/// key.
fn answer_of<T: DeserializeOwned>(value: Value) -> Result<Option<T>, HookAnswerError> {
    if value.is_null() {
        return Ok(None);
    }
    let Value::Object(object) = &value else {
        return Err("the answer must be a JSON object".into());
    };
    T::deserialize(&value).map(Some).map_err(|error| {
        // Inside a flattened part serde names no key: the key that fails on its own does.
        let alone = |(key, value): (&String, &Value)| {
            let one = Value::Object(Map::from_iter([(key.clone(), value.clone())]));
            T::deserialize(&one)
                .err()
                .map(|error| format!("`{key}`: {error}"))
        };
        HookAnswerError(
            object
                .iter()
                .find_map(alone)
                .unwrap_or_else(|| error.to_string()),
        )
    })
}

/// The keys of a `hookSpecificOutput` that its dialect does not define at the event (`present`:
/// the keys it has), as the log names them.
fn undefined_keys<'a>(present: impl Iterator<Item = &'a str>, defined: &[&str]) -> Vec<String> {
    let mut keys: Vec<&str> = present.filter(|key| !defined.contains(key)).collect();
    keys.sort_unstable();
    keys.iter()
        .map(|key| format!("hookSpecificOutput.{key}"))
        .collect()
}

/// Now, in ISO 8601 UTC with milliseconds (Gemini's `timestamp`, the transcript's).
pub(crate) fn timestamp() -> String {
    crate::types::iso8601(std::time::SystemTime::now())
}

/// Why a hook's answer cannot be read (the chain treats it as a failed run and shows this
/// text): one type for every dialect's reader. Its text is the whole message, built where the
/// problem is found, since each field and dialect words its own.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct HookAnswerError(pub(crate) String);

impl From<String> for HookAnswerError {
    fn from(message: String) -> Self {
        Self(message)
    }
}

impl From<&str> for HookAnswerError {
    fn from(message: &str) -> Self {
        Self(message.to_string())
    }
}

/// Pulls the JSON object out of a model's answer (which may wrap it in prose or a code fence).
pub(crate) fn json_in_text(text: &str) -> Result<Value, HookAnswerError> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Ok(Value::Null);
    }
    if let Ok(value) = serde_json::from_str::<Value>(trimmed) {
        return Ok(value);
    }
    let (Some(start), Some(end)) = (trimmed.find('{'), trimmed.rfind('}')) else {
        return Err(format!(
            "no JSON object in the answer: {:?}",
            trimmed.chars().take(120).collect::<String>()
        )
        .into());
    };
    if end < start {
        return Err("no JSON object in the answer".into());
    }
    serde_json::from_str(&trimmed[start..=end])
        .map_err(|e| format!("the answer's JSON is invalid: {e}").into())
}

#[cfg(test)]
mod tests;
