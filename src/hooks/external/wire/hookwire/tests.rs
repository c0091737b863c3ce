use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::*;
use crate::hooks::external::hook::{
    Control, Dialect, Envelope, Event, EventState, HookOutput, RunResult,
};
use crate::process::CommandRun;
use crate::types::Message;

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
        input(
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
        json!({"user_input":"x","inject_messages":[{"role":"user","content":"now"}],"additional_context":"ctx",
                "retry_feedback":"again","system_message":"hi","action":"skip","reason":"nope"}),
        None,
        Dialect::Hookwire,
    )
    .unwrap();
    assert_eq!(out.user_input.as_deref(), Some("x"));
    assert_eq!(out.inject_messages, vec![Message::user("now")]);
    assert_eq!(out.control, Some(Control::Skip("nope".into())));
    assert_eq!(
        parse_output(json!({"abort": true}), None, Dialect::Hookwire)
            .unwrap()
            .control,
        Some(Control::Stop(String::new()))
    );
    assert_eq!(
        parse_output(json!({}), None, Dialect::Hookwire).unwrap(),
        HookOutput::default()
    );
    assert_eq!(
        parse_output(Value::Null, None, Dialect::Hookwire).unwrap(),
        HookOutput::default()
    );
    assert!(parse_output(json!([1]), None, Dialect::Hookwire).is_err());
    assert!(parse_output(json!({"action":"explode"}), None, Dialect::Hookwire).is_err());
}

#[test]
fn openharness_format_results_and_capabilities() {
    let answer = json!({"continue": false, "stopReason": "budget", "systemMessage": "stopped",
                        "hookSpecificOutput": {"hookEventName":"before_model_call","system_prompt":"new"}});
    let without = parse_output(answer.clone(), None, Dialect::Hookwire).unwrap();
    assert_eq!(without.control, Some(Control::Stop("budget".into())));
    assert_eq!(without.system_message.as_deref(), Some("stopped"));
    assert_eq!(
        without.system_prompt, None,
        "patches need a declared capability"
    );
    assert_eq!(without.refused, vec!["system_prompt"]);
    let caps: BTreeSet<String> = ["system_prompt".to_string()].into();
    let with = parse_output(answer.clone(), Some(&caps), Dialect::Hookwire).unwrap();
    assert_eq!(with.system_prompt.as_deref(), Some("new"));
    let outside = parse_output(json!({"user_input": "x"}), Some(&caps), Dialect::Hookwire).unwrap();
    assert_eq!(
        (outside.user_input, outside.refused),
        (None, vec!["user_input".to_string()])
    );
    let block = parse_output(
        json!({"decision":"block","reason":"no"}),
        None,
        Dialect::Hookwire,
    )
    .unwrap();
    assert_eq!(block.control, Some(Control::Block("no".into())));
    let tool = parse_output(
        json!({"hookSpecificOutput":{"tool_input":{"path":"b"}}}),
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
    let without = parse_output(answer.clone(), None, Dialect::OpenHarness).unwrap();
    assert_eq!(without.tool_arguments, None);
    assert_eq!(without.refused, vec!["tool_arguments"]);
    assert_eq!(
        without.unknown,
        vec!["colour", "continue"],
        "logged, not silently dropped"
    );
    let caps: BTreeSet<String> = ["tool_arguments".to_string()].into();
    let with = parse_output(answer.clone(), Some(&caps), Dialect::OpenHarness).unwrap();
    assert_eq!(with.tool_arguments, Some(json!({"path":"b"})));
    let jcli = parse_output(answer.clone(), None, Dialect::Hookwire).unwrap();
    assert_eq!(jcli.tool_arguments, Some(json!({"path":"b"})));
}
