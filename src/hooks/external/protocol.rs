//! The JSON a hookwire-dialect or OpenHarness-format hook reads and writes (Claude Code's and
//! Gemini CLI's are in [`super::dialect`]). Input: the jcli format's fields plus the OpenHarness format's envelope,
//! unset fields omitted. Output: both vocabularies, normalised into [`HookOutput`], the one
//! shape every dialect's answer is read into.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::payload::native::{
    CompactionMetadata, MessagesContext, ModelRequest, ModelResponse, NativeInput,
    OpenHarnessCompaction,
};
use super::payload::PlainMessage;

use super::event::{Dialect, Event, CAPABILITIES, TRIGGER_TYPE};
use crate::types::{Message, Role};

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
}

/// The OpenHarness format's `workspace_id` for a workspace root: the first 16 hex digits of the SHA-256 of
/// its path (stable, and it says nothing about the path).
pub(crate) fn workspace_id(root: &std::path::Path) -> String {
    let hash = crate::trust::sha256_hex(root.as_os_str().as_encoded_bytes());
    format!("ws-{}", &hash[..16.min(hash.len())])
}

/// Messages as a hook sees them: role and text.
fn plain_messages(messages: &[Message]) -> Vec<PlainMessage> {
    messages.iter().map(plain_message).collect()
}

fn plain_message(message: &Message) -> PlainMessage {
    PlainMessage {
        role: message.role.as_str(),
        content: message.content.clone(),
    }
}

/// The input JSON for one hook.
pub(crate) fn input_json(
    event: Event,
    event_name: &str,
    dialect: Dialect,
    envelope: &Envelope,
    state: &EventState,
) -> Value {
    let model_call = matches!(event, Event::PreLlmRequest | Event::PostLlmResponse);
    let messages = state.messages.as_deref().map(plain_messages);
    // The OpenHarness format's compaction envelope: `context.messages` and camelCase figures
    // (hookwire's names keep the jcli shape: top-level `messages`, `metadata`).
    let openharness = dialect == Dialect::OpenHarness;
    let compaction = state.compaction.as_ref();
    let openharness_compaction = compaction.filter(|_| openharness);
    let (messages, context) = match openharness_compaction {
        Some(_) => (None, messages.map(|messages| MessagesContext { messages })),
        None => (messages, None),
    };
    let input = NativeInput {
        event: event.as_str(),
        hook_event_name: event_name.to_string(),
        session_id: envelope.session_id.clone(),
        run_id: envelope.run_id.clone(),
        cwd: envelope.cwd.clone(),
        workspace_id: envelope.workspace_id.clone(),
        agent_name: "hookwire",
        effective_agent_name: "hookwire",
        model: envelope.model.clone(),
        model_ref: model_call.then(|| envelope.model.clone()),
        model_request: model_call.then(|| ModelRequest {
            model: envelope.model.clone(),
            messages: messages.clone(),
            tools: state.tools.clone(),
        }),
        messages,
        system_prompt: state.system_prompt.clone(),
        user_input: state.user_input.clone(),
        assistant_output: state.assistant_output.clone(),
        model_response: state
            .assistant_output
            .clone()
            .map(|content| ModelResponse { content }),
        tool_name: state.tool_name.clone(),
        tool_arguments: state.tool_arguments.as_ref().map(Value::to_string),
        tool_input: state.tool_arguments.clone(),
        tool_result: state.tool_result.clone(),
        // The error when there is one, else the result.
        tool_output: state.tool_error.clone().or(state.tool_result.clone()),
        tool_error: state.tool_error.clone(),
        trigger_type: matches!(event, Event::RunCompleted | Event::RunFailed)
            .then_some(TRIGGER_TYPE),
        error: state.error.clone(),
        summary: state.summary.clone(),
        summary_text: state.summary.clone(),
        summary_message: state.summary.clone().map(|content| PlainMessage {
            role: "system",
            content,
        }),
        // Under `metadata`, and `trigger` at the top too, where Claude Code and Gemini CLI
        // hooks read it.
        trigger: state.compaction.as_ref().map(|info| info.trigger.clone()),
        metadata: compaction
            .filter(|_| !openharness)
            .map(|info| CompactionMetadata {
                trigger: info.trigger.clone(),
                context_window_tokens: info.context_window_tokens,
                compact_threshold_tokens: info.compact_threshold_tokens,
                estimated_input_tokens: info.estimated_input_tokens,
                estimated_post_compact_tokens: info.estimated_post_compact_tokens,
                summarized_message_count: info.summarized_message_count,
                keep_recent_group_count: info.keep_recent_group_count,
            }),
        context,
        compact: openharness_compaction.map(|info| OpenHarnessCompaction {
            context_window_tokens: info.context_window_tokens,
            compact_threshold_tokens: info.compact_threshold_tokens,
            estimated_input_tokens: info.estimated_input_tokens,
            estimated_post_compact_tokens: info.estimated_post_compact_tokens,
            summarized_message_count: info.summarized_message_count,
            configured_recent_group_count: info.configured_recent_group_count,
            keep_recent_group_count: info.keep_recent_group_count,
            compact_through_message_id: info.compact_through.map(|at| format!("msg-{at}")),
        }),
        boundary_message: openharness_compaction
            .filter(|_| event == Event::PostAutoCompact)
            .and_then(|info| info.boundary.as_ref())
            .map(plain_message),
    };
    // Serializing these types cannot fail: no maps with non-string keys, no custom impls.
    serde_json::to_value(input).unwrap_or(Value::Null)
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

/// The top-level keys a hookwire-dialect or OpenHarness-format answer may have besides the
/// change fields ([`CAPABILITIES`]).
const CONTROL_KEYS: [&str; 14] = [
    "tool_input",
    "tool_output",
    "retry_feedback",
    "system_message",
    "systemMessage",
    "suppressOutput",
    "stopReason",
    "reason",
    "action",
    "abort",
    "continue",
    "decision",
    "hookSpecificOutput",
    "hookEventName",
];

/// Why a hook's answer cannot be read (the chain treats it as a failed run and shows this
/// text): one type for every dialect's reader. Its text is the whole message, built where the
/// problem is found, since each field and dialect words its own.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct HookAnswerError(pub(crate) String);

impl From<String> for HookAnswerError {
    fn from(message: String) -> Self {
        Self(message)
    }
}

impl From<&str> for HookAnswerError {
    fn from(message: &str) -> Self {
        Self(message.to_string())
    }
}

fn string_field(object: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("`{key}` must be a string")),
    }
}

fn parse_messages(value: &Value, key: &str) -> Result<Vec<Message>, String> {
    let items = value
        .as_array()
        .ok_or_else(|| format!("`{key}` must be an array of messages"))?;
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let role = match item.get("role").and_then(Value::as_str) {
                Some("system") => Role::System,
                Some("user") => Role::User,
                Some("assistant") => Role::Assistant,
                _ => {
                    return Err(format!(
                        "`{key}[{i}].role` must be system, user or assistant"
                    ))
                }
            };
            let content = item
                .get("content")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("`{key}[{i}].content` must be a string"))?;
            Ok(Message::new(role, content))
        })
        .collect()
}

/// Parses a hookwire-dialect or OpenHarness-format hook's JSON answer. `Value::Null` and `{}`
/// mean no change. Changes need a declared capability, except top-level (the jcli format) fields of a
/// hookwire-dialect hook that declares none; `hookSpecificOutput` patches always need one.
pub(crate) fn parse_output(
    value: &Value,
    capabilities: Option<&BTreeSet<String>>,
    dialect: Dialect,
) -> Result<HookOutput, HookAnswerError> {
    let empty = Map::new();
    let object = match value {
        Value::Null => &empty,
        Value::Object(object) => object,
        _ => return Err("the result must be a JSON object".into()),
    };
    let mut out = HookOutput::default();
    // Change fields: top level (the jcli format) unless capabilities are declared and leave them out;
    // `hookSpecificOutput` (the OpenHarness format) only with a declared capability.
    let specific = match object.get("hookSpecificOutput") {
        None | Some(Value::Null) => None,
        Some(Value::Object(patch)) => Some(patch),
        Some(_) => return Err("`hookSpecificOutput` must be an object".into()),
    };
    let allowed = |field: &str, from_patch: bool| match capabilities {
        Some(set) => set.contains(field),
        None => !from_patch && dialect == Dialect::Hookwire,
    };
    let sources: Vec<(&Map<String, Value>, bool)> = std::iter::once((object, false))
        .chain(specific.map(|p| (p, true)))
        .collect();
    for (source, from_patch) in sources {
        for (key, value) in source {
            let field = match key.as_str() {
                "tool_input" => "tool_arguments",
                "tool_output" => "tool_result",
                // The summary is part of the message list: changing it is a `messages` change.
                "summary" | "summaryText" => "messages",
                "hookEventName" => continue,
                other => other,
            };
            let change = CAPABILITIES.contains(&field);
            if !change || value.is_null() {
                // Control keys belong at the top level; in a patch only changes do.
                if !change && (from_patch || !CONTROL_KEYS.contains(&key.as_str())) {
                    out.unknown.push(key.clone());
                }
                continue;
            }
            if !allowed(field, from_patch) {
                out.refused.push(field.to_string());
                continue;
            }
            match field {
                "user_input" => out.user_input = string_field(source, key)?,
                "system_prompt" => out.system_prompt = string_field(source, key)?,
                "tool_result" => {
                    out.tool_result = Some(
                        value
                            .as_str()
                            .map(str::to_string)
                            .unwrap_or_else(|| value.to_string()),
                    )
                }
                "tool_error" => out.tool_error = string_field(source, key)?,
                "assistant_output" => out.assistant_output = string_field(source, key)?,
                "additional_context" => out.additional_context = string_field(source, key)?,
                "messages" if key != "messages" => out.summary = string_field(source, key)?,
                "messages" => out.messages = Some(parse_messages(value, key)?),
                "inject_messages" => out.inject_messages = parse_messages(value, key)?,
                "tool_arguments" => {
                    out.tool_arguments = Some(match value {
                        Value::String(text) => serde_json::from_str(text)
                            .map_err(|e| format!("`{key}` is not JSON: {e}"))?,
                        other => other.clone(),
                    })
                }
                _ => {}
            }
        }
    }
    out.retry_feedback = string_field(object, "retry_feedback")?;
    out.system_message =
        string_field(object, "system_message")?.or(string_field(object, "systemMessage")?);
    out.suppress_output = object
        .get("suppressOutput")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let reason = string_field(object, "stopReason")?.or(string_field(object, "reason")?);
    let action = string_field(object, "action")?;
    out.control = match action.as_deref() {
        Some("stop") => Some(Control::Stop(reason.clone().unwrap_or_default())),
        Some("skip") => Some(Control::Skip(reason.clone().unwrap_or_default())),
        Some("ask") => Some(Control::Ask(reason.clone().unwrap_or_default())),
        Some(other) if !other.is_empty() && other != "continue" => {
            return Err(format!("`action` {other:?} must be \"stop\", \"skip\" or \"ask\"").into())
        }
        _ => None,
    };
    if out.control.is_none() {
        let abort = object.get("abort").and_then(Value::as_bool) == Some(true);
        let halt = object.get("continue").and_then(Value::as_bool) == Some(false);
        let decision = string_field(object, "decision")?;
        if abort || halt {
            out.control = Some(Control::Stop(reason.clone().unwrap_or_default()));
        } else if decision.as_deref() == Some("block") {
            out.control = Some(Control::Block(reason.unwrap_or_default()));
        }
    }
    Ok(out)
}

/// Pulls the JSON object out of a model's answer (which may wrap it in prose or a code fence).
pub(crate) fn json_in_text(text: &str) -> Result<Value, HookAnswerError> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Ok(Value::Null);
    }
    if let Ok(value) = serde_json::from_str::<Value>(trimmed) {
        return Ok(value);
    }
    let (Some(start), Some(end)) = (trimmed.find('{'), trimmed.rfind('}')) else {
        return Err(format!(
            "no JSON object in the answer: {:?}",
            trimmed.chars().take(120).collect::<String>()
        )
        .into());
    };
    if end < start {
        return Err("no JSON object in the answer".into());
    }
    serde_json::from_str(&trimmed[start..=end])
        .map_err(|e| format!("the answer's JSON is invalid: {e}").into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn input_has_both_vocabularies_and_omits_unset_fields() {
        let state = EventState {
            tool_name: Some("read_file".into()),
            tool_arguments: Some(json!({"path":"a.env"})),
            ..Default::default()
        };
        let envelope = Envelope {
            session_id: "s1".into(),
            run_id: Some("c1".into()),
            cwd: "/w".into(),
            model: "m".into(),
            workspace_id: "ws-1".into(),
            ..Envelope::default()
        };
        assert_eq!(
            input_json(
                Event::PreToolExecution,
                "before_tool_dispatch",
                Dialect::OpenHarness,
                &envelope,
                &state
            ),
            json!({"event":"pre_tool_execution","hook_event_name":"before_tool_dispatch","session_id":"s1","run_id":"c1",
                   "cwd":"/w","workspace_id":"ws-1","agent_name":"hookwire","effective_agent_name":"hookwire","model":"m",
                   "tool_name":"read_file","tool_arguments":"{\"path\":\"a.env\"}","tool_input":{"path":"a.env"}})
        );
    }

    #[test]
    fn jcli_format_results() {
        let out = parse_output(
            &json!({"user_input":"x","inject_messages":[{"role":"user","content":"now"}],"additional_context":"ctx",
                    "retry_feedback":"again","system_message":"hi","action":"skip","reason":"nope"}),
            None,
            Dialect::Hookwire,
        )
        .unwrap();
        assert_eq!(out.user_input.as_deref(), Some("x"));
        assert_eq!(out.inject_messages, vec![Message::user("now")]);
        assert_eq!(out.control, Some(Control::Skip("nope".into())));
        assert_eq!(
            parse_output(&json!({"abort": true}), None, Dialect::Hookwire)
                .unwrap()
                .control,
            Some(Control::Stop(String::new()))
        );
        assert_eq!(
            parse_output(&json!({}), None, Dialect::Hookwire).unwrap(),
            HookOutput::default()
        );
        assert_eq!(
            parse_output(&Value::Null, None, Dialect::Hookwire).unwrap(),
            HookOutput::default()
        );
        assert!(parse_output(&json!([1]), None, Dialect::Hookwire).is_err());
        assert!(parse_output(&json!({"action":"explode"}), None, Dialect::Hookwire).is_err());
    }

    #[test]
    fn openharness_format_results_and_capabilities() {
        let answer = json!({"continue": false, "stopReason": "budget", "systemMessage": "stopped",
                            "hookSpecificOutput": {"hookEventName":"before_model_call","system_prompt":"new"}});
        let without = parse_output(&answer, None, Dialect::Hookwire).unwrap();
        assert_eq!(without.control, Some(Control::Stop("budget".into())));
        assert_eq!(without.system_message.as_deref(), Some("stopped"));
        assert_eq!(
            without.system_prompt, None,
            "patches need a declared capability"
        );
        assert_eq!(without.refused, vec!["system_prompt"]);
        let caps: BTreeSet<String> = ["system_prompt".to_string()].into();
        let with = parse_output(&answer, Some(&caps), Dialect::Hookwire).unwrap();
        assert_eq!(with.system_prompt.as_deref(), Some("new"));
        let outside =
            parse_output(&json!({"user_input": "x"}), Some(&caps), Dialect::Hookwire).unwrap();
        assert_eq!(
            (outside.user_input, outside.refused),
            (None, vec!["user_input".to_string()])
        );
        let block = parse_output(
            &json!({"decision":"block","reason":"no"}),
            None,
            Dialect::Hookwire,
        )
        .unwrap();
        assert_eq!(block.control, Some(Control::Block("no".into())));
        let tool = parse_output(
            &json!({"hookSpecificOutput":{"tool_input":{"path":"b"}}}),
            Some(&["tool_arguments".to_string()].into()),
            Dialect::OpenHarness,
        )
        .unwrap();
        assert_eq!(tool.tool_arguments, Some(json!({"path":"b"})));
    }

    #[test]
    fn openharness_format_top_level_rewrites_need_capabilities_too() {
        let answer = json!({"tool_input": {"path": "b"}, "colour": "red", "user_input": null,
                            "hookSpecificOutput": {"hookEventName": "x", "continue": false}});
        let without = parse_output(&answer, None, Dialect::OpenHarness).unwrap();
        assert_eq!(without.tool_arguments, None);
        assert_eq!(without.refused, vec!["tool_arguments"]);
        assert_eq!(
            without.unknown,
            vec!["colour", "continue"],
            "logged, not silently dropped"
        );
        let caps: BTreeSet<String> = ["tool_arguments".to_string()].into();
        let with = parse_output(&answer, Some(&caps), Dialect::OpenHarness).unwrap();
        assert_eq!(with.tool_arguments, Some(json!({"path":"b"})));
        let jcli = parse_output(&answer, None, Dialect::Hookwire).unwrap();
        assert_eq!(jcli.tool_arguments, Some(json!({"path":"b"})));
    }

    #[test]
    fn json_is_found_in_model_prose() {
        assert_eq!(
            json_in_text("```json\n{\"action\":\"skip\"}\n```").unwrap(),
            json!({"action":"skip"})
        );
        assert_eq!(
            json_in_text("Sure: {\"a\": 1} done").unwrap(),
            json!({"a":1})
        );
        assert!(json_in_text("no json here").is_err());
    }
}
