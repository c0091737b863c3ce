//! The chain's vocabulary, the same for every dialect: the values one event's hooks work on
//! ([`EventState`]), who is asking ([`Envelope`]), how a handler's run ended ([`RunResult`]), and
//! what a hook's answer says once its dialect has read it ([`HookOutput`], [`Control`]). The
//! dialects translate between these and their JSON; the chain decides from these alone.

use serde_json::Value;

use crate::types::Message;

/// The values a chain works on; each hook sees them as the previous hook left them.
#[derive(Debug, Clone, Default)]
pub(crate) struct EventState {
    pub(crate) user_input: Option<String>,
    pub(crate) messages: Option<Vec<Message>>,
    pub(crate) system_prompt: Option<String>,
    pub(crate) assistant_output: Option<String>,
    pub(crate) tool_name: Option<String>,
    /// The id of the tool call (Claude Code's `tool_use_id`).
    pub(crate) tool_call_id: Option<String>,
    pub(crate) tool_arguments: Option<Value>,
    pub(crate) tool_result: Option<String>,
    pub(crate) tool_error: Option<String>,
    /// `pre_llm_request`: the names of the tools offered to this call.
    pub(crate) tools: Option<Vec<String>>,
    /// `run_failed`: what went wrong.
    pub(crate) error: Option<String>,
    /// Compaction events: their metadata (docs/protocol.md §10).
    pub(crate) compaction: Option<crate::hooks::CompactInfo>,
    /// `post_auto_compact`: the summary (a hook may rewrite it).
    pub(crate) summary: Option<String>,
}

impl EventState {
    /// The fields that differ from `before` (what a hook changed), by their protocol names.
    pub(crate) fn changed_from(&self, before: &EventState) -> Vec<&'static str> {
        let mut changed = Vec::new();
        let mut check = |name: &'static str, differs: bool| {
            if differs {
                changed.push(name);
            }
        };
        check("user_input", self.user_input != before.user_input);
        check("messages", self.messages != before.messages);
        check("system_prompt", self.system_prompt != before.system_prompt);
        check(
            "assistant_output",
            self.assistant_output != before.assistant_output,
        );
        check(
            "tool_arguments",
            self.tool_arguments != before.tool_arguments,
        );
        check("tool_result", self.tool_result != before.tool_result);
        check("tool_error", self.tool_error != before.tool_error);
        check("summary", self.summary != before.summary);
        changed
    }
}

/// Who is asking: the ids and the place.
#[derive(Debug, Clone, Default)]
pub(crate) struct Envelope {
    pub(crate) session_id: String,
    pub(crate) run_id: Option<String>,
    pub(crate) cwd: String,
    pub(crate) model: String,
    /// The OpenHarness format's `workspace_id`: stable for a workspace ([`workspace_id`]).
    pub(crate) workspace_id: String,
    /// Claude Code's `transcript_path`: the chat so far as JSONL, outside the workspace.
    pub(crate) transcript_path: Option<String>,
    /// Claude Code's `stop_hook_active` (Gemini CLI's too): a stop hook already sent the model
    /// back in this chat.
    pub(crate) stop_hook_active: bool,
    /// Who the chat is for (`auth.jwt`): native input's `user`, command hooks'
    /// `HOOKWIRE_USER_ID` and `HOOKWIRE_TENANT`.
    pub(crate) person: Option<crate::types::Person>,
}

/// The OpenHarness format's `workspace_id` for a workspace root: the first 16 hex digits of the SHA-256 of
/// its path (stable, and it says nothing about the path).
pub(crate) fn workspace_id(root: &std::path::Path) -> String {
    let hash = crate::trust::sha256_hex(root.as_os_str().as_encoded_bytes());
    format!("ws-{}", &hash[..16.min(hash.len())])
}

/// What a hook decided about the flow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Control {
    /// End the step and the chat (`action: stop`, `abort: true`, `continue: false`).
    Stop(String),
    /// Skip this step (`action: skip`).
    Skip(String),
    /// `decision: block` or exit 2: skip on a tool event, stop elsewhere.
    Block(String),
    /// Ask the person before the tool runs (`action: ask`, `permissionDecision: "ask"`).
    Ask(String),
}

/// A hook's result, both vocabularies merged.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct HookOutput {
    pub(crate) user_input: Option<String>,
    pub(crate) messages: Option<Vec<Message>>,
    pub(crate) system_prompt: Option<String>,
    pub(crate) tool_arguments: Option<Value>,
    pub(crate) tool_result: Option<String>,
    pub(crate) tool_error: Option<String>,
    pub(crate) assistant_output: Option<String>,
    /// `post_auto_compact`: a new summary (`summary`, the OpenHarness format's `summaryText`; capability
    /// `messages`).
    pub(crate) summary: Option<String>,
    pub(crate) inject_messages: Vec<Message>,
    pub(crate) additional_context: Option<String>,
    pub(crate) retry_feedback: Option<String>,
    pub(crate) system_message: Option<String>,
    pub(crate) control: Option<Control>,
    pub(crate) suppress_output: bool,
    /// Context for the rest of the chat (Claude Code's `additionalContext`, plain stdout of a
    /// `UserPromptSubmit` / `SessionStart` hook, Gemini's `SessionStart` context): added to
    /// the system prompt from the next model call on (a session's: to each of its chats).
    pub(crate) chat_context: Vec<String>,
    /// Changes that were refused (outside the capabilities), for the log.
    pub(crate) refused: Vec<String>,
    /// Output keys the hook's dialect does not define at this event, for the log.
    pub(crate) unknown: Vec<String>,
}

/// How one run ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RunResult {
    /// The result JSON (`Null` = no change).
    Output(Value),
    /// Exit 2: blocked, with the reason.
    Block(String),
    /// Exit 0 with plain text that is not JSON (Claude Code and Gemini CLI give it a meaning).
    Text(String),
    /// The handler failed: could not run, answered badly, exited with another code.
    Error(String),
    /// The handler ran past its timeout (a command was killed).
    Timeout,
}
