//! What one call of a tool returns (its spec, what the model sees, is in `message`).

use super::chat::ChatEvent;

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
