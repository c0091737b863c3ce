//! The chain engine: one event's hooks run over that event's values. It knows nothing of chats:
//! it runs hooks through [`RunHook`] (so tests script their outcomes), applies their outputs to an
//! [`EventState`] and records metrics.
//!
//! The rules of a chain:
//! - Order: the event's hooks as the files list them (server level, then workspace level); a
//!   hook whose filter does not match is passed over.
//! - Dialects: each hook gets the input of its dialect and its answer is read by its dialect
//!   (`wire`) into the one [`HookOutput`] the rules below work on. An output key the
//!   dialect does not define at the event is logged at `warn`.
//! - Rewrites chain: each hook sees the values as the previous one left them. A result field
//!   counts only at the events where it is valid (the event's rules, [`Event::rules`]); elsewhere
//!   it is logged and ignored.
//! - Short-circuit: the first hook that stops, skips, blocks or asks for a retry ends the chain.
//! - Side by side: hooks marked `parallel` (every Claude Code and Gemini CLI settings hook but
//!   a Gemini `sequential` group's; a YAML event with `parallel: true`) that follow each other
//!   start together, each on the values as the hooks before the group left them. Their answers
//!   are then applied in declaration order, whatever order they finished in: rewrites in turn,
//!   context in order, and of the decisions the strongest wins (stop, then skip or block, then
//!   retry, then ask: a question never outranks a refusal; the first of equals). An `on_error: abort` drops the answers declared
//!   after it. A hook that calls the model past the chat's hook model calls is checked before it
//!   joins a group: `skip` leaves it out, `abort` and `block` end the chain after the hooks
//!   before it (`block` with its refusal).
//! - Failures are data: a run that fails or times out (the [`RunResult`] variant says which) is
//!   logged; `on_error: skip` (the default) goes on with the next hook, `abort` ends the chain
//!   with no decision, `block` fails closed: the chain ends refusing what the event guards
//!   ([`refusal`]: a tool is skipped, a chat is stopped).
//! - Session hooks (the model's) may add and decide, never rewrite: their capabilities leave
//!   out every rewrite, and a message they inject must have the `user` role ([`limit_session`]).
//! - Time: the chain has a budget in all (30 s unless `limits.hook_chain_timeout_seconds` says
//!   otherwise); each hook's own timeout is cut to what is left, and once nothing is left the
//!   rest of the chain is skipped.
//! - `async: true` hooks are handed to the async queue ([`super::queue`]) with the values as the
//!   hooks before them left them, and the chain goes on at once: they take none of the budget,
//!   and nothing of their answer but a `systemMessage` notice comes back.

use std::sync::Arc;
use std::time::Duration;

// The runtime's clock, so that tests on paused time see the budget run out.
use tokio::time::Instant;

use super::hook_run::{over_limit, run_hook, Failure, RunHook};
use super::queue::{AsyncHooks, Job};
use crate::hooks::external::hook::{Envelope, Event, EventState, HookDef, HookOutput, OnError};
use crate::hooks::external::wire;
use crate::hooks::spend::HookSpend;
use crate::hooks::stats::Ran;
use crate::hooks::LateEvents;
use crate::types::Message;
use apply::{apply, refusal};

/// One event's chain: its hooks, in order, and the time they may take in all.
pub(super) struct Chain<'a> {
    pub(crate) event: Event,
    pub(crate) hooks: &'a [Arc<HookDef>],
    pub(crate) budget: Duration,
    /// Where its `async: true` hooks go; `None`: they run in line like the others.
    pub(crate) background: Option<Background<'a>>,
    /// The chat's hook model calls: what they spent and may still spend.
    pub(crate) spend: Arc<HookSpend>,
}

/// The queue a chain hands its `async` hooks to, and where their notices go.
pub(super) struct Background<'a> {
    pub(crate) queue: &'a AsyncHooks,
    /// The chat the event belongs to (none for the connection events).
    pub(crate) notices: Option<LateEvents>,
    /// The notices' `source`.
    pub(crate) source: &'static str,
}

/// What a chain leaves besides the changed state.
#[derive(Debug, Default)]
pub(super) struct ChainOutcome {
    /// The decision that ended the chain, if one did.
    pub(crate) control: Option<ChainControl>,
    /// The hook whose answer is that decision (none for a chain cut at the hook model calls'
    /// limit before the hook ran).
    pub(crate) decided_by: Option<String>,
    /// `pre_llm_request`: messages for this call only; `session_start`: for each chat of the
    /// session.
    pub(crate) inject_messages: Vec<Message>,
    pub(crate) additional_context: Vec<String>,
    /// Context for the rest of the chat (or, at `session_start`, for the session's chats).
    pub(crate) chat_context: Vec<String>,
    /// The hooks' `system_message`s (unless suppressed), for the person.
    pub(crate) notices: Vec<String>,
    /// Warnings for the person (the chat's one notice that hooks that call the model are
    /// skipped past `limits.max_hook_model_calls`).
    pub(crate) warnings: Vec<String>,
    /// Each hook that ran, in order: how it ended, and what it changed.
    pub(crate) ran: Vec<HookRun>,
}

/// One hook's run in a chain (a `hook_trace` frame's content).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HookRun {
    pub(crate) name: String,
    /// `server`, `workspace` or `session`.
    pub(crate) level: &'static str,
    pub(crate) ran: Ran,
    pub(crate) ms: f64,
    /// The values it changed or added (`tool_arguments`, `inject_messages`, …).
    pub(crate) changed: Vec<&'static str>,
    /// Why it failed or timed out (`exit code 7: …` with the start of its stderr).
    pub(crate) error: Option<String>,
}

/// A decision that ends a chain.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum ChainControl {
    Stop(String),
    Skip(String),
    Retry(String),
    /// The tool waits for the person's approval.
    Ask(String),
}

/// What one hook's answer does to the chain, once it is applied.
enum Step {
    /// The chain goes on.
    Next,
    /// The chain ends with this decision (`None`: `on_error: abort`, no decision).
    End(Option<ChainControl>),
}

impl ChainControl {
    /// Which decision wins when hooks that ran side by side take several: a stop, then a
    /// refusal of the tool, then a retry (before a tool, a refusal too: the tool does not run and
    /// the model gets the feedback), then a question to the person. A question never outranks a
    /// refusal: the person's approval must not run what a guard refused.
    fn rank(&self) -> u8 {
        match self {
            ChainControl::Stop(_) => 3,
            ChainControl::Skip(_) => 2,
            ChainControl::Retry(_) => 1,
            ChainControl::Ask(_) => 0,
        }
    }
}

impl Chain<'_> {
    /// Runs the chain over `state` (see the module doc for the rules).
    pub(super) async fn run(
        &self,
        runner: &dyn RunHook,
        envelope: &Envelope,
        state: &mut EventState,
    ) -> ChainOutcome {
        let event = self.event;
        let mut outcome = ChainOutcome::default();
        let deadline = Instant::now() + self.budget;
        let mut next = 0;
        while next < self.hooks.len() {
            let (group, cut) = self
                .gather(&mut next, envelope, state, deadline, &mut outcome)
                .await;
            if group.is_empty() {
                if let Some(control) = cut {
                    outcome.control = control;
                    break;
                }
                continue;
            }
            let remaining = deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                tracing::warn!(
                    event = event.as_str(),
                    budget = ?self.budget,
                    "hook chain ran out of its time budget; the rest is skipped"
                );
                break;
            }
            // Side by side, every hook of the group sees the values as they were before it;
            // their answers are applied in the order the hooks are declared, whatever order
            // they finished in, so the same answers always give the same result.
            let snapshot: &EventState = state;
            let results = futures::future::join_all(
                group
                    .iter()
                    .map(|hook| self.run_one(runner, hook, envelope, snapshot, remaining)),
            )
            .await;
            let mut decision: Option<ChainControl> = None;
            let mut decided_by: Option<&str> = None;
            let mut ended = false;
            for (hook, (result, run)) in group.iter().zip(results) {
                outcome.ran.push(run);
                if ended {
                    // An `on_error: abort` before it in the group: its answer is not used.
                    continue;
                }
                match self.take(hook, result, state, &mut outcome) {
                    Step::Next => {}
                    Step::End(None) => ended = true,
                    Step::End(Some(control)) => {
                        if keep_stronger(&mut decision, control) {
                            decided_by = Some(&hook.name);
                        }
                    }
                }
            }
            let cut_short = cut.is_some();
            if let (false, Some(Some(control))) = (ended, cut) {
                // The capped hook is declared after the group: it wins only over weaker
                // decisions.
                if keep_stronger(&mut decision, control) {
                    decided_by = None;
                }
            }
            if decision.is_some() || ended || cut_short {
                outcome.control = decision;
                outcome.decided_by = decided_by.map(str::to_string);
                break;
            }
        }
        outcome
    }

    /// The hooks that run next, from `next` on: one, or a run of side-by-side hooks in a row.
    /// Hooks whose filter does not match are passed over, `async` ones handed to the queue. A
    /// hook past the chat's hook model calls with `on_error: abort` (`Some(None)`) or `block`
    /// (`Some(Some(refusal))`) cuts the chain after the hooks before it.
    async fn gather<'h>(
        &'h self,
        next: &mut usize,
        envelope: &Envelope,
        state: &EventState,
        deadline: Instant,
        outcome: &mut ChainOutcome,
    ) -> (Vec<&'h Arc<HookDef>>, Option<Option<ChainControl>>) {
        let event = self.event;
        let mut group: Vec<&Arc<HookDef>> = Vec::new();
        let mut cut: Option<Option<ChainControl>> = None;
        while let Some(hook) = self.hooks.get(*next) {
            if !group.is_empty() && !hook.parallel {
                break;
            }
            *next += 1;
            if !hook.applies(
                event,
                wire::tools::names(hook.dialect, state.tool_name.as_deref()),
                &envelope.model,
                state.compaction.as_ref().map(|c| c.trigger.as_str()),
            ) {
                continue;
            }
            // Off the chat's path: it sees the values as the hooks before it left them, and
            // nothing of its answer but a notice comes back. It takes none of the budget.
            if let (true, Some(background)) = (hook.run_async, &self.background) {
                let job = Job {
                    hook: hook.clone(),
                    event,
                    input: wire::input(hook, event, envelope, state),
                    state: state.clone(),
                    envelope: envelope.clone(),
                    notices: background.notices.clone(),
                    source: background.source,
                    spend: self.spend.clone(),
                };
                let wait = deadline.saturating_duration_since(Instant::now());
                background.queue.hand_over(job, wait).await;
                continue;
            }
            // Past the chat's hook model calls (or its tokens), a hook that calls the model is
            // left out of its group; `on_error` decides what that means (a `block` hook fails
            // closed).
            if hook.handler.calls_model() {
                if let Err(exhausted) = self.spend.room() {
                    over_limit(&self.spend, hook, event, exhausted, &mut outcome.warnings);
                    match hook.on_error {
                        OnError::Skip => continue,
                        OnError::Abort => cut = Some(None),
                        OnError::Block => {
                            let failure = Failure::Failed(exhausted.to_string());
                            cut = Some(refusal(event, &hook.name, &failure));
                        }
                    }
                    break;
                }
            }
            group.push(hook);
            if !hook.parallel {
                break;
            }
        }
        (group, cut)
    }

    /// Applies one hook's answer (or failure) to the state and the outcome.
    fn take(
        &self,
        hook: &HookDef,
        result: Result<HookOutput, Failure>,
        state: &mut EventState,
        outcome: &mut ChainOutcome,
    ) -> Step {
        let event = self.event;
        let output = match result {
            Ok(output) => output,
            Err(error) => {
                tracing::warn!(hook = %hook.name, file = %hook.file.display(), line = hook.line, event = event.as_str(), %error, "hook failed");
                return match hook.on_error {
                    OnError::Skip => Step::Next,
                    OnError::Abort => Step::End(None),
                    OnError::Block => match refusal(event, &hook.name, &error) {
                        Some(control) => Step::End(Some(control)),
                        None => Step::End(None),
                    },
                };
            }
        };
        if !output.refused.is_empty() {
            tracing::warn!(hook = %hook.name, refused = ?output.refused, "changes outside the hook's capabilities were ignored");
        }
        if !output.unknown.is_empty() {
            tracing::warn!(hook = %hook.name, event = %hook.event_name, dialect = hook.dialect.as_str(), keys = ?output.unknown, "output keys that the hook's dialect does not define at this event were ignored");
        }
        if let (Some(message), false) = (&output.system_message, output.suppress_output) {
            outcome.notices.push(message.clone());
        }
        // What the hook changed, for `hook_trace`: the values `apply` replaced, and what it
        // added to the outcome (counted, not copied: the state is never cloned here).
        let before = (
            outcome.inject_messages.len(),
            outcome.additional_context.len() + outcome.chat_context.len(),
        );
        let retry = output.retry_feedback.is_some();
        let mut changed = Vec::new();
        let control = apply(event, &hook.name, output, state, outcome, &mut changed);
        if outcome.inject_messages.len() > before.0 {
            changed.push("inject_messages");
        }
        if outcome.additional_context.len() + outcome.chat_context.len() > before.1 {
            changed.push("additional_context");
        }
        if retry {
            changed.push("retry_feedback");
        }
        if let Some(run) = outcome.ran.last_mut() {
            run.changed = changed;
        }
        match control {
            Some(control) => Step::End(Some(control)),
            None => Step::Next,
        }
    }

    /// Runs one hook within `remaining`: how it ended, and its trace row.
    async fn run_one(
        &self,
        runner: &dyn RunHook,
        hook: &HookDef,
        envelope: &Envelope,
        state: &EventState,
        remaining: Duration,
    ) -> (Result<HookOutput, Failure>, HookRun) {
        let input = wire::input(hook, self.event, envelope, state);
        let timeout = hook.timeout.min(remaining);
        let (output, ran, elapsed) = run_hook(
            runner,
            hook,
            self.event,
            &input,
            timeout,
            (state, envelope),
            &self.spend,
        )
        .await;
        let run = HookRun {
            name: hook.name.clone(),
            level: hook.level,
            ran,
            ms: elapsed.as_secs_f64() * 1000.0,
            changed: Vec::new(),
            error: output.as_ref().err().map(ToString::to_string),
        };
        (output, run)
    }
}

/// Keeps `control` as the decision when it is stronger than the one kept (of equals, the
/// first); whether it did.
fn keep_stronger(kept: &mut Option<ChainControl>, control: ChainControl) -> bool {
    let stronger = kept
        .as_ref()
        .is_none_or(|kept| control.rank() > kept.rank());
    if stronger {
        *kept = Some(control);
    }
    stronger
}

mod apply;

#[cfg(test)]
mod tests;
