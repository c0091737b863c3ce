//! The messages of an AG-UI request as serde reads them (AG-UI 1.0's `Message` union, by
//! `role`); fields AG-UI clients add are ignored.

use serde::Deserialize;
use serde_json::Value;

use super::AgUiError;

/// A message, by `role`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub(super) enum AgUiMessage {
    Developer(TextMessage),
    System(TextMessage),
    User(UserMessage),
    Assistant(AssistantMessage),
    Tool(ToolMessage),
    Activity(OtherMessage),
    Reasoning(OtherMessage),
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(super) struct TextMessage {
    pub(super) id: String,
    pub(super) content: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(super) struct UserMessage {
    pub(super) id: String,
    pub(super) content: Content,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct AssistantMessage {
    pub(super) id: String,
    #[serde(default)]
    pub(super) content: Option<String>,
    #[serde(default)]
    pub(super) tool_calls: Option<Vec<AgUiToolCall>>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ToolMessage {
    pub(super) id: String,
    pub(super) content: Content,
    pub(super) tool_call_id: String,
    #[serde(default)]
    pub(super) error: Option<String>,
}

/// An `activity` or `reasoning` message: kept out of the conversation.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(super) struct OtherMessage {
    pub(super) id: String,
}

/// A user's or a tool's content: a string, or parts.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged, expecting = "a string or an array of content parts")]
pub(super) enum Content {
    Text(String),
    Parts(Vec<Part>),
}

/// A content part: `text` is read; the media parts (`image`, `audio`, `video`, `document`) are
/// refused (hookwire's models take text).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(super) struct Part {
    #[serde(rename = "type")]
    pub(super) kind: String,
    #[serde(default)]
    pub(super) text: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(super) struct AgUiToolCall {
    pub(super) id: String,
    #[serde(rename = "type")]
    pub(super) kind: FunctionKind,
    pub(super) function: AgUiFunction,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum FunctionKind {
    Function,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(super) struct AgUiFunction {
    pub(super) name: String,
    pub(super) arguments: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(super) struct AgUiTool {
    pub(super) name: String,
    pub(super) description: String,
    #[serde(default)]
    pub(super) parameters: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(super) struct AgUiContext {
    pub(super) description: String,
    pub(super) value: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ResumeEntry {
    pub(super) interrupt_id: String,
    pub(super) status: ResumeStatus,
    #[serde(default)]
    pub(super) payload: Option<Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum ResumeStatus {
    Resolved,
    Cancelled,
}

impl AgUiMessage {
    pub(super) fn id(&self) -> &str {
        match self {
            AgUiMessage::Developer(m) | AgUiMessage::System(m) => &m.id,
            AgUiMessage::User(m) => &m.id,
            AgUiMessage::Assistant(m) => &m.id,
            AgUiMessage::Tool(m) => &m.id,
            AgUiMessage::Activity(m) | AgUiMessage::Reasoning(m) => &m.id,
        }
    }

    /// `activity` and `reasoning` messages are not the conversation's.
    pub(super) fn is_conversation(&self) -> bool {
        !matches!(self, AgUiMessage::Activity(_) | AgUiMessage::Reasoning(_))
    }

    /// The ids of an assistant message's tool calls.
    pub(super) fn call_ids(&self) -> impl Iterator<Item = &str> {
        let calls = match self {
            AgUiMessage::Assistant(m) => m.tool_calls.as_deref().unwrap_or_default(),
            _ => &[],
        };
        calls.iter().map(|call| call.id.as_str())
    }
}

impl Content {
    /// The text parts, joined (AG-UI's `contentToText`).
    pub(super) fn text(&self) -> String {
        match self {
            Content::Text(text) => text.clone(),
            Content::Parts(parts) => parts.iter().filter_map(|p| p.text.as_deref()).collect(),
        }
    }

    /// Only text parts: a media part is refused rather than dropped unseen.
    pub(super) fn check(&self, at: impl Fn() -> String) -> Result<(), AgUiError> {
        let Content::Parts(parts) = self else {
            return Ok(());
        };
        for (n, part) in parts.iter().enumerate() {
            let path = || format!("{}.content[{n}]", at());
            match (part.kind.as_str(), &part.text) {
                ("text", Some(_)) => {}
                ("text", None) => return Err(AgUiError::field(path(), "has no \"text\"")),
                (kind, _) => {
                    return Err(AgUiError::field(
                        path(),
                        format!("is a {kind:?} part; hookwire takes text parts only"),
                    ))
                }
            }
        }
        Ok(())
    }
}
