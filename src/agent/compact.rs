//! Auto and manual compaction of the client's history (PROTOCOL section 10): when the chat's
//! input would reach `compact_threshold` of the window, the oldest message groups are replaced by
//! one summary (made by one extra model call) followed by the persistent hook messages they held,
//! verbatim; the client learns it by a `compact` frame sent before any text.
//!
//! It runs at the start of a chat, before any hook has touched the list (seed 004: compaction
//! comes before `before_context_build`), so the summary input is the client's history and
//! nothing else: no temporary injection of this chat can enter it.

use std::ops::Range;
use std::time::Instant;

use super::call::TextMode;
use super::run::{ChatRun, Interrupt, Outcome};
use crate::hooks::signing::{HookSignature, SigningKey};
use crate::hooks::{CallPhase, CompactInfo, Flow};
use crate::llm::{estimate_tokens, ModelRequest};
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
/// hook message stays with the turn it belongs to. What comes before the first user message
/// (an earlier summary, its pinned hooks) belongs to the first group.
pub(super) fn groups(history: &[Sent]) -> Vec<Range<usize>> {
    let mut starts: Vec<usize> = history
        .iter()
        .enumerate()
        .filter(|(_, sent)| sent.message.role == Role::User)
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

/// What a compaction replaces.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Plan {
    /// How many messages of the history as sent are replaced (the frame's `count`).
    pub(super) count: usize,
    /// The messages the summary is made of, oldest first.
    pub(super) summarised: Vec<Message>,
    /// The persistent hook messages among the replaced ones: they follow the summary, verbatim.
    pub(super) pinned: Vec<Message>,
    /// The messages kept as they are.
    pub(super) recent: Vec<Message>,
    /// How many groups are kept.
    pub(super) kept_groups: usize,
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
    if summarised.is_empty() {
        return None;
    }
    Some(Plan {
        count: recent.first().map_or(sent_len, |sent| sent.index),
        summarised,
        pinned,
        recent: recent.iter().map(|sent| sent.message.clone()).collect(),
        kept_groups,
    })
}

/// The summary call's input: the summarised messages as one readable transcript (one user
/// message, so any chat template takes it). The demo model knows a summary call by its first
/// sentence (`llm/demo/side.rs`).
pub(super) fn transcript(messages: &[Message]) -> String {
    let mut text =
        String::from("Summarise this earlier part of the conversation.\n\n<conversation>\n");
    for message in messages {
        let who = match (message.role, &message.compact) {
            (Role::System, Some(_)) => "summary of an even earlier part",
            (role, _) => role.as_str(),
        };
        text.push_str(&format!("[{who}]\n{}\n\n", message.content.trim_end()));
    }
    text.push_str("</conversation>");
    text
}

/// The summary as the client stores it: a system message with its signed `_compact`.
pub(super) fn summary_message(content: String, count: usize, key: Option<&SigningKey>) -> Message {
    let sig = key.map_or_else(String::new, |key| {
        key.sign(&HookSignature::summary(&content))
    });
    let mut message = Message::system(content);
    message.compact = Some(CompactTag { count, sig });
    message
}

impl ChatRun {
    /// Compacts the history when the chat's input reaches the threshold (`Trigger::Auto`) or on
    /// request (`Trigger::Manual`), then refuses an input that still does not fit the window
    /// with `context_too_long`. `ctx.messages` is the system prompt and the history (`kept`: the
    /// place of each of its messages in the list the client sent); `input` is the user message
    /// to come.
    pub(super) async fn compact_history(
        &mut self,
        kept: Vec<usize>,
        sent_len: usize,
        input: &str,
        trigger: Trigger,
    ) -> Outcome<()> {
        let settings = self.inner.config.context.clone();
        let model = self.ctx.model.clone();
        let window = settings.window_for(&model);
        // The list as the first call would send it: without copying it to add the input.
        let input_message = (!input.is_empty()).then(|| Message::user(input));
        let with_input =
            |messages: &[Message]| estimate_tokens(messages.iter().chain(&input_message));
        let estimated = with_input(&self.ctx.messages);
        let mut needed = estimated;
        if trigger == Trigger::Manual || estimated >= settings.threshold_for(&model) {
            // The history is `ctx.messages` after the system prompt (no hook has run yet), each
            // at its place in the list as sent.
            let history: Vec<Sent> = kept
                .iter()
                .zip(self.ctx.messages.iter().skip(1))
                .map(|(&index, message)| Sent {
                    index,
                    message: message.clone(),
                })
                .collect();
            match plan(&history, sent_len, settings.keep_recent_groups) {
                Some(plan) => {
                    let span = crate::telemetry::Span::start(
                        || "compact".into(),
                        crate::telemetry::Kind::Internal,
                        || crate::telemetry::compaction_attributes(trigger.as_str(), estimated),
                    );
                    let compacted = span
                        .run(self.compact(plan, trigger, estimated, &with_input))
                        .await;
                    span.end();
                    compacted?
                }
                None if trigger == Trigger::Manual => {
                    self.notice(
                        NoticeLevel::Info,
                        format!(
                            "nothing to compact: the history has no more than the {} message group(s) compaction keeps",
                            settings.keep_recent_groups
                        ),
                    )
                    .await?;
                }
                None => {}
            }
            // Counted again only when the list may have changed.
            needed = with_input(&self.ctx.messages);
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

    /// One compaction by `plan`, between its hooks: a pre hook may skip it; a failed summary
    /// call leaves the history as it was (with a `warn` notice).
    async fn compact(
        &mut self,
        plan: Plan,
        trigger: Trigger,
        estimated: u64,
        with_input: &(dyn Fn(&[Message]) -> u64 + Sync),
    ) -> Outcome<()> {
        let settings = &self.inner.config.context;
        let model = self.ctx.model.clone();
        let system = self.ctx.messages.first().cloned();
        let rebuilt = |summary: Option<Message>| -> Vec<Message> {
            system
                .iter()
                .cloned()
                .chain(summary)
                .chain(plan.pinned.iter().cloned())
                .chain(plan.recent.iter().cloned())
                .collect()
        };
        let mut info = CompactInfo {
            trigger: trigger.as_str().into(),
            context_window_tokens: settings.window_for(&model),
            compact_threshold_tokens: settings.threshold_for(&model),
            estimated_input_tokens: estimated,
            estimated_post_compact_tokens: with_input(&rebuilt(None)),
            summarized_message_count: plan.summarised.len(),
            keep_recent_group_count: plan.kept_groups,
        };
        let mut prompt = settings.summary_prompt.clone();
        let pre = self
            .hooks
            .pre_auto_compact(&mut self.ctx, &info, &mut prompt)
            .await;
        self.flush_outbox().await?;
        if let Flow::Stop { reason } = pre {
            tracing::info!(chat = %self.ctx.run_id, trigger = trigger.as_str(), %reason, "a hook skipped the compaction");
            if trigger == Trigger::Manual {
                self.notice(
                    NoticeLevel::Warn,
                    format!("a hook skipped the compaction: {reason}"),
                )
                .await?;
            }
            return Ok(());
        }
        let mut summary = match self.summarise(prompt, &plan.summarised).await? {
            Ok(summary) => summary,
            Err(why) => {
                tracing::warn!(chat = %self.ctx.run_id, %why, "the compaction's summary call failed");
                return self
                    .notice(
                        NoticeLevel::Warn,
                        format!("the history could not be compacted: {why}"),
                    )
                    .await;
            }
        };
        let key = self.inner.config.secret.as_deref().map(SigningKey::new);
        self.ctx.messages = rebuilt(Some(summary_message(
            summary.clone(),
            plan.count,
            key.as_ref(),
        )));
        info.estimated_post_compact_tokens = with_input(&self.ctx.messages);
        self.hooks
            .post_auto_compact(&mut self.ctx, &info, &mut summary)
            .await;
        self.flush_outbox().await?;
        // A post hook may have rewritten the summary: the list and the frame carry the new one,
        // signed again.
        let message = summary_message(summary, plan.count, key.as_ref());
        if let Some(slot) = self.ctx.messages.iter_mut().find(|m| m.compact.is_some()) {
            *slot = message.clone();
        }
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
        // The client's history from now on: what an approval state is bound to.
        let rest = self
            .client_history
            .split_off(plan.count.min(self.client_history.len()));
        self.client_history = std::iter::once(message.clone())
            .chain(plan.pinned.iter().cloned())
            .chain(rest)
            .collect();
        self.send(ChatEvent::Compact {
            count: plan.count,
            message,
            pinned: plan.pinned,
        })
        .await
    }

    /// The summary call: no tools, nothing streamed, its usage counted. `Ok(Err(why))` = it
    /// failed or came back empty.
    async fn summarise(
        &mut self,
        prompt: String,
        messages: &[Message],
    ) -> Outcome<Result<String, String>> {
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
            Err(error) => return Ok(Err(error.to_string())),
        };
        let reply = span
            .run(self.read_reply(stream, CallPhase::Compaction, TextMode::Hidden, started))
            .await;
        self.end_model_span(span, &reply);
        match reply {
            Ok(response) if response.content.trim().is_empty() => {
                Ok(Err("the model's summary was empty".into()))
            }
            Ok(response) => Ok(Ok(response.content.trim().to_string())),
            Err(Interrupt::Failed(error)) => Ok(Err(error.message)),
            Err(interrupt) => Err(interrupt),
        }
    }
}

#[cfg(test)]
mod tests;
