//! `hookwire hooks replay PATH…` (docs/protocol.md §21): recorded hook traffic run through the
//! hooks as they are now; a table of the events (old → new outcome, the hook that decided, what
//! changed), or one JSON object per event; exit 0 when every decision is the same, 1 when any
//! differs, 2 when a recording (or the hooks) cannot be read.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use hookwire::app::hooks_replay::{replay_recordings, ReplayOptions, ReplayReport, ReplayedEvent};
use hookwire::config::Config;
use hookwire::hooks::record::RecordedDecision;
use serde_json::{json, Value};

use super::hooks::write_diff;

/// How the report is shown.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Shown {
    pub(crate) json: bool,
    pub(crate) only_changed: bool,
}

pub(crate) fn run(
    config: &Config,
    paths: &[PathBuf],
    options: ReplayOptions,
    shown: Shown,
) -> ExitCode {
    let Some(runtime) = super::runtime(true) else {
        return ExitCode::from(2);
    };
    let mut stderr = std::io::stderr();
    let bar = stderr.is_terminal();
    let mut progress = |done: usize, total: usize| {
        // On a terminal only, and only when there is something to wait for.
        if bar && total >= 20 {
            let _ = write!(stderr, "\r{}", progress_line(done, total));
            if done == total {
                let _ = writeln!(stderr);
            }
        }
    };
    let replayed = runtime.block_on(replay_recordings(config, paths, options, &mut progress));
    let mut out = std::io::stdout().lock();
    match replayed {
        Ok(report) => {
            let printed = if shown.json {
                print_json(&report, shown, &mut out)
            } else {
                print_table(&report, shown, &mut out)
            };
            if let Err(error) = printed {
                eprintln!("hookwire hooks replay: {error}");
                return ExitCode::from(2);
            }
            ExitCode::from(if report.changed() > 0 { 1 } else { 0 })
        }
        Err(error) => {
            eprintln!("hookwire hooks replay: {error}");
            ExitCode::from(2)
        }
    }
}

/// `[#######.............]  35/100 events`.
fn progress_line(done: usize, total: usize) -> String {
    const WIDTH: usize = 30;
    let filled = done * WIDTH / total.max(1);
    format!(
        "[{}{}] {done:>width$}/{total} events",
        "#".repeat(filled),
        ".".repeat(WIDTH - filled),
        width = total.to_string().len()
    )
}

fn print_json(report: &ReplayReport, shown: Shown, out: &mut dyn Write) -> std::io::Result<()> {
    for event in shown_events(report, shown) {
        let mut object = json!({
            "place": event.place,
            "at": event.at,
            "chat_id": event.chat_id,
            "event": event.event,
            "changed": event.changed,
            "old": event.old,
            "new": event.new,
        });
        if !event.rates.is_empty() {
            object["rates"] = json!(event.rates);
        }
        writeln!(out, "{object}")?;
    }
    Ok(())
}

fn shown_events(report: &ReplayReport, shown: Shown) -> impl Iterator<Item = &ReplayedEvent> {
    report
        .events
        .iter()
        .filter(move |event| event.changed || !shown.only_changed)
}

fn print_table(report: &ReplayReport, shown: Shown, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "hook files: {}", report.files.join(", "))?;
    writeln!(
        out,
        "{} event(s) replayed, {} changed",
        report.events.len(),
        report.changed()
    )?;
    for event in shown_events(report, shown) {
        let mark = if event.changed { "CHANGED" } else { "same" };
        let outcome = if event.old.outcome == event.new.outcome {
            event.new.outcome.clone()
        } else {
            format!("{} → {}", event.old.outcome, event.new.outcome)
        };
        let decided = decided_by(&event.old, &event.new);
        writeln!(
            out,
            "{mark:<7}  {:<26} {outcome:<20} {decided:<24} {}",
            event.event, event.place
        )?;
        if !event.rates.is_empty() {
            let rates: Vec<String> = event
                .rates
                .iter()
                .map(|(outcome, rate)| format!("{outcome} {:.0}%", rate * 100.0))
                .collect();
            writeln!(out, "         rates: {}", rates.join(" · "))?;
        }
        if event.changed {
            print_differences(&event.old, &event.new, out)?;
        }
    }
    Ok(())
}

/// The hook that decided: `guard`, or `old-guard → new-guard` when another one does now.
fn decided_by(old: &RecordedDecision, new: &RecordedDecision) -> String {
    let name = |decision: &RecordedDecision| decision.decided_by.clone().unwrap_or("-".into());
    if old.decided_by == new.decided_by {
        name(new)
    } else {
        format!("{} → {}", name(old), name(new))
    }
}

/// What differs: the reason, then each rewritten field, as `-` (recorded) and `+` (now) lines.
fn print_differences(
    old: &RecordedDecision,
    new: &RecordedDecision,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    if old.reason != new.reason {
        let text = |reason: &Option<String>| reason.clone().map_or(Value::Null, Value::String);
        write_diff(
            out,
            INDENT,
            "reason",
            &text(&old.reason),
            &text(&new.reason),
        )?;
    }
    let fields: std::collections::BTreeSet<&String> =
        old.changed.keys().chain(new.changed.keys()).collect();
    for field in fields {
        let (before, after) = (old.changed.get(field), new.changed.get(field));
        if before != after {
            write_diff(
                out,
                INDENT,
                field,
                before.unwrap_or(&Value::Null),
                after.unwrap_or(&Value::Null),
            )?;
        }
    }
    Ok(())
}

/// Under an event's row.
const INDENT: &str = "         ";
