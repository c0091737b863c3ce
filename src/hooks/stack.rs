//! [`HookStack`]: runs the hooks of a chat in order, with written rules.
//!
//! - Order: the order hooks were added (built-in → server → workspace → skill → session).
//! - Rewrites chain: each hook sees the values as the previous one left them.
//! - Short-circuit: the first hook that stops (or skips a tool, retries, continues the model)
//!   decides; the hooks after it are not called for that event.
//! - Isolation: a hook that returns an error or panics is logged and counted
//!   (`hookwire_hook_runs_total{outcome="error"|"panic"}`), its answer counts as the default, and
//!   the chat goes on. So does a hook that takes longer than the stack's budget (the chain
//!   budget, `limits.hook_chain_timeout_seconds`): `outcome="timeout"`.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt;

use super::{
    AgentHook, Flow, HookContext, HookResult, LlmRequest, LlmResponse, ResponseAction, RunOutput,
    SessionInfo, StopAction, ToolAction, ToolCallInfo, ToolResultInfo,
};
use crate::types::ChatError;

#[derive(Clone)]
pub struct HookStack {
    hooks: Vec<Arc<dyn AgentHook>>,
    /// How long one hook call may take before it counts as timed out (its answer is the
    /// default and the chat goes on): a hook that never returns cannot hang a chat.
    budget: Duration,
}

impl Default for HookStack {
    fn default() -> Self {
        Self {
            hooks: Vec::new(),
            budget: DEFAULT_HOOK_BUDGET,
        }
    }
}

/// The default time one hook call may take (the same as an external hook chain's budget).
pub const DEFAULT_HOOK_BUDGET: Duration = Duration::from_secs(30);

/// Beyond the budget, time a hook gets to finish its own timeout handling (an external hook
/// chain enforces the same budget itself and should be the one to report it).
const BUDGET_GRACE: Duration = Duration::from_secs(1);

impl HookStack {
    pub fn new(hooks: Vec<Arc<dyn AgentHook>>) -> Self {
        Self {
            hooks,
            ..Self::default()
        }
    }

    /// Sets how long one hook call may take.
    pub fn set_budget(&mut self, budget: Duration) {
        self.budget = budget;
    }

    /// Awaits one hook call, turning errors, panics and overruns into the default answer.
    async fn guarded<T: Default>(
        &self,
        hook: &dyn AgentHook,
        event: &'static str,
        call: impl Future<Output = HookResult<T>>,
    ) -> T {
        let started = Instant::now();
        let limit = self.budget + BUDGET_GRACE;
        let guarded = tokio::time::timeout(limit, AssertUnwindSafe(call).catch_unwind());
        let (outcome, value) = match guarded.await {
            Ok(Ok(Ok(value))) => ("ok", value),
            Ok(Ok(Err(error))) => {
                tracing::warn!(hook = hook.name(), event, %error, "hook failed; the chat goes on");
                ("error", T::default())
            }
            Ok(Err(panic)) => {
                let message = crate::types::panic_message(panic);
                tracing::error!(hook = hook.name(), event, panic = %message, "hook panicked; the chat goes on");
                ("panic", T::default())
            }
            Err(_) => {
                tracing::warn!(
                    hook = hook.name(),
                    event,
                    "hook did not answer within {:.1}s; the chat goes on without it",
                    limit.as_secs_f64()
                );
                ("timeout", T::default())
            }
        };
        let labels = [
            ("hook", hook.name().to_string()),
            ("event", event.to_string()),
            ("outcome", outcome.to_string()),
        ];
        metrics::counter!("hookwire_hook_runs_total", &labels).increment(1);
        metrics::histogram!("hookwire_hook_duration_seconds", &labels[..2])
            .record(started.elapsed().as_secs_f64());
        value
    }

    pub fn push(&mut self, hook: Arc<dyn AgentHook>) {
        self.hooks.push(hook);
    }

    pub fn extend(&mut self, hooks: impl IntoIterator<Item = Arc<dyn AgentHook>>) {
        self.hooks.extend(hooks);
    }

    pub fn len(&self) -> usize {
        self.hooks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    pub async fn session_start(&self, session: &SessionInfo) {
        for hook in &self.hooks {
            self.guarded(hook.as_ref(), "session_start", hook.session_start(session))
                .await;
        }
    }

    pub async fn session_end(&self, session: &SessionInfo) {
        for hook in &self.hooks {
            self.guarded(hook.as_ref(), "session_end", hook.session_end(session))
                .await;
        }
    }

    pub async fn pre_send_message(&self, ctx: &mut HookContext, input: &mut String) -> Flow {
        for hook in &self.hooks {
            let flow = self
                .guarded(
                    hook.as_ref(),
                    "pre_send_message",
                    hook.pre_send_message(ctx, input),
                )
                .await;
            if flow != Flow::Continue {
                return flow;
            }
        }
        Flow::Continue
    }

    pub async fn post_send_message(&self, ctx: &mut HookContext) {
        for hook in &self.hooks {
            self.guarded(
                hook.as_ref(),
                "post_send_message",
                hook.post_send_message(ctx),
            )
            .await;
        }
    }

    pub async fn before_planning(&self, ctx: &mut HookContext) {
        for hook in &self.hooks {
            self.guarded(hook.as_ref(), "before_planning", hook.before_planning(ctx))
                .await;
        }
    }

    pub async fn after_planning(&self, ctx: &mut HookContext) {
        for hook in &self.hooks {
            self.guarded(hook.as_ref(), "after_planning", hook.after_planning(ctx))
                .await;
        }
    }

    pub async fn before_first_agent(&self, ctx: &mut HookContext) {
        for hook in &self.hooks {
            self.guarded(
                hook.as_ref(),
                "before_first_agent",
                hook.before_first_agent(ctx),
            )
            .await;
        }
    }

    pub async fn before_each_agent(&self, ctx: &mut HookContext) {
        for hook in &self.hooks {
            self.guarded(
                hook.as_ref(),
                "before_each_agent",
                hook.before_each_agent(ctx),
            )
            .await;
        }
    }

    pub async fn after_tool_call(&self, ctx: &mut HookContext, tool_names: &[String]) {
        for hook in &self.hooks {
            self.guarded(
                hook.as_ref(),
                "after_tool_call",
                hook.after_tool_call(ctx, tool_names),
            )
            .await;
        }
    }

    pub async fn after_agent_loop(&self, ctx: &mut HookContext) {
        for hook in &self.hooks {
            self.guarded(
                hook.as_ref(),
                "after_agent_loop",
                hook.after_agent_loop(ctx),
            )
            .await;
        }
    }

    pub async fn pre_llm_request(&self, ctx: &mut HookContext, request: &mut LlmRequest) -> Flow {
        for hook in &self.hooks {
            let flow = self
                .guarded(
                    hook.as_ref(),
                    "pre_llm_request",
                    hook.pre_llm_request(ctx, request),
                )
                .await;
            if flow != Flow::Continue {
                return flow;
            }
        }
        Flow::Continue
    }

    pub async fn post_llm_response(
        &self,
        ctx: &mut HookContext,
        response: &mut LlmResponse,
    ) -> ResponseAction {
        for hook in &self.hooks {
            let action = self
                .guarded(
                    hook.as_ref(),
                    "post_llm_response",
                    hook.post_llm_response(ctx, response),
                )
                .await;
            if action != ResponseAction::Continue {
                return action;
            }
        }
        ResponseAction::Continue
    }

    pub async fn pre_tool_execution(
        &self,
        ctx: &mut HookContext,
        call: &mut ToolCallInfo,
    ) -> ToolAction {
        for hook in &self.hooks {
            let action = self
                .guarded(
                    hook.as_ref(),
                    "pre_tool_execution",
                    hook.pre_tool_execution(ctx, call),
                )
                .await;
            if action != ToolAction::Run {
                return action;
            }
        }
        ToolAction::Run
    }

    /// `post_tool_execution` for a success, `post_tool_execution_failure` for an error result.
    pub async fn post_tool(
        &self,
        ctx: &mut HookContext,
        call: &ToolCallInfo,
        result: &mut ToolResultInfo,
    ) -> Flow {
        for hook in &self.hooks {
            let flow = if result.is_error {
                self.guarded(
                    hook.as_ref(),
                    "post_tool_execution_failure",
                    hook.post_tool_execution_failure(ctx, call, result),
                )
                .await
            } else {
                self.guarded(
                    hook.as_ref(),
                    "post_tool_execution",
                    hook.post_tool_execution(ctx, call, result),
                )
                .await
            };
            if flow != Flow::Continue {
                return flow;
            }
        }
        Flow::Continue
    }

    pub async fn stop(&self, ctx: &mut HookContext, output: &str) -> StopAction {
        for hook in &self.hooks {
            let action = self
                .guarded(hook.as_ref(), "stop", hook.stop(ctx, output))
                .await;
            if action != StopAction::Finish {
                return action;
            }
        }
        StopAction::Finish
    }

    pub async fn run_completed(&self, ctx: &mut HookContext, output: &mut RunOutput) {
        for hook in &self.hooks {
            self.guarded(
                hook.as_ref(),
                "run_completed",
                hook.run_completed(ctx, output),
            )
            .await;
        }
    }

    pub async fn run_failed(&self, ctx: &mut HookContext, error: &ChatError) {
        for hook in &self.hooks {
            self.guarded(hook.as_ref(), "run_failed", hook.run_failed(ctx, error))
                .await;
        }
    }
}
