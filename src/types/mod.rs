//! The shared vocabulary of every layer: conversation messages, what goes into a chat and what
//! comes out of it, tool specs and outputs, problems found while loading. It depends on no other
//! module of the crate, so any module may use it (see the layers in ARCHITECTURE.md).

mod chat;
mod clock;
mod event_channel;
pub(crate) mod history;
mod kept_series;
mod message;
mod person;
mod problem;
pub(crate) mod read;
pub(crate) mod redact;
mod schema;
mod side_wait;
mod tool;
mod yaml;

pub(crate) use chat::MAX_DENY_REASON_CHARS;
pub(crate) use chat::{panic_message, DEFAULT_MARKER};
pub use chat::{
    ApprovalDecision, ChatError, ChatEvent, ChatRequest, DoneReason, ErrorCode, HookMessage,
    HookTrace, NoticeLevel, PendingCall, Resume, StepName,
};
pub(crate) use clock::{iso8601, iso8601_secs};
pub(crate) use event_channel::{event_channel, EventReceiver, EventSender, WeakEventSender};
pub(crate) use kept_series::{current_recorder, Kept, KeptBy};
pub use message::{CompactTag, HookTag, Message, Role, ToolCall, ToolSpec, Usage};
pub use person::Person;
pub use problem::{has_errors, Labelled, Problem, Severity};
pub(crate) use schema::{read_schema, written_schema};
pub(crate) use side_wait::{SideWait, TaskToWake};
pub use tool::ToolOutput;
pub(crate) use yaml::{one_line, YamlError};
