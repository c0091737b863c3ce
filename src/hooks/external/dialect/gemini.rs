//! Gemini CLI's dialect (its hooks reference, field by field; docs/protocol.md §9).
//!
//! Input: `session_id`, `transcript_path` (empty: hookwire keeps no Gemini-format recording),
//! `cwd`, `hook_event_name`, `timestamp` and the event's fields, tools under Gemini CLI's names
//! and argument shapes ([`super::tools`]); `llm_request` / `llm_response` in its text-only
//! shape.
//!
//! Exit codes (as documented): 0 = stdout is the answer (JSON, or plain text shown to the
//! person as a `systemMessage`); 2 = block with stderr as the reason; any other code = a
//! warning, the action goes on.
//!
//! Decisions: `decision` `deny`/`block` (and exit 2) stop the tool (`BeforeTool`: the reason is
//! its result), replace its result (`AfterTool`: "Tool result blocked: …"), block the turn
//! (`BeforeAgent`, `BeforeModel`, `AfterModel`) or send the model back (`AfterAgent`).
//! `hookSpecificOutput.tool_input` is merged over the arguments; `additionalContext` is
//! appended to the tool result (`AfterTool`, in `<hook_context>`), to the prompt
//! (`BeforeAgent`) or to the session's chats (`SessionStart`). `decision: "ask"` at `BeforeTool`
//! makes the call wait for the person's approval (docs/protocol.md §11).

use std::path::Path;

use serde_json::{json, Map, Value};

use super::{answer_object, appended, read_common, string, tools, HookAnswerError};
use crate::hooks::external::config::HookDef;
use crate::hooks::external::event::{Dialect, Event};
use crate::hooks::external::payload::gemini::{
    Candidate, CandidateContent, GeminiEvent, GeminiInput, GeminiTool, LlmRequest, LlmResponse,
    ToolConfig, ToolResponse,
};
use crate::hooks::external::payload::PlainMessage;
use crate::hooks::external::values::{Control, Envelope, EventState, HookOutput, RunResult};
use crate::process::CommandRun;
use crate::types::{Message, Role};

/// Messages in Gemini's text-only `llm_request` shape (tool calls and results are left out, as
/// Gemini CLI leaves out non-text parts).
fn plain_messages(messages: &[Message]) -> Vec<PlainMessage> {
    messages
        .iter()
        .filter(|m| m.role != Role::Tool && !m.content.is_empty())
        .map(|m| PlainMessage {
            role: match m.role {
                Role::Assistant => "model",
                Role::System => "system",
                _ => "user",
            },
            content: m.content.clone(),
        })
        .collect()
}

/// The model request as a Gemini-dialect hook sees it.
fn llm_request(envelope: &Envelope, state: &EventState) -> LlmRequest {
    LlmRequest {
        model: envelope.model.clone(),
        config: Map::new(),
        messages: state.messages.as_deref().map(plain_messages),
        tool_config: state.tools.as_ref().map(|offered| {
            let names: Vec<String> = offered
                .iter()
                .map(|name| tools::name_for(Dialect::Gemini, name).to_string())
                .collect();
            ToolConfig {
                mode: if names.is_empty() { "NONE" } else { "AUTO" },
                allowed_function_names: names,
            }
        }),
    }
}

/// The input JSON of a Gemini-dialect hook.
pub(super) fn input(
    hook: &HookDef,
    event: Event,
    envelope: &Envelope,
    state: &EventState,
) -> Value {
    let root = Path::new(&envelope.cwd);
    let tool = state.tool_name.as_deref().unwrap_or_default();
    let tool_fields = || {
        let arguments = state.tool_arguments.clone().unwrap_or(Value::Null);
        GeminiTool {
            tool_name: tools::name_for(Dialect::Gemini, tool).to_string(),
            tool_input: tools::input_for(Dialect::Gemini, tool, &arguments, root),
        }
    };
    let text = |value: &Option<String>| value.clone().unwrap_or_default();
    let fields = match event {
        Event::PreToolExecution => GeminiEvent::Tool(tool_fields()),
        Event::PostToolExecution => {
            let result = text(&state.tool_result);
            GeminiEvent::ToolDone {
                tool: tool_fields(),
                tool_response: ToolResponse {
                    llm_content: result.clone(),
                    return_display: result,
                    error: None,
                },
            }
        }
        Event::PostToolExecutionFailure => {
            let error = text(&state.tool_error);
            GeminiEvent::ToolDone {
                tool: tool_fields(),
                tool_response: ToolResponse {
                    llm_content: error.clone(),
                    return_display: error.clone(),
                    error: Some(error),
                },
            }
        }
        Event::PreSendMessage => GeminiEvent::Prompt {
            prompt: text(&state.user_input),
        },
        Event::Stop => GeminiEvent::Stop {
            prompt: text(&state.user_input),
            prompt_response: text(&state.assistant_output),
            stop_hook_active: envelope.stop_hook_active,
        },
        Event::PreLlmRequest => GeminiEvent::Model {
            llm_request: llm_request(envelope, state),
        },
        Event::PostLlmResponse => GeminiEvent::ModelDone {
            llm_request: llm_request(envelope, state),
            llm_response: LlmResponse {
                candidates: vec![Candidate {
                    content: CandidateContent {
                        role: "model",
                        parts: vec![text(&state.assistant_output)],
                    },
                    finish_reason: "STOP",
                }],
            },
        },
        Event::SessionStart => GeminiEvent::Session {
            source: Some("startup"),
            reason: None,
        },
        Event::SessionEnd => GeminiEvent::Session {
            source: None,
            reason: Some("exit"),
        },
        Event::PreAutoCompact => GeminiEvent::Compress {
            trigger: state
                .compaction
                .as_ref()
                .map_or("auto", |info| info.trigger.as_str())
                .to_string(),
        },
        Event::Notification => GeminiEvent::Notification {
            notification_type: "ToolPermission",
            message: "a tool call waits for approval",
            details: Map::new(),
        },
        _ => GeminiEvent::Bare {},
    };
    let input = GeminiInput {
        session_id: envelope.session_id.clone(),
        transcript_path: "",
        cwd: envelope.cwd.clone(),
        hook_event_name: hook.event_name.clone(),
        timestamp: super::timestamp(),
        event: fields,
    };
    // Serializing these types cannot fail: no maps with non-string keys, no custom impls.
    serde_json::to_value(input).unwrap_or(Value::Null)
}

/// Gemini CLI's exit-code contract (the module doc).
pub(super) fn command_result(run: CommandRun) -> RunResult {
    if run.timed_out {
        return RunResult::Timeout;
    }
    let stdout = run.stdout.trim();
    let stderr = run.stderr.trim();
    match run.exit_code {
        Some(0) if stdout.is_empty() => RunResult::Output(Value::Null),
        Some(0) => match serde_json::from_str::<Value>(stdout) {
            // A JSON string holding the answer (Gemini CLI reads it too).
            Ok(Value::String(inner)) => serde_json::from_str(&inner)
                .map(RunResult::Output)
                .unwrap_or(RunResult::Text(inner)),
            Ok(value) => RunResult::Output(value),
            Err(_) => RunResult::Text(stdout.to_string()),
        },
        Some(2) => RunResult::Block(if stderr.is_empty() {
            "blocked by a hook".into()
        } else {
            stderr.to_string()
        }),
        Some(code) => RunResult::Error(format!(
            "exit code {code} (a warning; the action goes on): {}",
            stderr.chars().take(300).collect::<String>()
        )),
        None => RunResult::Error("killed by a signal".into()),
    }
}

/// What a deny means at `event` (exit 2, `decision: "deny"`/`"block"`).
fn deny(hook: &HookDef, event: Event, reason: String, out: &mut HookOutput) {
    let reason = if reason.is_empty() {
        format!("blocked by hook {}", hook.name)
    } else {
        reason
    };
    match event {
        Event::PreToolExecution
        | Event::PreSendMessage
        | Event::PreLlmRequest
        | Event::PostLlmResponse => out.control = Some(Control::Block(reason)),
        Event::PostToolExecution => {
            out.tool_result = Some(format!("Tool result blocked: {reason}"))
        }
        Event::PostToolExecutionFailure => {
            out.tool_error = Some(format!("Tool result blocked: {reason}"))
        }
        Event::Stop => out.retry_feedback = Some(reason),
        _ => {
            tracing::info!(hook = %hook.name, event = %hook.event_name, %reason, "a Gemini CLI hook blocked at an event where blocking is advisory")
        }
    }
}

/// The `hookSpecificOutput` keys Gemini CLI defines at each event (those hookwire acts on).
fn specific_keys(event: Event) -> &'static [&'static str] {
    match event {
        Event::PreToolExecution => &["hookEventName", "tool_input"],
        Event::PostToolExecution | Event::PostToolExecutionFailure => {
            &["hookEventName", "additionalContext", "tool_output"]
        }
        Event::PreSendMessage | Event::SessionStart => &["hookEventName", "additionalContext"],
        Event::PreLlmRequest => &["hookEventName", "llm_request"],
        Event::PostLlmResponse => &["hookEventName", "llm_response"],
        _ => &["hookEventName"],
    }
}

const COMMON: [&str; 7] = [
    "systemMessage",
    "suppressOutput",
    "continue",
    "stopReason",
    "decision",
    "reason",
    "hookSpecificOutput",
];

/// Reads a Gemini-dialect answer (the module doc).
pub(super) fn read(
    hook: &HookDef,
    event: Event,
    answer: RunResult,
    state: &EventState,
    root: &Path,
) -> Result<HookOutput, HookAnswerError> {
    let mut out = HookOutput::default();
    let object = match answer {
        RunResult::Block(reason) => {
            deny(hook, event, reason, &mut out);
            return Ok(out);
        }
        RunResult::Text(text) => {
            out.system_message = Some(text);
            return Ok(out);
        }
        other => match answer_object(other)? {
            Some(object) => object,
            None => return Ok(out),
        },
    };
    let specific = read_common(&object, &COMMON, specific_keys(event), &mut out)?;
    let reason = string(&object, "reason")?.unwrap_or_default();
    if object.get("continue").and_then(Value::as_bool) == Some(false) {
        let why = string(&object, "stopReason")?.unwrap_or(reason);
        match event {
            Event::Stop | Event::SessionStart | Event::SessionEnd | Event::Notification => {}
            _ => out.control = Some(Control::Stop(why)),
        }
        return Ok(out);
    }
    match string(&object, "decision")?.as_deref() {
        None | Some("allow" | "approve") => {}
        Some("deny" | "block") => deny(hook, event, reason, &mut out),
        Some("ask") if event == Event::PreToolExecution => {
            out.control = Some(Control::Ask(if reason.is_empty() {
                format!("hook {} asks for approval", hook.name)
            } else {
                reason
            }))
        }
        Some(other) => out.unknown.push(format!("decision: {other}")),
    }
    let context = string(&specific, "additionalContext")?;
    let tool = state.tool_name.as_deref().unwrap_or_default();
    match event {
        Event::PreToolExecution => {
            if let Some(patch) = specific.get("tool_input").filter(|v| !v.is_null()) {
                let Some(patch) = patch.as_object() else {
                    return Err("`hookSpecificOutput.tool_input` must be an object".into());
                };
                // Merged over the arguments as the hook saw them, then mapped back.
                let arguments = state.tool_arguments.clone().unwrap_or(json!({}));
                let mut seen = tools::input_for(Dialect::Gemini, tool, &arguments, root);
                if let Some(seen) = seen.as_object_mut() {
                    seen.extend(patch.clone());
                }
                out.tool_arguments = Some(tools::input_from(Dialect::Gemini, tool, &seen, root));
            }
        }
        Event::PostToolExecution | Event::PostToolExecutionFailure => {
            let failure = event == Event::PostToolExecutionFailure;
            let slot = if failure {
                &mut out.tool_error
            } else {
                &mut out.tool_result
            };
            if let Some(replaced) = string(&specific, "tool_output")? {
                if slot.is_none() {
                    *slot = Some(replaced);
                }
            }
            if let Some(context) = context {
                let base = slot.clone().or(if failure {
                    state.tool_error.clone()
                } else {
                    state.tool_result.clone()
                });
                let escaped = context.replace('<', "&lt;").replace('>', "&gt;");
                *slot = Some(appended(
                    base.as_deref(),
                    &format!("<hook_context>{escaped}</hook_context>"),
                ));
            }
        }
        Event::PreSendMessage => {
            if let Some(context) = context {
                out.user_input = Some(appended(state.user_input.as_deref(), &context));
            }
        }
        Event::SessionStart => out.chat_context.extend(context),
        Event::PreLlmRequest => {
            if let Some(request) = specific.get("llm_request").and_then(Value::as_object) {
                if let Some(messages) = request.get("messages") {
                    out.messages = Some(parse_messages(messages)?);
                }
            }
        }
        Event::PostLlmResponse => {
            if let Some(response) = specific.get("llm_response") {
                let text = response_text(response);
                if !text.is_empty() {
                    out.assistant_output = Some(text);
                }
            }
        }
        _ => {}
    }
    Ok(out)
}

/// `llm_request.messages` given back: `model` is the assistant.
fn parse_messages(value: &Value) -> Result<Vec<Message>, String> {
    let items = value
        .as_array()
        .ok_or("`llm_request.messages` must be an array")?;
    items
        .iter()
        .map(|item| {
            let role = match item.get("role").and_then(Value::as_str) {
                Some("system") => Role::System,
                Some("user") => Role::User,
                Some("model" | "assistant") => Role::Assistant,
                other => return Err(format!("`llm_request.messages` role {other:?}")),
            };
            let content = item
                .get("content")
                .and_then(Value::as_str)
                .ok_or("`llm_request.messages[].content` must be a string")?;
            Ok(Message::new(role, content))
        })
        .collect()
}

/// The text of `llm_response.candidates[0].content.parts` (strings or `{text}` parts).
fn response_text(response: &Value) -> String {
    let parts = response
        .pointer("/candidates/0/content/parts")
        .and_then(Value::as_array);
    parts
        .into_iter()
        .flatten()
        .filter_map(|part| part.as_str().or_else(|| part.get("text")?.as_str()))
        .collect()
}
