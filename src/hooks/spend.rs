//! [`HookSpend`]: what the hooks of one chat spent on model calls, and what they may still spend
//! (docs/protocol.md §15).
//!
//! Every model call a hook makes (an `llm` / `prompt` hook's call and its JSON retry, each
//! upstream request of an `agent` hook's sub-agent, its retries and fallback models included)
//! first takes a slot ([`HookSpend::try_call`]) and then adds the tokens the upstream reported
//! ([`HookSpend::record`]). A chat has `limits.max_hook_model_calls` slots, and none once its
//! total (its own calls and its hooks') reached `limits.max_total_tokens`. The chat's
//! `done.usage` adds what its hooks spent ([`crate::hooks::HookContext::usage`]). A connection's
//! own hooks (`session_start`, `session_end`) have one meter with the same limits
//! ([`crate::hooks::SessionInfo`]), logged at its end. Every slot taken is counted in
//! `hookwire_hook_model_calls_total`. Shared by the chain, the async queue and the sub-agent of
//! `agent` hooks, so it is atomics only.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::types::Usage;

/// The default `limits.max_hook_model_calls`.
pub(crate) const DEFAULT_MAX_HOOK_MODEL_CALLS: usize = 32;

/// One chat's hook model calls and their tokens (see the module doc).
#[derive(Debug)]
pub(crate) struct HookSpend {
    max_calls: u64,
    max_total_tokens: Option<u64>,
    calls: AtomicU64,
    prompt_tokens: AtomicU64,
    completion_tokens: AtomicU64,
    /// The chat's own calls' tokens, kept here for the `max_total_tokens` check.
    chat_tokens: AtomicU64,
    /// The chat's one notice that hooks were skipped was sent.
    noticed: AtomicBool,
}

/// Why a hook may not call the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exhausted {
    Calls(u64),
    Tokens(u64),
}

impl std::fmt::Display for Exhausted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exhausted::Calls(max) => write!(
                f,
                "the chat's hooks made {max} model calls (limits.max_hook_model_calls)"
            ),
            Exhausted::Tokens(max) => write!(
                f,
                "the chat used {max} tokens or more (limits.max_total_tokens)"
            ),
        }
    }
}

impl HookSpend {
    pub(crate) fn new(max_calls: usize, max_total_tokens: Option<u64>) -> Self {
        Self {
            max_calls: u64::try_from(max_calls).unwrap_or(u64::MAX),
            max_total_tokens,
            calls: AtomicU64::new(0),
            prompt_tokens: AtomicU64::new(0),
            completion_tokens: AtomicU64::new(0),
            chat_tokens: AtomicU64::new(0),
            noticed: AtomicBool::new(false),
        }
    }

    /// Whether a hook that calls the model may still run (`Err`: why not).
    pub(crate) fn room(&self) -> Result<(), Exhausted> {
        if self.calls.load(Ordering::SeqCst) >= self.max_calls {
            return Err(Exhausted::Calls(self.max_calls));
        }
        self.tokens_left()
    }

    fn tokens_left(&self) -> Result<(), Exhausted> {
        match self.max_total_tokens {
            Some(max) if self.total_tokens() >= max => Err(Exhausted::Tokens(max)),
            _ => Ok(()),
        }
    }

    /// Takes a slot for one model call (one upstream request); `Err` (nothing taken) when none
    /// is left.
    pub(crate) fn try_call(&self) -> Result<(), Exhausted> {
        self.tokens_left()?;
        self.calls
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |calls| {
                (calls < self.max_calls).then_some(calls + 1)
            })
            .map_err(|_| Exhausted::Calls(self.max_calls))?;
        metrics::counter!("hookwire_hook_model_calls_total").increment(1);
        Ok(())
    }

    /// Adds a hook call's tokens.
    pub(crate) fn record(&self, usage: Usage) {
        self.prompt_tokens
            .fetch_add(usage.prompt_tokens, Ordering::SeqCst);
        self.completion_tokens
            .fetch_add(usage.completion_tokens, Ordering::SeqCst);
    }

    /// Adds the chat's own call's tokens (for the `max_total_tokens` check only).
    pub(crate) fn record_chat(&self, usage: Usage) {
        self.chat_tokens.fetch_add(
            usage.prompt_tokens + usage.completion_tokens,
            Ordering::SeqCst,
        );
    }

    fn total_tokens(&self) -> u64 {
        self.chat_tokens.load(Ordering::SeqCst)
            + self.prompt_tokens.load(Ordering::SeqCst)
            + self.completion_tokens.load(Ordering::SeqCst)
    }

    /// What the hooks spent, as usage: totals and the hook items.
    pub(crate) fn usage(&self) -> Usage {
        let prompt = self.prompt_tokens.load(Ordering::SeqCst);
        let completion = self.completion_tokens.load(Ordering::SeqCst);
        Usage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            hook_calls: self.calls.load(Ordering::SeqCst),
            hook_prompt_tokens: prompt,
            hook_completion_tokens: completion,
        }
    }

    /// `true` the first time only: the chat's one notice that hooks are skipped.
    pub(crate) fn first_skip(&self) -> bool {
        !self.noticed.swap(true, Ordering::SeqCst)
    }
}

impl Default for HookSpend {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_HOOK_MODEL_CALLS, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(prompt: u64, completion: u64) -> Usage {
        Usage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            ..Usage::default()
        }
    }

    #[test]
    fn calls_take_slots_up_to_the_limit() {
        let spend = HookSpend::new(2, None);
        assert_eq!(spend.try_call(), Ok(()));
        assert_eq!(spend.room(), Ok(()));
        assert_eq!(spend.try_call(), Ok(()));
        assert_eq!(spend.room(), Err(Exhausted::Calls(2)));
        assert_eq!(spend.try_call(), Err(Exhausted::Calls(2)));
        assert_eq!(spend.usage().hook_calls, 2, "a refused call takes no slot");
        assert!(spend.first_skip());
        assert!(!spend.first_skip());
    }

    #[test]
    fn the_chats_and_the_hooks_tokens_count_against_max_total_tokens() {
        let spend = HookSpend::new(100, Some(50));
        spend.record_chat(usage(30, 5));
        spend.try_call().unwrap();
        spend.record(usage(10, 4));
        assert_eq!(spend.room(), Ok(()), "49 < 50");
        spend.try_call().unwrap();
        spend.record(usage(1, 0));
        assert_eq!(spend.try_call(), Err(Exhausted::Tokens(50)));
        let used = spend.usage();
        assert_eq!(
            (
                used.prompt_tokens,
                used.completion_tokens,
                used.hook_calls,
                used.hook_prompt_tokens,
                used.hook_completion_tokens
            ),
            (11, 4, 2, 11, 4),
            "the chat's own tokens are not the hooks'"
        );
    }
}
