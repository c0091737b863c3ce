//! One streamed model call: `pre_llm_request` on a copy of the messages, the upstream stream read
//! to its `Finished` event, the text streamed to the client as it comes (held back in the
//! planning round until the marker is ruled out), and the usage added to the chat's.

use std::time::Instant;

use futures::StreamExt;

use super::context;
use super::marker::{MarkerDetector, MarkerState};
use super::run::{ChatRun, Interrupt, Outcome};
use super::series;
use super::turn;
use crate::hooks::{CallPhase, Flow, LlmRequest, LlmResponse};
use crate::llm::{estimate_tokens, LlmError, ModelEvent, ModelRequest, ModelStream};
use crate::telemetry;
use crate::tools::ToolSpec;
use crate::types::{ChatError, ChatEvent, ErrorCode, Message, StepName};

/// How many streamed items at most go by without a look at the chat's cancellation while the
/// model's stream keeps having items ready.
const CANCEL_CHECK_EVERY: u32 = 8;

/// How the text of a model call reaches the client.
pub(super) enum TextMode {
    /// Every delta streams at once.
    Stream,
    /// The planning round: held back until it is clear whether the reply starts with the marker.
    Planning(MarkerDetector),
    /// Nothing reaches the client (a compaction's summary call).
    Hidden,
}

impl ChatRun {
    /// One streamed model call with `pre_llm_request` before it.
    pub(super) async fn call(
        &mut self,
        phase: CallPhase,
        tools: Vec<ToolSpec>,
        mode: TextMode,
    ) -> Outcome<LlmResponse> {
        let step = match phase {
            CallPhase::Direct => Some(StepName::Answer),
            CallPhase::Planning => Some(StepName::Planning),
            CallPhase::Agent { round } => Some(StepName::Round(round)),
            CallPhase::Summary => Some(StepName::Summary),
            CallPhase::Compaction => None,
        };
        if let Some(step) = step {
            self.send(ChatEvent::StepStarted(step)).await?;
        }
        let messages = self.request_messages().await?;
        let mut request = LlmRequest {
            phase,
            messages,
            tools,
        };
        match self
            .hooks
            .pre_llm_request(&mut self.ctx, &mut request)
            .await
        {
            Flow::Stop { reason } => return Err(Interrupt::Stopped(reason)),
            Flow::Skip { reason } => return Err(Interrupt::Skipped(reason)),
            Flow::Retry { feedback } => request.messages.push(Message::user(feedback)),
            _ => {}
        }
        self.flush_outbox().await?;
        let max_tokens = self
            .inner
            .config
            .context
            .reply_limit(&self.ctx.model, || estimate_tokens(&request.messages));
        let model_request = ModelRequest {
            model: self.ctx.model.clone(),
            messages: request.messages,
            tools: request.tools,
            max_tokens,
        };
        self.model_called = true;
        self.step_has_text = false;
        series::LLM_CALLS.get().increment(1);
        let started = Instant::now();
        let span = self.model_span(&model_request);
        // The span is the parent of the upstream request (its `traceparent`).
        let reply: Outcome<LlmResponse> = span
            .run(async {
                let stream = self.open_stream(model_request).await?;
                self.read_reply(stream, phase, mode, started).await
            })
            .await;
        self.end_model_span(span, &reply);
        reply
    }

    /// The span of one model call (`chat {model}`), a child of the current one.
    pub(super) fn model_span(&self, request: &ModelRequest) -> telemetry::Span {
        let provider = self.inner.model.provider_name();
        let span = telemetry::Span::start(
            || format!("chat {}", request.model),
            telemetry::Kind::Client,
            || telemetry::model_call_attributes(provider, &request.model),
        );
        span.set_content("gen_ai.input.messages", || {
            let messages: Vec<serde_json::Value> = request
                .messages
                .iter()
                .map(|m| serde_json::json!({"role": m.role.as_str(), "content": m.content}))
                .collect();
            serde_json::Value::Array(messages).to_string()
        });
        span
    }

    /// Ends a model call's span with what the reply says (usage, finish reason) or its error.
    pub(super) fn end_model_span(&self, span: telemetry::Span, reply: &Outcome<LlmResponse>) {
        match reply {
            Ok(response) => {
                span.set(|| {
                    telemetry::model_reply_attributes(
                        &self.ctx.model,
                        response.usage.prompt_tokens,
                        response.usage.completion_tokens,
                        response.finish_reason.as_deref(),
                    )
                });
                span.set_content("gen_ai.output.messages", || response.content.clone());
            }
            Err(Interrupt::Failed(error)) => span.error(|| error.message.clone()),
            Err(_) => {}
        }
        span.end();
    }

    /// The messages of this call (docs/protocol.md §10 and §13), judged by the estimate of what
    /// would be sent: at the compaction threshold the client's history is compacted first,
    /// wherever the chat is; at the micro threshold old tool results are stubbed in the copy
    /// sent, between the micro compaction hooks (a `pre_micro_compact` stop skips it).
    async fn request_messages(&mut self) -> Outcome<Vec<Message>> {
        let inner = self.inner.clone();
        let settings = &inner.config.context;
        if context::Sendable::surely_small(&self.ctx.messages, None, settings, &self.ctx.model) {
            return Ok(self.ctx.messages.clone());
        }
        let mut sendable =
            context::Sendable::of(&self.ctx.messages, None, settings, &self.ctx.model);
        if sendable.estimated() >= settings.threshold_for(&self.ctx.model)
            && Box::pin(self.compact_before_call(sendable.estimated())).await?
        {
            sendable = context::Sendable::of(&self.ctx.messages, None, settings, &self.ctx.model);
        }
        let Some((compacted, stubbed, after)) = sendable.micro else {
            return Ok(self.ctx.messages.clone());
        };
        let info = context::micro_info(settings, &self.ctx.model, sendable.full, after, stubbed);
        match self.hooks.pre_micro_compact(&mut self.ctx, &info).await {
            Flow::Stop { reason } | Flow::Skip { reason } => {
                tracing::debug!(chat = %self.ctx.run_id, %reason, "a hook skipped micro compaction");
                return Ok(self.ctx.messages.clone());
            }
            // Not compacted either: this call gets the hook's word instead.
            Flow::Retry { feedback } => {
                let mut messages = self.ctx.messages.clone();
                messages.push(Message::user(feedback));
                return Ok(messages);
            }
            _ => {}
        }
        metrics::counter!("hookwire_compactions_total", "kind" => "micro", "trigger" => "auto")
            .increment(1);
        // Its hooks see the call's compacted messages as the chat's, and may replace them.
        let history = std::mem::replace(&mut self.ctx.messages, compacted);
        self.hooks.post_micro_compact(&mut self.ctx, &info).await;
        Ok(std::mem::replace(&mut self.ctx.messages, history))
    }

    /// Reads the call's stream to its `Finished` event; a stream that ends before it has failed.
    pub(super) async fn read_reply(
        &mut self,
        mut stream: ModelStream,
        phase: CallPhase,
        mut mode: TextMode,
        started: Instant,
    ) -> Outcome<LlmResponse> {
        let mut content = String::new();
        let mut first_text = true;
        // A cancel that comes while the stream waits ends the chat around this call
        // (`run::run_chat` drops it); while the stream keeps having items ready, it is looked
        // at every few items here. A cancellation future polled per item was a measurable share
        // of a streamed token's CPU (docs/performance.md).
        let mut items: u32 = 0;
        loop {
            let item = stream.next().await;
            items = items.wrapping_add(1);
            if items.is_multiple_of(CANCEL_CHECK_EVERY) && self.cancel.is_cancelled() {
                return Err(Interrupt::Cancelled);
            }
            match item {
                None => {
                    return Err(Interrupt::Failed(ChatError::new(
                        ErrorCode::Upstream,
                        "the model stream ended without finishing",
                    )))
                }
                Some(Err(error)) => return Err(upstream_error(error)),
                Some(Ok(ModelEvent::Text(delta))) => {
                    if first_text {
                        first_text = false;
                        series::LLM_FIRST_TOKEN_SECONDS
                            .get()
                            .record(started.elapsed().as_secs_f64());
                    }
                    content.push_str(&delta);
                    match &mut mode {
                        TextMode::Stream => self.send_text(delta).await?,
                        TextMode::Planning(detector) => {
                            if let MarkerState::Answer { held } = detector.push(&delta) {
                                // An answer, not a plan: the rest streams as it comes, without
                                // the detector's copy of every delta.
                                mode = TextMode::Stream;
                                self.send_text(held).await?;
                            }
                        }
                        TextMode::Hidden => {}
                    }
                }
                Some(Ok(ModelEvent::Finished {
                    tool_calls,
                    finish_reason,
                    usage,
                })) => {
                    // A cancel that came while the stream had items ready is not missed at
                    // the end (they are looked at only every few items).
                    if self.cancel.is_cancelled() {
                        return Err(Interrupt::Cancelled);
                    }
                    if let TextMode::Planning(detector) = &mut mode {
                        if let MarkerState::Answer { held } = detector.finish() {
                            self.send_text(held).await?;
                        }
                    }
                    let mut tool_calls = tool_calls;
                    turn::unique_call_ids(
                        &mut tool_calls,
                        self.client_history.iter().chain(&self.ctx.messages),
                    );
                    let usage = usage.unwrap_or_default();
                    self.ctx.record_usage(usage);
                    if let Some(spend) = &self.hook_call_of {
                        spend.record(usage);
                    }
                    series::LLM_TOKENS
                        .get("prompt")
                        .increment(usage.prompt_tokens);
                    series::LLM_TOKENS
                        .get("completion")
                        .increment(usage.completion_tokens);
                    series::LLM_CALL_SECONDS
                        .get()
                        .record(started.elapsed().as_secs_f64());
                    return Ok(LlmResponse {
                        phase,
                        content,
                        tool_calls,
                        finish_reason,
                        usage,
                    });
                }
            }
        }
    }

    /// Streams text; a new step's text is set apart from earlier text by a blank line.
    async fn send_text(&mut self, delta: String) -> Outcome<()> {
        if delta.is_empty() {
            return Ok(());
        }
        if !self.step_has_text
            && !self.visible_text.is_empty()
            && !self.visible_text.ends_with("\n\n")
        {
            self.visible_text.push_str("\n\n");
            self.send(ChatEvent::Text("\n\n".into())).await?;
        }
        self.visible_text.push_str(&delta);
        self.step_has_text = true;
        self.text_deltas.add_one();
        self.send(ChatEvent::Text(delta)).await
    }
}

/// An upstream error; one that says the input is over the model's window is
/// `context_too_long` (the estimate said it fits, the model disagreed).
pub(super) fn upstream_error(error: LlmError) -> Interrupt {
    let code = match &error {
        LlmError::Status {
            status: 400 | 413,
            body,
            ..
        } if says_too_long(body) => ErrorCode::ContextTooLong,
        _ => ErrorCode::Upstream,
    };
    Interrupt::Failed(ChatError::new(code, error.to_string()))
}

/// How OpenAI (`context_length_exceeded`), vLLM / llama.cpp / Ollama ("maximum context length",
/// "exceeds the available context size") and Anthropic ("prompt is too long") word it.
fn says_too_long(body: &str) -> bool {
    let body = body.to_ascii_lowercase();
    [
        "context_length_exceeded",
        "maximum context length",
        "context size",
        "context window",
        "prompt is too long",
    ]
    .iter()
    .any(|phrase| body.contains(phrase))
}
