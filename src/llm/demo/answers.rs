//! The demo's answers: a direct one for plain messages, and ones built from the tools' results
//! ("The workspace has 4 entries: …", "Found 3 matches for TODO: …").
//!
//! A `tool` message does not say whether the call failed, so each answer checks that the result
//! has the shape the tool gives on success and otherwise quotes it as it is.

use serde_json::Value;

use crate::types::ToolCall;

/// How to reach a real model; part of every direct demo answer.
const CONFIGURE_HINT: &str = "To talk to a real model, set OPENAI_BASE_URL and/or OPENAI_API_KEY \
(or --llm-base-url / --llm-api-key) and pick one with --model.";

/// How many names, matches or lines an answer shows before it says how many more there are.
const SHOWN: usize = 12;

pub(super) fn direct(input: &str) -> String {
    let shown: String = input.chars().take(200).collect();
    format!(
        "Hello! I am hookwire's built-in demo model: I run offline and give fixed answers, so you can \
see how streaming, tools and hooks work. You said: \"{shown}\". Ask me to \"list the files\", \
\"read README.md\" or \"search for HOOKWIRE_AUTH_TOKEN\" to watch the planning round and the agent \
loop with tools. {CONFIGURE_HINT}"
    )
}

/// The plan named tools this chat does not offer (switched off, or taken away by a hook).
pub(super) fn not_offered(planned: &[ToolCall]) -> String {
    let names: Vec<String> = planned.iter().map(|c| format!("`{}`", c.name)).collect();
    format!(
        "I planned to call {}, but this chat does not offer it, so I have nothing to answer from.",
        enumerate(&names, names.len())
    )
}

/// One paragraph per call, from its result.
pub(super) fn from_results(made: &[(&ToolCall, Option<&str>)]) -> String {
    let paragraphs: Vec<String> = made
        .iter()
        .map(|(call, result)| match result {
            Some(result) => from_result(call, result),
            None => format!("`{}` gave no result.", call.name),
        })
        .collect();
    paragraphs.join("\n\n")
}

fn from_result(call: &ToolCall, result: &str) -> String {
    let arguments = call.arguments_value();
    let argument = |key: &str| arguments.get(key).and_then(Value::as_str).unwrap_or("");
    match call.name.as_str() {
        "list_dir" => listing(argument("path"), result),
        "search_text" => matches(argument("pattern"), result),
        "read_file" => file(argument("path"), result),
        _ => quoted(&call.name, result),
    }
}

fn listing(path: &str, result: &str) -> String {
    let place = if path.is_empty() || path == "." {
        "The workspace".to_string()
    } else {
        format!("`{path}`")
    };
    if is_empty_marker(result) {
        return format!("{place} is empty.");
    }
    let mut entries = Vec::new();
    let mut total = None;
    for line in result.lines() {
        match truncated(line) {
            // "[truncated: showed 200 of 512 entries]"
            Some(note) => {
                total = note
                    .split_once(" of ")
                    .and_then(|(_, rest)| rest.split(' ').next())
                    .and_then(|n| n.parse::<usize>().ok());
            }
            None => entries.push(format!("`{line}`")),
        }
    }
    // A single line with spaces and no truncation note is how list_dir reports a problem.
    if entries.len() == 1 && total.is_none() && result.contains(' ') {
        return quoted("list_dir", result);
    }
    let total = total.unwrap_or(entries.len());
    format!(
        "{place} has {}: {}.",
        count(total, "entry", "entries"),
        enumerate(&entries, total)
    )
}

fn matches(pattern: &str, result: &str) -> String {
    if result.starts_with("no matches for ") {
        return format!("Found no matches for {pattern}.");
    }
    let mut rows = Vec::new();
    let mut cut = false;
    for line in result.lines() {
        if truncated(line).is_some() {
            cut = true;
        } else if let Some(place) = match_place(line) {
            rows.push((place, line));
        }
    }
    if rows.is_empty() {
        return quoted("search_text", result);
    }
    let places: Vec<String> = rows.iter().map(|(place, _)| format!("`{place}`")).collect();
    let found = count(rows.len(), "match", "matches");
    let mut answer = format!(
        "Found {}{found} for {pattern}: {}.\n\n",
        if cut { "at least " } else { "" },
        enumerate(&places, places.len())
    );
    let lines: Vec<&str> = rows.iter().take(SHOWN).map(|(_, line)| *line).collect();
    answer.push_str(&fenced(&lines.join("\n")));
    if cut {
        answer.push_str("\n\nThe search stopped early; a narrower pattern shows the rest.");
    }
    answer
}

/// `path:line` of a search row `path:line: text`.
fn match_place(row: &str) -> Option<&str> {
    let (place, _) = row.split_once(": ")?;
    let (path, line) = place.rsplit_once(':')?;
    let is_number = !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit());
    (!path.is_empty() && is_number).then_some(place)
}

fn file(path: &str, result: &str) -> String {
    if is_empty_marker(result) {
        return format!("`{path}` is empty.");
    }
    // The file's text keeps its line ends; a one-line result without one is how read_file
    // reports a problem.
    if !result.contains('\n') {
        return quoted("read_file", result);
    }
    let mut lines: Vec<&str> = result.lines().collect();
    let cut = lines.last().is_some_and(|line| truncated(line).is_some());
    if cut {
        lines.pop();
    }
    let shown = lines.len().min(SHOWN);
    let size = if cut {
        format!("more than {}", count(lines.len(), "line", "lines"))
    } else {
        count(lines.len(), "line", "lines")
    };
    let intro = if lines.len() > shown || cut {
        format!("`{path}` has {size}; here are the first {shown}:")
    } else {
        format!("`{path}` has {size}:")
    };
    format!("{intro}\n\n{}", fenced(&lines[..shown].join("\n")))
}

/// A result as it came, for a call whose result does not have the expected shape.
fn quoted(tool: &str, result: &str) -> String {
    let lines: Vec<&str> = result.lines().take(SHOWN).collect();
    format!("`{tool}` answered:\n\n{}", fenced(&lines.join("\n")))
}

/// The note of a `[truncated: …]` line.
fn truncated(line: &str) -> Option<&str> {
    line.strip_prefix("[truncated: ")?.strip_suffix(']')
}

/// `[path is empty]`, as list_dir and read_file say it.
fn is_empty_marker(result: &str) -> bool {
    result.starts_with('[') && result.ends_with(" is empty]") && !result.contains('\n')
}

/// "1 entry", "4 entries".
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// "a", "a and b", "a, b and c", "a, b, … and 9 more" (of `total`).
fn enumerate(items: &[String], total: usize) -> String {
    let shown = &items[..items.len().min(SHOWN)];
    let more = total.saturating_sub(shown.len());
    match (shown, more) {
        ([], _) => String::new(),
        ([only], 0) => only.clone(),
        ([first @ .., last], 0) => format!("{} and {last}", first.join(", ")),
        (all, more) => format!("{} and {more} more", all.join(", ")),
    }
}

/// `text` in a fenced code block whose fence no backtick run inside can close.
fn fenced(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}\n{text}\n{fence}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(name: &str, arguments: &str, result: &str) -> String {
        let call = ToolCall {
            id: "c".into(),
            name: name.into(),
            arguments: arguments.into(),
        };
        from_results(&[(&call, Some(result))])
    }

    #[test]
    fn listings_count_and_name_the_entries() {
        assert_eq!(
            answer("list_dir", r#"{"path":"."}"#, "README.md\nsrc/"),
            "The workspace has 2 entries: `README.md` and `src/`."
        );
        assert_eq!(
            answer("list_dir", r#"{"path":"src"}"#, "main.rs"),
            "`src` has 1 entry: `main.rs`."
        );
        assert_eq!(
            answer(
                "list_dir",
                r#"{"path":"a"}"#,
                "x\ny\n[truncated: showed 2 of 40 entries]"
            ),
            "`a` has 40 entries: `x`, `y` and 38 more."
        );
        assert_eq!(
            answer("list_dir", r#"{"path":"empty"}"#, "[empty is empty]"),
            "`empty` is empty."
        );
        assert_eq!(
            answer("list_dir", r#"{"path":"x"}"#, "cannot list x: not found"),
            "`list_dir` answered:\n\n```\ncannot list x: not found\n```"
        );
        let many: Vec<String> = (0..15).map(|i| format!("f{i}")).collect();
        let listed = answer("list_dir", "{}", &many.join("\n"));
        assert!(
            listed.starts_with("The workspace has 15 entries: `f0`, "),
            "{listed}"
        );
        assert!(listed.ends_with("`f11` and 3 more."), "{listed}");
    }

    #[test]
    fn searches_count_and_place_the_matches() {
        assert_eq!(
            answer(
                "search_text",
                r#"{"pattern":"TODO"}"#,
                "a.txt:1: TODO one\nsrc/b.rs:7:     // TODO: two"
            ),
            "Found 2 matches for TODO: `a.txt:1` and `src/b.rs:7`.\n\n```\na.txt:1: TODO one\nsrc/b.rs:7:     // TODO: two\n```"
        );
        assert_eq!(
            answer(
                "search_text",
                r#"{"pattern":"zebra"}"#,
                "no matches for /zebra/ in ."
            ),
            "Found no matches for zebra."
        );
        let cut = answer(
            "search_text",
            r#"{"pattern":"x"}"#,
            "a:1: x\n[truncated: stopped at 1 matches; narrow the pattern or the path to see the rest]",
        );
        assert!(
            cut.starts_with("Found at least 1 match for x: `a:1`."),
            "{cut}"
        );
        assert!(cut.ends_with("a narrower pattern shows the rest."), "{cut}");
        assert!(answer(
            "search_text",
            r#"{"pattern":"("}"#,
            "invalid regular expression /(/: oops"
        )
        .starts_with("`search_text` answered:"));
    }

    #[test]
    fn files_are_quoted_in_a_fence_they_cannot_close() {
        assert_eq!(
            answer("read_file", r#"{"path":"README.md"}"#, "# Title\nbody\n"),
            "`README.md` has 2 lines:\n\n```\n# Title\nbody\n```"
        );
        assert_eq!(
            answer(
                "read_file",
                r#"{"path":"a.md"}"#,
                "```rust\nfn x() {}\n```\n"
            ),
            "`a.md` has 3 lines:\n\n````\n```rust\nfn x() {}\n```\n````"
        );
        let long: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        let cut = format!("{long}[truncated: showed lines 1-20 (20 lines); call read_file with offset=21 to read on]");
        let answered = answer("read_file", r#"{"path":"big"}"#, &cut);
        assert!(
            answered.starts_with(
                "`big` has more than 20 lines; here are the first 12:\n\n```\nline 1\n"
            ),
            "{answered}"
        );
        assert!(answered.ends_with("line 12\n```"), "{answered}");
        assert_eq!(
            answer(
                "read_file",
                r#"{"path":"gone"}"#,
                "no such file or directory: gone"
            ),
            "`read_file` answered:\n\n```\nno such file or directory: gone\n```"
        );
    }
}
