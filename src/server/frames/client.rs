//! Client frames in. A frame is read into its wire type (what `docs/schema/frames/client.json` is
//! generated from) by serde, checked once for what its type cannot say ([`ChatPayload`]'s
//! `validate`: the limits, the ids, the history's rules), and a chat frame's payload converts
//! straight into the [`ChatRequest`] the agent runs. A chat frame has these two shapes only.

use schemars::{JsonSchema, Schema};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

use super::read::{json_object, read, read_as_object, FrameError};
use super::{MAX_SESSION_HOOKS, MAX_TRACE_FIELD_BYTES};
use crate::config::Limits;
use crate::server::wire::{check_client_tools, ClientTool, MAX_CLIENT_TOOLS};
use crate::types::history::{self, HistoryMessage};
use crate::types::{ApprovalDecision, ChatRequest, Resume, MAX_DENY_REASON_CHARS};

// ─── the wire types (docs/schema/frames/client.json) ───

/// A frame a client sends. The server also checks what a schema cannot say: the limits
/// (`limits.*`), that every tool call of `messages` is answered, and the signatures of hook
/// messages.
#[derive(Debug, Clone, PartialEq, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
#[schemars(title = "hookwire client frame")]
pub(crate) enum WireClientFrame {
    /// Starts a chat: `input` after `messages`, or (with `resume`, and no `input`) goes on after
    /// an approval.
    #[schemars(transform = input_or_resume)]
    Chat(ChatPayload),
    /// Compacts `messages` on request; the answer is a `compact` frame and `done`. Its `input`
    /// is ignored; it has no `resume`.
    #[schemars(transform = no_resume)]
    Compact(ChatPayload),
    /// Stops the running chat.
    Cancel(IdPayload),
    /// Answered by `pong` with the same `id`.
    Ping(IdPayload),
    /// A fresh sign-in token for the connection (`auth.jwt`, docs/protocol.md §20), after its
    /// token expired: chats go on once it verifies and names the same user.
    Auth(AuthPayload),
}

/// An `auth` frame.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(remote = "Self")]
pub(crate) struct AuthPayload {
    /// The JWT, as the `Authorization: Bearer` header would carry it.
    #[schemars(length(min = 1))]
    token: String,
}

/// A `chat` frame, and a `compact` frame.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(remote = "Self")]
pub(crate) struct ChatPayload {
    /// The user's text; required (and not empty) unless `resume` is set, absent when it is.
    input: Option<String>,
    /// Goes on after an `approval` frame with the person's decisions.
    resume: Option<ResumePayload>,
    /// The chat's id, echoed on every frame of the chat; the server makes one up when absent.
    #[schemars(length(min = 1, max = MAX_ID_CHARS))]
    id: Option<String>,
    /// The conversation so far, as the client stored it from `done.turn` and the other frames.
    messages: Option<Vec<HistoryMessage>>,
    /// Skill names; absent = every skill.
    skills: Option<Vec<String>>,
    /// Absent = true.
    enable_tools: Option<bool>,
    /// Session hooks the client stored from `session_hook` frames, sent back as received.
    #[schemars(length(max = MAX_SESSION_HOOKS))]
    session_hooks: Option<Vec<Map<String, Value>>>,
    /// `hook_trace` frames for every hook run.
    trace: Option<bool>,
    /// `audio` frames of the answer, spoken.
    voice: Option<bool>,
    /// A W3C `traceparent` the chat's span is the child of (at most 256 bytes).
    #[schemars(length(max = MAX_TRACE_FIELD_BYTES))]
    traceparent: Option<String>,
    /// The client's conversation, for `gen_ai.conversation.id` (at most 256 bytes).
    #[schemars(length(max = MAX_TRACE_FIELD_BYTES))]
    conversation_id: Option<String>,
    /// Tools the client runs itself (docs/protocol.md §19): a call to one ends the chat with
    /// `done` reason `tool_calls`; the next chat sends the results and no `input`.
    #[schemars(length(max = MAX_CLIENT_TOOLS))]
    client_tools: Option<Vec<ClientTool>>,
}

/// A `cancel` or `ping` frame.
#[derive(Debug, Clone, PartialEq, Default, Deserialize, JsonSchema)]
#[serde(remote = "Self")]
pub(crate) struct IdPayload {
    #[schemars(length(min = 1, max = MAX_ID_CHARS))]
    id: Option<String>,
}

/// `resume`: the `state` of the `approval` frame and a decision per pending call.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(remote = "Self")]
pub(crate) struct ResumePayload {
    #[schemars(length(min = 1))]
    state: String,
    decisions: Vec<DecisionPayload>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(remote = "Self")]
pub(crate) struct DecisionPayload {
    #[schemars(length(min = 1))]
    call_id: String,
    decision: Decision,
    /// Why a call was denied; it reaches the model.
    #[schemars(length(max = MAX_DENY_REASON_CHARS))]
    reason: Option<String>,
}

read_as_object!(
    ChatPayload,
    IdPayload,
    ResumePayload,
    DecisionPayload,
    AuthPayload
);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Decision {
    Allow,
    Deny,
}

/// A chat frame's rule that is not a field's type, said in the schema: `input` (not empty) for
/// a new turn, `resume` and no `input` after an approval, or neither after the client ran its
/// tools (then `messages` ends with their results, which the server checks).
fn input_or_resume(schema: &mut Schema) {
    let rule = json!([
        {"properties": {"input": {"type": "string", "minLength": 1}, "resume": {"type": "null"}},
         "required": ["input"]},
        {"properties": {"resume": {"type": "object"}, "input": {"type": "null"}},
         "required": ["resume"]},
        {"properties": {"input": {"type": "null"}, "resume": {"type": "null"},
                        "messages": {"type": "array", "minItems": 1}},
         "required": ["messages"]}
    ]);
    schema.insert("oneOf".into(), rule);
}

/// A compact frame cannot resume.
fn no_resume(schema: &mut Schema) {
    let properties = schema
        .ensure_object()
        .entry("properties")
        .or_insert(json!({}));
    if let Value::Object(properties) = properties {
        properties.insert("resume".into(), json!({"type": "null"}));
    }
}

// ─── reading ───

/// A client frame. A frame that is not valid is a value too, so it produces `bad_frame`.
#[derive(Debug)]
pub(crate) enum ClientFrame {
    /// A `chat` frame, or (`compact`) a `compact` frame, read and checked: its payload
    /// converts into the request the agent runs ([`ChatPayload::into_request`]).
    Chat {
        payload: Box<ChatPayload>,
        compact: bool,
    },
    Cancel {
        id: Option<String>,
    },
    Ping {
        id: Option<String>,
    },
    Auth {
        token: String,
    },
    Invalid {
        /// The frame's `id`, when it was a usable one.
        id: Option<String>,
        error: FrameError,
    },
}

impl ClientFrame {
    /// Parses one text frame, strictly (RFC 8259), and checks it against `limits`.
    pub(crate) fn parse(text: &str, limits: &Limits) -> ClientFrame {
        let value = match json_object(text) {
            Ok(value) => value,
            Err(error) => return ClientFrame::Invalid { id: None, error },
        };
        // The id of a bad frame is still echoed when it was a usable string.
        let IdPayload { id } = IdPayload::deserialize(&value).unwrap_or_default();
        let id = id.filter(|id| check_id(Some(id)).is_ok());
        let frame = WireClientFrame::read(value).and_then(|frame| {
            frame.validate(limits)?;
            Ok(frame)
        });
        match frame {
            Ok(WireClientFrame::Chat(payload)) => ClientFrame::Chat {
                payload: Box::new(payload),
                compact: false,
            },
            Ok(WireClientFrame::Compact(payload)) => ClientFrame::Chat {
                payload: Box::new(payload),
                compact: true,
            },
            Ok(WireClientFrame::Cancel(IdPayload { id })) => ClientFrame::Cancel { id },
            Ok(WireClientFrame::Ping(IdPayload { id })) => ClientFrame::Ping { id },
            Ok(WireClientFrame::Auth(AuthPayload { token })) => ClientFrame::Auth { token },
            Err(error) => ClientFrame::Invalid { id, error },
        }
    }
}

impl WireClientFrame {
    /// Reads a frame: its `type`, then the payload that type names, on its own (serde's tagged
    /// enums lose the path of a field that does not fit).
    pub(super) fn read(value: Value) -> Result<Self, FrameError> {
        #[derive(Deserialize)]
        struct FrameType<'a> {
            #[serde(rename = "type")]
            kind: &'a str,
        }
        let payload: fn(Value) -> Result<Self, FrameError> = match read(&value)? {
            FrameType { kind: "chat" } => |value| Ok(Self::Chat(read(value)?)),
            FrameType { kind: "compact" } => |value| Ok(Self::Compact(read(value)?)),
            FrameType { kind: "cancel" } => |value| Ok(Self::Cancel(read(value)?)),
            FrameType { kind: "ping" } => |value| Ok(Self::Ping(read(value)?)),
            FrameType { kind: "auth" } => |value| Ok(Self::Auth(read(value)?)),
            FrameType { kind } => {
                return Err(FrameError::rule(
                    "type",
                    format!("unknown frame type {kind:?} (expected \"chat\", \"compact\", \"cancel\", \"ping\" or \"auth\")"),
                ))
            }
        };
        payload(value)
    }

    /// What a frame's type cannot say.
    pub(super) fn validate(&self, limits: &Limits) -> Result<(), FrameError> {
        match self {
            WireClientFrame::Chat(chat) => chat.validate(false, limits),
            WireClientFrame::Compact(chat) => chat.validate(true, limits),
            WireClientFrame::Cancel(frame) | WireClientFrame::Ping(frame) => {
                check_id(frame.id.as_deref())
            }
            WireClientFrame::Auth(frame) if frame.token.is_empty() => {
                Err(FrameError::field("token", "must not be empty"))
            }
            WireClientFrame::Auth(_) => Ok(()),
        }
    }
}

/// `id` absent or null: the server makes one up; `""`: refused.
fn check_id(id: Option<&str>) -> Result<(), FrameError> {
    match id {
        Some("") => Err(FrameError::field("id", "must not be empty")),
        Some(id) if id.chars().count() > MAX_ID_CHARS => Err(FrameError::field(
            "id",
            format!("is over {MAX_ID_CHARS} characters"),
        )),
        _ => Ok(()),
    }
}

/// The longest id a frame may give a chat (or a ping): an identifier, echoed on every frame and
/// recorded in logs and spans, not a payload.
const MAX_ID_CHARS: usize = 128;

// ─── a chat frame: its rules, and the request it becomes ───

/// What the connection adds to a chat frame to make it a request.
pub(crate) struct ChatOrigin<'a> {
    /// The WebSocket session the chat runs in.
    pub(crate) session_id: &'a str,
    /// The upgrade request's `traceparent` (docs/protocol.md §17), for a frame without one.
    pub(crate) traceparent: Option<&'a str>,
    /// Who signed in on the connection (`auth.jwt`), if anyone.
    pub(crate) person: Option<&'a crate::types::Person>,
}

impl ChatPayload {
    /// The id the client gave the chat, if any (an error about the frame echoes only that).
    pub(crate) fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// The chat asked for its answer spoken (docs/protocol.md §18): the server's concern, not
    /// the agent's.
    pub(crate) fn voice(&self) -> bool {
        self.voice == Some(true)
    }

    /// What the type cannot say: the id, `input` or `resume`, the limits, the history's rules.
    /// A `compact` frame's `input` is ignored.
    fn validate(&self, compact: bool, limits: &Limits) -> Result<(), FrameError> {
        check_id(self.id.as_deref())?;
        match (&self.input, &self.resume) {
            (_, Some(_)) if compact => {
                return Err(FrameError::rule(
                    "resume",
                    "a \"compact\" frame has no \"resume\"",
                ))
            }
            _ if compact => {}
            (Some(_), Some(_)) => {
                return Err(FrameError::rule(
                    "input",
                    "a chat with \"resume\" has no \"input\": it goes on where it stopped",
                ))
            }
            (None, Some(resume)) => resume.validate()?,
            (None, None) if !ends_with_tool_results(self.messages.as_deref()) => {
                return Err(FrameError::missing("input"))
            }
            (None, None) => {}
            (Some(input), None) => check_input(input, limits.max_input_chars)?,
        }
        for (name, text) in [
            ("traceparent", &self.traceparent),
            ("conversation_id", &self.conversation_id),
        ] {
            if text
                .as_ref()
                .is_some_and(|t| t.len() > MAX_TRACE_FIELD_BYTES)
            {
                let over = format!("is over {MAX_TRACE_FIELD_BYTES} bytes");
                return Err(FrameError::field(name, over));
            }
        }
        check_client_tools(self.client_tools.as_deref().unwrap_or_default()).map_err(|error| {
            FrameError::field(format!("client_tools.{}", error.field), error.message)
        })?;
        let hooks = self.session_hooks.as_ref().map_or(0, Vec::len);
        if hooks > MAX_SESSION_HOOKS {
            let over = format!("has {hooks} hooks; the limit is {MAX_SESSION_HOOKS}");
            return Err(FrameError::field("session_hooks", over));
        }
        let messages = self.messages.as_deref().unwrap_or_default();
        // A resumed chat's history may end with the calls that wait for the decisions.
        history::validate(messages, limits.max_history_messages, self.resume.is_some())
    }

    /// The request the agent runs; the id is made up when the client gave none. `compact`: a
    /// `compact` frame (no input, no model turn).
    pub(crate) fn into_request(self, compact: bool, origin: &ChatOrigin<'_>) -> ChatRequest {
        let id = self
            .id
            .unwrap_or_else(|| format!("chat-{}", uuid::Uuid::new_v4().simple()));
        let messages = self.messages.unwrap_or_default();
        let session_hooks = self.session_hooks.unwrap_or_default();
        ChatRequest {
            id,
            session_id: origin.session_id.to_string(),
            messages: messages
                .into_iter()
                .map(HistoryMessage::into_message)
                .collect(),
            input: self.input.filter(|_| !compact).unwrap_or_default(),
            skills: self.skills,
            enable_tools: self.enable_tools.unwrap_or(true),
            session_hooks: session_hooks.into_iter().map(Value::Object).collect(),
            cancel: CancellationToken::new(),
            compact_only: compact,
            resume: self.resume.map(ResumePayload::into_resume),
            trace: self.trace.unwrap_or(false),
            traceparent: self
                .traceparent
                .or_else(|| origin.traceparent.map(str::to_string)),
            conversation_id: self.conversation_id,
            client_tools: self
                .client_tools
                .unwrap_or_default()
                .into_iter()
                .map(ClientTool::into_spec)
                .collect(),
            // Set by the connection from its authentication, never from the frame.
            person: origin.person.cloned(),
            can_ask_approval: true,
        }
    }
}

/// Whether a history ends with `tool` results: a chat without `input` goes on from them after
/// the client ran its tools.
fn ends_with_tool_results(messages: Option<&[HistoryMessage]>) -> bool {
    messages
        .and_then(<[HistoryMessage]>::last)
        .is_some_and(HistoryMessage::is_tool_result)
}

/// A new turn's text: not empty, and at most `max_chars` Unicode scalar values.
fn check_input(input: &str, max_chars: usize) -> Result<(), FrameError> {
    if input.is_empty() {
        return Err(FrameError::field("input", "must not be empty"));
    }
    let chars = input.chars().count();
    if chars > max_chars {
        let over = format!("is {chars} characters long; the limit is {max_chars}");
        return Err(FrameError::field("input", over));
    }
    Ok(())
}

impl ResumePayload {
    fn validate(&self) -> Result<(), FrameError> {
        if self.state.is_empty() {
            return Err(FrameError::field(
                "resume.state",
                "must be the state of an approval frame",
            ));
        }
        for (i, decision) in self.decisions.iter().enumerate() {
            let at = |name: &str| format!("resume.decisions[{i}].{name}");
            if decision.call_id.is_empty() {
                return Err(FrameError::field(at("call_id"), "must not be empty"));
            }
            let chars = decision.reason.as_deref().map_or(0, |r| r.chars().count());
            if chars > MAX_DENY_REASON_CHARS {
                let over =
                    format!("is {chars} characters long; the limit is {MAX_DENY_REASON_CHARS}");
                return Err(FrameError::field(at("reason"), over));
            }
        }
        Ok(())
    }

    fn into_resume(self) -> Resume {
        let decisions = self.decisions.into_iter().map(|decision| ApprovalDecision {
            call_id: decision.call_id,
            allow: decision.decision == Decision::Allow,
            reason: decision.reason,
        });
        Resume {
            state: self.state,
            decisions: decisions.collect(),
        }
    }
}
