//! `POST /v1/chat/completions`' body as OpenAI's clients send it (docs/protocol.md §19), and
//! what it becomes: the messages before the last `user` message are the history, that message
//! the input; a history ending with `tool` results goes on after the client's tools. `tools`
//! are client tools. The parameters that tune a model (`temperature`, `max_tokens`, …) are
//! accepted and left to the server's configuration (docs/frontends.md).

use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::super::http_chat::RouteError;
use super::super::wire::{check_client_tools, ClientTool};
use crate::config::Limits;
use crate::types::{ChatRequest, Message, Role, ToolCall};

/// The body of a chat completion request; unknown fields are ignored.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct CompletionRequest {
    /// Echoed in the answer; any name is served by hookwire's agent.
    #[serde(default)]
    pub(crate) model: Option<String>,
    pub(crate) messages: Vec<OpenAiMessage>,
    #[serde(default)]
    pub(crate) stream: bool,
    #[serde(default)]
    pub(crate) stream_options: Option<StreamOptions>,
    #[serde(default)]
    tools: Vec<OpenAiTool>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct StreamOptions {
    #[serde(default)]
    pub(crate) include_usage: bool,
}

/// `{"type": "function", "function": {name, description, parameters}}`.
#[derive(Debug, Clone, Deserialize)]
struct OpenAiTool {
    #[serde(rename = "type")]
    kind: ToolKind,
    function: ClientTool,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ToolKind {
    Function,
}

/// One message: `content` a string, an array of parts (`{"type": "text", "text"}`; other parts
/// are refused), or null on an assistant message that calls tools.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct OpenAiMessage {
    role: OpenAiRole,
    #[serde(default)]
    content: Option<Content>,
    #[serde(default)]
    tool_calls: Vec<OpenAiToolCall>,
    #[serde(default)]
    tool_call_id: Option<String>,
    #[serde(default)]
    name: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum OpenAiRole {
    System,
    Developer,
    User,
    Assistant,
    Tool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Content {
    Text(String),
    Parts(Vec<Part>),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part {
    Text { text: String },
}

#[derive(Debug, Clone, Deserialize)]
struct OpenAiToolCall {
    id: String,
    function: OpenAiFunction,
}

#[derive(Debug, Clone, Deserialize)]
struct OpenAiFunction {
    name: String,
    #[serde(default)]
    arguments: String,
}

impl Content {
    fn into_text(self) -> String {
        match self {
            Content::Text(text) => text,
            Content::Parts(parts) => parts
                .into_iter()
                .map(|Part::Text { text }| text)
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }
}

impl OpenAiMessage {
    fn into_message(self) -> Message {
        let content = self.content.map(Content::into_text).unwrap_or_default();
        match self.role {
            OpenAiRole::System | OpenAiRole::Developer => Message::system(content),
            OpenAiRole::User => Message::user(content),
            OpenAiRole::Assistant => Message::assistant_with_tools(
                content,
                self.tool_calls
                    .into_iter()
                    .map(|call| ToolCall {
                        id: call.id,
                        name: call.function.name,
                        arguments: call.function.arguments,
                    })
                    .collect(),
            ),
            OpenAiRole::Tool => {
                let mut message =
                    Message::tool_result(self.tool_call_id.unwrap_or_default(), content);
                message.tool_name = self.name;
                message
            }
        }
    }
}

impl CompletionRequest {
    /// The chat this request asks for, or why it cannot be one.
    pub(crate) fn into_request(
        self,
        id: String,
        limits: &Limits,
    ) -> Result<ChatRequest, RouteError> {
        let tools: Vec<ClientTool> = self
            .tools
            .into_iter()
            .map(|tool| {
                let ToolKind::Function = tool.kind;
                tool.function
            })
            .collect();
        check_client_tools(&tools).map_err(|error| {
            RouteError::bad_request(format!("field \"tools.{}\" {}", error.field, error.message))
        })?;
        if self.messages.len() > limits.max_history_messages + 1 {
            return Err(RouteError::bad_request(format!(
                "\"messages\" has {} messages; the limit is {} (limits.max_history_messages) and the input",
                self.messages.len(),
                limits.max_history_messages
            )));
        }
        let mut messages: Vec<Message> = self
            .messages
            .into_iter()
            .map(OpenAiMessage::into_message)
            .collect();
        let input = match messages.last().map(|m| m.role) {
            Some(Role::User) => messages.pop().map(|m| m.content).unwrap_or_default(),
            Some(Role::Tool) => String::new(),
            _ => {
                return Err(RouteError::bad_request(
                    "\"messages\" must end with the user's message, or with tool results",
                ))
            }
        };
        if input.is_empty() && messages.last().map(|m| m.role) != Some(Role::Tool) {
            return Err(RouteError::bad_request("the last user message is empty"));
        }
        if input.chars().count() > limits.max_input_chars {
            return Err(RouteError::bad_request(format!(
                "the last user message is over {} characters (limits.max_input_chars)",
                limits.max_input_chars
            )));
        }
        crate::server::frames::check_history(&messages, false)
            .map_err(|error| RouteError::bad_request(error.to_string()))?;
        Ok(ChatRequest {
            session_id: id.clone(),
            messages,
            client_tools: tools.into_iter().map(ClientTool::into_spec).collect(),
            can_ask_approval: false,
            cancel: CancellationToken::new(),
            ..ChatRequest::new(id, input)
        })
    }
}

/// What `GET /v1/models` lists: one model, hookwire's agent.
pub(crate) fn models(model: &str) -> Value {
    serde_json::json!({
        "object": "list",
        "data": [{"id": model, "object": "model", "created": 0, "owned_by": "hookwire"}]
    })
}
