//! `ExternalHooks`: hooks from YAML (seeds 001 and 004) as one [`AgentHook`] adapter.
//!
//! Each event runs its chain: the hooks of that event in order (server level, then workspace
//! level), filters first; each hook sees the values as the previous one left them; the first
//! hook that stops, skips, blocks or asks for a retry ends the chain. `on_error: skip` logs a
//! failure and goes on, `abort` ends the chain. A chain has a time budget in all (30 s unless
//! `limits.hook_chain_timeout_seconds` says otherwise); each hook its own timeout within that.

pub mod config;
mod discovery;
pub mod event;
mod files;
pub mod protocol;
pub mod register_hook;
pub mod runner;
pub mod session;

pub use discovery::{hook_files, load_hook_set, HookSet};
pub use files::HookFiles;

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;

use self::config::{HookDef, OnError};
use self::event::Event;
use self::protocol::{input_json, parse_output, Control, Envelope, EventState, HookOutput};
use self::runner::{RunResult, Runner};
use super::{
    AgentHook, Flow, HookContext, HookResult, LlmRequest, LlmResponse, ResponseAction, RunOutput,
    SessionInfo, StopAction, ToolAction, ToolCallInfo, ToolResultInfo,
};
use crate::types::{ChatError, NoticeLevel};
use crate::types::{Message, Role};

/// The adapter for one fixed set: the hook files as a chat started with them (see [`HookFiles`]),
/// or a chat's session hooks.
pub struct ExternalHooks {
    set: Arc<HookSet>,
    runner: Arc<Runner>,
    /// Set for per-chat session hooks: their origin in logs.
    label: &'static str,
}

impl ExternalHooks {
    pub fn new(set: HookSet, runner: Arc<Runner>) -> Self {
        Self::of(Arc::new(set), runner)
    }

    fn of(set: Arc<HookSet>, runner: Arc<Runner>) -> Self {
        Self {
            set,
            runner,
            label: "external",
        }
    }

    pub fn with_label(mut self, label: &'static str) -> Self {
        self.label = label;
        self
    }

    /// Runs the chain of `event` over `state`; returns the control decision, if any, and the
    /// outputs' side effects (context, injections, notices) merged.
    async fn chain(
        &self,
        event: Event,
        envelope: &Envelope,
        state: &mut EventState,
        notices: &mut Vec<String>,
    ) -> ChainOutcome {
        let hooks = self.set.hooks(event);
        let mut outcome = ChainOutcome::default();
        if hooks.is_empty() {
            return outcome;
        }
        let deadline = Instant::now() + self.runner.chain_budget;
        for hook in hooks {
            if !hook
                .filter
                .matches(event, state.tool_name.as_deref(), &envelope.model)
            {
                continue;
            }
            let remaining = deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                tracing::warn!(
                    event = event.as_str(),
                    budget = ?self.runner.chain_budget,
                    "hook chain ran out of its time budget; the rest is skipped"
                );
                break;
            }
            let input = input_json(event, &hook.event_name, envelope, state);
            let started = Instant::now();
            let result = self
                .runner
                .run(
                    &hook.handler,
                    event.as_str(),
                    &input,
                    hook.timeout.min(remaining),
                )
                .await;
            let output = match result {
                RunResult::Output(value) => parse_output(&value, hook.capabilities.as_ref())
                    .map_err(|e| format!("bad result: {e}")),
                RunResult::Block(reason) => Ok(HookOutput {
                    control: Some(Control::Block(reason)),
                    ..Default::default()
                }),
                RunResult::Error(error) => Err(error),
                RunResult::Timeout => {
                    Err(format!("timed out after {:?}", hook.timeout.min(remaining)))
                }
            };
            let timed_out = matches!(output, Err(ref e) if e.starts_with("timed out"));
            let outcome_label = match &output {
                Ok(out) => match &out.control {
                    Some(Control::Skip(_)) => "skip",
                    Some(Control::Stop(_) | Control::Block(_)) => "block",
                    None => "success",
                },
                Err(_) if timed_out => "timeout",
                Err(_) => "failure",
            };
            record(hook, event, outcome_label, started.elapsed());
            let output = match output {
                Ok(output) => output,
                Err(error) => {
                    tracing::warn!(hook = %hook.name, file = %hook.file.display(), line = hook.line, event = event.as_str(), %error, "hook failed");
                    if hook.on_error == OnError::Abort {
                        break;
                    }
                    continue;
                }
            };
            if !output.refused.is_empty() {
                tracing::warn!(hook = %hook.name, refused = ?output.refused, "changes outside the hook's capabilities were ignored");
            }
            if let (Some(message), false) = (&output.system_message, output.suppress_output) {
                notices.push(message.clone());
            }
            let control = apply(event, &hook.name, output, state, &mut outcome);
            if control.is_some() {
                outcome.control = control;
                break;
            }
        }
        outcome
    }

    fn envelope(&self, ctx: &HookContext) -> Envelope {
        Envelope {
            session_id: ctx.session_id.clone(),
            run_id: Some(ctx.run_id.clone()),
            cwd: ctx.cwd.display().to_string(),
            model: ctx.model.clone(),
        }
    }

    /// Runs `event`'s chain over `state` for a chat, sending its notices; returns the state as
    /// the chain left it.
    async fn fire(
        &self,
        ctx: &mut HookContext,
        event: Event,
        mut state: EventState,
    ) -> (EventState, ChainOutcome) {
        let mut notices = Vec::new();
        let outcome = self
            .chain(event, &self.envelope(ctx), &mut state, &mut notices)
            .await;
        self.notify(ctx, notices);
        (state, outcome)
    }

    fn notify(&self, ctx: &mut HookContext, notices: Vec<String>) {
        for message in notices {
            ctx.notify(NoticeLevel::Info, message, self.label);
        }
    }
}

fn record(hook: &HookDef, event: Event, outcome: &'static str, elapsed: Duration) {
    let labels = [
        ("hook", hook.name.clone()),
        ("event", event.as_str().to_string()),
        ("outcome", outcome.to_string()),
    ];
    metrics::counter!("hookwire_external_hook_runs_total", &labels).increment(1);
    metrics::histogram!("hookwire_external_hook_duration_seconds", &labels[..2])
        .record(elapsed.as_secs_f64());
    tracing::debug!(hook = %hook.name, event = event.as_str(), outcome, ms = elapsed.as_millis() as u64, "hook ran");
}

/// What a chain leaves besides the changed state.
#[derive(Debug, Default)]
struct ChainOutcome {
    control: Option<ChainControl>,
    inject_messages: Vec<Message>,
    additional_context: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
enum ChainControl {
    Stop(String),
    Skip(String),
    Retry(String),
}

/// Applies one hook's output to the chain's state, at the events where each field is valid;
/// returns a control decision that ends the chain.
fn apply(
    event: Event,
    hook: &str,
    output: HookOutput,
    state: &mut EventState,
    outcome: &mut ChainOutcome,
) -> Option<ChainControl> {
    let invalid = |field: &str| {
        tracing::warn!(
            hook,
            field,
            event = event.as_str(),
            "this result field does not apply to this event; ignored"
        )
    };
    use Event::*;
    assign(
        output.user_input,
        event == PreSendMessage,
        &mut state.user_input,
        "user_input",
        &invalid,
    );
    assign(
        output.messages,
        matches!(event, PreLlmRequest | AfterContextBuild),
        &mut state.messages,
        "messages",
        &invalid,
    );
    assign(
        output.system_prompt,
        event == PreLlmRequest,
        &mut state.system_prompt,
        "system_prompt",
        &invalid,
    );
    assign(
        output.tool_arguments,
        event == PreToolExecution,
        &mut state.tool_arguments,
        "tool_arguments",
        &invalid,
    );
    assign(
        output.tool_result,
        event == PostToolExecution,
        &mut state.tool_result,
        "tool_result",
        &invalid,
    );
    assign(
        output.tool_error,
        event == PostToolExecutionFailure,
        &mut state.tool_error,
        "tool_error",
        &invalid,
    );
    let output_events = matches!(event, PostLlmResponse | RunCompleted);
    assign(
        output.assistant_output,
        output_events,
        &mut state.assistant_output,
        "assistant_output",
        &invalid,
    );
    if !output.inject_messages.is_empty() {
        if event == PreLlmRequest {
            outcome.inject_messages.extend(output.inject_messages)
        } else {
            invalid("inject_messages")
        }
    }
    if let Some(v) = output.additional_context {
        if matches!(
            event,
            PreLlmRequest | Stop | PostToolExecutionFailure | PreAutoCompact
        ) {
            outcome.additional_context.push(v)
        } else {
            invalid("additional_context")
        }
    }
    let named = |reason: String| {
        if reason.is_empty() {
            format!("stopped by hook {hook}")
        } else {
            reason
        }
    };
    match output.control {
        Some(Control::Stop(reason)) if can_stop(event) => {
            return Some(ChainControl::Stop(named(reason)))
        }
        Some(Control::Skip(reason)) if event == PreToolExecution => {
            return Some(ChainControl::Skip(named(reason)))
        }
        Some(Control::Block(reason)) if event == PreToolExecution => {
            return Some(ChainControl::Skip(named(reason)))
        }
        Some(Control::Block(reason)) if can_stop(event) => {
            return Some(ChainControl::Stop(named(reason)))
        }
        Some(_) => invalid("action"),
        None => {}
    }
    if let Some(feedback) = output.retry_feedback {
        if matches!(event, PreLlmRequest | PostLlmResponse | Stop) {
            return Some(ChainControl::Retry(feedback));
        }
        invalid("retry_feedback");
    }
    None
}

/// Puts a changed value in its slot when the field applies to the event; otherwise logs it.
fn assign<T>(
    value: Option<T>,
    applies: bool,
    slot: &mut Option<T>,
    field: &str,
    ignored: &dyn Fn(&str),
) {
    if let Some(value) = value {
        if applies {
            *slot = Some(value);
        } else {
            ignored(field);
        }
    }
}

/// Events whose hooks may end the chat.
fn can_stop(event: Event) -> bool {
    use Event::*;
    matches!(
        event,
        PreSendMessage
            | PreLlmRequest
            | PostLlmResponse
            | PreToolExecution
            | PostToolExecution
            | PostToolExecutionFailure
    )
}

fn stop_flow(outcome: &ChainOutcome) -> Flow {
    match &outcome.control {
        Some(ChainControl::Stop(reason)) => Flow::Stop {
            reason: reason.clone(),
        },
        _ => Flow::Continue,
    }
}

#[async_trait]
impl AgentHook for ExternalHooks {
    fn name(&self) -> &str {
        self.label
    }

    async fn session_start(&self, session: &SessionInfo) -> HookResult {
        let envelope = Envelope {
            session_id: session.session_id.clone(),
            cwd: self.runner.cwd.display().to_string(),
            model: self.runner.model_name.clone(),
            run_id: None,
        };
        self.chain(
            Event::SessionStart,
            &envelope,
            &mut EventState::default(),
            &mut Vec::new(),
        )
        .await;
        Ok(())
    }

    async fn session_end(&self, session: &SessionInfo) -> HookResult {
        let envelope = Envelope {
            session_id: session.session_id.clone(),
            cwd: self.runner.cwd.display().to_string(),
            model: self.runner.model_name.clone(),
            run_id: None,
        };
        self.chain(
            Event::SessionEnd,
            &envelope,
            &mut EventState::default(),
            &mut Vec::new(),
        )
        .await;
        Ok(())
    }

    async fn pre_send_message(
        &self,
        ctx: &mut HookContext,
        input: &mut String,
    ) -> HookResult<Flow> {
        let history = EventState {
            messages: Some(ctx.messages.clone()),
            ..Default::default()
        };
        self.fire(ctx, Event::BeforeContextBuild, history).await;
        let (state, outcome) = self
            .fire(
                ctx,
                Event::PreSendMessage,
                EventState {
                    user_input: Some(input.clone()),
                    messages: Some(ctx.messages.clone()),
                    ..Default::default()
                },
            )
            .await;
        if let Some(changed) = state.user_input {
            *input = changed;
        }
        Ok(stop_flow(&outcome))
    }

    async fn post_send_message(&self, ctx: &mut HookContext) -> HookResult {
        let built = EventState {
            messages: Some(ctx.messages.clone()),
            ..Default::default()
        };
        let (built, _) = self.fire(ctx, Event::AfterContextBuild, built).await;
        if let Some(messages) = built.messages.filter(|m| *m != ctx.messages) {
            ctx.messages = messages;
        }
        let user_input = ctx.last_user_message().map(|m| m.content.clone());
        self.fire(
            ctx,
            Event::PostSendMessage,
            EventState {
                user_input,
                messages: Some(ctx.messages.clone()),
                ..Default::default()
            },
        )
        .await;
        Ok(())
    }

    async fn pre_llm_request(
        &self,
        ctx: &mut HookContext,
        request: &mut LlmRequest,
    ) -> HookResult<Flow> {
        let system_prompt = request
            .messages
            .iter()
            .find(|m| m.role == Role::System)
            .map(|m| m.content.clone());
        let (state, outcome) = self
            .fire(
                ctx,
                Event::PreLlmRequest,
                EventState {
                    messages: Some(request.messages.clone()),
                    system_prompt: system_prompt.clone(),
                    ..Default::default()
                },
            )
            .await;
        if let Some(messages) = state.messages.filter(|m| *m != request.messages) {
            request.messages = messages;
        }
        if let Some(prompt) = state
            .system_prompt
            .filter(|p| Some(p) != system_prompt.as_ref())
        {
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
        Ok(stop_flow(&outcome))
    }

    async fn post_llm_response(
        &self,
        ctx: &mut HookContext,
        response: &mut LlmResponse,
    ) -> HookResult<ResponseAction> {
        let (state, outcome) = self
            .fire(
                ctx,
                Event::PostLlmResponse,
                EventState {
                    assistant_output: Some(response.content.clone()),
                    messages: Some(ctx.messages.clone()),
                    ..Default::default()
                },
            )
            .await;
        if let Some(output) = state.assistant_output {
            response.content = output;
        }
        Ok(match outcome.control {
            Some(ChainControl::Stop(reason)) => ResponseAction::Stop { reason },
            Some(ChainControl::Retry(feedback)) => ResponseAction::Retry { feedback },
            _ => ResponseAction::Continue,
        })
    }

    async fn pre_tool_execution(
        &self,
        ctx: &mut HookContext,
        call: &mut ToolCallInfo,
    ) -> HookResult<ToolAction> {
        let (state, outcome) = self
            .fire(
                ctx,
                Event::PreToolExecution,
                EventState {
                    tool_name: Some(call.name.clone()),
                    tool_arguments: Some(call.arguments.clone()),
                    ..Default::default()
                },
            )
            .await;
        if let Some(arguments) = state.tool_arguments {
            call.arguments = arguments;
        }
        Ok(match outcome.control {
            Some(ChainControl::Stop(reason)) => ToolAction::Stop { reason },
            Some(ChainControl::Skip(reason)) => ToolAction::Skip { reason },
            _ => ToolAction::Run,
        })
    }

    async fn post_tool_execution(
        &self,
        ctx: &mut HookContext,
        call: &ToolCallInfo,
        result: &mut ToolResultInfo,
    ) -> HookResult<Flow> {
        let (state, outcome) = self
            .fire(
                ctx,
                Event::PostToolExecution,
                EventState {
                    tool_name: Some(call.name.clone()),
                    tool_arguments: Some(call.arguments.clone()),
                    tool_result: Some(result.content.clone()),
                    ..Default::default()
                },
            )
            .await;
        if let Some(content) = state.tool_result {
            result.content = content;
        }
        Ok(stop_flow(&outcome))
    }

    async fn post_tool_execution_failure(
        &self,
        ctx: &mut HookContext,
        call: &ToolCallInfo,
        result: &mut ToolResultInfo,
    ) -> HookResult<Flow> {
        let (state, outcome) = self
            .fire(
                ctx,
                Event::PostToolExecutionFailure,
                EventState {
                    tool_name: Some(call.name.clone()),
                    tool_arguments: Some(call.arguments.clone()),
                    tool_error: Some(result.content.clone()),
                    ..Default::default()
                },
            )
            .await;
        if let Some(content) = state.tool_error {
            result.content = content;
        }
        for context in &outcome.additional_context {
            result.content.push_str("\n\n");
            result.content.push_str(context);
        }
        Ok(stop_flow(&outcome))
    }

    async fn stop(&self, ctx: &mut HookContext, output: &str) -> HookResult<StopAction> {
        let (_, outcome) = self
            .fire(
                ctx,
                Event::Stop,
                EventState {
                    user_input: ctx.last_user_message().map(|m| m.content.clone()),
                    messages: Some(ctx.messages.clone()),
                    system_prompt: ctx.system_prompt().map(str::to_string),
                    assistant_output: Some(output.to_string()),
                    ..Default::default()
                },
            )
            .await;
        for context in &outcome.additional_context {
            ctx.append_to_system_prompt(context);
        }
        Ok(match outcome.control {
            Some(ChainControl::Retry(feedback)) => StopAction::Continue { feedback },
            _ => StopAction::Finish,
        })
    }

    async fn run_completed(&self, ctx: &mut HookContext, output: &mut RunOutput) -> HookResult {
        let (state, _) = self
            .fire(
                ctx,
                Event::RunCompleted,
                EventState {
                    assistant_output: Some(output.content.clone()),
                    ..Default::default()
                },
            )
            .await;
        if let Some(content) = state.assistant_output {
            output.content = content;
        }
        Ok(())
    }

    async fn run_failed(&self, ctx: &mut HookContext, error: &ChatError) -> HookResult {
        self.fire(
            ctx,
            Event::RunFailed,
            EventState {
                error: Some(error.to_string()),
                ..Default::default()
            },
        )
        .await;
        Ok(())
    }
}
