//! What a hook reads on stdin (or as an HTTP body), typed per dialect: the native input
//! (hookwire's and the OpenHarness event names), Claude Code's and Gemini CLI's; and what each
//! dialect may answer. Data only: the builders are the dialects' (`wire::hookwire`,
//! `wire::claude`, `wire::gemini`), the readers too (each answer deserialized into its dialect's
//! output type, then its `into_output`). The JSON Schemas under
//! `docs/schema/hooks/` are generated from these types.

pub(crate) mod claude;
pub(crate) mod gemini;
pub(crate) mod native;
mod schema;

pub use schema::hook_schemas;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

/// The keys of an answer's object that hookwire does not read, set aside (`#[serde(flatten)]`):
/// this also keeps a JSON array from being read as the object's fields in order, as serde
/// would read it otherwise.
pub(crate) type Unread = Map<String, Value>;

/// A message as a hook sees it: a role and its text, and (hookwire's and the OpenHarness
/// names) the tool traffic in the history's shape, so a hook that gives the list back keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub(crate) struct PlainMessage {
    /// `system`, `user`, `assistant` or `tool` (Gemini CLI: `model` for the assistant, and no
    /// tool messages).
    pub(crate) role: &'static str,
    pub(crate) content: String,
    /// An assistant message's calls, as OpenAI writes them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) tool_calls: Vec<PlainToolCall>,
    /// A tool message: the call it answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tool_call_id: Option<String>,
    /// A tool message: the tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) name: Option<String>,
}

/// `{id, type: "function", function: {name, arguments}}`, `arguments` a JSON string.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub(crate) struct PlainToolCall {
    pub(crate) id: String,
    #[serde(rename = "type")]
    pub(crate) kind: crate::types::history::ToolCallKind,
    pub(crate) function: PlainFunction,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub(crate) struct PlainFunction {
    pub(crate) name: String,
    /// The arguments' JSON text.
    pub(crate) arguments: String,
}

impl PlainMessage {
    /// Only a role and a text.
    pub(crate) fn text(role: &'static str, content: String) -> Self {
        Self {
            role,
            content,
            tool_calls: Vec::new(),
            tool_call_id: None,
            name: None,
        }
    }

    /// The message whole: its role, text and tool traffic.
    pub(crate) fn of(message: &crate::types::Message) -> Self {
        let tool_calls = message
            .tool_calls
            .iter()
            .map(|call| PlainToolCall {
                id: call.id.clone(),
                kind: crate::types::history::ToolCallKind::Function,
                function: PlainFunction {
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                },
            })
            .collect();
        Self {
            tool_calls,
            tool_call_id: message.tool_call_id.clone(),
            name: message.tool_name.clone(),
            ..Self::text(message.role.as_str(), message.content.clone())
        }
    }
}

#[cfg(test)]
mod tests;
