//! [`MemoryStore`]: the counters in this process (the default, and the fallback while the shared
//! state cannot be reached).

use std::collections::HashMap;
use std::sync::Mutex;

use super::{
    chats_key, running_key, tokens_key, Clock, Refused, Spent, Store, StoreError, Subject, LEASE,
    RUNNING_RETRY_SECONDS,
};

/// Counters with expiry, and leases of running chats, in one lock (an admission reads and moves
/// several at once).
#[derive(Default)]
pub struct MemoryStore {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Key → (value, expiry in ms since the epoch).
    counters: HashMap<String, (u64, u64)>,
    /// Subject's running key → chat → lease expiry.
    running: HashMap<String, HashMap<String, u64>>,
    /// Admissions since the last sweep of expired entries.
    since_sweep: u32,
}

/// Sweep expired entries once this many admissions went by (keys of past windows).
const SWEEP_EVERY: u32 = 1024;

impl State {
    fn counter(&self, key: &str, now: Clock) -> u64 {
        match self.counters.get(key) {
            Some(&(value, expires)) if expires > now.millis => value,
            _ => 0,
        }
    }

    fn add(&mut self, key: String, by: u64, expires: u64, now: Clock) {
        let entry = self.counters.entry(key).or_insert((0, expires));
        if entry.1 <= now.millis {
            *entry = (0, expires);
        }
        entry.0 = entry.0.saturating_add(by);
    }

    /// The unexpired leases of a subject other than `chat`'s own.
    fn running(&self, key: &str, chat: &str, now: Clock) -> u64 {
        self.running.get(key).map_or(0, |leases| {
            leases
                .iter()
                .filter(|(id, &expires)| *id != chat && expires > now.millis)
                .count() as u64
        })
    }

    fn sweep(&mut self, now: Clock) {
        self.counters
            .retain(|_, (_, expires)| *expires > now.millis);
        for leases in self.running.values_mut() {
            leases.retain(|_, expires| *expires > now.millis);
        }
        self.running.retain(|_, leases| !leases.is_empty());
    }

    /// The first limit `subject` has spent, if any.
    fn refusal(&self, chat: &str, subject: &Subject, now: Clock) -> Option<Refused> {
        let limits = subject.limits;
        let refused = |spent, retry_after_seconds| Refused {
            subject: subject.key.clone(),
            spent,
            retry_after_seconds,
        };
        if let Some(limit) = limits.tokens_per_day {
            if self.counter(&tokens_key(subject, now), now) >= limit {
                return Some(refused(Spent::TokensPerDay, now.seconds_to_next_day()));
            }
        }
        if let Some(limit) = limits.chats_per_minute {
            if self.counter(&chats_key(subject, now), now) >= limit {
                return Some(refused(Spent::ChatsPerMinute, now.seconds_to_next_minute()));
            }
        }
        if let Some(limit) = limits.concurrent_chats {
            if self.running(&running_key(subject), chat, now) >= limit {
                return Some(refused(Spent::ConcurrentChats, RUNNING_RETRY_SECONDS));
            }
        }
        None
    }
}

fn lease_end(now: Clock) -> u64 {
    now.millis + LEASE.as_millis() as u64
}

impl MemoryStore {
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[async_trait::async_trait]
impl Store for MemoryStore {
    async fn admit(
        &self,
        chat: &str,
        subjects: &[Subject],
        now: Clock,
    ) -> Result<Result<(), Refused>, StoreError> {
        let mut state = self.state();
        state.since_sweep += 1;
        if state.since_sweep >= SWEEP_EVERY {
            state.since_sweep = 0;
            state.sweep(now);
        }
        if let Some(refused) = subjects.iter().find_map(|s| state.refusal(chat, s, now)) {
            return Ok(Err(refused));
        }
        for subject in subjects {
            if subject.limits.chats_per_minute.is_some() {
                let expires = (now.minute() + 1) * 60_000;
                state.add(chats_key(subject, now), 1, expires, now);
            }
            if subject.limits.concurrent_chats.is_some() {
                state
                    .running
                    .entry(running_key(subject))
                    .or_default()
                    .insert(chat.to_string(), lease_end(now));
            }
        }
        Ok(Ok(()))
    }

    async fn release(&self, chat: &str, subjects: &[Subject]) -> Result<(), StoreError> {
        let mut state = self.state();
        for subject in subjects {
            let key = running_key(subject);
            if let Some(leases) = state.running.get_mut(&key) {
                leases.remove(chat);
                if leases.is_empty() {
                    state.running.remove(&key);
                }
            }
        }
        Ok(())
    }

    async fn renew(&self, chat: &str, subjects: &[Subject], now: Clock) -> Result<(), StoreError> {
        let mut state = self.state();
        for subject in subjects {
            if let Some(lease) = state
                .running
                .get_mut(&running_key(subject))
                .and_then(|leases| leases.get_mut(chat))
            {
                *lease = lease_end(now);
            }
        }
        Ok(())
    }

    async fn add_tokens(
        &self,
        subjects: &[Subject],
        tokens: u64,
        now: Clock,
    ) -> Result<(), StoreError> {
        let mut state = self.state();
        for subject in subjects {
            if subject.limits.tokens_per_day.is_some() {
                let expires = (now.day() + 1) * 86_400_000;
                state.add(tokens_key(subject, now), tokens, expires, now);
            }
        }
        Ok(())
    }
}
