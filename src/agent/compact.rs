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

use std::ops::Range;
use std::time::Instant;

use super::call::TextMode;
use super::context::Sendable;
use super::run::{ChatRun, Interrupt, Outcome};
use crate::hooks::{CallPhase, CompactInfo, Flow};
use crate::llm::{estimate_tokens, LlmError, ModelRequest};
use crate::types::{ChatError, ChatEvent, CompactTag, ErrorCode, Message, NoticeLevel, Role};

/// A message of the client's history, with its place in the list the client sent (a forged
/// message that was dropped leaves a gap): a `compact` frame's count is in those places.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Sent {
    pub(super) index: usize,
    pub(super) message: Message,
}

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

/// The groups of a history: a user message and everything up to the next user message, so a
/// hook message, an assistant's tool calls and their results stay with the turn they belong to.
/// What comes before the first user message, and an earlier summary (a user message with
/// `_compact`) with its pinned hooks, belong to the first group.
pub(super) fn groups(history: &[Sent]) -> Vec<Range<usize>> {
    let mut starts: Vec<usize> = history
        .iter()
        .enumerate()
        .filter(|(_, sent)| sent.message.role == Role::User && sent.message.compact.is_none())
        .map(|(at, _)| at)
        .collect();
    match starts.first_mut() {
        Some(first) => *first = 0,
        None if history.is_empty() => return Vec::new(),
        None => starts.push(0),
    }
    let ends = starts.iter().skip(1).copied().chain([history.len()]);
    starts.iter().zip(ends).map(|(&s, e)| s..e).collect()
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

/// What a compaction replaces.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Plan {
    /// How many messages of the history as sent are replaced (the frame's `count`).
    pub(super) count: usize,
    /// The messages the summary is made of, oldest first.
    pub(super) summarised: Vec<Message>,
    /// The persistent hook messages among the replaced ones: they follow the summary, verbatim.
    pub(super) pinned: Vec<Message>,
    /// The messages kept as they are, with their places.
    pub(super) recent: Vec<Sent>,
    /// How many groups are kept.
    pub(super) kept_groups: usize,
    /// The place in the history as sent of the last summarised message.
    pub(super) last_summarised: usize,
}

/// The plan that keeps the last `keep` groups of `history` (`sent_len` messages as sent);
/// `None` when nothing would be summarised.
pub(super) fn plan(history: &[Sent], sent_len: usize, keep: usize) -> Option<Plan> {
    let groups = groups(history);
    let kept_groups = keep.min(groups.len());
    let split = groups
        .len()
        .checked_sub(kept_groups)
        .and_then(|first_kept| groups.get(first_kept))
        .map_or(history.len(), |group| group.start);
    let (old, recent) = history.split_at(split);
    let (pinned, summarised): (Vec<Message>, Vec<Message>) = old
        .iter()
        .map(|sent| sent.message.clone())
        .partition(|message| message.hook.is_some());
    let last_summarised = old
        .iter()
        .rev()
        .find(|sent| sent.message.hook.is_none())?
        .index;
    Some(Plan {
        count: recent.first().map_or(sent_len, |sent| sent.index),
        summarised,
        pinned,
        recent: recent.to_vec(),
        kept_groups,
        last_summarised,
    })
}

/// The longest tool result the summary call reads (in characters); the rest is cut.
const TRANSCRIPT_TOOL_RESULT: usize = 2_000;

/// The summary call's input: the summarised messages as one readable transcript (one user
/// message, so any chat template takes it), tool calls and their results included. The demo
/// model knows a summary call by its first sentence (`llm/demo/side.rs`).
pub(super) fn transcript(messages: &[Message]) -> String {
    let mut text =
        String::from("Summarise this earlier part of the conversation.\n\n<conversation>\n");
    for message in messages {
        let who = match (message.role, &message.compact) {
            (_, Some(_)) => "summary of an even earlier part",
            (role, _) => role.as_str(),
        };
        let content = message.content.trim_end();
        let cut = content.char_indices().nth(TRANSCRIPT_TOOL_RESULT);
        match cut {
            Some((at, _)) if message.role == Role::Tool => text.push_str(&format!(
                "[{who}]\n{}\n[… {} more characters]\n",
                &content[..at],
                content[at..].chars().count()
            )),
            _ if content.is_empty() => text.push_str(&format!("[{who}]\n")),
            _ => text.push_str(&format!("[{who}]\n{content}\n")),
        }
        for call in &message.tool_calls {
            text.push_str(&format!("(called {} {})\n", call.name, call.arguments));
        }
        text.push('\n');
    }
    text.push_str("</conversation>");
    text
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

/// The tags around a summary: it is user text, and says so.
pub(super) const SUMMARY_OPEN: &str = "<summary of the earlier conversation>";
pub(super) const SUMMARY_CLOSE: &str = "</summary of the earlier conversation>";

/// The summary as the client stores it and the model reads it: a `user` message in its tags,
/// with an informative `_compact` (never signed: it has the trust of anything a user types).
pub(super) fn summary_message(summary: &str, count: usize) -> Message {
    let mut message = Message::user(format!("{SUMMARY_OPEN}\n{summary}\n{SUMMARY_CLOSE}"));
    message.compact = Some(CompactTag { count });
    message
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
        let keep = self.inner.config.context.keep_recent_groups;
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
        let Some(prompt) = self.pre_compact_hooks(&info, trigger).await? else {
            return Ok(Compacted::Skipped);
        };
        let Some(summary) = self.summary_or_notice(prompt, &plan.summarised).await? else {
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

    /// The `pre_auto_compact` hooks: the summary prompt they leave, or `None` when one skipped
    /// the compaction (no more tries in this chat; a manual one is told with a `warn` notice).
    async fn pre_compact_hooks(
        &mut self,
        info: &CompactInfo,
        trigger: Trigger,
    ) -> Outcome<Option<String>> {
        let mut prompt = self.inner.config.context.summary_prompt.clone();
        let pre = self
            .hooks
            .pre_auto_compact(&mut self.ctx, info, &mut prompt)
            .await;
        self.flush_outbox().await?;
        let Flow::Stop { reason } = pre else {
            return Ok(Some(prompt));
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
        messages: &[Message],
    ) -> Outcome<Option<String>> {
        match self.summarise(prompt, messages).await? {
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

    /// The summary call: no tools, nothing streamed, its usage counted. `Ok(Err(why))` = it
    /// failed or came back empty.
    async fn summarise(
        &mut self,
        prompt: String,
        messages: &[Message],
    ) -> Outcome<Result<String, NoSummary>> {
        let request = ModelRequest {
            model: self.ctx.model.clone(),
            messages: vec![Message::system(prompt), Message::user(transcript(messages))],
            tools: Vec::new(),
        };
        metrics::counter!("hookwire_llm_calls_total").increment(1);
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
