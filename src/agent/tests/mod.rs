//! The agent loop driven directly through `AgentClient::chat_stream`, with a scripted model: the
//! events a chat sends, the requests the model gets, and where every hook fires.

mod delta_count;
mod scripted;
mod steps;

use std::sync::{Arc, Mutex};

use futures::StreamExt;

use self::scripted::{messages, show, tool_names, Echo, Record, Recorder, Reply, ScriptedModel};
use super::{AgentClient, AgentConfig};
use crate::llm::{LlmError, ModelEvent};
use crate::types::{ChatRequest, Usage};

/// Short prompts, so the requests' messages read plainly.
fn config() -> AgentConfig {
    AgentConfig {
        system_prompt: "SYS".into(),
        planning_prompt: "PLAN {marker} {tools}".into(),
        first_step_prompt: "FIRST".into(),
        each_step_prompt: "EACH".into(),
        ..AgentConfig::default()
    }
}

fn client(model: &Arc<ScriptedModel>, hook: &Arc<Recorder>, config: AgentConfig) -> AgentClient {
    AgentClient::builder()
        .model(model.clone())
        .tool(Arc::new(Echo))
        .hook(hook.clone())
        .config(config)
        .build()
}

/// Runs one chat to its end; its events as lines, the steps' starts left out (see
/// [`chat_with_steps`]).
async fn chat(
    model: &Arc<ScriptedModel>,
    hook: &Arc<Recorder>,
    config: AgentConfig,
    request: ChatRequest,
) -> Vec<String> {
    let lines = chat_with_steps(model, hook, config, request).await;
    lines
        .into_iter()
        .filter(|line| !line.starts_with("step:"))
        .collect()
}

/// Runs one chat to its end; every event as a line.
async fn chat_with_steps(
    model: &Arc<ScriptedModel>,
    hook: &Arc<Recorder>,
    config: AgentConfig,
    request: ChatRequest,
) -> Vec<String> {
    let client = client(model, hook, config);
    client
        .chat_stream(request)
        .map(|event| show(&event))
        .collect()
        .await
}

fn direct(input: &str) -> ChatRequest {
    let mut request = ChatRequest::new("c1", input);
    request.enable_tools = false;
    request
}

fn usage(calls: u64) -> Usage {
    Usage {
        prompt_tokens: 10 * calls,
        completion_tokens: 2 * calls,
        ..Usage::default()
    }
}

/// A chat holds its future for its whole length, and its size is that of its largest state: the
/// states a chat is not in while it streams (resuming, compaction, the tool step, the summary,
/// its end) are boxed where they are awaited, and the request is boxed once. It was 8,616
/// bytes before (docs/performance.md, an active chat's memory).
#[tokio::test]
async fn a_chat_future_holds_little_more_than_what_streaming_needs() {
    let model = ScriptedModel::new([Reply::text(&["Hi"])]);
    let client = client(&model, &Arc::new(Recorder::default()), config());
    let stream = client.chat_stream(ChatRequest::new("c1", "hello"));
    let size = stream.chat_size().unwrap_or(usize::MAX);
    println!("the chat's future: {size} bytes");
    assert!(size <= 6 * 1024, "the chat's future is {size} bytes");
}

#[tokio::test]
async fn the_direct_call_is_one_call_without_tools() {
    let model = ScriptedModel::new([Reply::text(&["Hi", " there"])]);
    let hook = Arc::new(Recorder::default());
    let events = chat(&model, &hook, config(), direct("hello")).await;
    assert_eq!(
        events,
        [
            "start",
            "text:Hi",
            "text: there",
            "done:completed:Hi there:10+2"
        ]
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(messages(&requests[0]), ["system:SYS", "user:hello"]);
    assert!(requests[0].tools.is_empty());
    assert_eq!(
        hook.log(),
        [
            "pre_send_message",
            "post_send_message",
            "pre_llm_request:direct",
            "post_llm_response:direct",
            "stop:Hi there",
            "run_completed",
        ]
    );
}

#[tokio::test]
async fn planning_then_a_plan_then_one_tool_round_then_the_answer() {
    let model = ScriptedModel::new([
        Reply::text(&["  [NEED_", "TOOL] read it"]),
        Reply::tool_calls(&[("c1", "echo", r#"{"x":1}"#)]),
        Reply::text(&["It ", "says 1."]),
    ]);
    let hook = Arc::new(Recorder::default());
    let events = chat(&model, &hook, config(), ChatRequest::new("c1", "read")).await;
    assert_eq!(
        events,
        [
            "start",
            "plan:read it",
            r#"tool_call:c1:echo:{"x":1}"#,
            r#"tool_result:c1:false:echo {"x":1}"#,
            "text:It ",
            "text:says 1.",
            "done:completed:It says 1.:30+6",
        ]
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    // Planning: no tools; its prompt comes last and is for that call only.
    assert!(requests[0].tools.is_empty());
    assert_eq!(
        messages(&requests[0]),
        ["system:SYS", "user:read", "system:PLAN [NEED_TOOL] echo"]
    );
    // Round 1: tools on; the plan is in the list, the first-step prompt last.
    assert_eq!(tool_names(&requests[1]), ["echo"]);
    assert_eq!(
        messages(&requests[1]),
        [
            "system:SYS",
            "user:read",
            "assistant:read it",
            "system:FIRST"
        ]
    );
    // Round 2: the tool result right after its assistant message, the each-step prompt last.
    assert_eq!(tool_names(&requests[2]), ["echo"]);
    assert_eq!(
        messages(&requests[2]),
        [
            "system:SYS",
            "user:read",
            "assistant:read it",
            "assistant[c1=echo]:",
            r#"tool[c1]:echo {"x":1}"#,
            "system:EACH",
        ]
    );
    assert_eq!(
        hook.log(),
        [
            "pre_send_message",
            "post_send_message",
            "before_planning",
            "pre_llm_request:planning",
            "post_llm_response:planning",
            "after_planning",
            "before_each_agent:1",
            "before_first_agent:1",
            "pre_llm_request:agent1",
            "post_llm_response:agent1",
            "pre_tool_execution:echo",
            "post_tool_execution:echo",
            "after_tool_call:echo",
            "before_each_agent:2",
            "pre_llm_request:agent2",
            "post_llm_response:agent2",
            "stop:It says 1.",
            "after_agent_loop",
            "run_completed",
        ]
    );
    // Three model calls, one tool call, and four steps (three responses, one tool result).
    assert_eq!(
        *hook.record.lock().unwrap(),
        Some(Record {
            usage: usage(3),
            tool_calls: 1,
            steps: 4
        })
    );
}

#[tokio::test]
async fn max_steps_runs_the_last_rounds_tools_then_ends() {
    let model = ScriptedModel::new([
        Reply::text(&["[NEED_TOOL] loop"]),
        Reply::tool_calls(&[("c1", "echo", "{}")]),
        Reply::tool_calls(&[("c2", "echo", "")]),
        Reply::text(&["never asked"]),
    ]);
    let hook = Arc::new(Recorder::default());
    // Without the summary call (`tests/it/limits.rs` has it).
    let config = AgentConfig {
        max_steps: 2,
        summary_on_limit: false,
        ..config()
    };
    let events = chat(&model, &hook, config, ChatRequest::new("c1", "loop")).await;
    assert_eq!(
        events,
        [
            "start",
            "plan:loop",
            "tool_call:c1:echo:{}",
            "tool_result:c1:false:echo {}",
            "tool_call:c2:echo:{}",
            "tool_result:c2:false:echo {}",
            "done:max_steps::30+6",
        ]
    );
    assert_eq!(model.requests().len(), 3, "planning + 2 rounds");
    let log = hook.log();
    assert!(!log.iter().any(|line| line.starts_with("stop:")), "{log:?}");
    assert_eq!(
        log[log.len() - 3..],
        ["after_tool_call:echo", "after_agent_loop", "run_completed"]
    );
}

#[tokio::test]
async fn a_hook_retry_sends_the_model_back_with_its_feedback() {
    let model = ScriptedModel::new([Reply::text(&["A long answer"]), Reply::text(&["Short"])]);
    let hook = Arc::new(Recorder {
        retry_once: Mutex::new(Some("shorter".into())),
        ..Recorder::default()
    });
    let events = chat(&model, &hook, config(), direct("hello")).await;
    assert_eq!(
        events,
        [
            "start",
            "text:A long answer",
            "notice:info:agent:a hook asked the model to try again: shorter",
            "text:\n\n",
            "text:Short",
            // Only the answer that was kept; the retried one streamed but is not history.
            "done:completed:Short:20+4",
        ]
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        messages(&requests[1]),
        [
            "system:SYS",
            "user:hello",
            "assistant:A long answer",
            "user:shorter"
        ]
    );
    assert_eq!(
        hook.log()[2..],
        [
            "pre_llm_request:direct",
            "post_llm_response:direct",
            "pre_llm_request:direct",
            "post_llm_response:direct",
            "stop:Short",
            "run_completed",
        ]
    );
}

#[tokio::test]
async fn a_stop_after_the_model_ran_ends_with_done_stopped() {
    let model = ScriptedModel::new([
        Reply::text(&["[NEED_TOOL] go"]),
        Reply::tool_calls(&[("c1", "echo", "{}")]),
    ]);
    let hook = Arc::new(Recorder {
        stop_tools: Some("no tools today".into()),
        ..Recorder::default()
    });
    let events = chat(&model, &hook, config(), ChatRequest::new("c1", "go")).await;
    // The stopped call is never shown, and no tool ran.
    assert_eq!(
        events,
        [
            "start",
            "plan:go",
            "notice:warn:hook:no tools today",
            "done:stopped::20+4",
        ]
    );
    let log = hook.log();
    assert_eq!(
        log[log.len() - 3..],
        [
            "pre_tool_execution:echo",
            "after_agent_loop",
            "run_completed"
        ]
    );
    let record = hook.record.lock().unwrap().take();
    assert_eq!(record.map(|r| r.tool_calls), Some(0));
}

#[tokio::test]
async fn a_stop_before_the_model_ran_is_hook_blocked() {
    let model = ScriptedModel::new([Reply::text(&["never asked"])]);
    let hook = Arc::new(Recorder {
        stop_input: Some("not that".into()),
        ..Recorder::default()
    });
    let events = chat(&model, &hook, config(), ChatRequest::new("c1", "hi")).await;
    assert_eq!(events, ["start", "error:hook_blocked:not that"]);
    assert!(model.requests().is_empty());
    assert_eq!(hook.log(), ["pre_send_message", "run_failed:hook_blocked"]);
}

#[tokio::test]
async fn an_upstream_failure_ends_with_one_error_and_no_done() {
    let cases = [
        (
            Reply::Refuse(LlmError::Status {
                status: 400,
                body: "boom".into(),
                retry_after: None,
            }),
            vec![
                "start",
                "error:upstream:the model API answered HTTP 400: boom",
            ],
        ),
        (
            Reply::Events(vec![
                Ok(ModelEvent::Text("par".into())),
                Err(LlmError::Truncated),
            ]),
            vec![
                "start",
                "text:par",
                "error:upstream:the model API stream ended before [DONE]",
            ],
        ),
        (
            Reply::Events(vec![Ok(ModelEvent::Text("par".into()))]),
            vec![
                "start",
                "text:par",
                "error:upstream:the model stream ended without finishing",
            ],
        ),
    ];
    for (reply, expected) in cases {
        let model = ScriptedModel::new([reply]);
        let hook = Arc::new(Recorder::default());
        let events = chat(&model, &hook, config(), direct("hi")).await;
        assert_eq!(events, expected);
        assert_eq!(
            hook.log()[2..],
            ["pre_llm_request:direct", "run_failed:upstream"]
        );
    }
}

#[tokio::test]
async fn a_cancelled_chat_ends_with_done_holding_what_streamed() {
    let model = ScriptedModel::new([Reply::Hang(vec!["Hel", "lo"])]);
    let hook = Arc::new(Recorder::default());
    let request = direct("hi");
    let cancel = request.cancel.clone();
    let mut stream = client(&model, &hook, config()).chat_stream(request);
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        if matches!(event, crate::types::ChatEvent::StepStarted(_)) {
            continue;
        }
        events.push(show(&event));
        if events.last().is_some_and(|line| line == "text:lo") {
            cancel.cancel();
        }
    }
    assert_eq!(
        events,
        ["start", "text:Hel", "text:lo", "done:cancelled:Hello:0+0"]
    );
    // A cancelled chat ends without `run_completed` or `run_failed`.
    assert_eq!(
        hook.log().last().map(String::as_str),
        Some("pre_llm_request:direct")
    );
}

#[tokio::test]
async fn calls_past_the_rounds_cap_are_answered_but_neither_run_nor_counted() {
    let model = ScriptedModel::new([
        Reply::text(&["[NEED_TOOL] two"]),
        Reply::tool_calls(&[("c1", "echo", "{}"), ("c2", "echo", "{}")]),
        Reply::text(&["ok"]),
    ]);
    let hook = Arc::new(Recorder::default());
    let config = AgentConfig {
        max_tool_calls_per_round: 1,
        ..config()
    };
    let events = chat(&model, &hook, config, ChatRequest::new("c1", "two")).await;
    let refused = "the tool did not run: a round runs at most 1 tool calls \
                   (limits.max_tool_calls_per_round); call it again in the next round";
    assert_eq!(
        events[2..6],
        [
            "tool_call:c1:echo:{}".to_string(),
            "tool_result:c1:false:echo {}".to_string(),
            "tool_call:c2:echo:{}".to_string(),
            format!("tool_result:c2:true:{refused}"),
        ]
    );
    // Every call of the assistant message has its tool message, in order.
    assert_eq!(
        messages(&model.requests()[2])[3..6],
        [
            "assistant[c1=echo,c2=echo]:".to_string(),
            "tool[c1]:echo {}".to_string(),
            format!("tool[c2]:{refused}")
        ]
    );
    let log = hook.log();
    let tool_hooks = log.iter().filter(|line| line.contains("tool_execution"));
    assert_eq!(
        tool_hooks.count(),
        2,
        "only the call that ran has hooks: {log:?}"
    );
    let record = hook.record.lock().unwrap().take();
    // Three responses, two tool results; one call counted.
    assert_eq!(record.map(|r| (r.tool_calls, r.steps)), Some((1, 5)));
}

#[tokio::test]
async fn each_model_call_starts_a_step_and_its_tools_belong_to_it() {
    let model = ScriptedModel::new([
        Reply::text(&["[NEED_TOOL] read it"]),
        Reply::tool_calls(&[("c1", "echo", r#"{"x":1}"#)]),
        Reply::text(&["It says 1."]),
    ]);
    let hook = Arc::new(Recorder::default());
    let events = chat_with_steps(&model, &hook, config(), ChatRequest::new("c1", "read")).await;
    assert_eq!(
        events,
        [
            "start",
            "step:planning",
            "plan:read it",
            "step:round 1",
            r#"tool_call:c1:echo:{"x":1}"#,
            r#"tool_result:c1:false:echo {"x":1}"#,
            "step:round 2",
            "text:It says 1.",
            "done:completed:It says 1.:30+6",
        ]
    );
    let events = chat_with_steps(&model, &hook, config(), direct("hi")).await;
    assert_eq!(events[..2], ["start", "step:answer"]);
}

/// `agent.planning: native`: the planning call is round 1 when it calls tools, so round 1's
/// hooks (`before_each_agent`, `before_first_agent`) come before it, and round 2's before the
/// next call.
#[tokio::test]
async fn native_planning_runs_round_one_s_hooks_before_its_call() {
    let model = ScriptedModel::new([
        Reply::tool_calls(&[("c1", "echo", r#"{"x":1}"#)]),
        Reply::text(&["It says 1."]),
    ]);
    let hook = Arc::new(Recorder::default());
    let mut config = config();
    config.planning = super::Planning::Native;
    let events = chat(&model, &hook, config, ChatRequest::new("c1", "read")).await;
    assert_eq!(events.last().unwrap(), "done:completed:It says 1.:20+4");
    let log = hook.log();
    let at = |line: &str| {
        log.iter()
            .position(|l| l == line)
            .unwrap_or_else(|| panic!("no {line} in {log:?}"))
    };
    assert!(at("before_planning") < at("before_each_agent:1"), "{log:?}");
    assert!(
        at("before_each_agent:1") < at("before_first_agent:1"),
        "{log:?}"
    );
    assert!(
        at("before_first_agent:1") < at("pre_llm_request:planning"),
        "{log:?}"
    );
    assert!(
        at("after_tool_call:echo") < at("before_each_agent:2"),
        "{log:?}"
    );
    assert_eq!(
        log.iter()
            .filter(|l| l.starts_with("before_first_agent"))
            .count(),
        1
    );
}
