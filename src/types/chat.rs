//! What goes into a chat and what comes out of it. The server turns these into frames; nothing
//! here knows about JSON or WebSockets.

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::message::{HookTag, Message, Role, ToolSpec, Usage};
use super::person::Person;

/// One chat, as the client asked for it (already validated by the server).
#[derive(Debug, Clone)]
pub struct ChatRequest {
    /// Echoed in every event's frame.
    pub id: String,
    /// The WebSocket session this chat runs in (for hooks and logs).
    pub session_id: String,
    /// The conversation so far, oldest first, as the client sent it.
    pub messages: Vec<Message>,
    /// The new user message.
    pub input: String,
    /// The enabled skills; `None` = the server's defaults.
    pub skills: Option<Vec<String>>,
    /// `false` = one direct model call, no planning round and no agent loop.
    pub enable_tools: bool,
    /// Session hooks the client stored (`session_hook` frames' `hook`, signature inside).
    pub session_hooks: Vec<Value>,
    /// Cancelling it ends the chat with `done` reason `cancelled` and drops the upstream request.
    pub cancel: CancellationToken,
    /// A `compact` frame: compact `messages` (trigger `manual`) and end; no input, no model turn.
    pub compact_only: bool,
    /// A chat that goes on after `approval_required` (no input): the state and the decisions.
    pub resume: Option<Resume>,
    /// `hook_trace` events for every hook run (docs/protocol.md §12).
    pub trace: bool,
    /// A W3C `traceparent` the chat's span is the child of (the upgrade request's or the chat
    /// frame's; docs/protocol.md §17).
    pub traceparent: Option<String>,
    /// The chat frame's `conversation_id`, for the `gen_ai.conversation.id` attribute.
    pub conversation_id: Option<String>,
    /// Tools the client runs itself (docs/protocol.md §19): offered to the model beside the
    /// server's; a call to one passes the tool hooks and approval, is streamed, and ends the chat
    /// with `done` reason `tool_calls`. The next chat sends the results at the end of its
    /// history, with no input, and the agent loop goes on from them.
    pub client_tools: Vec<ToolSpec>,
    /// The person the chat is for, as the server's authentication learned it (docs/protocol.md
    /// §20); `None` = nobody in particular (no `auth.jwt`).
    pub person: Option<Person>,
    /// `false` for a wire that cannot carry an approval (OpenAI's chat completions): a call that
    /// would wait for the person's decision is refused instead, with a reason the model sees.
    pub can_ask_approval: bool,
}

/// The `resume` of a chat frame (docs/protocol.md §11).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resume {
    /// The `state` of the `approval` frame, as received.
    pub state: String,
    pub decisions: Vec<ApprovalDecision>,
}

/// The person's decision on one pending call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalDecision {
    pub call_id: String,
    pub allow: bool,
    /// Why (a denied call's reason reaches the model, so it is user text: at most
    /// [`MAX_DENY_REASON_CHARS`], and it passes the input guards).
    pub reason: Option<String>,
}

/// The longest deny `reason` of a resume, in Unicode scalar values; a longer one is refused
/// (`bad_frame`), never cut (docs/protocol.md §15).
pub(crate) const MAX_DENY_REASON_CHARS: usize = 500;

/// One hook run, for a chat with `trace` (docs/protocol.md §12).
#[derive(Debug, Clone, PartialEq)]
pub struct HookTrace {
    /// The event as the hook was configured under (`PreToolUse`, `pre_tool_execution`, …).
    pub event: String,
    pub hook: String,
    /// `server`, `workspace`, `session` or `skill`.
    pub level: String,
    pub ms: f64,
    /// `success`, `skip`, `block`, `ask`, `timeout` or `failure`.
    pub outcome: String,
    /// What it changed (`tool_arguments`, `messages`, …).
    pub changed: Vec<String>,
}

/// A tool call that waits for the person's decision.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct PendingCall {
    pub call_id: String,
    pub name: String,
    pub arguments: Value,
    /// Why it needs approval (`tools.require_approval`, or the hook that asked).
    pub reason: String,
}

impl ChatRequest {
    pub fn new(id: impl Into<String>, input: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            session_id: String::new(),
            messages: Vec::new(),
            input: input.into(),
            skills: None,
            enable_tools: true,
            session_hooks: Vec::new(),
            cancel: CancellationToken::new(),
            compact_only: false,
            resume: None,
            trace: false,
            traceparent: None,
            conversation_id: None,
            client_tools: Vec::new(),
            person: None,
            can_ask_approval: true,
        }
    }

    /// A chat that goes on after the client ran its tools: no input, no resume, and the history
    /// ends with `tool` results.
    pub fn continues_after_client_tools(&self) -> bool {
        self.input.is_empty()
            && self.resume.is_none()
            && !self.compact_only
            && self.messages.last().is_some_and(|m| m.role == Role::Tool)
    }
}

/// Why a chat ended normally.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum DoneReason {
    Completed,
    Cancelled,
    MaxSteps,
    Stopped,
    /// The model's reply was cut at its output limit (`finish_reason: "length"`).
    Length,
    /// The chat's summed usage reached `limits.max_total_tokens`.
    MaxTokens,
    /// Tool calls wait for the person's decision (an `approval` event came first).
    ApprovalRequired,
    /// Calls of client tools wait for the client's results (`Done::pending_tool_calls`).
    ToolCalls,
}

impl DoneReason {
    pub fn as_str(self) -> &'static str {
        match self {
            DoneReason::Completed => "completed",
            DoneReason::Cancelled => "cancelled",
            DoneReason::MaxSteps => "max_steps",
            DoneReason::Stopped => "stopped",
            DoneReason::Length => "length",
            DoneReason::MaxTokens => "max_tokens",
            DoneReason::ApprovalRequired => "approval_required",
            DoneReason::ToolCalls => "tool_calls",
        }
    }
}

/// The closed set of error codes a client can see (docs/protocol.md §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorCode {
    BadFrame,
    UnknownSkill,
    Busy,
    Upstream,
    HookBlocked,
    Internal,
    /// The history does not fit the model's window, even after compaction.
    ContextTooLong,
    /// The server is shutting down: the chat was not started (send it again on a new connection,
    /// which reaches another replica).
    Draining,
    /// A quota of the person or their tenant is spent (docs/protocol.md §20): the chat was not
    /// started; `retry_after_seconds` says when it may be.
    QuotaExceeded,
    /// The connection's token expired: send an `auth` frame with a fresh one.
    AuthExpired,
    /// A service the chat needs (the shared state, with `shared_state_fail_closed`) cannot be
    /// reached.
    Unavailable,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::BadFrame => "bad_frame",
            ErrorCode::UnknownSkill => "unknown_skill",
            ErrorCode::Busy => "busy",
            ErrorCode::Upstream => "upstream",
            ErrorCode::HookBlocked => "hook_blocked",
            ErrorCode::Internal => "internal",
            ErrorCode::ContextTooLong => "context_too_long",
            ErrorCode::Draining => "draining",
            ErrorCode::QuotaExceeded => "quota_exceeded",
            ErrorCode::AuthExpired => "auth_expired",
            ErrorCode::Unavailable => "unavailable",
        }
    }
}

/// A failed chat: one `error` frame, no `done`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", code.as_str())]
pub struct ChatError {
    pub code: ErrorCode,
    pub message: String,
    /// What the chat added to the conversation before it failed, when text had streamed or a
    /// tool had run (the failed step is not in it); empty otherwise. See `ChatEvent::Done`'s
    /// `turn`.
    pub turn: Vec<Message>,
    /// When the same chat may be sent again (`quota_exceeded`: docs/protocol.md §20).
    pub retry_after_seconds: Option<u64>,
}

impl ChatError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            turn: Vec::new(),
            retry_after_seconds: None,
        }
    }

    /// The same error, saying when to try again.
    pub fn retry_after(mut self, seconds: u64) -> Self {
        self.retry_after_seconds = Some(seconds);
        self
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum NoticeLevel {
    Info,
    Warn,
    Error,
}

impl NoticeLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            NoticeLevel::Info => "info",
            NoticeLevel::Warn => "warn",
            NoticeLevel::Error => "error",
        }
    }
}

/// Which step of a chat a model call is (`ChatEvent::StepStarted`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepName {
    /// The one call of a chat without tools.
    Answer,
    /// The planning round.
    Planning,
    /// A round of the agent loop, from 1.
    Round(usize),
    /// The last call at a limit (`summary_on_limit`).
    Summary,
}

impl std::fmt::Display for StepName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StepName::Answer => f.write_str("answer"),
            StepName::Planning => f.write_str("planning"),
            StepName::Round(round) => write!(f, "round {round}"),
            StepName::Summary => f.write_str("summary"),
        }
    }
}

/// A persistent hook message on its way to the client, which appends it to its history.
#[derive(Debug, Clone, PartialEq)]
pub struct HookMessage {
    pub role: Role,
    pub content: String,
    pub tag: HookTag,
}

/// Everything a chat produces, in order. Exactly one `Done` or `Error` ends the stream.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ChatEvent {
    /// The chat was accepted (the `start` frame); always the first event unless it was refused.
    /// `trace_id`: the chat's trace, when telemetry is on.
    Started {
        trace_id: Option<String>,
    },
    /// A step starts: one model call and the tool calls of its reply (the planning round, each
    /// round of the agent loop, a direct call, the summary at a limit). The step before it, if
    /// any, is over. The native wire sends nothing for it; AG-UI and the AI SDK mark steps.
    StepStarted(StepName),
    /// Assistant text, as it streams.
    Text(String),
    /// The planning round decided tools are needed; its plan text.
    Plan(String),
    ToolCall {
        call_id: String,
        name: String,
        arguments: Value,
    },
    ToolResult {
        call_id: String,
        name: String,
        content: String,
        is_error: bool,
    },
    /// A persistent hook was injected.
    Hook(HookMessage),
    /// Tool calls wait for the person's decision; `Done` (`approval_required`) follows. The
    /// client resumes with `state` and its decisions.
    Approval {
        calls: Vec<PendingCall>,
        state: String,
        /// When `state` expires, in seconds since the epoch (`approval.ttl` from now).
        expires: u64,
    },
    /// The history was compacted (sent before any text): the client replaces the first `count`
    /// messages it sent by `message` (the summary, with its `_compact` mark), then `pinned`
    /// (the persistent hook messages among them, verbatim), then `context` (what hooks added at
    /// the compaction: Claude Code's `SessionStart` with source `compact`).
    Compact {
        count: usize,
        message: Message,
        pinned: Vec<Message>,
        context: Vec<Message>,
    },
    /// The model registered a session hook; the client sends it back in `session_hooks`.
    SessionHook(Value),
    /// A hook ran (only for chats with `trace`).
    HookTrace(HookTrace),
    /// A message for the person from a hook (or the agent).
    Notice {
        level: NoticeLevel,
        message: String,
        source: String,
    },
    Done {
        reason: DoneReason,
        /// The final assistant text.
        content: String,
        usage: Usage,
        /// Every message the chat added to the conversation, in order, as the client appends
        /// them to the history it sent: the user input as the model saw it, persistent hook
        /// messages where they were injected, assistant messages with their tool calls, tool
        /// results (long ones cut), the final answer. After a resume: what the resumed part
        /// added.
        turn: Vec<Message>,
        /// With reason `tool_calls`: the ids of the client tools' calls that wait for their
        /// results (their assistant message is in `turn`); empty otherwise.
        pending_tool_calls: Vec<String>,
    },
    Error(ChatError),
}

impl ChatEvent {
    /// `true` for the event that ends a chat.
    pub fn is_terminal(&self) -> bool {
        matches!(self, ChatEvent::Done { .. } | ChatEvent::Error(_))
    }
}

/// The marker a planning reply starts with when it asks for the agent loop (docs/protocol.md §5);
/// configurable as `planning.marker`.
pub(crate) const DEFAULT_MARKER: &str = "[NEED_TOOL]";

/// The text of a panic payload (`panic!` with a literal or a formatted message).
pub(crate) fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}
