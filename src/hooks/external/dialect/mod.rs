//! Hook dialects (PROTOCOL section 9): the translation layer at the edge of the chain. A hook's
//! [`Dialect`] is the spelling of the event it is configured under; for each dialect there is
//! one input builder ([`input`]), one exit-code contract for commands ([`command_result`]) and
//! one output reader ([`read`]), and everything they produce is the chain's one vocabulary
//! ([`EventState`] in, [`HookOutput`] out). No dialect has a runtime of its own.
//!
//! - hookwire and seed 004: [`super::protocol`] (seed 001's fields plus seed 004's envelope);
//! - Claude Code: [`claude`]; Gemini CLI: [`gemini`];
//! - the built-in tools under Claude Code's and Gemini CLI's names: [`tools`] (one table);
//! - Claude Code's `transcript_path`: [`transcript`].

mod claude;
mod gemini;
pub mod tools;
pub mod transcript;

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

use super::config::HookDef;
use super::event::{Dialect, Event};
use super::protocol::{input_json, parse_output, Envelope, EventState, HookOutput};
use super::runner::{CommandRun, RunResult};

/// The input JSON for `hook` at `event`.
pub fn input(hook: &HookDef, event: Event, envelope: &Envelope, state: &EventState) -> Value {
    match hook.dialect {
        Dialect::Hookwire | Dialect::Seed004 => {
            input_json(event, &hook.event_name, envelope, state)
        }
        Dialect::Claude => claude::input(hook, event, envelope, state),
        Dialect::Gemini => gemini::input(hook, event, envelope, state),
    }
}

/// How a command hook of `dialect` ended, by that dialect's exit-code contract.
pub fn command_result(dialect: Dialect, run: CommandRun) -> RunResult {
    match dialect {
        Dialect::Hookwire | Dialect::Seed004 => run.result(),
        Dialect::Claude => claude::command_result(run),
        Dialect::Gemini => gemini::command_result(run),
    }
}

/// Reads a hook's answer (a [`RunResult`] that is not a failure) by its dialect: what it
/// changes, adds and decides at `event`, given the values it was called with. `Err` = the
/// answer is not one its dialect allows (the chain treats that as a failed run).
pub fn read(
    hook: &HookDef,
    event: Event,
    answer: RunResult,
    state: &EventState,
    envelope: &Envelope,
) -> Result<HookOutput, String> {
    let root = Path::new(&envelope.cwd);
    let mut output = match hook.dialect {
        Dialect::Hookwire | Dialect::Seed004 => match answer {
            RunResult::Output(value) => {
                parse_output(&value, hook.capabilities.as_ref(), hook.dialect)?
            }
            RunResult::Block(reason) => HookOutput {
                control: Some(super::protocol::Control::Block(reason)),
                ..HookOutput::default()
            },
            RunResult::Text(text) => return Err(format!("stdout is not JSON: {text:?}")),
            RunResult::Error(error) => return Err(error),
            RunResult::Timeout => return Err("timed out".into()),
        },
        Dialect::Claude => claude::read(hook, event, answer, state, root)?,
        Dialect::Gemini => gemini::read(hook, event, answer, state, root)?,
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

/// A string field of an answer; present but not a string is an error.
fn string(object: &serde_json::Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(_) => Err(format!("`{key}` must be a string")),
    }
}

/// The answer's `hookSpecificOutput` object, if any.
fn specific(
    object: &serde_json::Map<String, Value>,
) -> Result<serde_json::Map<String, Value>, String> {
    match object.get("hookSpecificOutput") {
        None | Some(Value::Null) => Ok(serde_json::Map::new()),
        Some(Value::Object(specific)) => Ok(specific.clone()),
        Some(_) => Err("`hookSpecificOutput` must be an object".into()),
    }
}

/// Now, in ISO 8601 UTC with milliseconds (Gemini's `timestamp`, the transcript's).
pub fn timestamp() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let seconds = now.as_secs();
    let (days, rest) = (seconds / 86_400, seconds % 86_400);
    let (year, month, day) = civil(days as i64);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60,
        now.subsec_millis()
    )
}

/// The date `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(civil(0), (1970, 1, 1));
        assert_eq!(civil(19_723), (2024, 1, 1));
        assert_eq!(civil(19_782), (2024, 2, 29));
        let now = timestamp();
        assert_eq!(now.len(), "2024-01-01T00:00:00.000Z".len(), "{now}");
        assert!(now.ends_with('Z'));
    }
}
