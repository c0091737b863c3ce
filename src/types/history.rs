//! The history's wire shape, the OpenAI chat shape with hookwire's marks: what a `chat` frame
//! carries, and what a hook may answer as `messages` (one reader for both, so a hook can give
//! back every message the history holds). Read by serde (`docs/schema/frames/` and the hooks'
//! output schemas are generated from it), the rules each message's role sets ([`validate`],
//! said in the schema too by [`role_rules`]), that every tool call is answered
//! ([`check_tool_answers`]), and each message as the agent takes it
//! ([`HistoryMessage::into_message`]).

use std::borrow::Cow;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::read::{read, read_as_object, ReadError as FrameError};
use crate::types::{CompactTag, HookTag, Message, Role, ToolCall};

/// The one kind of tool call there is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ToolCallKind {
    Function,
}

/// One message of `messages`, in the OpenAI chat shape with hookwire's marks. What a field means
/// depends on the role (the rules under `allOf`); unknown fields are ignored.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(remote = "Self")]
#[schemars(transform = role_rules)]
pub(crate) struct HistoryMessage {
    role: Role,
    /// May be null (or absent) only on an assistant message that calls tools.
    content: Option<String>,
    /// An assistant message's calls.
    tool_calls: Option<Vec<HistoryToolCall>>,
    /// A tool message: the call it answers (required on one).
    tool_call_id: Option<String>,
    /// A tool message: the tool.
    name: Option<String>,
    /// A persistent hook message's mark, as the server sent it (signed when a secret is set).
    /// Read on a system message; ignored on the others.
    #[serde(rename = "_hook", default)]
    hook: Mark<HistoryHookTag>,
    /// A compaction summary's mark. Read on a user (or system) message; ignored on the others.
    #[serde(rename = "_compact", default)]
    compact: Mark<HistoryCompactTag>,
}

/// `{id, type: "function", function: {name, arguments}}`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(remote = "Self")]
pub(crate) struct HistoryToolCall {
    #[schemars(length(min = 1))]
    id: String,
    #[serde(rename = "type")]
    kind: Option<ToolCallKind>,
    function: HistoryFunction,
}

#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(remote = "Self")]
pub(crate) struct HistoryFunction {
    #[schemars(length(min = 1))]
    name: String,
    arguments: Option<Arguments>,
}

read_as_object!(
    HistoryMessage,
    HistoryToolCall,
    HistoryFunction,
    HistoryHookTag,
    HistoryCompactTag,
);

/// A call's arguments: their JSON text, as OpenAI writes them (an object is taken too).
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(untagged, expecting = "must be a JSON string (or an object)")]
pub(crate) enum Arguments {
    Text(String),
    Object(Map<String, Value>),
}

#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(remote = "Self")]
pub(crate) struct HistoryHookTag {
    name: String,
    skill: String,
    timing: String,
    sig: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(remote = "Self")]
pub(crate) struct HistoryCompactTag {
    count: usize,
}

/// A mark (`_hook`, `_compact`) as the client sent it: absent (or null), read as `T`, or left
/// as it came. Where the message's role gives the mark no meaning a malformed one is no reason
/// to refuse the chat; where it does, [`Mark::check`] refuses it.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(untagged)]
pub(crate) enum Mark<T> {
    #[default]
    Absent,
    Read(T),
    Unread(Value),
}

impl<T: JsonSchema> JsonSchema for Mark<T> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        format!("Mark_{}", T::schema_name()).into()
    }

    /// Anything; `role_rules` says where it must be a `T`.
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let shape = generator.subschema_for::<T>();
        json_schema!({ "anyOf": [shape, true] })
    }
}

impl<T: DeserializeOwned> Mark<T> {
    /// Where the role gives the mark a meaning: one that is not a `T` is refused, saying why.
    fn check(&self, at: impl FnOnce() -> String) -> Result<(), FrameError> {
        let Mark::Unread(value) = self else {
            return Ok(());
        };
        let why = read::<T, _>(value)
            .err()
            .unwrap_or_else(|| FrameError::field("", "is not a mark"));
        Err(why.within(&at()))
    }
}

/// What the schema says beside the fields' types: the rules [`HistoryMessage::validate`]
/// applies per role, as `if`/`then` (the schema test holds the two to each other).
fn role_rules(schema: &mut Schema) {
    let role = |roles: &[&str]| json!({"properties": {"role": {"enum": roles}}});
    let rules = json!([
        {
            "description": "content is a string, but on an assistant message that calls tools",
            "if": {"properties": {"role": {"const": "assistant"},
                                  "tool_calls": {"type": "array", "minItems": 1}},
                   "required": ["tool_calls"]},
            "else": {"properties": {"content": {"type": "string"}}, "required": ["content"]}
        },
        {
            "description": "only an assistant message has tool_calls",
            "if": role(&["assistant"]),
            "else": {"properties": {"tool_calls": {"type": "null"}}}
        },
        {
            "description": "a tool message names the call it answers",
            "if": role(&["tool"]),
            "then": {"properties": {"tool_call_id": {"type": "string", "minLength": 1}},
                     "required": ["tool_call_id"]}
        },
        {
            "description": "a system message's _hook is read (it is what makes the message trusted)",
            "if": role(&["system"]),
            "then": {"properties": {"_hook": {"anyOf": [
                {"$ref": "#/$defs/HistoryHookTag"}, {"type": "null"}]}}}
        },
        {
            "description": "a summary's _compact is read",
            "if": role(&["system", "user"]),
            "then": {"properties": {"_compact": {"anyOf": [
                {"$ref": "#/$defs/HistoryCompactTag"}, {"type": "null"}]}}}
        }
    ]);
    schema.insert("allOf".into(), rules);
}

/// Every message's rules, then the answers to the tool calls. `open_tail`: the history of a
/// resumed chat may end with the calls that wait for the decisions.
pub(crate) fn validate(
    messages: &[HistoryMessage],
    max_messages: usize,
    open_tail: bool,
) -> Result<(), FrameError> {
    if messages.len() > max_messages {
        return Err(FrameError::field(
            "messages",
            format!(
                "has {} messages; the limit is {max_messages}",
                messages.len()
            ),
        ));
    }
    for (index, message) in messages.iter().enumerate() {
        message.validate(index)?;
    }
    check_tool_answers(messages, open_tail)
}

impl HistoryMessage {
    /// A `tool` message: a call's result.
    pub(crate) fn is_tool_result(&self) -> bool {
        self.role == Role::Tool
    }

    /// The rules of the message's role (`index`: its place in `messages`).
    fn validate(&self, index: usize) -> Result<(), FrameError> {
        let at = || format!("messages[{index}]");
        let calls = self.tool_calls.as_deref().unwrap_or_default();
        if self.tool_calls.is_some() && self.role != Role::Assistant {
            return Err(FrameError::rule(
                at(),
                format!(
                    "{} has tool_calls, which only an assistant message may have",
                    at()
                ),
            ));
        }
        // An assistant message that only calls tools, as OpenAI writes it, has no content.
        if self.content.is_none() && calls.is_empty() {
            return Err(FrameError::missing(format!("{}.content", at())));
        }
        for (n, call) in calls.iter().enumerate() {
            call.validate(|| format!("{}.tool_calls[{n}]", at()))?;
        }
        if self.role == Role::Tool && self.tool_call_id.as_deref().is_none_or(str::is_empty) {
            return Err(FrameError::field(
                format!("{}.tool_call_id", at()),
                "must name the call this tool message answers",
            ));
        }
        if self.role == Role::System {
            self.hook.check(|| format!("{}._hook", at()))?;
        }
        if matches!(self.role, Role::System | Role::User) {
            self.compact.check(|| format!("{}._compact", at()))?;
        }
        Ok(())
    }

    /// The message as the agent takes it (validated first). Marks where the role gives them no
    /// meaning are dropped, and logged.
    pub(crate) fn into_message(self) -> Message {
        let role = self.role;
        let tool_calls: Vec<ToolCall> = self
            .tool_calls
            .unwrap_or_default()
            .into_iter()
            .map(HistoryToolCall::into_call)
            .collect();
        let mut message = Message::new(role, self.content.unwrap_or_default());
        if role == Role::Tool {
            message.tool_call_id = self.tool_call_id;
            message.tool_name = self.name;
        }
        message.hook = match self.hook {
            Mark::Absent => None,
            // Only a system message's mark is checked (it is what makes it trusted); on any
            // other role it changes nothing, so a malformed one is no reason to refuse the chat.
            Mark::Unread(_) => {
                tracing::warn!(
                    role = role.as_str(),
                    "ignored the malformed _hook mark of a history message"
                );
                None
            }
            // Tool traffic is the model's and the tools' text, never a hook's message
            // (docs/protocol.md §13): a mark on it is dropped.
            Mark::Read(_) if role == Role::Tool || !tool_calls.is_empty() => {
                tracing::warn!(
                    role = role.as_str(),
                    "ignored the _hook mark of a tool call or result in the history"
                );
                None
            }
            Mark::Read(tag) => Some(tag.into_tag()),
        };
        // A summary is a user message (docs/protocol.md §13); a system message's `_compact` is
        // kept only so the history check can drop it by name (old signed summaries are not
        // system text).
        message.compact = match (role, self.compact) {
            (_, Mark::Absent) => None,
            (Role::User | Role::System, Mark::Read(tag)) => Some(CompactTag { count: tag.count }),
            _ => {
                tracing::warn!(
                    role = role.as_str(),
                    "ignored the _compact mark of a history message: only a summary (a user message) has one"
                );
                None
            }
        };
        message.tool_calls = tool_calls;
        message
    }
}

impl HistoryToolCall {
    fn validate(&self, at: impl Fn() -> String) -> Result<(), FrameError> {
        if self.id.is_empty() {
            return Err(FrameError::field(
                format!("{}.id", at()),
                "must not be empty",
            ));
        }
        if self.function.name.is_empty() {
            return Err(FrameError::field(
                format!("{}.function.name", at()),
                "must not be empty",
            ));
        }
        Ok(())
    }

    /// `arguments` as their JSON text (an object written as its text).
    fn into_call(self) -> ToolCall {
        let arguments = match self.function.arguments {
            None => String::new(),
            Some(Arguments::Text(text)) => text,
            Some(Arguments::Object(object)) => Value::Object(object).to_string(),
        };
        ToolCall {
            id: self.id,
            name: self.function.name,
            arguments,
        }
    }
}

impl HistoryHookTag {
    fn into_tag(self) -> HookTag {
        HookTag {
            name: self.name,
            skill: self.skill,
            timing: self.timing,
            sig: self.sig.unwrap_or_default(),
        }
    }
}

/// What the check of tool answers reads of a message: the native wire's history messages and
/// the messages other wires convert into.
pub(crate) trait CallsAndAnswers {
    fn role(&self) -> Role;
    /// An assistant message's call ids.
    fn call_ids(&self) -> impl Iterator<Item = &str>;
    /// A tool message's call id.
    fn answers(&self) -> Option<&str>;
}

impl CallsAndAnswers for HistoryMessage {
    fn role(&self) -> Role {
        self.role
    }
    fn call_ids(&self) -> impl Iterator<Item = &str> {
        let calls = self.tool_calls.as_deref().unwrap_or_default();
        calls.iter().map(|call| call.id.as_str())
    }
    fn answers(&self) -> Option<&str> {
        self.tool_call_id.as_deref()
    }
}

impl CallsAndAnswers for Message {
    fn role(&self) -> Role {
        self.role
    }
    fn call_ids(&self) -> impl Iterator<Item = &str> {
        self.tool_calls.iter().map(|call| call.id.as_str())
    }
    fn answers(&self) -> Option<&str> {
        self.tool_call_id.as_deref()
    }
}

/// The history rules of the native wire for messages another wire converted: every call has an
/// id and a tool, and is answered by one `tool` message ([`check_tool_answers`]).
pub(crate) fn check_history(messages: &[Message], open_tail: bool) -> Result<(), FrameError> {
    for (index, message) in messages.iter().enumerate() {
        for (call_index, call) in message.tool_calls.iter().enumerate() {
            if call.id.is_empty() || call.name.is_empty() {
                return Err(FrameError::field(
                    format!("messages[{index}].tool_calls[{call_index}]"),
                    "needs an id and a function name",
                ));
            }
        }
    }
    check_tool_answers(messages, open_tail)
}

/// Every `tool` message answers a call an earlier assistant message made, once; every call is
/// answered before the next user message (and, unless `open_tail`, before the end). Linear in
/// the number of calls: a history may carry thousands.
pub(crate) fn check_tool_answers<M: CallsAndAnswers>(
    messages: &[M],
    open_tail: bool,
) -> Result<(), FrameError> {
    use std::collections::{HashMap, HashSet};
    // The calls made and not yet answered, with the place of the message that made them.
    let mut open: HashMap<&str, usize> = HashMap::new();
    let mut answered: HashSet<&str> = HashSet::new();
    // The first call left open (the earliest message, then the call's order in it).
    let unanswered = |open: &HashMap<&str, usize>, before: &str| {
        let at = *open.values().min()?;
        let id = messages[at].call_ids().find(|id| open.contains_key(id))?;
        Some(FrameError::rule(
            format!("messages[{at}]"),
            format!(
                "the tool call {id:?} of messages[{at}] has no tool message answering it {before}"
            ),
        ))
    };
    for (index, message) in messages.iter().enumerate() {
        let refuse = |message: String| Err(FrameError::rule(format!("messages[{index}]"), message));
        match message.role() {
            Role::Assistant => {
                for id in message.call_ids() {
                    if answered.contains(id) || open.insert(id, index).is_some() {
                        return refuse(format!(
                            "messages[{index}] repeats the tool call id {id:?}"
                        ));
                    }
                }
            }
            Role::Tool => {
                let id = message.answers().unwrap_or_default();
                if open.remove(id).is_some() {
                    answered.insert(id);
                } else if answered.contains(id) {
                    return refuse(format!(
                        "messages[{index}] answers the tool call {id:?} a second time"
                    ));
                } else {
                    return refuse(format!(
                        "messages[{index}] is a tool result for the call {id:?}, which no earlier assistant message made"
                    ));
                }
            }
            Role::User => {
                let before = format!("before the next user message (messages[{index}])");
                if let Some(error) = unanswered(&open, &before) {
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

/// One history message written by the native wire (a persistent hook's message with its `_hook`
/// mark, carried by another wire for its client to send back), read as `/ws` reads it, its
/// role's rules checked: the agent then checks its signature as on the WebSocket.
pub(crate) fn read_history_message(value: Value) -> Result<Message, FrameError> {
    let message: HistoryMessage = serde_json::from_value(value)
        .map_err(|error| FrameError::field("message", error.to_string()))?;
    message.validate(0)?;
    Ok(message.into_message())
}
