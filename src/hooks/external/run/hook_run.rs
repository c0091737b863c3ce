//! One hook's run, start to end: its handler through [`RunHook`] (the [`Runner`], or a script in
//! tests), its answer read in its dialect ([`wire::read`]), how it ended ([`Ran`]) recorded
//! in the figures, the metrics and the trace. The chain and the async queue both run hooks
//! through [`run_hook`].

use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;

use crate::types::Person;
use serde_json::Value;

use super::runner::Runner;
use crate::hooks::external::hook::{
    Control, Envelope, Event, EventState, HookDef, HookOutput, RunResult,
};
use crate::hooks::external::wire;
use crate::hooks::run_metrics::HookRunMetrics;
use crate::hooks::spend::{Exhausted, HookSpend};
use crate::hooks::stats::{self, Ran};
use crate::types::{Message, Role};

/// Runs one hook's handler (for the hook's own event) with its input JSON, within `timeout`.
/// Its model calls, if it makes any, are charged to `spend` (the chat's); `person` is who the
/// chat is for (a command hook's `HOOKWIRE_USER_ID` and `HOOKWIRE_TENANT`).
#[async_trait]
pub(super) trait RunHook: Send + Sync {
    async fn run(
        &self,
        hook: &HookDef,
        input: &Value,
        timeout: Duration,
        spend: &Arc<HookSpend>,
        person: Option<&Person>,
    ) -> RunResult;
}

#[async_trait]
impl RunHook for Runner {
    async fn run(
        &self,
        hook: &HookDef,
        input: &Value,
        timeout: Duration,
        spend: &Arc<HookSpend>,
        person: Option<&Person>,
    ) -> RunResult {
        Runner::run(self, hook, input, timeout, spend, person).await
    }
}

/// Why a hook gave no output.
pub(super) enum Failure {
    TimedOut(Duration),
    Failed(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::TimedOut(after) => write!(f, "timed out after {after:?}"),
            Failure::Failed(error) => f.write_str(error),
        }
    }
}

/// A hook that calls the model was skipped past the chat's limit: logged, and the chat's one
/// notice the first time.
pub(super) fn over_limit(
    spend: &HookSpend,
    hook: &HookDef,
    event: Event,
    exhausted: Exhausted,
    warnings: &mut Vec<String>,
) {
    tracing::debug!(hook = %hook.name, event = event.as_str(), %exhausted, "a hook that calls the model was skipped");
    if spend.first_skip() {
        tracing::warn!(hook = %hook.name, event = event.as_str(), %exhausted, "hooks that call the model are skipped for the rest of the chat");
        metrics::counter!("hookwire_hook_model_calls_capped_total").increment(1);
        warnings.push(format!(
            "{exhausted}: hooks that call the model are skipped for the rest of this chat"
        ));
    }
}

/// Runs one hook with `input` within `timeout`, reads its answer in its dialect (against the
/// event's state and envelope) and records how it ended (in a chain, and from the async queue).
pub(super) async fn run_hook(
    runner: &dyn RunHook,
    hook: &HookDef,
    event: Event,
    input: &Value,
    timeout: Duration,
    (state, envelope): (&EventState, &Envelope),
    spend: &Arc<HookSpend>,
) -> (Result<HookOutput, Failure>, Ran, Duration) {
    let started = Instant::now();
    let span = crate::telemetry::Span::start(
        || format!("hook {}", event.as_str()),
        crate::telemetry::Kind::Internal,
        || {
            crate::telemetry::hook_attributes(
                &hook.name,
                event.as_str(),
                hook.level,
                hook.dialect.as_str(),
            )
        },
    );
    let output = match span
        .run(runner.run(hook, input, timeout, spend, envelope.person.as_ref()))
        .await
    {
        RunResult::Error(error) => Err(Failure::Failed(error)),
        RunResult::Timeout => Err(Failure::TimedOut(timeout)),
        answer => wire::read(hook, event, answer, state, envelope)
            .map(|output| match hook.is_registered() {
                true => limit_registered(output),
                false => output,
            })
            .map_err(|e| Failure::Failed(format!("bad result: {e}"))),
    };
    let ran = match &output {
        Ok(out) => match &out.control {
            Some(Control::Skip(_)) => Ran::Skip,
            Some(Control::Stop(_) | Control::Block(_)) => Ran::Block,
            Some(Control::Ask(_)) => Ran::Ask,
            None => Ran::Success,
        },
        Err(Failure::TimedOut(_)) => Ran::Timeout,
        Err(Failure::Failed(_)) => Ran::Failure,
    };
    let elapsed = started.elapsed();
    span.set(|| {
        vec![crate::telemetry::Attribute::new(
            "hookwire.hook.outcome",
            ran.label(),
        )]
    });
    span.end();
    record(hook, event, ran, elapsed);
    (output, ran, elapsed)
}

/// A registered hook's output without the messages it may not inject: any but `user` ones (a
/// `system` message would outrank the operator's prompt). They are refused, so logged.
fn limit_registered(mut output: HookOutput) -> HookOutput {
    // Context from a registered hook is the model's own words coming back: it goes in as a user
    // message, never appended to the operator's system prompt.
    if let Some(context) = output.additional_context.take() {
        output.inject_messages.push(Message::user(context));
    }
    let before = output.inject_messages.len();
    output
        .inject_messages
        .retain(|message| message.role == Role::User);
    if output.inject_messages.len() < before {
        output
            .refused
            .push("inject_messages with a role other than user".into());
    }
    output
}

/// `hookwire_external_hook_runs_total{hook,event,outcome}`,
/// `hookwire_external_hook_duration_seconds{hook,event}`.
static RUN_METRICS: LazyLock<HookRunMetrics> = LazyLock::new(|| {
    HookRunMetrics::new(
        "hookwire_external_hook_runs_total",
        "hookwire_external_hook_duration_seconds",
    )
});

/// Counts one run in the figures and the metrics.
fn record(hook: &HookDef, event: Event, ran: Ran, elapsed: Duration) {
    let outcome = ran.label();
    stats::record(hook.figures_id(), ran, elapsed);
    RUN_METRICS.record(&hook.name, event.as_str(), outcome, elapsed);
    tracing::debug!(hook = %hook.name, event = event.as_str(), outcome, ms = elapsed.as_millis() as u64, "hook ran");
}
