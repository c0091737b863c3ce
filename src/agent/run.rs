//! One chat from start to end: build the messages, then the direct call, or the planning round
//! and the agent loop, with every hook at its place (DESIGN section 1 and seed 000's flow chart).

use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::marker::{strip_marker, MarkerDetector, MarkerState};
use super::{prompts, AgentInner};
use crate::hooks::prompt::PromptHookManager;
use crate::hooks::{
    CallPhase, Flow, HookContext, HookStack, LlmRequest, LlmResponse, ResponseAction, RunOutput,
    Step, StopAction, ToolAction, ToolCallInfo, ToolResultInfo,
};
use crate::llm::{ModelEvent, ModelRequest};
use crate::tools::{ToolOutput, ToolSpec};
use crate::types::{ChatError, ChatEvent, ChatRequest, DoneReason, ErrorCode, NoticeLevel};
use crate::types::{Message, Role, ToolCall};

/// Why a chat ended early.
enum Interrupt {
    Cancelled,
    Stopped(String),
    Failed(ChatError),
}

type Outcome<T> = Result<T, Interrupt>;

/// How the text of a model call reaches the client.
enum TextMode {
    /// Every delta streams at once.
    Stream,
    /// The planning round: held back until it is clear whether the reply starts with the marker.
    Planning(MarkerDetector),
}

struct ChatRun {
    inner: Arc<AgentInner>,
    hooks: HookStack,
    ctx: HookContext,
    tx: mpsc::Sender<ChatEvent>,
    cancel: CancellationToken,
    /// Everything sent as `text` so far (what a cancelled chat's `done` holds).
    visible_text: String,
    /// The assistant text the client keeps, one piece per kept step.
    kept: Vec<String>,
    /// Whether the current model call has streamed text yet.
    step_has_text: bool,
    model_called: bool,
    retries: usize,
}

/// Runs one chat, sending its events to `tx`; always ends with `Done` or `Error`.
pub(crate) async fn run_chat(
    inner: Arc<AgentInner>,
    request: ChatRequest,
    tx: mpsc::Sender<ChatEvent>,
) {
    let mut hooks = inner.hooks.clone();
    for factory in &inner.factories {
        match factory.hooks_for(&request) {
            Ok(chat_hooks) => hooks.extend(chat_hooks),
            Err(error) => {
                metrics::counter!("hookwire_chats_total", "outcome" => "refused").increment(1);
                let _ = tx.send(ChatEvent::Error(error)).await;
                return;
            }
        }
    }
    if tx.send(ChatEvent::Started).await.is_err() {
        return;
    }
    let tools = if request.enable_tools {
        inner.tools.specs()
    } else {
        Vec::new()
    };
    let mut ctx = HookContext::new(
        request.session_id.clone(),
        request.id.clone(),
        inner.config.model.clone(),
        tools,
    );
    ctx.skills = request.skills.clone().unwrap_or_default();
    ctx.cwd = inner.config.workspace.clone();
    ctx.max_steps = inner.config.max_steps;
    let mut run = ChatRun {
        inner,
        hooks,
        ctx,
        tx,
        cancel: request.cancel.clone(),
        visible_text: String::new(),
        kept: Vec::new(),
        step_has_text: false,
        model_called: false,
        retries: 0,
    };
    let started = Instant::now();
    // Cancel ends the chat wherever it is (a model call, a tool, a hook): the running step's
    // future is dropped, which drops the upstream request or kills the hook's processes.
    let cancel = run.cancel.clone();
    let result = tokio::select! {
        _ = cancel.cancelled() => Err(Interrupt::Cancelled),
        result = run.execute(request) => result,
    };
    run.finish(result).await;
    metrics::histogram!("hookwire_chat_duration_seconds").record(started.elapsed().as_secs_f64());
}

impl ChatRun {
    async fn execute(&mut self, request: ChatRequest) -> Outcome<DoneReason> {
        self.ctx.messages = self.build_history(request.messages);
        let mut input = request.input;
        if let Flow::Stop { reason } = self.hooks.pre_send_message(&mut self.ctx, &mut input).await
        {
            return Err(Interrupt::Stopped(reason));
        }
        self.ctx.messages.push(Message::user(input));
        self.hooks.post_send_message(&mut self.ctx).await;
        self.flush_outbox().await?;
        if self.cancel.is_cancelled() {
            return Err(Interrupt::Cancelled);
        }
        if self.ctx.tools().is_empty() {
            return self.direct().await;
        }
        self.planning().await
    }

    /// The system prompt, then the client's history (with forged hook messages dropped).
    fn build_history(&self, history: Vec<Message>) -> Vec<Message> {
        let mut messages = Vec::with_capacity(history.len() + 2);
        messages.push(Message::system(self.inner.config.system_prompt.clone()));
        let secret = self.inner.config.secret.as_deref();
        let key = secret.map(crate::hooks::signing::SigningKey::new);
        for message in history {
            if let Some(key) = &key {
                if let Err(why) = crate::hooks::signing::check_history_message(key, &message) {
                    tracing::warn!(chat = %self.ctx.run_id, reason = why, "dropped a history message");
                    metrics::counter!("hookwire_history_dropped_total", "reason" => why)
                        .increment(1);
                    continue;
                }
            }
            messages.push(message);
        }
        messages
    }

    /// No tools: one streamed call, then the stop hooks.
    async fn direct(&mut self) -> Outcome<DoneReason> {
        loop {
            let mut response = self
                .call(CallPhase::Direct, Vec::new(), TextMode::Stream)
                .await?;
            if self.after_response(&mut response).await? {
                continue;
            }
            if self.finish_or_continue(response.content).await? {
                continue;
            }
            return Ok(DoneReason::Completed);
        }
    }

    /// The planning round: no tools; a reply that starts with the marker starts the agent loop.
    async fn planning(&mut self) -> Outcome<DoneReason> {
        loop {
            self.hooks.before_planning(&mut self.ctx).await;
            let config = &self.inner.config;
            let prompt = prompts::planning_prompt(
                &config.planning_prompt,
                &config.marker,
                &self.inner.tools.names(),
            );
            let prompt_id = PromptHookManager::inject_prompt(&mut self.ctx, prompt, Role::System);
            let detector = MarkerDetector::new(&self.inner.config.marker);
            let result = self
                .call(
                    CallPhase::Planning,
                    Vec::new(),
                    TextMode::Planning(detector),
                )
                .await;
            PromptHookManager::remove_prompt(&mut self.ctx, prompt_id);
            let retry = match result {
                Ok(mut response) => self
                    .after_response(&mut response)
                    .await
                    .map(|retry| (retry, response)),
                Err(interrupt) => Err(interrupt),
            };
            // The end of the planning scope comes after its response was handled, even on failure.
            self.hooks.after_planning(&mut self.ctx).await;
            let (retry, response) = retry?;
            if retry {
                continue;
            }
            let trimmed = response.content.trim_start();
            let marker = self.inner.config.marker.as_str();
            if !marker.is_empty() && trimmed.starts_with(marker) {
                let plan = strip_marker(&response.content, marker).to_string();
                self.send(ChatEvent::Plan(plan.clone())).await?;
                if !plan.is_empty() {
                    self.ctx.messages.push(Message::assistant(plan));
                }
                return self.agent_loop().await;
            }
            if self.finish_or_continue(response.content).await? {
                continue;
            }
            return Ok(DoneReason::Completed);
        }
    }

    /// Rounds with tools until a round calls none, or `max_steps`.
    async fn agent_loop(&mut self) -> Outcome<DoneReason> {
        let result = self.agent_rounds().await;
        self.hooks.after_agent_loop(&mut self.ctx).await;
        result
    }

    async fn agent_rounds(&mut self) -> Outcome<DoneReason> {
        let max_steps = self.inner.config.max_steps.max(1);
        for round in 1..=max_steps {
            self.ctx.iteration = round;
            self.hooks.before_each_agent(&mut self.ctx).await;
            if round == 1 {
                self.hooks.before_first_agent(&mut self.ctx).await;
            }
            let step_prompt = if round == 1 {
                self.inner.config.first_step_prompt.clone()
            } else {
                self.inner.config.each_step_prompt.clone()
            };
            let prompt_id =
                PromptHookManager::inject_prompt(&mut self.ctx, step_prompt, Role::System);
            let tools = self.ctx.active_tools();
            let result = self
                .call(CallPhase::Agent { round }, tools, TextMode::Stream)
                .await;
            PromptHookManager::remove_prompt(&mut self.ctx, prompt_id);
            let mut response = result?;
            if self.after_response(&mut response).await? {
                continue;
            }
            if response.tool_calls.is_empty() {
                if self.finish_or_continue(response.content).await? {
                    continue;
                }
                return Ok(DoneReason::Completed);
            }
            self.run_tools(response).await?;
        }
        Ok(DoneReason::MaxSteps)
    }

    /// Runs a round's tool calls in order and fires `after_tool_call`. Calls past
    /// `max_tool_calls_per_round` do not run, but still get an error result each: every call of
    /// the assistant message needs its tool message, and the model learns why.
    async fn run_tools(&mut self, response: LlmResponse) -> Outcome<()> {
        if !response.content.is_empty() {
            self.kept.push(response.content.clone());
        }
        self.ctx.messages.push(Message::assistant_with_tools(
            response.content,
            response.tool_calls.clone(),
        ));
        let cap = self.inner.config.max_tool_calls_per_round;
        let asked = response.tool_calls.len();
        if asked > cap {
            tracing::warn!(chat = %self.ctx.run_id, asked, cap, "more tool calls than a round may run; the rest get an error result");
        }
        let mut names = Vec::new();
        for (index, call) in response.tool_calls.into_iter().enumerate() {
            if index >= cap {
                self.refuse_tool(call, cap).await?;
                continue;
            }
            if !names.contains(&call.name) {
                names.push(call.name.clone());
            }
            self.run_tool(call).await?;
        }
        self.hooks.after_tool_call(&mut self.ctx, &names).await;
        self.flush_outbox().await
    }

    /// A call past the round's cap: shown and answered with an error, without running it or
    /// its hooks.
    async fn refuse_tool(&mut self, call: ToolCall, cap: usize) -> Outcome<()> {
        let arguments = serde_json::from_str::<Value>(&call.arguments)
            .unwrap_or_else(|_| Value::Object(Default::default()));
        self.send(ChatEvent::ToolCall {
            call_id: call.id.clone(),
            name: call.name.clone(),
            arguments,
        })
        .await?;
        let content = format!(
            "the tool did not run: a round runs at most {cap} tool calls \
             (limits.max_tool_calls_per_round); call it again in the next round"
        );
        metrics::counter!("hookwire_tool_calls_total", "tool" => call.name.clone(), "outcome" => "refused").increment(1);
        self.ctx.steps.push(Step::Tool {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content: content.clone(),
            is_error: true,
        });
        self.ctx
            .messages
            .push(Message::tool_result(call.id.clone(), content.clone()));
        self.send(ChatEvent::ToolResult {
            call_id: call.id,
            name: call.name,
            content,
            is_error: true,
        })
        .await
    }

    async fn run_tool(&mut self, call: ToolCall) -> Outcome<()> {
        let parsed = if call.arguments.trim().is_empty() {
            Ok(serde_json::Value::Object(Default::default()))
        } else {
            serde_json::from_str::<serde_json::Value>(&call.arguments)
        };
        let mut info = ToolCallInfo {
            call_id: call.id.clone(),
            name: call.name.clone(),
            arguments: parsed
                .as_ref()
                .cloned()
                .unwrap_or_else(|_| serde_json::Value::Object(Default::default())),
        };
        let action = self
            .hooks
            .pre_tool_execution(&mut self.ctx, &mut info)
            .await;
        self.flush_outbox().await?;
        let skip_reason = match action {
            // A stop ends the chat before the call is shown or run.
            ToolAction::Stop { reason } => return Err(Interrupt::Stopped(reason)),
            ToolAction::Skip { reason } => Some(reason),
            ToolAction::Run => None,
        };
        self.send(ChatEvent::ToolCall {
            call_id: info.call_id.clone(),
            name: info.name.clone(),
            arguments: info.arguments.clone(),
        })
        .await?;
        let started = Instant::now();
        let unparsable = parsed
            .err()
            .filter(|_| info.arguments == Value::Object(Default::default()));
        let (mut output, panicked) = match (skip_reason, unparsable) {
            (Some(reason), _) => (
                ToolOutput::error(format!("the tool did not run: {reason}")),
                false,
            ),
            (None, Some(error)) => (
                ToolOutput::error(format!(
                    "the arguments of {} are not valid JSON: {error}",
                    info.name
                )),
                false,
            ),
            (None, None) => self.execute_tool(&info).await?,
        };
        let outcome = match (panicked, output.is_error) {
            (true, _) => "panic",
            (false, true) => "error",
            (false, false) => "ok",
        };
        metrics::counter!("hookwire_tool_calls_total", "tool" => info.name.clone(), "outcome" => outcome).increment(1);
        for event in std::mem::take(&mut output.events) {
            self.send(event).await?;
        }
        let mut result = ToolResultInfo {
            call_id: info.call_id.clone(),
            name: info.name.clone(),
            content: output.content,
            is_error: output.is_error,
            duration: started.elapsed(),
        };
        let flow = self
            .hooks
            .post_tool(&mut self.ctx, &info, &mut result)
            .await;
        self.ctx.tool_calls_count += 1;
        self.ctx.steps.push(Step::Tool {
            call_id: result.call_id.clone(),
            name: result.name.clone(),
            content: result.content.clone(),
            is_error: result.is_error,
        });
        self.ctx.messages.push(Message::tool_result(
            result.call_id.clone(),
            result.content.clone(),
        ));
        self.flush_outbox().await?;
        self.send(ChatEvent::ToolResult {
            call_id: result.call_id,
            name: result.name,
            content: result.content,
            is_error: result.is_error,
        })
        .await?;
        match flow {
            Flow::Stop { reason } => Err(Interrupt::Stopped(reason)),
            Flow::Continue => Ok(()),
        }
    }

    /// Runs the tool; `true` = it panicked. A panic is isolated like a hook's: the model gets an
    /// error result and the chat goes on.
    async fn execute_tool(&self, info: &ToolCallInfo) -> Outcome<(ToolOutput, bool)> {
        if !self.ctx.is_tool_enabled(&info.name) {
            return Ok((
                ToolOutput::error(format!("unknown or disabled tool: {}", info.name)),
                false,
            ));
        }
        let Some(tool) = self.inner.tools.get(&info.name) else {
            return Ok((
                ToolOutput::error(format!("unknown tool: {}", info.name)),
                false,
            ));
        };
        let tool = tool.clone();
        let arguments = info.arguments.clone();
        let run =
            futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(tool.run(arguments)));
        let result = tokio::select! {
            _ = self.cancel.cancelled() => return Err(Interrupt::Cancelled),
            result = run => result,
        };
        Ok(match result {
            Ok(output) => (output, false),
            Err(panic) => {
                let message = crate::tools::panic_message(panic.as_ref());
                tracing::error!(chat = %self.ctx.run_id, tool = %info.name, panic = %message, "tool panicked; the chat goes on");
                (
                    ToolOutput::error(format!(
                        "the tool {} failed unexpectedly: {message}",
                        info.name
                    )),
                    true,
                )
            }
        })
    }

    /// `post_llm_response`; `Ok(true)` = a hook asked for a retry (the feedback is in the list).
    async fn after_response(&mut self, response: &mut LlmResponse) -> Outcome<bool> {
        let action = self.hooks.post_llm_response(&mut self.ctx, response).await;
        self.ctx.steps.push(Step::Assistant {
            content: response.content.clone(),
            tool_calls: response.tool_calls.clone(),
        });
        self.flush_outbox().await?;
        match action {
            ResponseAction::Continue => Ok(false),
            ResponseAction::Stop { reason } => Err(Interrupt::Stopped(reason)),
            ResponseAction::Retry { feedback } => {
                if self.retries >= self.inner.config.max_retries {
                    tracing::warn!(chat = %self.ctx.run_id, "retry limit reached; keeping the response");
                    return Ok(false);
                }
                self.retries += 1;
                self.notice(
                    NoticeLevel::Info,
                    format!("a hook asked the model to try again: {feedback}"),
                )
                .await?;
                if !response.content.is_empty() {
                    self.ctx
                        .messages
                        .push(Message::assistant(response.content.clone()));
                }
                self.ctx.messages.push(Message::user(feedback));
                Ok(true)
            }
        }
    }

    /// Keeps the final answer and asks the `stop` hooks; `Ok(true)` = the model goes on.
    async fn finish_or_continue(&mut self, content: String) -> Outcome<bool> {
        let action = self.hooks.stop(&mut self.ctx, &content).await;
        self.flush_outbox().await?;
        if !content.is_empty() {
            self.kept.push(content.clone());
        }
        match action {
            StopAction::Finish => Ok(false),
            StopAction::Continue { .. } if self.retries >= self.inner.config.max_retries => {
                tracing::warn!(chat = %self.ctx.run_id, "retry limit reached; the chat ends");
                Ok(false)
            }
            StopAction::Continue { feedback } => {
                self.retries += 1;
                self.ctx.messages.push(Message::assistant(content));
                self.ctx.messages.push(Message::user(feedback));
                Ok(true)
            }
        }
    }

    /// One streamed model call with `pre_llm_request` before it.
    async fn call(
        &mut self,
        phase: CallPhase,
        tools: Vec<ToolSpec>,
        mut mode: TextMode,
    ) -> Outcome<LlmResponse> {
        let mut request = LlmRequest {
            phase,
            messages: self.ctx.messages.clone(),
            tools,
        };
        if let Flow::Stop { reason } = self
            .hooks
            .pre_llm_request(&mut self.ctx, &mut request)
            .await
        {
            return Err(Interrupt::Stopped(reason));
        }
        self.flush_outbox().await?;
        let model_request = ModelRequest {
            model: self.ctx.model.clone(),
            messages: request.messages,
            tools: request.tools,
        };
        self.model_called = true;
        self.step_has_text = false;
        metrics::counter!("hookwire_llm_calls_total").increment(1);
        let started = Instant::now();
        let model = self.inner.model.clone();
        let mut stream = tokio::select! {
            _ = self.cancel.cancelled() => return Err(Interrupt::Cancelled),
            stream = model.stream(model_request) => stream.map_err(upstream_error)?,
        };
        let mut content = String::new();
        let mut first_text = true;
        loop {
            let item = tokio::select! {
                _ = self.cancel.cancelled() => return Err(Interrupt::Cancelled),
                item = stream.next() => item,
            };
            match item {
                None => {
                    return Err(Interrupt::Failed(ChatError::new(
                        ErrorCode::Upstream,
                        "the model stream ended without finishing",
                    )))
                }
                Some(Err(error)) => return Err(upstream_error(error)),
                Some(Ok(ModelEvent::Text(delta))) => {
                    if first_text {
                        first_text = false;
                        metrics::histogram!("hookwire_llm_first_token_seconds")
                            .record(started.elapsed().as_secs_f64());
                    }
                    content.push_str(&delta);
                    match &mut mode {
                        TextMode::Stream => self.send_text(delta).await?,
                        TextMode::Planning(detector) => {
                            if let MarkerState::Answer { held } = detector.push(&delta) {
                                self.send_text(held).await?;
                            }
                        }
                    }
                }
                Some(Ok(ModelEvent::Finished {
                    tool_calls,
                    finish_reason,
                    usage,
                })) => {
                    if let TextMode::Planning(detector) = &mut mode {
                        if let MarkerState::Answer { held } = detector.finish() {
                            self.send_text(held).await?;
                        }
                    }
                    let usage = usage.unwrap_or_default();
                    self.ctx.usage += usage;
                    metrics::counter!("hookwire_llm_tokens_total", "kind" => "prompt")
                        .increment(usage.prompt_tokens);
                    metrics::counter!("hookwire_llm_tokens_total", "kind" => "completion")
                        .increment(usage.completion_tokens);
                    metrics::histogram!("hookwire_llm_call_seconds")
                        .record(started.elapsed().as_secs_f64());
                    return Ok(LlmResponse {
                        phase,
                        content,
                        tool_calls,
                        finish_reason,
                        usage,
                    });
                }
            }
        }
    }

    /// Streams text; a new step's text is set apart from earlier text by a blank line.
    async fn send_text(&mut self, delta: String) -> Outcome<()> {
        if delta.is_empty() {
            return Ok(());
        }
        if !self.step_has_text
            && !self.visible_text.is_empty()
            && !self.visible_text.ends_with("\n\n")
        {
            self.visible_text.push_str("\n\n");
            self.send(ChatEvent::Text("\n\n".into())).await?;
        }
        self.visible_text.push_str(&delta);
        self.step_has_text = true;
        metrics::counter!("hookwire_text_deltas_total").increment(1);
        self.send(ChatEvent::Text(delta)).await
    }

    async fn notice(&mut self, level: NoticeLevel, message: String) -> Outcome<()> {
        self.send(ChatEvent::Notice {
            level,
            message,
            source: "agent".into(),
        })
        .await
    }

    async fn flush_outbox(&mut self) -> Outcome<()> {
        for event in self.ctx.take_outbox() {
            self.send(event).await?;
        }
        Ok(())
    }

    async fn send(&self, event: ChatEvent) -> Outcome<()> {
        self.tx.send(event).await.map_err(|_| Interrupt::Cancelled)
    }

    /// Sends the chat's last event, after `run_completed` / `run_failed`.
    async fn finish(&mut self, result: Outcome<DoneReason>) {
        let _ = self.flush_outbox().await;
        let reason = match result {
            Ok(reason) => reason,
            Err(Interrupt::Cancelled) => {
                metrics::counter!("hookwire_chats_total", "outcome" => "cancelled").increment(1);
                let content = self.visible_text.clone();
                let _ = self
                    .send(ChatEvent::Done {
                        reason: DoneReason::Cancelled,
                        content,
                        usage: self.ctx.usage,
                    })
                    .await;
                return;
            }
            Err(Interrupt::Stopped(reason)) if !self.model_called => {
                self.fail(ChatError::new(ErrorCode::HookBlocked, reason))
                    .await;
                return;
            }
            Err(Interrupt::Stopped(reason)) => {
                let _ = self
                    .send(ChatEvent::Notice {
                        level: NoticeLevel::Warn,
                        message: reason,
                        source: "hook".into(),
                    })
                    .await;
                DoneReason::Stopped
            }
            Err(Interrupt::Failed(error)) => {
                self.fail(error).await;
                return;
            }
        };
        let mut output = RunOutput {
            reason,
            content: self.kept.join("\n\n"),
            usage: self.ctx.usage,
        };
        self.hooks.run_completed(&mut self.ctx, &mut output).await;
        let _ = self.flush_outbox().await;
        metrics::counter!("hookwire_chats_total", "outcome" => reason.as_str()).increment(1);
        let _ = self
            .send(ChatEvent::Done {
                reason: output.reason,
                content: output.content,
                usage: output.usage,
            })
            .await;
    }

    async fn fail(&mut self, error: ChatError) {
        self.hooks.run_failed(&mut self.ctx, &error).await;
        let _ = self.flush_outbox().await;
        metrics::counter!("hookwire_chats_total", "outcome" => error.code.as_str()).increment(1);
        let _ = self.send(ChatEvent::Error(error)).await;
    }
}

fn upstream_error(error: crate::llm::LlmError) -> Interrupt {
    Interrupt::Failed(ChatError::new(ErrorCode::Upstream, error.to_string()))
}
