//! One hook's answer applied to its chain by the event's rules ([`Event::rules`]): each change
//! the event allows replaces its value, each addition it allows joins the outcome, and the
//! first decision it allows ends the chain; anything else is logged and ignored.

use super::{ChainControl, ChainOutcome, Failure};
use crate::hooks::external::hook::rules::{Addition, Change, Refusal};
use crate::hooks::external::hook::{Control, Event, EventState, HookOutput};

/// What `on_error: block` makes of a failed hook: the action its event guards is refused. A
/// tool is skipped (the model sees why); at the other events that can end the chat, the chat
/// ends (before the model ran: `error` `hook_blocked`; after: `done` `stopped`). The events that
/// guard nothing (observers, `stop`, the ends of a chat, connection events) have nothing to
/// refuse: the chain just ends there, as with `abort`. The reason names the hook, not its error
/// (that is in the log: it may say more than the model and the client should see).
pub(super) fn refusal(event: Event, hook: &str, failure: &Failure) -> Option<ChainControl> {
    let what = match failure {
        Failure::TimedOut(_) => "timed out",
        Failure::Failed(_) => "failed",
    };
    let reason = format!("blocked: hook {hook} {what} and has on_error: block");
    match event.rules().decides.block {
        Some(refused) => Some(refuse(refused, reason)),
        None => {
            tracing::warn!(
                hook,
                event = event.as_str(),
                "on_error: block at an event that guards no action: the rest of the chain is skipped"
            );
            None
        }
    }
}

fn refuse(refusal: Refusal, reason: String) -> ChainControl {
    match refusal {
        Refusal::Skip => ChainControl::Skip(reason),
        Refusal::Stop => ChainControl::Stop(reason),
    }
}

/// Applies one hook's output to the chain's state by the event's rules, noting in `changed`
/// the values it changed; returns the decision that ends the chain, if it took one.
pub(super) fn apply(
    event: Event,
    hook: &str,
    mut output: HookOutput,
    state: &mut EventState,
    outcome: &mut ChainOutcome,
    changed: &mut Vec<&'static str>,
) -> Option<ChainControl> {
    let rules = event.rules();
    let ignored = |field: &str| {
        tracing::warn!(
            hook,
            field,
            event = event.as_str(),
            "this result field does not apply to this event; ignored"
        )
    };
    for change in Change::ALL {
        match take(change, &mut output, state, rules.changes.contains(&change)) {
            Taken::Changed => changed.push(change.name()),
            Taken::Ignored => ignored(change.name()),
            Taken::Nothing => {}
        }
    }
    let adds = |addition: Addition| {
        let allowed = rules.adds.contains(&addition);
        if !allowed {
            ignored(addition.name());
        }
        allowed
    };
    if !output.inject_messages.is_empty() && adds(Addition::InjectMessages) {
        outcome.inject_messages.extend(output.inject_messages);
    }
    if let Some(context) = output.additional_context {
        if adds(Addition::AdditionalContext) {
            outcome.additional_context.push(context);
        }
    }
    // Produced only by the dialects that define it at the event; who delivers it is the
    // adapter's business (events with no chat after them drop it).
    outcome.chat_context.extend(output.chat_context);
    if let Some(control) = output.control {
        match decide(event, hook, control) {
            Some(decision) => return Some(decision),
            None => ignored("action"),
        }
    }
    // The jcli format: at `pre_send_message` the feedback follows the input as a user message; at
    // `pre_tool_execution` the tool does not run and the model gets the feedback as its result.
    if let Some(feedback) = output.retry_feedback {
        if rules.decides.retry {
            return Some(ChainControl::Retry(feedback));
        }
        ignored("retry_feedback");
    }
    None
}

/// The decision `control` makes at `event`, if the event lets its hooks take it.
fn decide(event: Event, hook: &str, control: Control) -> Option<ChainControl> {
    let decides = event.rules().decides;
    let named = |reason: String| {
        if reason.is_empty() {
            format!("stopped by hook {hook}")
        } else {
            reason
        }
    };
    match control {
        Control::Stop(reason) if decides.stop => Some(ChainControl::Stop(named(reason))),
        Control::Skip(reason) => decides.skip.map(|refused| refuse(refused, named(reason))),
        Control::Block(reason) => decides.block.map(|refused| refuse(refused, named(reason))),
        Control::Ask(reason) if decides.ask => Some(ChainControl::Ask(if reason.is_empty() {
            format!("hook {hook} asks for approval")
        } else {
            reason
        })),
        Control::Stop(_) | Control::Ask(_) => None,
    }
}

/// What became of one change field of an answer.
enum Taken {
    /// The answer does not set it, or sets it to the value it has.
    Nothing,
    Changed,
    /// The event does not let its hooks change it.
    Ignored,
}

/// Moves `change`'s field from the answer into the state when the event allows it (`applies`).
fn take(change: Change, output: &mut HookOutput, state: &mut EventState, applies: bool) -> Taken {
    match change {
        Change::UserInput => put(output.user_input.take(), &mut state.user_input, applies),
        Change::Summary => put(output.summary.take(), &mut state.summary, applies),
        Change::Messages => put(output.messages.take(), &mut state.messages, applies),
        Change::SystemPrompt => put(
            output.system_prompt.take(),
            &mut state.system_prompt,
            applies,
        ),
        Change::ToolArguments => put(
            output.tool_arguments.take(),
            &mut state.tool_arguments,
            applies,
        ),
        Change::ToolResult => put(output.tool_result.take(), &mut state.tool_result, applies),
        Change::ToolError => put(output.tool_error.take(), &mut state.tool_error, applies),
        Change::AssistantOutput => put(
            output.assistant_output.take(),
            &mut state.assistant_output,
            applies,
        ),
    }
}

/// Puts a new value in its slot when it applies.
fn put<T: PartialEq>(value: Option<T>, slot: &mut Option<T>, applies: bool) -> Taken {
    let Some(value) = value else {
        return Taken::Nothing;
    };
    if !applies {
        return Taken::Ignored;
    }
    let differs = slot.as_ref() != Some(&value);
    *slot = Some(value);
    if differs {
        Taken::Changed
    } else {
        Taken::Nothing
    }
}
