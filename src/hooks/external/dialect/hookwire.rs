//! The hookwire dialect and the OpenHarness format's (the jcli format's event names are
//! hookwire's own; the OpenHarness format adds aliases and declared capabilities): the input is
//! [`super::super::protocol`]'s JSON, the answer is read by its `parse_output`, and a command
//! hook's exit code means: exit 0 → stdout is the result (empty or `{}` = no change); exit 2 →
//! block, stderr is the reason; anything else → an error (logged; what the chain does then is
//! the hook's `on_error`).

use serde_json::Value;

use crate::hooks::external::config::HookDef;
use crate::hooks::external::event::Dialect;
use crate::hooks::external::outcome::RunResult;
use crate::hooks::external::protocol::{parse_output, Control, HookAnswerError, HookOutput};
use crate::process::CommandRun;

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_exit_code_contract() {
        let ended = |exit_code: Option<i32>, stdout: &str, stderr: &str| {
            command_result(CommandRun {
                exit_code,
                stdout: stdout.into(),
                stderr: stderr.into(),
                timed_out: false,
            })
        };
        assert_eq!(ended(Some(0), " {} \n", ""), RunResult::Output(json!({})));
        assert_eq!(
            ended(Some(0), "\n", "noise"),
            RunResult::Output(Value::Null)
        );
        assert!(
            matches!(ended(Some(0), "nope", ""), RunResult::Error(e) if e.starts_with("stdout is not JSON"))
        );
        assert_eq!(
            ended(Some(2), "{}", " \n"),
            RunResult::Block("blocked by a hook".into())
        );
        assert_eq!(ended(Some(2), "", "no\n"), RunResult::Block("no".into()));
        assert_eq!(
            ended(Some(1), "", "x"),
            RunResult::Error("exit code 1: x".into())
        );
        assert_eq!(
            ended(None, "", ""),
            RunResult::Error("killed by a signal".into())
        );
        let late = CommandRun {
            exit_code: Some(0),
            timed_out: true,
            ..CommandRun::default()
        };
        assert_eq!(command_result(late), RunResult::Timeout);
    }
}
