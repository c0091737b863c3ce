//! `read_file`: the text of a workspace file, by lines, with a marker that says how to read on.

use std::io::{BufRead, BufReader, Read};
use std::sync::Arc;

use super::ToolError;
use async_trait::async_trait;
use serde_json::{json, Value};

use super::workspace::{names_a_folder, Kind, Workspace};
use super::{
    arguments_object, normalize_path_argument, optional_count, optional_str, run_bounded,
    StopReader, StopSignal, Tool, ToolLimits, ToolOutput, ToolSpec,
};

pub(super) struct ReadFile {
    workspace: Arc<Workspace>,
    limits: ToolLimits,
}

impl ReadFile {
    pub(super) fn new(workspace: Arc<Workspace>, limits: ToolLimits) -> Self {
        Self { workspace, limits }
    }
}

#[async_trait]
impl Tool for ReadFile {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "read_file".into(),
            description: format!(
                "Read a UTF-8 text file of the workspace. Returns up to {} lines (or {} bytes) starting at `offset`; \
                 a marker at the end says how to read on.",
                self.limits.max_lines, self.limits.max_output_bytes
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path relative to the workspace root, e.g. \"src/main.rs\"."},
                    "offset": {"type": "integer", "minimum": 1, "description": "First line to return (1-based). Default 1."},
                    "limit": {"type": "integer", "minimum": 1, "description": format!("Most lines to return. Default and maximum {}.", self.limits.max_lines)}
                },
                "required": ["path"]
            }),
        }
    }

    fn prepare(&self, arguments: Value) -> Result<Value, ToolError> {
        normalize_path_argument(arguments, "path", true)
    }

    async fn run(&self, arguments: Value) -> ToolOutput {
        let parsed = (|| {
            let args = arguments_object(&arguments)?;
            let path = optional_str(args, "path")?
                .ok_or("missing argument \"path\"")?
                .to_string();
            if names_a_folder(&path) {
                return Err(ToolError::new(format!(
                    "{path} ends in '/': it names a folder; use list_dir to see what is in it"
                )));
            }
            let offset = optional_count(args, "offset")?.unwrap_or(1);
            let limit = optional_count(args, "limit")?
                .unwrap_or(self.limits.max_lines)
                .min(self.limits.max_lines);
            Ok::<_, ToolError>((path, offset, limit))
        })();
        let (path, offset, limit) = match parsed {
            Ok(parsed) => parsed,
            Err(error) => return ToolOutput::error(error.to_string()),
        };
        let workspace = self.workspace.clone();
        // Leave room for the marker inside the output cap.
        let max_bytes = self.limits.max_output_bytes.saturating_sub(200);
        run_bounded("read_file", self.limits, move |stop| {
            read_lines(&workspace, &path, offset, limit, max_bytes, stop)
        })
        .await
    }
}

fn read_lines(
    workspace: &Workspace,
    path: &str,
    offset: usize,
    limit: usize,
    max_bytes: usize,
    stop: &StopSignal,
) -> Result<String, ToolError> {
    let (file, kind) = workspace.open(path)?;
    if kind == Kind::Dir {
        return Err(ToolError::new(format!(
            "{path} is a folder; use list_dir to see what is in it"
        )));
    }
    // Every read checks `stop`: skipping to a far `offset` of a huge file ends at the deadline.
    let mut reader = BufReader::new(StopReader::new(file, stop.clone()));
    let head = reader
        .fill_buf()
        .map_err(|e| format!("cannot read {path}: {e}"))?;
    if head[..head.len().min(8192)].contains(&0) {
        return Err(ToolError::new(format!(
            "{path} is a binary file; read_file only reads text"
        )));
    }
    let mut output = String::new();
    let mut line_number = 0usize;
    let mut shown = 0usize;
    let mut raw = Vec::new();
    loop {
        raw.clear();
        let read = (&mut reader)
            .take(16 * 1024 * 1024)
            .read_until(b'\n', &mut raw)
            .map_err(|e| format!("cannot read {path}: {e}"))?;
        if read == 0 {
            break;
        }
        line_number += 1;
        let line = std::str::from_utf8(&raw).map_err(|_| {
            format!("{path} is not UTF-8 text (line {line_number}); read_file only reads UTF-8")
        })?;
        if line_number < offset {
            continue;
        }
        if shown == limit || output.len() + line.len() > max_bytes {
            let last = offset + shown - 1;
            let why = if shown == limit {
                format!("{limit} lines")
            } else {
                format!("{max_bytes} bytes")
            };
            if !output.ends_with('\n') {
                output.push('\n');
            }
            output.push_str(&format!(
                "[truncated: showed lines {offset}-{last} ({why}); call read_file with offset={} to read on]",
                last + 1
            ));
            return Ok(output);
        }
        output.push_str(line);
        shown += 1;
    }
    if shown == 0 && line_number > 0 && offset > 1 {
        return Err(ToolError::new(format!(
            "offset {offset} is past the end of {path} ({line_number} lines)"
        )));
    }
    if line_number == 0 {
        return Ok(format!("[{path} is empty]"));
    }
    Ok(output)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(dir: &std::path::Path, limits: ToolLimits) -> ReadFile {
        ReadFile::new(Arc::new(Workspace::new(dir).unwrap()), limits)
    }

    #[tokio::test]
    async fn reads_with_offset_and_limit() {
        let dir = tempfile::tempdir().unwrap();
        let text: String = (1..=10).map(|i| format!("line {i}\n")).collect();
        std::fs::write(dir.path().join("a.txt"), &text).unwrap();
        let t = tool(dir.path(), ToolLimits::default());
        assert_eq!(t.run(json!({"path":"a.txt"})).await, ToolOutput::ok(text));
        let out = t.run(json!({"path":"a.txt","offset":3,"limit":2})).await;
        assert_eq!(
            out.content,
            "line 3\nline 4\n[truncated: showed lines 3-4 (2 lines); call read_file with offset=5 to read on]"
        );
        let past = t.run(json!({"path":"a.txt","offset":20})).await;
        assert_eq!(
            past,
            ToolOutput::error("offset 20 is past the end of a.txt (10 lines)")
        );
    }

    #[tokio::test]
    async fn truncates_by_lines_and_by_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let text: String = (1..=50)
            .map(|i| format!("{i:04} {}\n", "x".repeat(40)))
            .collect();
        std::fs::write(dir.path().join("big.txt"), &text).unwrap();
        let by_lines = tool(
            dir.path(),
            ToolLimits {
                max_lines: 5,
                ..ToolLimits::default()
            },
        );
        let out = by_lines.run(json!({"path":"big.txt"})).await.content;
        assert!(
            out.ends_with(
                "[truncated: showed lines 1-5 (5 lines); call read_file with offset=6 to read on]"
            ),
            "{out}"
        );
        let by_bytes = tool(
            dir.path(),
            ToolLimits {
                max_output_bytes: 500,
                ..ToolLimits::default()
            },
        );
        let out = by_bytes.run(json!({"path":"big.txt"})).await.content;
        assert!(
            out.contains("[truncated: showed lines 1-6 (300 bytes); call read_file with offset=7"),
            "{out}"
        );
    }

    #[tokio::test]
    async fn refuses_binary_non_utf8_folders_and_bad_arguments() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("bin"), b"ab\0cd").unwrap();
        std::fs::write(dir.path().join("latin1"), b"caf\xe9\n").unwrap();
        std::fs::create_dir(dir.path().join("d")).unwrap();
        let t = tool(dir.path(), ToolLimits::default());
        assert!(t
            .run(json!({"path":"bin"}))
            .await
            .content
            .contains("binary file"));
        assert!(t
            .run(json!({"path":"latin1"}))
            .await
            .content
            .contains("not UTF-8"));
        assert!(t
            .run(json!({"path":"d"}))
            .await
            .content
            .contains("is a folder"));
        assert_eq!(
            t.run(json!({})).await,
            ToolOutput::error("missing argument \"path\"")
        );
        assert_eq!(
            t.run(json!({"path":1})).await,
            ToolOutput::error("argument \"path\" must be a string")
        );
        assert_eq!(
            t.run(json!("x")).await,
            ToolOutput::error("arguments must be a JSON object")
        );
        assert!(t
            .run(json!({"path":"a","offset":0}))
            .await
            .content
            .contains("\"offset\" must be a whole number"));
        assert_eq!(
            t.run(json!({"path":"missing"})).await,
            ToolOutput::error("no such file or directory: missing")
        );
        assert!(t
            .run(json!({"path":"../etc/passwd"}))
            .await
            .content
            .contains("outside the workspace"));
    }
}
