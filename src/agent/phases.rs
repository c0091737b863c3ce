//! The three phases of a chat ([`CallPhase`]): the direct call, the planning round and the agent
//! loop, and what follows every model response (`post_llm_response`, then the `stop` hooks for a
//! final answer). The checkpoints of docs/design.md §2 fire here, in the order of its table; a
//! model call is `call`'s job, a round's tools `tool_step`'s.

use super::call::TextMode;
use super::marker::{strip_marker, MarkerDetector};
use super::prompts;
use super::run::{ChatRun, Interrupt, Outcome};
use crate::hooks::prompt::PromptHookManager;
use crate::hooks::{CallPhase, LlmResponse, ResponseAction, Step, StopAction};
use crate::types::{ChatEvent, DoneReason, Message, NoticeLevel, Role};

impl ChatRun {
    /// No tools: one streamed call, then the stop hooks.
    pub(super) async fn direct(&mut self) -> Outcome<DoneReason> {
        loop {
            let mut response = self
                .call(CallPhase::Direct, Vec::new(), TextMode::Stream)
                .await?;
            if self.after_response(&mut response).await? {
                continue;
            }
            if self.cut_off(&response, true).await? {
                return Ok(DoneReason::Length);
            }
            if self.finish_or_continue(response.content).await? {
                continue;
            }
            return Ok(DoneReason::Completed);
        }
    }

    /// The planning round: no tools; a reply that starts with the marker starts the agent loop.
    pub(super) async fn planning(&mut self) -> Outcome<DoneReason> {
        loop {
            self.hooks.before_planning(&mut self.ctx).await;
            let config = &self.inner.config;
            // The server's tools and the client's.
            let names: Vec<String> = self.ctx.tools().iter().map(|t| t.name.clone()).collect();
            let prompt = prompts::planning_prompt(&config.planning_prompt, &config.marker, &names);
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
            let marker = self.inner.config.marker.clone();
            let has_marker =
                |text: &str| !marker.is_empty() && text.trim_start().starts_with(marker.as_str());
            // The model's own reply decides whether tools are needed: a hook that rewrites it
            // (`assistant_output`) changes the plan text, not the decision.
            let mut needs_tools = false;
            let retry = match result {
                Ok(mut response) => {
                    needs_tools = has_marker(&response.content);
                    self.after_response(&mut response)
                        .await
                        .map(|retry| (retry, response))
                }
                Err(interrupt) => Err(interrupt),
            };
            // The end of the planning scope comes after its response was handled, even on failure.
            self.hooks.after_planning(&mut self.ctx).await;
            // A hook skipped the planning call: the agent loop goes on without a plan.
            if let Err(Interrupt::Skipped(reason)) = &retry {
                tracing::debug!(chat = %self.ctx.run_id, %reason, "a hook skipped the planning call");
                return self.agent_loop(1).await;
            }
            let (retry, response) = retry?;
            if retry {
                continue;
            }
            let plan = needs_tools || has_marker(&response.content);
            // A plan cut short never streamed as text, and the loop does not run: the plan is
            // kept as the chat's answer, so the person still has it.
            if plan && response.finish_reason.as_deref() == Some("length") {
                let cut = strip_marker(&response.content, &marker).trim().to_string();
                if !cut.is_empty() {
                    self.kept.push(cut);
                }
            }
            if self.cut_off(&response, !plan).await? {
                return Ok(DoneReason::Length);
            }
            if plan {
                let plan = strip_marker(&response.content, &marker).to_string();
                self.send(ChatEvent::Plan(plan.clone())).await?;
                if !plan.is_empty() {
                    self.ctx.messages.push(Message::assistant(plan.clone()));
                    self.turn.plan(&plan);
                }
                return self.agent_loop(1).await;
            }
            if self.finish_or_continue(response.content).await? {
                continue;
            }
            return Ok(DoneReason::Completed);
        }
    }

    /// `agent.planning: native`: the planning call offers the tools. A reply that calls some is
    /// the agent loop's round 1 (its calls run, the loop goes on from round 2); a plain reply is
    /// the answer. The planning hooks (`before_planning`, `after_planning`) frame the call, as
    /// in the marker's planning round, and round 1's (`before_each_agent`, `before_first_agent`)
    /// come before it.
    pub(super) async fn native_planning(&mut self) -> Outcome<DoneReason> {
        loop {
            self.hooks.before_planning(&mut self.ctx).await;
            // The call offers the tools: it is round 1 of the agent loop when it calls some, so
            // round 1's hooks come first (skill prompt hooks at `before_first_agent` too).
            self.ctx.iteration = 1;
            self.hooks.before_each_agent(&mut self.ctx).await;
            self.hooks.before_first_agent(&mut self.ctx).await;
            let prompt = self.inner.config.native_planning_prompt.clone();
            // With the system prompt, not after the input: it speaks of the tools offered, and
            // after the person's words a small model answered it instead of them.
            let prompt_id = PromptHookManager::inject_system_prompt(&mut self.ctx, prompt);
            let tools = self.ctx.active_tools();
            let result = self
                .call(CallPhase::Planning, tools, TextMode::Stream)
                .await;
            PromptHookManager::remove_prompt(&mut self.ctx, prompt_id);
            let retry = match result {
                Ok(mut response) => self
                    .after_response(&mut response)
                    .await
                    .map(|retry| (retry, response)),
                Err(interrupt) => Err(interrupt),
            };
            self.hooks.after_planning(&mut self.ctx).await;
            let (retry, response) = retry?;
            if retry {
                continue;
            }
            if self.cut_off(&response, true).await? {
                return Ok(DoneReason::Length);
            }
            if response.tool_calls.is_empty() {
                if self.finish_or_continue(response.content).await? {
                    continue;
                }
                return Ok(DoneReason::Completed);
            }
            self.ctx.iteration = 1;
            let result = match self.round_tools(1, response).await {
                Ok(Some(reason)) => Ok(reason),
                Ok(None) => self.agent_rounds(2).await,
                Err(interrupt) => Err(interrupt),
            };
            return self.end_agent_loop(result).await;
        }
    }

    /// Rounds with tools until a round calls none, or a limit (`max_steps`, `max_total_tokens`);
    /// at a limit, the summary call follows the end of the loop scope.
    /// From round `first_round` (1, or the round after the one a resumed chat stopped at).
    pub(super) async fn agent_loop(&mut self, first_round: usize) -> Outcome<DoneReason> {
        let result = self.agent_rounds(first_round).await;
        self.end_agent_loop(result).await
    }

    /// The end of the loop scope (`after_agent_loop`), then the summary at a limit.
    pub(super) async fn end_agent_loop(
        &mut self,
        result: Outcome<DoneReason>,
    ) -> Outcome<DoneReason> {
        self.hooks.after_agent_loop(&mut self.ctx).await;
        match result? {
            reason @ (DoneReason::MaxSteps | DoneReason::MaxTokens)
                if self.inner.config.summary_on_limit =>
            {
                self.flush_outbox().await?;
                // Boxed: a rare state, kept out of the chat's future (docs/performance.md).
                Box::pin(self.summary(reason)).await
            }
            reason => Ok(reason),
        }
    }

    async fn agent_rounds(&mut self, first_round: usize) -> Outcome<DoneReason> {
        let max_steps = self.inner.config.max_steps.max(1);
        for round in first_round..=max_steps {
            // Checked before a round, so the planning call's usage counts too.
            if let Some(max) = self.inner.config.max_total_tokens {
                let usage = self.ctx.usage();
                if usage.prompt_tokens + usage.completion_tokens >= max {
                    return Ok(DoneReason::MaxTokens);
                }
            }
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
            // Its tool calls may be cut too: none of them runs.
            if self.cut_off(&response, true).await? {
                return Ok(DoneReason::Length);
            }
            if response.tool_calls.is_empty() {
                if self.finish_or_continue(response.content).await? {
                    continue;
                }
                return Ok(DoneReason::Completed);
            }
            if let Some(reason) = self.round_tools(round, response).await? {
                return Ok(reason);
            }
        }
        Ok(DoneReason::MaxSteps)
    }

    /// A round's tool calls and their hooks; `Some` = the chat ends there: calls wait for the
    /// person's approval (asked first) or for the client's results.
    async fn round_tools(
        &mut self,
        round: usize,
        response: LlmResponse,
    ) -> Outcome<Option<DoneReason>> {
        // Boxed: the tool step's state is not held by a chat while it streams.
        let tools = Box::pin(self.run_tools(response)).await?;
        self.hooks
            .after_tool_call(&mut self.ctx, &tools.names)
            .await;
        self.flush_outbox().await?;
        if !tools.pending.is_empty() {
            self.ask_approval(round, tools.pending).await?;
            return Ok(Some(DoneReason::ApprovalRequired));
        }
        Ok(self.wait_for_client())
    }

    /// The last call at a limit: no tools, the summary prompt, the text streamed and kept. The
    /// chat ends with the limit's reason whatever the reply: a hook's retry is not honoured (the
    /// limit was reached), and a failed call leaves a `warn` notice, not an error.
    async fn summary(&mut self, reason: DoneReason) -> Outcome<DoneReason> {
        let prompt = self.inner.config.summary_prompt.clone();
        let prompt_id = PromptHookManager::inject_prompt(&mut self.ctx, prompt, Role::System);
        let result = self
            .call(CallPhase::Summary, Vec::new(), TextMode::Stream)
            .await;
        PromptHookManager::remove_prompt(&mut self.ctx, prompt_id);
        let mut response = match result {
            Ok(response) => response,
            Err(Interrupt::Failed(error)) => {
                tracing::warn!(chat = %self.ctx.run_id, error = %error.message, "the summary call failed");
                self.notice(
                    NoticeLevel::Warn,
                    format!("the summary at the limit failed: {}", error.message),
                )
                .await?;
                return Ok(reason);
            }
            Err(interrupt) => return Err(interrupt),
        };
        let action = self.handle_response(&mut response).await;
        self.flush_outbox().await?;
        if let ResponseAction::Stop { reason } = action {
            self.keep_stopped(&response);
            return Err(Interrupt::Stopped(reason));
        }
        if !self.cut_off(&response, true).await? && !response.content.is_empty() {
            self.kept.push(response.content);
        }
        Ok(reason)
    }

    /// The Python agent-hooks design's order: the step is recorded, then `post_llm_response` runs (so `ctx.steps`
    /// holds it), then the step takes what the hooks left (a rewritten output).
    async fn handle_response(&mut self, response: &mut LlmResponse) -> ResponseAction {
        let step = |response: &LlmResponse| Step::Assistant {
            content: response.content.clone(),
            tool_calls: response.tool_calls.clone(),
            usage: response.usage,
        };
        let index = self.ctx.steps().len();
        self.ctx.record_step(step(response));
        let action = self.hooks.post_llm_response(&mut self.ctx, response).await;
        self.ctx.update_step(index, step(response));
        action
    }

    /// A reply a `post_llm_response` hook stopped on was streamed already: `done` carries it
    /// (as the hooks left it).
    fn keep_stopped(&mut self, response: &LlmResponse) {
        if !response.content.is_empty() {
            self.kept.push(response.content.clone());
        }
    }

    /// `post_llm_response`; `Ok(true)` = a hook asked for a retry (the feedback is in the list).
    async fn after_response(&mut self, response: &mut LlmResponse) -> Outcome<bool> {
        let action = self.handle_response(response).await;
        self.flush_outbox().await?;
        match action {
            ResponseAction::Continue => Ok(false),
            ResponseAction::Stop { reason } => {
                self.keep_stopped(response);
                Err(Interrupt::Stopped(reason))
            }
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

    /// `finish_reason: "length"`: the reply was cut at the model's output limit, so the chat ends
    /// there with a `warn` notice (no `stop` hooks: there is no finished answer to judge);
    /// `keep` = the reply streamed as text and is kept. `Ok(true)` = it was cut.
    async fn cut_off(&mut self, response: &LlmResponse, keep: bool) -> Outcome<bool> {
        if response.finish_reason.as_deref() != Some("length") {
            return Ok(false);
        }
        if keep && !response.content.is_empty() {
            self.kept.push(response.content.clone());
        }
        self.notice(
            NoticeLevel::Warn,
            "the model's reply was cut off at its output limit (finish_reason \"length\")".into(),
        )
        .await?;
        Ok(true)
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
                // No feedback (a hook that only added context for the model): the model goes
                // on from its answer.
                if !feedback.is_empty() {
                    self.ctx.messages.push(Message::user(feedback));
                }
                Ok(true)
            }
            StopAction::Stop { reason } => Err(Interrupt::Stopped(reason)),
        }
    }
}
