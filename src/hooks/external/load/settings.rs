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

use std::path::Path;

use regex::Regex;
use serde_json::{Map, Value};

use super::{
    compile_matcher, ignored_matcher, matcher_applies, unsupported_event, HookSpecError, Place,
};
use crate::hooks::external::hook::{Dialect, Event, HookDef, Spelling};
use crate::types::Problem;

mod entry;

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
    let root: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(error) => {
            let problem = Problem::error(format!("not valid JSON: {error}"))
                .in_file(path)
                .at_line(error.line() as u64);
            return (Vec::new(), vec![problem]);
        }
    };
    let (events, disabled) = match hooks_of(&root) {
        Ok(hooks) => hooks,
        Err(problem) => {
            let problems = problem.map(|problem| problem.in_file(path));
            return (Vec::new(), problems.into_iter().collect());
        }
    };
    let mut reader = Reader {
        path,
        text,
        level,
        dialect,
        disabled,
        index: 0,
        hooks: Vec::new(),
        problems: Vec::new(),
    };
    for (event_name, groups) in events {
        reader.event(event_name, groups);
    }
    (reader.hooks, reader.problems)
}

/// A settings file's events, and the names of the hooks `hooksConfig.disabled` turns off.
type Events<'a> = (&'a Map<String, Value>, Vec<&'a str>);

/// The file's events; or why none of its hooks run (`None`: it has none).
fn hooks_of(root: &Value) -> Result<Events<'_>, Option<Problem>> {
    let Some(root) = root.as_object() else {
        return Err(Some(Problem::error(
            "a settings file must be a JSON object",
        )));
    };
    let hooks = match root.get("hooks") {
        None | Some(Value::Null) => return Err(None),
        Some(Value::Object(hooks)) => hooks,
        Some(_) => return Err(Some(Problem::error("`hooks` must be an object of events"))),
    };
    if root.get("disableAllHooks").and_then(Value::as_bool) == Some(true) {
        let why = "disableAllHooks is true: none of its hooks run";
        return Err(Some(Problem::warning(why)));
    }
    let config = root.get("hooksConfig");
    if config
        .and_then(|c| c.get("enabled"))
        .and_then(Value::as_bool)
        == Some(false)
    {
        let why = "hooksConfig.enabled is false: none of its hooks run";
        return Err(Some(Problem::warning(why)));
    }
    let disabled = config
        .and_then(|c| c.get("disabled"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    Ok((hooks, disabled))
}

/// One settings file being read: its hooks and problems so far.
struct Reader<'a> {
    path: &'a Path,
    text: &'a str,
    level: &'static str,
    /// The file's dialect (for the names both tools share).
    dialect: Dialect,
    /// The hooks `hooksConfig.disabled` names.
    disabled: Vec<&'a str>,
    /// The next entry's place among the file's entries.
    index: usize,
    hooks: Vec<HookDef>,
    problems: Vec<Problem>,
}

/// Where a matcher group is: its event (as named, its dialect and canonical events) and place.
struct Group<'a> {
    event_name: &'a str,
    dialect: Dialect,
    events: &'static [Event],
    at: usize,
}

impl<'a> Reader<'a> {
    /// A problem of the group `group` (of its entry `hook`).
    fn problem(&mut self, group: &Group<'_>, hook: Option<usize>, problem: Problem) {
        let field = field(group.event_name, group.at, hook);
        self.problems
            .push(problem.in_file(self.path).in_field(field));
    }

    /// One event's matcher groups.
    fn event(&mut self, event_name: &'a str, groups: &'a Value) {
        let (dialect, events) = match Event::spelling(event_name, Some(self.dialect)) {
            Spelling::Known(dialect, events) => (dialect, events),
            Spelling::Unsupported(dialect) => {
                let problem = unsupported_event(event_name, dialect);
                self.problems.push(problem.in_file(self.path));
                return;
            }
            Spelling::Unknown => {
                let problem = Problem::error(format!("unknown event {event_name:?}"));
                let field = format!("hooks.{event_name}");
                self.problems
                    .push(problem.in_file(self.path).in_field(field));
                return;
            }
        };
        let Some(groups) = groups.as_array() else {
            let problem = Problem::error("must be a list of matcher groups");
            let field = format!("hooks.{event_name}");
            self.problems
                .push(problem.in_file(self.path).in_field(field));
            return;
        };
        // JSON has no line numbers: each entry's is found by a search forward from here.
        let mut cursor = self.text.find(&format!("\"{event_name}\"")).unwrap_or(0);
        for (at, group) in groups.iter().enumerate() {
            let place = Group {
                event_name,
                dialect,
                events,
                at,
            };
            self.group(&place, group, &mut cursor);
        }
    }

    /// One matcher group: its matcher, whether its hooks run side by side, its hooks.
    fn group(&mut self, place: &Group<'a>, group: &'a Value, cursor: &mut usize) {
        let Some(group) = group.as_object() else {
            self.problem(place, None, Problem::error("must be an object"));
            return;
        };
        for key in group.keys() {
            if !matches!(key.as_str(), "matcher" | "hooks" | "sequential") {
                let message = format!("`{key}` is not used by hookwire; ignored");
                self.problem(place, None, Problem::warning(message));
            }
        }
        let matcher = match group.get("matcher") {
            None | Some(Value::Null) => None,
            Some(Value::String(text)) => match matcher(text, place) {
                Ok((matcher, warning)) => {
                    if let Some(warning) = warning {
                        self.problem(place, None, Problem::warning(warning));
                    }
                    matcher
                }
                Err(error) => {
                    self.problem(place, None, Problem::error(error.to_string()));
                    return;
                }
            },
            Some(_) => {
                let problem = Problem::error("`matcher` must be a string");
                self.problem(place, None, problem);
                return;
            }
        };
        // Claude Code runs an event's matching hooks side by side; so does Gemini CLI, but for a
        // group that says `sequential: true`.
        let parallel = match place.dialect {
            Dialect::Gemini => group.get("sequential").and_then(Value::as_bool) != Some(true),
            _ => true,
        };
        let Some(entries) = group.get("hooks").and_then(Value::as_array) else {
            self.problem(place, None, Problem::error("needs a `hooks` list"));
            return;
        };
        for (h, entry) in entries.iter().enumerate() {
            let Some(entry) = entry.as_object() else {
                self.problem(place, Some(h), Problem::error("must be an object"));
                continue;
            };
            let (line, next) = locate(self.text, *cursor, entry);
            *cursor = next;
            self.entry(place, h, entry, (line, parallel, matcher.clone()));
        }
    }

    /// One hook entry of a group (at `line`, side by side with its neighbours when `parallel`,
    /// under the group's `matcher`).
    fn entry(
        &mut self,
        place: &Group<'a>,
        h: usize,
        entry: &Map<String, Value>,
        (line, parallel, matcher): (u64, bool, Option<Regex>),
    ) {
        let index = self.index;
        self.index += 1;
        let (built, warnings, errors) =
            match entry::build(entry, place.dialect, self.level, matcher) {
                Ok((built, warnings)) => (built, warnings, Vec::new()),
                Err((errors, warnings)) => (None, warnings, errors),
            };
        for message in warnings {
            self.problem(place, Some(h), Problem::warning(message).at_line(line));
        }
        for message in errors {
            self.problem(place, Some(h), Problem::error(message).at_line(line));
        }
        let Some(built) = built else {
            return;
        };
        let id = entry_string(entry, "name").or_else(|| entry_string(entry, "command"));
        if id.is_some_and(|id| self.disabled.contains(&id.as_str())) {
            return;
        }
        let hook_place = Place {
            event_name: place.event_name,
            dialect: place.dialect,
            level: self.level,
            file: self.path,
            line,
            index,
            parallel,
        };
        self.hooks.extend(built.define(place.events, &hook_place));
    }
}

/// A group's matcher, and a warning when the event takes none.
fn matcher(
    text: &str,
    group: &Group<'_>,
) -> Result<(Option<Regex>, Option<String>), HookSpecError> {
    let (dialect, events) = (group.dialect, group.events);
    if !events.iter().all(|e| matcher_applies(*e, dialect)) {
        let trivial = matches!(text.trim(), "" | "*");
        let warning = (!trivial).then(|| ignored_matcher(group.event_name, dialect));
        return Ok((None, warning));
    }
    let tool_event = events.iter().any(|e| e.is_tool_event());
    compile_matcher(text, dialect, tool_event).map(|m| (m, None))
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

#[cfg(test)]
mod tests;
