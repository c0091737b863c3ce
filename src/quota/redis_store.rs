//! [`RedisStore`]: the counters in Redis 6+ or Valkey (standalone), shared by every replica.
//!
//! An admission is one Lua script, so it is atomic however many replicas ask at once: it reads
//! every subject's counters and, only when none is spent, moves them all. Chats per minute are a
//! counter per UTC minute, tokens a counter per UTC day, both expiring at the end of their
//! window; chats at once are a sorted set of chat ids scored by the end of their lease, so a
//! replica that dies leaves leases that lapse within [`LEASE`].

use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use super::{
    chats_key, running_key, tokens_key, Clock, Refused, Spent, Store, StoreError, Subject, LEASE,
    RUNNING_RETRY_SECONDS,
};

/// KEYS: per subject its tokens, chats and running keys. ARGV: chat, now, lease end, minute
/// end, then per subject its three limits (-1: none). Returns `{-1}` when admitted, else
/// `{subject index (0-based), limit (1 tokens, 2 chats, 3 running)}`.
const ADMIT: &str = r"
local n = #KEYS / 3
local chat, now = ARGV[1], tonumber(ARGV[2])
local lease_end, minute_end = tonumber(ARGV[3]), tonumber(ARGV[4])
for i = 0, n - 1 do
  local tokens, chats, running = KEYS[i*3+1], KEYS[i*3+2], KEYS[i*3+3]
  local tl, cl, rl = tonumber(ARGV[5+i*3]), tonumber(ARGV[6+i*3]), tonumber(ARGV[7+i*3])
  if tl >= 0 and tonumber(redis.call('GET', tokens) or '0') >= tl then return {i, 1} end
  if cl >= 0 and tonumber(redis.call('GET', chats) or '0') >= cl then return {i, 2} end
  if rl >= 0 then
    redis.call('ZREMRANGEBYSCORE', running, '-inf', now)
    local count = redis.call('ZCARD', running)
    if redis.call('ZSCORE', running, chat) then count = count - 1 end
    if count >= rl then return {i, 3} end
  end
end
for i = 0, n - 1 do
  local chats, running = KEYS[i*3+2], KEYS[i*3+3]
  if tonumber(ARGV[6+i*3]) >= 0 then
    redis.call('INCR', chats)
    redis.call('PEXPIREAT', chats, minute_end)
  end
  if tonumber(ARGV[7+i*3]) >= 0 then
    redis.call('ZADD', running, lease_end, chat)
    redis.call('PEXPIREAT', running, lease_end)
  end
end
return {-1}
";

/// How long one question to Redis may take before the chat goes on without it.
const TIMEOUT: Duration = Duration::from_millis(500);

/// The counters in Redis; cheap to clone (one multiplexed connection, reconnected as needed).
#[derive(Clone)]
pub struct RedisStore {
    connection: ConnectionManager,
    admit: redis::Script,
}

impl RedisStore {
    /// A store at `url` (`redis://host:port/db`). No connection is made yet: a Redis that is
    /// down at start delays nothing, and each question fails fast until it is back.
    pub fn new(url: &str) -> Result<RedisStore, StoreError> {
        let client = redis::Client::open(url).map_err(error)?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(TIMEOUT))
            .set_response_timeout(Some(TIMEOUT))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_secs(1));
        let connection = ConnectionManager::new_lazy_with_config(client, config).map_err(error)?;
        Ok(RedisStore {
            connection,
            admit: redis::Script::new(ADMIT),
        })
    }
}

fn error(e: redis::RedisError) -> StoreError {
    // The URL is not quoted: it may hold a password.
    StoreError(e.to_string())
}

fn limit(value: Option<u64>) -> i64 {
    value.map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX))
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[async_trait::async_trait]
impl Store for RedisStore {
    async fn admit(
        &self,
        chat: &str,
        subjects: &[Subject],
        now: Clock,
    ) -> Result<Result<(), Refused>, StoreError> {
        let mut invocation = self.admit.prepare_invoke();
        for subject in subjects {
            invocation
                .key(tokens_key(subject, now))
                .key(chats_key(subject, now))
                .key(running_key(subject));
        }
        invocation
            .arg(chat)
            .arg(now.millis)
            .arg(now.millis + millis(LEASE))
            .arg((now.minute() + 1) * 60_000);
        for subject in subjects {
            let limits = subject.limits;
            invocation
                .arg(limit(limits.tokens_per_day))
                .arg(limit(limits.chats_per_minute))
                .arg(limit(limits.concurrent_chats));
        }
        let mut connection = self.connection.clone();
        let answer: Vec<i64> = invocation
            .invoke_async(&mut connection)
            .await
            .map_err(error)?;
        let (Some(&index), which) = (answer.first(), answer.get(1).copied()) else {
            return Err(StoreError("the admission script answered nothing".into()));
        };
        let Some(subject) = usize::try_from(index).ok().and_then(|i| subjects.get(i)) else {
            return Ok(Ok(()));
        };
        let (spent, retry_after_seconds) = match which {
            Some(1) => (Spent::TokensPerDay, now.seconds_to_next_day()),
            Some(2) => (Spent::ChatsPerMinute, now.seconds_to_next_minute()),
            _ => (Spent::ConcurrentChats, RUNNING_RETRY_SECONDS),
        };
        Ok(Err(Refused {
            subject: subject.key.clone(),
            spent,
            retry_after_seconds,
        }))
    }

    async fn release(&self, chat: &str, subjects: &[Subject]) -> Result<(), StoreError> {
        let mut pipe = redis::pipe();
        release_into(&mut pipe, chat, subjects);
        let mut connection = self.connection.clone();
        pipe.query_async::<()>(&mut connection).await.map_err(error)
    }

    async fn finish(
        &self,
        chat: &str,
        subjects: &[Subject],
        tokens: u64,
        now: Clock,
    ) -> Result<(), StoreError> {
        let mut pipe = redis::pipe();
        pipe.atomic();
        if tokens > 0 {
            add_tokens_into(&mut pipe, subjects, tokens, now);
        }
        release_into(&mut pipe, chat, subjects);
        let mut connection = self.connection.clone();
        pipe.query_async::<()>(&mut connection).await.map_err(error)
    }

    async fn renew(&self, chat: &str, subjects: &[Subject], now: Clock) -> Result<(), StoreError> {
        let end = now.millis + millis(LEASE);
        let mut pipe = redis::pipe();
        pipe.atomic();
        for subject in subjects
            .iter()
            .filter(|s| s.limits.concurrent_chats.is_some())
        {
            let key = running_key(subject);
            pipe.cmd("ZADD")
                .arg(&key)
                .arg("XX")
                .arg(end)
                .arg(chat)
                .ignore();
            pipe.cmd("PEXPIREAT").arg(&key).arg(end).ignore();
        }
        let mut connection = self.connection.clone();
        pipe.query_async::<()>(&mut connection).await.map_err(error)
    }

    async fn add_tokens(
        &self,
        subjects: &[Subject],
        tokens: u64,
        now: Clock,
    ) -> Result<(), StoreError> {
        let mut pipe = redis::pipe();
        pipe.atomic();
        add_tokens_into(&mut pipe, subjects, tokens, now);
        let mut connection = self.connection.clone();
        pipe.query_async::<()>(&mut connection).await.map_err(error)
    }
}

/// The commands that count `tokens` for today.
fn add_tokens_into(pipe: &mut redis::Pipeline, subjects: &[Subject], tokens: u64, now: Clock) {
    let day_end = (now.day() + 1) * 86_400_000;
    for subject in subjects
        .iter()
        .filter(|s| s.limits.tokens_per_day.is_some())
    {
        let key = tokens_key(subject, now);
        pipe.cmd("INCRBY").arg(&key).arg(tokens).ignore();
        pipe.cmd("PEXPIREAT").arg(&key).arg(day_end).ignore();
    }
}

/// The commands that give the lease of `chat` back.
fn release_into(pipe: &mut redis::Pipeline, chat: &str, subjects: &[Subject]) {
    for subject in subjects
        .iter()
        .filter(|s| s.limits.concurrent_chats.is_some())
    {
        pipe.zrem(running_key(subject), chat).ignore();
    }
}
