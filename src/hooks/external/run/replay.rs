//! `hookwire hooks replay` (docs/protocol.md §21): a recorded event's input run through the hooks
//! as they are now — the whole chain, with the real handlers, as a chat would run it — and its
//! decision made in the recording's words, so that it compares with the recorded one.

use std::sync::Arc;

use super::chain::Chain;
use super::dry_run::state_from;
use super::recording::decision;
use super::runner::Runner;
use crate::hooks::external::hook::values::workspace_id;
use crate::hooks::external::hook::{Envelope, Event, HookSet};
use crate::hooks::record::{RecordLine, RecordedDecision};
use crate::hooks::spend::HookSpend;
use crate::types::Person;

/// Why a recorded event cannot be replayed: the recording is not one this server reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ReplayError {
    #[error("unknown event {0:?}")]
    UnknownEvent(String),
    #[error("its input: {0}")]
    Input(String),
}

/// Runs `line`'s event `repeat` times (at least once) through `set` with `runner`: the decision
/// of each run. Each run is a chain of its own, with a hook model calls' limit of its own, as a
/// chat's.
pub(crate) async fn replay(
    set: &HookSet,
    runner: &Runner,
    line: &RecordLine,
    repeat: usize,
) -> Result<Vec<RecordedDecision>, ReplayError> {
    let event = Event::parse(&line.event)
        .and_then(|events| events.first().copied())
        .ok_or_else(|| ReplayError::UnknownEvent(line.event.clone()))?;
    let before = state_from(&line.input).map_err(|e| ReplayError::Input(e.to_string()))?;
    let text = |key: &str| {
        line.input
            .get(key)
            .and_then(|v| v.as_str())
            .map(str::to_string)
    };
    let envelope = Envelope {
        session_id: text("session_id").unwrap_or_else(|| "replay".into()),
        run_id: line.chat_id.clone(),
        cwd: runner.cwd.display().to_string(),
        model: text("model").unwrap_or_else(|| runner.model_name.clone()),
        workspace_id: workspace_id(&runner.cwd),
        person: line
            .input
            .get("user")
            .and_then(|user| serde_json::from_value::<Person>(user.clone()).ok()),
        ..Envelope::default()
    };
    let mut decisions = Vec::with_capacity(repeat.max(1));
    for _ in 0..repeat.max(1) {
        let chain = Chain {
            event,
            hooks: set.hooks(event),
            budget: runner.chain_budget,
            // An `async` hook runs in line: its answer is part of what is compared.
            background: None,
            spend: Arc::new(HookSpend::new(runner.max_hook_model_calls, None)),
        };
        let mut state = before.clone();
        let outcome = chain.run(runner, &envelope, &mut state).await;
        decisions.push(decision(&state, &outcome));
    }
    Ok(decisions)
}
