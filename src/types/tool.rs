//! What a tool is to the model (its spec) and what one call of it returns.

use serde_json::Value;

use super::chat::ChatEvent;

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
    pub events: Vec<ChatEvent>,
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
