//! Tools the client runs itself (docs/protocol.md §19). The model sees them beside the server's
//! tools; a call to one passes the tool hooks and approval like any call (`tool_step`), is
//! streamed, and is handed to the client: the chat ends with `done` reason `tool_calls` and the
//! calls' ids. The next chat sends the history ending with their results and no input; it starts
//! here, where the results pass `post_tool_execution`, and the agent loop goes on from the round
//! after the one that called them. Between the two chats the server keeps nothing.

use std::time::Duration;

use super::compact::Trigger;
use super::run::{ChatRun, Interrupt, Outcome};
use crate::hooks::{Flow, Step, ToolCallInfo, ToolResultInfo};
use crate::types::{DoneReason, Message, Role};

impl ChatRun {
    /// Whether `name` is one of the client's tools (the server's tools win a clash, which a
    /// request may not have: `AgentClient::check_client_tools`).
    pub(super) fn is_client_tool(&self, name: &str) -> bool {
        self.client_tools.iter().any(|tool| tool == name) && self.inner.tools.get(name).is_none()
    }

    /// A client tool's call that passed its hooks and approval: shown, and left for the client.
    pub(super) async fn hand_to_client(&mut self, info: ToolCallInfo) -> Outcome<()> {
        metrics::counter!("hookwire_tool_calls_total", "tool" => info.name.clone(), "outcome" => "client")
            .increment(1);
        self.send(crate::types::ChatEvent::ToolCall {
            call_id: info.call_id,
            name: info.name,
            arguments: info.arguments,
        })
        .await
    }

    /// The calls of the chat's last assistant message that are the client's and have no result
    /// yet: what the chat waits for when it ends with `tool_calls`.
    pub(super) fn unanswered_client_calls(&self) -> Vec<String> {
        let messages = &self.ctx.messages;
        let Some(at) = messages.iter().rposition(|m| !m.tool_calls.is_empty()) else {
            return Vec::new();
        };
        let answered = |id: &str| {
            messages[at + 1..]
                .iter()
                .any(|m| m.role == Role::Tool && m.tool_call_id.as_deref() == Some(id))
        };
        messages[at]
            .tool_calls
            .iter()
            .filter(|call| self.is_client_tool(&call.name) && !answered(&call.id))
            .map(|call| call.id.clone())
            .collect()
    }

    /// A round's end when client calls wait: `Some(tool_calls)`, with the calls noted for `done`.
    pub(super) fn wait_for_client(&mut self) -> Option<DoneReason> {
        self.client_calls = self.unanswered_client_calls();
        (!self.client_calls.is_empty()).then_some(DoneReason::ToolCalls)
    }

    /// A chat that goes on after the client ran its tools: the history (ending with their
    /// results) is the conversation, the results pass `post_tool_execution`, and the agent loop
    /// goes on from the next round. No input, so no input hooks; no planning round.
    pub(super) async fn continue_after_client_tools(
        &mut self,
        sent: Vec<Message>,
    ) -> Outcome<DoneReason> {
        self.take_history(sent);
        Box::pin(self.compact_history("", Trigger::Auto)).await?;
        self.input_at = self.ctx.messages.len();
        // The model was called for this conversation already: a hook's stop is `stopped`.
        self.model_called = true;
        self.client_results().await?;
        if self.cancel.is_cancelled() {
            return Err(Interrupt::Cancelled);
        }
        let round = self.rounds_since_input() + 1;
        self.ctx.iteration = round - 1;
        self.agent_loop(round).await
    }

    /// The `post_tool_execution` hooks (and Claude Code's `PostToolUse`…) on the results of
    /// the client's calls at the end of the history, in order; a rewrite is what the model sees.
    async fn client_results(&mut self) -> Outcome<()> {
        let Some(at) = self
            .ctx
            .messages
            .iter()
            .rposition(|m| !m.tool_calls.is_empty())
        else {
            return Ok(());
        };
        let calls = self.ctx.messages[at].tool_calls.clone();
        for index in at + 1..self.ctx.messages.len() {
            let message = &self.ctx.messages[index];
            let Some(call) = message
                .tool_call_id
                .as_deref()
                .and_then(|id| calls.iter().find(|call| call.id == id))
            else {
                continue;
            };
            if message.role != Role::Tool || !self.is_client_tool(&call.name) {
                continue;
            }
            let info = ToolCallInfo {
                call_id: call.id.clone(),
                name: call.name.clone(),
                arguments: call.arguments_value(),
            };
            let mut result = ToolResultInfo {
                call_id: call.id.clone(),
                name: call.name.clone(),
                content: message.content.clone(),
                is_error: false,
                duration: Duration::ZERO,
            };
            let flow = self
                .hooks
                .post_tool(&mut self.ctx, &info, &mut result)
                .await;
            self.ctx.count_tool_call();
            self.ctx.record_step(Step::Tool {
                call_id: result.call_id,
                name: result.name,
                content: result.content.clone(),
                is_error: result.is_error,
                // It ran on the client.
                duration: result.duration,
            });
            if let Some(message) = self.ctx.messages.get_mut(index) {
                message.content = result.content;
            }
            self.flush_outbox().await?;
            if let Flow::Stop { reason } = flow {
                return Err(Interrupt::Stopped(reason));
            }
        }
        Ok(())
    }

    /// The rounds of tool calls since the last user message: the round the client's results
    /// answer, so that `max_steps` counts across the chats of one exchange.
    fn rounds_since_input(&self) -> usize {
        self.ctx
            .messages
            .iter()
            .rev()
            .take_while(|m| m.role != Role::User)
            .filter(|m| m.role == Role::Assistant && !m.tool_calls.is_empty())
            .count()
    }
}
