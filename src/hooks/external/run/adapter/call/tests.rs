use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::json;

use super::*;
use crate::hooks::CallPhase;
use crate::types::{DoneReason, ErrorCode, Usage};

/// The values a state carries, by their protocol names.
fn carried(state: &EventState) -> BTreeSet<&'static str> {
    let given = [
        ("user_input", state.user_input.is_some()),
        ("messages", state.messages.is_some()),
        ("system_prompt", state.system_prompt.is_some()),
        ("assistant_output", state.assistant_output.is_some()),
        ("tool_name", state.tool_name.is_some()),
        ("tool_call_id", state.tool_call_id.is_some()),
        ("tool_arguments", state.tool_arguments.is_some()),
        ("tool_result", state.tool_result.is_some()),
        ("tool_error", state.tool_error.is_some()),
        ("tools", state.tools.is_some()),
        ("error", state.error.is_some()),
        ("compaction", state.compaction.is_some()),
        ("summary", state.summary.is_some()),
    ];
    given
        .into_iter()
        .filter_map(|(name, present)| present.then_some(name))
        .collect()
}

/// Each event's values are what its row of the rules says it carries (Claude Code's
/// `SessionStart` after a compaction aside: it sees the chat and the compaction).
#[test]
fn every_call_carries_what_its_event_rules_say() {
    let mut ctx = HookContext::new("s".into(), "c".into(), "m".into(), Vec::new());
    ctx.messages = vec![Message::system("be brief"), Message::user("hi")];
    let info = CompactInfo::default();
    let (mut input, mut prompt, mut summary) = ("hi".to_string(), String::new(), String::new());
    let mut request = LlmRequest {
        phase: CallPhase::Direct,
        messages: ctx.messages.clone(),
        tools: Vec::new(),
    };
    let mut response = LlmResponse {
        phase: CallPhase::Direct,
        content: "answer".into(),
        tool_calls: Vec::new(),
        finish_reason: None,
        usage: Usage::default(),
    };
    let mut call = ToolCallInfo {
        call_id: "t1".into(),
        name: "read_file".into(),
        arguments: json!({"path": "a"}),
    };
    let seen = call.clone();
    let mut result = ToolResultInfo {
        call_id: "t1".into(),
        name: "read_file".into(),
        content: "text".into(),
        is_error: false,
        duration: Duration::ZERO,
    };
    let mut failed = result.clone();
    let pending = [PendingCall {
        call_id: "t1".into(),
        name: "read_file".into(),
        arguments: json!({}),
        reason: "asked".into(),
    }];
    let mut output = RunOutput {
        reason: DoneReason::Completed,
        content: "answer".into(),
        usage: Usage::default(),
    };
    let error = ChatError::new(ErrorCode::Upstream, "down");
    let calls = vec![
        Call::BeforeContextBuild,
        Call::PreSendMessage(&mut input),
        Call::AfterContextBuild,
        Call::PostSendMessage,
        Call::PreLlmRequest(&mut request),
        Call::PostLlmResponse(&mut response),
        Call::ApprovalRequired(&pending),
        Call::PreAutoCompact(&info, &mut prompt),
        Call::PostAutoCompact(&info, &mut summary),
        Call::PreMicroCompact(&info),
        Call::PostMicroCompact(&info),
        Call::PreToolExecution(&mut call),
        Call::PostToolExecution(&seen, &mut result),
        Call::PostToolExecutionFailure(&seen, &mut failed),
        Call::Stop("answer"),
        Call::RunCompleted(&mut output),
        Call::RunFailed(&error),
    ];
    let mut events = BTreeSet::new();
    for call in &calls {
        let event = call.event();
        events.insert(event);
        let expected: BTreeSet<&str> = event.rules().carries.iter().copied().collect();
        assert_eq!(carried(&call.state(&ctx)), expected, "{}", event.as_str());
    }
    let again = Call::SessionStartAfterCompact(&info);
    assert_eq!(
        carried(&again.state(&ctx)),
        ["compaction", "messages"].into(),
        "after a compaction"
    );
    // The connection events carry nothing (the adapter fires them with an empty state).
    for event in [Event::SessionStart, Event::SessionEnd] {
        assert!(event.rules().carries.is_empty());
        events.insert(event);
    }
    assert_eq!(events.len(), Event::ALL.len(), "every event is a call");
}
