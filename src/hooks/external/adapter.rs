//! [`ExternalHooks`]: a fixed set of YAML hooks as one [`AgentHook`].
//!
//! Every method takes one path, [`ExternalHooks::fire`]: when the event has no hooks it returns
//! the default at once (nothing is copied); otherwise it reads the event's values from the call
//! ([`Call::state`]), runs the chain, sends the chain's notices, writes what the hooks changed
//! back where it came from ([`Call::write_back`]) and turns the chain's decision into the
//! method's answer ([`Decision`]). Which values an event carries is the table in
//! [`Call::state`]; which of them a hook may change is [`super::chain`]'s `apply`.

use std::sync::Arc;

use async_trait::async_trait;

use super::chain::{Chain, ChainControl, ChainOutcome};
use super::event::Event;
use super::protocol::{Envelope, EventState};
use super::runner::Runner;
use super::HookSet;
use crate::hooks::{
    AgentHook, Flow, HookContext, HookResult, LlmRequest, LlmResponse, ResponseAction, RunOutput,
    SessionInfo, StopAction, ToolAction, ToolCallInfo, ToolResultInfo,
};
use crate::types::{ChatError, Message, NoticeLevel, Role};

/// The adapter for one fixed set: the hook files as a chat started with them (see
/// [`super::HookFiles`]), or a chat's session hooks.
pub(crate) struct ExternalHooks {
    pub(super) set: Arc<HookSet>,
    runner: Arc<Runner>,
    /// Set for per-chat session hooks: their origin in logs.
    label: &'static str,
}

impl ExternalHooks {
    pub(crate) fn new(set: HookSet, runner: Arc<Runner>) -> Self {
        Self::of(Arc::new(set), runner)
    }

    pub(super) fn of(set: Arc<HookSet>, runner: Arc<Runner>) -> Self {
        Self {
            set,
            runner,
            label: "external",
        }
    }

    pub(crate) fn with_label(mut self, label: &'static str) -> Self {
        self.label = label;
        self
    }

    /// `event`'s chain; `None` when the event has no hooks.
    fn chain(&self, event: Event) -> Option<Chain<'_>> {
        let hooks = self.set.hooks(event);
        (!hooks.is_empty()).then_some(Chain {
            event,
            hooks,
            budget: self.runner.chain_budget,
        })
    }

    /// The one path of every chat event (see the module doc). Never `Err`: a hook's failure is
    /// the chain's to log.
    async fn fire<A: Decision>(&self, ctx: &mut HookContext, call: Call<'_>) -> HookResult<A> {
        let Some(chain) = self.chain(call.event()) else {
            return Ok(A::default());
        };
        let envelope = Envelope {
            session_id: ctx.session_id.clone(),
            run_id: Some(ctx.run_id.clone()),
            cwd: ctx.cwd.display().to_string(),
            model: ctx.model.clone(),
        };
        let mut state = call.state(ctx);
        let mut outcome = chain.run(self.runner.as_ref(), &envelope, &mut state).await;
        for message in std::mem::take(&mut outcome.notices) {
            ctx.notify(NoticeLevel::Info, message, self.label);
        }
        call.write_back(ctx, state, &outcome);
        Ok(decide(outcome.control))
    }

    /// The connection events: no chat, so the envelope is the server's and notices go nowhere.
    async fn fire_session(&self, event: Event, session: &SessionInfo) {
        let Some(chain) = self.chain(event) else {
            return;
        };
        let envelope = Envelope {
            session_id: session.session_id.clone(),
            cwd: self.runner.cwd.display().to_string(),
            model: self.runner.model_name.clone(),
            run_id: None,
        };
        let mut state = EventState::default();
        chain.run(self.runner.as_ref(), &envelope, &mut state).await;
    }
}

/// A chat event with the values of its call, borrowed: the event's values are read from them
/// and the hooks' changes written back to them.
enum Call<'a> {
    BeforeContextBuild,
    PreSendMessage(&'a mut String),
    AfterContextBuild,
    PostSendMessage,
    PreLlmRequest(&'a mut LlmRequest),
    PostLlmResponse(&'a mut LlmResponse),
    PreToolExecution(&'a mut ToolCallInfo),
    PostToolExecution(&'a ToolCallInfo, &'a mut ToolResultInfo),
    PostToolExecutionFailure(&'a ToolCallInfo, &'a mut ToolResultInfo),
    Stop(&'a str),
    RunCompleted(&'a mut RunOutput),
    RunFailed(&'a ChatError),
}

impl Call<'_> {
    fn event(&self) -> Event {
        match self {
            Call::BeforeContextBuild => Event::BeforeContextBuild,
            Call::PreSendMessage(_) => Event::PreSendMessage,
            Call::AfterContextBuild => Event::AfterContextBuild,
            Call::PostSendMessage => Event::PostSendMessage,
            Call::PreLlmRequest(_) => Event::PreLlmRequest,
            Call::PostLlmResponse(_) => Event::PostLlmResponse,
            Call::PreToolExecution(_) => Event::PreToolExecution,
            Call::PostToolExecution(..) => Event::PostToolExecution,
            Call::PostToolExecutionFailure(..) => Event::PostToolExecutionFailure,
            Call::Stop(_) => Event::Stop,
            Call::RunCompleted(_) => Event::RunCompleted,
            Call::RunFailed(_) => Event::RunFailed,
        }
    }

    /// The values the event's hooks see (copies: the chain works on them).
    fn state(&self, ctx: &HookContext) -> EventState {
        let chat = || Some(ctx.messages.clone());
        let last_input = || ctx.last_user_message().map(|m| m.content.clone());
        let tool = |call: &ToolCallInfo| EventState {
            tool_name: Some(call.name.clone()),
            tool_arguments: Some(call.arguments.clone()),
            ..EventState::default()
        };
        match self {
            Call::BeforeContextBuild | Call::AfterContextBuild => EventState {
                messages: chat(),
                ..EventState::default()
            },
            Call::PreSendMessage(input) => EventState {
                user_input: Some(input.to_string()),
                messages: chat(),
                ..EventState::default()
            },
            Call::PostSendMessage => EventState {
                user_input: last_input(),
                messages: chat(),
                ..EventState::default()
            },
            Call::PreLlmRequest(request) => EventState {
                messages: Some(request.messages.clone()),
                system_prompt: system_prompt(&request.messages),
                ..EventState::default()
            },
            Call::PostLlmResponse(response) => EventState {
                assistant_output: Some(response.content.clone()),
                messages: chat(),
                ..EventState::default()
            },
            Call::PreToolExecution(call) => tool(call),
            Call::PostToolExecution(call, result) => EventState {
                tool_result: Some(result.content.clone()),
                ..tool(call)
            },
            Call::PostToolExecutionFailure(call, result) => EventState {
                tool_error: Some(result.content.clone()),
                ..tool(call)
            },
            Call::Stop(output) => EventState {
                user_input: last_input(),
                messages: chat(),
                system_prompt: ctx.system_prompt().map(str::to_string),
                assistant_output: Some(output.to_string()),
                ..EventState::default()
            },
            Call::RunCompleted(output) => EventState {
                assistant_output: Some(output.content.clone()),
                ..EventState::default()
            },
            Call::RunFailed(error) => EventState {
                error: Some(error.to_string()),
                ..EventState::default()
            },
        }
    }

    /// Puts the values the hooks changed back where they came from, with the chain's extras
    /// (injected messages, context, retry feedback) where the event takes them.
    fn write_back(self, ctx: &mut HookContext, state: EventState, outcome: &ChainOutcome) {
        match self {
            Call::PreSendMessage(input) => put(input, state.user_input),
            Call::AfterContextBuild => put(&mut ctx.messages, state.messages),
            Call::PreLlmRequest(request) => rewrite_request(request, state, outcome),
            Call::PostLlmResponse(response) => put(&mut response.content, state.assistant_output),
            Call::PreToolExecution(call) => put(&mut call.arguments, state.tool_arguments),
            Call::PostToolExecution(_, result) => put(&mut result.content, state.tool_result),
            Call::PostToolExecutionFailure(_, result) => {
                put(&mut result.content, state.tool_error);
                for context in &outcome.additional_context {
                    result.content.push_str("\n\n");
                    result.content.push_str(context);
                }
            }
            Call::Stop(_) => {
                for context in &outcome.additional_context {
                    ctx.append_to_system_prompt(context);
                }
            }
            Call::RunCompleted(output) => put(&mut output.content, state.assistant_output),
            Call::BeforeContextBuild | Call::PostSendMessage | Call::RunFailed(_) => {}
        }
    }
}

/// Replaces `slot` when the chain left a value (unchanged values are equal: no harm).
fn put<T>(slot: &mut T, value: Option<T>) {
    if let Some(value) = value {
        *slot = value;
    }
}

fn system_prompt(messages: &[Message]) -> Option<String> {
    messages
        .iter()
        .find(|m| m.role == Role::System)
        .map(|m| m.content.clone())
}

/// `pre_llm_request`: the messages, then the system prompt if a hook changed it, then the
/// injected messages, the context and the retry feedback, for this call only.
fn rewrite_request(request: &mut LlmRequest, state: EventState, outcome: &ChainOutcome) {
    let before = system_prompt(&request.messages);
    put(&mut request.messages, state.messages);
    if let Some(prompt) = state.system_prompt.filter(|p| Some(p) != before.as_ref()) {
        match request.messages.iter_mut().find(|m| m.role == Role::System) {
            Some(message) => message.content = prompt,
            None => request.messages.insert(0, Message::system(prompt)),
        }
    }
    request
        .messages
        .extend(outcome.inject_messages.iter().cloned());
    for context in &outcome.additional_context {
        request.inject_system_context(context);
    }
    if let Some(ChainControl::Retry(feedback)) = &outcome.control {
        request.messages.push(Message::user(feedback.clone()));
    }
}

/// A method's answer from the decision that ended the chain. A decision an answer cannot take
/// is its default (`apply` lets no such decision through: a `skip` only ends a tool chain).
trait Decision: Default {
    fn stop(_reason: String) -> Self {
        Self::default()
    }
    fn skip(_reason: String) -> Self {
        Self::default()
    }
    fn retry(_feedback: String) -> Self {
        Self::default()
    }
}

/// No decision: the default answer (go on, run the tool, finish).
fn decide<A: Decision>(control: Option<ChainControl>) -> A {
    match control {
        None => A::default(),
        Some(ChainControl::Stop(reason)) => A::stop(reason),
        Some(ChainControl::Skip(reason)) => A::skip(reason),
        Some(ChainControl::Retry(feedback)) => A::retry(feedback),
    }
}

impl Decision for () {}

impl Decision for Flow {
    fn stop(reason: String) -> Self {
        Flow::Stop { reason }
    }
}

impl Decision for ResponseAction {
    fn stop(reason: String) -> Self {
        ResponseAction::Stop { reason }
    }
    fn retry(feedback: String) -> Self {
        ResponseAction::Retry { feedback }
    }
}

impl Decision for ToolAction {
    fn stop(reason: String) -> Self {
        ToolAction::Stop { reason }
    }
    fn skip(reason: String) -> Self {
        ToolAction::Skip { reason }
    }
}

impl Decision for StopAction {
    fn retry(feedback: String) -> Self {
        StopAction::Continue { feedback }
    }
}

/// The [`AgentHook`] impl as a table. A row: a chat method, its values besides `ctx`, its
/// answer, and the [`Call`] it fires (the two `send_message` methods fire an observe-only seed
/// 004 event first). Every row takes the one path, [`ExternalHooks::fire`].
macro_rules! chat_events {
    ($($method:ident($($arg:ident: $ty:ty),*) -> $answer:ty
        => $call:expr $(, after $before:ident)?;)*) => {
        #[async_trait]
        impl AgentHook for ExternalHooks {
            fn name(&self) -> &str {
                self.label
            }

            async fn session_start(&self, session: &SessionInfo) -> HookResult {
                self.fire_session(Event::SessionStart, session).await;
                Ok(())
            }

            async fn session_end(&self, session: &SessionInfo) -> HookResult {
                self.fire_session(Event::SessionEnd, session).await;
                Ok(())
            }

            $(async fn $method(
                &self,
                ctx: &mut HookContext,
                $($arg: $ty),*
            ) -> HookResult<$answer> {
                $(self.fire::<()>(ctx, Call::$before).await?;)?
                self.fire(ctx, $call).await
            })*
        }
    };
}

chat_events! {
    pre_send_message(input: &mut String) -> Flow
        => Call::PreSendMessage(input), after BeforeContextBuild;
    post_send_message() -> ()
        => Call::PostSendMessage, after AfterContextBuild;
    pre_llm_request(request: &mut LlmRequest) -> Flow
        => Call::PreLlmRequest(request);
    post_llm_response(response: &mut LlmResponse) -> ResponseAction
        => Call::PostLlmResponse(response);
    pre_tool_execution(call: &mut ToolCallInfo) -> ToolAction
        => Call::PreToolExecution(call);
    post_tool_execution(call: &ToolCallInfo, result: &mut ToolResultInfo) -> Flow
        => Call::PostToolExecution(call, result);
    post_tool_execution_failure(call: &ToolCallInfo, result: &mut ToolResultInfo) -> Flow
        => Call::PostToolExecutionFailure(call, result);
    stop(output: &str) -> StopAction
        => Call::Stop(output);
    run_completed(output: &mut RunOutput) -> ()
        => Call::RunCompleted(output);
    run_failed(error: &ChatError) -> ()
        => Call::RunFailed(error);
}
