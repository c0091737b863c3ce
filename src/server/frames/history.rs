//! The history a `chat` frame carries: its typed shape and the strict reading of each message
//! (roles, tool calls and their answers, the `_hook` and `_compact` marks).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::message::ToolCallKind;
use crate::types::ToolCall;
use crate::types::{CompactTag, HookTag, Message, Role};

/// One message of `messages`, in the OpenAI chat shape with hookwire's marks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct HistoryMessage {
    pub(crate) role: Role,
    /// May be null (or absent) only on an assistant message that calls tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) content: Option<String>,
    /// An assistant message's calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) tool_calls: Option<Vec<HistoryToolCall>>,
    /// A tool message: the call it answers (required on one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) tool_call_id: Option<String>,
    /// A tool message: the tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) name: Option<String>,
    /// A persistent hook message's mark, as the server sent it (signed when a secret is set).
    #[serde(rename = "_hook", default, skip_serializing_if = "Option::is_none")]
    pub(crate) hook: Option<HistoryHookTag>,
    /// A compaction summary's mark.
    #[serde(rename = "_compact", default, skip_serializing_if = "Option::is_none")]
    pub(crate) compact: Option<HistoryCompactTag>,
}

/// `{id, type: "function", function: {name, arguments}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct HistoryToolCall {
    #[schemars(length(min = 1))]
    pub(crate) id: String,
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub(crate) kind: Option<ToolCallKind>,
    pub(crate) function: HistoryFunction,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct HistoryFunction {
    #[schemars(length(min = 1))]
    pub(crate) name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) arguments: Option<Arguments>,
}

/// A call's arguments: their JSON text, as OpenAI writes them (an object is taken too).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum Arguments {
    Text(String),
    Object(Map<String, Value>),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct HistoryHookTag {
    pub(crate) name: String,
    pub(crate) skill: String,
    pub(crate) timing: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) sig: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct HistoryCompactTag {
    pub(crate) count: u64,
}

/// Every `tool` message answers a call an earlier assistant message made, once; every call is
/// answered before the next user message (and, unless `open_tail`, before the end). Linear in
/// the number of calls: a history may carry thousands.
pub(super) fn check_tool_answers(messages: &[Message], open_tail: bool) -> Result<(), String> {
    use std::collections::{HashMap, HashSet};
    // The calls made and not yet answered, with the place of the message that made them.
    let mut open: HashMap<&str, usize> = HashMap::new();
    let mut answered: HashSet<&str> = HashSet::new();
    // The first call left open (the earliest message, then the call's order in it).
    let unanswered = |open: &HashMap<&str, usize>, before: &str| {
        let at = *open.values().min()?;
        let id = messages[at]
            .tool_calls
            .iter()
            .map(|c| c.id.as_str())
            .find(|id| open.contains_key(id))?;
        Some(format!(
            "the tool call {id:?} of messages[{at}] has no tool message answering it {before}"
        ))
    };
    for (index, message) in messages.iter().enumerate() {
        match message.role {
            Role::Assistant => {
                for call in &message.tool_calls {
                    let id = call.id.as_str();
                    if answered.contains(id) || open.insert(id, index).is_some() {
                        return Err(format!("messages[{index}] repeats the tool call id {id:?}"));
                    }
                }
            }
            Role::Tool => {
                let id = message.tool_call_id.as_deref().unwrap_or_default();
                if open.remove(id).is_some() {
                    answered.insert(id);
                } else if answered.contains(id) {
                    return Err(format!(
                        "messages[{index}] answers the tool call {id:?} a second time"
                    ));
                } else {
                    return Err(format!(
                        "messages[{index}] is a tool result for the call {id:?}, which no earlier assistant message made"
                    ));
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

pub(super) fn parse_message(index: usize, item: &Value) -> Result<Message, String> {
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
    // A summary is a user message (docs/protocol.md §13); a system message's `_compact` is kept
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

/// A summary's `_compact` mark: `{count}` (docs/protocol.md §13); an old `sig` is ignored.
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
