//! The OpenAI-compatible streaming client: `POST {base_url}/chat/completions` with
//! `"stream": true`, read as Server-Sent Events (the transport in `http`).
//!
//! A body that ends before `[DONE]` (or a finish reason) is an error.

use std::time::Duration;

use async_trait::async_trait;

use super::http::{self, error_message, Decoder};
use super::shape::MessageStyle;
use super::sse::{parse_chunk, request_body, ChunkAccumulator};
use super::window::{self, ServerWindow};
use super::{ChatModel, LlmError, ModelEvent, ModelRequest, ModelStream};

/// Where the model API is and how patient to be with it. Start from `Default` (OpenAI's API
/// root, no key, 10 s to connect, 60 s of silence, 32 MiB a call, messages as built) and set
/// what differs.
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
    http: http::Upstream,
    url: reqwest::Url,
    config: OpenAiConfig,
}

impl OpenAiClient {
    /// A client for `config`; fails when the base URL is not an http(s) URL or the HTTP client
    /// cannot be built (no TLS provider).
    pub fn new(config: OpenAiConfig) -> Result<Self, LlmError> {
        let url = http::endpoint(&config.base_url, &["chat", "completions"])?;
        let http = http::client(&url, config.connect_timeout)?;
        Ok(Self { http, url, config })
    }
}

/// Chunks joined into a reply.
#[derive(Default)]
struct Chunks {
    accumulator: ChunkAccumulator,
}

impl Chunks {
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

impl Decoder for Chunks {
    fn event(&mut self, data: &str) -> Option<Result<ModelEvent, LlmError>> {
        let data = data.trim();
        if data.is_empty() {
            return None;
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
        self.accumulator
            .push(chunk)
            .map(|text| Ok(ModelEvent::Text(text)))
    }

    fn end(&mut self) -> Result<ModelEvent, LlmError> {
        // Some servers end without `[DONE]` once they sent a finish reason.
        if self.accumulator.saw_finish() {
            self.finish()
        } else {
            Err(LlmError::Truncated)
        }
    }
}

#[async_trait]
impl ChatModel for OpenAiClient {
    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, LlmError> {
        let mut builder = self
            .http
            .client
            .post(self.url.clone())
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(
                request_body(&request, self.config.message_style).map_err(|error| {
                    LlmError::Setup(format!("the request could not be written as JSON: {error}"))
                })?,
            );
        if let Some(key) = &self.config.api_key {
            builder = builder.bearer_auth(key);
        }
        http::stream(
            &self.http,
            builder,
            &self.url,
            self.config.idle_timeout,
            self.config.max_stream_bytes,
            Chunks::default(),
        )
        .await
    }

    async fn server_window(&self, model: &str) -> Option<ServerWindow> {
        let key = self.config.api_key.as_deref();
        window::ask(&self.http.client, &self.config.base_url, key, model).await
    }
}
