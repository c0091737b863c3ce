//! One chain's run as a line of a hook recording (docs/protocol.md §21): the native input the
//! hooks got and the decision, both with credentials replaced, so that a recording holds no
//! more than a replay needs. The same decision is made of a replayed chain, so the two compare.

use std::collections::BTreeMap;

use serde_json::Value;

use super::chain::{Chain, ChainControl, ChainOutcome};
use super::dry_run::{added, shown};
use crate::hooks::external::hook::{Envelope, Event, EventState, HookDef};
use crate::hooks::external::wire;
use crate::hooks::record::{RecordedDecision, RecordedHook};
use crate::hooks::stats::Ran;
use crate::types::redact::{credentials_in, credentials_in_json};

/// A chain's run as the recording takes it on the chat's path: the values the event brought
/// (a copy, since hooks may rewrite them), the decision and the hooks' runs. The line is made of
/// it on the recorder's thread ([`Pending::line`]): the conversation's JSON and its redaction
/// cost more than the rest of the recording, and never delay the chat.
pub(crate) struct Pending {
    at: std::time::SystemTime,
    event: Event,
    envelope: Envelope,
    before: EventState,
    decision: RecordedDecision,
    hooks: Vec<RecordedHook>,
}

/// What to record of a chain that ran over `before` and left `after`.
pub(crate) fn pending(
    chain: &Chain<'_>,
    envelope: &Envelope,
    before: EventState,
    after: &EventState,
    outcome: &ChainOutcome,
) -> Pending {
    Pending {
        at: std::time::SystemTime::now(),
        event: chain.event,
        envelope: envelope.clone(),
        before,
        decision: decision(after, outcome),
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

impl Pending {
    /// The line: a [`crate::hooks::record::RecordLine`] as JSON text, its input the native
    /// input of the event with credentials replaced. Replaced in each string, not in the JSON
    /// text: there a line break is `\n`, which would hide the word that follows it from the
    /// patterns, and a URL's query would swallow the escaped quote that closes its string.
    pub(crate) fn line(self) -> String {
        let mut input = wire::native_input(self.event, &self.envelope, &self.before);
        credentials_in_json(&mut input);
        let input = json(&input);
        format!(
            r#"{{"at":{},"chat_id":{},"event":{},"input":{input},"decision":{},"hooks":{}}}"#,
            json(&crate::types::iso8601(self.at)),
            json(&self.envelope.run_id),
            json(self.event.as_str()),
            json(&self.decision),
            json(&self.hooks),
        )
    }
}

/// A part of a line as JSON text (these types always serialize: no maps with non-string keys).
fn json<T: serde::Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".into())
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
pub(crate) fn decision(after: &EventState, outcome: &ChainOutcome) -> RecordedDecision {
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
    // The fields the hooks said they changed (each run's), with their values now: no copy of
    // the values from before the chain is needed.
    let mut changed: BTreeMap<String, Value> = BTreeMap::new();
    let rewritten = outcome
        .ran
        .iter()
        .flat_map(|run| run.changed.iter().copied());
    for field in rewritten {
        if matches!(
            field,
            "inject_messages" | "additional_context" | "retry_feedback"
        ) {
            continue; // added, not rewritten: below; a retry's feedback is its reason
        }
        let mut value = shown(after, field);
        credentials_in_json(&mut value);
        changed.insert(field.to_string(), value);
    }
    for (field, _, mut value) in added(outcome) {
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

#[cfg(test)]
mod cost {
    use super::*;
    use crate::types::Message;

    #[test]
    #[ignore = "a measurement: cargo test --release --lib -- --ignored --nocapture record_cost"]
    fn record_cost() {
        let messages: Vec<Message> = (0..21)
            .map(|n| {
                Message::user(format!(
                    "question {n}: how does the parser handle nested blocks? it keeps a stack"
                ))
            })
            .collect();
        let state = EventState {
            messages: Some(messages),
            system_prompt: Some("You are helpful.".into()),
            ..EventState::default()
        };
        let n = 2000;
        let started = std::time::Instant::now();
        for _ in 0..n {
            std::hint::black_box(state.clone());
        }
        let on_path = started.elapsed() / n;
        let pending = Pending {
            at: std::time::SystemTime::now(),
            event: Event::PreLlmRequest,
            envelope: Envelope::default(),
            before: state,
            decision: RecordedDecision {
                outcome: "continue".into(),
                reason: None,
                decided_by: None,
                changed: BTreeMap::new(),
            },
            hooks: Vec::new(),
        };
        let started = std::time::Instant::now();
        for _ in 0..n {
            let copy = Pending {
                before: pending.before.clone(),
                envelope: pending.envelope.clone(),
                decision: pending.decision.clone(),
                hooks: Vec::new(),
                ..pending
            };
            std::hint::black_box(copy.line());
        }
        println!(
            "a 21-message event: {on_path:?} on the chat's path, {:?} on the recorder's thread",
            started.elapsed() / n
        );
    }
}
