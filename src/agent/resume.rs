//! A chat that stops for the person's approval, and the chat that goes on after it (PROTOCOL
//! section 11). Between the two the server keeps nothing: the `approval` event carries the
//! signed state ([`super::approval`]), and the resuming chat rebuilds the loop from it and from
//! the history the client sends back.

use std::collections::HashMap;

use super::approval::{self, HistoryBinding, LoopState, StateMessage};
use super::run::{ChatRun, Interrupt, Outcome};
use crate::hooks::Flow;
use crate::types::MAX_DENY_REASON_CHARS;
use crate::types::{ChatError, ChatEvent, DoneReason, ErrorCode, Message, PendingCall, Resume};

impl ChatRun {
    /// Ends the chat's loop waiting for decisions on `pending` (calls of `round`): the
    /// `approval_required` hooks, then the `approval` event with the state.
    pub(super) async fn ask_approval(
        &mut self,
        round: usize,
        pending: Vec<PendingCall>,
    ) -> Outcome<()> {
        let binding = match &self.binding {
            Some(binding) => binding.clone(),
            None => HistoryBinding::of(&self.client_history),
        };
        let system = self
            .ctx
            .messages
            .first()
            .filter(|m| m.role == crate::types::Role::System)
            .map(|m| m.content.clone())
            .unwrap_or_default();
        let tail = self
            .ctx
            .messages
            .get(self.input_at..)
            .unwrap_or_default()
            .iter()
            // This chat's temporary injections are not carried: their hooks inject them again.
            .filter(|m| m.injection.is_none() || m.hook.is_some())
            .map(StateMessage::from)
            .collect();
        let expires = approval::now_secs() + self.inner.config.approval.ttl.as_secs().max(1);
        let state = LoopState {
            expires,
            history: binding,
            model: self.ctx.model.clone(),
            system,
            tail,
            round,
            retries: self.retries,
            pending: pending.clone(),
        };
        let text = approval::encode(&state, &self.inner.approval_key);
        tracing::info!(
            chat = %self.ctx.run_id,
            calls = pending.len(),
            state_bytes = text.len(),
            "tool calls wait for approval"
        );
        metrics::counter!("hookwire_approvals_total", "outcome" => "asked")
            .increment(pending.len() as u64);
        self.hooks.approval_required(&mut self.ctx, &pending).await;
        self.flush_outbox().await?;
        self.send(ChatEvent::Approval {
            calls: pending,
            state: text,
            expires,
        })
        .await
    }

    /// Goes on from an approval state: checks it, rebuilds the loop's messages, runs or denies
    /// the pending calls, and continues the agent loop from the next round.
    pub(super) async fn resume(
        &mut self,
        sent: Vec<Message>,
        resume: Resume,
    ) -> Outcome<DoneReason> {
        let state = approval::decode(
            &resume.state,
            &self.inner.approval_key,
            approval::now_secs(),
        )
        .map_err(bad_frame)?;
        // The chat that asked may have switched to a fallback model, which stays its model.
        let fallbacks = &self.inner.config.retry.fallback_models;
        if state.model != self.ctx.model && !fallbacks.contains(&state.model) {
            return Err(bad_frame(format!(
                "the approval state belongs to a chat with the model {:?}, this server runs {:?}",
                state.model, self.ctx.model
            )));
        }
        self.ctx.model = state.model.clone();
        if !state.history.matches(&sent) {
            return Err(bad_frame(
                "the history does not match the conversation the approval state came from \
                 (it must start with the messages that chat was sent)",
            ));
        }
        let decided = decisions(&state.pending, resume.decisions).map_err(bad_frame)?;
        let mut sent = sent;
        sent.truncate(state.history.len);
        let prefix = self.verified_history(&sent);
        self.history_places = prefix.iter().map(|kept| kept.index).collect();
        self.client_history = sent;
        let tail = state
            .tail
            .into_iter()
            .map(StateMessage::into_message)
            .collect::<Result<Vec<_>, _>>()
            .map_err(bad_frame)?;
        self.ctx.messages = std::iter::once(Message::system(state.system))
            .chain(prefix.into_iter().map(|sent| sent.message))
            .collect();
        self.input_at = self.ctx.messages.len();
        self.rebuild(tail).await?;
        self.binding = Some(state.history);
        self.retries = state.retries;
        let decided = self.guard_reasons(decided).await?;
        // The chat already called the model: a hook's stop now ends it with `done` `stopped`.
        self.model_called = true;
        self.ctx.iteration = state.round;
        for (call, decision) in &decided {
            let outcome = if decision.allows() {
                "allowed"
            } else {
                "denied"
            };
            metrics::counter!("hookwire_approvals_total", "outcome" => outcome).increment(1);
            tracing::info!(chat = %self.ctx.run_id, call = %call.call_id, tool = %call.name, outcome, "approval decision");
        }
        let mut names = self.waiting_round_tools();
        for name in self.decide(decided).await? {
            if !names.contains(&name) {
                names.push(name);
            }
        }
        // The whole round's: its calls that ran before the approval went through their hooks
        // in the chat that asked.
        self.hooks.after_tool_call(&mut self.ctx, &names).await;
        self.flush_outbox().await?;
        // The round's client calls (allowed now, or beside the ones that waited) go to the client.
        if let Some(reason) = self.wait_for_client() {
            return self.end_agent_loop(Ok(reason)).await;
        }
        self.agent_loop(state.round + 1).await
    }

    /// The tools of the round that waited for approval (its assistant message, the newest that
    /// calls tools), once each; calls past the round's cap never went through their hooks.
    fn waiting_round_tools(&self) -> Vec<String> {
        let cap = self.inner.config.max_tool_calls_per_round;
        let mut names: Vec<String> = Vec::new();
        let round = self
            .ctx
            .messages
            .iter()
            .rev()
            .find(|m| m.role == crate::types::Role::Assistant && !m.tool_calls.is_empty());
        let calls = round.map(|m| m.tool_calls.as_slice()).unwrap_or_default();
        for call in calls.iter().take(cap) {
            if !names.contains(&call.name) {
                names.push(call.name.clone());
            }
        }
        names
    }

    /// A deny reason is the person's text on its way to the model: it passes the input guards
    /// (`pre_send_message`, Claude Code's `UserPromptSubmit`, Gemini CLI's `BeforeAgent`) like a
    /// chat's input. A guard's stop refuses the resume (`hook_blocked`: the model is not asked);
    /// a rewrite is the reason the model gets. It is not a new turn: what the guards did to the
    /// chat's messages is not kept.
    async fn guard_reasons(&mut self, mut decided: Vec<Decided>) -> Outcome<Vec<Decided>> {
        if decided.iter().all(|(_, decision)| decision.allows()) {
            return Ok(decided);
        }
        let messages = self.ctx.messages.clone();
        let mut stopped = None;
        for (call, decision) in &mut decided {
            let Decision::Deny(reason) = decision else {
                continue;
            };
            if let Flow::Stop { reason: why } =
                self.hooks.pre_send_message(&mut self.ctx, reason).await
            {
                tracing::info!(chat = %self.ctx.run_id, call = %call.call_id, "an input guard refused a deny reason");
                stopped = Some(why);
                break;
            }
        }
        self.ctx.messages = messages;
        self.flush_outbox().await?;
        match stopped {
            Some(why) => Err(Interrupt::Stopped(why)),
            None => Ok(decided),
        }
    }
}

impl ChatRun {
    /// Puts the loop's messages back as the chat had them (docs/protocol.md §13): the user
    /// input, then `post_send_message` again (the request-scoped `after_user_input` hooks, a
    /// Rust hook's run start), the messages up to round 1, `before_first_agent` again, then
    /// the rest. The hooks see `replaying()`, so nothing the state carries is added twice.
    async fn rebuild(&mut self, tail: Vec<Message>) -> Outcome<()> {
        let mut tail = tail.into_iter().peekable();
        let Some(input) = tail.next_if(|m| m.role == crate::types::Role::User) else {
            self.ctx.messages.extend(tail);
            return Ok(());
        };
        self.ctx.messages.push(input);
        self.ctx.set_replaying(true);
        self.hooks.post_send_message(&mut self.ctx).await;
        while let Some(message) = tail.next_if(|m| m.tool_calls.is_empty()) {
            self.ctx.messages.push(message);
        }
        if tail.peek().is_some() {
            self.ctx.iteration = 1;
            self.hooks.before_first_agent(&mut self.ctx).await;
        }
        self.ctx.set_replaying(false);
        self.ctx.messages.extend(tail);
        // Nothing persistent was injected; notices and traces still go out.
        self.flush_outbox().await
    }
}

/// The person's decision on a pending call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Decision {
    Allow,
    /// Denied, with the reason the model is told.
    Deny(String),
}

impl Decision {
    pub(super) fn allows(&self) -> bool {
        matches!(self, Decision::Allow)
    }
}

/// A pending call and the person's decision on it.
pub(super) type Decided = (PendingCall, Decision);

/// Why a resume's decisions do not fit the calls that wait (the `bad_frame` message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum DecisionsError {
    #[error("resume.decisions names the call {0:?}, which does not wait for approval")]
    NotWaiting(String),
    #[error("resume.decisions has two decisions for the call {0:?}")]
    Twice(String),
    #[error("resume.decisions has no decision for the call {call_id:?} ({name})")]
    Missing { call_id: String, name: String },
    #[error("the deny reason of the call {call_id:?} is {chars} characters long; the limit is {MAX_DENY_REASON_CHARS}")]
    ReasonTooLong { call_id: String, chars: usize },
}

/// Each pending call with its decision, in the order they were asked; every pending call needs
/// exactly one decision, and no other call may have one.
fn decisions(
    pending: &[PendingCall],
    decisions: Vec<crate::types::ApprovalDecision>,
) -> Result<Vec<Decided>, DecisionsError> {
    let mut by_id = HashMap::new();
    for decision in decisions {
        if !pending.iter().any(|call| call.call_id == decision.call_id) {
            return Err(DecisionsError::NotWaiting(decision.call_id));
        }
        let call_id = decision.call_id.clone();
        if by_id.insert(call_id.clone(), decision).is_some() {
            return Err(DecisionsError::Twice(call_id));
        }
    }
    pending
        .iter()
        .map(|call| {
            let decision = by_id
                .remove(&call.call_id)
                .ok_or_else(|| DecisionsError::Missing {
                    call_id: call.call_id.clone(),
                    name: call.name.clone(),
                })?;
            // The server refuses a longer one in the frame already; a library caller too.
            if let Some(reason) = &decision.reason {
                let chars = reason.chars().count();
                if chars > MAX_DENY_REASON_CHARS {
                    return Err(DecisionsError::ReasonTooLong {
                        call_id: call.call_id.clone(),
                        chars,
                    });
                }
            }
            let result = if decision.allow {
                Decision::Allow
            } else {
                Decision::Deny(
                    decision
                        .reason
                        .filter(|reason| !reason.trim().is_empty())
                        .unwrap_or_else(|| "no reason given".into()),
                )
            };
            Ok((call.clone(), result))
        })
        .collect()
}

/// A resume refused: its state, history or decisions do not fit.
fn bad_frame(why: impl std::fmt::Display) -> Interrupt {
    Interrupt::Failed(ChatError::new(ErrorCode::BadFrame, why.to_string()))
}
