//! From the person's words to the tool call that answers them, by keyword: search, read or list.

use crate::types::ToolCall;

/// The tool a request asks for, with arguments taken from the words; `None` for anything else.
pub(super) fn wanted_tool(input: &str) -> Option<ToolCall> {
    let lower = input.to_lowercase();
    let has = |words: &[&str]| {
        lower
            .split(|c: char| !c.is_alphanumeric())
            .any(|token| words.contains(&token))
    };
    let path = path_in(input);
    let (name, arguments) = if has(&["search", "grep", "find"]) {
        (
            "search_text",
            serde_json::json!({ "pattern": search_pattern(input) }),
        )
    } else if let (Some(path), true) = (
        &path,
        has(&["read", "open", "show", "cat", "summarise", "summarize"]),
    ) {
        ("read_file", serde_json::json!({ "path": path }))
    } else if has(&["read", "summarise", "summarize"]) {
        ("read_file", serde_json::json!({ "path": "README.md" }))
    } else if has(&["list", "ls", "files", "folder", "directory", "dir"]) {
        (
            "list_dir",
            serde_json::json!({ "path": path.unwrap_or_else(|| ".".into()) }),
        )
    } else {
        return None;
    };
    Some(ToolCall {
        id: String::new(),
        name: name.into(),
        arguments: arguments.to_string(),
    })
}

/// The first word that looks like a path (`README.md`, `src/main.rs`).
fn path_in(input: &str) -> Option<String> {
    input
        .split_whitespace()
        .map(|w| {
            w.trim_matches(|c: char| "\"'`,;:!?()[]{}<>".contains(c))
                .trim_end_matches('.')
        })
        .find(|w| w.len() > 1 && (w.contains('.') || w.contains('/')) && !w.starts_with("http"))
        .map(str::to_string)
}

/// A quoted phrase, else the word after "for", else the last word; as a literal pattern.
fn search_pattern(input: &str) -> String {
    for quote in ['"', '\'', '`'] {
        let mut parts = input.split(quote);
        if let (Some(_), Some(inside), Some(_)) = (parts.next(), parts.next(), parts.next()) {
            if !inside.is_empty() {
                return regex::escape(inside);
            }
        }
    }
    let words: Vec<&str> = input.split_whitespace().collect();
    let after_for = words
        .iter()
        .position(|w| w.eq_ignore_ascii_case("for"))
        .and_then(|i| words.get(i + 1));
    let word = after_for.or(words.last()).copied().unwrap_or("TODO");
    let word = word.trim_matches(|c: char| !c.is_alphanumeric() && c != '_');
    regex::escape(if word.is_empty() { "TODO" } else { word })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wanted(input: &str) -> Option<(String, String)> {
        wanted_tool(input).map(|c| (c.name, c.arguments))
    }

    fn some(name: &str, arguments: &str) -> Option<(String, String)> {
        Some((name.into(), arguments.into()))
    }

    #[test]
    fn each_request_picks_its_tool_and_arguments() {
        assert_eq!(
            wanted("search for TODO"),
            some("search_text", r#"{"pattern":"TODO"}"#)
        );
        assert_eq!(
            wanted("search for \"fn main\" please"),
            some("search_text", r#"{"pattern":"fn main"}"#)
        );
        assert_eq!(
            wanted("grep unwrap?"),
            some("search_text", r#"{"pattern":"unwrap"}"#)
        );
        assert_eq!(
            wanted("search for a.b"),
            some("search_text", r#"{"pattern":"a\\.b"}"#)
        );
        assert_eq!(
            wanted("please read src/main.rs."),
            some("read_file", r#"{"path":"src/main.rs"}"#)
        );
        assert_eq!(
            wanted("summarise the readme"),
            some("read_file", r#"{"path":"README.md"}"#)
        );
        assert_eq!(
            wanted("list the files"),
            some("list_dir", r#"{"path":"."}"#)
        );
        assert_eq!(wanted("list src/"), some("list_dir", r#"{"path":"src/"}"#));
        assert_eq!(wanted("hello there"), None);
        assert_eq!(wanted("what is a planning round?"), None);
    }
}
