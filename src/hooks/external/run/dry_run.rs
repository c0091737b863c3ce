//! `hookwire hooks test EVENT` (docs/protocol.md §12): one event's chain run on a given input
//! with the real handlers, hook by hook, so each hook's outcome and what it changed can be shown;
//! the chain's decision is the answer.

use serde_json::{Map, Value};

use super::chain::{Chain, ChainControl, ChainOutcome};
use super::runner::Runner;
use crate::hooks::external::hook::values::workspace_id;
use crate::hooks::external::hook::{Envelope, Event, EventState, HookSet};
use crate::hooks::stats::Ran;
use crate::types::{Message, Role};

/// One hook's run in a dry run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DryHook {
    pub(crate) name: String,
    pub(crate) place: String,
    pub(crate) outcome: &'static str,
    pub(crate) ms: f64,
    /// Each changed field: its value before and after (JSON).
    pub(crate) changes: Vec<(&'static str, Value, Value)>,
    /// Why it failed or timed out.
    pub(crate) error: Option<String>,
}

/// What the chain decided.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum DryDecision {
    /// Nothing stops the event (exit 0).
    Continue,
    /// `retry_feedback`: the model (or, before a tool, the tool's result) gets this (exit 0).
    Feedback(String),
    /// A stop, skip, block or ask (exit 2).
    Refused { how: &'static str, reason: String },
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DryRun {
    pub(crate) event: &'static str,
    pub(crate) hooks: Vec<DryHook>,
    pub(crate) decision: DryDecision,
    /// Some hook failed or timed out (exit 1 when nothing refused).
    pub(crate) failed: bool,
}

/// Why a dry run could not start: the event or the input is not one a hook could get.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum DryRunError {
    #[error("unknown event {name:?}; one of: {known}")]
    UnknownEvent { name: String, known: String },
    #[error("the input must be a JSON object")]
    NotAnObject,
    #[error("`messages` must be an array")]
    MessagesNotAnArray,
    #[error("`tool_arguments` is not JSON: {0}")]
    ArgumentsNotJson(String),
}

/// Runs the hooks of `set` configured under `event_name` (any dialect's spelling) with
/// `runner` on `input` (the JSON a hook would get: `user_input`, `tool_name`, `tool_input`,
/// `messages`, …).
pub(crate) async fn dry_run(
    set: &HookSet,
    runner: &Runner,
    event_name: &str,
    input: &Value,
) -> Result<DryRun, DryRunError> {
    let events = Event::parse(event_name).ok_or_else(|| DryRunError::UnknownEvent {
        name: event_name.to_string(),
        known: Event::known_names().join(", "),
    })?;
    let event = events[0];
    let mut state = state_from(input)?;
    let envelope = Envelope {
        session_id: text(input, "session_id").unwrap_or_else(|| "dry-run".into()),
        run_id: Some(text(input, "run_id").unwrap_or_else(|| "dry-run".into())),
        cwd: runner.cwd.display().to_string(),
        model: text(input, "model").unwrap_or_else(|| runner.model_name.clone()),
        workspace_id: workspace_id(&runner.cwd),
        ..Envelope::default()
    };
    let mut run = DryRun {
        event: event.as_str(),
        hooks: Vec::new(),
        decision: DryDecision::Continue,
        failed: false,
    };
    // One limit for the whole run, as one chat would have.
    let spend = std::sync::Arc::new(crate::hooks::spend::HookSpend::new(
        runner.max_hook_model_calls,
        None,
    ));
    for hook in set.hooks(event) {
        let before = state.clone();
        let chain = Chain {
            event,
            hooks: std::slice::from_ref(hook),
            budget: runner.chain_budget,
            // An `async` hook runs in line here: the dry run shows what it does.
            background: None,
            spend: spend.clone(),
        };
        let outcome = chain.run(runner, &envelope, &mut state).await;
        let Some(ran) = outcome.ran.first() else {
            continue; // its filter does not match this input
        };
        run.failed |= matches!(ran.ran, Ran::Failure | Ran::Timeout);
        // A tool refused by a block (exit 2, a Claude Code `deny`) is a denial; a `skip`
        // answer skips it.
        let refused_as = if matches!(ran.ran, Ran::Block) {
            "deny"
        } else {
            "skip"
        };
        run.hooks.push(DryHook {
            name: hook.name.clone(),
            place: format!("{}:{}", hook.file.display(), hook.line),
            outcome: ran.ran.label(),
            ms: ran.ms,
            error: ran.error.clone(),
            changes: changes(&before, &state)
                .into_iter()
                .chain(added(&outcome))
                .collect(),
        });
        let decision = match outcome.control {
            None => continue,
            Some(ChainControl::Retry(feedback)) => DryDecision::Feedback(feedback),
            Some(ChainControl::Stop(reason)) => DryDecision::Refused {
                how: "stop",
                reason,
            },
            Some(ChainControl::Skip(reason)) => DryDecision::Refused {
                how: refused_as,
                reason,
            },
            Some(ChainControl::Ask(reason)) => DryDecision::Refused { how: "ask", reason },
        };
        run.decision = decision;
        break;
    }
    Ok(run)
}

fn text(input: &Value, key: &str) -> Option<String> {
    input.get(key).and_then(Value::as_str).map(str::to_string)
}

/// The event's values from a hook input JSON (both vocabularies' names).
pub(super) fn state_from(input: &Value) -> Result<EventState, DryRunError> {
    let empty = Map::new();
    let object = match input {
        Value::Object(object) => object,
        Value::Null => &empty,
        _ => return Err(DryRunError::NotAnObject),
    };
    let get = |key: &str| object.get(key).and_then(Value::as_str).map(str::to_string);
    let messages = match object.get("messages") {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) => Some(
            items
                .iter()
                .map(|item| {
                    let role = match item.get("role").and_then(Value::as_str) {
                        Some("system") => Role::System,
                        Some("assistant") => Role::Assistant,
                        Some("tool") => Role::Tool,
                        _ => Role::User,
                    };
                    let content = item.get("content").and_then(Value::as_str).unwrap_or("");
                    Message::new(role, content)
                })
                .collect(),
        ),
        Some(_) => return Err(DryRunError::MessagesNotAnArray),
    };
    let tool_arguments = match object.get("tool_input").or(object.get("tool_arguments")) {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(
            serde_json::from_str(text).map_err(|e| DryRunError::ArgumentsNotJson(e.to_string()))?,
        ),
        Some(other) => Some(other.clone()),
    };
    Ok(EventState {
        user_input: get("user_input").or_else(|| get("prompt")),
        messages,
        system_prompt: get("system_prompt"),
        assistant_output: get("assistant_output"),
        tool_name: get("tool_name"),
        tool_call_id: get("tool_call_id").or_else(|| get("tool_use_id")),
        tool_arguments,
        tool_result: get("tool_result"),
        tool_error: get("tool_error"),
        error: get("error"),
        summary: get("summary"),
        ..EventState::default()
    })
}

/// What the hook added rather than changed (context, messages), as a change from nothing.
pub(super) fn added(outcome: &ChainOutcome) -> Vec<(&'static str, Value, Value)> {
    let mut added = Vec::new();
    let mut text = |field: &'static str, texts: &[String]| {
        if !texts.is_empty() {
            added.push((field, Value::Null, Value::String(texts.join("\n"))));
        }
    };
    text("additional_context", &outcome.additional_context);
    text("chat_context", &outcome.chat_context);
    if !outcome.inject_messages.is_empty() {
        let messages = outcome
            .inject_messages
            .iter()
            .map(|m| serde_json::json!({"role": m.role.as_str(), "content": m.content}))
            .collect();
        added.push(("inject_messages", Value::Null, Value::Array(messages)));
    }
    added
}

/// Each field that differs, with its value before and after.
pub(super) fn changes(
    before: &EventState,
    after: &EventState,
) -> Vec<(&'static str, Value, Value)> {
    after
        .changed_from(before)
        .into_iter()
        .map(|field| (field, shown(before, field), shown(after, field)))
        .collect()
}

/// A field of the event's values as JSON (`null` when unset or not a field).
pub(super) fn shown(state: &EventState, field: &str) -> Value {
    let text = |v: &Option<String>| v.clone().map_or(Value::Null, Value::String);
    match field {
        "user_input" => text(&state.user_input),
        "system_prompt" => text(&state.system_prompt),
        "assistant_output" => text(&state.assistant_output),
        "tool_result" => text(&state.tool_result),
        "tool_error" => text(&state.tool_error),
        "summary" => text(&state.summary),
        "tool_arguments" => state.tool_arguments.clone().unwrap_or(Value::Null),
        "messages" => state.messages.as_ref().map_or(Value::Null, |messages| {
            Value::Array(
                messages
                    .iter()
                    .map(|m| serde_json::json!({"role": m.role.as_str(), "content": m.content}))
                    .collect(),
            )
        }),
        _ => Value::Null,
    }
}
