//! Retries of a model call that failed before it streamed anything (docs/protocol.md §14):
//! `retries` more tries of a retryable failure (the server unreachable, HTTP 408, 409, 429, 5xx
//! overload), each after an exponential back-off with jitter or the server's `Retry-After`
//! (capped), each announced by a `warn` notice from `upstream`; then the next of
//! `fallback_models`, which the chat keeps. Only while nothing of the answer has reached the
//! client: a chat that already showed text ends with the error, so the person never sees an
//! answer restart.

use std::time::Duration;

use super::call::upstream_error;
use super::run::{ChatRun, Interrupt, Outcome};
use crate::llm::{LlmError, ModelRequest, ModelStream};
use crate::types::{ChatError, ChatEvent, ErrorCode, NoticeLevel};

/// `upstream.retries`, `upstream.max_retry_wait_seconds`, `upstream.fallback_models`.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Tries after the first one, per model (2).
    pub retries: usize,
    /// The longest wait before a try, `Retry-After` included (20 s).
    pub max_wait: Duration,
    /// Models tried in turn once a model's tries are used up by retryable failures.
    pub fallback_models: Vec<String>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            retries: 2,
            max_wait: Duration::from_secs(20),
            fallback_models: Vec::new(),
        }
    }
}

/// The first back-off; it doubles with each retry (0.5 s, 1 s, 2 s, …, at most 8 s).
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(8);

impl RetryPolicy {
    /// The wait before retry number `retry` (1-based) after `error`: the server's
    /// `Retry-After`, else the back-off with jitter (between half and all of it), capped by
    /// `max_wait`. `unit` is a random number in [0, 1).
    pub(super) fn wait(&self, retry: usize, error: &LlmError, unit: f64) -> Duration {
        let wait = match error.retry_after() {
            Some(asked) => asked,
            None => {
                let doubled = FIRST_BACKOFF.saturating_mul(1u32 << retry.saturating_sub(1).min(16));
                doubled
                    .min(MAX_BACKOFF)
                    .mul_f64(0.5 + unit.clamp(0.0, 1.0) / 2.0)
            }
        };
        wait.min(self.max_wait)
    }
}

/// A random number in [0, 1) for the jitter (from the OS's random source, via a v4 UUID).
fn unit_random() -> f64 {
    let bits = (uuid::Uuid::new_v4().as_u128() >> 75) as u64; // 53 random bits
    bits as f64 / (1u64 << 53) as f64
}

impl ChatRun {
    /// Starts the call's stream, retrying and falling back as the policy says while the client
    /// has seen nothing of the answer. A fallback model stays the chat's model. A hook's
    /// sub-run takes a hook model call for each upstream request, each retry and fallback
    /// included: none left, no request.
    pub(super) async fn open_stream(&mut self, mut request: ModelRequest) -> Outcome<ModelStream> {
        let policy = self.inner.config.retry.clone();
        let mut fallbacks = policy.fallback_models.iter();
        let mut retry = 0;
        loop {
            self.take_hook_call()?;
            let model = self.inner.model.clone();
            let result = tokio::select! {
                _ = self.cancel.cancelled() => return Err(Interrupt::Cancelled),
                result = model.stream(request.clone()) => result,
            };
            let error = match result {
                Ok(stream) => return Ok(stream),
                Err(error) => error,
            };
            if !error.is_retryable() || !self.visible_text.is_empty() {
                return Err(upstream_error(error));
            }
            let message = if retry < policy.retries {
                retry += 1;
                let wait = policy.wait(retry, &error, unit_random());
                let message = format!(
                    "{error}; trying again in {:.1} s (retry {retry} of {})",
                    wait.as_secs_f64(),
                    policy.retries
                );
                self.upstream_notice(message).await?;
                tokio::select! {
                    _ = self.cancel.cancelled() => return Err(Interrupt::Cancelled),
                    _ = tokio::time::sleep(wait) => {}
                }
                continue;
            } else if let Some(next) = fallbacks.next() {
                retry = 0;
                let message = format!(
                    "{error}; model {} failed {} time(s), switching to {next}",
                    request.model,
                    policy.retries + 1
                );
                request.model = next.clone();
                self.ctx.model = next.clone();
                message
            } else {
                return Err(upstream_error(error));
            };
            self.upstream_notice(message).await?;
        }
    }

    /// In a hook's sub-run: takes one of the calling chat's hook model calls.
    fn take_hook_call(&self) -> Outcome<()> {
        let Some(spend) = &self.hook_call_of else {
            return Ok(());
        };
        spend.try_call().map_err(|exhausted| {
            Interrupt::Failed(ChatError::new(
                ErrorCode::HookBlocked,
                format!("no model call left for hooks: {exhausted}"),
            ))
        })
    }

    async fn upstream_notice(&mut self, message: String) -> Outcome<()> {
        tracing::warn!(chat = %self.ctx.run_id, "{message}");
        self.send(ChatEvent::Notice {
            level: NoticeLevel::Warn,
            message,
            source: "upstream".into(),
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: u16, retry_after: Option<Duration>) -> LlmError {
        LlmError::Status {
            status: code,
            body: String::new(),
            retry_after,
        }
    }

    #[test]
    fn the_backoff_doubles_with_jitter_and_retry_after_wins_up_to_the_cap() {
        let policy = RetryPolicy::default();
        let error = status(500, None);
        assert_eq!(policy.wait(1, &error, 0.0), Duration::from_millis(250));
        assert_eq!(policy.wait(1, &error, 0.999_999).as_millis(), 499);
        assert_eq!(policy.wait(2, &error, 0.0), Duration::from_millis(500));
        assert_eq!(policy.wait(3, &error, 0.0), Duration::from_secs(1));
        assert_eq!(
            policy.wait(30, &error, 0.0),
            Duration::from_secs(4),
            "at most 8 s"
        );
        let asked = status(429, Some(Duration::from_secs(3)));
        assert_eq!(policy.wait(1, &asked, 0.7), Duration::from_secs(3));
        let too_long = status(429, Some(Duration::from_secs(3600)));
        assert_eq!(policy.wait(1, &too_long, 0.0), Duration::from_secs(20));
        let unit = unit_random();
        assert!((0.0..1.0).contains(&unit));
    }

    #[test]
    fn what_is_retried() {
        for code in [408, 409, 429, 500, 502, 503, 504, 529] {
            assert!(status(code, None).is_retryable(), "{code}");
        }
        for code in [400, 401, 403, 404, 413, 422, 501] {
            assert!(!status(code, None).is_retryable(), "{code}");
        }
        assert!(LlmError::Connect {
            url: "http://127.0.0.1:9".into(),
            reason: "refused".into()
        }
        .is_retryable());
        assert!(
            LlmError::NoAnswer("connection closed before message completed".into()).is_retryable()
        );
        assert!(!LlmError::Truncated.is_retryable());
    }
}
