//! Test doubles for driving `AgentClient::chat_stream` without a server: a [`ScriptedModel`]
//! that answers each call with the next canned reply and records every request, a tool that
//! echoes its arguments, and a [`Recorder`] hook that logs every event it sees.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::{stream, StreamExt};
use serde_json::{json, Value};

use crate::hooks::{
    AgentHook, CallPhase, Flow, HookContext, HookResult, LlmRequest, LlmResponse, ResponseAction,
    RunOutput, StopAction, ToolAction, ToolCallInfo, ToolResultInfo,
};
use crate::llm::{ChatModel, LlmError, ModelEvent, ModelRequest, ModelStream};
use crate::tools::{Tool, ToolOutput, ToolSpec};
use crate::types::{ChatError, ChatEvent, ToolCall, Usage};

/// What every scripted reply reports as its usage.
pub(crate) const USAGE: Usage = Usage {
    prompt_tokens: 10,
    completion_tokens: 2,
    hook_calls: 0,
    hook_prompt_tokens: 0,
    hook_completion_tokens: 0,
};

/// One scripted model call.
pub(crate) enum Reply {
    /// These events, in order (a well-formed reply ends with `Finished`).
    Events(Vec<Result<ModelEvent, LlmError>>),
    /// The call fails before its first event (connect, HTTP status).
    Refuse(LlmError),
    /// These text deltas, then nothing, ever (until the chat drops the stream).
    Hang(Vec<&'static str>),
}

impl Reply {
    /// A text answer in these deltas.
    pub(crate) fn text(deltas: &[&str]) -> Self {
        let mut events: Vec<_> = deltas
            .iter()
            .map(|delta| Ok(ModelEvent::Text(delta.to_string())))
            .collect();
        events.push(Ok(finished(Vec::new())));
        Reply::Events(events)
    }

    /// A reply that only calls tools: `(id, name, raw arguments)`.
    pub(crate) fn tool_calls(calls: &[(&str, &str, &str)]) -> Self {
        let calls = calls
            .iter()
            .map(|(id, name, arguments)| ToolCall {
                id: id.to_string(),
                name: name.to_string(),
                arguments: arguments.to_string(),
            })
            .collect();
        Reply::Events(vec![Ok(finished(calls))])
    }
}

fn finished(tool_calls: Vec<ToolCall>) -> ModelEvent {
    let finish_reason = if tool_calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    ModelEvent::Finished {
        tool_calls,
        finish_reason: Some(finish_reason.into()),
        usage: Some(USAGE),
    }
}

/// A model that plays a script, one reply per call, and keeps every request it got.
pub(crate) struct ScriptedModel {
    replies: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<ModelRequest>>,
}

impl ScriptedModel {
    pub(crate) fn new(replies: impl IntoIterator<Item = Reply>) -> Arc<Self> {
        Arc::new(Self {
            replies: Mutex::new(replies.into_iter().collect()),
            requests: Mutex::new(Vec::new()),
        })
    }

    pub(crate) fn requests(&self) -> Vec<ModelRequest> {
        self.requests.lock().unwrap().clone()
    }
}

#[async_trait]
impl ChatModel for ScriptedModel {
    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, LlmError> {
        self.requests.lock().unwrap().push(request);
        let reply = self.replies.lock().unwrap().pop_front();
        match reply {
            None => Err(LlmError::Stream("the script has no reply left".into())),
            Some(Reply::Refuse(error)) => Err(error),
            Some(Reply::Events(events)) => Ok(stream::iter(events).boxed()),
            Some(Reply::Hang(deltas)) => Ok(stream::iter(deltas)
                .map(|delta| Ok(ModelEvent::Text(delta.to_string())))
                .chain(stream::pending())
                .boxed()),
        }
    }
}

/// `echo`: answers with its arguments.
pub(crate) struct Echo;

#[async_trait]
impl Tool for Echo {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "echo".into(),
            description: "Echoes its arguments.".into(),
            parameters: json!({"type": "object"}),
        }
    }
    async fn run(&self, arguments: Value) -> ToolOutput {
        ToolOutput::ok(format!("echo {arguments}"))
    }
}

/// What `run_completed` saw of the chat's record.
#[derive(Debug, PartialEq)]
pub(crate) struct Record {
    pub(crate) usage: Usage,
    pub(crate) tool_calls: usize,
    pub(crate) steps: usize,
}

/// Logs every event it sees, one line each; acts only where a field says so.
#[derive(Default)]
pub(crate) struct Recorder {
    pub(crate) lines: Mutex<Vec<String>>,
    /// `pre_send_message` stops with this reason.
    pub(crate) stop_input: Option<String>,
    /// `pre_tool_execution` stops with this reason.
    pub(crate) stop_tools: Option<String>,
    /// The first `post_llm_response` asks for a retry with this feedback.
    pub(crate) retry_once: Mutex<Option<String>>,
    pub(crate) record: Mutex<Option<Record>>,
}

impl Recorder {
    pub(crate) fn log(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }
    fn push(&self, line: impl Into<String>) {
        self.lines.lock().unwrap().push(line.into());
    }
}

fn phase(phase: CallPhase) -> String {
    match phase {
        CallPhase::Direct => "direct".into(),
        CallPhase::Planning => "planning".into(),
        CallPhase::Agent { round } => format!("agent{round}"),
        CallPhase::Summary => "summary".into(),
        CallPhase::Compaction => "compaction".into(),
    }
}

#[async_trait]
impl AgentHook for Recorder {
    async fn pre_send_message(&self, _: &mut HookContext, _: &mut String) -> HookResult<Flow> {
        self.push("pre_send_message");
        Ok(match self.stop_input.clone() {
            Some(reason) => Flow::Stop { reason },
            None => Flow::Continue,
        })
    }
    async fn post_send_message(&self, _: &mut HookContext) -> HookResult {
        self.push("post_send_message");
        Ok(())
    }
    async fn before_planning(&self, _: &mut HookContext) -> HookResult {
        self.push("before_planning");
        Ok(())
    }
    async fn after_planning(&self, _: &mut HookContext) -> HookResult {
        self.push("after_planning");
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
        self.push("after_agent_loop");
        Ok(())
    }
    async fn pre_llm_request(&self, _: &mut HookContext, r: &mut LlmRequest) -> HookResult<Flow> {
        self.push(format!("pre_llm_request:{}", phase(r.phase)));
        Ok(Flow::Continue)
    }
    async fn post_llm_response(
        &self,
        _: &mut HookContext,
        response: &mut LlmResponse,
    ) -> HookResult<ResponseAction> {
        self.push(format!("post_llm_response:{}", phase(response.phase)));
        Ok(match self.retry_once.lock().unwrap().take() {
            Some(feedback) => ResponseAction::Retry { feedback },
            None => ResponseAction::Continue,
        })
    }
    async fn pre_tool_execution(
        &self,
        _: &mut HookContext,
        call: &mut ToolCallInfo,
    ) -> HookResult<ToolAction> {
        self.push(format!("pre_tool_execution:{}", call.name));
        Ok(match self.stop_tools.clone() {
            Some(reason) => ToolAction::Stop { reason },
            None => ToolAction::Run,
        })
    }
    async fn post_tool_execution(
        &self,
        _: &mut HookContext,
        call: &ToolCallInfo,
        _: &mut ToolResultInfo,
    ) -> HookResult<Flow> {
        self.push(format!("post_tool_execution:{}", call.name));
        Ok(Flow::Continue)
    }
    async fn stop(&self, _: &mut HookContext, output: &str) -> HookResult<StopAction> {
        self.push(format!("stop:{output}"));
        Ok(StopAction::Finish)
    }
    async fn run_completed(&self, ctx: &mut HookContext, _: &mut RunOutput) -> HookResult {
        self.push("run_completed");
        *self.record.lock().unwrap() = Some(Record {
            usage: ctx.usage(),
            tool_calls: ctx.tool_calls_count(),
            steps: ctx.steps().len(),
        });
        Ok(())
    }
    async fn run_failed(&self, _: &mut HookContext, error: &ChatError) -> HookResult {
        self.push(format!("run_failed:{}", error.code.as_str()));
        Ok(())
    }
}

/// An event as one short line.
pub(crate) fn show(event: &ChatEvent) -> String {
    match event {
        ChatEvent::Started { .. } => "start".into(),
        ChatEvent::StepStarted(step) => format!("step:{step}"),
        ChatEvent::Text(text) => format!("text:{text}"),
        ChatEvent::Plan(plan) => format!("plan:{plan}"),
        ChatEvent::ToolCall {
            call_id,
            name,
            arguments,
        } => format!("tool_call:{call_id}:{name}:{arguments}"),
        ChatEvent::ToolResult {
            call_id,
            content,
            is_error,
            ..
        } => format!("tool_result:{call_id}:{is_error}:{content}"),
        ChatEvent::Hook(message) => format!("hook:{}", message.content),
        ChatEvent::SessionHook(hook) => format!("session_hook:{hook}"),
        ChatEvent::Notice {
            level,
            message,
            source,
        } => format!("notice:{}:{source}:{message}", level.as_str()),
        ChatEvent::Done {
            reason,
            content,
            usage,
            ..
        } => format!(
            "done:{}:{content}:{}+{}",
            reason.as_str(),
            usage.prompt_tokens,
            usage.completion_tokens
        ),
        ChatEvent::Error(error) => format!("error:{}:{}", error.code.as_str(), error.message),
        ChatEvent::Compact { count, pinned, .. } => format!("compact:{count}:{}", pinned.len()),
        ChatEvent::Approval { calls, .. } => format!("approval:{}", calls.len()),
        ChatEvent::HookTrace(trace) => format!("trace:{}:{}", trace.hook, trace.outcome),
    }
}

/// A request's messages, one short line each: `role:content`, an assistant's tool calls in
/// brackets, a tool message's call id in brackets.
pub(crate) fn messages(request: &ModelRequest) -> Vec<String> {
    request
        .messages
        .iter()
        .map(|message| {
            let calls: Vec<String> = message
                .tool_calls
                .iter()
                .map(|call| format!("{}={}", call.id, call.name))
                .collect();
            let role = message.role.as_str();
            match &message.tool_call_id {
                Some(id) => format!("{role}[{id}]:{}", message.content),
                None if !calls.is_empty() => {
                    format!("{role}[{}]:{}", calls.join(","), message.content)
                }
                None => format!("{role}:{}", message.content),
            }
        })
        .collect()
}

/// The names of the tools a request offered.
pub(crate) fn tool_names(request: &ModelRequest) -> Vec<String> {
    request.tools.iter().map(|tool| tool.name.clone()).collect()
}
