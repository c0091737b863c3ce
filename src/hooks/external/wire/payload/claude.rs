//! Claude Code's hook input and output, field by field as its hooks reference has them (the
//! events hookwire has a place for; tools under Claude Code's names and argument shapes).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::Unread;

/// What a Claude-dialect hook reads: the fields every event has and the event's own.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(title = "hookwire hook input (Claude Code spellings)")]
pub(crate) struct ClaudeInput {
    pub(crate) session_id: String,
    /// The chat so far as Claude Code's JSONL, outside the workspace (empty when there is none).
    pub(crate) transcript_path: String,
    pub(crate) cwd: String,
    /// Always `default`.
    pub(crate) permission_mode: &'static str,
    /// `PreToolUse`, `PostToolUse`, `PostToolUseFailure`, `UserPromptSubmit`, `Stop`,
    /// `SessionStart`, `SessionEnd`, `PreCompact`, `PostCompact` or `Notification`.
    pub(crate) hook_event_name: String,
    #[serde(flatten)]
    pub(crate) event: ClaudeEvent,
}

/// The fields of one event.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum ClaudeEvent {
    /// `PostToolUse`.
    ToolDone {
        #[serde(flatten)]
        tool: ClaudeTool,
        /// The result in the shape Claude Code's tool gives it.
        tool_response: Value,
    },
    /// `PostToolUseFailure`.
    ToolFailed {
        #[serde(flatten)]
        tool: ClaudeTool,
        error: String,
        /// Always false.
        is_interrupt: bool,
    },
    /// `PreToolUse`.
    Tool(ClaudeTool),
    /// `UserPromptSubmit`.
    Prompt { prompt: String },
    /// `Stop`.
    Stop {
        /// A stop hook already sent the model back in this chat.
        stop_hook_active: bool,
        last_assistant_message: String,
    },
    /// `SessionStart`: `startup`, or `compact` after a compaction.
    SessionStart { source: &'static str, model: String },
    /// `SessionEnd`: always `other`.
    SessionEnd { reason: &'static str },
    /// `PreCompact`.
    PreCompact {
        /// `auto` or `manual`.
        trigger: String,
        /// Always null.
        custom_instructions: Option<String>,
    },
    /// `PostCompact`.
    PostCompact {
        trigger: String,
        compact_summary: String,
    },
    /// `Notification`: a chat ends waiting for approval.
    Notification {
        /// Always `permission_prompt`.
        notification_type: &'static str,
        message: &'static str,
    },
    /// No event of this dialect comes without fields of its own: left out of the schema, so a
    /// payload that ends up here fails its validation test.
    #[schemars(skip)]
    Bare {},
}

/// A tool event's fields.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub(crate) struct ClaudeTool {
    /// Claude Code's name for the tool (`Read`, `Glob`, `Grep`, …; others as hookwire names
    /// them).
    pub(crate) tool_name: String,
    /// The arguments in Claude Code's shape for the tool.
    pub(crate) tool_input: Value,
    pub(crate) tool_use_id: String,
}

/// What a Claude-dialect hook may answer (exit 0; exit 2 blocks with stderr as the reason).
/// Unknown keys are logged and ignored.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(title = "hookwire hook output (Claude Code spellings)")]
pub(crate) struct ClaudeOutput {
    /// `false` ends the chat (except at `Stop`, `SessionStart`, `SessionEnd`, `Notification`).
    #[serde(rename = "continue", default, skip_serializing_if = "Option::is_none")]
    pub(crate) keep_going: Option<bool>,
    #[serde(
        rename = "stopReason",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) stop_reason: Option<String>,
    #[serde(
        rename = "suppressOutput",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) suppress_output: Option<bool>,
    /// Shown to the person.
    #[serde(
        rename = "systemMessage",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) system_message: Option<String>,
    /// `block` (`approve` too at `PreToolUse`): what blocking means depends on the event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) decision: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) reason: Option<String>,
    #[serde(
        rename = "additionalContext",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) additional_context: Option<String>,
    /// A prompt or agent hook's verdict: `false` blocks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) ok: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) impossible: Option<bool>,
    #[serde(
        rename = "hookSpecificOutput",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) hook_specific_output: Option<ClaudeSpecific>,
    /// Keys Claude Code's answer does not have: logged, never refused.
    #[serde(flatten)]
    pub(crate) extra: Map<String, Value>,
}

/// `hookSpecificOutput`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub(crate) struct ClaudeSpecific {
    #[serde(
        rename = "hookEventName",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) hook_event_name: Option<String>,
    /// `PreToolUse`: `ask` makes the call wait for the person's approval.
    #[serde(
        rename = "permissionDecision",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) permission_decision: Option<PermissionDecision>,
    #[serde(
        rename = "permissionDecisionReason",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) permission_decision_reason: Option<String>,
    /// `PreToolUse`: new arguments in Claude Code's shape.
    #[serde(
        rename = "updatedInput",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) updated_input: Option<Map<String, Value>>,
    /// `PostToolUse`: a new result.
    #[serde(
        rename = "updatedToolOutput",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) updated_tool_output: Option<UpdatedToolOutput>,
    #[serde(
        rename = "additionalContext",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) additional_context: Option<String>,
    /// Keys not listed here: logged, never refused (so are the listed ones at an event that
    /// does not define them).
    #[serde(flatten)]
    pub(crate) extra: Map<String, Value>,
}

/// A new tool result, in the shapes Claude Code's tools give one: text, a file's (`file.content`),
/// or an object with `content`; anything else is taken as its JSON text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum UpdatedToolOutput {
    Text(String),
    File(FileOutput),
    Content(TextContent),
    Other(Value),
}

/// `{"file": {"content": …}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct FileOutput {
    pub(crate) file: TextContent,
    #[serde(flatten)]
    pub(crate) _unread: Unread,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct TextContent {
    pub(crate) content: String,
    #[serde(flatten)]
    pub(crate) _unread: Unread,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum PermissionDecision {
    Allow,
    Deny,
    Ask,
    /// Logged, otherwise nothing.
    Defer,
}
