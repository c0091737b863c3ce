//! The native input (an event under hookwire's own names, which are the jcli format's, or the
//! OpenHarness format's): the jcli fields plus the OpenHarness envelope, unset fields left out;
//! and the answer such a hook may give.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{PlainMessage, Unread};
use crate::types::history::HistoryMessage;

/// What a hook under a hookwire or OpenHarness event name reads. Which of the optional fields are present
/// depends on the event: each is there when the event has that value.
#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
#[schemars(title = "hookwire hook input (hookwire and OpenHarness event names)")]
pub(crate) struct NativeInput {
    /// The canonical event (`pre_tool_execution`, …).
    pub(crate) event: &'static str,
    /// The name the hook was configured under (`pre_tool_execution`, `before_tool_dispatch`, …).
    pub(crate) hook_event_name: String,
    pub(crate) session_id: String,
    /// The chat.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) run_id: Option<String>,
    /// The workspace root.
    pub(crate) cwd: String,
    /// Stable for a workspace: `ws-` and 16 hex digits.
    pub(crate) workspace_id: String,
    /// Always `hookwire`.
    pub(crate) agent_name: &'static str,
    pub(crate) effective_agent_name: &'static str,
    pub(crate) model: String,
    /// Who the chat is for, when the server signs people in (`auth.jwt`): `id`, `tenant`,
    /// `roles`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) user: Option<crate::types::Person>,
    /// `pre_llm_request`, `post_llm_response`: the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) model_ref: Option<String>,
    /// `pre_llm_request`, `post_llm_response`: the request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) model_request: Option<ModelRequest>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) messages: Option<Vec<PlainMessage>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) system_prompt: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) user_input: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) assistant_output: Option<String>,
    /// The assistant's output again, in the OpenHarness shape.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) model_response: Option<ModelResponse>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tool_name: Option<String>,
    /// The tool call's arguments as JSON text (the jcli name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tool_arguments: Option<String>,
    /// The same arguments as an object (the OpenHarness name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tool_input: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tool_result: Option<String>,
    /// The tool's result or error (the OpenHarness name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tool_output: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tool_error: Option<String>,
    /// `run_completed`, `run_failed`: always `chat`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) trigger_type: Option<&'static str>,
    /// `run_failed`: what went wrong.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
    /// `post_auto_compact`: the summary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) summary: Option<String>,
    #[serde(rename = "summaryText", skip_serializing_if = "Option::is_none")]
    pub(crate) summary_text: Option<String>,
    #[serde(rename = "summaryMessage", skip_serializing_if = "Option::is_none")]
    pub(crate) summary_message: Option<PlainMessage>,
    /// Compaction events: `auto` or `manual` (also in `metadata`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) trigger: Option<String>,
    /// Compaction events: the figures (hookwire event names).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) metadata: Option<CompactionMetadata>,
    /// OpenHarness compaction events: the chat's messages, under `context.messages` (in place
    /// of the top-level `messages`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) context: Option<MessagesContext>,
    /// OpenHarness compaction events: the figures at the top, under the format's camelCase
    /// names (in place of `metadata`).
    #[serde(flatten)]
    pub(crate) compact: Option<OpenHarnessCompaction>,
    /// `after_context_compact`: the first message of the history kept as it is (left out when
    /// every group was summarised).
    #[serde(rename = "boundaryMessage", skip_serializing_if = "Option::is_none")]
    pub(crate) boundary_message: Option<PlainMessage>,
}

/// `context`: the messages.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub(crate) struct MessagesContext {
    pub(crate) messages: Vec<PlainMessage>,
}

/// A compaction's figures under the OpenHarness format's names.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OpenHarnessCompaction {
    pub(crate) context_window_tokens: u64,
    pub(crate) compact_threshold_tokens: u64,
    pub(crate) estimated_input_tokens: u64,
    pub(crate) estimated_post_compact_tokens: u64,
    pub(crate) summarized_message_count: usize,
    /// `context.keep_recent_groups` as configured.
    pub(crate) configured_recent_group_count: usize,
    /// The groups actually kept (fewer when the history has fewer).
    pub(crate) keep_recent_group_count: usize,
    /// The last message the summary replaces: hookwire's messages carry no ids, so this is
    /// `msg-<n>`, `n` its place (0-based) in the history the chat frame sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) compact_through_message_id: Option<String>,
}

/// `model_request`: the model, the messages and the offered tools' names.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub(crate) struct ModelRequest {
    pub(crate) model: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) messages: Option<Vec<PlainMessage>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tools: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub(crate) struct ModelResponse {
    pub(crate) content: String,
}

/// A compaction's figures (docs/protocol.md §10).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub(crate) struct CompactionMetadata {
    pub(crate) trigger: String,
    pub(crate) context_window_tokens: u64,
    pub(crate) compact_threshold_tokens: u64,
    pub(crate) estimated_input_tokens: u64,
    pub(crate) estimated_post_compact_tokens: u64,
    pub(crate) summarized_message_count: usize,
    pub(crate) keep_recent_group_count: usize,
}

/// What a hook under a hookwire or OpenHarness event name may answer on stdout (or as its HTTP
/// body): a JSON object, every field optional; `{}` or nothing means no change. A change needs
/// the capability the hook declares (or, without declared capabilities, a top-level field of a
/// hookwire-spelled hook). Unknown keys are logged and ignored.
#[derive(Debug, Clone, PartialEq, Default, Deserialize, JsonSchema)]
#[schemars(title = "hookwire hook output (hookwire and OpenHarness event names)")]
pub(crate) struct NativeOutput {
    #[serde(flatten)]
    pub(crate) changes: NativeChanges,
    /// Asks the model to try again with this text (`stop`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) retry_feedback: Option<String>,
    /// Shown to the person as a `notice`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) system_message: Option<String>,
    #[serde(
        rename = "systemMessage",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) system_message_camel: Option<String>,
    #[serde(
        rename = "suppressOutput",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) suppress_output: Option<bool>,
    /// The reason given with `action`, `abort`, `continue: false` or `decision: "block"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) reason: Option<String>,
    #[serde(
        rename = "stopReason",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) stop_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) action: Option<Action>,
    /// `true` ends the step and the chat.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) abort: Option<bool>,
    /// `false` ends the step and the chat.
    #[serde(rename = "continue", default, skip_serializing_if = "Option::is_none")]
    pub(crate) keep_going: Option<bool>,
    /// `block`: skip the step on a tool event, stop elsewhere (other values change nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) decision: Option<String>,
    /// The OpenHarness patch: the same change fields, each needing a declared capability.
    #[serde(
        rename = "hookSpecificOutput",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) hook_specific_output: Option<NativePatch>,
    /// The event's name (ignored).
    #[serde(
        rename = "hookEventName",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) hook_event_name: Option<String>,
    /// Keys this shape does not have: logged, never refused.
    #[serde(flatten)]
    pub(crate) extra: Map<String, Value>,
}

/// The change fields of an answer.
#[derive(Debug, Clone, PartialEq, Default, Deserialize, JsonSchema)]
pub(crate) struct NativeChanges {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) user_input: Option<String>,
    /// The message list in the history's shape (the OpenAI chat shape): every message a
    /// hook is given may be given back, tool calls and results included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) messages: Option<Vec<HistoryMessage>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) system_prompt: Option<String>,
    /// New arguments: an object, or its JSON text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) tool_arguments: Option<ToolArguments>,
    /// The OpenHarness name for `tool_arguments`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) tool_input: Option<ToolArguments>,
    /// A new tool result; anything but a string is written as its JSON text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) tool_result: Option<Value>,
    /// The OpenHarness name for `tool_result`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) tool_output: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) tool_error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) assistant_output: Option<String>,
    /// `post_auto_compact`: a new summary (capability `messages`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) summary: Option<String>,
    #[serde(
        rename = "summaryText",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) summary_text: Option<String>,
    /// Messages added for this model call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) inject_messages: Option<Vec<OutputMessage>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) additional_context: Option<String>,
}

/// `hookSpecificOutput`: the change fields, and the event's name (ignored).
#[derive(Debug, Clone, PartialEq, Default, Deserialize, JsonSchema)]
pub(crate) struct NativePatch {
    #[serde(
        rename = "hookEventName",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) hook_event_name: Option<String>,
    #[serde(flatten)]
    pub(crate) changes: NativeChanges,
    /// Keys that are not change fields (in a patch, control keys too): logged, never refused.
    #[serde(flatten)]
    pub(crate) extra: Map<String, Value>,
}

/// A message a hook writes: `system`, `user` or `assistant`, and its text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct OutputMessage {
    pub(crate) role: OutputRole,
    pub(crate) content: String,
    #[serde(flatten)]
    pub(crate) _unread: Unread,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum OutputRole {
    System,
    User,
    Assistant,
}

/// New arguments: an object, or its JSON text (which must parse: the one thing about an answer
/// that its schema cannot check, so it is checked here, when the answer is read).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum ToolArguments {
    Object(Map<String, Value>),
    /// JSON text.
    #[schemars(extend("contentMediaType" = "application/json"))]
    Text(String),
}

impl<'de> Deserialize<'de> for ToolArguments {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::{Error, Unexpected};
        match Value::deserialize(deserializer)? {
            Value::Object(object) => Ok(Self::Object(object)),
            Value::String(text) => match serde_json::from_str::<Value>(&text) {
                Ok(_) => Ok(Self::Text(text)),
                Err(error) => Err(D::Error::custom(format_args!(
                    "the text is not JSON: {error}"
                ))),
            },
            other => {
                let unexpected = match &other {
                    Value::Bool(value) => Unexpected::Bool(*value),
                    Value::Array(_) => Unexpected::Seq,
                    Value::Null => Unexpected::Unit,
                    _ => Unexpected::Other("a number"),
                };
                Err(D::Error::invalid_type(
                    unexpected,
                    &"an object or its JSON text",
                ))
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Action {
    /// No change to the flow (the same as leaving `action` out).
    Continue,
    /// End the step and the chat.
    Stop,
    /// Skip this step.
    Skip,
    /// Ask the person before the tool runs.
    Ask,
}
