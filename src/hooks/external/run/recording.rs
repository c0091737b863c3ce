//! One chain's run as a line of a hook recording (docs/protocol.md §21): the native input the
//! hooks got and the decision, both with credentials replaced, so that a recording holds no
//! more than a replay needs. The same decision is made of a replayed chain, so the two compare.

use std::collections::BTreeMap;

use serde_json::Value;

use super::chain::{Chain, ChainControl, ChainOutcome};
use super::dry_run::{added, changes};
use crate::hooks::external::hook::{Envelope, EventState, HookDef};
use crate::hooks::external::wire;
use crate::hooks::record::{RecordLine, RecordedDecision, RecordedHook};
use crate::hooks::stats::Ran;
use crate::types::redact::{credentials_in, credentials_in_json};

/// The line of a chain that ran over `before` (its values as the event brought them) and left
/// `after`.
pub(crate) fn record_line(
    chain: &Chain<'_>,
    envelope: &Envelope,
    before: &EventState,
    after: &EventState,
    outcome: &ChainOutcome,
) -> RecordLine {
    let mut input = wire::native_input(chain.event, envelope, before);
    credentials_in_json(&mut input);
    RecordLine {
        at: crate::types::iso8601(std::time::SystemTime::now()),
        chat_id: envelope.run_id.clone(),
        event: chain.event.as_str().to_string(),
        input,
        decision: decision(before, after, outcome),
        hooks: outcome
            .ran
            .iter()
            .map(|run| RecordedHook {
                name: run.name.clone(),
                source: source(chain.hooks, &run.name, run.level),
                outcome: run.ran.label().to_string(),
                ms: (run.ms * 10.0).round() / 10.0,
            })
            .collect(),
    }
}

/// `server hooks.yaml:3`: the hook's level and place.
fn source(hooks: &[std::sync::Arc<HookDef>], name: &str, level: &str) -> String {
    match hooks.iter().find(|hook| hook.name == name) {
        Some(hook) => format!("{level} {}:{}", hook.file.display(), hook.line),
        None => level.to_string(),
    }
}

/// What the chain decided, in the recording's words: the outcome (a stop, and a skip a hook
/// answered with a block, are `block`), why, which hook, and every field rewritten or added with
/// its new value (credentials replaced).
pub(crate) fn decision(
    before: &EventState,
    after: &EventState,
    outcome: &ChainOutcome,
) -> RecordedDecision {
    let blocked_by_hook = outcome.ran.iter().any(|run| {
        run.ran == Ran::Block && outcome.decided_by.as_deref() == Some(run.name.as_str())
    });
    let (word, reason) = match &outcome.control {
        None => ("continue", None),
        Some(ChainControl::Stop(reason)) => ("block", Some(reason)),
        Some(ChainControl::Skip(reason)) if blocked_by_hook => ("block", Some(reason)),
        Some(ChainControl::Skip(reason)) => ("skip", Some(reason)),
        Some(ChainControl::Retry(feedback)) => ("retry", Some(feedback)),
        Some(ChainControl::Ask(reason)) => ("ask", Some(reason)),
    };
    let mut changed: BTreeMap<String, Value> = BTreeMap::new();
    for (field, _, mut value) in changes(before, after).into_iter().chain(added(outcome)) {
        credentials_in_json(&mut value);
        changed.insert(field.to_string(), value);
    }
    RecordedDecision {
        outcome: word.to_string(),
        reason: reason
            .filter(|reason| !reason.is_empty())
            .map(|reason| credentials_in(reason).into_owned()),
        decided_by: outcome.decided_by.clone(),
        changed,
    }
}
