//! The OpenAI-compatible streaming client: `POST {base_url}/chat/completions` with
//! `"stream": true`, read as Server-Sent Events.
//!
//! The stream ends honestly: every read is bounded by the idle timeout, the body is capped, a
//! body that ends before `[DONE]` (or a finish reason) is an error, and dropping the stream drops
//! the response and so the upstream connection. No task is spawned.

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures::{Stream, StreamExt};

use super::shape::MessageStyle;
use super::sse::{error_message, parse_chunk, request_body, ChunkAccumulator};
use super::{ChatModel, LlmError, ModelEvent, ModelRequest, ModelStream};

/// Where the model API is and how patient to be with it. Start from `Default` (OpenAI's API
/// root, no key, 10 s to connect, 60 s of silence, 32 MiB a call) and set what differs.
#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    /// The API root, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    /// Sent as `Authorization: Bearer KEY`.
    pub api_key: Option<String>,
    pub connect_timeout: Duration,
    /// Silence allowed before the response headers and between events.
    pub idle_timeout: Duration,
    /// Largest streamed body accepted for one call.
    pub max_stream_bytes: usize,
    /// How the messages are laid out (`upstream.message_style`).
    pub message_style: MessageStyle,
}

impl Default for OpenAiConfig {
    fn default() -> Self {
        Self {
            base_url: "https://api.openai.com/v1".into(),
            api_key: None,
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            max_stream_bytes: 32 * 1024 * 1024,
            message_style: MessageStyle::OpenAi,
        }
    }
}

/// A [`ChatModel`] for any OpenAI-compatible `POST {base_url}/chat/completions` with streaming.
#[derive(Debug, Clone)]
pub struct OpenAiClient {
    http: reqwest::Client,
    url: String,
    config: OpenAiConfig,
}

/// The longest upstream error text shown to the person.
const MAX_ERROR_TEXT: usize = 500;

impl OpenAiClient {
    /// A client for `config`; fails only when the HTTP client cannot be built (no TLS
    /// provider).
    pub fn new(config: OpenAiConfig) -> Result<Self, LlmError> {
        // reqwest panics without a process-wide rustls provider; a second install is harmless.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .tcp_nodelay(true)
            .build()
            .map_err(|e| LlmError::Setup(e.to_string()))?;
        let url = format!("{}/chat/completions", config.base_url.trim_end_matches('/'));
        Ok(Self { http, url, config })
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

type EventStream =
    Pin<Box<dyn Stream<Item = Result<Event, EventStreamError<reqwest::Error>>> + Send>>;

/// The state of one streamed reply.
struct Reading {
    events: EventStream,
    received: Arc<AtomicUsize>,
    accumulator: ChunkAccumulator,
    idle_timeout: Duration,
    max_bytes: usize,
}

impl Reading {
    /// The next model event, or `None` when the reply has ended.
    async fn next(&mut self) -> Option<Result<ModelEvent, LlmError>> {
        loop {
            let event = match tokio::time::timeout(self.idle_timeout, self.events.next()).await {
                Err(_) => return Some(Err(LlmError::Timeout(self.idle_timeout))),
                Ok(None) if self.accumulator.saw_finish() => return Some(self.finish()),
                Ok(None) => return Some(Err(LlmError::Truncated)),
                Ok(Some(Err(error))) => return Some(Err(stream_error(error))),
                Ok(Some(Ok(event))) => event,
            };
            if self.received.load(Ordering::Relaxed) > self.max_bytes {
                return Some(Err(LlmError::TooLarge(self.max_bytes)));
            }
            let data = event.data.trim();
            if data.is_empty() {
                continue;
            }
            if data == "[DONE]" {
                return Some(self.finish());
            }
            let chunk = match parse_chunk(data) {
                Ok(chunk) => chunk,
                Err(error) => return Some(Err(error)),
            };
            if let Some(error) = &chunk.error {
                return Some(Err(LlmError::Stream(error_message(error))));
            }
            if let Some(text) = self.accumulator.push(chunk) {
                return Some(Ok(ModelEvent::Text(text)));
            }
        }
    }

    fn finish(&mut self) -> Result<ModelEvent, LlmError> {
        let accumulator = std::mem::take(&mut self.accumulator);
        let finish_reason = accumulator.finish_reason.clone();
        let usage = accumulator.usage;
        let tool_calls = accumulator.into_tool_calls()?;
        Ok(ModelEvent::Finished {
            tool_calls,
            finish_reason,
            usage,
        })
    }
}

fn stream_error(error: EventStreamError<reqwest::Error>) -> LlmError {
    match error {
        EventStreamError::Utf8(e) => LlmError::Malformed(format!("invalid UTF-8: {e}")),
        EventStreamError::Parser(e) => LlmError::Malformed(e.to_string()),
        EventStreamError::Transport(e) => LlmError::Stream(root_cause(&e)),
    }
}

#[async_trait]
impl ChatModel for OpenAiClient {
    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, LlmError> {
        let mut builder = self
            .http
            .post(&self.url)
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .json(&request_body(&request, self.config.message_style));
        if let Some(key) = &self.config.api_key {
            builder = builder.bearer_auth(key);
        }
        let idle = self.config.idle_timeout;
        let response = match tokio::time::timeout(idle, builder.send()).await {
            Err(_) => return Err(LlmError::Timeout(idle)),
            Ok(Err(error)) if error.is_connect() || error.is_timeout() => {
                return Err(LlmError::Connect {
                    url: self.url.clone(),
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
            accumulator: ChunkAccumulator::default(),
            idle_timeout: idle,
            max_bytes: self.config.max_stream_bytes,
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
        assert_eq!(status_body_text("  plain failure \n"), "plain failure");
        assert_eq!(status_body_text(r#"{"message":"bad model"}"#), "bad model");
        let long = "x".repeat(2000);
        assert_eq!(status_body_text(&long).chars().count(), MAX_ERROR_TEXT + 1);
    }
}
