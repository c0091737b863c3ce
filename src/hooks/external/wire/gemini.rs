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

use super::payload::gemini::{
    Candidate, CandidateContent, GeminiEvent, GeminiInput, GeminiOutput, GeminiSpecific,
    GeminiTool, LlmRequest, LlmResponse, NewLlmResponse, NewMessage, NewPart, NewRole, ToolConfig,
    ToolResponse,
};
use super::payload::PlainMessage;
use super::{answer_of, appended, tools, undefined_keys, HookAnswerError, Reading};
use crate::hooks::external::hook::{
    Control, Dialect, Envelope, Event, EventState, HookDef, HookOutput, RunResult,
};
use crate::process::CommandRun;
use crate::types::{Message, Role};

/// Messages in Gemini's text-only `llm_request` shape (tool calls and results are left out, as
/// Gemini CLI leaves out non-text parts).
fn plain_messages(messages: &[Message]) -> Vec<PlainMessage> {
    messages
        .iter()
        .filter(|m| m.role != Role::Tool && !m.content.is_empty())
        .map(|m| {
            let role = match m.role {
                Role::Assistant => "model",
                Role::System => "system",
                _ => "user",
            };
            PlainMessage::text(role, m.content.clone())
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

/// What a deny means at the event (exit 2, `decision: "deny"`/`"block"`).
fn deny(at: &Reading<'_>, reason: String, out: &mut HookOutput) {
    let hook = at.hook;
    let reason = if reason.is_empty() {
        format!("blocked by hook {}", hook.name)
    } else {
        reason
    };
    match at.event {
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

/// Reads a Gemini-dialect answer (the module doc).
pub(super) fn read(at: &Reading<'_>, answer: RunResult) -> Result<HookOutput, HookAnswerError> {
    let mut out = HookOutput::default();
    match answer {
        RunResult::Block(reason) => deny(at, reason, &mut out),
        RunResult::Text(text) => out.system_message = Some(text),
        RunResult::Output(value) => {
            if let Some(answer) = answer_of::<GeminiOutput>(value)? {
                return Ok(answer.into_output(at));
            }
        }
        RunResult::Error(error) => return Err(error.into()),
        RunResult::Timeout => return Err("timed out".into()),
    }
    Ok(out)
}

impl GeminiSpecific {
    /// The keys the answer gave.
    fn keys(&self) -> impl Iterator<Item = &str> {
        let typed = [
            ("hookEventName", self.hook_event_name.is_some()),
            ("tool_input", self.tool_input.is_some()),
            ("tool_output", self.tool_output.is_some()),
            ("additionalContext", self.additional_context.is_some()),
            ("llm_request", self.llm_request.is_some()),
            ("llm_response", self.llm_response.is_some()),
        ];
        typed
            .into_iter()
            .filter_map(|(key, given)| given.then_some(key))
            .chain(self.extra.keys().map(String::as_str))
    }
}

impl GeminiOutput {
    /// Gemini CLI's rules for an answer at `at.event` (the module doc).
    fn into_output(self, at: &Reading<'_>) -> HookOutput {
        let mut specific = self.hook_specific_output.unwrap_or_default();
        let mut out = HookOutput {
            system_message: self.system_message,
            suppress_output: self.suppress_output == Some(true),
            ..HookOutput::default()
        };
        out.unknown
            .extend(self.extra.into_iter().map(|(key, _)| key));
        out.unknown
            .extend(undefined_keys(specific.keys(), specific_keys(at.event)));
        let reason = self.reason.unwrap_or_default();
        if self.keep_going == Some(false) {
            match at.event {
                Event::Stop | Event::SessionStart | Event::SessionEnd | Event::Notification => {}
                _ => out.control = Some(Control::Stop(self.stop_reason.unwrap_or(reason))),
            }
            return out;
        }
        match self.decision.as_deref() {
            None | Some("allow" | "approve") => {}
            Some("deny" | "block") => deny(at, reason, &mut out),
            Some("ask") if at.event == Event::PreToolExecution => {
                out.control = Some(Control::Ask(if reason.is_empty() {
                    format!("hook {} asks for approval", at.hook.name)
                } else {
                    reason
                }))
            }
            Some(other) => out.unknown.push(format!("decision: {other}")),
        }
        let context = specific.additional_context.take();
        match at.event {
            Event::PreToolExecution => {
                if let Some(patch) = specific.tool_input {
                    out.tool_arguments = Some(merged_arguments(at, patch));
                }
            }
            Event::PostToolExecution | Event::PostToolExecutionFailure => {
                after_tool(at, specific.tool_output, context, &mut out)
            }
            Event::PreSendMessage => {
                if let Some(context) = context {
                    out.user_input = Some(appended(at.state.user_input.as_deref(), &context));
                }
            }
            Event::SessionStart => out.chat_context.extend(context),
            Event::PreLlmRequest => {
                if let Some(messages) = specific.llm_request.and_then(|request| request.messages) {
                    out.messages = Some(messages.into_iter().map(message).collect());
                }
            }
            Event::PostLlmResponse => {
                let text = specific.llm_response.map(response_text).unwrap_or_default();
                if !text.is_empty() {
                    out.assistant_output = Some(text);
                }
            }
            _ => {}
        }
        out
    }
}

/// `BeforeTool`'s `tool_input`: merged over the arguments as the hook saw them, then mapped back.
fn merged_arguments(at: &Reading<'_>, patch: Map<String, Value>) -> Value {
    let tool = at.state.tool_name.as_deref().unwrap_or_default();
    let arguments = at.state.tool_arguments.clone().unwrap_or(json!({}));
    let mut seen = tools::input_for(Dialect::Gemini, tool, &arguments, at.root);
    if let Some(seen) = seen.as_object_mut() {
        seen.extend(patch);
    }
    tools::input_from(Dialect::Gemini, tool, &seen, at.root)
}

/// `AfterTool`: a new result (unless a deny replaced it), then the context appended in
/// `<hook_context>`.
fn after_tool(
    at: &Reading<'_>,
    replaced: Option<String>,
    context: Option<String>,
    out: &mut HookOutput,
) {
    let failure = at.event == Event::PostToolExecutionFailure;
    let slot = if failure {
        &mut out.tool_error
    } else {
        &mut out.tool_result
    };
    if let Some(replaced) = replaced {
        if slot.is_none() {
            *slot = Some(replaced);
        }
    }
    if let Some(context) = context {
        let base = slot.clone().or(if failure {
            at.state.tool_error.clone()
        } else {
            at.state.tool_result.clone()
        });
        let escaped = context.replace('<', "&lt;").replace('>', "&gt;");
        *slot = Some(appended(
            base.as_deref(),
            &format!("<hook_context>{escaped}</hook_context>"),
        ));
    }
}

/// A message of `llm_request.messages`: `model` is the assistant.
fn message(message: NewMessage) -> Message {
    let role = match message.role {
        NewRole::System => Role::System,
        NewRole::User => Role::User,
        NewRole::Model | NewRole::Assistant => Role::Assistant,
    };
    Message::new(role, message.content)
}

/// The text of the first candidate's parts (strings or `{text}` parts).
fn response_text(response: NewLlmResponse) -> String {
    let first = response.candidates.unwrap_or_default().into_iter().next();
    let parts = first
        .and_then(|candidate| candidate.content)
        .and_then(|content| content.parts)
        .unwrap_or_default();
    parts
        .into_iter()
        .filter_map(|part| match part {
            NewPart::Text(text) => Some(text),
            NewPart::Part(part) => Some(part.text),
            NewPart::Other(_) => None,
        })
        .collect()
}
