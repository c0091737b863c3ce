//! [`Call`]: a chat event with the values of its call, the table of which values each event's
//! hooks see ([`Call::state`]) and where their changes go back ([`Call::write_back`]).

use crate::hooks::external::hook::{Event, EventState};
use crate::hooks::external::run::chain::{ChainControl, ChainOutcome};
use crate::hooks::system_prompt;
use crate::hooks::{
    CompactInfo, HookContext, LlmRequest, LlmResponse, RunOutput, ToolCallInfo, ToolResultInfo,
};
use crate::types::{ChatError, Message, PendingCall};

/// A chat event with the values of its call, borrowed: the event's values are read from them
/// and the hooks' changes written back to them.
pub(super) enum Call<'a> {
    BeforeContextBuild,
    PreSendMessage(&'a mut String),
    AfterContextBuild,
    PostSendMessage,
    PreLlmRequest(&'a mut LlmRequest),
    PostLlmResponse(&'a mut LlmResponse),
    ApprovalRequired(&'a [PendingCall]),
    PreAutoCompact(&'a CompactInfo, &'a mut String),
    PostAutoCompact(&'a CompactInfo, &'a mut String),
    /// Claude Code's `SessionStart` with source `compact`, after a compaction.
    SessionStartAfterCompact(&'a CompactInfo),
    PreMicroCompact(&'a CompactInfo),
    PostMicroCompact(&'a CompactInfo),
    PreToolExecution(&'a mut ToolCallInfo),
    PostToolExecution(&'a ToolCallInfo, &'a mut ToolResultInfo),
    PostToolExecutionFailure(&'a ToolCallInfo, &'a mut ToolResultInfo),
    Stop(&'a str),
    RunCompleted(&'a mut RunOutput),
    RunFailed(&'a ChatError),
}

impl Call<'_> {
    pub(super) fn event(&self) -> Event {
        match self {
            Call::BeforeContextBuild => Event::BeforeContextBuild,
            Call::PreSendMessage(_) => Event::PreSendMessage,
            Call::AfterContextBuild => Event::AfterContextBuild,
            Call::PostSendMessage => Event::PostSendMessage,
            Call::PreLlmRequest(_) => Event::PreLlmRequest,
            Call::PostLlmResponse(_) => Event::PostLlmResponse,
            Call::ApprovalRequired(_) => Event::Notification,
            Call::PreAutoCompact(..) => Event::PreAutoCompact,
            Call::PostAutoCompact(..) => Event::PostAutoCompact,
            Call::SessionStartAfterCompact(_) => Event::SessionStart,
            Call::PreMicroCompact(_) => Event::PreMicroCompact,
            Call::PostMicroCompact(_) => Event::PostMicroCompact,
            Call::PreToolExecution(_) => Event::PreToolExecution,
            Call::PostToolExecution(..) => Event::PostToolExecution,
            Call::PostToolExecutionFailure(..) => Event::PostToolExecutionFailure,
            Call::Stop(_) => Event::Stop,
            Call::RunCompleted(_) => Event::RunCompleted,
            Call::RunFailed(_) => Event::RunFailed,
        }
    }

    /// The values the event's hooks see (copies: the chain works on them).
    pub(super) fn state(&self, ctx: &HookContext) -> EventState {
        let chat = || Some(ctx.messages.clone());
        let last_input = || ctx.last_user_message().map(|m| m.content.clone());
        let tool = |call: &ToolCallInfo| EventState {
            tool_name: Some(call.name.clone()),
            tool_call_id: Some(call.call_id.clone()),
            tool_arguments: Some(call.arguments.clone()),
            ..EventState::default()
        };
        match self {
            Call::BeforeContextBuild | Call::AfterContextBuild => EventState {
                messages: chat(),
                ..EventState::default()
            },
            Call::PreSendMessage(input) => EventState {
                user_input: Some(input.to_string()),
                messages: chat(),
                ..EventState::default()
            },
            Call::PostSendMessage => EventState {
                user_input: last_input(),
                messages: chat(),
                ..EventState::default()
            },
            Call::PreLlmRequest(request) => EventState {
                messages: Some(request.messages.clone()),
                system_prompt: prompt_of(&request.messages),
                tools: Some(request.tools.iter().map(|t| t.name.clone()).collect()),
                ..EventState::default()
            },
            Call::PostLlmResponse(response) => EventState {
                assistant_output: Some(response.content.clone()),
                messages: chat(),
                ..EventState::default()
            },
            // The first waiting call, as the tool of the notification.
            Call::ApprovalRequired(calls) => match calls.first() {
                Some(call) => EventState {
                    tool_name: Some(call.name.clone()),
                    tool_call_id: Some(call.call_id.clone()),
                    tool_arguments: Some(call.arguments.clone()),
                    ..EventState::default()
                },
                None => EventState::default(),
            },
            // As the jcli format has it: the chat's messages and system prompt, before the
            // summary call.
            Call::PreAutoCompact(info, _) => EventState {
                messages: chat(),
                system_prompt: ctx.system_prompt().map(str::to_string),
                compaction: Some((*info).clone()),
                ..EventState::default()
            },
            // The chat's messages as they stand after compaction, and the summary.
            Call::PostAutoCompact(info, summary) => EventState {
                messages: chat(),
                compaction: Some((*info).clone()),
                summary: Some(summary.to_string()),
                ..EventState::default()
            },
            // Before: the chat's messages as they stand; after: the call's, compacted (the
            // agent puts them in `ctx.messages` while the hooks run).
            Call::PreMicroCompact(info)
            | Call::PostMicroCompact(info)
            | Call::SessionStartAfterCompact(info) => EventState {
                messages: chat(),
                compaction: Some((*info).clone()),
                ..EventState::default()
            },
            Call::PreToolExecution(call) => tool(call),
            Call::PostToolExecution(call, result) => EventState {
                tool_result: Some(result.content.clone()),
                ..tool(call)
            },
            Call::PostToolExecutionFailure(call, result) => EventState {
                tool_error: Some(result.content.clone()),
                ..tool(call)
            },
            Call::Stop(output) => EventState {
                user_input: last_input(),
                messages: chat(),
                system_prompt: ctx.system_prompt().map(str::to_string),
                assistant_output: Some(output.to_string()),
                ..EventState::default()
            },
            Call::RunCompleted(output) => EventState {
                assistant_output: Some(output.content.clone()),
                ..EventState::default()
            },
            Call::RunFailed(error) => EventState {
                error: Some(error.to_string()),
                ..EventState::default()
            },
        }
    }

    /// Puts the values the hooks changed back where they came from, with the chain's extras
    /// (injected messages, context, retry feedback) where the event takes them. Context for the
    /// rest of the chat goes into its system prompt (and into this call's request); after a
    /// compaction, after its summary.
    pub(super) fn write_back(
        self,
        ctx: &mut HookContext,
        state: EventState,
        outcome: &ChainOutcome,
    ) {
        let ended = matches!(self, Call::RunCompleted(_) | Call::RunFailed(_));
        // After a compaction, the context is history the client keeps after the summary (so a
        // compaction that ends the chat, a manual one, does not lose it).
        let compacted = matches!(self, Call::SessionStartAfterCompact(_));
        for context in &outcome.chat_context {
            if compacted {
                ctx.keep_after_summary(context);
            } else if !ended {
                ctx.append_to_system_prompt(context);
            }
        }
        match self {
            Call::PreSendMessage(input) => put(input, state.user_input),
            Call::AfterContextBuild => put(&mut ctx.messages, state.messages),
            Call::PreLlmRequest(request) => rewrite_request(request, state, outcome),
            Call::PostLlmResponse(response) => put(&mut response.content, state.assistant_output),
            Call::PreToolExecution(call) => put(&mut call.arguments, state.tool_arguments),
            Call::PostToolExecution(_, result) => put(&mut result.content, state.tool_result),
            // Context after a failed tool is for the model, not part of the error: it goes to
            // the end of the system prompt for the rest of the chat.
            Call::PostToolExecutionFailure(_, result) => {
                put(&mut result.content, state.tool_error);
                for context in &outcome.additional_context {
                    ctx.append_to_system_prompt(context);
                }
            }
            Call::Stop(_) => {
                for context in &outcome.additional_context {
                    ctx.append_to_system_prompt(context);
                }
            }
            Call::RunCompleted(output) => put(&mut output.content, state.assistant_output),
            // As in the jcli format, `additional_context` goes to the system prompt of the call
            // it precedes, which here is the summary call.
            Call::PreAutoCompact(_, summary_prompt) => {
                for context in &outcome.additional_context {
                    summary_prompt.push_str("\n\n");
                    summary_prompt.push_str(context);
                }
            }
            Call::PostAutoCompact(_, summary) => {
                put(&mut ctx.messages, state.messages);
                put(summary, state.summary);
            }
            // The chat's messages are this call's, compacted, while its hooks run.
            Call::PostMicroCompact(_) => put(&mut ctx.messages, state.messages),
            Call::BeforeContextBuild
            | Call::ApprovalRequired(_)
            | Call::PostSendMessage
            | Call::PreMicroCompact(_)
            | Call::SessionStartAfterCompact(_)
            | Call::RunFailed(_) => {}
        }
    }
}

/// Replaces `slot` when the chain left a value (unchanged values are equal: no harm).
fn put<T>(slot: &mut T, value: Option<T>) {
    if let Some(value) = value {
        *slot = value;
    }
}

fn prompt_of(messages: &[Message]) -> Option<String> {
    system_prompt::find(messages).map(|m| m.content.clone())
}

/// `pre_llm_request`: the messages, then the system prompt if a hook changed it, then the
/// injected messages, the context and the retry feedback, for this call only.
fn rewrite_request(request: &mut LlmRequest, state: EventState, outcome: &ChainOutcome) {
    let before = prompt_of(&request.messages);
    put(&mut request.messages, state.messages);
    if let Some(prompt) = state.system_prompt.filter(|p| Some(p) != before.as_ref()) {
        system_prompt::set(&mut request.messages, prompt);
    }
    request
        .messages
        .extend(outcome.inject_messages.iter().cloned());
    for context in outcome
        .additional_context
        .iter()
        .chain(&outcome.chat_context)
    {
        request.inject_system_context(context);
    }
    if let Some(ChainControl::Retry(feedback)) = &outcome.control {
        request.messages.push(Message::user(feedback.clone()));
    }
}

#[cfg(test)]
mod tests;
