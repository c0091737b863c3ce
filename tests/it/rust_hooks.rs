//! Rust hooks added through the builder: every event fires once at its place with its data,
//! per-call changes stay in their call, persistent ones persist, tool control works, and a
//! failing or panicking hook does not break the chat.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use hookwire::agent::{ChatError, NoticeLevel};
use hookwire::hooks::{
    AgentHook, CallPhase, Flow, HookContext, HookResult, LlmRequest, LlmResponse, ResponseAction,
    RunOutput, SessionInfo, StopAction, ToolAction, ToolCallInfo, ToolResultInfo,
};
use hookwire::{Message, Role};
use serde_json::json;

use crate::agent::workspace;
use crate::common::*;

/// Records every event it sees, with the data that matters.
#[derive(Default)]
struct Recorder {
    log: Arc<Mutex<Vec<String>>>,
}

impl Recorder {
    fn push(&self, entry: String) {
        self.log.lock().unwrap().push(entry);
    }
}

fn phase(phase: CallPhase) -> String {
    match phase {
        CallPhase::Direct => "direct".into(),
        CallPhase::Planning => "planning".into(),
        CallPhase::Agent { round } => format!("agent{round}"),
        // `CallPhase` may grow; a new phase shows up in the log as itself.
        other => format!("{other:?}"),
    }
}

#[async_trait]
impl AgentHook for Recorder {
    fn name(&self) -> &str {
        "recorder"
    }
    async fn session_start(&self, _: &SessionInfo) -> HookResult {
        self.push("session_start".into());
        Ok(())
    }
    async fn session_end(&self, _: &SessionInfo) -> HookResult {
        self.push("session_end".into());
        Ok(())
    }
    async fn pre_send_message(&self, _: &mut HookContext, input: &mut String) -> HookResult<Flow> {
        self.push(format!("pre_send_message:{input}"));
        Ok(Flow::Continue)
    }
    async fn post_send_message(&self, ctx: &mut HookContext) -> HookResult {
        let last = ctx
            .messages
            .last()
            .map(|m| m.content.clone())
            .unwrap_or_default();
        self.push(format!("post_send_message:{last}"));
        Ok(())
    }
    async fn before_planning(&self, _: &mut HookContext) -> HookResult {
        self.push("before_planning".into());
        Ok(())
    }
    async fn after_planning(&self, _: &mut HookContext) -> HookResult {
        self.push("after_planning".into());
        Ok(())
    }
    async fn before_first_agent(&self, ctx: &mut HookContext) -> HookResult {
        self.push(format!("before_first_agent:{}", ctx.iteration));
        Ok(())
    }
    async fn before_each_agent(&self, ctx: &mut HookContext) -> HookResult {
        self.push(format!("before_each_agent:{}", ctx.iteration));
        Ok(())
    }
    async fn after_tool_call(&self, _: &mut HookContext, tools: &[String]) -> HookResult {
        self.push(format!("after_tool_call:{}", tools.join(",")));
        Ok(())
    }
    async fn after_agent_loop(&self, _: &mut HookContext) -> HookResult {
        self.push("after_agent_loop".into());
        Ok(())
    }
    async fn pre_llm_request(
        &self,
        _: &mut HookContext,
        request: &mut LlmRequest,
    ) -> HookResult<Flow> {
        self.push(format!(
            "pre_llm_request:{}:{}",
            phase(request.phase),
            request.tools.len()
        ));
        Ok(Flow::Continue)
    }
    async fn post_llm_response(
        &self,
        _: &mut HookContext,
        response: &mut LlmResponse,
    ) -> HookResult<ResponseAction> {
        self.push(format!(
            "post_llm_response:{}:{}",
            phase(response.phase),
            response.tool_calls.len()
        ));
        Ok(ResponseAction::Continue)
    }
    async fn pre_tool_execution(
        &self,
        _: &mut HookContext,
        call: &mut ToolCallInfo,
    ) -> HookResult<ToolAction> {
        self.push(format!(
            "pre_tool_execution:{}:{}",
            call.name, call.arguments
        ));
        Ok(ToolAction::Run)
    }
    async fn post_tool_execution(
        &self,
        _: &mut HookContext,
        call: &ToolCallInfo,
        result: &mut ToolResultInfo,
    ) -> HookResult<Flow> {
        self.push(format!(
            "post_tool_execution:{}:{}",
            call.name, result.is_error
        ));
        Ok(Flow::Continue)
    }
    async fn post_tool_execution_failure(
        &self,
        _: &mut HookContext,
        call: &ToolCallInfo,
        _: &mut ToolResultInfo,
    ) -> HookResult<Flow> {
        self.push(format!("post_tool_execution_failure:{}", call.name));
        Ok(Flow::Continue)
    }
    async fn stop(&self, _: &mut HookContext, output: &str) -> HookResult<StopAction> {
        self.push(format!("stop:{output}"));
        Ok(StopAction::Finish)
    }
    async fn run_completed(&self, ctx: &mut HookContext, output: &mut RunOutput) -> HookResult {
        self.push(format!(
            "run_completed:{}:{}:{}",
            output.content,
            ctx.tool_calls_count(),
            ctx.usage().prompt_tokens
        ));
        Ok(())
    }
    async fn run_failed(&self, _: &mut HookContext, error: &ChatError) -> HookResult {
        self.push(format!("run_failed:{}", error.code.as_str()));
        Ok(())
    }
}

fn tool_script(upstream: &FakeUpstream) {
    upstream.push(Reply::text(&["[NEED_TOOL] read"]));
    upstream.push(Reply::tool_calls(&[
        ("c1", "read_file", json!({"path":"README.md"})),
        ("c2", "read_file", json!({"path":"nope.txt"})),
    ]));
    upstream.push(Reply::text(&["answer"]));
}

#[tokio::test]
async fn every_event_fires_once_in_order_with_its_data() {
    let upstream = FakeUpstream::start().await;
    tool_script(&upstream);
    let recorder = Arc::new(Recorder::default());
    let log = recorder.log.clone();
    let server = TestServer::builder()
        .workspace(workspace())
        .upstream(&upstream)
        .agent(move |b| b.hook(recorder))
        .start()
        .await;
    let mut client = server.connect().await;
    client.chat(json!({"type":"chat","input":"read it"})).await;
    drop(client);
    // `session_end` fires once the server sees the socket close; it is the last event.
    let ended = eventually(Duration::from_secs(5), || async {
        log.lock().unwrap().last().map(String::as_str) == Some("session_end")
    })
    .await;
    assert!(ended, "session_end never fired: {:?}", log.lock().unwrap());
    let log = log.lock().unwrap().clone();
    assert_eq!(
        log,
        [
            "session_start",
            "pre_send_message:read it",
            "post_send_message:read it",
            "before_planning",
            "pre_llm_request:planning:0",
            "post_llm_response:planning:0",
            "after_planning",
            "before_each_agent:1",
            "before_first_agent:1",
            "pre_llm_request:agent1:4",
            "post_llm_response:agent1:2",
            "pre_tool_execution:read_file:{\"path\":\"README.md\"}",
            "post_tool_execution:read_file:false",
            "pre_tool_execution:read_file:{\"path\":\"nope.txt\"}",
            "post_tool_execution_failure:read_file",
            "after_tool_call:read_file",
            "before_each_agent:2",
            "pre_llm_request:agent2:4",
            "post_llm_response:agent2:0",
            "stop:answer",
            "after_agent_loop",
            "run_completed:answer:2:40",
            "session_end",
        ]
    );
    server.shutdown().await;
}

/// Adds a message to one call only, and one to the persistent list.
struct Injector;

#[async_trait]
impl AgentHook for Injector {
    async fn post_send_message(&self, ctx: &mut HookContext) -> HookResult {
        ctx.messages.push(Message::system("PERSISTENT NOTE"));
        Ok(())
    }
    async fn pre_llm_request(
        &self,
        _: &mut HookContext,
        request: &mut LlmRequest,
    ) -> HookResult<Flow> {
        if request.phase == CallPhase::Planning {
            request.inject_message(Role::System, "PLANNING ONLY", false);
            request.inject_system_context("EXTRA CONTEXT");
        }
        Ok(Flow::Continue)
    }
    async fn after_tool_call(&self, ctx: &mut HookContext, _: &[String]) -> HookResult {
        ctx.disable_tool("read_file");
        Ok(())
    }
}

#[tokio::test]
async fn per_call_changes_stay_in_their_call_and_persistent_ones_persist() {
    let upstream = FakeUpstream::start().await;
    tool_script(&upstream);
    let server = TestServer::builder()
        .workspace(workspace())
        .upstream(&upstream)
        .agent(|b| b.hook(Arc::new(Injector)))
        .start()
        .await;
    let mut client = server.connect().await;
    client.chat(json!({"type":"chat","input":"read it"})).await;
    let requests = upstream.requests();
    assert_eq!(requests.len(), 3);
    let count = |i: usize, text: &str| {
        requests[i]
            .messages()
            .iter()
            .filter(|(_, c)| c.contains(text))
            .count()
    };
    assert_eq!(
        (
            count(0, "PLANNING ONLY"),
            count(1, "PLANNING ONLY"),
            count(2, "PLANNING ONLY")
        ),
        (1, 0, 0)
    );
    assert_eq!(
        (count(0, "EXTRA CONTEXT"), count(1, "EXTRA CONTEXT")),
        (1, 0)
    );
    assert_eq!(
        (
            count(0, "PERSISTENT NOTE"),
            count(1, "PERSISTENT NOTE"),
            count(2, "PERSISTENT NOTE")
        ),
        (1, 1, 1)
    );
    // The system prompt got the extra context, for the planning call only.
    assert!(requests[0].messages()[0].1.ends_with("EXTRA CONTEXT"));
    // Disabled after round 1's tools: gone from round 2's request.
    assert_eq!(
        requests[1].tool_names().unwrap(),
        ["list_dir", "read_file", "register_hook", "search_text"]
    );
    assert_eq!(
        requests[2].tool_names().unwrap(),
        ["list_dir", "register_hook", "search_text"]
    );
    server.shutdown().await;
}

/// Rewrites `README.md` reads to `b.txt`, and skips `list_dir`.
struct ToolControl;

#[async_trait]
impl AgentHook for ToolControl {
    async fn pre_tool_execution(
        &self,
        _: &mut HookContext,
        call: &mut ToolCallInfo,
    ) -> HookResult<ToolAction> {
        if call.name == "list_dir" {
            return Ok(ToolAction::Skip {
                reason: "listing is not allowed here".into(),
            });
        }
        call.arguments["path"] = json!("b.txt");
        Ok(ToolAction::Run)
    }
    async fn post_tool_execution(
        &self,
        _: &mut HookContext,
        _: &ToolCallInfo,
        result: &mut ToolResultInfo,
    ) -> HookResult<Flow> {
        result.content = format!("[checked] {}", result.content);
        Ok(Flow::Continue)
    }
}

#[tokio::test]
async fn tool_hooks_change_arguments_skip_and_rewrite_results() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["[NEED_TOOL] go"]));
    upstream.push(Reply::tool_calls(&[
        ("c1", "read_file", json!({"path":"README.md"})),
        ("c2", "list_dir", json!({})),
    ]));
    upstream.push(Reply::text(&["ok"]));
    let server = TestServer::builder()
        .workspace(workspace())
        .upstream(&upstream)
        .agent(|b| b.hook(Arc::new(ToolControl)))
        .start()
        .await;
    let mut client = server.connect().await;
    let frames = client.chat(json!({"type":"chat","input":"go"})).await;
    let call = frames.iter().find(|f| f["type"] == "tool_call").unwrap();
    assert_eq!(
        call["arguments"],
        json!({"path":"b.txt"}),
        "the frame shows the arguments that ran"
    );
    let results: Vec<&serde_json::Value> = frames
        .iter()
        .filter(|f| f["type"] == "tool_result")
        .collect();
    assert_eq!(
        results[0]["content"].as_str().unwrap().trim(),
        "[checked] bee"
    );
    assert_eq!(results[1]["is_error"], true);
    assert!(results[1]["content"]
        .as_str()
        .unwrap()
        .contains("listing is not allowed here"));
    let last = upstream.requests().pop().unwrap();
    let tools: Vec<String> = last
        .messages()
        .into_iter()
        .filter(|(r, _)| r == "tool")
        .map(|(_, c)| c)
        .collect();
    assert!(
        tools[1].contains("listing is not allowed here"),
        "the model sees the reason"
    );
    server.shutdown().await;
}

/// Fails in one event, panics in another, and replaces the output at the end.
struct Unruly;

#[async_trait]
impl AgentHook for Unruly {
    fn name(&self) -> &str {
        "unruly"
    }
    async fn pre_send_message(&self, _: &mut HookContext, _: &mut String) -> HookResult<Flow> {
        Err("database unavailable".into())
    }
    async fn pre_llm_request(&self, _: &mut HookContext, _: &mut LlmRequest) -> HookResult<Flow> {
        panic!("hook bug");
    }
    async fn run_completed(&self, ctx: &mut HookContext, output: &mut RunOutput) -> HookResult {
        ctx.notify(NoticeLevel::Info, "output replaced", "unruly");
        output.content = "REPLACED".into();
        Ok(())
    }
}

#[tokio::test]
async fn a_failing_or_panicking_hook_does_not_break_the_chat() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["fine"]));
    let recorder = Arc::new(Recorder::default());
    let log = recorder.log.clone();
    let server = TestServer::builder()
        .workspace(workspace())
        .upstream(&upstream)
        .agent(move |b| b.hook(Arc::new(Unruly)).hook(recorder))
        .start()
        .await;
    let mut client = server.connect().await;
    let frames = client.chat(json!({"type":"chat","input":"hi"})).await;
    assert_eq!(text_of(&frames), "fine");
    let notice = frames.iter().find(|f| f["type"] == "notice").unwrap();
    assert_eq!(
        (notice["message"].as_str(), notice["source"].as_str()),
        (Some("output replaced"), Some("unruly"))
    );
    let done = frames.last().unwrap();
    assert_eq!(
        (done["reason"].as_str(), done["message"]["content"].as_str()),
        (Some("completed"), Some("REPLACED"))
    );
    // The hooks after the broken one still ran.
    assert!(log
        .lock()
        .unwrap()
        .iter()
        .any(|e| e.starts_with("pre_llm_request")));
    let (_, metrics) = http_get(server.addr, "/metrics").await;
    assert!(
        metrics
            .lines()
            .any(|l| l.contains("hook=\"unruly\"") && l.contains("outcome=\"panic\"")),
        "{metrics}"
    );
    assert!(metrics
        .lines()
        .any(|l| l.contains("hook=\"unruly\"") && l.contains("outcome=\"error\"")));
    server.shutdown().await;
}

/// Stops the chat before the model runs, or after its response.
struct Gate {
    before_model: bool,
}

#[async_trait]
impl AgentHook for Gate {
    async fn pre_send_message(&self, _: &mut HookContext, input: &mut String) -> HookResult<Flow> {
        if self.before_model && input.contains("secret") {
            return Ok(Flow::Stop {
                reason: "no secrets here".into(),
            });
        }
        *input = input.to_uppercase();
        Ok(Flow::Continue)
    }
    async fn post_llm_response(
        &self,
        _: &mut HookContext,
        _: &mut LlmResponse,
    ) -> HookResult<ResponseAction> {
        Ok(ResponseAction::Stop {
            reason: "enough".into(),
        })
    }
}

#[tokio::test]
async fn a_stop_before_the_model_is_hook_blocked_and_after_it_done_stopped() {
    let upstream = FakeUpstream::start().await;
    let server = TestServer::builder()
        .workspace(workspace())
        .upstream(&upstream)
        .agent(|b| b.hook(Arc::new(Gate { before_model: true })))
        .start()
        .await;
    let mut client = server.connect().await;
    let frames = client
        .chat(json!({"type":"chat","id":"g","input":"tell me the secret"}))
        .await;
    let last = frames.last().unwrap();
    assert_eq!(
        (last["type"].as_str(), last["code"].as_str()),
        (Some("error"), Some("hook_blocked"))
    );
    assert_eq!(last["message"], "no secrets here");
    assert!(upstream.requests().is_empty(), "the model never ran");

    upstream.push(Reply::text(&["partial"]));
    let frames = client
        .chat(json!({"type":"chat","id":"h","input":"hello"}))
        .await;
    let done = frames.last().unwrap();
    assert_eq!(done["reason"], "stopped");
    assert!(frames
        .iter()
        .any(|f| f["type"] == "notice" && f["message"] == "enough"));
    // pre_send_message rewrote the input.
    assert!(upstream.requests()[0]
        .messages()
        .iter()
        .any(|(r, c)| r == "user" && c == "HELLO"));
    server.shutdown().await;
}

/// Reads the chat's settings, adds to the system prompt with its own separator, and rewrites
/// the final answer at the end of the chat.
struct Budgeted;

#[async_trait]
impl AgentHook for Budgeted {
    fn name(&self) -> &str {
        "budgeted"
    }
    async fn pre_send_message(&self, ctx: &mut HookContext, _: &mut String) -> HookResult<Flow> {
        let budget = ctx.config().max_total_tokens.unwrap_or(0);
        ctx.append_to_system_prompt_with(&format!("BUDGET={budget}"), " | ");
        ctx.prepend_to_system_prompt_with("FIRST", " :: ");
        Ok(Flow::Continue)
    }
    async fn on_run_end(
        &self,
        _: &mut HookContext,
        outcome: &mut hookwire::hooks::RunOutcome,
    ) -> HookResult {
        if let hookwire::hooks::RunOutcome::Done(output) = outcome {
            output.content = format!("{} [checked]", output.content);
        }
        Ok(())
    }
}

#[tokio::test]
async fn a_hook_reads_the_config_uses_its_separators_and_rewrites_the_end() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["answer"]));
    let server = TestServer::builder()
        .workspace(workspace())
        .upstream(&upstream)
        .config(|c| c.agent.max_total_tokens = Some(4321))
        .agent(|b| b.hook(Arc::new(Budgeted)))
        .start()
        .await;
    let frames = server
        .connect()
        .await
        .chat(json!({"type":"chat","input":"hi","enable_tools":false}))
        .await;
    let done = frames.last().unwrap();
    assert_eq!(done["message"]["content"], "answer [checked]", "{done}");
    let system = upstream.requests()[0].messages()[0].1.clone();
    assert!(system.starts_with("FIRST :: "), "{system}");
    assert!(system.ends_with(" | BUDGET=4321"), "{system}");
}

/// A tool that takes 80 ms.
struct Slow;

#[async_trait]
impl hookwire::tools::Tool for Slow {
    fn spec(&self) -> hookwire::tools::ToolSpec {
        hookwire::tools::ToolSpec {
            name: "slow".into(),
            description: "takes its time".into(),
            parameters: json!({"type":"object","properties":{}}),
        }
    }
    async fn run(&self, _: serde_json::Value) -> hookwire::tools::ToolOutput {
        tokio::time::sleep(Duration::from_millis(80)).await;
        hookwire::tools::ToolOutput::ok("done slowly")
    }
}

/// Writes the chat's steps, as `run_completed` sees them, with their usage and timing.
#[derive(Default)]
struct StepLog {
    log: Arc<Mutex<Vec<String>>>,
}

#[async_trait]
impl AgentHook for StepLog {
    async fn run_completed(&self, ctx: &mut HookContext, _: &mut RunOutput) -> HookResult {
        for step in ctx.steps() {
            let line = match step {
                hookwire::hooks::Step::Assistant { usage, .. } => format!(
                    "assistant:{}:{}",
                    usage.prompt_tokens, usage.completion_tokens
                ),
                hookwire::hooks::Step::Tool { name, duration, .. } => {
                    format!("tool:{name}:{}", duration.as_millis() >= 80)
                }
                _ => "other".into(),
            };
            self.log.lock().unwrap().push(line);
        }
        Ok(())
    }
}

#[tokio::test]
async fn steps_carry_their_model_calls_usage_and_their_tools_timing() {
    let upstream = FakeUpstream::start().await;
    tool_round(&upstream, &[("s1", "slow", json!({}))], "answer");
    let steps = Arc::new(StepLog::default());
    let log = steps.log.clone();
    let server = TestServer::builder()
        .workspace(workspace())
        .upstream(&upstream)
        .agent(move |b| b.tool(Arc::new(Slow)).hook(steps))
        .start()
        .await;
    let frames = chat(&server, json!({"type":"chat","input":"go slowly"})).await;
    assert_eq!(frames.last().unwrap()["type"], "done", "{frames:#?}");
    // The fake upstream reports 10/1 for a one-piece text reply and 20/5 for tool calls.
    assert_eq!(
        *log.lock().unwrap(),
        [
            "assistant:10:1",
            "assistant:20:5",
            "tool:slow:true",
            "assistant:10:1"
        ]
    );
    server.shutdown().await;
}
