//! `POST /api/chat`'s body as the AI SDK's `DefaultChatTransport` sends it (`{id, messages:
//! UIMessage[], trigger, messageId?}` and what the application adds through the transport's
//! `body`: `tools`), and the chat it asks for. Each UI message becomes the messages of hookwire's
//! history: an assistant message's parts, step by step, become an assistant message (its text
//! and tool calls) and the calls' results; the `data-hookwire-*` parts the stream left in it bring
//! back the persistent hook messages (signed, checked as on `/ws`), the session hooks and the
//! approval state. The last message decides the chat: a user message is a new turn; an
//! assistant message whose calls got the person's decisions resumes after an approval; one whose
//! client calls got their results goes on after them.

use serde::Deserialize;
use serde_json::Value;

use super::super::frames::{check_history, read_history_message, MAX_SESSION_HOOKS};
use super::super::http_chat::RouteError;
use super::super::wire::{check_client_tools, ClientTool};
use crate::config::Limits;
use crate::types::{ApprovalDecision, ChatRequest, Message, Resume, Role, ToolCall};

/// The transport's body; unknown fields are ignored.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ChatBody {
    /// The chat's id in the application: the conversation, for `gen_ai.conversation.id`.
    #[serde(default)]
    id: Option<String>,
    messages: Vec<UiMessage>,
    /// Client tools, added by the application to the transport's `body`.
    #[serde(default)]
    tools: Vec<ClientTool>,
}

#[derive(Debug, Clone, Deserialize)]
struct UiMessage {
    role: UiRole,
    #[serde(default)]
    parts: Vec<Part>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum UiRole {
    System,
    User,
    Assistant,
}

/// A message part: its `type` says which of these fields it has (`text`; `dynamic-tool` and
/// `tool-<name>`; `data-<name>`; `step-start`; the others are not read).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Part {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    tool_call_id: Option<String>,
    #[serde(default)]
    tool_name: Option<String>,
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    input: Option<Value>,
    #[serde(default)]
    output: Option<Value>,
    #[serde(default)]
    error_text: Option<String>,
    #[serde(default)]
    approval: Option<Approval>,
    #[serde(default)]
    data: Option<Value>,
}

/// A tool part's approval: `approved` and `reason` once the person answered.
#[derive(Debug, Clone, Deserialize)]
struct Approval {
    #[serde(default)]
    approved: Option<bool>,
    #[serde(default)]
    reason: Option<String>,
}

/// `data-hookwire-approval`'s data.
#[derive(Debug, Clone, Deserialize)]
struct ApprovalData {
    state: String,
}

/// What the messages carried besides the conversation.
#[derive(Default)]
struct Read {
    history: Vec<Message>,
    session_hooks: Vec<Value>,
    /// The last assistant message's approval state and the person's decisions.
    approval: Option<String>,
    decisions: Vec<ApprovalDecision>,
}

/// One step of an assistant message: its text, its calls, their results.
#[derive(Default)]
struct Step {
    text: String,
    calls: Vec<ToolCall>,
    results: Vec<Message>,
}

impl Step {
    fn flush(&mut self, into: &mut Vec<Message>) {
        let step = std::mem::take(self);
        if step.text.is_empty() && step.calls.is_empty() {
            return;
        }
        into.push(Message::assistant_with_tools(step.text, step.calls));
        into.extend(step.results);
    }
}

fn bad(message: impl Into<String>) -> RouteError {
    RouteError::bad_request(message)
}

impl Part {
    /// The tool of a `dynamic-tool` or `tool-<name>` part.
    fn tool_name(&self) -> Option<String> {
        match self.kind.as_str() {
            "dynamic-tool" => self.tool_name.clone(),
            kind => kind.strip_prefix("tool-").map(str::to_string),
        }
    }

    /// A tool part's call, and its result when it has one.
    fn call(&self, name: String, at: &str) -> Result<(ToolCall, Option<Message>), RouteError> {
        let id = self
            .tool_call_id
            .clone()
            .filter(|id| !id.is_empty())
            .ok_or_else(|| bad(format!("{at}: a tool part needs its \"toolCallId\"")))?;
        let arguments = self
            .input
            .as_ref()
            .map_or_else(String::new, Value::to_string);
        let result = match self.state.as_deref() {
            Some("output-available") => Some(match &self.output {
                Some(Value::String(text)) => text.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            }),
            Some("output-error") => Some(self.error_text.clone().unwrap_or_default()),
            Some("output-denied") => Some("the person denied this call".to_string()),
            _ => None,
        };
        let result = result.map(|content| {
            let mut message = Message::tool_result(id.clone(), content);
            message.tool_name = Some(name.clone());
            message
        });
        let call = ToolCall {
            id,
            name,
            arguments,
        };
        Ok((call, result))
    }
}

impl Read {
    fn message(&mut self, index: usize, message: UiMessage, last: bool) -> Result<(), RouteError> {
        let at = format!("messages[{index}]");
        let text = |parts: &[Part]| {
            parts
                .iter()
                .filter(|part| part.kind == "text")
                .filter_map(|part| part.text.as_deref())
                .collect::<Vec<_>>()
                .join("\n")
        };
        match message.role {
            UiRole::System => self.history.push(Message::system(text(&message.parts))),
            UiRole::User => self.history.push(Message::user(text(&message.parts))),
            UiRole::Assistant => self.assistant(&at, message.parts, last)?,
        }
        Ok(())
    }

    /// An assistant message's parts in order, a step at a time.
    fn assistant(&mut self, at: &str, parts: Vec<Part>, last: bool) -> Result<(), RouteError> {
        let mut step = Step::default();
        for part in parts {
            match part.kind.as_str() {
                "step-start" => step.flush(&mut self.history),
                "text" => step.text.push_str(part.text.as_deref().unwrap_or_default()),
                "data-hookwire-hook" => {
                    step.flush(&mut self.history);
                    let data = part.data.unwrap_or_default();
                    let message = read_history_message(data)
                        .map_err(|error| bad(format!("{at}: a hookwire hook part: {error}")))?;
                    self.history.push(message);
                }
                "data-hookwire-session-hook" => {
                    self.session_hooks.push(part.data.unwrap_or_default());
                }
                "data-hookwire-approval" if last => {
                    let data: ApprovalData = serde_json::from_value(part.data.unwrap_or_default())
                        .map_err(|error| bad(format!("{at}: the approval part: {error}")))?;
                    self.approval = Some(data.state);
                }
                _ => {
                    let Some(name) = part.tool_name() else {
                        continue;
                    };
                    let (call, result) = part.call(name, at)?;
                    if last && part.state.as_deref() == Some("approval-responded") {
                        let approval = part.approval.clone();
                        self.decisions.push(ApprovalDecision {
                            call_id: call.id.clone(),
                            allow: approval.as_ref().and_then(|a| a.approved) == Some(true),
                            reason: approval.and_then(|a| a.reason),
                        });
                    }
                    step.calls.push(call);
                    step.results.extend(result);
                }
            }
        }
        step.flush(&mut self.history);
        Ok(())
    }
}

impl ChatBody {
    /// The chat these messages ask for, or why they cannot be one.
    pub(crate) fn into_request(
        self,
        id: String,
        limits: &Limits,
    ) -> Result<ChatRequest, RouteError> {
        check_client_tools(&self.tools)
            .map_err(|error| bad(format!("field \"tools.{}\" {}", error.field, error.message)))?;
        let count = self.messages.len();
        if count > limits.max_history_messages + 1 {
            return Err(bad(format!(
                "\"messages\" has {count} messages; the limit is {} (limits.max_history_messages)",
                limits.max_history_messages
            )));
        }
        let last_role = self.messages.last().map(|m| m.role);
        let mut read = Read::default();
        for (index, message) in self.messages.into_iter().enumerate() {
            read.message(index, message, index + 1 == count)?;
        }
        if read.session_hooks.len() > MAX_SESSION_HOOKS {
            return Err(bad(format!(
                "the messages carry {} session hooks; the limit is {MAX_SESSION_HOOKS}",
                read.session_hooks.len()
            )));
        }
        let mut request = ChatRequest::new(id.clone(), String::new());
        request.session_id = id;
        request.client_tools = self.tools.into_iter().map(ClientTool::into_spec).collect();
        request.session_hooks = read.session_hooks;
        request.conversation_id = self.id.filter(|id| id.len() <= 256);
        match last_role {
            Some(UiRole::User) => {
                let input = read.history.pop().map(|m| m.content).unwrap_or_default();
                if input.is_empty() {
                    return Err(bad("the last user message has no text"));
                }
                if input.chars().count() > limits.max_input_chars {
                    return Err(bad(format!(
                        "the last user message is over {} characters (limits.max_input_chars)",
                        limits.max_input_chars
                    )));
                }
                request.input = input;
            }
            Some(UiRole::Assistant) if !read.decisions.is_empty() => {
                let state = read.approval.ok_or_else(|| {
                    bad("the approval responses came without the hookwire approval part")
                })?;
                request.resume = Some(Resume {
                    state,
                    decisions: read.decisions,
                });
            }
            Some(UiRole::Assistant) if read.history.last().map(|m| m.role) == Some(Role::Tool) => {}
            _ => {
                return Err(bad(
                    "\"messages\" must end with a user message, an assistant message whose \
                     calls have the person's decisions, or one whose tool calls have results",
                ))
            }
        }
        check_history(&read.history, request.resume.is_some())
            .map_err(|error| bad(error.to_string()))?;
        request.messages = read.history;
        Ok(request)
    }
}
