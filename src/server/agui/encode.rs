//! The AG-UI wire's encoder (`wire::WireEncoder`): each event of a chat as AG-UI 1.0 events, an
//! item being one event's JSON (the route frames it as `data: …\n\n`). What `@ag-ui/client`'s
//! verifier demands is kept here: `RUN_STARTED` first; a text message's content only between
//! its `TEXT_MESSAGE_START` and `TEXT_MESSAGE_END`; a tool call's arguments between its
//! `TOOL_CALL_START` and `TOOL_CALL_END`; each step finished by name; nothing open, and nothing
//! after, the run's one `RUN_FINISHED` or `RUN_ERROR`.
//!
//! Each step's text is an assistant message of its own, and the step's tool calls hang on it
//! (`parentMessageId`), or on a message of their own when the step had no text; the plan is a
//! whole message. A call the client's messages already hold (a call that waited for approval,
//! shown again by the resumed chat) is not started again: only its result is sent. Before the
//! terminal event, `STATE_SNAPSHOT` hands the client the state to send back (`state.rs`).

use std::collections::HashSet;

use serde::Serialize;
use serde_json::{json, Map, Value};

use super::request::RunAgentInput;
use super::state::{HookwireState, StoredApproval, StoredHook};
use crate::server::frames::WireMessage;
use crate::server::wire::{Encoded, WireEncoder};
use crate::types::{
    iso8601_secs, ChatError, ChatEvent, DoneReason, HookMessage, Message, PendingCall, Usage,
};

/// An AG-UI 1.0 event, as the wire has it (`type` SCREAMING_SNAKE, fields camelCase).
#[derive(Debug, Serialize)]
#[serde(
    tag = "type",
    rename_all = "SCREAMING_SNAKE_CASE",
    rename_all_fields = "camelCase"
)]
pub(super) enum Event<'a> {
    RunStarted {
        thread_id: &'a str,
        run_id: &'a str,
    },
    RunFinished {
        thread_id: &'a str,
        run_id: &'a str,
        outcome: Outcome<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        usage: Option<[TokenUsage; 1]>,
        metadata: Value,
    },
    RunError {
        message: &'a str,
        code: &'a str,
    },
    StepStarted {
        step_name: &'a str,
    },
    StepFinished {
        step_name: &'a str,
    },
    TextMessageStart {
        message_id: &'a str,
        role: &'static str,
    },
    TextMessageContent {
        message_id: &'a str,
        delta: &'a str,
    },
    TextMessageEnd {
        message_id: &'a str,
    },
    ToolCallStart {
        tool_call_id: &'a str,
        tool_call_name: &'a str,
        parent_message_id: &'a str,
    },
    ToolCallArgs {
        tool_call_id: &'a str,
        delta: &'a str,
    },
    ToolCallEnd {
        tool_call_id: &'a str,
    },
    ToolCallResult {
        message_id: &'a str,
        tool_call_id: &'a str,
        content: &'a str,
        role: &'static str,
    },
    StateSnapshot {
        snapshot: &'a Value,
    },
    Custom {
        name: &'static str,
        value: Value,
    },
}

/// `RUN_FINISHED.outcome`.
#[derive(Debug, Serialize)]
#[serde(
    tag = "type",
    rename_all = "lowercase",
    rename_all_fields = "camelCase"
)]
pub(super) enum Outcome<'a> {
    Success {
        #[serde(skip_serializing_if = "<[String]>::is_empty")]
        pending_tool_call_ids: &'a [String],
    },
    Interrupt {
        interrupts: Vec<Value>,
    },
    Cancelled,
}

/// One entry of `usage`: the chat's tokens, hooks' model calls included.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct TokenUsage {
    input_tokens: u64,
    output_tokens: u64,
    total_tokens: u64,
}

/// One run's events on the AG-UI wire.
pub(crate) struct AgUiEncoder {
    thread_id: String,
    run_id: String,
    /// Message ids are `{prefix}-{n}`: the prefix is random per run.
    id_prefix: String,
    next_id: u64,
    /// The request's `state`, sent back with `hookwire` updated.
    state: Option<Value>,
    hookwire: HookwireState,
    /// The id of the message the client's conversation ends with (what a hook message follows).
    last_message: String,
    /// The open text message, and its `TEXT_MESSAGE_CONTENT` JSON up to the delta's value.
    text: Option<(String, String)>,
    /// The open step.
    step: Option<String>,
    /// The step's assistant message: its text's, or one made for its tool calls.
    step_message: Option<String>,
    /// Tool calls the client's messages hold.
    shown_calls: HashSet<String>,
    started: bool,
    over: bool,
}

impl AgUiEncoder {
    /// The encoder of the run `input` asks for (made before `into_request` takes it).
    pub(crate) fn new(input: &RunAgentInput) -> Self {
        let mut hookwire = HookwireState::of(input.state.as_ref()).unwrap_or_default();
        let ids: HashSet<&str> = input.messages.iter().map(|m| m.id()).collect();
        // A hook message whose message the client dropped is gone with it.
        hookwire
            .hooks
            .retain(|hook| ids.contains(hook.after.as_str()));
        hookwire.approval = None;
        let mut prefix = uuid::Uuid::new_v4().simple().to_string();
        prefix.truncate(12);
        Self {
            thread_id: input.thread_id.clone(),
            run_id: input.run_id.clone(),
            id_prefix: format!("hw-{prefix}"),
            next_id: 0,
            state: input.state.clone(),
            hookwire,
            last_message: input
                .messages
                .last()
                .map(|m| m.id().to_string())
                .unwrap_or_default(),
            text: None,
            step: None,
            step_message: None,
            shown_calls: input
                .messages
                .iter()
                .flat_map(|m| m.call_ids())
                .map(str::to_string)
                .collect(),
            started: false,
            over: false,
        }
    }

    /// Ids `{prefix}-{n}` instead of random ones (tests).
    #[cfg(test)]
    pub(super) fn with_id_prefix(mut self, prefix: &str) -> Self {
        self.id_prefix = prefix.to_string();
        self
    }

    fn new_id(&mut self) -> String {
        self.next_id += 1;
        format!("{}-{}", self.id_prefix, self.next_id)
    }

    fn start(&mut self, out: &mut Vec<String>) {
        if !self.started {
            self.started = true;
            push(
                out,
                &Event::RunStarted {
                    thread_id: &self.thread_id,
                    run_id: &self.run_id,
                },
            );
        }
    }

    fn close_text(&mut self, out: &mut Vec<String>) {
        if let Some((id, _)) = self.text.take() {
            push(out, &Event::TextMessageEnd { message_id: &id });
        }
    }

    /// Closes the open text message and the open step.
    fn close(&mut self, out: &mut Vec<String>) {
        self.close_text(out);
        if let Some(step) = self.step.take() {
            push(out, &Event::StepFinished { step_name: &step });
        }
    }

    fn step(&mut self, name: String, out: &mut Vec<String>) {
        self.close(out);
        push(out, &Event::StepStarted { step_name: &name });
        self.step = Some(name);
        self.step_message = None;
    }

    /// A streamed token: `TEXT_MESSAGE_CONTENT` made from the message's prefix, after
    /// `TEXT_MESSAGE_START` when no text message is open. Empty deltas are not sent, nor the
    /// blank line the agent sends between two steps' text (each is a message of its own).
    fn text(&mut self, delta: &str, out: &mut Vec<String>) {
        if delta.is_empty() || (self.text.is_none() && delta == "\n\n") {
            return;
        }
        if self.text.is_none() {
            let id = self.new_id();
            push(
                out,
                &Event::TextMessageStart {
                    message_id: &id,
                    role: "assistant",
                },
            );
            let prefix = content_prefix(&id);
            self.last_message.clone_from(&id);
            self.step_message.get_or_insert_with(|| id.clone());
            self.text = Some((id, prefix));
        }
        if let Some((_, prefix)) = &self.text {
            let mut json = String::with_capacity(prefix.len() + delta.len() + 8);
            json.push_str(prefix);
            if let Ok(delta) = serde_json::to_string(delta) {
                json.push_str(&delta);
                json.push('}');
                out.push(json);
            }
        }
    }

    /// The plan: a whole assistant message.
    fn plan(&mut self, plan: &str, out: &mut Vec<String>) {
        self.close_text(out);
        if plan.is_empty() {
            return;
        }
        let id = self.new_id();
        push(
            out,
            &Event::TextMessageStart {
                message_id: &id,
                role: "assistant",
            },
        );
        push(
            out,
            &Event::TextMessageContent {
                message_id: &id,
                delta: plan,
            },
        );
        push(out, &Event::TextMessageEnd { message_id: &id });
        self.last_message = id;
    }

    /// The assistant message the step's tool calls hang on.
    fn call_parent(&mut self, out: &mut Vec<String>) -> String {
        self.close_text(out);
        if let Some(id) = &self.step_message {
            return id.clone();
        }
        let id = self.new_id();
        self.last_message.clone_from(&id);
        self.step_message = Some(id.clone());
        id
    }

    fn tool_call(&mut self, call_id: &str, name: &str, arguments: &Value, out: &mut Vec<String>) {
        self.close_text(out);
        if !self.shown_calls.insert(call_id.to_string()) {
            return;
        }
        let parent = self.call_parent(out);
        let arguments = arguments.to_string();
        push(
            out,
            &Event::ToolCallStart {
                tool_call_id: call_id,
                tool_call_name: name,
                parent_message_id: &parent,
            },
        );
        push(
            out,
            &Event::ToolCallArgs {
                tool_call_id: call_id,
                delta: &arguments,
            },
        );
        push(
            out,
            &Event::ToolCallEnd {
                tool_call_id: call_id,
            },
        );
    }

    fn tool_result(&mut self, call_id: &str, content: &str, out: &mut Vec<String>) {
        self.close_text(out);
        let id = self.new_id();
        push(
            out,
            &Event::ToolCallResult {
                message_id: &id,
                tool_call_id: call_id,
                content,
                role: "tool",
            },
        );
        self.last_message = id;
    }

    /// A persistent hook message: kept for the state (after the conversation's last message)
    /// and shown.
    fn hook(&mut self, hook: HookMessage, out: &mut Vec<String>) {
        let mut message = Message::new(hook.role, hook.content);
        message.hook = Some(hook.tag);
        let message = native(&message);
        let stored = StoredHook {
            after: self.last_message.clone(),
            message,
        };
        custom(out, "hookwire.hook", json!(stored));
        self.hookwire.hooks.push(stored);
    }

    /// Calls that wait for the person: shown as tool calls (the client's messages hold them),
    /// and kept for the interrupt and the state.
    fn approval(
        &mut self,
        calls: Vec<PendingCall>,
        state: String,
        expires: u64,
        out: &mut Vec<String>,
    ) {
        for call in &calls {
            self.tool_call(&call.call_id, &call.name, &call.arguments, out);
        }
        self.hookwire.approval = Some(StoredApproval {
            state,
            calls,
            expires_at: Some(iso8601_secs(expires)),
        });
    }

    fn done(
        &mut self,
        reason: DoneReason,
        usage: Usage,
        pending: &[String],
        out: &mut Vec<String>,
    ) {
        self.close(out);
        let interrupts: Vec<Value> = match (&self.hookwire.approval, reason) {
            (Some(approval), DoneReason::ApprovalRequired) => {
                let expires_at = approval.expires_at.as_deref();
                approval
                    .calls
                    .iter()
                    .map(|call| interrupt(call, expires_at))
                    .collect()
            }
            _ => Vec::new(),
        };
        let outcome = match reason {
            _ if !interrupts.is_empty() => Outcome::Interrupt { interrupts },
            DoneReason::Cancelled => Outcome::Cancelled,
            DoneReason::ToolCalls => Outcome::Success {
                pending_tool_call_ids: pending,
            },
            _ => Outcome::Success {
                pending_tool_call_ids: &[],
            },
        };
        self.snapshot(out);
        let total = usage.prompt_tokens + usage.completion_tokens;
        let usage = (total > 0).then_some([TokenUsage {
            input_tokens: usage.prompt_tokens,
            output_tokens: usage.completion_tokens,
            total_tokens: total,
        }]);
        let metadata = json!({"hookwire": {"reason": reason.as_str()}});
        push(
            out,
            &Event::RunFinished {
                thread_id: &self.thread_id,
                run_id: &self.run_id,
                outcome,
                usage,
                metadata,
            },
        );
        self.over = true;
    }

    fn error(&mut self, error: &ChatError, out: &mut Vec<String>) {
        if self.started {
            self.close(out);
            self.snapshot(out);
        }
        push(
            out,
            &Event::RunError {
                message: &error.message,
                code: error.code.as_str(),
            },
        );
        self.over = true;
    }

    /// `STATE_SNAPSHOT`: the request's state with `hookwire` as the next run needs it.
    fn snapshot(&mut self, out: &mut Vec<String>) {
        let hookwire = std::mem::take(&mut self.hookwire);
        let snapshot = hookwire.into_snapshot(self.state.take());
        push(
            out,
            &Event::StateSnapshot {
                snapshot: &snapshot,
            },
        );
    }
}

impl WireEncoder for AgUiEncoder {
    type Item = String;

    fn encode(&mut self, event: ChatEvent) -> Encoded<String> {
        if self.over {
            return Encoded::None;
        }
        let mut out = Vec::with_capacity(1);
        if !matches!(event, ChatEvent::Error(_)) {
            self.start(&mut out);
        }
        match event {
            ChatEvent::Started { .. } => {}
            ChatEvent::StepStarted(step) => self.step(step.to_string(), &mut out),
            ChatEvent::Text(delta) => self.text(&delta, &mut out),
            ChatEvent::Plan(plan) => self.plan(&plan, &mut out),
            ChatEvent::ToolCall {
                call_id,
                name,
                arguments,
            } => self.tool_call(&call_id, &name, &arguments, &mut out),
            ChatEvent::ToolResult {
                call_id, content, ..
            } => self.tool_result(&call_id, &content, &mut out),
            ChatEvent::Hook(hook) => self.hook(hook, &mut out),
            ChatEvent::Approval {
                calls,
                state,
                expires,
            } => self.approval(calls, state, expires, &mut out),
            ChatEvent::Compact {
                count,
                message,
                pinned,
                context,
            } => {
                let pinned: Vec<_> = pinned.iter().map(native).collect();
                let mut value =
                    json!({"count": count, "message": native(&message), "pinned": pinned});
                if !context.is_empty() {
                    let context: Vec<_> = context.iter().map(native).collect();
                    value["context"] = json!(context);
                }
                custom(&mut out, "hookwire.compact", value);
            }
            ChatEvent::SessionHook(hook) => {
                if let Value::Object(object) = &hook {
                    self.hookwire.session_hooks.push(object.clone());
                }
                custom(&mut out, "hookwire.session_hook", hook);
            }
            ChatEvent::HookTrace(trace) => {
                let value = json!({"event": trace.event, "hook": trace.hook, "level": trace.level,
                    "ms": trace.ms, "outcome": trace.outcome, "changed": trace.changed});
                custom(&mut out, "hookwire.trace", value);
            }
            ChatEvent::Notice {
                level,
                message,
                source,
            } => {
                let value = json!({"level": level.as_str(), "message": message, "source": source});
                custom(&mut out, "hookwire.notice", value);
            }
            ChatEvent::Done {
                reason,
                usage,
                pending_tool_calls,
                ..
            } => self.done(reason, usage, &pending_tool_calls, &mut out),
            ChatEvent::Error(error) => self.error(&error, &mut out),
        }
        Encoded::from(out)
    }
}

/// One event's JSON, added to `out`.
fn push(out: &mut Vec<String>, event: &Event<'_>) {
    match serde_json::to_string(event) {
        Ok(json) => out.push(json),
        Err(error) => tracing::error!(%error, "an AG-UI event could not be written"),
    }
}

fn custom(out: &mut Vec<String>, name: &'static str, value: Value) {
    push(out, &Event::Custom { name, value });
}

/// `{"type":"TEXT_MESSAGE_CONTENT","messageId":"…","delta":` — a token's event is this, the
/// delta as a JSON string, and `}` (the same JSON as its `Event`'s).
fn content_prefix(id: &str) -> String {
    let event = serde_json::to_string(&Event::TextMessageContent {
        message_id: id,
        delta: "",
    });
    event
        .ok()
        .and_then(|json| json.strip_suffix("\"\"}").map(str::to_string))
        .unwrap_or_default()
}

/// A history message as the native wire writes it (its marks inside).
fn native(message: &Message) -> Map<String, Value> {
    match serde_json::to_value(WireMessage::from_message(message.clone())) {
        Ok(Value::Object(object)) => object,
        _ => Map::new(),
    }
}

/// A pending call as an AG-UI interrupt: its id is the call's, and so is the resume entry's
/// `interruptId`; the payload it asks for is `{"approved": bool, "reason"?: string}`.
fn interrupt(call: &PendingCall, expires_at: Option<&str>) -> Value {
    let mut interrupt = json!({
        "id": call.call_id,
        "reason": "tool_approval",
        "message": call.reason,
        "toolCallId": call.call_id,
        "responseSchema": {
            "type": "object",
            "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
            "required": ["approved"]
        },
        "metadata": {"hookwire": {"name": call.name, "arguments": call.arguments}},
    });
    if let Some(expires_at) = expires_at {
        interrupt["expiresAt"] = json!(expires_at);
    }
    interrupt
}
