//! The transport every streaming client shares: the HTTP client, the request sent and its status
//! read (an upstream's error text shown as it wrote it), and the Server-Sent Events read to the
//! end honestly: every read bounded by the idle timeout, the body capped, and the stream stopped
//! after its first error or its end. What an event means is the protocol's [`Decoder`]'s job.
//! Dropping the stream drops the response and so the upstream connection; no task is spawned.

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures::{Stream, StreamExt};
use serde_json::Value;

use super::{LlmError, ModelEvent, ModelStream};

/// The longest upstream error text shown to the person.
pub(super) const MAX_ERROR_TEXT: usize = 500;

/// An HTTP client with the connect timeout; fails only without a TLS provider.
pub(super) fn client(connect_timeout: Duration) -> Result<reqwest::Client, LlmError> {
    // reqwest panics without a process-wide rustls provider; a second install is harmless.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .tcp_nodelay(true)
        .build()
        .map_err(|e| LlmError::Setup(e.to_string()))
}

/// What a protocol makes of the events of one reply.
pub(super) trait Decoder: Send + 'static {
    /// One event: `None` to read on, `Some` for an event to hand out (a `Finished` ends the
    /// stream) or an error (which ends it too).
    fn event(&mut self, event: Event) -> Option<Result<ModelEvent, LlmError>>;
    /// The body ended without the protocol's last event: finished if the reply said so, else
    /// an error.
    fn end(&mut self) -> Result<ModelEvent, LlmError>;
}

/// Sends `request` and reads its streamed reply with `decoder`. Errors before the first event
/// (connect, HTTP status, no headers within `idle`) come back here; later ones as stream items.
pub(super) async fn stream<D: Decoder>(
    request: reqwest::RequestBuilder,
    url: &str,
    idle: Duration,
    max_bytes: usize,
    decoder: D,
) -> Result<ModelStream, LlmError> {
    let request = crate::telemetry::with_traceparent(request);
    let response = match tokio::time::timeout(idle, request.send()).await {
        Err(_) => return Err(LlmError::Timeout(idle)),
        Ok(Err(error)) if error.is_connect() || error.is_timeout() => {
            return Err(LlmError::Connect {
                url: url.to_string(),
                reason: root_cause(&error),
            })
        }
        Ok(Err(error)) => return Err(LlmError::Stream(root_cause(&error))),
        Ok(Ok(response)) => response,
    };
    let status = response.status();
    if !status.is_success() {
        let body = match tokio::time::timeout(idle, response.text()).await {
            Ok(Ok(body)) => status_body_text(&body),
            _ => String::from("(no readable body)"),
        };
        return Err(LlmError::Status {
            status: status.as_u16(),
            body,
        });
    }
    let received = Arc::new(AtomicUsize::new(0));
    let counter = received.clone();
    let bytes = response.bytes_stream().inspect(move |chunk| {
        if let Ok(bytes) = chunk {
            counter.fetch_add(bytes.len(), Ordering::Relaxed);
        }
    });
    let reading = Reading {
        events: Box::pin(bytes.eventsource()),
        received,
        decoder,
        idle_timeout: idle,
        max_bytes,
    };
    // After an error or the end, the stream stops.
    let stream = futures::stream::unfold(Some(reading), |state| async move {
        let mut reading = state?;
        match reading.next().await? {
            Ok(event @ ModelEvent::Finished { .. }) => Some((Ok(event), None)),
            Ok(event) => Some((Ok(event), Some(reading))),
            Err(error) => Some((Err(error), None)),
        }
    });
    Ok(stream.boxed())
}

type EventStream =
    Pin<Box<dyn Stream<Item = Result<Event, EventStreamError<reqwest::Error>>> + Send>>;

/// The state of one streamed reply.
struct Reading<D> {
    events: EventStream,
    received: Arc<AtomicUsize>,
    decoder: D,
    idle_timeout: Duration,
    max_bytes: usize,
}

impl<D: Decoder> Reading<D> {
    /// The next model event, or `None` when the reply has ended.
    async fn next(&mut self) -> Option<Result<ModelEvent, LlmError>> {
        loop {
            let event = match tokio::time::timeout(self.idle_timeout, self.events.next()).await {
                Err(_) => return Some(Err(LlmError::Timeout(self.idle_timeout))),
                Ok(None) => return Some(self.decoder.end()),
                Ok(Some(Err(error))) => return Some(Err(stream_error(error))),
                Ok(Some(Ok(event))) => event,
            };
            if self.received.load(Ordering::Relaxed) > self.max_bytes {
                return Some(Err(LlmError::TooLarge(self.max_bytes)));
            }
            if let Some(item) = self.decoder.event(event) {
                return Some(item);
            }
        }
    }
}

fn stream_error(error: EventStreamError<reqwest::Error>) -> LlmError {
    match error {
        EventStreamError::Utf8(e) => LlmError::Malformed(format!("invalid UTF-8: {e}")),
        EventStreamError::Parser(e) => LlmError::Malformed(e.to_string()),
        EventStreamError::Transport(e) => LlmError::Stream(root_cause(&e)),
    }
}

/// The most specific text of an error's source chain ("Connection refused (os error 111)").
fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut current = error;
    while let Some(source) = current.source() {
        current = source;
    }
    current.to_string()
}

/// The message of an `{"error": …}` value (OpenAI's and Anthropic's both have `message`).
pub(super) fn error_message(error: &Value) -> String {
    error
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| error.to_string())
}

/// The upstream's own error text: `error.message` of a JSON body, else the body, shortened.
fn status_body_text(body: &str) -> String {
    let from_json = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            v.get("error").map(error_message).or_else(|| {
                v.get("message")
                    .and_then(|m| m.as_str())
                    .map(str::to_string)
            })
        });
    let text = from_json.unwrap_or_else(|| body.trim().to_string());
    if text.chars().count() > MAX_ERROR_TEXT {
        let short: String = text.chars().take(MAX_ERROR_TEXT).collect();
        format!("{short}…")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_error_text_is_extracted() {
        assert_eq!(
            status_body_text(r#"{"error":{"message":"Incorrect API key","type":"x"}}"#),
            "Incorrect API key"
        );
        // Anthropic's shape.
        assert_eq!(
            status_body_text(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            "Overloaded"
        );
        assert_eq!(status_body_text("  plain failure \n"), "plain failure");
        assert_eq!(status_body_text(r#"{"message":"bad model"}"#), "bad model");
        let long = "x".repeat(2000);
        assert_eq!(status_body_text(&long).chars().count(), MAX_ERROR_TEXT + 1);
    }
}
