//! Gemini CLI's hook input and output, field by field as its hooks reference has them (the
//! events hookwire has a place for; tools under Gemini CLI's names and argument shapes; the
//! model request and response in their text-only shape).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{PlainMessage, Unread};

/// What a Gemini-dialect hook reads: the fields every event has and the event's own.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(title = "hookwire hook input (Gemini CLI spellings)")]
pub(crate) struct GeminiInput {
    pub(crate) session_id: String,
    /// Always empty: hookwire keeps no Gemini-format recording.
    pub(crate) transcript_path: &'static str,
    pub(crate) cwd: String,
    /// `BeforeTool`, `AfterTool`, `BeforeAgent`, `AfterAgent`, `BeforeModel`, `AfterModel`,
    /// `PreCompress`, `SessionStart`, `SessionEnd` or `Notification`.
    pub(crate) hook_event_name: String,
    /// ISO 8601 UTC with milliseconds.
    pub(crate) timestamp: String,
    #[serde(flatten)]
    pub(crate) event: GeminiEvent,
}

/// The fields of one event.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum GeminiEvent {
    /// `AfterTool`.
    ToolDone {
        #[serde(flatten)]
        tool: GeminiTool,
        tool_response: ToolResponse,
    },
    /// `BeforeTool`.
    Tool(GeminiTool),
    /// `BeforeAgent`.
    Prompt { prompt: String },
    /// `AfterAgent`.
    Stop {
        prompt: String,
        prompt_response: String,
        /// A stop hook already sent the model back in this chat.
        stop_hook_active: bool,
    },
    /// `AfterModel`.
    ModelDone {
        llm_request: LlmRequest,
        llm_response: LlmResponse,
    },
    /// `BeforeModel`.
    Model { llm_request: LlmRequest },
    /// `SessionStart` (`startup`) or `SessionEnd` (`exit`).
    Session {
        #[serde(skip_serializing_if = "Option::is_none")]
        source: Option<&'static str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<&'static str>,
    },
    /// `PreCompress`: `auto` or `manual`.
    Compress { trigger: String },
    /// `Notification`: a chat ends waiting for approval.
    Notification {
        /// Always `ToolPermission`.
        notification_type: &'static str,
        message: &'static str,
        details: serde_json::Map<String, Value>,
    },
    /// No event of this dialect comes without fields of its own: left out of the schema, so a
    /// payload that ends up here fails its validation test.
    #[schemars(skip)]
    Bare {},
}

/// A tool event's fields.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub(crate) struct GeminiTool {
    /// Gemini CLI's name for the tool (`read_file`, `glob`, …).
    pub(crate) tool_name: String,
    /// The arguments in Gemini CLI's shape for the tool.
    pub(crate) tool_input: Value,
}

/// A tool's result (`error` set when it failed).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub(crate) struct ToolResponse {
    #[serde(rename = "llmContent")]
    pub(crate) llm_content: String,
    #[serde(rename = "returnDisplay")]
    pub(crate) return_display: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
}

/// The model request, text only (tool calls and results left out).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub(crate) struct LlmRequest {
    pub(crate) model: String,
    /// Always `{}`.
    pub(crate) config: serde_json::Map<String, Value>,
    /// `user`, `model` and `system` messages with text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) messages: Option<Vec<PlainMessage>>,
    #[serde(rename = "toolConfig", skip_serializing_if = "Option::is_none")]
    pub(crate) tool_config: Option<ToolConfig>,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub(crate) struct ToolConfig {
    /// `AUTO`, or `NONE` when no tool is offered.
    pub(crate) mode: &'static str,
    #[serde(rename = "allowedFunctionNames")]
    pub(crate) allowed_function_names: Vec<String>,
}

/// The model's answer: one candidate, its text as one part.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub(crate) struct LlmResponse {
    pub(crate) candidates: Vec<Candidate>,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub(crate) struct Candidate {
    pub(crate) content: CandidateContent,
    /// Always `STOP`.
    #[serde(rename = "finishReason")]
    pub(crate) finish_reason: &'static str,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub(crate) struct CandidateContent {
    /// Always `model`.
    pub(crate) role: &'static str,
    pub(crate) parts: Vec<String>,
}

/// What a Gemini-dialect hook may answer (exit 0: JSON, or plain text shown to the person; exit
/// 2 blocks with stderr as the reason). Unknown keys are logged and ignored.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(title = "hookwire hook output (Gemini CLI spellings)")]
pub(crate) struct GeminiOutput {
    #[serde(
        rename = "systemMessage",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) system_message: Option<String>,
    #[serde(
        rename = "suppressOutput",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) suppress_output: Option<bool>,
    /// `false` ends the chat (except at `AfterAgent`, `SessionStart`, `SessionEnd`,
    /// `Notification`).
    #[serde(rename = "continue", default, skip_serializing_if = "Option::is_none")]
    pub(crate) keep_going: Option<bool>,
    #[serde(
        rename = "stopReason",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) stop_reason: Option<String>,
    /// `allow`/`approve`, `deny`/`block` (what a deny means depends on the event), `ask` at
    /// `BeforeTool`; other values are logged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) decision: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) reason: Option<String>,
    #[serde(
        rename = "hookSpecificOutput",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) hook_specific_output: Option<GeminiSpecific>,
    /// Keys Gemini CLI's answer does not have: logged, never refused.
    #[serde(flatten)]
    pub(crate) extra: Map<String, Value>,
}

/// `hookSpecificOutput`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub(crate) struct GeminiSpecific {
    #[serde(
        rename = "hookEventName",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) hook_event_name: Option<String>,
    /// `BeforeTool`: merged over the arguments (Gemini CLI's shape).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) tool_input: Option<Map<String, Value>>,
    /// `AfterTool`: a new result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) tool_output: Option<String>,
    #[serde(
        rename = "additionalContext",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) additional_context: Option<String>,
    /// `BeforeModel`: a new request (of which hookwire takes the messages).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) llm_request: Option<NewLlmRequest>,
    /// `AfterModel`: a new response (of which hookwire takes the first candidate's text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) llm_response: Option<NewLlmResponse>,
    /// Keys not listed here: logged, never refused (so are the listed ones at an event that
    /// does not define them).
    #[serde(flatten)]
    pub(crate) extra: Map<String, Value>,
}

/// `llm_request` given back: its `messages` replace the chat's (its other keys are ignored).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub(crate) struct NewLlmRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) messages: Option<Vec<NewMessage>>,
    /// `model`, `config`, `toolConfig`: not read.
    #[serde(flatten)]
    pub(crate) _unread: Unread,
}

/// A message of `llm_request.messages`: `model` is the assistant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct NewMessage {
    pub(crate) role: NewRole,
    pub(crate) content: String,
    #[serde(flatten)]
    pub(crate) _unread: Unread,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum NewRole {
    System,
    User,
    Model,
    /// Taken as `model`.
    Assistant,
}

/// `llm_response` given back: the text of its first candidate's parts replaces the answer.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub(crate) struct NewLlmResponse {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) candidates: Option<Vec<NewCandidate>>,
    #[serde(flatten)]
    pub(crate) _unread: Unread,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub(crate) struct NewCandidate {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) content: Option<NewContent>,
    #[serde(flatten)]
    pub(crate) _unread: Unread,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub(crate) struct NewContent {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) parts: Option<Vec<NewPart>>,
    #[serde(flatten)]
    pub(crate) _unread: Unread,
}

/// A part: text, `{text}`, or another kind (a function call, …) that adds no text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum NewPart {
    Text(String),
    Part(TextPart),
    Other(Value),
}

/// `{"text": …}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct TextPart {
    pub(crate) text: String,
    #[serde(flatten)]
    pub(crate) _unread: Unread,
}
