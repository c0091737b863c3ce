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

use super::payload::claude::{
    ClaudeEvent, ClaudeInput, ClaudeOutput, ClaudeSpecific, ClaudeTool, FileOutput,
    PermissionDecision, UpdatedToolOutput,
};
use super::{answer_of, appended, tools, undefined_keys, HookAnswerError, Reading};
use crate::hooks::external::hook::{
    Control, Dialect, Envelope, Event, EventState, HookDef, HookOutput, RunResult,
};
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

/// What blocking means at the event (exit 2, `decision: "block"`, a deny, `ok: false`).
fn block(at: &Reading<'_>, reason: String, out: &mut HookOutput) {
    let (hook, state) = (at.hook, at.state);
    match at.event {
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

/// Reads a Claude-dialect answer (the module doc).
pub(super) fn read(at: &Reading<'_>, answer: RunResult) -> Result<HookOutput, HookAnswerError> {
    let mut out = HookOutput::default();
    match answer {
        RunResult::Block(reason) => block(at, reason, &mut out),
        RunResult::Text(text) => match at.event {
            Event::PreSendMessage | Event::SessionStart => out.chat_context.push(text),
            _ => {
                tracing::debug!(hook = %at.hook.name, "plain stdout of a Claude Code hook (only UserPromptSubmit and SessionStart use it)")
            }
        },
        RunResult::Output(value) => {
            if let Some(answer) = answer_of::<ClaudeOutput>(value)? {
                return Ok(answer.into_output(at));
            }
        }
        RunResult::Error(error) => return Err(error.into()),
        RunResult::Timeout => return Err("timed out".into()),
    }
    Ok(out)
}

impl ClaudeSpecific {
    /// The keys the answer gave.
    fn keys(&self) -> impl Iterator<Item = &str> {
        let typed = [
            ("hookEventName", self.hook_event_name.is_some()),
            ("permissionDecision", self.permission_decision.is_some()),
            (
                "permissionDecisionReason",
                self.permission_decision_reason.is_some(),
            ),
            ("updatedInput", self.updated_input.is_some()),
            ("updatedToolOutput", self.updated_tool_output.is_some()),
            ("additionalContext", self.additional_context.is_some()),
        ];
        typed
            .into_iter()
            .filter_map(|(key, given)| given.then_some(key))
            .chain(self.extra.keys().map(String::as_str))
    }
}

/// What the answer decides, once `continue: false` is out of the way.
struct Verdict {
    /// `decision` (`block`; `approve` too at `PreToolUse`).
    decision: Option<String>,
    reason: String,
    /// A prompt or agent hook answered `{"ok": false}`: it blocks.
    not_ok: bool,
    /// `additionalContext`, from `hookSpecificOutput` or the top level.
    context: Option<String>,
}

impl ClaudeOutput {
    /// Claude Code's rules for an answer at `at.event` (the module doc).
    fn into_output(self, at: &Reading<'_>) -> HookOutput {
        let hook = at.hook;
        let specific = self.hook_specific_output.unwrap_or_default();
        let mut out = HookOutput {
            system_message: self.system_message,
            suppress_output: self.suppress_output == Some(true),
            ..HookOutput::default()
        };
        out.unknown
            .extend(self.extra.into_iter().map(|(key, _)| key));
        out.unknown
            .extend(undefined_keys(specific.keys(), specific_keys(at.event)));
        if let Some(name) = &specific.hook_event_name {
            if *name != hook.event_name {
                tracing::warn!(hook = %hook.name, configured = %hook.event_name, answered = %name, "hookSpecificOutput.hookEventName names another event");
            }
        }
        // `continue: false` ends everything and overrides the event's decisions.
        if self.keep_going == Some(false) {
            match at.event {
                // The chat is ending anyway: no going on, whatever else the answer says.
                Event::Stop | Event::SessionStart | Event::SessionEnd | Event::Notification => {}
                _ => out.control = Some(Control::Stop(self.stop_reason.unwrap_or_default())),
            }
            return out;
        }
        let verdict = Verdict {
            decision: self.decision,
            reason: self.reason.unwrap_or_default(),
            not_ok: self.ok == Some(false) && hook.handler.calls_model(),
            context: specific
                .additional_context
                .clone()
                .or(self.additional_context),
        };
        match at.event {
            Event::PreToolExecution => pre_tool_use(at, specific, verdict, &mut out),
            Event::PostToolExecution
            | Event::PostToolExecutionFailure
            | Event::PreSendMessage
            | Event::PreAutoCompact => {
                if at.event == Event::PostToolExecution {
                    if let Some(updated) = specific.updated_tool_output {
                        out.tool_result = Some(tool_output_text(updated));
                    }
                }
                if verdict.decision.as_deref() == Some("block") || verdict.not_ok {
                    block(at, why_or(&verdict.reason, hook), &mut out);
                } else if let Some(other) = verdict.decision {
                    out.unknown.push(format!("decision: {other}"));
                }
                out.chat_context.extend(verdict.context);
            }
            Event::Stop => {
                if verdict.decision.as_deref() == Some("block") || verdict.not_ok {
                    block(at, verdict.reason, &mut out);
                } else if let Some(context) = verdict.context {
                    // Claude Code goes on with it as "Stop hook feedback".
                    out.retry_feedback = Some(context);
                }
            }
            Event::SessionStart => out.chat_context.extend(verdict.context),
            _ => {
                out.unknown
                    .extend(verdict.decision.map(|d| format!("decision: {d}")));
                out.unknown
                    .extend(verdict.context.map(|_| "additionalContext".to_string()));
            }
        }
        out
    }
}

/// `PreToolUse`: the permission decision (or the legacy `decision`), a prompt hook's verdict,
/// new arguments, context.
fn pre_tool_use(
    at: &Reading<'_>,
    specific: ClaudeSpecific,
    verdict: Verdict,
    out: &mut HookOutput,
) {
    let hook = at.hook;
    let permission = specific
        .permission_decision
        .or(match verdict.decision.as_deref() {
            Some("approve") => Some(PermissionDecision::Allow),
            Some("block") => Some(PermissionDecision::Deny),
            _ => None,
        });
    let given = specific
        .permission_decision_reason
        .filter(|why| !why.is_empty());
    let why = given.clone().unwrap_or_else(|| verdict.reason.clone());
    let why = if why.is_empty() {
        format!("denied by hook {}", hook.name)
    } else {
        why
    };
    match permission {
        Some(PermissionDecision::Deny) => block(at, why, out),
        Some(PermissionDecision::Ask) => out.control = Some(Control::Ask(why)),
        // Claude Code shows an allow's reason to the person (not to the model).
        Some(PermissionDecision::Allow) => {
            let said =
                given.or_else(|| (!verdict.reason.is_empty()).then(|| verdict.reason.clone()));
            if let Some(said) = said {
                out.system_message = Some(match out.system_message.take() {
                    Some(message) => format!("{message}\n{said}"),
                    None => said,
                });
            }
        }
        Some(PermissionDecision::Defer) => out.unknown.push("permissionDecision: defer".into()),
        None => {}
    }
    if verdict.not_ok {
        block(at, why_or(&verdict.reason, hook), out);
    }
    if let Some(updated) = specific.updated_input {
        let tool = at.state.tool_name.as_deref().unwrap_or_default();
        out.tool_arguments = Some(tools::input_from(
            Dialect::Claude,
            tool,
            &Value::Object(updated),
            at.root,
        ));
    }
    out.chat_context.extend(verdict.context);
}

/// A new tool result as text.
fn tool_output_text(updated: UpdatedToolOutput) -> String {
    match updated {
        UpdatedToolOutput::Text(text) => text,
        UpdatedToolOutput::File(FileOutput { file, .. }) => file.content,
        UpdatedToolOutput::Content(text) => text.content,
        UpdatedToolOutput::Other(value) => value.to_string(),
    }
}

fn why_or(reason: &str, hook: &HookDef) -> String {
    if reason.is_empty() {
        format!("blocked by hook {}", hook.name)
    } else {
        reason.to_string()
    }
}
