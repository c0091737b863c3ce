//! The hookwire dialect and the OpenHarness format's (the jcli format's event names are
//! hookwire's own; the OpenHarness format adds aliases and declared capabilities), whole: the
//! input JSON (the jcli format's fields plus the OpenHarness envelope, unset fields omitted),
//! the answer in both vocabularies, and the exit-code contract of a command hook: exit 0 →
//! stdout is the result (empty or `{}` = no change); exit 2 → block, stderr is the reason;
//! anything else → an error (logged; what the chain does then is the hook's `on_error`).

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::HookAnswerError;
use crate::hooks::external::config::HookDef;
use crate::hooks::external::event::{Dialect, Event, CAPABILITIES, TRIGGER_TYPE};
use crate::hooks::external::payload::native::{
    CompactionMetadata, MessagesContext, ModelRequest, ModelResponse, NativeInput,
    OpenHarnessCompaction,
};
use crate::hooks::external::payload::PlainMessage;
use crate::hooks::external::values::{Control, Envelope, EventState, HookOutput, RunResult};
use crate::process::CommandRun;
use crate::types::{Message, Role};

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
pub(super) fn input(
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

/// The exit-code contract of hookwire's command hooks (the module doc).
pub(super) fn command_result(run: CommandRun) -> RunResult {
    if run.timed_out {
        return RunResult::Timeout;
    }
    let stderr = run.stderr.trim();
    match run.exit_code {
        Some(0) => {
            let stdout = run.stdout.trim();
            if stdout.is_empty() {
                return RunResult::Output(Value::Null);
            }
            match serde_json::from_str(stdout) {
                Ok(value) => RunResult::Output(value),
                Err(error) => RunResult::Error(format!(
                    "stdout is not JSON ({error}): {:?}",
                    run.stdout.chars().take(200).collect::<String>()
                )),
            }
        }
        Some(2) if stderr.is_empty() => RunResult::Block("blocked by a hook".into()),
        Some(2) => RunResult::Block(stderr.to_string()),
        Some(code) => RunResult::Error(format!(
            "exit code {code}: {}",
            stderr.chars().take(300).collect::<String>()
        )),
        None => RunResult::Error("killed by a signal".into()),
    }
}

/// What a prompt or agent hook of the hookwire dialect answers.
const JSON_INSTRUCTION: &str = "\n\nReply with exactly one JSON object and nothing else. Use only the fields you need: \
\"action\" (\"stop\" or \"skip\"), \"reason\", \"retry_feedback\", \"system_message\", \"additional_context\", \
\"user_input\", \"tool_arguments\", \"tool_result\", \"assistant_output\". Reply {} for no change.";

/// A prompt or agent hook's task: the template filled from the input, the input itself when
/// `envelope`, and the JSON answer it must give.
pub(super) fn task(prompt: &str, envelope: bool, input: &Value) -> String {
    let filled = render(prompt, input);
    if envelope {
        format!("{filled}\n\nThe event:\n{input}{JSON_INSTRUCTION}")
    } else {
        format!("{filled}{JSON_INSTRUCTION}")
    }
}

/// Fills `{{variable}}` from the input JSON (strings as they are, other values as JSON).
pub(super) fn render(template: &str, input: &Value) -> String {
    let mut out = template.to_string();
    for key in [
        "event",
        "user_input",
        "tool_name",
        "tool_arguments",
        "tool_result",
        "assistant_output",
        "model",
        "cwd",
        "tool_error",
        "session_id",
    ] {
        let placeholder = format!("{{{{{key}}}}}");
        if out.contains(&placeholder) {
            let value = match input.get(key) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            out = out.replace(&placeholder, &value);
        }
    }
    out
}

/// Reads a hookwire-dialect answer: its JSON by [`parse_output`], exit 2 as a block.
pub(super) fn read(hook: &HookDef, answer: RunResult) -> Result<HookOutput, HookAnswerError> {
    match answer {
        RunResult::Output(value) => {
            // At the OpenHarness format's own events its rule holds: rewrites are declared.
            let rules = if hook.event.is_openharness_own() {
                Dialect::OpenHarness
            } else {
                hook.dialect
            };
            parse_output(&value, hook.capabilities.as_ref(), rules)
        }
        RunResult::Block(reason) => Ok(HookOutput {
            control: Some(Control::Block(reason)),
            ..HookOutput::default()
        }),
        RunResult::Text(text) => Err(format!("stdout is not JSON: {text:?}").into()),
        RunResult::Error(error) => Err(error.into()),
        RunResult::Timeout => Err("timed out".into()),
    }
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
pub(super) fn parse_output(
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

#[cfg(test)]
mod tests;
