//! `hookwire hooks test EVENT`: one event's hooks run for real on an input, each hook's
//! outcome and what it changed printed as a diff, the chain's decision as the exit code
//! (docs/protocol.md §12).

use std::io::Write;
use std::process::ExitCode;

use hookwire::app::hooks_test::{test_hooks, HookTest, HookTestDecision};
use hookwire::config::Config;
use serde_json::Value;

/// `hookwire hooks test EVENT [--input FILE|-]`.
pub(crate) fn run(config: &Config, event: &str, input: Option<std::path::PathBuf>) -> ExitCode {
    let text = match input.as_deref() {
        None => Ok("{}".to_string()),
        Some(path) if path == std::path::Path::new("-") => {
            std::io::read_to_string(std::io::stdin())
        }
        Some(path) => std::fs::read_to_string(path),
    };
    let input: serde_json::Value = match text
        .map_err(|e| e.to_string())
        .and_then(|text| serde_json::from_str(&text).map_err(|e| format!("not JSON: {e}")))
    {
        Ok(input) => input,
        Err(error) => {
            eprintln!("hookwire hooks test: the input: {error}");
            return ExitCode::from(1);
        }
    };
    let Some(runtime) = super::runtime(true) else {
        return ExitCode::FAILURE;
    };
    let mut out = std::io::stdout();
    ExitCode::from(runtime.block_on(test(config, event, &input, &mut out)))
}

/// Runs EVENT's hooks on `input` and prints the report to `out`; returns the exit code: 0 the
/// event goes on, 2 a hook stopped, skipped, blocked or asked, 1 a hook failed (or the hooks
/// could not be loaded).
async fn test(config: &Config, event: &str, input: &Value, out: &mut dyn Write) -> u8 {
    match test_hooks(config, event, input).await {
        Ok(run) => {
            let _ = print(&run, out);
            exit_code(&run)
        }
        Err(error) => {
            let _ = writeln!(out, "hookwire hooks test: {error}");
            1
        }
    }
}

fn exit_code(run: &HookTest) -> u8 {
    match &run.decision {
        HookTestDecision::Refused { .. } => 2,
        _ if run.failed => 1,
        _ => 0,
    }
}

fn print(run: &HookTest, out: &mut dyn Write) -> std::io::Result<()> {
    if run.files.is_empty() {
        writeln!(
            out,
            "no hook file is loaded: give one with HOOKWIRE_HOOKS=hooks.yaml (or `hooks:` in \
             the config file); a workspace's own hook files run once trusted (hookwire trust)"
        )?;
    } else {
        writeln!(out, "hook files: {}", run.files.join(", "))?;
    }
    for file in &run.untrusted {
        writeln!(out, "not trusted, left out: {file}")?;
    }
    if run.hooks.is_empty() {
        writeln!(out, "no hook runs at {} for this input", run.event)?;
    }
    for hook in &run.hooks {
        // A hook without a name is named by its place (`hooks.yaml:2`): said once.
        let named_by_place =
            hook.place == hook.name || hook.place.ends_with(&format!("/{}", hook.name));
        let place = if named_by_place {
            String::new()
        } else {
            format!(" ({})", hook.place)
        };
        writeln!(
            out,
            "{}{place} → {} in {:.1} ms",
            hook.name, hook.outcome, hook.ms
        )?;
        if let Some(error) = &hook.error {
            write_error(out, error)?;
        }
        for (field, before, after) in &hook.changes {
            write_diff(out, "  ", field, before, after)?;
        }
    }
    match &run.decision {
        HookTestDecision::Continue => writeln!(out, "decision: continue"),
        HookTestDecision::Feedback(feedback) => {
            writeln!(out, "decision: retry with feedback: {feedback}")
        }
        HookTestDecision::Refused { how, reason } => writeln!(out, "decision: {how}: {reason}"),
    }
}

/// At most this many lines of a failure (its stderr) are shown, each cut to `ERROR_LINE_CHARS`.
const ERROR_LINES: usize = 8;
const ERROR_LINE_CHARS: usize = 160;

/// Why a hook failed, under it: the first line (`exit code 7: …`), then the rest of its stderr
/// as `| ` lines, bounded.
fn write_error(out: &mut dyn Write, error: &str) -> std::io::Result<()> {
    let cut = |line: &str| -> String {
        let shown: String = line.chars().take(ERROR_LINE_CHARS).collect();
        if shown.len() < line.len() {
            format!("{shown}…")
        } else {
            shown
        }
    };
    let mut lines = error.lines();
    writeln!(out, "  {}", cut(lines.next().unwrap_or_default()))?;
    for line in lines.by_ref().take(ERROR_LINES - 1) {
        writeln!(out, "  | {}", cut(line))?;
    }
    if lines.next().is_some() {
        writeln!(out, "  | …")?;
    }
    Ok(())
}

/// A string as its text, anything else as indented JSON; nothing as `(none)`.
fn pretty(value: &Value) -> String {
    match value {
        // What a hook or a person wrote goes to a terminal: no control sequences of theirs.
        Value::String(text) => text
            .chars()
            .map(|c| {
                if c.is_control() && c != '\n' && c != '\t' {
                    '\u{fffd}'
                } else {
                    c
                }
            })
            .collect(),
        Value::Null => "(none)".into(),
        other => serde_json::to_string_pretty(other).unwrap_or_else(|_| other.to_string()),
    }
}

/// A field's change under its hook or event, indented by `indent`: the field's name, then its
/// value before as `-` lines and after as `+` lines.
pub(super) fn write_diff(
    out: &mut dyn Write,
    indent: &str,
    field: &str,
    before: &Value,
    after: &Value,
) -> std::io::Result<()> {
    writeln!(out, "{indent}{field}:")?;
    for line in pretty(before).lines() {
        writeln!(out, "{indent}- {line}")?;
    }
    for line in pretty(after).lines() {
        writeln!(out, "{indent}+ {line}")?;
    }
    Ok(())
}
