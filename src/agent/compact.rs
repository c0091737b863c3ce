//! Auto and manual compaction of the client's history (docs/protocol.md §10 and §13): when a
//! model call's input (as it would be sent, micro-compacted) would reach `compact_threshold` of
//! the window, the oldest message groups of the history the client sent are replaced by one
//! summary (made by one extra model call), a `user` message in `<summary of the earlier
//! conversation>` tags, followed by the persistent hook messages they held, verbatim; the client
//! learns it by a `compact` frame.
//!
//! It is checked at the start of a chat, before any hook has touched the list (the OpenHarness format:
//! compaction comes before `before_context_build`), and again before every model call: a long
//! agent loop compacts mid-chat. Only the client's history is summarised (this chat's own
//! messages stay), so no temporary injection of this chat can enter a summary.

use std::time::Instant;

mod plan;

#[cfg(test)]
pub(super) use plan::groups;
pub(super) use plan::{fitting, plan, summary_message, transcript, Plan, Sent};

use super::call::TextMode;
use super::context::Sendable;
use super::run::{ChatRun, Interrupt, Outcome};
use crate::hooks::{CallPhase, CompactInfo, Flow};
use crate::llm::{estimate_tokens, LlmError, ModelRequest};
use crate::types::{ChatError, ChatEvent, ErrorCode, Message, NoticeLevel};

/// Who asked for a compaction (the hooks' `trigger`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Trigger {
    /// The estimated input reached the threshold.
    Auto,
    /// The client sent a `compact` frame.
    Manual,
}

impl Trigger {
    fn as_str(self) -> &'static str {
        match self {
            Trigger::Auto => "auto",
            Trigger::Manual => "manual",
        }
    }
}

/// How a compaction attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Compacted {
    Yes,
    /// Nothing to summarise (no more groups than are kept).
    NothingToDo,
    /// A hook skipped it, or the summary call failed.
    Skipped,
}

/// Why a summary call gave no summary (the chat goes on with its history as it was).
#[derive(Debug, thiserror::Error)]
enum NoSummary {
    /// The call did not start.
    #[error("{0}")]
    Call(LlmError),
    /// The reply failed on its way.
    #[error("{}", .0.message)]
    Reply(ChatError),
    #[error("the model's summary was empty")]
    Empty,
}

impl ChatRun {
    /// At the start of a chat: compacts the history when the first call's input (the system
    /// prompt, the history and `input`, the user message to come, as they would be sent)
    /// reaches the threshold (`Trigger::Auto`) or on request (`Trigger::Manual`), then refuses
    /// an input that still does not fit the window with `context_too_long`. `ctx.messages` is
    /// the system prompt and the history (no hook has run yet).
    pub(super) async fn compact_history(&mut self, input: &str, trigger: Trigger) -> Outcome<()> {
        let inner = self.inner.clone();
        let settings = &inner.config.context;
        let model = self.ctx.model.clone();
        let window = settings.window_for(&model);
        let input_message = (!input.is_empty()).then(|| Message::user(input));
        if trigger == Trigger::Auto
            && Sendable::surely_small(&self.ctx.messages, input_message.as_ref(), settings, &model)
        {
            return Ok(());
        }
        let sendable = |messages: &[Message]| {
            Sendable::of(messages, input_message.as_ref(), settings, &model).estimated()
        };
        let estimated = sendable(&self.ctx.messages);
        let mut needed = estimated;
        if trigger == Trigger::Manual || estimated >= settings.threshold_for(&model) {
            let compacted = self
                .compact_at(1, trigger, estimated, input_message.as_ref())
                .await?;
            if compacted == Compacted::NothingToDo && trigger == Trigger::Manual {
                self.notice(
                    NoticeLevel::Info,
                    format!(
                        "nothing to compact: the history has no more than the {} message group(s) compaction keeps",
                        settings.keep_recent_groups
                    ),
                )
                .await?;
            }
            if compacted == Compacted::Yes {
                needed = sendable(&self.ctx.messages);
            }
        }
        if trigger == Trigger::Auto && needed >= window {
            return Err(Interrupt::Failed(ChatError::new(
                ErrorCode::ContextTooLong,
                format!(
                    "the conversation needs about {needed} tokens, and the model's window is {window} \
                     (after compaction, which keeps the last {} message group(s)); start a new conversation or shorten it",
                    settings.keep_recent_groups
                ),
            )));
        }
        Ok(())
    }

    /// Before a model call whose input (as it would be sent) reaches the threshold, anywhere in
    /// the chat: the client's history, wherever it now is in the list, is compacted (this
    /// chat's own messages stay). `Ok(true)` = the list changed. After a failed or skipped
    /// compaction the chat does not try again (each try would be one more model call). After
    /// one, the `context_rebuilt` hooks run.
    pub(super) async fn compact_before_call(&mut self, estimated: u64) -> Outcome<bool> {
        if self.auto_compaction_off || self.history_places.is_empty() {
            return Ok(false);
        }
        let Some(at) = self.history_at() else {
            tracing::warn!(chat = %self.ctx.run_id, "the client's history was changed by a hook; it is not compacted in this chat");
            self.auto_compaction_off = true;
            return Ok(false);
        };
        let compacted = self.compact_at(at, Trigger::Auto, estimated, None).await?;
        if compacted != Compacted::Yes {
            return Ok(false);
        }
        // The list is assembled anew (the OpenHarness format: compaction, then the context
        // build, then the model call).
        self.hooks.context_rebuilt(&mut self.ctx).await;
        self.flush_outbox().await?;
        Ok(true)
    }

    /// Where the client's history (`history_places` of `client_history`) starts in
    /// `ctx.messages`: found again, since hooks may have put messages before it.
    fn history_at(&self) -> Option<usize> {
        let history = || {
            self.history_places
                .iter()
                .map(|&place| self.client_history.get(place))
        };
        let first = history().next()??;
        let len = self.history_places.len();
        (0..self.ctx.messages.len())
            .filter(|&at| &self.ctx.messages[at] == first)
            .find(|&at| {
                self.ctx.messages.get(at..at + len).is_some_and(|slice| {
                    slice
                        .iter()
                        .zip(history())
                        .all(|(message, sent)| Some(message) == sent)
                })
            })
    }

    /// One compaction of the history found at `at` in `ctx.messages` (`extra`: the input still
    /// to come, counted in the estimates).
    async fn compact_at(
        &mut self,
        at: usize,
        trigger: Trigger,
        estimated: u64,
        extra: Option<&Message>,
    ) -> Outcome<Compacted> {
        let history: Vec<Sent> = self
            .history_places
            .iter()
            .zip(self.ctx.messages.iter().skip(at))
            .map(|(&index, message)| Sent {
                index,
                message: message.clone(),
            })
            .collect();
        let keep = match trigger {
            Trigger::Auto => self.inner.config.context.keep_recent_groups,
            Trigger::Manual => self.groups_to_keep(&history, estimated, at, extra),
        };
        match plan(&history, self.client_history.len(), keep) {
            Some(plan) => {
                let span = crate::telemetry::Span::start(
                    || "compact".into(),
                    crate::telemetry::Kind::Internal,
                    || crate::telemetry::compaction_attributes(trigger.as_str(), estimated),
                );
                let compacted = span
                    .run(self.compact(plan, trigger, estimated, at, extra))
                    .await;
                span.end();
                compacted
            }
            None => Ok(Compacted::NothingToDo),
        }
    }

    /// For a compaction the person asked for: the most recent groups it may keep (at most
    /// `context.keep_recent_groups`) for what remains to fit under the threshold with room
    /// for the summary (a quarter of the window); fewer, down to none, when the recent turns
    /// themselves are what fills the window (a small local model's long answers).
    fn groups_to_keep(
        &self,
        history: &[Sent],
        estimated: u64,
        at: usize,
        extra: Option<&Message>,
    ) -> usize {
        let settings = &self.inner.config.context;
        let model = &self.ctx.model;
        let budget = settings
            .threshold_for(model)
            .saturating_sub(settings.window_for(model) / 4);
        let fits = |keep: usize| match plan(history, self.client_history.len(), keep) {
            Some(plan) => {
                self.compact_info(&plan, Trigger::Manual, estimated, at, extra)
                    .estimated_post_compact_tokens
                    < budget
            }
            None => estimated < budget,
        };
        (0..=settings.keep_recent_groups)
            .rev()
            .find(|&keep| fits(keep))
            .unwrap_or(0)
    }

    /// One compaction by `plan` of the history found at `at`, between its hooks: a pre hook may
    /// skip it; a failed summary call leaves the history as it was (with a `warn` notice).
    async fn compact(
        &mut self,
        plan: Plan,
        trigger: Trigger,
        estimated: u64,
        at: usize,
        extra: Option<&Message>,
    ) -> Outcome<Compacted> {
        let mut info = self.compact_info(&plan, trigger, estimated, at, extra);
        let Some((prompt, feedback)) = self.pre_compact_hooks(&info, trigger).await? else {
            return Ok(Compacted::Skipped);
        };
        let summary = self
            .summary_or_notice(prompt, feedback, &plan.summarised)
            .await?;
        let Some(summary) = summary else {
            return Ok(Compacted::Skipped);
        };
        self.put_summary_in_place(&plan, &summary, at);
        info.estimated_post_compact_tokens = estimate_tokens(self.ctx.messages.iter().chain(extra));
        let message = self.post_compact_hooks(&info, summary, plan.count).await?;
        let context = self.keep_after_summary(plan.pinned.len());
        metrics::counter!("hookwire_compactions_total", "kind" => "auto", "trigger" => trigger.as_str())
            .increment(1);
        tracing::info!(
            chat = %self.ctx.run_id,
            trigger = trigger.as_str(),
            count = plan.count,
            pinned = plan.pinned.len(),
            before = info.estimated_input_tokens,
            after = info.estimated_post_compact_tokens,
            "compacted the history"
        );
        self.rebase_client_history(&plan, &message, &context);
        self.send(ChatEvent::Compact {
            count: plan.count,
            message,
            pinned: plan.pinned,
            context,
        })
        .await?;
        Ok(Compacted::Yes)
    }

    /// What the compaction hooks are told about one by `plan` of the history found at `at`;
    /// the estimate after it counts the summary as nothing until there is one.
    fn compact_info(
        &self,
        plan: &Plan,
        trigger: Trigger,
        estimated: u64,
        at: usize,
        extra: Option<&Message>,
    ) -> CompactInfo {
        let settings = &self.inner.config.context;
        let model = &self.ctx.model;
        let messages = &self.ctx.messages;
        let end = (at + self.history_places.len()).min(messages.len());
        let estimated_post_compact_tokens = estimate_tokens(
            messages[..at]
                .iter()
                .chain(&plan.pinned)
                .chain(plan.recent.iter().map(|sent| &sent.message))
                .chain(&messages[end..])
                .chain(extra),
        );
        CompactInfo {
            trigger: trigger.as_str().into(),
            context_window_tokens: settings.window_for(model),
            compact_threshold_tokens: settings.threshold_for(model),
            estimated_input_tokens: estimated,
            estimated_post_compact_tokens,
            summarized_message_count: plan.summarised.len(),
            keep_recent_group_count: plan.kept_groups,
            configured_recent_group_count: settings.keep_recent_groups,
            compact_through: Some(plan.last_summarised),
            boundary: plan.recent.first().map(|sent| sent.message.clone()),
        }
    }

    /// The `pre_auto_compact` hooks: the summary prompt they leave and the feedback one gave for
    /// the summary call (`retry_feedback`), or `None` when one skipped the compaction (no more
    /// tries in this chat; a manual one is told with a `warn` notice).
    async fn pre_compact_hooks(
        &mut self,
        info: &CompactInfo,
        trigger: Trigger,
    ) -> Outcome<Option<(String, Option<String>)>> {
        let mut prompt = self.inner.config.context.summary_prompt.clone();
        let pre = self
            .hooks
            .pre_auto_compact(&mut self.ctx, info, &mut prompt)
            .await;
        self.flush_outbox().await?;
        let reason = match pre {
            Flow::Stop { reason } | Flow::Skip { reason } => reason,
            Flow::Retry { feedback } => return Ok(Some((prompt, Some(feedback)))),
            _ => return Ok(Some((prompt, None))),
        };
        tracing::info!(chat = %self.ctx.run_id, trigger = trigger.as_str(), %reason, "a hook skipped the compaction");
        self.auto_compaction_off = true;
        if trigger == Trigger::Manual {
            self.notice(
                NoticeLevel::Warn,
                format!("a hook skipped the compaction: {reason}"),
            )
            .await?;
        }
        Ok(None)
    }

    /// The summary of `messages`, or `None` when the call failed: the client hears why in a
    /// `warn` notice, and the chat does not try again.
    async fn summary_or_notice(
        &mut self,
        prompt: String,
        feedback: Option<String>,
        messages: &[Message],
    ) -> Outcome<Option<String>> {
        match self.summarise(prompt, feedback, messages).await? {
            Ok(summary) => Ok(Some(summary)),
            Err(why) => {
                tracing::warn!(chat = %self.ctx.run_id, %why, "the compaction's summary call failed");
                self.auto_compaction_off = true;
                self.notice(
                    NoticeLevel::Warn,
                    format!("the history could not be compacted: {why}"),
                )
                .await?;
                Ok(None)
            }
        }
    }

    /// The list after the compaction: what came before the history found at `at`, the summary,
    /// the pinned hooks, the kept groups, and everything after the history (this chat's own
    /// messages) as it was; the user input's place moves with it.
    fn put_summary_in_place(&mut self, plan: &Plan, summary: &str, at: usize) {
        let old_len = self.history_places.len();
        let new_len = 1 + plan.pinned.len() + plan.recent.len();
        let end = at + old_len;
        let messages = &mut self.ctx.messages;
        let tail = messages.split_off(end.min(messages.len()));
        messages.truncate(at);
        messages.push(summary_message(summary, plan.count));
        messages.extend(plan.pinned.iter().cloned());
        messages.extend(plan.recent.iter().map(|sent| sent.message.clone()));
        messages.extend(tail);
        if self.input_at >= end {
            self.input_at = self.input_at - old_len + new_len;
        }
    }

    /// The `post_auto_compact` hooks, which may rewrite the summary: the list and the frame
    /// carry the summary message they leave, which this returns.
    async fn post_compact_hooks(
        &mut self,
        info: &CompactInfo,
        mut summary: String,
        count: usize,
    ) -> Outcome<Message> {
        self.hooks
            .post_auto_compact(&mut self.ctx, info, &mut summary)
            .await;
        self.flush_outbox().await?;
        let message = summary_message(&summary, count);
        if let Some(slot) = self.ctx.messages.iter_mut().find(|m| m.compact.is_some()) {
            *slot = message.clone();
        }
        Ok(message)
    }

    /// What the compaction's hooks asked to keep after the summary, as user messages put after
    /// the summary and its `pinned` messages in the list (the input's place moves with them).
    fn keep_after_summary(&mut self, pinned: usize) -> Vec<Message> {
        let context: Vec<Message> = self
            .ctx
            .take_after_summary()
            .into_iter()
            .map(Message::user)
            .collect();
        let summary_at = self.ctx.messages.iter().position(|m| m.compact.is_some());
        let Some(summary_at) = summary_at.filter(|_| !context.is_empty()) else {
            return context;
        };
        let at = (summary_at + 1 + pinned).min(self.ctx.messages.len());
        self.ctx.messages.splice(at..at, context.iter().cloned());
        if self.input_at >= at {
            self.input_at += context.len();
        }
        context
    }

    /// The client's history from now on (what an approval state is bound to, and what the
    /// count of a later compaction in this chat refers to): the summary, the pinned hooks, what
    /// hooks kept after them, and what followed the summarised messages; the places of the kept
    /// ones move with it.
    fn rebase_client_history(&mut self, plan: &Plan, summary: &Message, context: &[Message]) {
        let rest = self
            .client_history
            .split_off(plan.count.min(self.client_history.len()));
        self.client_history = std::iter::once(summary.clone())
            .chain(plan.pinned.iter().cloned())
            .chain(context.iter().cloned())
            .chain(rest)
            .collect();
        let shift = 1 + plan.pinned.len() + context.len();
        self.history_places = (0..shift)
            .chain(
                plan.recent
                    .iter()
                    .map(|sent| sent.index - plan.count + shift),
            )
            .collect();
        self.binding = None;
    }

    /// The summary call: no tools, nothing streamed, its usage counted; a hook's `feedback`
    /// follows the conversation as a user message. `Ok(Err(why))` = it failed or came back
    /// empty.
    async fn summarise(
        &mut self,
        prompt: String,
        feedback: Option<String>,
        messages: &[Message],
    ) -> Outcome<Result<String, NoSummary>> {
        let settings = &self.inner.config.context;
        let window = settings.window_for(&self.ctx.model);
        // The call itself must fit the window: the oldest messages give way, and a quarter of
        // the window stays for the summary.
        let room =
            (window - window / 4).saturating_sub(estimate_tokens([&Message::system(&prompt)]));
        let kept = fitting(messages, room);
        let mut text = transcript(kept);
        if kept.len() < messages.len() {
            let left_out = messages.len() - kept.len();
            tracing::info!(chat = %self.ctx.run_id, left_out, window, "the history is too long to summarise in one call; its oldest messages are left out of the summary");
            text.push_str(&format!(
                "\n\n(The {left_out} oldest message(s) were too long to include and are left out.)"
            ));
        }
        let mut messages = vec![Message::system(prompt), Message::user(text)];
        messages.extend(feedback.map(Message::user));
        let max_tokens = settings.reply_limit(&self.ctx.model, || estimate_tokens(&messages));
        let request = ModelRequest {
            model: self.ctx.model.clone(),
            messages,
            tools: Vec::new(),
            max_tokens,
        };
        super::series::LLM_CALLS.get().increment(1);
        let started = Instant::now();
        let model = self.inner.model.clone();
        let span = self.model_span(&request);
        let stream = tokio::select! {
            _ = self.cancel.cancelled() => return Err(Interrupt::Cancelled),
            stream = span.run(model.stream(request)) => stream,
        };
        let stream = match stream {
            Ok(stream) => stream,
            Err(error) => return Ok(Err(NoSummary::Call(error))),
        };
        let reply = span
            .run(self.read_reply(stream, CallPhase::Compaction, TextMode::Hidden, started))
            .await;
        self.end_model_span(span, &reply);
        match reply {
            Ok(response) if response.content.trim().is_empty() => Ok(Err(NoSummary::Empty)),
            Ok(response) => Ok(Ok(response.content.trim().to_string())),
            Err(Interrupt::Failed(error)) => Ok(Err(NoSummary::Reply(error))),
            Err(interrupt) => Err(interrupt),
        }
    }
}

#[cfg(test)]
mod tests;
