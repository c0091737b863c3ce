//! A history message as the server sends it and the client stores it (`done.turn`, `hook`,
//! `compact`): the OpenAI chat shape with hookwire's `_hook` and `_compact` marks.

use schemars::JsonSchema;
use serde::Serialize;

use crate::types::history::ToolCallKind;
use crate::types::{Message, Role};

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct WireMessage {
    pub(crate) role: Role,
    pub(crate) content: String,
    /// An assistant message's calls, as OpenAI writes them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) tool_calls: Vec<WireToolCall>,
    /// A tool message: the call it answers, and the tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tool_call_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) name: Option<String>,
    /// A persistent hook message's mark; send it back unchanged (it is signed).
    #[serde(rename = "_hook", skip_serializing_if = "Option::is_none")]
    pub(crate) hook: Option<WireHookTag>,
    /// A compaction summary's mark: how many earlier messages it replaced.
    #[serde(rename = "_compact", skip_serializing_if = "Option::is_none")]
    pub(crate) compact: Option<WireCompactTag>,
}

/// `{id, type: "function", function: {name, arguments}}`, `arguments` a JSON string.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct WireToolCall {
    pub(crate) id: String,
    #[serde(rename = "type")]
    pub(crate) kind: ToolCallKind,
    pub(crate) function: WireFunction,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct WireFunction {
    pub(crate) name: String,
    /// The arguments' JSON text.
    pub(crate) arguments: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct WireHookTag {
    pub(crate) name: String,
    pub(crate) skill: String,
    pub(crate) timing: String,
    /// HMAC-SHA256 hex over the message; empty without a secret.
    pub(crate) sig: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct WireCompactTag {
    pub(crate) count: usize,
}

impl WireMessage {
    /// A message with only a role and text.
    pub(crate) fn plain(role: Role, content: String) -> Self {
        WireMessage {
            role,
            content,
            tool_calls: Vec::new(),
            tool_call_id: None,
            name: None,
            hook: None,
            compact: None,
        }
    }

    /// A history message as the client stores it, with its marks.
    pub(crate) fn from_message(message: Message) -> Self {
        WireMessage {
            role: message.role,
            content: message.content,
            tool_calls: message
                .tool_calls
                .into_iter()
                .map(|call| WireToolCall {
                    id: call.id,
                    kind: ToolCallKind::Function,
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

/// A persistent hook's message as the native wire writes it in the history (with its `_hook`
/// mark): what another wire carries for its client to send back unchanged.
pub(crate) fn hook_message_json(hook: crate::types::HookMessage) -> serde_json::Value {
    let mut message = Message::new(hook.role, hook.content);
    message.hook = Some(hook.tag);
    serde_json::to_value(WireMessage::from_message(message)).unwrap_or_default()
}
