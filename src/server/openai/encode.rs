//! The chat as OpenAI's `chat.completion.chunk`s (streaming) or one `chat.completion`: only the
//! answer's text streams; server tools and hooks run inside. A call of a client tool is a
//! `tool_calls` delta and `finish_reason: "tool_calls"`. A failed chat is an `error` object, the
//! way OpenAI's API reports a failure mid-stream (its SDKs raise it).

use serde::Serialize;
use serde_json::Value;

use super::super::wire::{Encoded, WireEncoder};
use crate::types::{ChatError, ChatEvent, DoneReason, Usage};

/// What one completion is, for every chunk.
pub(crate) struct Completion {
    /// `chatcmpl-…`.
    pub(crate) id: String,
    pub(crate) model: String,
    pub(crate) created: u64,
    /// The client's tools: their calls are what the client gets.
    pub(crate) client_tools: Vec<String>,
}

/// Streaming: each item one SSE event's data (a chunk's JSON, or `[DONE]`).
pub(crate) struct ChunkEncoder {
    completion: Completion,
    include_usage: bool,
    /// Client calls sent so far (their `index`).
    calls: usize,
    /// A text chunk's JSON before and after its delta's string: a streamed token is its
    /// delta written between them (every chat's hot path), not a chunk built as a value.
    text_chunk: Option<(String, String)>,
}

/// Not streaming: one item at the end, the `chat.completion` (or the error).
pub(crate) struct WholeEncoder {
    completion: Completion,
    text: String,
    calls: Vec<Value>,
}

/// What a whole answer became: the completion's JSON, or the chat's error.
pub(crate) enum Whole {
    Completion(Value),
    Failed(ChatError),
}

#[derive(Serialize)]
struct Chunk<'a> {
    id: &'a str,
    object: &'static str,
    created: u64,
    model: &'a str,
    choices: Vec<ChunkChoice>,
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<UsageFields>,
}

#[derive(Serialize)]
struct ChunkChoice {
    index: u32,
    delta: Value,
    finish_reason: Option<&'static str>,
}

#[derive(Serialize)]
struct UsageFields {
    prompt_tokens: u64,
    completion_tokens: u64,
    total_tokens: u64,
}

impl From<&Usage> for UsageFields {
    fn from(usage: &Usage) -> Self {
        Self {
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
            total_tokens: usage.prompt_tokens + usage.completion_tokens,
        }
    }
}

/// `finish_reason` of a chat's end.
fn finish_reason(reason: DoneReason) -> &'static str {
    match reason {
        DoneReason::ToolCalls => "tool_calls",
        DoneReason::Length | DoneReason::MaxTokens => "length",
        _ => "stop",
    }
}

/// OpenAI's error object.
fn error_json(error: &ChatError) -> String {
    serde_json::json!({"error": {"message": error.message, "type": "server_error",
                                 "code": error.code.as_str()}})
    .to_string()
}

impl Completion {
    /// A client call as OpenAI writes one.
    fn call(&self, index: usize, call_id: &str, name: &str, arguments: &Value) -> Value {
        serde_json::json!({"index": index, "id": call_id, "type": "function",
                           "function": {"name": name, "arguments": arguments.to_string()}})
    }

    fn is_client_call(&self, name: &str) -> bool {
        self.client_tools.iter().any(|tool| tool == name)
    }
}

impl ChunkEncoder {
    pub(crate) fn new(completion: Completion, include_usage: bool) -> Self {
        let mut encoder = Self {
            completion,
            include_usage,
            calls: 0,
            text_chunk: None,
        };
        encoder.text_chunk = encoder.text_chunk_around();
        encoder
    }

    /// A text chunk as [`ChunkEncoder::chunk`] writes it, cut around its delta's string: one
    /// truth for both ways of writing it. The delta comes after the id and the model, so its
    /// string is the last place the stand-in appears.
    fn text_chunk_around(&self) -> Option<(String, String)> {
        const STAND_IN: &str = "\u{0}delta\u{0}";
        let whole = self.chunk(serde_json::json!({"content": STAND_IN}), None);
        let quoted = serde_json::to_string(STAND_IN).unwrap_or_default();
        let at = whole.rfind(&quoted)?;
        Some((
            whole[..at].to_string(),
            whole[at + quoted.len()..].to_string(),
        ))
    }

    /// A streamed token's chunk.
    fn text(&self, delta: &str) -> String {
        let Some((before, after)) = &self.text_chunk else {
            return self.chunk(serde_json::json!({"content": delta}), None);
        };
        let delta = serde_json::to_string(delta).unwrap_or_default();
        let mut chunk = String::with_capacity(before.len() + delta.len() + after.len());
        chunk.push_str(before);
        chunk.push_str(&delta);
        chunk.push_str(after);
        chunk
    }

    fn chunk(&self, delta: Value, finish: Option<&'static str>) -> String {
        let chunk = Chunk {
            id: &self.completion.id,
            object: "chat.completion.chunk",
            created: self.completion.created,
            model: &self.completion.model,
            choices: vec![ChunkChoice {
                index: 0,
                delta,
                finish_reason: finish,
            }],
            usage: None,
        };
        serde_json::to_string(&chunk).unwrap_or_default()
    }

    fn usage_chunk(&self, usage: &Usage) -> String {
        let chunk = Chunk {
            id: &self.completion.id,
            object: "chat.completion.chunk",
            created: self.completion.created,
            model: &self.completion.model,
            choices: Vec::new(),
            usage: Some(usage.into()),
        };
        serde_json::to_string(&chunk).unwrap_or_default()
    }
}

impl WireEncoder for ChunkEncoder {
    type Item = String;

    fn encode(&mut self, event: ChatEvent) -> Encoded<String> {
        match event {
            ChatEvent::Started { .. } => Encoded::One(self.chunk(
                serde_json::json!({"role": "assistant", "content": ""}),
                None,
            )),
            ChatEvent::Text(delta) if !delta.is_empty() => Encoded::One(self.text(&delta)),
            ChatEvent::ToolCall {
                call_id,
                name,
                arguments,
            } if self.completion.is_client_call(&name) => {
                let call = self
                    .completion
                    .call(self.calls, &call_id, &name, &arguments);
                self.calls += 1;
                Encoded::One(self.chunk(serde_json::json!({"tool_calls": [call]}), None))
            }
            ChatEvent::Done { reason, usage, .. } => {
                let mut items =
                    vec![self.chunk(serde_json::json!({}), Some(finish_reason(reason)))];
                if self.include_usage {
                    items.push(self.usage_chunk(&usage));
                }
                items.push("[DONE]".to_string());
                Encoded::Many(items)
            }
            ChatEvent::Error(error) => Encoded::One(error_json(&error)),
            _ => Encoded::None,
        }
    }
}

impl WholeEncoder {
    pub(crate) fn new(completion: Completion) -> Self {
        Self {
            completion,
            text: String::new(),
            calls: Vec::new(),
        }
    }
}

impl WireEncoder for WholeEncoder {
    type Item = Whole;

    fn encode(&mut self, event: ChatEvent) -> Encoded<Whole> {
        match event {
            ChatEvent::Text(delta) => self.text.push_str(&delta),
            ChatEvent::ToolCall {
                call_id,
                name,
                arguments,
            } if self.completion.is_client_call(&name) => {
                let mut call = self
                    .completion
                    .call(self.calls.len(), &call_id, &name, &arguments);
                if let Some(call) = call.as_object_mut() {
                    call.remove("index");
                }
                self.calls.push(call);
            }
            ChatEvent::Done { reason, usage, .. } => {
                let mut message = serde_json::json!({"role": "assistant", "content": self.text});
                if !self.calls.is_empty() {
                    message["tool_calls"] = Value::Array(std::mem::take(&mut self.calls));
                }
                let usage = UsageFields::from(&usage);
                return Encoded::One(Whole::Completion(serde_json::json!({
                    "id": self.completion.id,
                    "object": "chat.completion",
                    "created": self.completion.created,
                    "model": self.completion.model,
                    "choices": [{"index": 0, "message": message,
                                 "finish_reason": finish_reason(reason)}],
                    "usage": usage,
                })));
            }
            ChatEvent::Error(error) => return Encoded::One(Whole::Failed(error)),
            _ => {}
        }
        Encoded::None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoder(model: &str) -> ChunkEncoder {
        let completion = Completion {
            id: "chatcmpl-1".into(),
            model: model.into(),
            created: 1_700_000_000,
            client_tools: Vec::new(),
        };
        ChunkEncoder::new(completion, false)
    }

    /// A streamed token's chunk is written from a template cut out of the chunk itself: for any
    /// text (quotes, line breaks, control characters, emoji), and whatever the model's name,
    /// the stand-in included, it is the chunk built as a value.
    #[test]
    fn a_text_chunk_is_the_chunk_built_as_a_value() {
        for model in ["local", "a \"quoted\" model", "\u{0}delta\u{0}"] {
            let encoder = encoder(model);
            assert!(encoder.text_chunk.is_some(), "no template for {model:?}");
            for delta in [
                "Hi",
                " there",
                "say \"x\"\n",
                "\u{0}",
                "ünï 😀",
                "\\",
                "</script>",
            ] {
                let built = encoder.chunk(serde_json::json!({"content": delta}), None);
                assert_eq!(encoder.text(delta), built, "{model:?} {delta:?}");
                let parsed: Value = serde_json::from_str(&encoder.text(delta)).unwrap();
                assert_eq!(parsed["choices"][0]["delta"]["content"], delta);
                assert_eq!(parsed["model"], model);
            }
        }
    }
}
