//! Client frames in: their typed shape (what the published schema describes) and the strict
//! parser the session uses, which also checks the limits and the history (its messages are in
//! `history`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::history::{check_tool_answers, parse_message, HistoryMessage};
use super::{MAX_JSON_DEPTH, MAX_SESSION_HOOKS, MAX_TRACE_FIELD_BYTES};
use crate::config::Limits;
use crate::types::{ApprovalDecision, Message, Resume, MAX_DENY_REASON_CHARS};

// ─── the typed shape (docs/schema/frames/client.json) ───

/// A frame a client sends. The server also checks what a schema cannot say: the limits
/// (`limits.*`), that every tool call of `messages` is answered, and the signatures of hook
/// messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
#[schemars(title = "hookwire client frame")]
pub(crate) enum WireClientFrame {
    /// Starts a chat: `input` after `messages`, or (with `resume`) goes on after an approval.
    Chat(ChatPayload),
    /// Compacts `messages` on request; the answer is a `compact` frame and `done`.
    Compact(ChatOptions),
    /// Stops the running chat.
    Cancel(IdPayload),
    /// Answered by `pong` with the same `id`.
    Ping(IdPayload),
}

/// A `chat` frame.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct ChatPayload {
    /// The user's text; required (and not empty) unless `resume` is set, absent when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub(crate) input: Option<String>,
    /// Goes on after an `approval` frame with the person's decisions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) resume: Option<ResumePayload>,
    #[serde(flatten)]
    pub(crate) options: ChatOptions,
}

/// The fields a `chat` and a `compact` frame share.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub(crate) struct ChatOptions {
    /// The chat's id, echoed on every frame of the chat; the server makes one up when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub(crate) id: Option<String>,
    /// The conversation so far, as the client stored it from `done.turn` and the other frames.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) messages: Option<Vec<HistoryMessage>>,
    /// Skill names; absent = every skill.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) skills: Option<Vec<String>>,
    /// Absent = true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) enable_tools: Option<bool>,
    /// Session hooks the client stored from `session_hook` frames, sent back as received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = MAX_SESSION_HOOKS))]
    pub(crate) session_hooks: Option<Vec<Map<String, Value>>>,
    /// `hook_trace` frames for every hook run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) trace: Option<bool>,
    /// `audio` frames of the answer, spoken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) voice: Option<bool>,
    /// A W3C `traceparent` the chat's span is the child of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = MAX_TRACE_FIELD_BYTES))]
    pub(crate) traceparent: Option<String>,
    /// The client's conversation, for `gen_ai.conversation.id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = MAX_TRACE_FIELD_BYTES))]
    pub(crate) conversation_id: Option<String>,
}

/// A `cancel` or `ping` frame.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub(crate) struct IdPayload {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub(crate) id: Option<String>,
}

/// `resume`: the `state` of the `approval` frame and a decision per pending call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct ResumePayload {
    #[schemars(length(min = 1))]
    pub(crate) state: String,
    pub(crate) decisions: Vec<DecisionPayload>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct DecisionPayload {
    #[schemars(length(min = 1))]
    pub(crate) call_id: String,
    pub(crate) decision: Decision,
    /// Why a call was denied; it reaches the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = MAX_DENY_REASON_CHARS))]
    pub(crate) reason: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Decision {
    Allow,
    Deny,
}

// ─── the parser ───

/// A `chat` frame, validated.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ChatFrame {
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
    /// A W3C `traceparent` the chat's span is the child of (docs/protocol.md §17); the upgrade
    /// request's when the frame has none.
    pub(crate) traceparent: Option<String>,
    /// The client's conversation, for `gen_ai.conversation.id`.
    pub(crate) conversation_id: Option<String>,
}

/// A client frame. A frame that is not valid is a value too, so it produces `bad_frame`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ClientFrame {
    Chat(ChatFrame),
    Cancel { id: Option<String> },
    Ping { id: Option<String> },
    Invalid { id: Option<String>, message: String },
}

impl ClientFrame {
    /// Parses one text frame, strictly (RFC 8259).
    pub(crate) fn parse(text: &str, limits: &Limits) -> ClientFrame {
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
