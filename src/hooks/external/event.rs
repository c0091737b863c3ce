//! The event vocabulary of external hooks: seed 001's names are canonical, seed 004's are
//! aliases (docs/design.md §3).

/// A canonical event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Event {
    SessionStart,
    SessionEnd,
    PreSendMessage,
    PostSendMessage,
    PreLlmRequest,
    PostLlmResponse,
    PreToolExecution,
    PostToolExecution,
    PostToolExecutionFailure,
    Stop,
    RunCompleted,
    RunFailed,
    /// Seed 004: before the chat's message list is assembled (observe).
    BeforeContextBuild,
    /// Seed 004: the list is assembled (system prompt, history, input); may replace `messages`.
    AfterContextBuild,
    PreAutoCompact,
    PostAutoCompact,
    PreMicroCompact,
    PostMicroCompact,
}

impl Event {
    pub(crate) const ALL: [Event; 18] = [
        Event::SessionStart,
        Event::SessionEnd,
        Event::PreSendMessage,
        Event::PostSendMessage,
        Event::PreLlmRequest,
        Event::PostLlmResponse,
        Event::PreToolExecution,
        Event::PostToolExecution,
        Event::PostToolExecutionFailure,
        Event::Stop,
        Event::RunCompleted,
        Event::RunFailed,
        Event::BeforeContextBuild,
        Event::AfterContextBuild,
        Event::PreAutoCompact,
        Event::PostAutoCompact,
        Event::PreMicroCompact,
        Event::PostMicroCompact,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Event::SessionStart => "session_start",
            Event::SessionEnd => "session_end",
            Event::PreSendMessage => "pre_send_message",
            Event::PostSendMessage => "post_send_message",
            Event::PreLlmRequest => "pre_llm_request",
            Event::PostLlmResponse => "post_llm_response",
            Event::PreToolExecution => "pre_tool_execution",
            Event::PostToolExecution => "post_tool_execution",
            Event::PostToolExecutionFailure => "post_tool_execution_failure",
            Event::Stop => "stop",
            Event::RunCompleted => "run_completed",
            Event::RunFailed => "run_failed",
            Event::BeforeContextBuild => "before_context_build",
            Event::AfterContextBuild => "after_context_build",
            Event::PreAutoCompact => "pre_auto_compact",
            Event::PostAutoCompact => "post_auto_compact",
            Event::PreMicroCompact => "pre_micro_compact",
            Event::PostMicroCompact => "post_micro_compact",
        }
    }

    /// The canonical events a configured name stands for (seed 004's `after_tool_dispatch`
    /// covers both tool outcomes).
    pub(crate) fn parse(name: &str) -> Option<&'static [Event]> {
        if let Some(index) = Event::ALL.iter().position(|e| e.as_str() == name) {
            return Some(std::slice::from_ref(&Event::ALL[index]));
        }
        Some(match name {
            "before_model_call" => &[Event::PreLlmRequest],
            "after_model_call" => &[Event::PostLlmResponse],
            "before_tool_dispatch" => &[Event::PreToolExecution],
            "after_tool_dispatch" => &[Event::PostToolExecution, Event::PostToolExecutionFailure],
            "before_context_compact" => &[Event::PreAutoCompact],
            "after_context_compact" => &[Event::PostAutoCompact],
            _ => return None,
        })
    }

    /// Every name accepted in a hook file.
    pub(crate) fn known_names() -> Vec<&'static str> {
        let mut names: Vec<&'static str> = Event::ALL.iter().map(|e| e.as_str()).collect();
        names.extend([
            "before_model_call",
            "after_model_call",
            "before_tool_dispatch",
            "after_tool_dispatch",
            "before_context_compact",
            "after_context_compact",
        ]);
        names
    }

    /// Tool events: their subject is the tool name.
    pub(crate) fn is_tool_event(self) -> bool {
        matches!(
            self,
            Event::PreToolExecution | Event::PostToolExecution | Event::PostToolExecutionFailure
        )
    }

    /// Compaction events are accepted but do not fire until hookwire compacts context.
    pub(crate) fn fires(self) -> bool {
        !matches!(
            self,
            Event::PreAutoCompact
                | Event::PostAutoCompact
                | Event::PreMicroCompact
                | Event::PostMicroCompact
        )
    }
}
