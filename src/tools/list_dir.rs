//! `list_dir`: the entries of a workspace folder, one a line, folders ending in `/`.

use std::sync::Arc;

use super::ToolError;
use async_trait::async_trait;
use serde_json::{json, Value};

use super::workspace::{Kind, Workspace};
use super::{
    arguments_object, normalize_path_argument, optional_str, run_bounded, StopSignal, Tool,
    ToolLimits, ToolOutput, ToolSpec,
};

pub(super) struct ListDir {
    workspace: Arc<Workspace>,
    limits: ToolLimits,
}

impl ListDir {
    pub(super) fn new(workspace: Arc<Workspace>, limits: ToolLimits) -> Self {
        Self { workspace, limits }
    }
}

#[async_trait]
impl Tool for ListDir {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "list_dir".into(),
            description: "List the entries of a workspace folder, one a line, sorted; folders end in `/`, symlinks show \
                          `name -> target`."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Folder relative to the workspace root. Default: the root."}
                }
            }),
        }
    }

    fn prepare(&self, arguments: Value) -> Result<Value, ToolError> {
        normalize_path_argument(arguments, "path", false)
    }

    async fn run(&self, arguments: Value) -> ToolOutput {
        let path = match arguments_object(&arguments).and_then(|args| optional_str(args, "path")) {
            Ok(path) => path.unwrap_or(".").to_string(),
            Err(error) => return ToolOutput::error(error.to_string()),
        };
        let workspace = self.workspace.clone();
        let max_entries = self.limits.max_entries;
        run_bounded("list_dir", self.limits, move |stop| {
            list(&workspace, &path, max_entries, stop)
        })
        .await
    }
}

fn list(
    workspace: &Workspace,
    path: &str,
    max_entries: usize,
    stop: &StopSignal,
) -> Result<String, ToolError> {
    let resolved = workspace.resolve(path)?;
    let (dir, kind) = workspace.open_path(&resolved, path)?;
    if kind != Kind::Dir {
        return Err(ToolError::new(format!(
            "{path} is a file; use read_file to read it"
        )));
    }
    // Read the folder that was opened and verified, not whatever the name points at now.
    let entries = std::fs::read_dir(workspace.opened_dir_path(&dir, &resolved))
        .map_err(|e| format!("cannot list {path}: {e}"))?;
    let mut names = Vec::new();
    for entry in entries.flatten() {
        // A folder of millions of entries must not hold the call past its deadline.
        stop.check()
            .map_err(|why| format!("cannot list {path}: {why}"))?;
        let name = entry.file_name().to_string_lossy().to_string();
        names.push(match entry.file_type() {
            Ok(t) if t.is_dir() => format!("{name}/"),
            Ok(t) if t.is_symlink() => match std::fs::read_link(entry.path()) {
                Ok(target) => format!("{name} -> {}", target.display()),
                Err(_) => name,
            },
            _ => name,
        });
    }
    names.sort();
    if names.is_empty() {
        return Ok(format!("[{path} is empty]"));
    }
    let total = names.len();
    let mut output = names
        .into_iter()
        .take(max_entries)
        .collect::<Vec<_>>()
        .join("\n");
    if total > max_entries {
        output.push_str(&format!(
            "\n[truncated: showed {max_entries} of {total} entries]"
        ));
    }
    Ok(output)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lists_sorted_with_folder_slashes_and_refuses_escapes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b.txt"), "").unwrap();
        std::fs::create_dir(dir.path().join("a")).unwrap();
        std::fs::write(dir.path().join("a/inner.txt"), "").unwrap();
        std::os::unix::fs::symlink("b.txt", dir.path().join("c")).unwrap();
        let tool = ListDir::new(
            Arc::new(Workspace::new(dir.path()).unwrap()),
            ToolLimits::default(),
        );
        assert_eq!(
            tool.run(json!({})).await,
            ToolOutput::ok("a/\nb.txt\nc -> b.txt")
        );
        assert_eq!(
            tool.run(json!({"path":"a"})).await,
            ToolOutput::ok("inner.txt")
        );
        assert!(tool
            .run(json!({"path":".."}))
            .await
            .content
            .contains("outside the workspace"));
        assert!(tool
            .run(json!({"path":"b.txt"}))
            .await
            .content
            .contains("is a file"));
        let capped = ListDir::new(
            Arc::new(Workspace::new(dir.path()).unwrap()),
            ToolLimits {
                max_entries: 2,
                ..ToolLimits::default()
            },
        );
        assert_eq!(
            capped.run(json!({})).await.content,
            "a/\nb.txt\n[truncated: showed 2 of 3 entries]"
        );
    }
}
