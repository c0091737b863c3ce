//! AG-UI's request, `RunAgentInput` (1.0): its shape as serde reads it (fields AG-UI clients add
//! are ignored), the rules its type cannot say ([`RunAgentInput::validate`]), and the request
//! the agent runs ([`RunAgentInput::into_request`]).
//!
//! The conversion goes through the native wire: the run is rewritten as the `chat` frame a
//! native client would send for it (history, input, `client_tools`, `session_hooks`, `resume`),
//! and that frame is read and checked by `frames` like any other, so an orphan tool result, a
//! repeated call id, a forged hook mark or a history over the limits is refused the same way on
//! both wires. Which run it is depends on the messages' end:
//!
//! - a `user` message: a new turn; it is the input, the messages before it the history;
//! - a `tool` message: the chat goes on after the client ran its tools (no input, all messages
//!   are history; docs/protocol.md §19);
//! - `resume` given: the chat goes on after an approval (no input; the sealed state is
//!   `state.hookwire.approval.state`, one decision per resume entry).
//!
//! `context` entries become one user message at the start of the history ("Context from the
//! application:\n- {description}: {value}"): the application's text, so not a system message
//! (an unsigned system message is dropped when a secret is set, docs/protocol.md §4). `activity`
//! and `reasoning` messages are read and left out. The persistent hook messages of
//! `state.hookwire.hooks` are put back after the message each follows.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::messages::{AgUiContext, AgUiMessage, AgUiTool, ResumeEntry, ResumeStatus};
use super::state::{HookwireState, StoredHook};
use super::AgUiError;
use crate::config::Limits;
use crate::server::frames::{ChatOrigin, ClientFrame};
use crate::types::ChatRequest;

/// AG-UI's `RunAgentInput`. `protocolVersion` and `parentRunId` are read and not used.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RunAgentInput {
    pub(super) thread_id: String,
    pub(super) run_id: String,
    /// Any JSON; hookwire's part is under `hookwire` (`state.rs`).
    #[serde(default)]
    pub(super) state: Option<Value>,
    pub(super) messages: Vec<AgUiMessage>,
    #[serde(default)]
    pub(super) tools: Vec<AgUiTool>,
    #[serde(default)]
    pub(super) context: Vec<AgUiContext>,
    /// `forwardedProps.hookwire` may carry `skills`, `enable_tools` and `trace`, as a native
    /// chat frame does; the rest is the application's.
    #[serde(default)]
    pub(super) forwarded_props: Option<Value>,
    #[serde(default)]
    pub(super) resume: Option<Vec<ResumeEntry>>,
}

/// Which run a request is, by the end of its messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Turn {
    /// A new turn: the user message at this index of `messages` is the input.
    Input(usize),
    /// The messages end with tool results: the chat goes on after the client's tools.
    AfterTools,
    /// `resume` answers the interrupts of an approval.
    Resume,
}

impl RunAgentInput {
    /// Reads a request body; a body that is not a `RunAgentInput` is refused with the path of
    /// what does not fit.
    pub(crate) fn from_json(body: &[u8]) -> Result<Self, AgUiError> {
        let mut reader = serde_json::Deserializer::from_slice(body);
        serde_path_to_error::deserialize(&mut reader).map_err(|error| AgUiError::Shape {
            path: match error.path().to_string() {
                root if root == "." => "the body".into(),
                path => path,
            },
            message: error.inner().to_string(),
        })
    }

    /// What the type cannot say: the ids, the content parts, which run it is (the messages'
    /// end), `state.hookwire`, the resume entries. The native frame's rules are checked by
    /// [`RunAgentInput::into_request`].
    pub(crate) fn validate(&self, limits: &Limits) -> Result<(), AgUiError> {
        for (name, id) in [("threadId", &self.thread_id), ("runId", &self.run_id)] {
            if id.is_empty() {
                return Err(AgUiError::field(name, "must not be empty"));
            }
        }
        // The history's limit, and the input: the native check counts again, exactly.
        if self.messages.len() > limits.max_history_messages.saturating_add(1) {
            let over = format!(
                "has {} messages; the limit is {}",
                self.messages.len(),
                limits.max_history_messages
            );
            return Err(AgUiError::field("messages", over));
        }
        for (index, message) in self.messages.iter().enumerate() {
            let at = || format!("messages[{index}]");
            match message {
                AgUiMessage::User(m) => m.content.check(at)?,
                AgUiMessage::Tool(m) => m.content.check(at)?,
                _ => {}
            }
        }
        let hookwire = HookwireState::of(self.state.as_ref())?;
        if self.turn()? == Turn::Resume {
            if hookwire.approval.is_none() {
                return Err(AgUiError::field(
                    "state.hookwire.approval",
                    "is missing: a run with \"resume\" sends back the state of the interrupted run's STATE_SNAPSHOT",
                ));
            }
            self.decisions()?;
        }
        Ok(())
    }

    /// Which run this is, by the end of the conversation (`activity` and `reasoning` messages
    /// aside).
    pub(super) fn turn(&self) -> Result<Turn, AgUiError> {
        let last = self
            .messages
            .iter()
            .enumerate()
            .rfind(|(_, m)| m.is_conversation());
        let resume = self.resume.as_ref().is_some_and(|r| !r.is_empty());
        match last {
            Some((_, AgUiMessage::User(_))) if resume => Err(AgUiError::field(
                "resume",
                "goes on where the interrupted run stopped: the messages must not end with a new user message",
            )),
            _ if resume => Ok(Turn::Resume),
            Some((index, AgUiMessage::User(_))) => Ok(Turn::Input(index)),
            Some((_, AgUiMessage::Tool(_))) => Ok(Turn::AfterTools),
            Some(_) => Err(AgUiError::field(
                "messages",
                "must end with the user's new message (or with the results of the client's tool calls, or come with \"resume\")",
            )),
            None => Err(AgUiError::field("messages", "must not be empty")),
        }
    }

    /// The native decisions, one per resume entry: `resolved` with `payload` `true` or
    /// `{"approved": true}` allows the call; `resolved` with `false` or `{"approved": false}`,
    /// or `cancelled`, denies it, with `payload.reason` when given.
    fn decisions(&self) -> Result<Vec<Value>, AgUiError> {
        let entries = self.resume.as_deref().unwrap_or_default();
        let mut decisions = Vec::with_capacity(entries.len());
        for (index, entry) in entries.iter().enumerate() {
            let at = |name: &str| format!("resume[{index}].{name}");
            if entry.interrupt_id.is_empty() {
                return Err(AgUiError::field(at("interruptId"), "must not be empty"));
            }
            let payload = entry.payload.as_ref();
            let reason = match payload.and_then(|p| p.get("reason")) {
                None | Some(Value::Null) => None,
                Some(Value::String(reason)) => Some(reason.clone()),
                Some(_) => return Err(AgUiError::field(at("payload.reason"), "must be a string")),
            };
            let allow = match (entry.status, payload) {
                (ResumeStatus::Cancelled, _) => false,
                (ResumeStatus::Resolved, Some(Value::Bool(approved))) => *approved,
                (ResumeStatus::Resolved, Some(Value::Object(p))) => match p.get("approved") {
                    Some(Value::Bool(approved)) => *approved,
                    _ => {
                        return Err(AgUiError::field(
                            at("payload.approved"),
                            "must be true or false",
                        ))
                    }
                },
                (ResumeStatus::Resolved, _) => {
                    return Err(AgUiError::field(
                        at("payload"),
                        "must say the decision: {\"approved\": true|false, \"reason\"?: \"…\"}",
                    ))
                }
            };
            let mut decision = json!({
                "call_id": entry.interrupt_id,
                "decision": if allow { "allow" } else { "deny" },
            });
            if let (Some(reason), Value::Object(object)) = (reason, &mut decision) {
                object.insert("reason".into(), Value::String(reason));
            }
            decisions.push(decision);
        }
        Ok(decisions)
    }

    /// The request the agent runs (checked first): the native chat frame this run is, read and
    /// checked by the native wire. The chat's id is `runId`, its session and conversation the
    /// thread; `traceparent` is the HTTP request's (docs/protocol.md §17).
    pub(crate) fn into_request(
        self,
        limits: &Limits,
        traceparent: Option<&str>,
    ) -> Result<ChatRequest, AgUiError> {
        self.validate(limits)?;
        let (frame, places) = self.native_frame()?;
        let origin = ChatOrigin {
            session_id: &self.thread_id,
            traceparent,
            person: None,
        };
        match ClientFrame::parse(&frame.to_string(), limits) {
            ClientFrame::Chat { payload, .. } => Ok(payload.into_request(false, &origin)),
            ClientFrame::Invalid { error, .. } => Err(AgUiError::Chat {
                message: places.in_request_terms(&error.to_string()),
            }),
            ClientFrame::Cancel { .. } | ClientFrame::Ping { .. } | ClientFrame::Auth { .. } => {
                Err(AgUiError::Chat {
                    message: "the request did not become a chat".into(),
                })
            }
        }
    }
}

/// The longest `conversation_id` a native chat frame takes: a longer thread id is not sent as
/// one (it stays the chat's session).
const MAX_CONVERSATION_ID_BYTES: usize = 256;

/// Where each message of the native frame came from, to say a refusal in the request's terms
/// (`messages[4]` of the frame may be `messages[2]` of the request, or a stored hook message).
#[derive(Debug, Default)]
pub(super) struct Places {
    messages: Vec<String>,
    /// The index of the input in the request's messages.
    input: Option<usize>,
}

impl Places {
    /// A native refusal's text with the native paths named as the request's.
    pub(super) fn in_request_terms(&self, message: &str) -> String {
        const MESSAGES: &str = "messages[";
        let mut out = String::with_capacity(message.len());
        let mut rest = message;
        while let Some(at) = rest.find(MESSAGES) {
            out.push_str(&rest[..at]);
            let after = &rest[at + MESSAGES.len()..];
            let digits = after
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(after.len());
            let place = after[..digits]
                .parse::<usize>()
                .ok()
                .filter(|_| after[digits..].starts_with(']'))
                .and_then(|n| self.messages.get(n));
            match place {
                Some(place) => {
                    out.push_str(place);
                    rest = &after[digits + 1..];
                }
                None => {
                    out.push_str(MESSAGES);
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        let mut out = out
            .replace("client_tools", "tools")
            .replace("session_hooks", "state.hookwire.session_hooks")
            .replace("resume.decisions", "resume")
            .replace("resume.state", "state.hookwire.approval.state");
        if let Some(index) = self.input {
            out = out.replace("\"input\"", &format!("\"messages[{index}].content\""));
        }
        out
    }
}

impl RunAgentInput {
    /// The native `chat` frame this run is, and where its messages came from.
    pub(super) fn native_frame(&self) -> Result<(Value, Places), AgUiError> {
        let turn = self.turn()?;
        let hookwire = HookwireState::of(self.state.as_ref())?;
        let mut places = Places::default();
        let mut history = Vec::with_capacity(self.messages.len() + hookwire.hooks.len() + 1);
        if let Some(context) = context_message(&self.context) {
            history.push(context);
            places.messages.push("context".into());
        }
        self.history_into(turn, &hookwire.hooks, &mut history, &mut places);
        let mut frame = Map::new();
        frame.insert("type".into(), json!("chat"));
        frame.insert("id".into(), json!(self.run_id));
        frame.insert("messages".into(), Value::Array(history));
        if self.thread_id.len() <= MAX_CONVERSATION_ID_BYTES {
            frame.insert("conversation_id".into(), json!(self.thread_id));
        }
        match turn {
            Turn::Input(index) => {
                if let Some(AgUiMessage::User(input)) = self.messages.get(index) {
                    frame.insert("input".into(), json!(input.content.text()));
                }
                places.input = Some(index);
            }
            Turn::Resume => {
                let state = hookwire.approval.map(|a| a.state).unwrap_or_default();
                let decisions = self.decisions()?;
                frame.insert(
                    "resume".into(),
                    json!({"state": state, "decisions": decisions}),
                );
            }
            Turn::AfterTools => {}
        }
        if !hookwire.session_hooks.is_empty() {
            frame.insert("session_hooks".into(), json!(hookwire.session_hooks));
        }
        if !self.tools.is_empty() {
            frame.insert("client_tools".into(), self.client_tools());
        }
        if let Some(Value::Object(props)) = self
            .forwarded_props
            .as_ref()
            .and_then(|p| p.get("hookwire"))
        {
            for key in ["skills", "enable_tools", "trace"] {
                if let Some(value) = props.get(key) {
                    frame.insert(key.into(), value.clone());
                }
            }
        }
        Ok((Value::Object(frame), places))
    }

    /// The history as native messages: the request's messages up to the input (or all of
    /// them), each stored hook message after the message it follows (one whose message is gone
    /// is left out: the client edited the conversation).
    fn history_into(
        &self,
        turn: Turn,
        hooks: &[StoredHook],
        out: &mut Vec<Value>,
        places: &mut Places,
    ) {
        let mut after: HashMap<&str, Vec<(usize, &StoredHook)>> = HashMap::new();
        for (n, hook) in hooks.iter().enumerate() {
            after
                .entry(hook.after.as_str())
                .or_default()
                .push((n, hook));
        }
        // Each call's tool, for the name of the tool message that answers it.
        let mut tools: HashMap<&str, &str> = HashMap::new();
        for (index, message) in self.messages.iter().enumerate() {
            if turn == Turn::Input(index) {
                break;
            }
            if let AgUiMessage::Assistant(m) = message {
                for call in m.tool_calls.as_deref().unwrap_or_default() {
                    tools.insert(&call.id, &call.function.name);
                }
            }
            if let Some(native) = native_message(message, &tools) {
                out.push(native);
                places.messages.push(format!("messages[{index}]"));
            }
            for (n, hook) in after.remove(message.id()).unwrap_or_default() {
                out.push(Value::Object(hook.message.clone()));
                places
                    .messages
                    .push(format!("state.hookwire.hooks[{n}].message"));
            }
        }
    }

    /// `tools` as the native `client_tools`.
    fn client_tools(&self) -> Value {
        let tools = self.tools.iter().map(|tool| {
            let mut native = json!({"name": tool.name, "description": tool.description});
            if let (Some(parameters), Value::Object(object)) = (&tool.parameters, &mut native) {
                object.insert("parameters".into(), parameters.clone());
            }
            native
        });
        Value::Array(tools.collect())
    }
}

/// `context` as one user message: "Context from the application:\n- {description}: {value}".
fn context_message(context: &[AgUiContext]) -> Option<Value> {
    if context.is_empty() {
        return None;
    }
    let mut text = String::from("Context from the application:");
    for entry in context {
        text.push_str(&format!("\n- {}: {}", entry.description, entry.value));
    }
    Some(json!({"role": "user", "content": text}))
}

/// A message as the native history has it (`frames/history.rs`); `None` for the messages that
/// are not the conversation's. `tools`: each call's tool, by call id. A tool message's `error`
/// is its content (after the content, when it has some).
fn native_message(message: &AgUiMessage, tools: &HashMap<&str, &str>) -> Option<Value> {
    Some(match message {
        AgUiMessage::Developer(m) | AgUiMessage::System(m) => {
            json!({"role": "system", "content": m.content})
        }
        AgUiMessage::User(m) => json!({"role": "user", "content": m.content.text()}),
        AgUiMessage::Assistant(m) => {
            let calls = m.tool_calls.as_deref().unwrap_or_default();
            if calls.is_empty() {
                json!({"role": "assistant", "content": m.content.clone().unwrap_or_default()})
            } else {
                let calls: Vec<Value> = calls
                    .iter()
                    .map(|call| {
                        json!({"id": call.id, "type": "function", "function": {
                            "name": call.function.name, "arguments": call.function.arguments}})
                    })
                    .collect();
                json!({"role": "assistant", "content": m.content, "tool_calls": calls})
            }
        }
        AgUiMessage::Tool(m) => {
            let mut content = m.content.text();
            if let Some(error) = m.error.as_deref().filter(|e| !e.is_empty()) {
                if !content.is_empty() {
                    content.push_str("\n\n");
                }
                content.push_str(error);
            }
            let mut native =
                json!({"role": "tool", "tool_call_id": m.tool_call_id, "content": content});
            if let (Some(name), Value::Object(object)) =
                (tools.get(m.tool_call_id.as_str()), &mut native)
            {
                object.insert("name".into(), json!(name));
            }
            native
        }
        AgUiMessage::Activity(_) | AgUiMessage::Reasoning(_) => return None,
    })
}
