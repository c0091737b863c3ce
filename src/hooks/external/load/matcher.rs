//! `matcher:` as each dialect reads it, and which events take one.

use regex::Regex;

use super::{one_line, HookSpecError};
use crate::hooks::external::hook::{Dialect, Event};

/// A `matcher` as its dialect reads it, as one regex on the subject (`None` = every subject):
/// - hookwire and the OpenHarness format: a regex, unanchored;
/// - Claude Code: `""`/`"*"` = all; only letters, digits, `_`, `-`, spaces, `,` and `|` = an
///   exact name or a list of them; anything else a regex, unanchored;
/// - Gemini CLI: `""`/`"*"` = all; on tool events a regex, unanchored (an invalid one is an
///   exact name); elsewhere an exact value.
pub(crate) fn compile_matcher(
    text: &str,
    dialect: Dialect,
    tool_event: bool,
) -> Result<Option<Regex>, HookSpecError> {
    let invalid = |error: regex::Error| HookSpecError::Matcher(one_line(&error.to_string()));
    let exact = |names: &mut dyn Iterator<Item = &str>| {
        let names: Vec<String> = names.map(regex::escape).collect();
        Regex::new(&format!("^(?:{})$", names.join("|"))).map_err(invalid)
    };
    match dialect {
        Dialect::Hookwire | Dialect::OpenHarness => Regex::new(text).map(Some).map_err(invalid),
        Dialect::Claude => {
            let text = text.trim();
            if text.is_empty() || text == "*" {
                return Ok(None);
            }
            let plain = text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ' ' | ',' | '|'));
            if plain {
                let mut names = text
                    .split(['|', ','])
                    .map(str::trim)
                    .filter(|n| !n.is_empty());
                exact(&mut names).map(Some)
            } else {
                Regex::new(text).map(Some).map_err(invalid)
            }
        }
        Dialect::Gemini => {
            let text = text.trim();
            if text.is_empty() || text == "*" {
                return Ok(None);
            }
            if tool_event {
                if let Ok(regex) = Regex::new(text) {
                    return Ok(Some(regex));
                }
            }
            exact(&mut std::iter::once(text)).map(Some)
        }
    }
}

/// Whether a matcher means something at `event` in `dialect` (elsewhere it is ignored, with a
/// warning): the OpenHarness format's context events take none; Claude Code and Gemini CLI match only on the
/// events their documentation names.
pub(crate) fn matcher_applies(event: Event, dialect: Dialect) -> bool {
    use Event::*;
    match dialect {
        Dialect::Hookwire | Dialect::OpenHarness => !event.takes_no_matcher(),
        Dialect::Claude => {
            event.is_tool_event()
                || matches!(
                    event,
                    SessionStart | SessionEnd | PreAutoCompact | Notification
                )
        }
        Dialect::Gemini => {
            event.is_tool_event() || matches!(event, SessionStart | SessionEnd | PreAutoCompact)
        }
    }
}

/// The warning for a matcher that is ignored at its event.
pub(crate) fn ignored_matcher(event_name: &str, dialect: Dialect) -> String {
    match dialect {
        Dialect::Hookwire | Dialect::OpenHarness => {
            format!("{event_name} takes no matcher (the OpenHarness format); it is ignored")
        }
        Dialect::Claude => format!("{event_name} takes no matcher in Claude Code; it is ignored"),
        Dialect::Gemini => format!("{event_name} takes no matcher in Gemini CLI; it is ignored"),
    }
}
