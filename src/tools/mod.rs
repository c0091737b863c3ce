//! Built-in tools the agent loop can call, behind one [`Tool`] trait and a [`ToolRegistry`].
//!
//! Every path a tool touches is resolved against the [`Workspace`] root; nothing outside it is
//! ever opened. Tool failures are results with `is_error: true` (the model sees them), never
//! errors of the chat.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

/// What the model sees about a tool: sent upstream in the OpenAI function format.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
}

/// The outcome of one tool call, as the model and the client see it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub content: String,
    pub is_error: bool,
    /// Events for the client besides the result (e.g. the `session_hook` of `register_hook`).
    pub events: Vec<crate::agent::ChatEvent>,
}

impl ToolOutput {
    pub fn ok(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: false,
            events: Vec::new(),
        }
    }
    pub fn error(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: true,
            events: Vec::new(),
        }
    }
}

/// A tool the model may call.
#[async_trait]
pub trait Tool: Send + Sync {
    fn spec(&self) -> ToolSpec;
    /// Runs the tool. `arguments` is the parsed JSON object the model sent.
    async fn run(&self, arguments: Value) -> ToolOutput;
}

/// The tools of one `AgentClient`, by name, in a stable order.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
}

impl ToolRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        self.tools.insert(tool.spec().name, tool);
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name)
    }

    pub fn names(&self) -> Vec<String> {
        self.tools.keys().cloned().collect()
    }

    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.values().map(|t| t.spec()).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

pub mod list_dir;
pub mod read_file;
pub mod register_hook;
pub mod search_text;
pub mod workspace;

use std::time::Duration;

use workspace::Workspace;

/// Bounds on every tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolLimits {
    /// Wall time of one call.
    pub timeout: Duration,
    /// Bytes of output one call may return.
    pub max_output_bytes: usize,
    /// Lines `read_file` returns at most.
    pub max_lines: usize,
    /// Matches `search_text` returns at most.
    pub max_matches: usize,
    /// Entries `list_dir` returns at most.
    pub max_entries: usize,
}

impl Default for ToolLimits {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(10),
            max_output_bytes: 100_000,
            max_lines: 2_000,
            max_matches: 200,
            max_entries: 1_000,
        }
    }
}

/// The built-in tools: `read_file`, `list_dir`, `search_text`.
pub fn builtin_tools(workspace: Arc<Workspace>, limits: ToolLimits) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(read_file::ReadFile::new(workspace.clone(), limits)),
        Arc::new(list_dir::ListDir::new(workspace.clone(), limits)),
        Arc::new(search_text::SearchText::new(workspace, limits)),
    ]
}

/// Runs blocking tool work off the async threads, bounded by the call's time limit.
pub(crate) async fn run_bounded(
    name: &str,
    limits: ToolLimits,
    work: impl FnOnce() -> Result<String, String> + Send + 'static,
) -> ToolOutput {
    let task = tokio::task::spawn_blocking(work);
    match tokio::time::timeout(limits.timeout, task).await {
        Err(_) => ToolOutput::error(format!(
            "{name} timed out after {}s",
            limits.timeout.as_secs_f64()
        )),
        Ok(Err(join)) => ToolOutput::error(format!("{name} failed: {join}")),
        Ok(Ok(Ok(content))) => ToolOutput::ok(cap_output(content, limits.max_output_bytes)),
        Ok(Ok(Err(error))) => ToolOutput::error(error),
    }
}

/// Cuts `text` at a character boundary past `max` bytes, saying so.
pub fn cap_output(mut text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text.truncate(cut);
    text.push_str(&format!("\n[truncated: output cut at {max} bytes]"));
    text
}

/// The arguments object, or an error naming what was wrong.
pub(crate) fn arguments_object(
    arguments: &Value,
) -> Result<&serde_json::Map<String, Value>, String> {
    arguments
        .as_object()
        .ok_or_else(|| "arguments must be a JSON object".to_string())
}

/// An optional string argument.
pub(crate) fn optional_str<'a>(
    args: &'a serde_json::Map<String, Value>,
    key: &str,
) -> Result<Option<&'a str>, String> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(format!("argument \"{key}\" must be a string")),
    }
}

/// An optional positive integer argument.
pub(crate) fn optional_count(
    args: &serde_json::Map<String, Value>,
    key: &str,
) -> Result<Option<usize>, String> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => match value.as_u64() {
            Some(n) if n >= 1 => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
            _ => Err(format!(
                "argument \"{key}\" must be a whole number of at least 1"
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_output_respects_char_boundaries() {
        let capped = cap_output("ééé".into(), 3);
        assert!(
            capped.starts_with('é') && capped.contains("[truncated: output cut at 3 bytes]"),
            "{capped}"
        );
        assert_eq!(cap_output("short".into(), 10), "short");
    }

    #[tokio::test]
    async fn bounded_runs_time_out() {
        let limits = ToolLimits {
            timeout: Duration::from_millis(50),
            ..ToolLimits::default()
        };
        let output = run_bounded("slow", limits, || {
            std::thread::sleep(Duration::from_millis(300));
            Ok(String::new())
        })
        .await;
        assert_eq!(output, ToolOutput::error("slow timed out after 0.05s"));
    }
}
