//! The event vocabulary of external hooks: one canonical event per step of a chat (the jcli format's
//! names), spelled four ways. The spelling a hook is configured under is its [`Dialect`]
//! (docs/protocol.md §9): it decides the JSON the hook gets and how its answer is read.

/// The `trigger_type` of `run_completed` / `run_failed` (what their matcher matches): a chat.
pub(crate) const TRIGGER_TYPE: &str = "chat";

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
    /// The OpenHarness format: before the chat's message list is assembled (observe).
    BeforeContextBuild,
    /// The OpenHarness format: the list is assembled (system prompt, history, input); may replace `messages`.
    AfterContextBuild,
    PreAutoCompact,
    PostAutoCompact,
    PreMicroCompact,
    PostMicroCompact,
    /// Claude Code / Gemini CLI `Notification`: a chat ends waiting for approval (observe).
    Notification,
}

/// How a hook is written: which spelling of the events, which input JSON, which output fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Dialect {
    /// hookwire's own names, which are the jcli format's (`.jcli/hooks.yaml`: `pre_tool_execution`,
    /// …), plus the OpenHarness events hookwire adopted under their only name: `run_completed`,
    /// `before_context_build`, ….
    Hookwire,
    /// The OpenHarness format's aliases (`.openharness/hooks/*.yaml`: `before_tool_dispatch`, …):
    /// its rewrites need declared capabilities.
    OpenHarness,
    /// Claude Code's `settings.json` hooks (`PreToolUse`, …).
    Claude,
    /// Gemini CLI's `settings.json` hooks (`BeforeTool`, …).
    Gemini,
}

impl Dialect {
    /// Its name in `/api/hooks`, the traces and the logs.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Dialect::Hookwire => "hookwire",
            Dialect::OpenHarness => "openharness",
            Dialect::Claude => "claude",
            Dialect::Gemini => "gemini",
        }
    }

    /// Claude Code and Gemini CLI: their input JSON, tool names and output fields are their own.
    pub(crate) fn is_foreign(self) -> bool {
        matches!(self, Dialect::Claude | Dialect::Gemini)
    }
}

use Dialect::{Claude, Gemini, Hookwire, OpenHarness};
use Event::*;

/// Every spelling: the name, its dialect, the canonical events it stands for. `SessionStart`,
/// `SessionEnd` and `Notification` are both Claude Code's and Gemini CLI's: a Gemini
/// `settings.json` reads them as Gemini's (see [`Event::parse`]), everything else as Claude's.
const SPELLINGS: &[(&str, Dialect, &[Event])] = &[
    ("session_start", Hookwire, &[SessionStart]),
    ("session_end", Hookwire, &[SessionEnd]),
    ("pre_send_message", Hookwire, &[PreSendMessage]),
    ("post_send_message", Hookwire, &[PostSendMessage]),
    ("pre_llm_request", Hookwire, &[PreLlmRequest]),
    ("post_llm_response", Hookwire, &[PostLlmResponse]),
    ("pre_tool_execution", Hookwire, &[PreToolExecution]),
    ("post_tool_execution", Hookwire, &[PostToolExecution]),
    (
        "post_tool_execution_failure",
        Hookwire,
        &[PostToolExecutionFailure],
    ),
    ("stop", Hookwire, &[Stop]),
    ("run_completed", Hookwire, &[RunCompleted]),
    ("run_failed", Hookwire, &[RunFailed]),
    ("before_context_build", Hookwire, &[BeforeContextBuild]),
    ("after_context_build", Hookwire, &[AfterContextBuild]),
    ("pre_auto_compact", Hookwire, &[PreAutoCompact]),
    ("post_auto_compact", Hookwire, &[PostAutoCompact]),
    ("pre_micro_compact", Hookwire, &[PreMicroCompact]),
    ("post_micro_compact", Hookwire, &[PostMicroCompact]),
    ("before_model_call", OpenHarness, &[PreLlmRequest]),
    ("after_model_call", OpenHarness, &[PostLlmResponse]),
    ("before_tool_dispatch", OpenHarness, &[PreToolExecution]),
    (
        "after_tool_dispatch",
        OpenHarness,
        &[PostToolExecution, PostToolExecutionFailure],
    ),
    ("before_context_compact", OpenHarness, &[PreAutoCompact]),
    ("after_context_compact", OpenHarness, &[PostAutoCompact]),
    ("SessionStart", Claude, &[SessionStart]),
    ("SessionEnd", Claude, &[SessionEnd]),
    ("UserPromptSubmit", Claude, &[PreSendMessage]),
    ("PreToolUse", Claude, &[PreToolExecution]),
    ("PostToolUse", Claude, &[PostToolExecution]),
    ("PostToolUseFailure", Claude, &[PostToolExecutionFailure]),
    ("Stop", Claude, &[Stop]),
    ("PreCompact", Claude, &[PreAutoCompact]),
    ("PostCompact", Claude, &[PostAutoCompact]),
    ("Notification", Claude, &[Notification]),
    ("BeforeTool", Gemini, &[PreToolExecution]),
    (
        "AfterTool",
        Gemini,
        &[PostToolExecution, PostToolExecutionFailure],
    ),
    ("BeforeAgent", Gemini, &[PreSendMessage]),
    ("AfterAgent", Gemini, &[Stop]),
    ("BeforeModel", Gemini, &[PreLlmRequest]),
    ("AfterModel", Gemini, &[PostLlmResponse]),
    ("PreCompress", Gemini, &[PreAutoCompact]),
];

/// Events of Claude Code and Gemini CLI that hookwire has no place for: a hook configured
/// under one is a warning (it never runs), not an error, so that a real `settings.json` loads.
const UNSUPPORTED: &[(&str, Dialect)] = &[
    ("PermissionRequest", Claude),
    ("PermissionDenied", Claude),
    ("PostToolBatch", Claude),
    ("SubagentStart", Claude),
    ("SubagentStop", Claude),
    ("Setup", Claude),
    ("UserPromptExpansion", Claude),
    ("MessageDisplay", Claude),
    ("TaskCreated", Claude),
    ("TaskCompleted", Claude),
    ("TeammateIdle", Claude),
    ("StopFailure", Claude),
    ("InstructionsLoaded", Claude),
    ("ConfigChange", Claude),
    ("CwdChanged", Claude),
    ("DirectoryAdded", Claude),
    ("FileChanged", Claude),
    ("WorktreeCreate", Claude),
    ("WorktreeRemove", Claude),
    ("PreModelSwitch", Claude),
    ("PostModelSwitch", Claude),
    ("Elicitation", Claude),
    ("ElicitationResult", Claude),
    ("BeforeToolSelection", Gemini),
];

/// What a configured event name is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Spelling {
    /// A name hookwire runs: its dialect and the canonical events it stands for.
    Known(Dialect, &'static [Event]),
    /// A real event of that tool that hookwire has no place for.
    Unsupported(Dialect),
    /// Not an event name.
    Unknown,
}

impl Event {
    #[cfg(test)]
    pub(crate) const ALL: [Event; 19] = [
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
        BeforeContextBuild,
        AfterContextBuild,
        PreAutoCompact,
        PostAutoCompact,
        PreMicroCompact,
        PostMicroCompact,
        Notification,
    ];

    /// The canonical name (the jcli format's; `notification` has no hookwire spelling).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SessionStart => "session_start",
            SessionEnd => "session_end",
            PreSendMessage => "pre_send_message",
            PostSendMessage => "post_send_message",
            PreLlmRequest => "pre_llm_request",
            PostLlmResponse => "post_llm_response",
            PreToolExecution => "pre_tool_execution",
            PostToolExecution => "post_tool_execution",
            PostToolExecutionFailure => "post_tool_execution_failure",
            Stop => "stop",
            RunCompleted => "run_completed",
            RunFailed => "run_failed",
            BeforeContextBuild => "before_context_build",
            AfterContextBuild => "after_context_build",
            PreAutoCompact => "pre_auto_compact",
            PostAutoCompact => "post_auto_compact",
            PreMicroCompact => "pre_micro_compact",
            PostMicroCompact => "post_micro_compact",
            Notification => "notification",
        }
    }

    /// What `name` is, read in a file of `file_dialect` (a Gemini `settings.json` reads the
    /// names both tools share as Gemini's; every other file as Claude's).
    pub(crate) fn spelling(name: &str, file_dialect: Option<Dialect>) -> Spelling {
        let shared = matches!(name, "SessionStart" | "SessionEnd" | "Notification");
        if shared && file_dialect == Some(Gemini) {
            return match SPELLINGS.iter().find(|(n, _, _)| *n == name) {
                Some((_, _, events)) => Spelling::Known(Gemini, events),
                None => Spelling::Unknown,
            };
        }
        if let Some((_, dialect, events)) = SPELLINGS.iter().find(|(n, _, _)| *n == name) {
            return Spelling::Known(*dialect, events);
        }
        match UNSUPPORTED.iter().find(|(n, _)| *n == name) {
            Some((_, dialect)) => Spelling::Unsupported(*dialect),
            None => Spelling::Unknown,
        }
    }

    /// The canonical events a configured name stands for (the OpenHarness format's `after_tool_dispatch`
    /// and Gemini's `AfterTool` cover both tool outcomes).
    pub(crate) fn parse(name: &str) -> Option<&'static [Event]> {
        match Event::spelling(name, None) {
            Spelling::Known(_, events) => Some(events),
            _ => None,
        }
    }

    /// Every name accepted in a hook file.
    pub(crate) fn known_names() -> Vec<&'static str> {
        SPELLINGS.iter().map(|(name, _, _)| *name).collect()
    }

    /// The OpenHarness format's own events, which hookwire took under the format's names (it
    /// has no other): the format's rule holds for them in any file, so a rewrite needs a
    /// declared capability.
    pub(crate) fn is_openharness_own(self) -> bool {
        matches!(
            self,
            RunCompleted | RunFailed | BeforeContextBuild | AfterContextBuild
        )
    }

    /// Tool events: their subject is the tool name.
    pub(crate) fn is_tool_event(self) -> bool {
        matches!(
            self,
            PreToolExecution | PostToolExecution | PostToolExecutionFailure
        )
    }

    /// The OpenHarness format's context events take no matcher.
    pub(crate) fn takes_no_matcher(self) -> bool {
        matches!(
            self,
            BeforeContextBuild
                | AfterContextBuild
                | PreAutoCompact
                | PostAutoCompact
                | PreMicroCompact
                | PostMicroCompact
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_names_its_dialect_and_events() {
        assert_eq!(
            Event::spelling("pre_tool_execution", None),
            Spelling::Known(Hookwire, &[PreToolExecution])
        );
        assert_eq!(
            Event::spelling("before_tool_dispatch", None),
            Spelling::Known(OpenHarness, &[PreToolExecution])
        );
        assert_eq!(
            Event::spelling("PreToolUse", Some(Gemini)),
            Spelling::Known(Claude, &[PreToolExecution])
        );
        assert_eq!(
            Event::spelling("SessionStart", None),
            Spelling::Known(Claude, &[SessionStart])
        );
        assert_eq!(
            Event::spelling("SessionStart", Some(Gemini)),
            Spelling::Known(Gemini, &[SessionStart])
        );
        assert_eq!(
            Event::spelling("AfterTool", None),
            Spelling::Known(Gemini, &[PostToolExecution, PostToolExecutionFailure])
        );
        assert_eq!(
            Event::spelling("SubagentStop", None),
            Spelling::Unsupported(Claude)
        );
        assert_eq!(Event::spelling("pre_dance", None), Spelling::Unknown);
        assert_eq!(
            Event::spelling("notification", None),
            Spelling::Unknown,
            "approval notices have no hookwire spelling"
        );
        // Each canonical name spells its own event.
        for event in Event::ALL {
            if event != Notification {
                assert_eq!(Event::parse(event.as_str()), Some(&[event][..]));
            }
        }
    }
}
