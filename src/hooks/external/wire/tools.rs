//! The built-in tools as Claude Code and Gemini CLI name them: one table, used both ways (the
//! input a dialect's hook sees, and the arguments it gives back mapped to hookwire's).
//!
//! | hookwire | Claude Code | Gemini CLI |
//! |---|---|---|
//! | `read_file {path, offset, limit}` | `Read {file_path, offset, limit}` | `read_file {file_path, start_line, end_line}` |
//! | `list_dir {path}` | `LS {path}` | `list_directory {dir_path}` |
//! | `search_text {pattern, path}` | `Grep {pattern, path, output_mode: "content"}` | `grep_search {pattern, dir_path}` |
//!
//! Paths are absolute in both dialects (Claude Code's always are; Gemini CLI accepts them), and
//! made workspace-relative again on the way back. Lines: hookwire's `offset` is 1-based like
//! Claude's; Gemini's `start_line`/`end_line` are 1-based and inclusive (its older `offset`,
//! 0-based, and `absolute_path` are accepted back). Other tools keep their name and arguments.

use std::path::Path;

use serde_json::{json, Map, Value};

use crate::hooks::external::hook::Dialect;

/// One built-in tool: its name in each dialect.
struct Row {
    hookwire: &'static str,
    claude: &'static str,
    gemini: &'static str,
}

const TOOLS: [Row; 3] = [
    Row {
        hookwire: "read_file",
        claude: "Read",
        gemini: "read_file",
    },
    Row {
        hookwire: "list_dir",
        claude: "LS",
        gemini: "list_directory",
    },
    Row {
        hookwire: "search_text",
        claude: "Grep",
        gemini: "grep_search",
    },
];

impl Row {
    fn name(&self, dialect: Dialect) -> &'static str {
        match dialect {
            Dialect::Claude => self.claude,
            Dialect::Gemini => self.gemini,
            Dialect::Hookwire | Dialect::OpenHarness => self.hookwire,
        }
    }
}

fn row(hookwire: &str) -> Option<&'static Row> {
    TOOLS.iter().find(|row| row.hookwire == hookwire)
}

/// The name a hook of `dialect` sees for the hookwire tool `tool`.
pub(crate) fn name_for(dialect: Dialect, tool: &str) -> &str {
    row(tool).map(|row| row.name(dialect)).unwrap_or(tool)
}

/// The names a hook of `dialect` may know the tool by, for its matcher: hookwire's, and its
/// dialect's when that differs.
pub(crate) fn names(dialect: Dialect, tool: Option<&str>) -> [Option<&str>; 2] {
    let alias = tool
        .map(|tool| name_for(dialect, tool))
        .filter(|alias| Some(*alias) != tool);
    [tool, alias]
}

/// `path` (workspace-relative, as hookwire's tools take it) as an absolute path.
fn absolute(root: &Path, path: Option<&str>) -> String {
    match path {
        None | Some("" | ".") => root.display().to_string(),
        Some(path) if Path::new(path).is_absolute() => path.to_string(),
        Some(path) => root.join(path).display().to_string(),
    }
}

/// A path a hook gave back, workspace-relative when it is inside the workspace (otherwise as it
/// is: the tool refuses it).
fn relative(root: &Path, path: &str) -> Option<String> {
    let candidate = Path::new(path);
    match candidate.strip_prefix(root) {
        Ok(rest) if rest.as_os_str().is_empty() => None,
        Ok(rest) => Some(rest.display().to_string()),
        Err(_) => Some(path.to_string()),
    }
}

fn text<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    map.get(key).and_then(Value::as_str)
}

/// hookwire's arguments of `tool` as a hook of `dialect` sees them.
pub(crate) fn input_for(dialect: Dialect, tool: &str, arguments: &Value, root: &Path) -> Value {
    let Some(args) = arguments.as_object() else {
        return arguments.clone();
    };
    if !dialect.is_foreign() || row(tool).is_none() {
        return arguments.clone();
    }
    let mut out = Map::new();
    let path = text(args, "path");
    match (dialect, tool) {
        (Dialect::Claude, "read_file") => {
            out.insert("file_path".into(), json!(absolute(root, path)));
            copy(args, &mut out, &[("offset", "offset"), ("limit", "limit")]);
        }
        (Dialect::Claude, "list_dir") => {
            out.insert("path".into(), json!(absolute(root, path)));
        }
        (Dialect::Claude, "search_text") => {
            copy(args, &mut out, &[("pattern", "pattern")]);
            out.insert("path".into(), json!(absolute(root, path)));
            out.insert("output_mode".into(), json!("content"));
        }
        (Dialect::Gemini, "read_file") => {
            out.insert("file_path".into(), json!(absolute(root, path)));
            let start = args.get("offset").and_then(Value::as_u64);
            if let Some(start) = start {
                out.insert("start_line".into(), json!(start));
            }
            if let Some(limit) = args.get("limit").and_then(Value::as_u64) {
                let first = start.unwrap_or(1);
                out.insert("end_line".into(), json!(first + limit.saturating_sub(1)));
            }
        }
        (Dialect::Gemini, "list_dir") => {
            out.insert("dir_path".into(), json!(absolute(root, path)));
        }
        (Dialect::Gemini, "search_text") => {
            copy(args, &mut out, &[("pattern", "pattern")]);
            out.insert("dir_path".into(), json!(absolute(root, path)));
        }
        _ => return arguments.clone(),
    }
    Value::Object(out)
}

/// Arguments a hook of `dialect` gave back for `tool` (a hookwire name), as hookwire's.
pub(crate) fn input_from(dialect: Dialect, tool: &str, given: &Value, root: &Path) -> Value {
    let Some(args) = given.as_object() else {
        return given.clone();
    };
    if !dialect.is_foreign() || row(tool).is_none() {
        return given.clone();
    }
    let mut out = Map::new();
    let path = |keys: &[&str], out: &mut Map<String, Value>| {
        if let Some(given) = keys.iter().find_map(|key| text(args, key)) {
            if let Some(path) = relative(root, given) {
                out.insert("path".into(), json!(path));
            }
        }
    };
    match (dialect, tool) {
        (Dialect::Claude, "read_file") => {
            path(&["file_path"], &mut out);
            copy(args, &mut out, &[("offset", "offset"), ("limit", "limit")]);
        }
        (Dialect::Claude, "list_dir") => path(&["path"], &mut out),
        (Dialect::Claude, "search_text") => {
            copy(args, &mut out, &[("pattern", "pattern")]);
            path(&["path"], &mut out);
        }
        (Dialect::Gemini, "read_file") => {
            path(&["file_path", "absolute_path", "path"], &mut out);
            let number = |key| args.get(key).and_then(Value::as_u64);
            match (number("start_line"), number("end_line"), number("offset")) {
                (start, end, _) if start.is_some() || end.is_some() => {
                    let first = start.unwrap_or(1).max(1);
                    out.insert("offset".into(), json!(first));
                    if let Some(end) = end {
                        out.insert("limit".into(), json!(end.saturating_sub(first) + 1));
                    }
                }
                (_, _, Some(offset)) => {
                    out.insert("offset".into(), json!(offset + 1));
                    copy(args, &mut out, &[("limit", "limit")]);
                }
                _ => copy(args, &mut out, &[("limit", "limit")]),
            }
        }
        (Dialect::Gemini, "list_dir") => path(&["dir_path", "path"], &mut out),
        (Dialect::Gemini, "search_text") => {
            copy(args, &mut out, &[("pattern", "pattern")]);
            path(&["dir_path", "path"], &mut out);
        }
        _ => return given.clone(),
    }
    Value::Object(out)
}

fn copy(from: &Map<String, Value>, to: &mut Map<String, Value>, keys: &[(&str, &str)]) {
    for (source, target) in keys {
        if let Some(value) = from.get(*source).filter(|v| !v.is_null()) {
            to.insert(target.to_string(), value.clone());
        }
    }
}

/// A tool's result as Claude Code's `tool_response` for that tool: `Read` gives a `file`
/// object, `Grep` its `content` mode, others (and every tool in Gemini's `llmContent`) the text.
pub(crate) fn claude_response(tool: &str, arguments: &Value, result: &str, root: &Path) -> Value {
    let lines = result.lines().count();
    match tool {
        "read_file" => {
            let path = arguments.get("path").and_then(Value::as_str);
            let start = arguments.get("offset").and_then(Value::as_u64).unwrap_or(1);
            json!({"type": "text", "file": {"filePath": absolute(root, path), "content": result,
                   "numLines": lines, "startLine": start}})
        }
        "search_text" => json!({"mode": "content", "content": result, "numLines": lines}),
        _ => json!(result),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_both_ways() {
        for row in &TOOLS {
            assert_eq!(name_for(Dialect::Hookwire, row.hookwire), row.hookwire);
            assert_eq!(name_for(Dialect::Claude, row.hookwire), row.claude);
            assert_eq!(name_for(Dialect::Gemini, row.hookwire), row.gemini);
        }
        assert_eq!(name_for(Dialect::Claude, "read_file"), "Read");
        assert_eq!(name_for(Dialect::Gemini, "list_dir"), "list_directory");
        assert_eq!(name_for(Dialect::Claude, "register_hook"), "register_hook");
    }

    #[test]
    fn arguments_both_ways() {
        let root = Path::new("/ws");
        let cases = [
            (
                Dialect::Claude,
                "read_file",
                json!({"path":"src/a.rs","offset":3,"limit":10}),
                json!({"file_path":"/ws/src/a.rs","offset":3,"limit":10}),
            ),
            (
                Dialect::Claude,
                "list_dir",
                json!({"path":"src"}),
                json!({"path":"/ws/src"}),
            ),
            (
                Dialect::Claude,
                "search_text",
                json!({"pattern":"fn","path":"src"}),
                json!({"pattern":"fn","path":"/ws/src","output_mode":"content"}),
            ),
            (
                Dialect::Gemini,
                "read_file",
                json!({"path":"a.rs","offset":3,"limit":10}),
                json!({"file_path":"/ws/a.rs","start_line":3,"end_line":12}),
            ),
            (
                Dialect::Gemini,
                "search_text",
                json!({"pattern":"fn","path":"src"}),
                json!({"pattern":"fn","dir_path":"/ws/src"}),
            ),
        ];
        for (dialect, tool, ours, theirs) in cases {
            assert_eq!(input_for(dialect, tool, &ours, root), theirs, "{tool}");
            assert_eq!(input_from(dialect, tool, &theirs, root), ours, "{tool}");
        }
        // The root itself is no `path`; a path outside stays as given (the tool refuses it).
        assert_eq!(
            input_from(Dialect::Claude, "list_dir", &json!({"path":"/ws"}), root),
            json!({})
        );
        assert_eq!(
            input_from(
                Dialect::Claude,
                "read_file",
                &json!({"file_path":"/etc/passwd"}),
                root
            ),
            json!({"path":"/etc/passwd"})
        );
        // Older Gemini arguments are understood.
        assert_eq!(
            input_from(
                Dialect::Gemini,
                "read_file",
                &json!({"absolute_path":"/ws/a","offset":0,"limit":5}),
                root
            ),
            json!({"path":"a","offset":1,"limit":5})
        );
        // Unknown tools and the hookwire dialect: untouched.
        let args = json!({"x":1});
        assert_eq!(
            input_for(Dialect::Claude, "register_hook", &args, root),
            args
        );
        assert_eq!(input_for(Dialect::Hookwire, "read_file", &args, root), args);
    }
}
