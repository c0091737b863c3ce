//! The wire: client frames in, server frames out (docs/protocol.md §3). All JSON of the chat
//! protocol lives here; the rest of the crate speaks Rust types.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::config::Limits;
use crate::types::ToolCall;
use crate::types::{ApprovalDecision, CompactTag, HookTag, Message, PendingCall, Resume, Role};
use crate::types::{ChatEvent, ErrorCode, HookMessage, MAX_DENY_REASON_CHARS};

/// JSON nesting deeper than this is refused before parsing.
pub(super) const MAX_JSON_DEPTH: usize = 64;

/// The longest `traceparent` / `conversation_id` a chat frame may carry.
const MAX_TRACE_FIELD_BYTES: usize = 256;

/// Session hooks one chat may carry.
pub(super) const MAX_SESSION_HOOKS: usize = 100;

// ─── client → server ───

/// A `chat` frame, validated.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct ChatFrame {
    /// `None` = the client sent none; the server makes one up.
    pub(crate) id: Option<String>,
    pub(crate) messages: Vec<Message>,
    pub(crate) input: String,
    pub(crate) skills: Option<Vec<String>>,
    pub(crate) enable_tools: bool,
    /// Session hooks the client stored from `session_hook` frames.
    pub(crate) session_hooks: Vec<Value>,
    /// A `compact` frame: compact `messages` on request; `input` is empty.
    pub(crate) compact_only: bool,
    /// A chat that goes on after `approval_required`; `input` is empty.
    pub(crate) resume: Option<Resume>,
    /// `hook_trace` frames for every hook run.
    pub(crate) trace: bool,
    /// `audio` frames of the answer, spoken (docs/protocol.md §18).
    pub(crate) voice: bool,
    /// A W3C `traceparent` the chat's span is the child of (PROTOCOL section 17); the upgrade
    /// request's when the frame has none.
    pub(crate) traceparent: Option<String>,
    /// The client's conversation, for `gen_ai.conversation.id`.
    pub(crate) conversation_id: Option<String>,
}

/// A client frame. A frame that is not valid is a value too, so it produces `bad_frame`.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum ClientFrame {
    Chat(ChatFrame),
    Cancel { id: Option<String> },
    Ping { id: Option<String> },
    Invalid { id: Option<String>, message: String },
}

impl ClientFrame {
    /// Parses one text frame, strictly (RFC 8259).
    pub(super) fn parse(text: &str, limits: &Limits) -> ClientFrame {
        if let Err(message) = check_depth(text) {
            return ClientFrame::Invalid { id: None, message };
        }
        let value: Value = match serde_json::from_str(text) {
            Ok(value) => value,
            Err(e) => {
                return ClientFrame::Invalid {
                    id: None,
                    message: format!("not valid JSON: {e}"),
                }
            }
        };
        let Value::Object(object) = value else {
            return ClientFrame::Invalid {
                id: None,
                message: "a frame must be a JSON object".into(),
            };
        };
        // The id of a bad frame is still echoed when it was a usable string.
        let echo_id = match object.get("id") {
            Some(Value::String(id)) if !id.is_empty() => Some(id.clone()),
            _ => None,
        };
        let invalid = |message: String| ClientFrame::Invalid {
            id: echo_id.clone(),
            message,
        };
        let kind = match object.get("type") {
            Some(Value::String(kind)) => kind.as_str(),
            Some(_) => return invalid("field \"type\" must be a string".into()),
            None => return invalid("missing field \"type\"".into()),
        };
        let id = match parse_id(&object) {
            Ok(id) => id,
            Err(message) => return invalid(message),
        };
        match kind {
            "chat" | "compact" => match parse_chat(&object, id, limits, kind == "compact") {
                Ok(chat) => ClientFrame::Chat(chat),
                Err(message) => invalid(message),
            },
            "cancel" => ClientFrame::Cancel { id },
            "ping" => ClientFrame::Ping { id },
            other => invalid(format!(
                "unknown frame type {other:?} (expected \"chat\", \"compact\", \"cancel\" or \"ping\")"
            )),
        }
    }
}

/// Refuses nesting deeper than [`MAX_JSON_DEPTH`] without building anything.
fn check_depth(text: &str) -> Result<(), String> {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for byte in text.bytes() {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                if depth > MAX_JSON_DEPTH {
                    return Err(format!("JSON nested deeper than {MAX_JSON_DEPTH} levels"));
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// `id` absent or null → `None`; a non-empty string → it; anything else → an error.
fn parse_id(object: &Map<String, Value>) -> Result<Option<String>, String> {
    match object.get("id") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(id)) if !id.is_empty() => Ok(Some(id.clone())),
        Some(Value::String(_)) => Err("field \"id\" must not be empty".into()),
        Some(_) => Err("field \"id\" must be a string".into()),
    }
}

/// A `chat` frame, or (`compact_only`) a `compact` frame, which has no `input`.
fn parse_chat(
    object: &Map<String, Value>,
    id: Option<String>,
    limits: &Limits,
    compact_only: bool,
) -> Result<ChatFrame, String> {
    let resume = parse_resume(object.get("resume"))?;
    if compact_only && resume.is_some() {
        return Err("a \"compact\" frame has no \"resume\"".into());
    }
    let input = match object.get("input") {
        _ if compact_only => String::new(),
        None | Some(Value::Null) if resume.is_some() => String::new(),
        Some(_) if resume.is_some() => {
            return Err(
                "a chat with \"resume\" has no \"input\": it goes on where it stopped".into(),
            )
        }
        Some(Value::String(input)) if input.is_empty() => {
            return Err("field \"input\" must not be empty".into())
        }
        Some(Value::String(input)) => input.clone(),
        Some(_) => return Err("field \"input\" must be a string".into()),
        None => return Err("missing field \"input\"".into()),
    };
    let chars = input.chars().count();
    if chars > limits.max_input_chars {
        return Err(format!(
            "field \"input\" is {chars} characters long; the limit is {}",
            limits.max_input_chars
        ));
    }
    let messages = match object.get("messages") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => {
            if items.len() > limits.max_history_messages {
                return Err(format!(
                    "field \"messages\" has {} messages; the limit is {}",
                    items.len(),
                    limits.max_history_messages
                ));
            }
            let messages: Vec<Message> = items
                .iter()
                .enumerate()
                .map(|(i, item)| parse_message(i, item))
                .collect::<Result<_, _>>()?;
            // A resumed chat's history may end with the calls that wait for the decisions.
            check_tool_answers(&messages, resume.is_some())?;
            messages
        }
        Some(_) => return Err("field \"messages\" must be an array".into()),
    };
    let skills = match object.get("skills") {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) => Some(
            items
                .iter()
                .map(|item| {
                    item.as_str()
                        .map(str::to_string)
                        .ok_or("field \"skills\" must be an array of strings")
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
        Some(_) => return Err("field \"skills\" must be an array of strings".into()),
    };
    let enable_tools = match object.get("enable_tools") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(flag)) => *flag,
        Some(_) => return Err("field \"enable_tools\" must be true or false".into()),
    };
    let trace = match object.get("trace") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(flag)) => *flag,
        Some(_) => return Err("field \"trace\" must be true or false".into()),
    };
    let voice = match object.get("voice") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(flag)) => *flag,
        Some(_) => return Err("field \"voice\" must be true or false".into()),
    };
    let optional_text = |name: &str| match object.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) if text.len() <= MAX_TRACE_FIELD_BYTES => Ok(Some(text.clone())),
        Some(Value::String(_)) => Err(format!(
            "field \"{name}\" is over {MAX_TRACE_FIELD_BYTES} bytes"
        )),
        Some(_) => Err(format!("field \"{name}\" must be a string")),
    };
    let traceparent = optional_text("traceparent")?;
    let conversation_id = optional_text("conversation_id")?;
    let session_hooks = match object.get("session_hooks") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) if items.len() > MAX_SESSION_HOOKS => {
            return Err(format!(
                "field \"session_hooks\" has {} hooks; the limit is {MAX_SESSION_HOOKS}",
                items.len()
            ))
        }
        Some(Value::Array(items)) if items.iter().all(Value::is_object) => items.clone(),
        Some(_) => return Err("field \"session_hooks\" must be an array of objects".into()),
    };
    Ok(ChatFrame {
        id,
        messages,
        input,
        skills,
        enable_tools,
        session_hooks,
        compact_only,
        resume,
        trace,
        voice,
        traceparent,
        conversation_id,
    })
}

/// `resume: {state, decisions: [{call_id, decision: "allow"|"deny", reason?}]}`.
fn parse_resume(value: Option<&Value>) -> Result<Option<Resume>, String> {
    let resume = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(resume)) => resume,
        Some(_) => return Err("field \"resume\" must be an object".into()),
    };
    let state = match resume.get("state") {
        Some(Value::String(state)) if !state.is_empty() => state.clone(),
        _ => return Err("field \"resume.state\" must be the state of an approval frame".into()),
    };
    let Some(Value::Array(items)) = resume.get("decisions") else {
        return Err("field \"resume.decisions\" must be an array".into());
    };
    let decisions = items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let field = |name: &str| item.get(name).and_then(Value::as_str);
            let call_id = field("call_id")
                .filter(|id| !id.is_empty())
                .ok_or_else(|| format!("resume.decisions[{i}].call_id must be a string"))?;
            let allow = match field("decision") {
                Some("allow") => true,
                Some("deny") => false,
                _ => {
                    return Err(format!(
                        "resume.decisions[{i}].decision must be \"allow\" or \"deny\""
                    ))
                }
            };
            let reason = match item.get("reason") {
                None | Some(Value::Null) => None,
                Some(Value::String(reason)) if reason.chars().count() > MAX_DENY_REASON_CHARS => {
                    return Err(format!(
                        "resume.decisions[{i}].reason is {} characters long; the limit is {MAX_DENY_REASON_CHARS}",
                        reason.chars().count()
                    ))
                }
                Some(Value::String(reason)) => Some(reason.clone()),
                Some(_) => return Err(format!("resume.decisions[{i}].reason must be a string")),
            };
            Ok(ApprovalDecision {
                call_id: call_id.to_string(),
                allow,
                reason,
            })
        })
        .collect::<Result<_, String>>()?;
    Ok(Some(Resume { state, decisions }))
}

/// Every `tool` message answers a call an earlier assistant message made, once; every call is
/// answered before the next user message (and, unless `open_tail`, before the end).
fn check_tool_answers(messages: &[Message], open_tail: bool) -> Result<(), String> {
    // The calls made and not yet answered, with where they were made, in order.
    let mut open: Vec<(&str, usize)> = Vec::new();
    let mut answered: std::collections::HashSet<&str> = std::collections::HashSet::new();
    let unanswered = |open: &[(&str, usize)], before: &str| {
        open.first().map(|(id, at)| {
            format!(
                "the tool call {id:?} of messages[{at}] has no tool message answering it {before}"
            )
        })
    };
    for (index, message) in messages.iter().enumerate() {
        match message.role {
            Role::Assistant => {
                for call in &message.tool_calls {
                    if open.iter().any(|(id, _)| *id == call.id)
                        || answered.contains(call.id.as_str())
                    {
                        return Err(format!(
                            "messages[{index}] repeats the tool call id {:?}",
                            call.id
                        ));
                    }
                    open.push((call.id.as_str(), index));
                }
            }
            Role::Tool => {
                let id = message.tool_call_id.as_deref().unwrap_or_default();
                match open.iter().position(|(open_id, _)| *open_id == id) {
                    Some(at) => {
                        open.remove(at);
                        answered.insert(id);
                    }
                    None if answered.contains(id) => {
                        return Err(format!(
                            "messages[{index}] answers the tool call {id:?} a second time"
                        ))
                    }
                    None => {
                        return Err(format!(
                            "messages[{index}] is a tool result for the call {id:?}, which no earlier assistant message made"
                        ))
                    }
                }
            }
            Role::User => {
                if let Some(error) = unanswered(
                    &open,
                    &format!("before the next user message (messages[{index}])"),
                ) {
                    return Err(error);
                }
            }
            Role::System => {}
        }
    }
    match unanswered(&open, "(the history ends first)") {
        Some(error) if !open_tail => Err(error),
        _ => Ok(()),
    }
}

fn parse_message(index: usize, item: &Value) -> Result<Message, String> {
    let Value::Object(object) = item else {
        return Err(format!("messages[{index}] must be an object"));
    };
    const ROLES: &str = "\"system\", \"user\", \"assistant\" or \"tool\"";
    let role = match object.get("role").and_then(Value::as_str) {
        Some("system") => Role::System,
        Some("user") => Role::User,
        Some("assistant") => Role::Assistant,
        Some("tool") => Role::Tool,
        Some(other) => {
            return Err(format!(
                "messages[{index}].role must be {ROLES}, got {other:?}"
            ))
        }
        None => return Err(format!("messages[{index}].role must be {ROLES}")),
    };
    let tool_calls = match (role, object.get("tool_calls")) {
        (_, None | Some(Value::Null)) => Vec::new(),
        (Role::Assistant, Some(Value::Array(calls))) => calls
            .iter()
            .enumerate()
            .map(|(at, call)| parse_tool_call(index, at, call))
            .collect::<Result<_, _>>()?,
        (Role::Assistant, Some(_)) => {
            return Err(format!("messages[{index}].tool_calls must be an array"))
        }
        (_, Some(_)) => {
            return Err(format!(
                "messages[{index}] has tool_calls, which only an assistant message may have"
            ))
        }
    };
    let content = match object.get("content") {
        Some(Value::String(content)) => content.clone(),
        // An assistant message that only calls tools, as OpenAI writes it.
        None | Some(Value::Null) if !tool_calls.is_empty() => String::new(),
        Some(_) => return Err(format!("messages[{index}].content must be a string")),
        None => return Err(format!("missing field messages[{index}].content")),
    };
    let mut message = Message::new(role, content);
    message.tool_calls = tool_calls;
    if role == Role::Tool {
        message.tool_call_id = match object.get("tool_call_id") {
            Some(Value::String(id)) if !id.is_empty() => Some(id.clone()),
            _ => {
                return Err(format!(
                    "messages[{index}].tool_call_id must name the call this tool message answers"
                ))
            }
        };
        message.tool_name = match object.get("name") {
            None | Some(Value::Null) => None,
            Some(Value::String(name)) => Some(name.clone()),
            Some(_) => return Err(format!("messages[{index}].name must be a string")),
        };
    }
    message.hook = match (role, parse_hook_tag(index, object.get("_hook"))) {
        (_, Ok(tag)) => tag,
        (Role::System, Err(why)) => return Err(why),
        // Only a system message's mark is checked (it is what makes it trusted); on any other
        // role it changes nothing, so a malformed one is no reason to refuse the chat.
        (_, Err(why)) => {
            tracing::warn!(
                role = role.as_str(),
                "ignored the mark of a history message: {why}"
            );
            None
        }
    };
    // Tool traffic is the model's and the tools' text, never a hook's message (PROTOCOL
    // section 13): a mark on it is dropped.
    if message.hook.is_some() && (role == Role::Tool || !message.tool_calls.is_empty()) {
        tracing::warn!(
            role = role.as_str(),
            "ignored the _hook mark of a tool call or result in the history"
        );
        message.hook = None;
    }
    // A summary is a user message (PROTOCOL section 13); a system message's `_compact` is kept
    // only so the history check can drop it by name (old signed summaries are not system text).
    message.compact = match (role, parse_compact_tag(index, object.get("_compact"))) {
        (Role::User | Role::System, tag) => tag?,
        (_, Ok(None)) => None,
        (_, _) => {
            tracing::warn!(
                role = role.as_str(),
                "ignored the _compact mark of a history message: only a summary (a user message) has one"
            );
            None
        }
    };
    Ok(message)
}

/// One call of an assistant message: `{id, type: "function", function: {name, arguments}}`,
/// `arguments` a JSON string (an object is taken too, and written as its text).
fn parse_tool_call(index: usize, at: usize, call: &Value) -> Result<ToolCall, String> {
    let field = format!("messages[{index}].tool_calls[{at}]");
    let id = call
        .get("id")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .ok_or_else(|| format!("{field}.id must be a non-empty string"))?;
    match call.get("type") {
        None | Some(Value::Null) => {}
        Some(Value::String(kind)) if kind == "function" => {}
        Some(_) => return Err(format!("{field}.type must be \"function\"")),
    }
    let function = call
        .get("function")
        .and_then(Value::as_object)
        .ok_or_else(|| format!("{field}.function must be an object"))?;
    let name = function
        .get("name")
        .and_then(Value::as_str)
        .filter(|name| !name.is_empty())
        .ok_or_else(|| format!("{field}.function.name must be a non-empty string"))?;
    let arguments = match function.get("arguments") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(arguments)) => arguments.clone(),
        Some(value @ Value::Object(_)) => value.to_string(),
        Some(_) => return Err(format!("{field}.function.arguments must be a JSON string")),
    };
    Ok(ToolCall {
        id: id.to_string(),
        name: name.to_string(),
        arguments,
    })
}

/// A summary's `_compact` mark: `{count}` (PROTOCOL section 13); an old `sig` is ignored.
fn parse_compact_tag(index: usize, value: Option<&Value>) -> Result<Option<CompactTag>, String> {
    let tag = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(tag)) => tag,
        Some(_) => return Err(format!("messages[{index}]._compact must be an object")),
    };
    let count = tag
        .get("count")
        .and_then(Value::as_u64)
        .and_then(|count| usize::try_from(count).ok())
        .ok_or_else(|| format!("messages[{index}]._compact.count must be a whole number"))?;
    Ok(Some(CompactTag { count }))
}

fn parse_hook_tag(index: usize, value: Option<&Value>) -> Result<Option<HookTag>, String> {
    let hook = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(hook)) => hook,
        Some(_) => return Err(format!("messages[{index}]._hook must be an object")),
    };
    let field = |name: &str, required: bool| -> Result<String, String> {
        match hook.get(name) {
            Some(Value::String(value)) => Ok(value.clone()),
            None | Some(Value::Null) if !required => Ok(String::new()),
            _ => Err(format!("messages[{index}]._hook.{name} must be a string")),
        }
    };
    Ok(Some(HookTag {
        name: field("name", true)?,
        skill: field("skill", true)?,
        timing: field("timing", true)?,
        sig: field("sig", false)?,
    }))
}

// ─── server → client ───

/// Every frame the server sends; each is exactly one serialized value.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum ServerFrame {
    Start {
        id: String,
        /// The server that runs the chat (README, protocol extensions); set by the session.
        #[serde(skip_serializing_if = "Option::is_none")]
        instance: Option<String>,
        /// The chat's trace (PROTOCOL section 17), when telemetry is on.
        #[serde(skip_serializing_if = "Option::is_none")]
        trace_id: Option<String>,
    },
    Hook {
        id: String,
        hook: HookRef,
        message: WireMessage,
    },
    Plan {
        id: String,
        content: String,
    },
    Approval {
        id: String,
        calls: Vec<PendingCall>,
        state: String,
    },
    HookTrace {
        id: String,
        event: String,
        hook: String,
        level: String,
        ms: f64,
        outcome: String,
        changed: Vec<String>,
    },
    Compact {
        id: String,
        count: usize,
        message: WireMessage,
        pinned: Vec<WireMessage>,
    },
    Text {
        id: String,
        delta: String,
    },
    /// One sentence of the answer, spoken: `data` is its audio in base64.
    Audio {
        id: String,
        seq: u64,
        format: String,
        text: String,
        data: String,
    },
    SessionHook {
        id: String,
        hook: Value,
    },
    ToolCall {
        id: String,
        call_id: String,
        name: String,
        arguments: Value,
    },
    ToolResult {
        id: String,
        call_id: String,
        name: String,
        content: String,
        is_error: bool,
    },
    Notice {
        id: String,
        level: &'static str,
        message: String,
        source: String,
    },
    Done {
        id: String,
        reason: &'static str,
        message: WireMessage,
        usage: WireUsage,
        /// What the chat added to the conversation (PROTOCOL section 13).
        turn: Vec<WireMessage>,
    },
    Error(ErrorFrame),
    Pong {
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(super) struct ErrorFrame {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) id: Option<String>,
    pub(crate) code: &'static str,
    pub(crate) message: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) fatal: bool,
    /// What a chat that failed after text or tools had added (PROTOCOL section 13).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) turn: Option<Vec<WireMessage>>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(super) struct HookRef {
    pub(crate) name: String,
    pub(crate) skill: String,
    pub(crate) timing: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(super) struct WireHookTag {
    pub(crate) name: String,
    pub(crate) skill: String,
    pub(crate) timing: String,
    pub(crate) sig: String,
}

/// A message as the client stores it in its history.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(super) struct WireMessage {
    pub(crate) role: &'static str,
    pub(crate) content: String,
    /// An assistant message's calls, as OpenAI writes them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) tool_calls: Vec<WireToolCall>,
    /// A tool message: the call it answers, and the tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tool_call_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) name: Option<String>,
    #[serde(rename = "_hook", skip_serializing_if = "Option::is_none")]
    pub(crate) hook: Option<WireHookTag>,
    #[serde(rename = "_compact", skip_serializing_if = "Option::is_none")]
    pub(crate) compact: Option<WireCompactTag>,
}

/// `{id, type: "function", function: {name, arguments}}`, `arguments` a JSON string.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(super) struct WireToolCall {
    pub(crate) id: String,
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) function: WireFunction,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(super) struct WireFunction {
    pub(crate) name: String,
    pub(crate) arguments: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(super) struct WireCompactTag {
    pub(crate) count: usize,
}

impl WireMessage {
    /// A history message as the client stores it, with its marks.
    fn from_message(message: Message) -> Self {
        WireMessage {
            role: message.role.as_str(),
            content: message.content,
            tool_calls: message
                .tool_calls
                .into_iter()
                .map(|call| WireToolCall {
                    id: call.id,
                    kind: "function",
                    function: WireFunction {
                        name: call.name,
                        arguments: call.arguments,
                    },
                })
                .collect(),
            tool_call_id: message.tool_call_id,
            name: message.tool_name,
            hook: message.hook.map(|tag| WireHookTag {
                name: tag.name,
                skill: tag.skill,
                timing: tag.timing,
                sig: tag.sig,
            }),
            compact: message
                .compact
                .map(|tag| WireCompactTag { count: tag.count }),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(super) struct WireUsage {
    pub(crate) prompt_tokens: u64,
    pub(crate) completion_tokens: u64,
    /// What hooks' model calls took of the totals (PROTOCOL section 15).
    pub(crate) hook_calls: u64,
    pub(crate) hook_prompt_tokens: u64,
    pub(crate) hook_completion_tokens: u64,
}

impl ServerFrame {
    pub(super) fn error(id: Option<String>, code: ErrorCode, message: impl Into<String>) -> Self {
        ServerFrame::Error(ErrorFrame {
            id,
            code: code.as_str(),
            message: message.into(),
            fatal: false,
            turn: None,
        })
    }

    /// The frame for a chat event of chat `id`.
    pub(super) fn from_event(id: &str, event: ChatEvent) -> Self {
        let id = id.to_string();
        match event {
            ChatEvent::Started { trace_id } => ServerFrame::Start {
                id,
                instance: None,
                trace_id,
            },
            ChatEvent::Text(delta) => ServerFrame::Text { id, delta },
            ChatEvent::Plan(content) => ServerFrame::Plan { id, content },
            ChatEvent::SessionHook(hook) => ServerFrame::SessionHook { id, hook },
            ChatEvent::ToolCall {
                call_id,
                name,
                arguments,
            } => ServerFrame::ToolCall {
                id,
                call_id,
                name,
                arguments,
            },
            ChatEvent::ToolResult {
                call_id,
                name,
                content,
                is_error,
            } => ServerFrame::ToolResult {
                id,
                call_id,
                name,
                content,
                is_error,
            },
            ChatEvent::Hook(HookMessage { role, content, tag }) => ServerFrame::Hook {
                id,
                hook: HookRef {
                    name: tag.name.clone(),
                    skill: tag.skill.clone(),
                    timing: tag.timing.clone(),
                },
                message: WireMessage {
                    role: role.as_str(),
                    content,
                    tool_calls: Vec::new(),
                    tool_call_id: None,
                    name: None,
                    hook: Some(WireHookTag {
                        name: tag.name,
                        skill: tag.skill,
                        timing: tag.timing,
                        sig: tag.sig,
                    }),
                    compact: None,
                },
            },
            ChatEvent::Approval { calls, state } => ServerFrame::Approval { id, calls, state },
            ChatEvent::HookTrace(trace) => ServerFrame::HookTrace {
                id,
                event: trace.event,
                hook: trace.hook,
                level: trace.level,
                ms: trace.ms,
                outcome: trace.outcome,
                changed: trace.changed,
            },
            ChatEvent::Compact {
                count,
                message,
                pinned,
            } => ServerFrame::Compact {
                id,
                count,
                message: WireMessage::from_message(message),
                pinned: pinned.into_iter().map(WireMessage::from_message).collect(),
            },
            ChatEvent::Notice {
                level,
                message,
                source,
            } => ServerFrame::Notice {
                id,
                level: level.as_str(),
                message,
                source,
            },
            ChatEvent::Done {
                reason,
                content,
                usage,
                turn,
            } => ServerFrame::Done {
                id,
                reason: reason.as_str(),
                message: WireMessage::from_message(Message::assistant(content)),
                usage: WireUsage {
                    prompt_tokens: usage.prompt_tokens,
                    completion_tokens: usage.completion_tokens,
                    hook_calls: usage.hook_calls,
                    hook_prompt_tokens: usage.hook_prompt_tokens,
                    hook_completion_tokens: usage.hook_completion_tokens,
                },
                turn: turn.into_iter().map(WireMessage::from_message).collect(),
            },
            ChatEvent::Error(error) => {
                let turn = (!error.turn.is_empty()).then(|| {
                    error
                        .turn
                        .into_iter()
                        .map(WireMessage::from_message)
                        .collect()
                });
                let mut frame = ServerFrame::error(Some(id), error.code, error.message);
                if let ServerFrame::Error(frame) = &mut frame {
                    frame.turn = turn;
                }
                frame
            }
        }
    }

    /// This frame with `instance` set, when it is a `start` frame (other frames do not carry it).
    pub(super) fn with_instance(mut self, served_by: &str) -> Self {
        if let ServerFrame::Start { instance, .. } = &mut self {
            *instance = Some(served_by.to_string());
        }
        self
    }

    pub(super) fn to_json(&self) -> String {
        // Serializing these types cannot fail: no maps with non-string keys, no custom impls.
        serde_json::to_string(self).unwrap_or_else(|e| {
            format!(r#"{{"type":"error","code":"internal","message":"cannot encode frame: {e}"}}"#)
        })
    }
}

#[cfg(test)]
mod tests;
