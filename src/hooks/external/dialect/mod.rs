//! Hook dialects (docs/protocol.md §9): the translation layer at the edge of the chain. A hook's
//! [`Dialect`] is the spelling of the event it is configured under; for each dialect there is
//! one input builder ([`input`]), one exit-code contract for commands ([`command_result`]) and
//! one output reader ([`read`]), and everything they produce is the chain's one vocabulary
//! ([`EventState`] in, [`HookOutput`] out). No dialect has a runtime of its own.
//!
//! - hookwire and the OpenHarness format: [`hookwire`] and [`super::protocol`] (the jcli
//!   format's fields plus the OpenHarness envelope);
//! - Claude Code: [`claude`]; Gemini CLI: [`gemini`];
//! - the built-in tools under Claude Code's and Gemini CLI's names: [`tools`] (one table);
//! - Claude Code's `transcript_path`: [`transcript`].

mod claude;
mod gemini;
mod hookwire;

pub(crate) mod tools;
pub(crate) mod transcript;

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

use super::config::HookDef;
use super::event::{Dialect, Event};
use super::outcome::RunResult;
use super::protocol::{input_json, Envelope, EventState, HookAnswerError, HookOutput};
use crate::process::CommandRun;

/// The input JSON for `hook` at `event`.
pub(crate) fn input(
    hook: &HookDef,
    event: Event,
    envelope: &Envelope,
    state: &EventState,
) -> Value {
    match hook.dialect {
        Dialect::Hookwire | Dialect::OpenHarness => {
            input_json(event, &hook.event_name, hook.dialect, envelope, state)
        }
        Dialect::Claude => claude::input(hook, event, envelope, state),
        Dialect::Gemini => gemini::input(hook, event, envelope, state),
    }
}

/// Whether `hook` fires again at `session_start` after a compaction (with source `compact`):
/// only Claude Code's `SessionStart` hooks do; the other dialects have no such source.
pub(crate) fn fires_after_compaction(hook: &HookDef) -> bool {
    hook.dialect == Dialect::Claude
}

/// Whether a chain of `hooks` needs the chat's transcript: a Claude-dialect hook reads its
/// `transcript_path`.
pub(crate) fn needs_transcript(hooks: &[std::sync::Arc<HookDef>]) -> bool {
    hooks.iter().any(|hook| hook.dialect == Dialect::Claude)
}

/// The text a prompt or agent hook of `dialect` sends to the model: its `prompt` filled from
/// the input, the input itself when `envelope` (the OpenHarness format's `prompt` and every
/// `agent` hook: the runtime hands over the envelope), and the answer it must give.
pub(crate) fn task(dialect: Dialect, prompt: &str, envelope: bool, input: &Value) -> String {
    match dialect {
        Dialect::Claude => claude::task(prompt, input),
        _ => hookwire::task(prompt, envelope, input),
    }
}

/// How a command hook of `dialect` ended, by that dialect's exit-code contract.
pub(crate) fn command_result(dialect: Dialect, run: CommandRun) -> RunResult {
    match dialect {
        Dialect::Hookwire | Dialect::OpenHarness => hookwire::command_result(run),
        Dialect::Claude => claude::command_result(run),
        Dialect::Gemini => gemini::command_result(run),
    }
}

/// Reads a hook's answer (a [`RunResult`] that is not a failure) by its dialect: what it
/// changes, adds and decides at `event`, given the values it was called with. `Err` = the
/// answer is not one its dialect allows (the chain treats that as a failed run).
pub(crate) fn read(
    hook: &HookDef,
    event: Event,
    answer: RunResult,
    state: &EventState,
    envelope: &Envelope,
) -> Result<HookOutput, HookAnswerError> {
    let root = Path::new(&envelope.cwd);
    let mut output = match hook.dialect {
        Dialect::Hookwire | Dialect::OpenHarness => hookwire::read(hook, answer)?,
        Dialect::Claude => claude::read(hook, event, answer, state, root)?,
        Dialect::Gemini => gemini::read(hook, event, answer, state, root)?,
    };
    if let (true, Some(capabilities)) = (hook.dialect.is_foreign(), &hook.capabilities) {
        restrict(&mut output, capabilities);
    }
    Ok(output)
}

/// Drops the changes of a Claude Code or Gemini CLI hook that its declared capabilities leave
/// out (a hook file in YAML may declare them for any dialect); they are logged as refused.
fn restrict(output: &mut HookOutput, capabilities: &BTreeSet<String>) {
    fn keep<T>(
        slot: &mut Option<T>,
        field: &str,
        allowed: &BTreeSet<String>,
        refused: &mut Vec<String>,
    ) {
        if slot.is_some() && !allowed.contains(field) {
            *slot = None;
            refused.push(field.to_string());
        }
    }
    let refused = &mut output.refused;
    keep(&mut output.user_input, "user_input", capabilities, refused);
    keep(&mut output.messages, "messages", capabilities, refused);
    keep(
        &mut output.system_prompt,
        "system_prompt",
        capabilities,
        refused,
    );
    keep(
        &mut output.tool_arguments,
        "tool_arguments",
        capabilities,
        refused,
    );
    keep(
        &mut output.tool_result,
        "tool_result",
        capabilities,
        refused,
    );
    keep(&mut output.tool_error, "tool_error", capabilities, refused);
    keep(
        &mut output.assistant_output,
        "assistant_output",
        capabilities,
        refused,
    );
}

/// `text` after `base`, a blank line between them.
fn appended(base: Option<&str>, text: &str) -> String {
    match base {
        Some(base) if !base.is_empty() => format!("{base}\n\n{text}"),
        _ => text.to_string(),
    }
}

/// A string field of an answer; present but not a string is an error.
fn string(object: &serde_json::Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(_) => Err(format!("`{key}` must be a string")),
    }
}

/// The answer's `hookSpecificOutput` object, if any.
fn specific(
    object: &serde_json::Map<String, Value>,
) -> Result<serde_json::Map<String, Value>, String> {
    match object.get("hookSpecificOutput") {
        None | Some(Value::Null) => Ok(serde_json::Map::new()),
        Some(Value::Object(specific)) => Ok(specific.clone()),
        Some(_) => Err("`hookSpecificOutput` must be an object".into()),
    }
}

/// A Claude Code or Gemini CLI answer after its plain cases: the JSON object, or `None` when
/// the hook had nothing to say (`null`). A blocked run, plain text and the dialect's own fields
/// are the reader's job; errors and timeouts are failures in both.
fn answer_object(answer: RunResult) -> Result<Option<serde_json::Map<String, Value>>, String> {
    match answer {
        RunResult::Output(Value::Null) => Ok(None),
        RunResult::Output(Value::Object(object)) => Ok(Some(object)),
        RunResult::Output(_) => Err("the answer must be a JSON object".into()),
        RunResult::Error(error) => Err(error),
        RunResult::Timeout => Err("timed out".into()),
        RunResult::Block(_) | RunResult::Text(_) => Ok(None),
    }
}

/// What every JSON answer of both tools has: its `hookSpecificOutput`, `systemMessage`,
/// `suppressOutput`, and the keys the dialect does not define at this event (for the `warn`).
fn read_common(
    object: &serde_json::Map<String, Value>,
    top_keys: &[&str],
    specific_keys: &[&str],
    out: &mut HookOutput,
) -> Result<serde_json::Map<String, Value>, String> {
    let specific = specific(object)?;
    out.unknown.extend(
        object
            .keys()
            .filter(|key| !top_keys.contains(&key.as_str()))
            .cloned(),
    );
    out.unknown.extend(
        specific
            .keys()
            .filter(|key| !specific_keys.contains(&key.as_str()))
            .map(|key| format!("hookSpecificOutput.{key}")),
    );
    out.system_message = string(object, "systemMessage")?;
    out.suppress_output = object.get("suppressOutput").and_then(Value::as_bool) == Some(true);
    Ok(specific)
}

/// Now, in ISO 8601 UTC with milliseconds (Gemini's `timestamp`, the transcript's).
pub(crate) fn timestamp() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let seconds = now.as_secs();
    let (days, rest) = (seconds / 86_400, seconds % 86_400);
    let (year, month, day) = civil(days as i64);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60,
        now.subsec_millis()
    )
}

/// The date `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::external::config::parse_hooks;
    use crate::hooks::external::protocol::Control;
    use serde_json::json;

    /// The hook configured under `event_name` (a command hook).
    fn hook(event_name: &str) -> HookDef {
        let yaml = format!("{event_name}:\n  - {{name: h, command: x}}\n");
        let (mut hooks, problems) = parse_hooks(Path::new("h.yaml"), &yaml, "server");
        assert!(problems.is_empty(), "{problems:?}");
        hooks.remove(0)
    }

    fn ended(code: i32, stdout: &str, stderr: &str) -> CommandRun {
        CommandRun {
            exit_code: Some(code),
            stdout: stdout.into(),
            stderr: stderr.into(),
            timed_out: false,
        }
    }

    #[test]
    fn exit_codes_by_dialect() {
        use Dialect::*;
        let cases = [
            (
                Claude,
                ended(0, "context\n", ""),
                RunResult::Text("context".into()),
            ),
            (
                Claude,
                ended(0, " {\"a\":1} ", ""),
                RunResult::Output(json!({"a":1})),
            ),
            (
                Claude,
                ended(0, "{oops}", ""),
                RunResult::Error("stdout is not valid JSON: \"{oops}\"".into()),
            ),
            (Claude, ended(2, "", "no\n"), RunResult::Block("no".into())),
            (
                Claude,
                ended(2, "{\"reason\":\"why\"}", "stderr"),
                RunResult::Block("why".into()),
            ),
            (
                Claude,
                ended(1, "{\"decision\":\"block\"}", ""),
                RunResult::Output(json!({"decision":"block"})),
            ),
            (
                Claude,
                ended(1, "", "boom"),
                RunResult::Error("exit code 1: boom".into()),
            ),
            (
                Gemini,
                ended(0, "shown", ""),
                RunResult::Text("shown".into()),
            ),
            (
                Gemini,
                ended(0, "\"{\\\"decision\\\":\\\"deny\\\"}\"", ""),
                RunResult::Output(json!({"decision":"deny"})),
            ),
            (
                Gemini,
                ended(2, "{}", "denied"),
                RunResult::Block("denied".into()),
            ),
            (Hookwire, ended(2, "", "no"), RunResult::Block("no".into())),
        ];
        for (dialect, run, expected) in cases {
            assert_eq!(
                command_result(dialect, run.clone()),
                expected,
                "{dialect:?} {run:?}"
            );
        }
        let gemini_warning = command_result(Gemini, ended(3, "", "careful"));
        assert!(matches!(gemini_warning, RunResult::Error(e) if e.contains("a warning")));
    }

    fn read_as(
        event_name: &str,
        event: Event,
        answer: RunResult,
        state: &EventState,
    ) -> HookOutput {
        let envelope = Envelope {
            cwd: "/ws".into(),
            ..Envelope::default()
        };
        read(&hook(event_name), event, answer, state, &envelope).unwrap()
    }

    #[test]
    fn claude_blocks_mean_what_the_event_says() {
        let tool = EventState {
            tool_name: Some("read_file".into()),
            tool_arguments: Some(json!({"path": "a"})),
            tool_result: Some("text".into()),
            ..EventState::default()
        };
        let block = || RunResult::Block("why".into());
        let pre = read_as("PreToolUse", Event::PreToolExecution, block(), &tool);
        assert_eq!(pre.control, Some(Control::Block("why".into())));
        let post = read_as("PostToolUse", Event::PostToolExecution, block(), &tool);
        assert_eq!(
            (post.control, post.tool_result.as_deref()),
            (None, Some("text\n\nwhy"))
        );
        let stop = read_as("Stop", Event::Stop, block(), &EventState::default());
        assert_eq!(stop.retry_feedback.as_deref(), Some("why"));
        let prompt = read_as(
            "UserPromptSubmit",
            Event::PreSendMessage,
            block(),
            &EventState::default(),
        );
        assert_eq!(prompt.control, Some(Control::Block("why".into())));
        let text = read_as(
            "UserPromptSubmit",
            Event::PreSendMessage,
            RunResult::Text("ctx".into()),
            &EventState::default(),
        );
        assert_eq!(text.chat_context, ["ctx"]);
        let ignored = read_as(
            "PreToolUse",
            Event::PreToolExecution,
            RunResult::Text("noise".into()),
            &tool,
        );
        assert_eq!(ignored, HookOutput::default());
    }

    #[test]
    fn claude_json_answers() {
        let tool = EventState {
            tool_name: Some("read_file".into()),
            tool_arguments: Some(json!({"path": "a"})),
            ..EventState::default()
        };
        let answer = |value: serde_json::Value| RunResult::Output(value);
        let ask = read_as(
            "PreToolUse",
            Event::PreToolExecution,
            answer(
                json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask",
                "permissionDecisionReason": "check first"}, "systemMessage": "asked"}),
            ),
            &tool,
        );
        assert_eq!(
            ask.control,
            Some(Control::Ask("check first".into())),
            "ask = the approval flow"
        );
        assert_eq!(ask.system_message.as_deref(), Some("asked"));
        let legacy = read_as(
            "PreToolUse",
            Event::PreToolExecution,
            answer(json!({"decision": "block", "reason": "old"})),
            &tool,
        );
        assert_eq!(legacy.control, Some(Control::Block("old".into())));
        let allow = read_as(
            "PreToolUse",
            Event::PreToolExecution,
            answer(
                json!({"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": {"file_path": "/ws/b"},
                "additionalContext": "note"}, "sessionTitle": "x"}),
            ),
            &tool,
        );
        assert_eq!(allow.control, None);
        assert_eq!(allow.tool_arguments, Some(json!({"path": "b"})));
        assert_eq!(allow.chat_context, ["note"]);
        assert_eq!(
            allow.unknown,
            ["sessionTitle"],
            "logged, not silently dropped"
        );
        let halt = read_as(
            "PostToolUse",
            Event::PostToolExecution,
            answer(json!({"continue": false, "stopReason": "halt", "decision": "block"})),
            &tool,
        );
        assert_eq!(
            (halt.control, halt.tool_result),
            (Some(Control::Stop("halt".into())), None)
        );
        let more = read_as(
            "Stop",
            Event::Stop,
            answer(json!({"hookSpecificOutput": {"additionalContext": "go on"}})),
            &EventState::default(),
        );
        assert_eq!(more.retry_feedback.as_deref(), Some("go on"));
        let done = read_as(
            "Stop",
            Event::Stop,
            answer(json!({"continue": false, "decision": "block", "reason": "x"})),
            &EventState::default(),
        );
        assert_eq!(done.retry_feedback, None, "continue: false wins");
        let wrong = read(
            &hook("PreToolUse"),
            Event::PreToolExecution,
            answer(json!({"hookSpecificOutput": {"permissionDecision": "maybe"}})),
            &tool,
            &Envelope::default(),
        );
        assert!(wrong.is_err());
    }

    #[test]
    fn gemini_json_answers() {
        let tool = EventState {
            tool_name: Some("read_file".into()),
            tool_arguments: Some(json!({"path": "a", "offset": 2, "limit": 3})),
            tool_result: Some("text".into()),
            ..EventState::default()
        };
        let answer = |value: serde_json::Value| RunResult::Output(value);
        let deny = read_as(
            "BeforeTool",
            Event::PreToolExecution,
            answer(json!({"decision": "deny", "reason": "no"})),
            &tool,
        );
        assert_eq!(deny.control, Some(Control::Block("no".into())));
        let merged = read_as(
            "BeforeTool",
            Event::PreToolExecution,
            answer(json!({"hookSpecificOutput": {"tool_input": {"file_path": "/ws/b"}}})),
            &tool,
        );
        assert_eq!(
            merged.tool_arguments,
            Some(json!({"path": "b", "offset": 2, "limit": 3})),
            "merged over"
        );
        let after = read_as(
            "AfterTool",
            Event::PostToolExecution,
            answer(json!({"decision": "deny", "reason": "hidden"})),
            &tool,
        );
        assert_eq!(
            after.tool_result.as_deref(),
            Some("Tool result blocked: hidden")
        );
        let stop = read_as(
            "AfterAgent",
            Event::Stop,
            answer(json!({"decision": "deny", "reason": "again"})),
            &EventState::default(),
        );
        assert_eq!(stop.retry_feedback.as_deref(), Some("again"));
        let text = read_as(
            "AfterTool",
            Event::PostToolExecution,
            RunResult::Text("fyi".into()),
            &tool,
        );
        assert_eq!(text.system_message.as_deref(), Some("fyi"));
        let model = read_as(
            "AfterModel",
            Event::PostLlmResponse,
            answer(
                json!({"hookSpecificOutput": {"llm_response": {"candidates": [{"content": {"role": "model", "parts": ["new ", {"text": "text"}]}}]}}}),
            ),
            &EventState::default(),
        );
        assert_eq!(model.assistant_output.as_deref(), Some("new text"));
        let exit_2 = read_as(
            "AfterTool",
            Event::PostToolExecutionFailure,
            RunResult::Block("bad".into()),
            &tool,
        );
        assert_eq!(
            exit_2.tool_error.as_deref(),
            Some("Tool result blocked: bad")
        );
    }

    #[test]
    fn dates() {
        assert_eq!(civil(0), (1970, 1, 1));
        assert_eq!(civil(19_723), (2024, 1, 1));
        assert_eq!(civil(19_782), (2024, 2, 29));
        let now = timestamp();
        assert_eq!(now.len(), "2024-01-01T00:00:00.000Z".len(), "{now}");
        assert!(now.ends_with('Z'));
    }

    #[test]
    fn prompts_carry_the_envelope_as_their_dialect_wants() {
        let input = json!({"tool_name":"read_file"});
        let jcli = task(Dialect::Hookwire, "check {{tool_name}}", false, &input);
        assert!(jcli.starts_with("check read_file\n\nReply with exactly one JSON object"));
        let openharness = task(Dialect::OpenHarness, "check", true, &input);
        assert!(openharness.starts_with("check\n\nThe event:\n{\"tool_name\":\"read_file\"}"));
        let claude = task(Dialect::Claude, "Judge: $ARGUMENTS", false, &input);
        assert!(claude.starts_with("Judge: {\"tool_name\":\"read_file\"}"));
        assert!(claude.contains("{\"ok\": false"));
    }

    #[test]
    fn templates_fill_variables() {
        let input =
            json!({"tool_name":"read_file","tool_arguments":"{\"path\":\"a\"}","model":"m"});
        assert_eq!(
            render(
                "{{tool_name}} {{tool_arguments}} {{model}} {{user_input}}!",
                &input
            ),
            "read_file {\"path\":\"a\"} m !"
        );
    }

    use super::hookwire::render;
}
