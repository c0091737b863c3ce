//! The chat as the AI SDK's UI message stream (`x-vercel-ai-ui-message-stream: v1`): each item
//! one chunk's JSON (or `[DONE]`). Text as text parts, each model call a step, every tool call a
//! dynamic tool part (the server's marked `providerExecuted`, so the SDK runs only the client's),
//! a call that waits for approval a `tool-approval-request`, and what hookwire adds to a chat as
//! `data-hookwire-*` parts: the persistent hook messages, the session hooks and the approval state
//! stay in the message (the SDK sends them back), notices, traces and compactions are transient.

use std::collections::HashSet;

use serde_json::{json, Value};

use super::super::frames::hook_message_json;
use super::super::wire::{Encoded, WireEncoder};
use crate::types::{ChatEvent, DoneReason, PendingCall};

pub(crate) struct UiStreamEncoder {
    /// The assistant message's id when the stream starts a new one; `None` when it goes on with
    /// the client's last assistant message (after an approval or client tools).
    message_id: Option<String>,
    client_tools: Vec<String>,
    /// The calls the person denied in this request (their results are `tool-output-denied`).
    denied: HashSet<String>,
    /// The open text part's id.
    text: Option<String>,
    step_open: bool,
    /// Ids made so far (text parts and data parts).
    made: u64,
}

impl UiStreamEncoder {
    pub(crate) fn new(
        message_id: Option<String>,
        client_tools: Vec<String>,
        denied: HashSet<String>,
    ) -> Self {
        Self {
            message_id,
            client_tools,
            denied,
            text: None,
            step_open: false,
            made: 0,
        }
    }

    fn next_id(&mut self, kind: &str) -> String {
        self.made += 1;
        format!("{kind}-{}", self.made)
    }

    fn close_text(&mut self, out: &mut Vec<String>) {
        if let Some(id) = self.text.take() {
            out.push(json!({"type": "text-end", "id": id}).to_string());
        }
    }

    fn close_step(&mut self, out: &mut Vec<String>) {
        self.close_text(out);
        if std::mem::take(&mut self.step_open) {
            out.push(json!({"type": "finish-step"}).to_string());
        }
    }

    fn text(&mut self, delta: String, out: &mut Vec<String>) {
        if delta.is_empty() {
            return;
        }
        let id = match &self.text {
            Some(id) => id.clone(),
            None => {
                let id = self.next_id("text");
                out.push(json!({"type": "text-start", "id": id}).to_string());
                self.text = Some(id.clone());
                id
            }
        };
        out.push(json!({"type": "text-delta", "id": id, "delta": delta}).to_string());
    }

    /// A tool part's start and its input, at once (hookwire streams whole calls).
    fn call(&mut self, call_id: &str, name: &str, input: &Value, out: &mut Vec<String>) {
        self.close_text(out);
        let by_server = !self.client_tools.iter().any(|tool| tool == name);
        out.push(
            json!({"type": "tool-input-start", "toolCallId": call_id, "toolName": name,
                   "dynamic": true, "providerExecuted": by_server})
            .to_string(),
        );
        out.push(
            json!({"type": "tool-input-available", "toolCallId": call_id, "toolName": name,
                   "input": input, "dynamic": true, "providerExecuted": by_server})
            .to_string(),
        );
    }

    fn result(&mut self, call_id: String, content: String, is_error: bool) -> String {
        if self.denied.contains(&call_id) {
            return json!({"type": "tool-output-denied", "toolCallId": call_id}).to_string();
        }
        if is_error {
            return json!({"type": "tool-output-error", "toolCallId": call_id,
                          "errorText": content, "dynamic": true, "providerExecuted": true})
            .to_string();
        }
        json!({"type": "tool-output-available", "toolCallId": call_id, "output": content,
               "dynamic": true, "providerExecuted": true})
        .to_string()
    }

    fn approval(&mut self, calls: Vec<PendingCall>, state: String, out: &mut Vec<String>) {
        let shown: Vec<Value> = calls
            .iter()
            .map(|call| json!({"toolCallId": call.call_id, "toolName": call.name, "reason": call.reason}))
            .collect();
        for call in &calls {
            self.call(&call.call_id, &call.name, &call.arguments, out);
            out.push(
                json!({"type": "tool-approval-request", "approvalId": call.call_id,
                       "toolCallId": call.call_id})
                .to_string(),
            );
        }
        out.push(
            json!({"type": "data-hookwire-approval", "id": "approval",
                   "data": {"state": state, "calls": shown}})
            .to_string(),
        );
    }

    fn data(&mut self, name: &str, data: Value, transient: bool) -> String {
        let id = self.next_id(name);
        let mut chunk = json!({"type": format!("data-hookwire-{name}"), "id": id, "data": data});
        if transient {
            chunk["transient"] = Value::Bool(true);
        }
        chunk.to_string()
    }
}

/// The AI SDK's `finishReason` of a chat's end.
fn finish_reason(reason: DoneReason) -> &'static str {
    match reason {
        DoneReason::ToolCalls | DoneReason::ApprovalRequired => "tool-calls",
        DoneReason::Length | DoneReason::MaxTokens => "length",
        DoneReason::Completed => "stop",
        _ => "other",
    }
}

impl WireEncoder for UiStreamEncoder {
    type Item = String;

    fn encode(&mut self, event: ChatEvent) -> Encoded<String> {
        // A streamed token's way: one chunk, written at once (every chat's hot path).
        if let (ChatEvent::Text(delta), Some(id)) = (&event, &self.text) {
            if !delta.is_empty() {
                let delta = serde_json::to_string(delta).unwrap_or_default();
                return Encoded::One(format!(
                    r#"{{"type":"text-delta","id":"{id}","delta":{delta}}}"#
                ));
            }
        }
        let mut out = Vec::new();
        match event {
            ChatEvent::Started { trace_id } => {
                let mut start = json!({"type": "start"});
                if let Some(id) = &self.message_id {
                    start["messageId"] = json!(id);
                }
                if let Some(trace_id) = trace_id {
                    start["messageMetadata"] = json!({"hookwire": {"trace_id": trace_id}});
                }
                out.push(start.to_string());
            }
            ChatEvent::StepStarted(_) => {
                self.close_step(&mut out);
                self.step_open = true;
                out.push(json!({"type": "start-step"}).to_string());
            }
            ChatEvent::Text(delta) => self.text(delta, &mut out),
            ChatEvent::Plan(plan) => {
                self.close_text(&mut out);
                self.text(plan, &mut out);
                self.close_text(&mut out);
            }
            ChatEvent::ToolCall {
                call_id,
                name,
                arguments,
            } => self.call(&call_id, &name, &arguments, &mut out),
            ChatEvent::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } => out.push(self.result(call_id, content, is_error)),
            ChatEvent::Approval { calls, state, .. } => self.approval(calls, state, &mut out),
            ChatEvent::Hook(hook) => {
                let message = hook_message_json(hook);
                out.push(self.data("hook", message, false));
            }
            ChatEvent::SessionHook(spec) => out.push(self.data("session-hook", spec, false)),
            ChatEvent::Notice {
                level,
                message,
                source,
            } => {
                let data = json!({"level": level.as_str(), "message": message, "source": source});
                out.push(self.data("notice", data, true));
            }
            ChatEvent::HookTrace(trace) => {
                let data = json!({"event": trace.event, "hook": trace.hook, "level": trace.level,
                                  "ms": trace.ms, "outcome": trace.outcome, "changed": trace.changed});
                out.push(self.data("trace", data, true));
            }
            ChatEvent::Compact { count, .. } => {
                out.push(self.data("compact", json!({"count": count}), true));
            }
            ChatEvent::Done {
                reason,
                usage,
                pending_tool_calls,
                ..
            } => {
                self.close_step(&mut out);
                let metadata = json!({"hookwire": {
                    "reason": reason.as_str(),
                    "usage": {"prompt_tokens": usage.prompt_tokens,
                              "completion_tokens": usage.completion_tokens,
                              "hook_calls": usage.hook_calls},
                    "pending_tool_calls": pending_tool_calls,
                }});
                out.push(
                    json!({"type": "finish", "finishReason": finish_reason(reason),
                           "messageMetadata": metadata})
                    .to_string(),
                );
                out.push("[DONE]".to_string());
            }
            ChatEvent::Error(error) => {
                self.close_step(&mut out);
                out.push(json!({"type": "error", "errorText": error.message}).to_string());
                out.push("[DONE]".to_string());
            }
        }
        Encoded::from(out)
    }
}
