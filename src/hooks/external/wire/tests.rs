use super::*;
use crate::hooks::external::hook::Control;
use crate::hooks::external::load::parse_hooks;
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

fn read_as(event_name: &str, event: Event, answer: RunResult, state: &EventState) -> HookOutput {
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
fn timestamps_are_iso_8601_utc() {
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
    let input = json!({"tool_name":"read_file","tool_arguments":"{\"path\":\"a\"}","model":"m"});
    assert_eq!(
        render(
            "{{tool_name}} {{tool_arguments}} {{model}} {{user_input}}!",
            &input
        ),
        "read_file {\"path\":\"a\"} m !"
    );
}

use super::hookwire::render;

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

#[test]
fn a_wrongly_shaped_answer_is_refused_naming_its_key() {
    let error = |event_name: &str, event: Event, answer: serde_json::Value| {
        let envelope = Envelope::default();
        read(
            &hook(event_name),
            event,
            RunResult::Output(answer),
            &EventState::default(),
            &envelope,
        )
        .unwrap_err()
        .to_string()
    };
    let native = error(
        "stop",
        Event::Stop,
        json!({"retry_feedback": "x", "user_input": 5}),
    );
    assert!(native.starts_with("`user_input`: invalid type"), "{native}");
    let claude = error(
        "PreToolUse",
        Event::PreToolExecution,
        json!({"hookSpecificOutput": {"permissionDecision": "maybe"}}),
    );
    assert!(
        claude.starts_with("`hookSpecificOutput`: unknown variant"),
        "{claude}"
    );
    let gemini = error(
        "BeforeModel",
        Event::PreLlmRequest,
        json!({"hookSpecificOutput": {"llm_request": {"messages": [{"role": "tool", "content": "x"}]}}}),
    );
    assert!(
        gemini.starts_with("`hookSpecificOutput`: unknown variant `tool`"),
        "{gemini}"
    );
    assert_eq!(
        error("stop", Event::Stop, json!([1])),
        "the answer must be a JSON object"
    );
}
