//! `register_hook`: the model adds a hook for the rest of the conversation (a session hook).
//! The hook is checked, signed and sent to the client as a `session_hook` frame; it applies from
//! the chat's next event on (the agent adds it to the running chat) and in later chats, when the
//! client sends it back.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::registered::{unix_now, validate_spec};
use crate::hooks::signing::{RegisteredHookSignature, SigningKey};
use crate::tools::Tool;
use crate::types::{ChatEvent, ToolOutput, ToolSpec};

pub(crate) struct RegisterHook {
    /// Signs each registered spec; `None` = the `sig` is empty.
    key: Option<SigningKey>,
    allow_command: bool,
    /// How long a registered hook runs (its `expires_at`, inside the signature).
    ttl: Duration,
}

impl RegisterHook {
    pub(crate) fn new(key: Option<SigningKey>, allow_command: bool, ttl: Duration) -> Self {
        Self {
            key,
            allow_command,
            ttl,
        }
    }
}

#[async_trait]
impl Tool for RegisterHook {
    fn spec(&self) -> ToolSpec {
        let handlers = if self.allow_command {
            "\"llm\" (default) or \"command\""
        } else {
            "\"llm\""
        };
        ToolSpec {
            name: "register_hook".into(),
            description: format!(
                "Register a hook that runs at an event from now on, in this chat and every later chat of this conversation, e.g. a check \
                 of each answer before it is final. Handler type: {handlers}. An llm hook's `prompt` may use \
                 {{{{user_input}}}}, {{{{assistant_output}}}}, {{{{tool_name}}}}, {{{{tool_arguments}}}}, {{{{tool_result}}}}."
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "event": {"type": "string", "description": "e.g. stop, post_llm_response, pre_tool_execution"},
                    "type": {"type": "string", "description": format!("Handler: {handlers}.")},
                    "prompt": {"type": "string", "description": "For llm hooks: the question to ask; the answer is JSON."},
                    "command": {"type": "string", "description": "For command hooks (if allowed)."},
                    "name": {"type": "string"},
                    "matcher": {"type": "string", "description": "Regex on the tool name (tool events) or model."}
                },
                "required": ["event"]
            }),
        }
    }

    async fn run(&self, mut arguments: Value) -> ToolOutput {
        // The server decides how long a hook lives, never the model.
        if let Some(object) = arguments.as_object_mut() {
            object.remove("expires_at");
        }
        let mut spec = match validate_spec(&arguments, self.allow_command) {
            Ok(spec) => spec,
            Err(error) => {
                return ToolOutput::error(format!("the hook was not registered: {error}"))
            }
        };
        spec["expires_at"] = json!(unix_now().saturating_add(self.ttl.as_secs()));
        let sig = self
            .key
            .as_ref()
            .map(|key| key.sign(&RegisteredHookSignature { spec: &spec }))
            .unwrap_or_default();
        spec["sig"] = json!(sig);
        let event = spec["event"].as_str().unwrap_or_default().to_string();
        let mut output = ToolOutput::ok(format!(
            "registered a session hook on {event}; it runs from now on, in this chat and the later ones"
        ));
        output.events.push(ChatEvent::SessionHook(spec));
        output
    }
}
