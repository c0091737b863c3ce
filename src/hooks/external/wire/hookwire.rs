//! The hookwire dialect and the OpenHarness format's (the jcli format's event names are
//! hookwire's own; the OpenHarness format adds aliases and declared capabilities), whole: the
//! input JSON (the jcli format's fields plus the OpenHarness envelope, unset fields omitted),
//! the answer in both vocabularies, and the exit-code contract of a command hook: exit 0 →
//! stdout is the result (empty or `{}` = no change); exit 2 → block, stderr is the reason;
//! anything else → an error (logged; what the chain does then is the hook's `on_error`).

use std::collections::BTreeSet;

use serde_json::Value;

use super::payload::native::{
    Action, CompactionMetadata, MessagesContext, ModelRequest, ModelResponse, NativeChanges,
    NativeInput, NativeOutput, OpenHarnessCompaction, OutputMessage, OutputRole, ToolArguments,
};
use super::payload::PlainMessage;
use super::{answer_of, HookAnswerError};
use crate::hooks::external::hook::{
    Control, Dialect, Envelope, Event, EventState, HookDef, HookOutput, RunResult, TRIGGER_TYPE,
};
use crate::process::CommandRun;
use crate::types::history::HistoryMessage;
use crate::types::{Message, Role};

/// Messages as a hook sees them: role and text.
fn plain_messages(messages: &[Message]) -> Vec<PlainMessage> {
    messages.iter().map(plain_message).collect()
}

fn plain_message(message: &Message) -> PlainMessage {
    PlainMessage::of(message)
}

/// The input JSON for one hook.
pub(super) fn input(
    event: Event,
    event_name: &str,
    dialect: Dialect,
    envelope: &Envelope,
    state: &EventState,
) -> Value {
    let input = native(event, event_name, dialect, envelope, state);
    // Serializing these types cannot fail: no maps with non-string keys, no custom impls.
    serde_json::to_value(input).unwrap_or(Value::Null)
}

/// The input for one hook of the native dialects, as a value.
fn native(
    event: Event,
    event_name: &str,
    dialect: Dialect,
    envelope: &Envelope,
    state: &EventState,
) -> NativeInput {
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
    NativeInput {
        event: event.as_str(),
        hook_event_name: event_name.to_string(),
        session_id: envelope.session_id.clone(),
        run_id: envelope.run_id.clone(),
        cwd: envelope.cwd.clone(),
        workspace_id: envelope.workspace_id.clone(),
        agent_name: "hookwire",
        effective_agent_name: "hookwire",
        model: envelope.model.clone(),
        user: envelope.person.clone(),
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
        summary_message: state
            .summary
            .clone()
            .map(|content| PlainMessage::text("system", content)),
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
    }
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
            parse_output(value, hook.capabilities.as_ref(), rules)
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

/// Reads a hookwire-dialect or OpenHarness-format hook's JSON answer by the rules of `rules`
/// (the dialect whose rule holds at the event). `null` and `{}` mean no change.
pub(super) fn parse_output(
    value: Value,
    capabilities: Option<&BTreeSet<String>>,
    rules: Dialect,
) -> Result<HookOutput, HookAnswerError> {
    match answer_of::<NativeOutput>(value)? {
        Some(answer) => answer.into_output(capabilities, rules),
        None => Ok(HookOutput::default()),
    }
}

impl NativeOutput {
    /// The rules of both vocabularies. A change needs a declared capability, except a top-level
    /// (jcli format) change of a hookwire-dialect hook that declares none; a `hookSpecificOutput`
    /// patch (the OpenHarness format) always needs one, and wins over the top level. A change
    /// outside them is refused (logged); so are keys this shape does not have.
    fn into_output(
        self,
        capabilities: Option<&BTreeSet<String>>,
        rules: Dialect,
    ) -> Result<HookOutput, HookAnswerError> {
        let mut out = HookOutput::default();
        let top_level = |field: &str| match capabilities {
            Some(set) => set.contains(field),
            None => rules == Dialect::Hookwire,
        };
        let patched = |field: &str| capabilities.is_some_and(|set| set.contains(field));
        out.unknown
            .extend(self.extra.into_iter().map(|(key, _)| key));
        apply_changes(self.changes, &top_level, &mut out)?;
        if let Some(patch) = self.hook_specific_output {
            out.unknown
                .extend(patch.extra.into_iter().map(|(key, _)| key));
            apply_changes(patch.changes, &patched, &mut out)?;
        }
        out.retry_feedback = self.retry_feedback;
        out.system_message = self.system_message.or(self.system_message_camel);
        out.suppress_output = self.suppress_output.unwrap_or(false);
        let reason = self.stop_reason.or(self.reason).unwrap_or_default();
        let halt = self.abort == Some(true) || self.keep_going == Some(false);
        out.control = match self.action {
            Some(Action::Stop) => Some(Control::Stop(reason)),
            Some(Action::Skip) => Some(Control::Skip(reason)),
            Some(Action::Ask) => Some(Control::Ask(reason)),
            // Legacy `abort: true` (seed 001) and `continue: false` stop; a `block` decision
            // blocks what the event guards.
            Some(Action::Continue) | None if halt => Some(Control::Stop(reason)),
            Some(Action::Continue) | None if self.decision.as_deref() == Some("block") => {
                Some(Control::Block(reason))
            }
            Some(Action::Continue) | None => None,
        };
        Ok(out)
    }
}

/// A change field the hook may set (`allowed`), or `None`; one it may not is noted as refused.
struct Gate<'a> {
    allowed: &'a dyn Fn(&str) -> bool,
    refused: Vec<String>,
}

impl Gate<'_> {
    fn pass<T>(&mut self, value: Option<T>, field: &str) -> Option<T> {
        let value = value?;
        if (self.allowed)(field) {
            Some(value)
        } else {
            self.refused.push(field.to_string());
            None
        }
    }
}

/// Applies one level's change fields (the top level or a patch) to `out`, under the names of
/// their capabilities (`tool_input` is `tool_arguments`, `tool_output` is `tool_result`, a
/// summary is a `messages` change). Of two spellings of one field the one later in key order
/// wins, as it always has.
fn apply_changes(
    changes: NativeChanges,
    allowed: &dyn Fn(&str) -> bool,
    out: &mut HookOutput,
) -> Result<(), HookAnswerError> {
    let mut gate = Gate {
        allowed,
        refused: Vec::new(),
    };
    if let Some(text) = gate.pass(changes.additional_context, "additional_context") {
        out.additional_context = Some(text);
    }
    if let Some(text) = gate.pass(changes.assistant_output, "assistant_output") {
        out.assistant_output = Some(text);
    }
    if let Some(list) = gate.pass(changes.inject_messages, "inject_messages") {
        out.inject_messages = messages(list);
    }
    // Read as the history is wherever it stands, as its schema says (the gate only decides
    // whether it applies).
    let list = changes.messages.map(history_messages).transpose()?;
    if let Some(list) = gate.pass(list, "messages") {
        out.messages = Some(list);
    }
    for summary in [changes.summary, changes.summary_text] {
        if let Some(text) = gate.pass(summary, "messages") {
            out.summary = Some(text);
        }
    }
    if let Some(text) = gate.pass(changes.system_prompt, "system_prompt") {
        out.system_prompt = Some(text);
    }
    let arguments = [
        ("tool_arguments", changes.tool_arguments),
        ("tool_input", changes.tool_input),
    ];
    for (key, value) in arguments {
        if let Some(value) = gate.pass(value, "tool_arguments") {
            out.tool_arguments = Some(tool_arguments(key, value)?);
        }
    }
    if let Some(text) = gate.pass(changes.tool_error, "tool_error") {
        out.tool_error = Some(text);
    }
    for value in [changes.tool_output, changes.tool_result] {
        if let Some(value) = gate.pass(value, "tool_result") {
            out.tool_result = Some(match value {
                Value::String(text) => text,
                other => other.to_string(),
            });
        }
    }
    if let Some(text) = gate.pass(changes.user_input, "user_input") {
        out.user_input = Some(text);
    }
    out.refused.extend(gate.refused);
    Ok(())
}

/// New arguments: the object, or the JSON its text holds.
fn tool_arguments(key: &str, arguments: ToolArguments) -> Result<Value, HookAnswerError> {
    match arguments {
        ToolArguments::Object(object) => Ok(Value::Object(object)),
        ToolArguments::Text(text) => serde_json::from_str(&text)
            .map_err(|error| format!("`{key}` is not JSON: {error}").into()),
    }
}

/// A `messages` answer, read as the history is: each role's rules, every tool call answered
/// (the list may end with calls still open, as a chat's does while its tools run). A hook's
/// message is never a trusted one: a `_hook` mark is dropped.
fn history_messages(list: Vec<HistoryMessage>) -> Result<Vec<Message>, HookAnswerError> {
    crate::types::history::validate(&list, usize::MAX, true)
        .map_err(|error| format!("`messages`: {error}"))?;
    Ok(list
        .into_iter()
        .map(|message| Message {
            hook: None,
            ..message.into_message()
        })
        .collect())
}

fn messages(list: Vec<OutputMessage>) -> Vec<Message> {
    list.into_iter()
        .map(|message| {
            let role = match message.role {
                OutputRole::System => Role::System,
                OutputRole::User => Role::User,
                OutputRole::Assistant => Role::Assistant,
            };
            Message::new(role, message.content)
        })
        .collect()
}

#[cfg(test)]
mod tests;
