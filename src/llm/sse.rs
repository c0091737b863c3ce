//! The pure part of the OpenAI streaming protocol: the request body, lenient chunk types, and the
//! accumulator that joins tool-call fragments by index. No I/O here, so it is tested on strings.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::shape::{shape, MessageStyle};
use super::{LlmError, ModelRequest};
use crate::types::{Message, Role, ToolCall, ToolSpec, Usage};

/// The request body of `POST /chat/completions` (streamed, usage included), its messages laid
/// out in `style`, as the JSON bytes to send. Only the fields of OpenAI's wire are written:
/// `Message::hook` and `Message::injection` are hookwire's own and never leave the process.
///
/// Written from the request's own strings (no `serde_json::Value` built and dropped per call)
/// into a buffer sized for its texts up front (tools' schemas are guessed): building the body as
/// a `Value` and growing its buffer were a tenth of what a chat costs once
/// (docs/performance.md).
pub(super) fn request_body(
    request: &ModelRequest,
    style: MessageStyle,
) -> Result<Vec<u8>, serde_json::Error> {
    let shaped = shape(&request.messages, style);
    let body = RequestBody {
        model: &request.model,
        messages: shaped.iter().map(|m| BodyMessage::new(m, style)).collect(),
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        max_tokens: request.max_tokens,
        tools: request.tools.iter().map(BodyTool::new).collect(),
        // OpenAI's default, said out loud: the model decides whether to call (the `native`
        // planning call relies on it; some servers default otherwise).
        tool_choice: (!request.tools.is_empty()).then_some("auto"),
    };
    let mut bytes = Vec::with_capacity(body_size_hint(&shaped, request));
    serde_json::to_writer(&mut bytes, &body)?;
    Ok(bytes)
}

/// About the body's length: its texts, and room for the JSON around them and for escapes.
fn body_size_hint(messages: &[Message], request: &ModelRequest) -> usize {
    let texts: usize = messages
        .iter()
        .map(|m| {
            m.content.len()
                + 64
                + m.tool_calls
                    .iter()
                    .map(|c| c.id.len() + c.name.len() + c.arguments.len() + 64)
                    .sum::<usize>()
        })
        .sum();
    let tools: usize = request
        .tools
        .iter()
        .map(|t| t.name.len() + t.description.len() + 256)
        .sum();
    (texts + tools + request.model.len() + 128) * 9 / 8
}

#[derive(Serialize)]
struct RequestBody<'a> {
    model: &'a str,
    messages: Vec<BodyMessage<'a>>,
    stream: bool,
    stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    /// None at all for the planning round and direct calls.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<BodyTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct BodyMessage<'a> {
    role: &'static str,
    /// `null` for an assistant message that only called tools, in strict style.
    content: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<BodyCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<Cow<'a, str>>,
}

impl<'a> BodyMessage<'a> {
    fn new(message: &'a Message, style: MessageStyle) -> Self {
        let calls_tools = message.role == Role::Assistant && !message.tool_calls.is_empty();
        // What OpenAI itself returns for calls without text; some templates render the calls
        // only when the content is null (DeepSeek-R1's).
        let null_content = calls_tools && style.is_strict() && message.content.is_empty();
        let tool_calls = if calls_tools {
            message
                .tool_calls
                .iter()
                .map(|call| BodyCall {
                    id: wire_id(&call.id, style),
                    kind: "function",
                    function: BodyFunction {
                        name: &call.name,
                        arguments: &call.arguments,
                    },
                })
                .collect()
        } else {
            Vec::new()
        };
        BodyMessage {
            role: message.role.as_str(),
            content: (!null_content).then_some(message.content.as_str()),
            tool_calls,
            tool_call_id: message.tool_call_id.as_deref().map(|id| wire_id(id, style)),
        }
    }
}

#[derive(Serialize)]
struct BodyCall<'a> {
    id: Cow<'a, str>,
    #[serde(rename = "type")]
    kind: &'static str,
    function: BodyFunction<'a>,
}

#[derive(Serialize)]
struct BodyFunction<'a> {
    name: &'a str,
    arguments: &'a str,
}

#[derive(Serialize)]
struct BodyTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: BodyToolFunction<'a>,
}

#[derive(Serialize)]
struct BodyToolFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

impl<'a> BodyTool<'a> {
    fn new(tool: &'a ToolSpec) -> Self {
        BodyTool {
            kind: "function",
            function: BodyToolFunction {
                name: &tool.name,
                description: &tool.description,
                parameters: &tool.parameters,
            },
        }
    }
}

/// A tool call's id as sent in `style`. Strict: 9 letters and digits, what Mistral's templates
/// demand (llama.cpp's ids have 32); an id that already is one stays, any other becomes 9
/// characters of its SHA-256, so a call and its result keep matching in every request without
/// any state. The chat, its hooks and the client keep the model's own ids: only the wire
/// changes.
fn wire_id(id: &str, style: MessageStyle) -> Cow<'_, str> {
    let fits = id.len() == 9 && id.bytes().all(|b| b.is_ascii_alphanumeric());
    if !style.is_strict() || fits {
        return Cow::Borrowed(id);
    }
    use sha2::Digest;
    const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    sha2::Sha256::digest(id.as_bytes())
        .iter()
        .take(9)
        .map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()] as char)
        .collect()
}

/// One `chat.completion.chunk`, accepting what real servers send: missing `object`, empty or
/// null `finish_reason`, `choices: []` with usage only, tool deltas without `index`.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Chunk {
    #[serde(default)]
    pub(crate) choices: Vec<Choice>,
    #[serde(default)]
    pub(crate) usage: Option<ChunkUsage>,
    /// Some servers report failures as an event.
    #[serde(default)]
    pub(crate) error: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct Choice {
    #[serde(default)]
    pub(crate) delta: Delta,
    #[serde(default)]
    pub(crate) finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct Delta {
    #[serde(default)]
    pub(crate) content: Option<String>,
    #[serde(default)]
    pub(crate) tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct ToolCallDelta {
    #[serde(default)]
    pub(crate) index: Option<usize>,
    #[serde(default)]
    pub(crate) id: Option<String>,
    #[serde(default)]
    pub(crate) function: Option<FunctionDelta>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct FunctionDelta {
    #[serde(default)]
    pub(crate) name: Option<String>,
    #[serde(default)]
    pub(crate) arguments: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct ChunkUsage {
    #[serde(default)]
    pub(crate) prompt_tokens: u64,
    #[serde(default)]
    pub(crate) completion_tokens: u64,
}

/// Parses one event's `data`; the error says what was wrong, with a short excerpt.
pub(super) fn parse_chunk(data: &str) -> Result<Chunk, LlmError> {
    serde_json::from_str(data).map_err(|e| {
        let excerpt: String = data.chars().take(120).collect();
        LlmError::Malformed(format!("{e} in {excerpt:?}"))
    })
}

#[derive(Debug, Default)]
struct PartialCall {
    id: Option<String>,
    name: String,
    arguments: String,
}

/// Collects a streamed reply: hands out text deltas, joins tool calls by index, keeps the finish
/// reason and usage.
#[derive(Debug, Default)]
pub(super) struct ChunkAccumulator {
    calls: BTreeMap<usize, PartialCall>,
    last_index: usize,
    pub(crate) finish_reason: Option<String>,
    pub(crate) usage: Option<Usage>,
}

impl ChunkAccumulator {
    /// Takes one chunk; returns its text, if any.
    pub(super) fn push(&mut self, chunk: Chunk) -> Option<String> {
        if let Some(usage) = chunk.usage {
            self.usage = Some(Usage {
                prompt_tokens: usage.prompt_tokens,
                completion_tokens: usage.completion_tokens,
                ..Usage::default()
            });
        }
        let mut text = String::new();
        for choice in chunk.choices {
            if let Some(reason) = choice.finish_reason.filter(|r| !r.is_empty()) {
                self.finish_reason = Some(reason);
            }
            if let Some(content) = choice.delta.content {
                text.push_str(&content);
            }
            for delta in choice.delta.tool_calls.unwrap_or_default() {
                // A fragment without an index continues the call before it.
                let index = delta.index.unwrap_or(self.last_index);
                self.last_index = index;
                let call = self.calls.entry(index).or_default();
                if let Some(id) = delta.id.filter(|id| !id.is_empty()) {
                    call.id = Some(id);
                }
                if let Some(function) = delta.function {
                    if let Some(name) = function.name {
                        call.name.push_str(&name);
                    }
                    if let Some(arguments) = function.arguments {
                        call.arguments.push_str(&arguments);
                    }
                }
            }
        }
        (!text.is_empty()).then_some(text)
    }

    /// Whether the reply said it was finished (some servers end without `[DONE]`).
    pub(super) fn saw_finish(&self) -> bool {
        self.finish_reason.is_some()
    }

    /// The tool calls in index order.
    pub(super) fn into_tool_calls(self) -> Result<Vec<ToolCall>, LlmError> {
        self.calls
            .into_iter()
            .map(|(index, call)| {
                if call.name.is_empty() {
                    return Err(LlmError::Malformed(format!(
                        "tool call {index} has no function name"
                    )));
                }
                Ok(ToolCall {
                    id: call.id.unwrap_or_else(|| format!("call_{index}")),
                    name: call.name,
                    arguments: call.arguments,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The body as JSON, as the model API reads it.
    fn body_json(request: &ModelRequest, style: MessageStyle) -> Value {
        serde_json::from_slice(&request_body(request, style).unwrap()).unwrap()
    }

    fn feed(events: &[&str]) -> (String, ChunkAccumulator) {
        let mut acc = ChunkAccumulator::default();
        let mut text = String::new();
        for event in events {
            if let Some(delta) = acc.push(parse_chunk(event).unwrap()) {
                text.push_str(&delta);
            }
        }
        (text, acc)
    }

    #[test]
    fn text_usage_and_finish_reason() {
        let (text, acc) = feed(&[
            r#"{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#,
            r#"{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}"#,
            r#"{"choices":[{"delta":{"content":"lo","reasoning_content":"hmm"},"finish_reason":""}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}"#,
        ]);
        assert_eq!(text, "Hello");
        assert_eq!(acc.finish_reason.as_deref(), Some("stop"));
        assert_eq!(
            acc.usage,
            Some(Usage {
                prompt_tokens: 9,
                completion_tokens: 2,
                ..Usage::default()
            })
        );
        assert_eq!(acc.into_tool_calls().unwrap(), vec![]);
    }

    #[test]
    fn parallel_tool_calls_are_joined_by_index() {
        let (_, acc) = feed(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"read_file","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"list_dir","arguments":"{\"pa"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"a.md\"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"th\":\".\"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
        ]);
        let calls = acc.into_tool_calls().unwrap();
        assert_eq!(
            calls,
            vec![
                ToolCall {
                    id: "call_a".into(),
                    name: "read_file".into(),
                    arguments: r#"{"path":"a.md"}"#.into()
                },
                ToolCall {
                    id: "call_b".into(),
                    name: "list_dir".into(),
                    arguments: r#"{"path":"."}"#.into()
                },
            ]
        );
    }

    #[test]
    fn fragments_without_index_or_id() {
        let (_, acc) = feed(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"function":{"name":"list_dir","arguments":"{"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"}"}}]}}]}"#,
        ]);
        let calls = acc.into_tool_calls().unwrap();
        assert_eq!(
            calls,
            vec![ToolCall {
                id: "call_0".into(),
                name: "list_dir".into(),
                arguments: "{}".into()
            }]
        );
    }

    #[test]
    fn a_call_without_a_name_is_malformed() {
        let (_, acc) = feed(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}}]}"#,
        ]);
        assert!(matches!(acc.into_tool_calls(), Err(LlmError::Malformed(_))));
    }

    #[test]
    fn malformed_json_says_where() {
        let Err(LlmError::Malformed(message)) = parse_chunk(r#"{"choices": [oops"#) else {
            panic!()
        };
        assert!(message.contains("oops"), "{message}");
    }

    #[test]
    fn strict_tool_call_ids_are_nine_letters_or_digits() {
        let strict = MessageStyle::Strict { system_role: true };
        let long = "Xq7Hd0mK2LpA9sT4vB6nC8eF1gJ3rW5y";
        let short = wire_id(long, strict);
        assert_eq!(short.len(), 9);
        assert!(short.bytes().all(|b| b.is_ascii_alphanumeric()), "{short}");
        assert_eq!(wire_id(long, strict), short, "the same in every request");
        assert_ne!(wire_id("call_2", strict), wire_id("call_1", strict));
        assert_eq!(wire_id("abc123XYZ", strict), "abc123XYZ");
        assert_eq!(wire_id(long, MessageStyle::OpenAi), long);
        let messages = [
            Message::assistant_with_tools(
                "",
                vec![crate::types::ToolCall {
                    id: long.into(),
                    name: "read_file".into(),
                    arguments: "{}".into(),
                }],
            ),
            Message::tool_result(long, "text"),
        ];
        let body = body_json(
            &ModelRequest {
                max_tokens: None,
                model: "m".into(),
                messages: messages.to_vec(),
                tools: Vec::new(),
            },
            strict,
        );
        assert_eq!(body["messages"][0]["tool_calls"][0]["id"], short.as_ref());
        assert_eq!(body["messages"][1]["tool_call_id"], short.as_ref());
    }

    #[test]
    fn request_body_shape() {
        let mut hooked = Message::system("be brief");
        hooked.hook = Some(crate::types::HookTag {
            name: "h".into(),
            skill: "s".into(),
            timing: "after_user_input".into(),
            sig: "x".into(),
        });
        hooked.injection = Some(3);
        let request = ModelRequest {
            max_tokens: None,
            model: "m".into(),
            messages: vec![
                hooked,
                Message::user("hi"),
                Message::assistant_with_tools(
                    "",
                    vec![ToolCall {
                        id: "c1".into(),
                        name: "read_file".into(),
                        arguments: "{}".into(),
                    }],
                ),
                Message::tool_result("c1", "text"),
            ],
            tools: vec![],
        };
        assert_eq!(
            body_json(&request, MessageStyle::OpenAi),
            json!({"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[
                {"role":"system","content":"be brief"},
                {"role":"user","content":"hi"},
                {"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"read_file","arguments":"{}"}}]},
                {"role":"tool","content":"text","tool_call_id":"c1"}
            ]})
        );
        // Strict: the system text first (it already is), calls without text have null content.
        let strict = body_json(&request, MessageStyle::Strict { system_role: true });
        assert_eq!(
            strict["messages"][0],
            json!({"role":"system","content":"be brief"})
        );
        assert_eq!(strict["messages"][2]["content"], Value::Null);
        let with_tools = ModelRequest {
            max_tokens: Some(50),
            tools: vec![ToolSpec {
                name: "t".into(),
                description: "d".into(),
                parameters: json!({"type":"object"}),
            }],
            ..request
        };
        let body = body_json(&with_tools, MessageStyle::OpenAi);
        assert_eq!(
            body["tools"],
            json!([{"type":"function","function":{"name":"t","description":"d","parameters":{"type":"object"}}}])
        );
        assert_eq!(body["tool_choice"], "auto");
        assert_eq!(body["max_tokens"], 50);
    }

    #[test]
    fn request_body_escapes_texts_and_needs_no_second_buffer() {
        // Prose as it comes: quotes, line breaks, a control character, non-ASCII letters.
        let text =
            "A line of \"quoted\" prose with ünïcode, then a new line.\n".repeat(40) + "\u{1}";
        let request = ModelRequest {
            max_tokens: None,
            model: "m".into(),
            messages: vec![Message::system(text.clone()), Message::user(text.clone())],
            tools: Vec::new(),
        };
        let bytes = request_body(&request, MessageStyle::OpenAi).unwrap();
        let body: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(body["messages"][0]["content"], text.as_str());
        assert_eq!(body["messages"][1]["content"], text.as_str());
        assert!(
            bytes.capacity() <= body_size_hint(&request.messages, &request),
            "the body grew past its hint: {} bytes",
            bytes.len()
        );
    }
}
