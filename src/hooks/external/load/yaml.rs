//! One hook file read: its events in the order they are written, each entry built into hooks,
//! every problem with the file, line and entry.

use std::path::Path;

use super::build::{build, Place};
use super::prompt_file::PromptFileError;
use super::raw::{RawEvent, RawFile, RawHook};
use crate::hooks::external::hook::{Dialect, Event, HookDef, PromptFile, Spelling};
use crate::types::{Problem, YamlError};
use serde_saphyr::Spanned;

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
        Err(error) => return (Vec::new(), vec![yaml_problem(path, &error)]),
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
                    problems.push(at(Problem::error(error.to_string())));
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
fn with_prompt_file(path: &Path, raw: &mut RawHook) -> Result<Option<PromptFile>, PromptFileError> {
    let Some(name) = raw.prompt_file.take() else {
        return Ok(None);
    };
    if raw.prompt.is_some() {
        return Err(PromptFileError::Both);
    }
    if !matches!(raw.kind.as_deref(), Some("prompt" | "llm" | "agent")) {
        return Err(PromptFileError::NoPrompt);
    }
    let (text, file) = super::prompt_file::read(path, &name)?;
    raw.prompt = Some(text);
    Ok(Some(file))
}

/// The warning for a hook under an event of Claude Code or Gemini CLI that hookwire lacks.
pub(crate) fn unsupported_event(name: &str, dialect: Dialect) -> Problem {
    Problem::warning(format!(
        "{name} is a {} event that hookwire does not have; its hooks never run",
        match dialect {
            Dialect::Gemini => "Gemini CLI",
            _ => "Claude Code",
        }
    ))
}

/// A hook file the YAML reader refused, at its file and line (`types::YamlError`).
fn yaml_problem(path: &Path, error: &serde_saphyr::Error) -> Problem {
    let refused = YamlError::of(error);
    let problem = Problem::error(refused.message).in_file(path);
    match refused.line {
        Some(line) => problem.at_line(line),
        None => problem,
    }
}
