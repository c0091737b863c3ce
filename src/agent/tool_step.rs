//! One tool step: the tool calls of one assistant message, in order, each with its hooks
//! (`pre_tool_execution`, then `post_tool_execution` or `post_tool_execution_failure`), under the
//! per-round cap. A tool's failure or panic is a result the model sees; cancelling the chat drops
//! the running tool's future, which is its stop signal. A call that needs the person's approval
//! (`tools.require_approval`, or a hook's `ask`) does not run: it is returned as pending, and the
//! round's other calls run; on a resume, the approved calls run here and the denied ones are
//! answered with the reason.

use crate::telemetry;
use std::time::Instant;

use serde_json::Value;

use super::resume::{Decided, Decision};
use super::run::{ChatRun, Interrupt, Outcome};
use crate::hooks::{Flow, LlmResponse, Step, ToolAction, ToolCallInfo, ToolResultInfo};
use crate::tools::ToolOutput;
use crate::types::{ChatEvent, Message, PendingCall, ToolCall};

/// What a round of tool calls left.
pub(super) struct Round {
    /// The tools that went through their hooks (for `after_tool_call`).
    pub(super) names: Vec<String>,
    /// The calls that wait for the person's decision.
    pub(super) pending: Vec<PendingCall>,
}

impl ChatRun {
    /// Runs a round's tool calls in order and returns the names of the tools that ran (for
    /// `after_tool_call`). Calls past `max_tool_calls_per_round` do not run, but still get an
    /// error result each: every call of the assistant message needs its tool message, and the
    /// model learns why.
    pub(super) async fn run_tools(&mut self, response: LlmResponse) -> Outcome<Round> {
        self.turn.calls(
            &response.content,
            &response.tool_calls,
            &self.kept,
            self.visible_text.len(),
        );
        if !response.content.is_empty() {
            self.kept.push(response.content.clone());
        }
        self.ctx.messages.push(Message::assistant_with_tools(
            response.content,
            response.tool_calls.clone(),
        ));
        let cap = self.inner.config.max_tool_calls_per_round;
        let asked = response.tool_calls.len();
        if asked > cap {
            tracing::warn!(chat = %self.ctx.run_id, asked, cap, "more tool calls than a round may run; the rest get an error result");
        }
        let mut names = Vec::new();
        let mut pending = Vec::new();
        for (index, call) in response.tool_calls.into_iter().enumerate() {
            if index >= cap {
                self.refuse_tool(call, cap).await?;
                continue;
            }
            if !names.contains(&call.name) {
                names.push(call.name.clone());
            }
            pending.extend(self.run_tool(call).await?);
        }
        Ok(Round { names, pending })
    }

    /// The person's decisions on a resume: an allowed call runs now (its `pre_tool_execution`
    /// hooks ran before it was asked; the arguments are the ones shown), a denied one is answered
    /// with the reason. Returns the tools of the calls, for `after_tool_call`.
    pub(super) async fn decide(&mut self, decided: Vec<Decided>) -> Outcome<Vec<String>> {
        let mut names = Vec::new();
        for (call, decision) in decided {
            if !names.contains(&call.name) {
                names.push(call.name.clone());
            }
            let info = ToolCallInfo {
                call_id: call.call_id,
                name: call.name,
                arguments: call.arguments,
            };
            let denied = match decision {
                Decision::Allow if self.is_client_tool(&info.name) => {
                    self.hand_to_client(info).await?;
                    continue;
                }
                Decision::Allow => None,
                Decision::Deny(reason) => Some(format!("the person denied this call: {reason}")),
            };
            self.finish_tool(info, denied, None).await?;
        }
        Ok(names)
    }

    /// A call past the round's cap: shown and answered with an error, without running it or
    /// its hooks.
    async fn refuse_tool(&mut self, call: ToolCall, cap: usize) -> Outcome<()> {
        let arguments = call.arguments_value();
        self.send_tool_call(&call.id, &call.name, arguments).await?;
        let content = format!(
            "the tool did not run: a round runs at most {cap} tool calls \
             (limits.max_tool_calls_per_round); call it again in the next round"
        );
        metrics::counter!("hookwire_tool_calls_total", "tool" => call.name.clone(), "outcome" => "refused").increment(1);
        self.answer_call(not_run(call, content)).await
    }

    /// A call whose arguments its tool refuses before anyone sees them (e.g. a path outside the
    /// workspace): shown as sent and answered with the tool's error, without hooks.
    async fn refuse_unprepared(&mut self, call: ToolCall, error: String) -> Outcome<()> {
        let arguments = call.arguments_value();
        self.send_tool_call(&call.id, &call.name, arguments).await?;
        metrics::counter!("hookwire_tool_calls_total", "tool" => call.name.clone(), "outcome" => "error").increment(1);
        self.answer_call(not_run(call, error)).await
    }

    /// One call through its hooks; `Some` = it waits for approval and did not run.
    async fn run_tool(&mut self, call: ToolCall) -> Outcome<Option<PendingCall>> {
        let parsed = match (
            parse_arguments(&call.arguments),
            self.inner.tools.get(&call.name),
        ) {
            (Ok(arguments), Some(tool)) => match tool.prepare(arguments) {
                Ok(prepared) => Ok(prepared),
                Err(error) => {
                    return self
                        .refuse_unprepared(call, error.to_string())
                        .await
                        .map(|()| None)
                }
            },
            (parsed, _) => parsed,
        };
        let mut info = ToolCallInfo {
            call_id: call.id,
            name: call.name,
            arguments: parsed.as_ref().cloned().unwrap_or_else(|_| empty_object()),
        };
        let action = self
            .hooks
            .pre_tool_execution(&mut self.ctx, &mut info)
            .await;
        self.flush_outbox().await?;
        // Arguments that are not JSON fail the call, unless a hook has put others in their place.
        let unparsable = parsed.err().filter(|_| info.arguments == empty_object());
        let runnable = unparsable.is_none() && self.ctx.is_tool_enabled(&info.name);
        let skip_reason = match action {
            // A stop ends the chat before the call is shown or run.
            ToolAction::Stop { reason } => return Err(Interrupt::Stopped(reason)),
            ToolAction::Skip { reason } => Some(reason),
            ToolAction::Ask { reason } if runnable && self.can_ask_approval => {
                return Ok(Some(pending(info, reason)))
            }
            ToolAction::Ask { reason } if runnable => Some(no_approval_here(&reason)),
            ToolAction::Run if runnable => match self.approval_needed(&info.name) {
                Some(reason) if self.can_ask_approval => return Ok(Some(pending(info, reason))),
                Some(reason) => Some(no_approval_here(&reason)),
                None => None,
            },
            ToolAction::Ask { .. } | ToolAction::Run => None,
        };
        if runnable && skip_reason.is_none() && self.is_client_tool(&info.name) {
            self.hand_to_client(info).await?;
            return Ok(None);
        }
        self.finish_tool(info, skip_reason, unparsable).await?;
        Ok(None)
    }

    /// Why a call of `tool` waits for the person's approval, in words for them (the card shows
    /// it): `tools.require_approval` lists it, or the tool itself asks (an MCP server's tool not in its `auto_approve`).
    fn approval_needed(&self, tool: &str) -> Option<String> {
        if self.inner.config.approval.requires(tool) {
            return Some(format!("this server asks you before it runs {tool}"));
        }
        self.inner.tools.get(tool)?.needs_approval()
    }

    /// Shows the call, runs it (unless it is skipped or its arguments are not JSON), then its
    /// post hooks and its result.
    async fn finish_tool(
        &mut self,
        info: ToolCallInfo,
        skip_reason: Option<String>,
        unparsable: Option<serde_json::Error>,
    ) -> Outcome<()> {
        self.send_tool_call(&info.call_id, &info.name, info.arguments.clone())
            .await?;
        let started = Instant::now();
        let (mut output, panicked) = match (skip_reason, unparsable) {
            (Some(reason), _) => (
                ToolOutput::error(format!("the tool did not run: {reason}")),
                false,
            ),
            (None, Some(error)) => (
                ToolOutput::error(format!(
                    "the arguments of {} are not valid JSON: {error}",
                    info.name
                )),
                false,
            ),
            (None, None) => self.execute_tool(&info).await?,
        };
        let outcome = match (panicked, output.is_error) {
            (true, _) => "panic",
            (false, true) => "error",
            (false, false) => "ok",
        };
        metrics::counter!("hookwire_tool_calls_total", "tool" => info.name.clone(), "outcome" => outcome).increment(1);
        for event in std::mem::take(&mut output.events) {
            let registered = match &event {
                ChatEvent::SessionHook(spec) => Some(spec.clone()),
                _ => None,
            };
            self.send(event).await?;
            if let Some(spec) = registered {
                self.adopt_session_hook(spec);
            }
        }
        let mut result = ToolResultInfo {
            call_id: info.call_id.clone(),
            name: info.name.clone(),
            content: output.content,
            is_error: output.is_error,
            duration: started.elapsed(),
        };
        let flow = self
            .hooks
            .post_tool(&mut self.ctx, &info, &mut result)
            .await;
        self.ctx.count_tool_call();
        self.answer_call(result).await?;
        match flow {
            Flow::Stop { reason } => Err(Interrupt::Stopped(reason)),
            // After the tool there is no step left to skip or retry.
            _ => Ok(()),
        }
    }

    /// A hook the model registered applies from the chat's next event on (docs/protocol.md
    /// §13); the client gets it for later chats through the `session_hook` event.
    fn adopt_session_hook(&mut self, spec: Value) {
        let mut added = 0;
        for factory in &self.inner.factories {
            let hooks = factory.hooks_for_registered(&self.about, &spec);
            added += hooks.len();
            self.hooks.extend(hooks);
        }
        if added > 0 {
            tracing::info!(chat = %self.ctx.run_id, "a registered session hook runs from now on in this chat");
        }
        self.about.session_hooks.push(spec);
    }

    /// Runs the tool; `true` = it panicked. A panic is isolated like a hook's: the model gets an
    /// error result and the chat goes on.
    async fn execute_tool(&self, info: &ToolCallInfo) -> Outcome<(ToolOutput, bool)> {
        if !self.ctx.is_tool_enabled(&info.name) {
            return Ok((
                ToolOutput::error(format!("unknown or disabled tool: {}", info.name)),
                false,
            ));
        }
        let Some(tool) = self.inner.tools.get(&info.name) else {
            return Ok((
                ToolOutput::error(format!("unknown tool: {}", info.name)),
                false,
            ));
        };
        let tool = tool.clone();
        let arguments = info.arguments.clone();
        let span = telemetry::Span::start(
            || format!("execute_tool {}", info.name),
            telemetry::Kind::Internal,
            || telemetry::tool_attributes(&info.name, &info.call_id),
        );
        span.set_content("gen_ai.tool.call.arguments", || arguments.to_string());
        let run = span.run(futures::FutureExt::catch_unwind(
            std::panic::AssertUnwindSafe(tool.run(arguments)),
        ));
        let result = tokio::select! {
            _ = self.cancel.cancelled() => {
                span.error(|| "cancelled".into());
                span.end();
                return Err(Interrupt::Cancelled);
            }
            result = run => result,
        };
        if let Ok(output) = &result {
            span.set_content("gen_ai.tool.call.result", || output.content.clone());
            if output.is_error {
                span.error(|| "the tool answered is_error".into());
            }
        }
        let result = result.inspect_err(|_| span.error(|| "the tool panicked".into()));
        span.end();
        Ok(match result {
            Ok(output) => (output, false),
            Err(panic) => {
                let message = crate::tools::panic_message(panic.as_ref());
                tracing::error!(chat = %self.ctx.run_id, tool = %info.name, panic = %message, "tool panicked; the chat goes on");
                (
                    ToolOutput::error(format!(
                        "the tool {} failed unexpectedly: {message}",
                        info.name
                    )),
                    true,
                )
            }
        })
    }

    async fn send_tool_call(&self, call_id: &str, name: &str, arguments: Value) -> Outcome<()> {
        self.send(ChatEvent::ToolCall {
            call_id: call_id.to_string(),
            name: name.to_string(),
            arguments,
        })
        .await
    }

    /// Records a call's result as a step and as its tool message (right after the assistant
    /// message and the round's earlier results: the OpenAI ordering rule), then shows it.
    async fn answer_call(&mut self, result: ToolResultInfo) -> Outcome<()> {
        let ToolResultInfo {
            call_id,
            name,
            content,
            is_error,
            duration,
        } = result;
        self.ctx.record_step(Step::Tool {
            call_id: call_id.clone(),
            name: name.clone(),
            content: content.clone(),
            is_error,
            duration,
        });
        self.ctx
            .messages
            .push(Message::tool_result(call_id.clone(), content.clone()));
        self.turn.tool(&call_id, &name, &content);
        self.flush_outbox().await?;
        self.send(ChatEvent::ToolResult {
            call_id,
            name,
            content,
            is_error,
        })
        .await
    }
}

/// The error result of a call that did not run (it took no time).
fn not_run(call: ToolCall, content: String) -> ToolResultInfo {
    ToolResultInfo {
        call_id: call.id,
        name: call.name,
        content,
        is_error: true,
        duration: std::time::Duration::ZERO,
    }
}

/// Why a call that needs approval did not run on a wire that cannot ask for it.
fn no_approval_here(reason: &str) -> String {
    format!("it needs the person's approval ({reason}), which this client cannot give")
}

fn pending(info: ToolCallInfo, reason: String) -> PendingCall {
    PendingCall {
        call_id: info.call_id,
        name: info.name,
        arguments: info.arguments,
        reason,
    }
}

/// The model's argument text as JSON; no text at all means no arguments.
fn parse_arguments(raw: &str) -> Result<Value, serde_json::Error> {
    if raw.trim().is_empty() {
        Ok(empty_object())
    } else {
        serde_json::from_str(raw)
    }
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}
