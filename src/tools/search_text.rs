//! `search_text`: a regex search over the workspace with ripgrep's crates, honouring
//! `.gitignore`/`.ignore`, skipping hidden and binary files, following no symlinks.

use std::path::Path;
use std::sync::Arc;

use super::ToolError;
use async_trait::async_trait;
use grep_regex::RegexMatcherBuilder;
use grep_searcher::sinks::UTF8;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use serde_json::{json, Value};

use super::workspace::{Kind, Workspace};
use super::{
    arguments_object, normalize_path_argument, optional_str, run_bounded, StopReader, StopSignal,
    Tool, ToolLimits, ToolOutput, ToolSpec,
};

/// A matching line longer than this is shortened.
const MAX_LINE_CHARS: usize = 300;

pub(super) struct SearchText {
    workspace: Arc<Workspace>,
    limits: ToolLimits,
}

impl SearchText {
    pub(super) fn new(workspace: Arc<Workspace>, limits: ToolLimits) -> Self {
        Self { workspace, limits }
    }
}

#[async_trait]
impl Tool for SearchText {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "search_text".into(),
            description: format!(
                "Search the workspace's text files for a regular expression (Rust regex syntax), like ripgrep: \
                 .gitignore is honoured, hidden and binary files are skipped. Returns matching lines as \
                 `path:line: text`, at most {}.",
                self.limits.max_matches
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "Regular expression, e.g. \"fn main\" or \"TODO|FIXME\"."},
                    "path": {"type": "string", "description": "File or folder to search, relative to the workspace root. Default: the root."}
                },
                "required": ["pattern"]
            }),
        }
    }

    fn prepare(&self, arguments: Value) -> Result<Value, ToolError> {
        normalize_path_argument(arguments, "path", false)
    }

    async fn run(&self, arguments: Value) -> ToolOutput {
        let parsed = arguments_object(&arguments).and_then(|args| {
            let pattern = optional_str(args, "pattern")?
                .ok_or("missing argument \"pattern\"")?
                .to_string();
            let path = optional_str(args, "path")?.unwrap_or(".").to_string();
            Ok((pattern, path))
        });
        let (pattern, path) = match parsed {
            Ok(parsed) => parsed,
            Err(error) => return ToolOutput::error(error.to_string()),
        };
        let workspace = self.workspace.clone();
        let limits = self.limits;
        run_bounded("search_text", limits, move |stop| {
            search(&workspace, &pattern, &path, limits, stop)
        })
        .await
    }
}

fn search(
    workspace: &Workspace,
    pattern: &str,
    path: &str,
    limits: ToolLimits,
    stop: &StopSignal,
) -> Result<String, ToolError> {
    if pattern.is_empty() {
        return Err("argument \"pattern\" must not be empty".into());
    }
    let matcher = RegexMatcherBuilder::new()
        .line_terminator(Some(b'\n'))
        .build(pattern)
        .map_err(|e| format!("invalid regular expression /{pattern}/: {e}"))?;
    let start = workspace.resolve(path)?;
    // Verify the starting point like any other open; the walk below never follows symlinks.
    let (_opened, _kind) = workspace.open_path(&start, path)?;
    let mut searcher = SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(0))
        .line_number(true)
        .build();
    let budget = limits.max_output_bytes.saturating_sub(200);
    let mut output = String::new();
    let mut matches = 0usize;
    let mut cut: Option<String> = None;
    let walker = ignore::WalkBuilder::new(&start)
        .require_git(false)
        .follow_links(false)
        .hidden(true)
        .build();
    let time_limit = format!("time limit of {}s", limits.timeout.as_secs_f64());
    for entry in walker {
        if stop.check().is_err() {
            cut = Some(time_limit);
            break;
        }
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        // Open and verify each file, so a symlink swapped in during the walk is not followed.
        let shown = workspace.display(entry.path());
        let Ok((file, Kind::File)) = workspace.open_path(entry.path(), &shown) else {
            continue;
        };
        // Every read checks `stop`, so one big file cannot hold the search past its deadline.
        let result = searcher.search_reader(
            &matcher,
            StopReader::new(file, stop.clone()),
            UTF8(|line_number, line| {
                if matches == limits.max_matches {
                    cut = Some(format!("{} matches", limits.max_matches));
                    return Ok(false);
                }
                let text = shorten(line.trim_end_matches(['\n', '\r']));
                let row = format!("{shown}:{line_number}: {text}\n");
                if output.len() + row.len() > budget {
                    cut = Some(format!("{} bytes", limits.max_output_bytes));
                    return Ok(false);
                }
                output.push_str(&row);
                matches += 1;
                Ok(true)
            }),
        );
        if result.is_err() && stop.check().is_err() {
            cut = Some(time_limit);
            break;
        }
        // A file that is not UTF-8 mid-way is skipped; what matched before stays.
        if cut.is_some() {
            break;
        }
    }
    if matches == 0 {
        if let Some(why) = cut {
            return Err(ToolError::new(format!(
                "no match for /{pattern}/ before the {why}"
            )));
        }
        return Ok(format!(
            "no matches for /{pattern}/ in {}",
            display_start(workspace, &start)
        ));
    }
    if let Some(why) = cut {
        output.push_str(&format!(
            "[truncated: stopped at {why}; narrow the pattern or the path to see the rest]"
        ));
    } else if output.ends_with('\n') {
        output.pop();
    }
    Ok(output)
}

fn shorten(line: &str) -> String {
    if line.chars().count() <= MAX_LINE_CHARS {
        return line.to_string();
    }
    let short: String = line.chars().take(MAX_LINE_CHARS).collect();
    format!("{short}…")
}

fn display_start(workspace: &Workspace, start: &Path) -> String {
    workspace.display(start)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, SearchText) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".gitignore"), "ignored.txt\n").unwrap();
        std::fs::write(dir.path().join("ignored.txt"), "needle hidden\n").unwrap();
        std::fs::write(dir.path().join("visible.txt"), "hay\nneedle here\n").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/deep.rs"), "fn needle() {}\n").unwrap();
        std::fs::write(dir.path().join("bin.dat"), b"needle\0\0").unwrap();
        let tool = SearchText::new(
            Arc::new(Workspace::new(dir.path()).unwrap()),
            ToolLimits::default(),
        );
        (dir, tool)
    }

    #[tokio::test]
    async fn honours_gitignore_and_skips_binaries() {
        let (_dir, tool) = setup();
        let out = tool.run(json!({"pattern":"needle"})).await;
        assert!(!out.is_error, "{out:?}");
        let mut lines: Vec<&str> = out.content.lines().collect();
        lines.sort();
        assert_eq!(
            lines,
            [
                "sub/deep.rs:1: fn needle() {}",
                "visible.txt:2: needle here"
            ]
        );
    }

    #[tokio::test]
    async fn sub_path_bad_regex_no_match_and_escape() {
        let (_dir, tool) = setup();
        assert_eq!(
            tool.run(json!({"pattern":"needle","path":"sub"})).await,
            ToolOutput::ok("sub/deep.rs:1: fn needle() {}")
        );
        let bad = tool.run(json!({"pattern":"(unclosed"})).await;
        assert!(
            bad.is_error
                && bad
                    .content
                    .contains("invalid regular expression /(unclosed/"),
            "{bad:?}"
        );
        assert_eq!(
            tool.run(json!({"pattern":"zebra"})).await,
            ToolOutput::ok("no matches for /zebra/ in .")
        );
        assert!(tool
            .run(json!({"pattern":"x","path":"../"}))
            .await
            .content
            .contains("outside the workspace"));
        assert_eq!(
            tool.run(json!({})).await,
            ToolOutput::error("missing argument \"pattern\"")
        );
    }

    #[tokio::test]
    async fn caps_matches_with_a_marker() {
        let dir = tempfile::tempdir().unwrap();
        let text: String = (0..50).map(|i| format!("match {i}\n")).collect();
        std::fs::write(dir.path().join("many.txt"), text).unwrap();
        let tool = SearchText::new(
            Arc::new(Workspace::new(dir.path()).unwrap()),
            ToolLimits {
                max_matches: 3,
                ..ToolLimits::default()
            },
        );
        let out = tool.run(json!({"pattern":"match"})).await.content;
        assert_eq!(
            out,
            "many.txt:1: match 0\nmany.txt:2: match 1\nmany.txt:3: match 2\n[truncated: stopped at 3 matches; narrow the pattern or the path to see the rest]"
        );
    }
}
