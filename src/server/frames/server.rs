//! Server frames out: every frame the server sends, each one serialized value
//! (docs/schema/frames/server.json is generated from these types).

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::message::{WireHookTag, WireMessage};
use crate::types::PendingCall;
use crate::types::{ChatError, ChatEvent, DoneReason, ErrorCode, HookMessage, HookTrace};
use crate::types::{Message, NoticeLevel, Usage};

/// A frame the server sends. Every frame of a chat carries the chat's `id`; a chat ends with
/// exactly one `done` or `error`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
#[schemars(title = "hookwire server frame", deny_unknown_fields)]
pub(crate) enum ServerFrame {
    /// The chat was accepted; the first frame of a chat.
    Start {
        id: String,
        /// The server that runs the chat; set by the session.
        #[serde(skip_serializing_if = "Option::is_none")]
        instance: Option<String>,
        /// The chat's trace (docs/protocol.md §17), when telemetry is on.
        #[serde(skip_serializing_if = "Option::is_none")]
        trace_id: Option<String>,
    },
    /// A persistent hook message: the client appends `message` to its history.
    Hook {
        id: String,
        hook: HookRef,
        message: WireMessage,
    },
    /// The planning round's plan.
    Plan { id: String, content: String },
    /// Tool calls wait for the person's decisions; `state` goes back in `chat.resume`.
    Approval {
        id: String,
        calls: Vec<PendingCall>,
        state: String,
    },
    /// One hook run, for a chat with `trace`.
    HookTrace {
        id: String,
        /// The event as the hook was configured under (`PreToolUse`, `pre_tool_execution`, …).
        event: String,
        hook: String,
        /// `server`, `workspace`, `session` or `skill`.
        level: String,
        ms: f64,
        /// `success`, `skip`, `block`, `ask`, `timeout` or `failure`.
        outcome: String,
        /// What it changed (`tool_arguments`, `messages`, …).
        changed: Vec<String>,
    },
    /// A compaction: the client replaces its first `count` messages with `message`, `pinned`
    /// and `context`.
    Compact {
        id: String,
        count: usize,
        message: WireMessage,
        pinned: Vec<WireMessage>,
        /// What hooks added at the compaction (Claude Code's `SessionStart` with source
        /// `compact`), kept after `pinned`; left out when there is none.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        context: Vec<WireMessage>,
    },
    /// Assistant text, as it streams.
    Text { id: String, delta: String },
    /// One sentence of the answer, spoken: `data` is its audio in base64.
    Audio {
        id: String,
        seq: u64,
        format: String,
        text: String,
        data: String,
    },
    /// A session hook a hook registered: the client stores it and sends it back in
    /// `chat.session_hooks`.
    SessionHook { id: String, hook: Value },
    ToolCall {
        id: String,
        call_id: String,
        name: String,
        arguments: Value,
    },
    ToolResult {
        id: String,
        call_id: String,
        name: String,
        content: String,
        is_error: bool,
    },
    Notice {
        id: String,
        level: NoticeLevel,
        message: String,
        source: String,
    },
    /// The chat ended normally.
    Done {
        id: String,
        reason: DoneReason,
        message: WireMessage,
        usage: WireUsage,
        /// What the chat added to the conversation (docs/protocol.md §13).
        turn: Vec<WireMessage>,
        /// With reason `tool_calls`: the ids of the client tools' calls that wait for their
        /// results (docs/protocol.md §19); absent otherwise.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pending_tool_calls: Vec<String>,
    },
    /// A refused frame, or a chat that failed.
    Error(ErrorFrame),
    /// The answer to `ping`.
    Pong {
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct ErrorFrame {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) id: Option<String>,
    pub(crate) code: ErrorCode,
    pub(crate) message: String,
    /// The connection closes after this frame; absent = false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    #[schemars(extend("const" = true))]
    pub(crate) fatal: bool,
    /// What a chat that failed after text or tools had added (docs/protocol.md §13).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) turn: Option<Vec<WireMessage>>,
    /// `quota_exceeded`: how long until the chat may be sent again (docs/protocol.md §20).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) retry_after_seconds: Option<u64>,
}

/// The hook that wrote a `hook` frame's message.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct HookRef {
    pub(crate) name: String,
    pub(crate) skill: String,
    pub(crate) timing: String,
}

impl ErrorFrame {
    /// The `error` that ends chat `id`, with what it had added to the conversation.
    fn of_chat(id: String, error: ChatError) -> Self {
        let turn = (!error.turn.is_empty()).then(|| wire_messages(error.turn));
        ErrorFrame {
            id: Some(id),
            code: error.code,
            message: error.message,
            fatal: false,
            turn,
            retry_after_seconds: error.retry_after_seconds,
        }
    }
}

/// Messages as the client stores them.
fn wire_messages(messages: Vec<Message>) -> Vec<WireMessage> {
    messages
        .into_iter()
        .map(WireMessage::from_message)
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct WireUsage {
    pub(crate) prompt_tokens: u64,
    pub(crate) completion_tokens: u64,
    /// What hooks' model calls took of the totals (docs/protocol.md §15).
    pub(crate) hook_calls: u64,
    pub(crate) hook_prompt_tokens: u64,
    pub(crate) hook_completion_tokens: u64,
}

impl From<Usage> for WireUsage {
    fn from(usage: Usage) -> Self {
        WireUsage {
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
            hook_calls: usage.hook_calls,
            hook_prompt_tokens: usage.hook_prompt_tokens,
            hook_completion_tokens: usage.hook_completion_tokens,
        }
    }
}

impl ServerFrame {
    /// The answer to `ping`.
    pub(crate) fn pong(id: Option<String>) -> Self {
        ServerFrame::Pong { id }
    }

    /// A chat refused because the server is shutting down; `fatal`: the connection closes after
    /// it (no chat is running on it).
    pub(crate) fn draining(id: Option<String>, fatal: bool) -> Self {
        ServerFrame::Error(ErrorFrame {
            id,
            code: ErrorCode::Draining,
            message: "the server is shutting down; send the chat again on a new connection".into(),
            fatal,
            turn: None,
            retry_after_seconds: None,
        })
    }

    pub(crate) fn error(id: Option<String>, code: ErrorCode, message: impl Into<String>) -> Self {
        ServerFrame::Error(ErrorFrame {
            id,
            code,
            message: message.into(),
            fatal: false,
            turn: None,
            retry_after_seconds: None,
        })
    }

    /// The frame for a chat event of chat `id`; `None` for the events the native wire does not
    /// send (a step's start: docs/protocol.md §19).
    pub(crate) fn from_event(id: &str, event: ChatEvent) -> Option<Self> {
        let id = id.to_string();
        Some(match event {
            ChatEvent::StepStarted(_) => return None,
            ChatEvent::Started { trace_id } => ServerFrame::Start {
                id,
                instance: None,
                trace_id,
            },
            ChatEvent::Text(delta) => ServerFrame::Text { id, delta },
            ChatEvent::Plan(content) => ServerFrame::Plan { id, content },
            ChatEvent::SessionHook(hook) => ServerFrame::SessionHook { id, hook },
            ChatEvent::ToolCall {
                call_id,
                name,
                arguments,
            } => ServerFrame::ToolCall {
                id,
                call_id,
                name,
                arguments,
            },
            ChatEvent::ToolResult {
                call_id,
                name,
                content,
                is_error,
            } => ServerFrame::ToolResult {
                id,
                call_id,
                name,
                content,
                is_error,
            },
            ChatEvent::Hook(message) => ServerFrame::hook(id, message),
            ChatEvent::Approval { calls, state, .. } => ServerFrame::Approval { id, calls, state },
            ChatEvent::HookTrace(trace) => ServerFrame::hook_trace(id, trace),
            ChatEvent::Compact {
                count,
                message,
                pinned,
                context,
            } => ServerFrame::Compact {
                id,
                count,
                message: WireMessage::from_message(message),
                pinned: wire_messages(pinned),
                context: wire_messages(context),
            },
            ChatEvent::Notice {
                level,
                message,
                source,
            } => ServerFrame::Notice {
                id,
                level,
                message,
                source,
            },
            ChatEvent::Done {
                reason,
                content,
                usage,
                turn,
                pending_tool_calls,
            } => ServerFrame::Done {
                id,
                reason,
                message: WireMessage::from_message(Message::assistant(content)),
                usage: WireUsage::from(usage),
                turn: wire_messages(turn),
                pending_tool_calls,
            },
            ChatEvent::Error(error) => ServerFrame::Error(ErrorFrame::of_chat(id, error)),
        })
    }

    /// A persistent hook message: the hook that wrote it, and the message with its mark.
    fn hook(id: String, HookMessage { role, content, tag }: HookMessage) -> Self {
        ServerFrame::Hook {
            id,
            hook: HookRef {
                name: tag.name.clone(),
                skill: tag.skill.clone(),
                timing: tag.timing.clone(),
            },
            message: WireMessage {
                hook: Some(WireHookTag {
                    name: tag.name,
                    skill: tag.skill,
                    timing: tag.timing,
                    sig: tag.sig,
                }),
                ..WireMessage::plain(role, content)
            },
        }
    }

    fn hook_trace(id: String, trace: HookTrace) -> Self {
        ServerFrame::HookTrace {
            id,
            event: trace.event,
            hook: trace.hook,
            level: trace.level,
            ms: trace.ms,
            outcome: trace.outcome,
            changed: trace.changed,
        }
    }

    /// This frame with `instance` set, when it is a `start` frame (other frames do not carry it).
    pub(crate) fn with_instance(mut self, served_by: &str) -> Self {
        if let ServerFrame::Start { instance, .. } = &mut self {
            *instance = Some(served_by.to_string());
        }
        self
    }

    pub(crate) fn to_json(&self) -> String {
        // Serializing these types cannot fail: no maps with non-string keys, no custom impls.
        serde_json::to_string(self).unwrap_or_else(|e| {
            format!(r#"{{"type":"error","code":"internal","message":"cannot encode frame: {e}"}}"#)
        })
    }
}
