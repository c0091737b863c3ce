//! Quotas per person and per tenant (docs/protocol.md §20): tokens per day, chats per minute,
//! chats at once, counted where every replica sees the same numbers.
//!
//! A chat is admitted against every subject it counts for (its person, its tenant) at once:
//! either all counters move or none does, so a refusal never leaves a half-counted chat. The
//! counters live in a [`Store`]: [`MemoryStore`] (one process) or [`RedisStore`] (Redis 6+ or
//! Valkey; one atomic script per admission, keys that expire on their own, so N replicas
//! enforce one quota exactly and a replica that dies leaks nothing for long).
//!
//! Windows: tokens by UTC day, chats by UTC minute (fixed windows: what a person can read off a
//! clock, and what `retry_after_seconds` can name exactly); chats at once as leases that a
//! running chat renews and that lapse on their own if its replica dies.

mod gate;
mod memory;
mod redis_store;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use gate::{Denied, Quotas, TenantLimits, Ticket};
pub use memory::MemoryStore;
pub use redis_store::RedisStore;

/// One subject's limits; `None` = no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Prompt and completion tokens of a UTC day, the hooks' model calls included.
    pub tokens_per_day: Option<u64>,
    /// Chats started in a UTC minute.
    pub chats_per_minute: Option<u64>,
    /// Chats running at once.
    pub concurrent_chats: Option<u64>,
}

impl Limits {
    pub fn is_unlimited(&self) -> bool {
        self.tokens_per_day.is_none()
            && self.chats_per_minute.is_none()
            && self.concurrent_chats.is_none()
    }
}

/// Whose counters: a person (`user:ID`) or a tenant (`tenant:NAME`), with its limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    pub key: String,
    pub limits: Limits,
}

impl Subject {
    pub fn user(id: &str, limits: Limits) -> Subject {
        Subject {
            key: format!("user:{id}"),
            limits,
        }
    }

    pub fn tenant(name: &str, limits: Limits) -> Subject {
        Subject {
            key: format!("tenant:{name}"),
            limits,
        }
    }
}

/// Which limit refused a chat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spent {
    TokensPerDay,
    ChatsPerMinute,
    ConcurrentChats,
}

impl Spent {
    pub fn as_str(self) -> &'static str {
        match self {
            Spent::TokensPerDay => "tokens_per_day",
            Spent::ChatsPerMinute => "chats_per_minute",
            Spent::ConcurrentChats => "concurrent_chats",
        }
    }
}

/// A refused chat: whose limit, which, and when to try again.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the {} quota of {subject} is spent; try again in {retry_after_seconds} s", spent.as_str())]
pub struct Refused {
    pub subject: String,
    pub spent: Spent,
    pub retry_after_seconds: u64,
}

/// The store could not be asked (Redis down, a timeout): the caller decides whether to count
/// in memory instead or to refuse (`shared_state_fail_closed`).
#[derive(Debug, thiserror::Error)]
#[error("the shared state could not be reached: {0}")]
pub struct StoreError(pub String);

/// How long a running chat's lease lasts unless renewed ([`Store::renew`]).
pub const LEASE: Duration = Duration::from_secs(60);

/// Where the counters live.
#[async_trait::async_trait]
pub trait Store: Send + Sync {
    /// Admits `chat` for every subject at once (all counters move, or none), or says which
    /// limit refused it.
    async fn admit(
        &self,
        chat: &str,
        subjects: &[Subject],
        now: Clock,
    ) -> Result<Result<(), Refused>, StoreError>;

    /// The chat ended: its lease is given back.
    async fn release(&self, chat: &str, subjects: &[Subject]) -> Result<(), StoreError>;

    /// The chat still runs: its lease is renewed.
    async fn renew(&self, chat: &str, subjects: &[Subject], now: Clock) -> Result<(), StoreError>;

    /// The chat ended having used `tokens`: they are counted for today, and its lease given
    /// back (one round trip where the store can).
    async fn finish(
        &self,
        chat: &str,
        subjects: &[Subject],
        tokens: u64,
        now: Clock,
    ) -> Result<(), StoreError> {
        if tokens > 0 {
            self.add_tokens(subjects, tokens, now).await?;
        }
        self.release(chat, subjects).await
    }

    /// Tokens the chat (or a hook's model call) used, counted for today.
    async fn add_tokens(
        &self,
        subjects: &[Subject],
        tokens: u64,
        now: Clock,
    ) -> Result<(), StoreError>;
}

/// The time the windows are cut from (a value, so tests can name any moment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clock {
    /// Milliseconds since the Unix epoch.
    pub millis: u64,
}

impl Clock {
    pub fn now() -> Clock {
        let millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        Clock { millis }
    }

    pub fn day(self) -> u64 {
        self.millis / 86_400_000
    }

    pub fn minute(self) -> u64 {
        self.millis / 60_000
    }

    /// Whole seconds (at least 1) until the next UTC day.
    pub fn seconds_to_next_day(self) -> u64 {
        ((self.day() + 1) * 86_400_000 - self.millis)
            .div_ceil(1000)
            .max(1)
    }

    /// Whole seconds (at least 1) until the next UTC minute.
    pub fn seconds_to_next_minute(self) -> u64 {
        ((self.minute() + 1) * 60_000 - self.millis)
            .div_ceil(1000)
            .max(1)
    }
}

/// Keys of a subject's counters (shared by both stores, so they count alike).
pub(crate) fn tokens_key(subject: &Subject, now: Clock) -> String {
    format!("hookwire:quota:{}:tokens:{}", subject.key, now.day())
}

pub(crate) fn chats_key(subject: &Subject, now: Clock) -> String {
    format!("hookwire:quota:{}:chats:{}", subject.key, now.minute())
}

pub(crate) fn running_key(subject: &Subject) -> String {
    format!("hookwire:quota:{}:running", subject.key)
}

/// When a chat refused because the shared state cannot be reached may try again.
pub const UNAVAILABLE_RETRY_SECONDS: u64 = 5;

/// How long after a chat is refused for running chats it may try again: a lease's life at
/// most, one second at least (a chat that ends frees its place at once).
const RUNNING_RETRY_SECONDS: u64 = 1;

#[cfg(test)]
mod tests;
