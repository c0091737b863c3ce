//! The conversation as the agent sees it: messages in the OpenAI chat shape, plus the marks that
//! hookwire needs internally (which hook a message came from, which injection put it there).

use serde_json::Value;

#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// The `_hook` mark of a persistent hook message: who injected it, and its signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookTag {
    pub name: String,
    pub skill: String,
    pub timing: String,
    /// HMAC-SHA256 hex over the message (see `hooks::signing`); empty without a secret.
    pub sig: String,
}

/// The `_compact` mark of a compaction summary (docs/protocol.md §10 and §13): how many messages
/// of the client's history it replaced. Informative only: a summary is user text, never signed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactTag {
    pub count: usize,
}

/// What the model sees about a tool: sent upstream in the OpenAI function format.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
}

/// A tool call the model asked for. `arguments` is the raw JSON text the model produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

impl ToolCall {
    /// The arguments as a JSON value; text that is not JSON becomes `{}` (the tool then reports
    /// the missing fields, which tells the model what went wrong).
    pub fn arguments_value(&self) -> Value {
        if self.arguments.trim().is_empty() {
            return Value::Object(Default::default());
        }
        serde_json::from_str(&self.arguments).unwrap_or_else(|_| Value::Object(Default::default()))
    }
}

/// One message of `full_messages`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub role: Role,
    pub content: String,
    /// Assistant messages only: the tools it called (OpenAI `tool_calls`).
    pub tool_calls: Vec<ToolCall>,
    /// Tool messages only: the call this message answers.
    pub tool_call_id: Option<String>,
    /// Tool messages only: the tool that answered (the `name` of an OpenAI tool message).
    pub tool_name: Option<String>,
    /// A persistent hook's mark; kept for the client, never sent upstream.
    pub hook: Option<HookTag>,
    /// Set on messages a hook manager injected, so it can take exactly those out again.
    pub injection: Option<u64>,
    /// A compaction summary's mark; kept for the client, never sent upstream.
    pub compact: Option<CompactTag>,
}

impl Message {
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            tool_name: None,
            hook: None,
            injection: None,
            compact: None,
        }
    }
    pub fn system(content: impl Into<String>) -> Self {
        Self::new(Role::System, content)
    }
    pub fn user(content: impl Into<String>) -> Self {
        Self::new(Role::User, content)
    }
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new(Role::Assistant, content)
    }
    /// An assistant message that calls tools (content may be empty).
    pub fn assistant_with_tools(content: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        Self {
            tool_calls,
            ..Self::assistant(content)
        }
    }
    /// The answer to one tool call.
    pub fn tool_result(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            tool_call_id: Some(call_id.into()),
            ..Self::new(Role::Tool, content)
        }
    }
    /// The answer to one tool call, with the tool's name (as a chat's `turn` holds it).
    pub fn named_tool_result(
        call_id: impl Into<String>,
        name: impl Into<String>,
        content: impl Into<String>,
    ) -> Self {
        Self {
            tool_name: Some(name.into()),
            ..Self::tool_result(call_id, content)
        }
    }
}

/// Token counts as the upstream reports them; summed over every call of a chat. The totals
/// include the model calls hooks made, which are also itemised (docs/protocol.md §15).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Model calls made by hooks (`llm`, `prompt`, `agent` handlers, retries included).
    pub hook_calls: u64,
    /// The part of `prompt_tokens` that hooks' model calls used.
    pub hook_prompt_tokens: u64,
    /// The part of `completion_tokens` that hooks' model calls used.
    pub hook_completion_tokens: u64,
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.hook_calls += other.hook_calls;
        self.hook_prompt_tokens += other.hook_prompt_tokens;
        self.hook_completion_tokens += other.hook_completion_tokens;
    }
}
