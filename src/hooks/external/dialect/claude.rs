//! Claude Code's dialect (its hooks reference, field by field; docs/protocol.md §9).
//!
//! Input: `session_id`, `transcript_path`, `cwd`, `permission_mode`, `hook_event_name` and the
//! event's own fields, tools under Claude Code's names and argument shapes ([`super::tools`]).
//!
//! Exit codes: 0 = stdout is the answer (JSON when it looks like an object, else plain text);
//! 2 = block, the reason is the answer's `reason` if its stdout is JSON, else stderr; any other
//! code = a failure, unless stdout is JSON (then that decides, as in Claude Code).
//!
//! What "block" means depends on the event (exit 2 and `decision: "block"` alike):
//! `PreToolUse` skips the tool (the reason is its result), `PostToolUse(Failure)` appends the
//! reason to the result and the loop goes on, `UserPromptSubmit` ends the chat with
//! `hook_blocked`, `Stop` sends the model back with the reason (bounded by `max_retries`),
//! `PreCompact` skips the compaction. `permissionDecision: "ask"` at `PreToolUse` makes the
//! call wait for the person's approval (docs/protocol.md §11).

use std::path::Path;

use serde_json::Value;

use super::{answer_object, appended, read_common, string, tools, HookAnswerError};
use crate::hooks::external::config::{Handler, HookDef};
use crate::hooks::external::event::{Dialect, Event};
use crate::hooks::external::payload::claude::{ClaudeEvent, ClaudeInput, ClaudeTool};
use crate::hooks::external::values::{Control, Envelope, EventState, HookOutput, RunResult};
use crate::process::CommandRun;

/// The input JSON of a Claude-dialect hook.
pub(super) fn input(
    hook: &HookDef,
    event: Event,
    envelope: &Envelope,
    state: &EventState,
) -> Value {
    let root = Path::new(&envelope.cwd);
    let tool = state.tool_name.as_deref().unwrap_or_default();
    let arguments = state.tool_arguments.clone().unwrap_or(Value::Null);
    let tool_fields = || ClaudeTool {
        tool_name: tools::name_for(Dialect::Claude, tool).to_string(),
        tool_input: tools::input_for(Dialect::Claude, tool, &arguments, root),
        tool_use_id: state.tool_call_id.clone().unwrap_or_default(),
    };
    let text = |value: &Option<String>| value.clone().unwrap_or_default();
    let fields = match event {
        Event::PreToolExecution => ClaudeEvent::Tool(tool_fields()),
        Event::PostToolExecution => ClaudeEvent::ToolDone {
            tool: tool_fields(),
            tool_response: tools::claude_response(
                tool,
                &arguments,
                state.tool_result.as_deref().unwrap_or_default(),
                root,
            ),
        },
        Event::PostToolExecutionFailure => ClaudeEvent::ToolFailed {
            tool: tool_fields(),
            error: text(&state.tool_error),
            is_interrupt: false,
        },
        Event::PreSendMessage => ClaudeEvent::Prompt {
            prompt: text(&state.user_input),
        },
        Event::Stop => ClaudeEvent::Stop {
            stop_hook_active: envelope.stop_hook_active,
            last_assistant_message: text(&state.assistant_output),
        },
        Event::SessionStart => ClaudeEvent::SessionStart {
            // Fired again after a compaction, as Claude Code does (docs/protocol.md §13).
            source: if state.compaction.is_some() {
                "compact"
            } else {
                "startup"
            },
            model: envelope.model.clone(),
        },
        Event::SessionEnd => ClaudeEvent::SessionEnd { reason: "other" },
        Event::PreAutoCompact => ClaudeEvent::PreCompact {
            trigger: trigger(state).to_string(),
            custom_instructions: None,
        },
        Event::PostAutoCompact => ClaudeEvent::PostCompact {
            trigger: trigger(state).to_string(),
            compact_summary: text(&state.summary),
        },
        Event::Notification => ClaudeEvent::Notification {
            notification_type: "permission_prompt",
            message: "a tool call waits for approval",
        },
        _ => ClaudeEvent::Bare {},
    };
    let input = ClaudeInput {
        session_id: envelope.session_id.clone(),
        transcript_path: envelope.transcript_path.clone().unwrap_or_default(),
        cwd: envelope.cwd.clone(),
        permission_mode: "default",
        hook_event_name: hook.event_name.clone(),
        event: fields,
    };
    // Serializing these types cannot fail: no maps with non-string keys, no custom impls.
    serde_json::to_value(input).unwrap_or(Value::Null)
}

/// What a Claude-dialect prompt or agent hook answers (Claude Code's own contract).
const CLAUDE_JSON_INSTRUCTION: &str = "\n\nReply with exactly one JSON object and nothing else: \
{\"ok\": true} to let it go on, or {\"ok\": false, \"reason\": \"<why>\"} to block it.";

/// A prompt or agent hook's task: `$ARGUMENTS` in the prompt replaced by the input (the input
/// appended when it has none), and the answer Claude Code's contract asks for:
/// `{"ok", "reason"}`.
pub(super) fn task(prompt: &str, input: &Value) -> String {
    let filled = if prompt.contains("$ARGUMENTS") {
        prompt.replace("$ARGUMENTS", &input.to_string())
    } else {
        format!("{prompt}\n\nThe event:\n{input}")
    };
    format!("{filled}{CLAUDE_JSON_INSTRUCTION}")
}

/// Claude Code's exit-code contract (the module doc).
pub(super) fn command_result(run: CommandRun) -> RunResult {
    if run.timed_out {
        return RunResult::Timeout;
    }
    let stdout = run.stdout.trim();
    let stderr = run.stderr.trim();
    let json = (stdout.starts_with('{') && stdout.ends_with('}'))
        .then(|| serde_json::from_str::<Value>(stdout).ok())
        .flatten();
    match run.exit_code {
        Some(0) if stdout.is_empty() => RunResult::Output(Value::Null),
        Some(0) => match json {
            Some(value) => RunResult::Output(value),
            None if stdout.starts_with('{') => {
                RunResult::Error(format!("stdout is not valid JSON: {:?}", short(stdout)))
            }
            None => RunResult::Text(stdout.to_string()),
        },
        Some(2) => {
            let reason = json
                .as_ref()
                .and_then(|value| value.get("reason"))
                .and_then(Value::as_str)
                .filter(|reason| !reason.trim().is_empty())
                .map(str::to_string);
            let reason = reason.unwrap_or_else(|| stderr.to_string());
            RunResult::Block(if reason.is_empty() {
                "blocked by a hook".into()
            } else {
                reason
            })
        }
        Some(_) if json.is_some() => RunResult::Output(json.unwrap_or_default()),
        Some(code) => RunResult::Error(format!("exit code {code}: {}", short(stderr))),
        None => RunResult::Error("killed by a signal".into()),
    }
}

/// A compaction's `trigger`: `auto` or `manual`.
fn trigger(state: &EventState) -> &str {
    state
        .compaction
        .as_ref()
        .map_or("auto", |info| info.trigger.as_str())
}

fn short(text: &str) -> String {
    text.chars().take(300).collect()
}

/// What blocking means at `event` (exit 2, `decision: "block"`, a deny, `ok: false`).
fn block(hook: &HookDef, event: Event, reason: String, state: &EventState, out: &mut HookOutput) {
    match event {
        Event::PreToolExecution | Event::PreSendMessage | Event::PreAutoCompact => {
            out.control = Some(Control::Block(reason))
        }
        Event::PostToolExecution => {
            out.tool_result = Some(appended(
                out.tool_result.as_deref().or(state.tool_result.as_deref()),
                &reason,
            ))
        }
        Event::PostToolExecutionFailure => {
            out.tool_error = Some(appended(
                out.tool_error.as_deref().or(state.tool_error.as_deref()),
                &reason,
            ))
        }
        Event::Stop => {
            out.retry_feedback = Some(if reason.is_empty() {
                format!("hook {} asked to go on", hook.name)
            } else {
                reason
            })
        }
        _ => tracing::info!(
            hook = %hook.name,
            event = %hook.event_name,
            %reason,
            "a Claude Code hook blocked where Claude Code only shows the reason to the person"
        ),
    }
}

/// The `hookSpecificOutput` keys Claude Code defines at each event (those hookwire acts on).
fn specific_keys(event: Event) -> &'static [&'static str] {
    match event {
        Event::PreToolExecution => &[
            "hookEventName",
            "permissionDecision",
            "permissionDecisionReason",
            "updatedInput",
            "additionalContext",
        ],
        Event::PostToolExecution => &["hookEventName", "additionalContext", "updatedToolOutput"],
        Event::PreSendMessage
        | Event::PostToolExecutionFailure
        | Event::Stop
        | Event::SessionStart => &["hookEventName", "additionalContext"],
        _ => &["hookEventName"],
    }
}

/// The top-level keys of every answer (`ok`, `reason`, `impossible`: a prompt or agent hook's).
const UNIVERSAL: [&str; 10] = [
    "continue",
    "stopReason",
    "suppressOutput",
    "systemMessage",
    "decision",
    "reason",
    "hookSpecificOutput",
    "additionalContext",
    "ok",
    "impossible",
];

/// Reads a Claude-dialect answer (the module doc).
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
            block(hook, event, reason, state, &mut out);
            return Ok(out);
        }
        RunResult::Text(text) => {
            match event {
                Event::PreSendMessage | Event::SessionStart => out.chat_context.push(text),
                _ => {
                    tracing::debug!(hook = %hook.name, "plain stdout of a Claude Code hook (only UserPromptSubmit and SessionStart use it)")
                }
            }
            return Ok(out);
        }
        other => match answer_object(other)? {
            Some(object) => object,
            None => return Ok(out),
        },
    };
    let specific = read_common(&object, &UNIVERSAL, specific_keys(event), &mut out)?;
    if let Some(name) = string(&specific, "hookEventName")? {
        if name != hook.event_name {
            tracing::warn!(hook = %hook.name, configured = %hook.event_name, answered = %name, "hookSpecificOutput.hookEventName names another event");
        }
    }
    let reason = string(&object, "reason")?.unwrap_or_default();
    // `continue: false` ends everything and overrides the event's decisions.
    if object.get("continue").and_then(Value::as_bool) == Some(false) {
        let why = string(&object, "stopReason")?.unwrap_or_default();
        match event {
            // The chat is ending anyway: no going on, whatever else the answer says.
            Event::Stop | Event::SessionStart | Event::SessionEnd | Event::Notification => {}
            _ => out.control = Some(Control::Stop(why)),
        }
        return Ok(out);
    }
    let context = string(&specific, "additionalContext")?.or(string(&object, "additionalContext")?);
    let decision = string(&object, "decision")?;
    // A prompt or agent hook answers `{"ok": false, "reason": …}` to block.
    let refused = object.get("ok").and_then(Value::as_bool) == Some(false)
        && matches!(hook.handler, Handler::Llm { .. } | Handler::Agent { .. });
    match event {
        Event::PreToolExecution => {
            let permission =
                string(&specific, "permissionDecision")?.or(match decision.as_deref() {
                    Some("approve") => Some("allow".into()),
                    Some("block") => Some("deny".into()),
                    _ => None,
                });
            let why = string(&specific, "permissionDecisionReason")?
                .filter(|why| !why.is_empty())
                .unwrap_or(reason.clone());
            let why = if why.is_empty() {
                format!("denied by hook {}", hook.name)
            } else {
                why
            };
            match permission.as_deref() {
                Some("deny") => block(hook, event, why, state, &mut out),
                Some("ask") if event == Event::PreToolExecution => {
                    out.control = Some(Control::Ask(why))
                }
                Some("ask") => block(hook, event, why, state, &mut out),
                // Claude Code shows an allow's reason to the person (not to the model).
                Some("allow") => {
                    let said = string(&specific, "permissionDecisionReason")?
                        .filter(|why| !why.is_empty())
                        .or_else(|| (!reason.is_empty()).then(|| reason.clone()));
                    if let Some(said) = said {
                        out.system_message = Some(match out.system_message.take() {
                            Some(message) => format!("{message}\n{said}"),
                            None => said,
                        });
                    }
                }
                None => {}
                Some("defer") => out.unknown.push("permissionDecision: defer".into()),
                Some(other) => {
                    return Err(
                        format!("permissionDecision {other:?} must be allow, deny or ask").into(),
                    )
                }
            }
            if refused {
                block(hook, event, why_or(&reason, hook), state, &mut out);
            }
            if let Some(updated) = specific.get("updatedInput").filter(|v| !v.is_null()) {
                if !updated.is_object() {
                    return Err("`updatedInput` must be an object".into());
                }
                let tool = state.tool_name.as_deref().unwrap_or_default();
                out.tool_arguments = Some(tools::input_from(Dialect::Claude, tool, updated, root));
            }
            out.chat_context.extend(context);
        }
        Event::PostToolExecution
        | Event::PostToolExecutionFailure
        | Event::PreSendMessage
        | Event::PreAutoCompact => {
            if event == Event::PostToolExecution {
                if let Some(updated) = specific.get("updatedToolOutput").filter(|v| !v.is_null()) {
                    out.tool_result = Some(match updated {
                        Value::String(text) => text.clone(),
                        Value::Object(object) => object
                            .get("file")
                            .and_then(|file| file.get("content"))
                            .or(object.get("content"))
                            .and_then(Value::as_str)
                            .map(str::to_string)
                            .unwrap_or_else(|| updated.to_string()),
                        other => other.to_string(),
                    });
                }
            }
            if decision.as_deref() == Some("block") || refused {
                block(hook, event, why_or(&reason, hook), state, &mut out);
            } else if let Some(other) = decision {
                out.unknown.push(format!("decision: {other}"));
            }
            out.chat_context.extend(context);
        }
        Event::Stop => {
            if decision.as_deref() == Some("block") || refused {
                block(hook, event, reason, state, &mut out);
            } else if let Some(context) = context {
                // Claude Code goes on with it as "Stop hook feedback".
                out.retry_feedback = Some(context);
            }
        }
        Event::SessionStart => out.chat_context.extend(context),
        _ => {
            out.unknown
                .extend(decision.map(|d| format!("decision: {d}")));
            out.unknown
                .extend(context.map(|_| "additionalContext".to_string()));
        }
    }
    Ok(out)
}

fn why_or(reason: &str, hook: &HookDef) -> String {
    if reason.is_empty() {
        format!("blocked by hook {}", hook.name)
    } else {
        reason.to_string()
    }
}
