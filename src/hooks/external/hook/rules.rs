//! What each event's hooks work on and may do, as one table ([`RULES`], by [`Event::rules`]):
//! the values the event carries, which of them a hook's answer may change, what it may add for
//! later, and which decisions it may take. The chain applies an answer by looping over the
//! event's row; the adapter's `Call::state` fills what the row says the event carries (a test
//! holds it to that), and a test holds the row to docs/hooks.md's table of events.

use super::Event;

/// What a hook result may change or add (the OpenHarness format's `capabilities:`); the names
/// are the result fields (a summary is a `messages` change).
pub(crate) const CAPABILITIES: [&str; 9] = [
    "user_input",
    "messages",
    "system_prompt",
    "tool_arguments",
    "tool_result",
    "tool_error",
    "assistant_output",
    "inject_messages",
    "additional_context",
];

/// A value of the event that a hook's answer may replace, for the rest of its chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    UserInput,
    Summary,
    Messages,
    SystemPrompt,
    ToolArguments,
    ToolResult,
    ToolError,
    AssistantOutput,
}

impl Change {
    /// Every change, in the order an answer's changes are applied (and `hook_trace` lists them).
    pub(crate) const ALL: [Change; 8] = [
        Change::UserInput,
        Change::Summary,
        Change::Messages,
        Change::SystemPrompt,
        Change::ToolArguments,
        Change::ToolResult,
        Change::ToolError,
        Change::AssistantOutput,
    ];

    /// Its field's name (in the answer, `hook_trace` and the logs).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Change::UserInput => "user_input",
            Change::Summary => "summary",
            Change::Messages => "messages",
            Change::SystemPrompt => "system_prompt",
            Change::ToolArguments => "tool_arguments",
            Change::ToolResult => "tool_result",
            Change::ToolError => "tool_error",
            Change::AssistantOutput => "assistant_output",
        }
    }
}

/// What a hook's answer may add for later, beside the event's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Addition {
    /// Messages for this model call (`pre_llm_request`), or for each chat of the session
    /// (`session_start`).
    InjectMessages,
    /// Context for the model: this call's system prompt, the summary call's instructions, or
    /// the rest of the chat.
    AdditionalContext,
}

impl Addition {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Addition::InjectMessages => "inject_messages",
            Addition::AdditionalContext => "additional_context",
        }
    }
}

/// What refusing the event's action means: the step does not happen and the chat goes on
/// without it (a tool does not run and its result says why; a message is not sent; a model call
/// is not made), or the step (the chat, or the compaction) stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    Skip,
    Stop,
}

/// The decisions a hook may take at an event; one it may not take is logged and ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Decisions {
    /// `action: stop`, `abort: true`, `continue: false`: the chain ends with a stop.
    pub(crate) stop: bool,
    /// What `action: skip` refuses.
    pub(crate) skip: Option<Refusal>,
    /// What a block refuses (`decision: "block"`, exit 2, a deny), and what a hook with
    /// `on_error: block` refuses when it fails.
    pub(crate) block: Option<Refusal>,
    /// `action: ask`: the tool waits for the person's approval.
    pub(crate) ask: bool,
    /// `retry_feedback`: the model gets the feedback (before a tool: as its result).
    pub(crate) retry: bool,
}

/// One event's row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rules {
    pub(crate) event: Event,
    /// The values its hooks see (`EventState`'s fields, by their protocol names).
    pub(crate) carries: &'static [&'static str],
    pub(crate) changes: &'static [Change],
    pub(crate) adds: &'static [Addition],
    pub(crate) decides: Decisions,
}

/// Nothing to decide: the event observes.
const OBSERVE: Decisions = Decisions {
    stop: false,
    skip: None,
    block: None,
    ask: false,
    retry: false,
};

/// A step that hooks may stop (the chat ends there: before the model ran with `error`
/// `hook_blocked`, after it with `done` `stopped`); a block stops it too.
const STOPPABLE: Decisions = Decisions {
    stop: true,
    block: Some(Refusal::Stop),
    ..OBSERVE
};

/// A compaction hooks may skip: a stop, a skip or a block all leave it undone; a
/// `retry_feedback` reaches the model call it precedes (the summary call, or the chat's call
/// whose micro compaction it then skips) as a user message.
const SKIPPABLE: Decisions = Decisions {
    skip: Some(Refusal::Stop),
    retry: true,
    ..STOPPABLE
};

const TOOL: &[&str] = &["tool_name", "tool_call_id", "tool_arguments"];

use Addition::{AdditionalContext, InjectMessages};
use Change::{
    AssistantOutput, Messages, Summary, SystemPrompt, ToolArguments, ToolError, ToolResult,
    UserInput,
};

/// Every event's row, in [`Event::ALL`]'s order.
pub(crate) const RULES: [Rules; 19] = [
    Rules {
        // At the connection's start it carries nothing; Claude Code's `SessionStart` after a
        // compaction sees the chat's messages and the compaction (`Call::state`).
        event: Event::SessionStart,
        carries: &[],
        changes: &[],
        adds: &[InjectMessages],
        decides: OBSERVE,
    },
    Rules {
        event: Event::SessionEnd,
        carries: &[],
        changes: &[],
        adds: &[],
        decides: OBSERVE,
    },
    Rules {
        event: Event::PreSendMessage,
        carries: &["user_input", "messages"],
        changes: &[UserInput],
        adds: &[],
        decides: Decisions {
            retry: true,
            skip: Some(Refusal::Skip),
            ..STOPPABLE
        },
    },
    Rules {
        event: Event::PostSendMessage,
        carries: &["user_input", "messages"],
        changes: &[],
        adds: &[],
        decides: OBSERVE,
    },
    Rules {
        event: Event::PreLlmRequest,
        carries: &["messages", "system_prompt", "tools"],
        changes: &[Messages, SystemPrompt],
        adds: &[InjectMessages, AdditionalContext],
        decides: Decisions {
            retry: true,
            skip: Some(Refusal::Skip),
            ..STOPPABLE
        },
    },
    Rules {
        event: Event::PostLlmResponse,
        carries: &["messages", "assistant_output"],
        changes: &[AssistantOutput],
        adds: &[],
        decides: Decisions {
            retry: true,
            ..STOPPABLE
        },
    },
    Rules {
        event: Event::PreToolExecution,
        carries: TOOL,
        changes: &[ToolArguments],
        adds: &[],
        decides: Decisions {
            stop: true,
            skip: Some(Refusal::Skip),
            block: Some(Refusal::Skip),
            ask: true,
            retry: true,
        },
    },
    Rules {
        event: Event::PostToolExecution,
        carries: &["tool_name", "tool_call_id", "tool_arguments", "tool_result"],
        changes: &[ToolResult],
        adds: &[],
        decides: STOPPABLE,
    },
    Rules {
        event: Event::PostToolExecutionFailure,
        carries: &["tool_name", "tool_call_id", "tool_arguments", "tool_error"],
        changes: &[ToolError],
        adds: &[AdditionalContext],
        decides: STOPPABLE,
    },
    Rules {
        // A stop ends the chat here: no hook after it may send the model on.
        event: Event::Stop,
        carries: &[
            "user_input",
            "messages",
            "system_prompt",
            "assistant_output",
        ],
        changes: &[],
        adds: &[AdditionalContext],
        decides: Decisions {
            stop: true,
            retry: true,
            ..OBSERVE
        },
    },
    Rules {
        event: Event::RunCompleted,
        carries: &["assistant_output"],
        changes: &[AssistantOutput],
        adds: &[],
        decides: OBSERVE,
    },
    Rules {
        event: Event::RunFailed,
        carries: &["error"],
        changes: &[],
        adds: &[],
        decides: OBSERVE,
    },
    Rules {
        event: Event::BeforeContextBuild,
        carries: &["messages"],
        changes: &[],
        adds: &[],
        decides: OBSERVE,
    },
    Rules {
        event: Event::AfterContextBuild,
        carries: &["messages"],
        changes: &[Messages],
        adds: &[],
        decides: OBSERVE,
    },
    Rules {
        event: Event::PreAutoCompact,
        carries: &["messages", "system_prompt", "compaction"],
        changes: &[],
        adds: &[AdditionalContext],
        decides: SKIPPABLE,
    },
    Rules {
        event: Event::PostAutoCompact,
        carries: &["messages", "compaction", "summary"],
        changes: &[Summary, Messages],
        adds: &[],
        decides: OBSERVE,
    },
    Rules {
        event: Event::PreMicroCompact,
        carries: &["messages", "compaction"],
        changes: &[],
        adds: &[],
        decides: SKIPPABLE,
    },
    Rules {
        event: Event::PostMicroCompact,
        carries: &["messages", "compaction"],
        changes: &[Messages],
        adds: &[],
        decides: OBSERVE,
    },
    Rules {
        // The first call waiting for approval is the notification's tool.
        event: Event::Notification,
        carries: TOOL,
        changes: &[],
        adds: &[],
        decides: OBSERVE,
    },
];

// Each event's row is at its place in the declaration of `Event`, so finding it is indexing.
const _: () = {
    let mut at = 0;
    while at < RULES.len() {
        assert!(
            RULES[at].event as usize == at,
            "RULES must follow Event's order"
        );
        at += 1;
    }
};

impl Event {
    /// What this event's hooks work on and may do.
    pub(crate) fn rules(self) -> &'static Rules {
        &RULES[self as usize]
    }
}

#[cfg(test)]
mod tests;
