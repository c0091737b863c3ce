//! `hookwire hooks test EVENT`: one event's hooks run for real on an input, each hook's
//! outcome and what it changed printed as a diff, the chain's decision as the exit code
//! (PROTOCOL section 12).

use std::io::Write;

use serde_json::Value;

use crate::app::agent_parts;
use crate::config::Config;
use crate::hooks::external::dry_run::{DryDecision, DryRun};

/// Runs EVENT's hooks on `input` and prints the report to `out`; returns the exit code: 0 the
/// event goes on, 2 a hook stopped, skipped, blocked or asked, 1 a hook failed (or the hooks
/// could not be loaded).
pub async fn test(config: &Config, event: &str, input: &Value, out: &mut dyn Write) -> u8 {
    let parts = match agent_parts(config) {
        Ok(parts) => parts,
        Err(error) => {
            let _ = writeln!(out, "hookwire hooks test: {error}");
            return 1;
        }
    };
    let Some(files) = parts.sources.hook_files() else {
        let _ = writeln!(out, "hookwire hooks test: no hook files are loaded");
        return 1;
    };
    match files.dry_run(event, input).await {
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

fn exit_code(run: &DryRun) -> u8 {
    match &run.decision {
        DryDecision::Refused { .. } => 2,
        _ if run.failed => 1,
        _ => 0,
    }
}

fn print(run: &DryRun, out: &mut dyn Write) -> std::io::Result<()> {
    if run.hooks.is_empty() {
        writeln!(out, "no hook runs at {} for this input", run.event)?;
    }
    for hook in &run.hooks {
        writeln!(
            out,
            "{} ({}) → {} in {:.1} ms",
            hook.name, hook.place, hook.outcome, hook.ms
        )?;
        for (field, before, after) in &hook.changes {
            writeln!(out, "  {field}:")?;
            for line in pretty(before).lines() {
                writeln!(out, "  - {line}")?;
            }
            for line in pretty(after).lines() {
                writeln!(out, "  + {line}")?;
            }
        }
    }
    match &run.decision {
        DryDecision::Continue => writeln!(out, "decision: continue"),
        DryDecision::Feedback(feedback) => {
            writeln!(out, "decision: retry with feedback: {feedback}")
        }
        DryDecision::Refused { how, reason } => writeln!(out, "decision: {how}: {reason}"),
    }
}

/// A string as its text, anything else as indented JSON.
fn pretty(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => "(none)".into(),
        other => serde_json::to_string_pretty(other).unwrap_or_else(|_| other.to_string()),
    }
}
