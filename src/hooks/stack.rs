//! [`HookStack`]: runs the hooks of a chat in order, with written rules. Every event goes through
//! one helper, [`HookStack::each`], so the rules hold for all of them:
//!
//! - Order: the order hooks were added (built-in → server → workspace → skill → session).
//! - Rewrites chain: the event's values (`ctx`, the input, the request, the tool call, …) are
//!   passed by `&mut` from one hook to the next, so each hook sees them as the previous one left
//!   them; nothing is merged afterwards.
//! - Short-circuit: the first hook whose answer is not the default (`Flow::Continue`,
//!   `ResponseAction::Continue`, `ToolAction::Run`, `StopAction::Finish`) decides: it stops, skips
//!   a tool, retries or continues the model, and the hooks after it are not called for that
//!   event. Notify-only events (answer `()`) reach every hook.
//! - A tool result goes to `post_tool_execution` or, when `is_error`, to
//!   `post_tool_execution_failure`, chosen for each hook as the result stands when it is called.
//! - Isolation: a hook that returns an error or panics is logged and counted
//!   (`hookwire_hook_runs_total{outcome="error"|"panic"}`), its answer counts as the default, and
//!   the chat goes on. So does a hook that takes longer than the stack's budget (the chain
//!   budget, `limits.hook_chain_timeout_seconds`): `outcome="timeout"`.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use futures::FutureExt;

use super::run_metrics::HookRunMetrics;
use super::{
    AgentHook, CompactInfo, Flow, HookContext, HookResult, LlmRequest, LlmResponse, ResponseAction,
    RunOutcome, RunOutput, SessionInfo, StopAction, ToolAction, ToolCallInfo, ToolResultInfo,
};
use crate::types::{ChatError, PendingCall};

#[derive(Clone)]
pub(crate) struct HookStack {
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

/// `hookwire_hook_runs_total{hook,event,outcome}`, `hookwire_hook_duration_seconds{hook,event}`.
static RUN_METRICS: LazyLock<HookRunMetrics> = LazyLock::new(|| {
    HookRunMetrics::new("hookwire_hook_runs_total", "hookwire_hook_duration_seconds")
});

/// The default time one hook call may take (the same as an external hook chain's budget).
pub(crate) const DEFAULT_HOOK_BUDGET: Duration = Duration::from_secs(30);

/// Beyond the budget, time a hook gets to finish its own timeout handling (an external hook
/// chain enforces the same budget itself and should be the one to report it).
const BUDGET_GRACE: Duration = Duration::from_secs(1);

impl HookStack {
    /// Sets how long one hook call may take.
    pub(crate) fn set_budget(&mut self, budget: Duration) {
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
        RUN_METRICS.record(hook.name(), event, outcome, started.elapsed());
        value
    }

    pub(crate) fn push(&mut self, hook: Arc<dyn AgentHook>) {
        self.hooks.push(hook);
    }

    pub(crate) fn extend(&mut self, hooks: impl IntoIterator<Item = Arc<dyn AgentHook>>) {
        self.hooks.extend(hooks);
    }

    /// Calls every hook in order for one event (the module doc's rules): `call` starts one
    /// hook's call with the event's values and names the event for logs and metrics.
    async fn each<V, T>(&self, values: &mut V, call: impl Dispatch<V, T>) -> T
    where
        V: ?Sized + Send,
        T: Default + PartialEq,
    {
        for hook in &self.hooks {
            let (event, future) = call(hook.as_ref(), values);
            let answer = self.guarded(hook.as_ref(), event, future).await;
            if answer != T::default() {
                return answer;
            }
        }
        T::default()
    }

    /// `post_tool_execution` for a success, `post_tool_execution_failure` for an error result.
    pub(crate) async fn post_tool(
        &self,
        ctx: &mut HookContext,
        call: &ToolCallInfo,
        result: &mut ToolResultInfo,
    ) -> Flow {
        self.each(&mut (ctx, call, result), |hook, (ctx, call, result)| {
            if result.is_error {
                let failure = hook.post_tool_execution_failure(ctx, call, result);
                ("post_tool_execution_failure", failure)
            } else {
                let success = hook.post_tool_execution(ctx, call, result);
                ("post_tool_execution", success)
            }
        })
        .await
    }
}

/// The stack's events as a table: each row is an [`AgentHook`] method, which the stack offers
/// with the same name, values and answer, and which names the event in logs and metrics. Every
/// row goes through [`HookStack::each`].
macro_rules! events {
    ($($method:ident($($arg:ident: $ty:ty),*) $(-> $answer:ty)?;)*) => {
        impl HookStack {
            $(pub(crate) async fn $method(&self, $($arg: $ty),*) $(-> $answer)? {
                self.each(&mut ($($arg,)*), |hook, ($($arg,)*)| {
                    (stringify!($method), hook.$method($($arg),*))
                })
                .await
            })*
        }
    };
}

events! {
    session_start(session: &SessionInfo);
    session_end(session: &SessionInfo);
    pre_send_message(ctx: &mut HookContext, input: &mut String) -> Flow;
    post_send_message(ctx: &mut HookContext);
    before_planning(ctx: &mut HookContext);
    after_planning(ctx: &mut HookContext);
    before_first_agent(ctx: &mut HookContext);
    before_each_agent(ctx: &mut HookContext);
    after_tool_call(ctx: &mut HookContext, tool_names: &[String]);
    after_agent_loop(ctx: &mut HookContext);
    pre_llm_request(ctx: &mut HookContext, request: &mut LlmRequest) -> Flow;
    post_llm_response(ctx: &mut HookContext, response: &mut LlmResponse) -> ResponseAction;
    approval_required(ctx: &mut HookContext, calls: &[PendingCall]);
    pre_auto_compact(ctx: &mut HookContext, info: &CompactInfo, summary_prompt: &mut String) -> Flow;
    post_auto_compact(ctx: &mut HookContext, info: &CompactInfo, summary: &mut String);
    context_rebuilt(ctx: &mut HookContext);
    pre_micro_compact(ctx: &mut HookContext, info: &CompactInfo) -> Flow;
    post_micro_compact(ctx: &mut HookContext, info: &CompactInfo);
    pre_tool_execution(ctx: &mut HookContext, call: &mut ToolCallInfo) -> ToolAction;
    stop(ctx: &mut HookContext, output: &str) -> StopAction;
    run_completed(ctx: &mut HookContext, output: &mut RunOutput);
    run_failed(ctx: &mut HookContext, error: &ChatError);
    on_run_end(ctx: &mut HookContext, outcome: &mut RunOutcome);
}

/// Starts one hook's call for an event over the event's values `V`: the event's name (for logs
/// and metrics) and the call, which borrows the values for as long as it runs (`for<'a>`).
trait Dispatch<V: ?Sized, T>:
    for<'a> Fn(&'a dyn AgentHook, &'a mut V) -> (&'static str, BoxFuture<'a, HookResult<T>>)
{
}

impl<V: ?Sized, T, F> Dispatch<V, T> for F where
    F: for<'a> Fn(&'a dyn AgentHook, &'a mut V) -> (&'static str, BoxFuture<'a, HookResult<T>>)
{
}
