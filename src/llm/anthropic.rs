//! Anthropic's Messages API: `POST {base_url}/v1/messages` with `"stream": true`, read as
//! Server-Sent Events (the transport in `http`).
//!
//! The request: every system text in the `system` field, the rest strictly alternating (the
//! strict shaping of `shape`), tool calls as `tool_use` blocks and their results as
//! `tool_result` blocks of the next user message, `max_tokens` always set. The reply:
//! `message_start` (input usage), `content_block_start` / `_delta` / `_stop` for text and
//! `tool_use` blocks (the input arrives as `input_json_delta` fragments), `message_delta` (stop
//! reason, output usage), `message_stop`; `ping` and unknown events are skipped, an `error` event
//! fails the call. `stop_reason: max_tokens` becomes the finish reason `length`.

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::http::{self, error_message, Decoder};
use super::shape::{shape, MessageStyle};
use super::window::{self, ServerWindow};
use super::{ChatModel, LlmError, ModelEvent, ModelRequest, ModelStream};
use crate::types::{Role, ToolCall, Usage};

/// The API version every request names (`anthropic-version`).
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Where the Messages API is and how patient to be with it. Start from `Default` (Anthropic's
/// API root, no key, 10 s to connect, 60 s of silence, 32 MiB a call, 4096 tokens a reply).
#[derive(Debug, Clone)]
pub struct AnthropicConfig {
    /// The API root, e.g. `https://api.anthropic.com` (`/v1/messages` is added; a root that
    /// already ends in `/v1` gets `/messages`).
    pub base_url: String,
    /// Sent as `x-api-key`.
    pub api_key: Option<String>,
    pub connect_timeout: Duration,
    /// Silence allowed before the response headers and between events.
    pub idle_timeout: Duration,
    /// Largest streamed body accepted for one call.
    pub max_stream_bytes: usize,
    /// The reply's limit in tokens (the API requires one).
    pub max_tokens: u32,
}

impl Default for AnthropicConfig {
    fn default() -> Self {
        Self {
            base_url: "https://api.anthropic.com".into(),
            api_key: None,
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            max_stream_bytes: 32 * 1024 * 1024,
            max_tokens: 4096,
        }
    }
}

/// A [`ChatModel`] for Anthropic's Messages API with streaming.
#[derive(Debug, Clone)]
pub struct AnthropicClient {
    http: http::Upstream,
    url: reqwest::Url,
    config: AnthropicConfig,
}

impl AnthropicClient {
    /// A client for `config`; fails when the base URL is not an http(s) URL or the HTTP client
    /// cannot be built (no TLS provider).
    pub fn new(config: AnthropicConfig) -> Result<Self, LlmError> {
        let root = http::endpoint(&config.base_url, &[])?;
        let segments: &[&str] = if root.path().trim_end_matches('/').ends_with("/v1") {
            &["messages"]
        } else {
            &["v1", "messages"]
        };
        let url = http::endpoint(&config.base_url, segments)?;
        let http = http::client(&url, config.connect_timeout)?;
        Ok(Self { http, url, config })
    }
}

#[async_trait]
impl ChatModel for AnthropicClient {
    fn provider_name(&self) -> &'static str {
        "anthropic"
    }

    /// A local server that speaks Anthropic's API (llama.cpp's `/v1/messages`) states its
    /// window like any other; Anthropic's own is never asked.
    async fn server_window(&self, model: &str) -> Option<ServerWindow> {
        window::ask(&self.http.client, &self.config.base_url, None, model).await
    }

    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, LlmError> {
        let mut builder = self
            .http
            .client
            .post(self.url.clone())
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .header("anthropic-version", ANTHROPIC_VERSION)
            .json(&request_body(
                &request,
                request.max_tokens.map_or(self.config.max_tokens, |limit| {
                    limit.min(self.config.max_tokens)
                }),
            ));
        if let Some(key) = &self.config.api_key {
            builder = builder.header("x-api-key", key);
        }
        http::stream(
            &self.http,
            builder,
            &self.url,
            self.config.idle_timeout,
            self.config.max_stream_bytes,
            Reply::default(),
        )
        .await
    }
}

/// The body of `POST /v1/messages`.
pub(super) fn request_body(request: &ModelRequest, max_tokens: u32) -> Value {
    let mut shaped = shape(
        &request.messages,
        MessageStyle::Strict { system_role: true },
    );
    let system = match shaped.first() {
        Some(first) if first.role == Role::System => Some(shaped.remove(0).content),
        _ => None,
    };
    // Role and content blocks; a tool result is a block of a user message, so the results of a
    // round and a user message after them are one message.
    let mut messages: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in &shaped {
        let (role, blocks) = match message.role {
            Role::Assistant => (
                "assistant",
                assistant_blocks(&message.content, &message.tool_calls),
            ),
            Role::Tool => {
                let mut block = json!({
                    "type": "tool_result",
                    "tool_use_id": message.tool_call_id.clone().unwrap_or_default(),
                });
                // An empty text block is refused; an empty result is no content at all.
                if !message.content.is_empty() {
                    block["content"] = json!(message.content);
                }
                ("user", vec![block])
            }
            Role::User | Role::System => ("user", text_block(&message.content)),
        };
        if blocks.is_empty() {
            continue;
        }
        match messages.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => messages.push((role, blocks)),
        }
    }
    let messages: Vec<Value> = messages
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();
    let mut body = json!({
        "model": request.model,
        "max_tokens": max_tokens,
        "stream": true,
        "messages": messages,
    });
    if let Some(system) = system {
        body["system"] = json!(system);
    }
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({"name": tool.name, "description": tool.description, "input_schema": tool.parameters})
            })
            .collect();
        body["tools"] = Value::Array(tools);
        body["tool_choice"] = json!({"type": "auto"});
    }
    body
}

/// A text block, or none for an empty text (the API refuses empty text blocks).
fn text_block(text: &str) -> Vec<Value> {
    if text.is_empty() {
        Vec::new()
    } else {
        vec![json!({"type": "text", "text": text})]
    }
}

fn assistant_blocks(text: &str, calls: &[ToolCall]) -> Vec<Value> {
    let mut blocks = text_block(text);
    for call in calls {
        // `input` must be an object; arguments that were not one ran as `{}` too.
        let input = match call.arguments_value() {
            Value::Object(map) => Value::Object(map),
            _ => Value::Object(Map::new()),
        };
        blocks.push(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}));
    }
    blocks
}

/// One streamed event, accepting what is not needed (new event and block types included).
#[derive(Debug, Deserialize)]
struct StreamEvent {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    message: Option<MessageStart>,
    #[serde(default)]
    content_block: Option<Value>,
    #[serde(default)]
    delta: Option<Value>,
    #[serde(default)]
    usage: Option<EventUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct MessageStart {
    #[serde(default)]
    usage: Option<EventUsage>,
}

/// Usage as Anthropic counts it: cached input is counted apart from `input_tokens`.
#[derive(Debug, Default, Deserialize)]
struct EventUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
}

impl EventUsage {
    /// Every input token, cached or not: what `prompt_tokens` means elsewhere.
    fn prompt_tokens(&self) -> Option<u64> {
        let parts = [
            self.input_tokens,
            self.cache_creation_input_tokens,
            self.cache_read_input_tokens,
        ];
        parts
            .iter()
            .any(Option::is_some)
            .then(|| parts.iter().flatten().sum())
    }
}

#[derive(Debug)]
struct ToolUse {
    id: String,
    name: String,
    /// The `input_json_delta` fragments joined.
    json: String,
    /// `content_block_start`'s `input`, used when no fragment came.
    start_input: Option<Value>,
}

/// A reply as it streams in.
#[derive(Debug, Default)]
pub(super) struct Reply {
    tool_uses: BTreeMap<usize, ToolUse>,
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    stop_reason: Option<String>,
}

impl Reply {
    /// One event's data; `None` to read on.
    pub(super) fn data(&mut self, data: &str) -> Option<Result<ModelEvent, LlmError>> {
        let event: StreamEvent = match serde_json::from_str(data) {
            Ok(event) => event,
            Err(e) => {
                let excerpt: String = data.chars().take(120).collect();
                return Some(Err(LlmError::Malformed(format!("{e} in {excerpt:?}"))));
            }
        };
        match event.kind.as_str() {
            "message_start" => {
                if let Some(usage) = event.message.and_then(|m| m.usage) {
                    self.take_usage(&usage);
                }
                None
            }
            "content_block_start" => self.block_start(event.index, event.content_block),
            "content_block_delta" => self.delta(event.index, event.delta),
            "message_delta" => {
                let reason = event
                    .delta
                    .as_ref()
                    .and_then(|d| d.get("stop_reason"))
                    .and_then(Value::as_str);
                if let Some(reason) = reason {
                    self.stop_reason = Some(reason.to_string());
                }
                if let Some(usage) = &event.usage {
                    self.take_usage(usage);
                }
                None
            }
            "message_stop" => Some(self.finish()),
            "error" => {
                let error = event.error.unwrap_or(Value::Null);
                let kind = error.get("type").and_then(Value::as_str).unwrap_or("error");
                Some(Err(LlmError::Stream(format!(
                    "{} ({kind})",
                    error_message(&error)
                ))))
            }
            // `ping`, `content_block_stop`, and whatever the API adds later.
            _ => None,
        }
    }

    /// The counts are cumulative: a later event's replace an earlier one's.
    fn take_usage(&mut self, usage: &EventUsage) {
        if let Some(prompt) = usage.prompt_tokens() {
            self.prompt_tokens = Some(prompt);
        }
        if let Some(output) = usage.output_tokens {
            self.completion_tokens = Some(output);
        }
    }

    fn block_start(
        &mut self,
        index: Option<usize>,
        block: Option<Value>,
    ) -> Option<Result<ModelEvent, LlmError>> {
        let block = block?;
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                let text = block.get("text").and_then(Value::as_str).unwrap_or("");
                (!text.is_empty()).then(|| Ok(ModelEvent::Text(text.to_string())))
            }
            Some("tool_use") => {
                let Some(index) = index else {
                    return Some(Err(LlmError::Malformed(
                        "a tool_use block without an index".into(),
                    )));
                };
                let field = |name: &str| {
                    block
                        .get(name)
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string()
                };
                let name = field("name");
                if name.is_empty() {
                    return Some(Err(LlmError::Malformed(format!(
                        "tool_use block {index} has no name"
                    ))));
                }
                self.tool_uses.insert(
                    index,
                    ToolUse {
                        id: field("id"),
                        name,
                        json: String::new(),
                        start_input: block.get("input").cloned(),
                    },
                );
                None
            }
            // Thinking and server-side blocks are not part of the answer.
            _ => None,
        }
    }

    fn delta(
        &mut self,
        index: Option<usize>,
        delta: Option<Value>,
    ) -> Option<Result<ModelEvent, LlmError>> {
        let delta = delta?;
        let text_of = |field: &str| delta.get(field).and_then(Value::as_str).unwrap_or("");
        match delta.get("type").and_then(Value::as_str) {
            Some("text_delta") => {
                let text = text_of("text");
                (!text.is_empty()).then(|| Ok(ModelEvent::Text(text.to_string())))
            }
            Some("input_json_delta") => {
                let tool = index.and_then(|i| self.tool_uses.get_mut(&i));
                match tool {
                    Some(tool) => {
                        tool.json.push_str(text_of("partial_json"));
                        None
                    }
                    None => Some(Err(LlmError::Malformed(format!(
                        "input_json_delta for block {index:?}, which is not a tool_use block"
                    )))),
                }
            }
            // `thinking_delta`, `signature_delta`, `citations_delta`, …
            _ => None,
        }
    }

    fn finish(&mut self) -> Result<ModelEvent, LlmError> {
        let reply = std::mem::take(self);
        let tool_calls = reply
            .tool_uses
            .into_iter()
            .map(|(index, tool)| {
                let arguments = if !tool.json.trim().is_empty() {
                    tool.json
                } else {
                    match tool.start_input {
                        Some(Value::Object(map)) if !map.is_empty() => {
                            Value::Object(map).to_string()
                        }
                        _ => "{}".to_string(),
                    }
                };
                ToolCall {
                    id: if tool.id.is_empty() {
                        format!("toolu_{index}")
                    } else {
                        tool.id
                    },
                    name: tool.name,
                    arguments,
                }
            })
            .collect();
        let usage =
            (reply.prompt_tokens.is_some() || reply.completion_tokens.is_some()).then(|| Usage {
                prompt_tokens: reply.prompt_tokens.unwrap_or(0),
                completion_tokens: reply.completion_tokens.unwrap_or(0),
                ..Usage::default()
            });
        Ok(ModelEvent::Finished {
            tool_calls,
            finish_reason: reply.stop_reason.as_deref().map(finish_reason),
            usage,
        })
    }
}

/// Anthropic's `stop_reason` in OpenAI's words, which the agent reads: a reply cut at a limit is
/// `length`.
fn finish_reason(stop_reason: &str) -> String {
    match stop_reason {
        "end_turn" | "stop_sequence" => "stop",
        "max_tokens" | "model_context_window_exceeded" => "length",
        "tool_use" => "tool_calls",
        "refusal" => "content_filter",
        other => other,
    }
    .to_string()
}

impl Decoder for Reply {
    fn event(&mut self, data: &str) -> Option<Result<ModelEvent, LlmError>> {
        let data = data.trim();
        if data.is_empty() {
            return None;
        }
        self.data(data)
    }

    fn end(&mut self) -> Result<ModelEvent, LlmError> {
        // The stop reason comes in the last `message_delta`; only `message_stop` may be missing.
        if self.stop_reason.is_some() {
            self.finish()
        } else {
            Err(LlmError::Stream(
                "the stream ended before message_stop".into(),
            ))
        }
    }
}

#[cfg(test)]
mod tests;
