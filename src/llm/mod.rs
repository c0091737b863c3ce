//! The model side: one [`ChatModel`] trait, the OpenAI-compatible and Anthropic streaming
//! clients (one transport, `http`), how a request's messages are laid out for the upstream
//! ([`MessageStyle`]), and the offline demo model.
//!
//! A model call is a stream of [`ModelEvent`]s that ends with exactly one
//! [`ModelEvent::Finished`]; a stream that ends without it has failed. Dropping the stream drops
//! the upstream request (and its connection) at once.

mod anthropic;
pub(crate) mod demo;
mod event_stream;
mod http;
mod inline;
mod openai;
mod shape;
mod sse;
mod tokens;
mod window;

pub use anthropic::{AnthropicClient, AnthropicConfig, ANTHROPIC_VERSION};
pub(crate) use http::endpoint;
pub use http::redact_url;
pub use openai::{OpenAiClient, OpenAiConfig};
pub use shape::MessageStyle;
pub use tokens::{
    context_window, count_text_tokens, estimate_tokens, token_bound, warm_up, DEFAULT_WINDOW_TOKENS,
};
pub use window::ServerWindow;

use std::time::Duration;

use async_trait::async_trait;
use futures::stream::BoxStream;

use crate::types::ToolSpec;
use crate::types::{Message, ToolCall, Usage};

/// One call to the model, as the agent built it (after every hook had its say).
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    pub model: String,
    pub messages: Vec<Message>,
    /// Empty = no `tools` field upstream (the planning round and direct calls).
    pub tools: Vec<ToolSpec>,
    /// The most the reply may hold, in tokens (OpenAI-compatible: `max_tokens`; Anthropic: the
    /// smaller of it and `AnthropicConfig::max_tokens`). `None` = no limit sent (Anthropic: its
    /// configured one).
    pub max_tokens: Option<u32>,
}

/// What a streaming model call yields.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ModelEvent {
    /// A piece of assistant text, as it arrived.
    Text(String),
    /// The call ended normally: the tool calls joined from their fragments (by index), the
    /// finish reason, and the usage if the upstream reported it.
    Finished {
        tool_calls: Vec<ToolCall>,
        finish_reason: Option<String>,
        usage: Option<Usage>,
    },
}

pub type ModelStream = BoxStream<'static, Result<ModelEvent, LlmError>>;

/// Why a model call failed. Every variant's message is shown to the person (`upstream` error).
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
#[non_exhaustive]
pub enum LlmError {
    #[error("could not connect to the model API at {url}: {reason}")]
    Connect { url: String, reason: String },
    #[error("the model API answered HTTP {status}: {body}")]
    Status {
        status: u16,
        body: String,
        /// The server's `Retry-After` (or `retry-after-ms`), when it sent one.
        retry_after: Option<Duration>,
    },
    /// The request went out, but the connection closed (or was reset) before any answer: most
    /// often a kept-alive connection that the server closed just as it was reused.
    #[error("the model API closed the connection before answering: {0}")]
    NoAnswer(String),
    #[error("the model API sent no data for {0:?} (timeout)")]
    Timeout(Duration),
    #[error("the model API sent a malformed event: {0}")]
    Malformed(String),
    #[error("the model API stream ended before [DONE]")]
    Truncated,
    #[error("the model API stream failed: {0}")]
    Stream(String),
    #[error("the model API stream exceeded {0} bytes")]
    TooLarge(usize),
    /// The client could not be set up (e.g. no TLS provider).
    #[error("the model client could not be built: {0}")]
    Setup(String),
}

impl LlmError {
    /// Whether the same call may succeed if sent again: the server could not be reached, closed
    /// the connection before answering, or answered 408, 409, 429, 500, 502, 503, 504 or 529
    /// (overloaded).
    pub fn is_retryable(&self) -> bool {
        match self {
            LlmError::Connect { .. } | LlmError::NoAnswer(_) => true,
            LlmError::Status { status, .. } => {
                matches!(status, 408 | 409 | 429 | 500 | 502 | 503 | 504 | 529)
            }
            _ => false,
        }
    }

    /// How long the server asked to wait before the next try.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// A chat model that streams. Implemented by the OpenAI-compatible and Anthropic clients and the
/// demo model; tests and library users may bring their own.
#[async_trait]
pub trait ChatModel: Send + Sync {
    /// Starts a streamed call. Errors before the first event (connect, HTTP status, first-byte
    /// timeout) come back here; later ones come as stream items.
    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, LlmError>;

    /// The `gen_ai.provider.name` of its spans (OpenTelemetry's names: `openai`, `anthropic`).
    fn provider_name(&self) -> &'static str {
        "openai"
    }

    /// The context window the server behind it states for `model`, where it states one (local
    /// servers: llama.cpp, vLLM, Ollama); `None` when it does not say or cannot be asked.
    async fn server_window(&self, _model: &str) -> Option<ServerWindow> {
        None
    }
}
