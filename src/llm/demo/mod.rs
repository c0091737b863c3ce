//! The built-in demo model: offline and deterministic, so a first run shows the whole flow
//! (planning → plan → tool call → result → answer) without an API key.
//!
//! It reads only the request (see [`conversation`]): the person's input decides the plan, the
//! plan decides the calls of the agent rounds, and the tools' results make the answer. Plain
//! messages get a direct answer that explains how to configure a real model.

mod answers;
mod conversation;
mod intent;
mod plan;
mod side;

use std::time::Duration;

use async_trait::async_trait;
use futures::{stream, StreamExt};

use super::{ChatModel, LlmError, ModelEvent, ModelRequest, ModelStream};
use crate::types::DEFAULT_MARKER;
use crate::types::{ToolCall, Usage};
use conversation::Conversation;

#[derive(Debug, Clone)]
pub(crate) struct DemoModel {
    marker: String,
    /// Pause between words, so streaming is visible.
    word_delay: Duration,
}

impl Default for DemoModel {
    fn default() -> Self {
        Self::new(DEFAULT_MARKER)
    }
}

/// What the demo decided to do for one request.
#[derive(Debug, PartialEq)]
enum Reply {
    Text(String),
    Calls(Vec<ToolCall>),
}

impl DemoModel {
    pub(crate) fn new(marker: &str) -> Self {
        Self {
            marker: marker.to_string(),
            word_delay: Duration::from_millis(25),
        }
    }

    fn reply(&self, request: &ModelRequest) -> Reply {
        if let Some(text) = side::answer(&request.messages) {
            return Reply::Text(text);
        }
        let conversation = Conversation::read(&request.messages, &self.marker);
        if request.tools.is_empty() {
            // The planning round, or a direct call (tools off).
            return match intent::wanted_tool(conversation.input) {
                Some(call) if conversation.planning => {
                    Reply::Text(format!("{} {}", self.marker, plan::write(&[call])))
                }
                _ => Reply::Text(answers::direct(conversation.input)),
            };
        }
        let planned = conversation.plan.clone().unwrap_or_else(|| {
            intent::wanted_tool(conversation.input)
                .into_iter()
                .collect()
        });
        let offered = |call: &ToolCall| request.tools.iter().any(|t| t.name == call.name);
        // Ids after those of every call the conversation holds, so they stay unique across the
        // rounds of one chat and the chats of one conversation (a client refuses a history
        // that repeats one).
        let earlier: usize = request.messages.iter().map(|m| m.tool_calls.len()).sum();
        let pending: Vec<ToolCall> = planned
            .iter()
            .filter(|call| offered(call) && !conversation.was_made(call))
            .enumerate()
            .map(|(index, call)| ToolCall {
                id: format!("call_demo_{}", earlier + index + 1),
                ..call.clone()
            })
            .collect();
        if !pending.is_empty() {
            return Reply::Calls(pending);
        }
        match (conversation.made.is_empty(), planned.is_empty()) {
            (false, _) => Reply::Text(answers::from_results(&conversation.made)),
            (true, false) => Reply::Text(answers::not_offered(&planned)),
            (true, true) => Reply::Text(answers::direct(conversation.input)),
        }
    }
}

#[async_trait]
impl ChatModel for DemoModel {
    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, LlmError> {
        let prompt_tokens: u64 = request
            .messages
            .iter()
            .map(|m| m.content.split_whitespace().count() as u64)
            .sum();
        let (words, tool_calls) = match self.reply(&request) {
            Reply::Text(text) => (
                text.split_inclusive(' ')
                    .map(str::to_string)
                    .collect::<Vec<_>>(),
                Vec::new(),
            ),
            Reply::Calls(calls) => (Vec::new(), calls),
        };
        let usage = Usage {
            prompt_tokens,
            completion_tokens: words.len() as u64 + tool_calls.len() as u64,
            ..Usage::default()
        };
        let finish_reason = if tool_calls.is_empty() {
            "stop"
        } else {
            "tool_calls"
        };
        let finished = ModelEvent::Finished {
            tool_calls,
            finish_reason: Some(finish_reason.into()),
            usage: Some(usage),
        };
        let delay = self.word_delay;
        let text = stream::iter(words).then(move |word| async move {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            Ok(ModelEvent::Text(word))
        });
        Ok(text
            .chain(stream::once(async move { Ok(finished) }))
            .boxed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Message;
    use crate::types::ToolSpec;

    fn request(messages: &[Message], tools: &[&str]) -> ModelRequest {
        ModelRequest {
            max_tokens: None,
            model: "demo".into(),
            messages: messages.to_vec(),
            tools: tools
                .iter()
                .map(|n| ToolSpec {
                    name: n.to_string(),
                    description: String::new(),
                    parameters: serde_json::json!({}),
                })
                .collect(),
        }
    }

    fn text(reply: Reply) -> String {
        match reply {
            Reply::Text(text) => text,
            Reply::Calls(calls) => panic!("expected text, got {calls:?}"),
        }
    }

    /// A `user` message a skill hook injected, as `before_each_agent` does.
    fn hook_message(content: &str) -> Message {
        let mut message = Message::user(content);
        message.injection = Some(9);
        message
    }

    #[test]
    fn plans_then_calls_what_it_planned_then_answers_from_the_result() {
        let demo = DemoModel::default();
        let mut messages = vec![
            Message::system("system prompt"),
            Message::user("search for TODO"),
            hook_message("When you answer, cite the files you read as `path:line`."),
            Message::system("start with [NEED_TOOL] if you need tools"),
        ];
        let plan = text(demo.reply(&request(&messages, &[])));
        assert!(
            plan.starts_with("[NEED_TOOL] I will call search_text with"),
            "{plan}"
        );

        // As the agent loop does: the plan replaces the planning prompt, a hook speaks last.
        messages.pop();
        messages.push(Message::assistant(plan.trim_start_matches("[NEED_TOOL] ")));
        messages.push(hook_message("Work on the next step of the plan only."));
        let tools = ["list_dir", "read_file", "search_text"];
        let Reply::Calls(calls) = demo.reply(&request(&messages, &tools)) else {
            panic!("expected the planned call")
        };
        assert_eq!(
            calls,
            [ToolCall {
                id: "call_demo_1".into(),
                name: "search_text".into(),
                arguments: r#"{"pattern":"TODO"}"#.into(),
            }]
        );
        messages.pop();
        messages.push(Message::assistant_with_tools("", calls));
        messages.push(Message::tool_result("call_demo_1", "a.rs:3: // TODO"));
        messages.push(hook_message("Work on the next step of the plan only."));
        let answer = text(demo.reply(&request(&messages, &tools)));
        assert!(
            answer.starts_with("Found 1 match for TODO: `a.rs:3`."),
            "{answer}"
        );
    }

    #[test]
    fn a_plan_for_a_tool_the_chat_does_not_offer_ends_with_a_clear_answer() {
        let demo = DemoModel::default();
        let messages = [
            Message::user("list the files"),
            Message::assistant(r#"I will call list_dir with {"path":"."}, then answer."#),
        ];
        let answer = text(demo.reply(&request(&messages, &["read_file"])));
        assert!(
            answer.contains("planned to call `list_dir`") && answer.contains("does not offer"),
            "{answer}"
        );
    }

    #[test]
    fn a_greeting_is_a_direct_answer_that_names_the_demo() {
        let demo = DemoModel::default();
        let answer = text(demo.reply(&request(
            &[Message::user("hi"), Message::system("[NEED_TOOL]")],
            &[],
        )));
        assert!(
            answer.contains("demo model")
                && answer.contains("You said: \"hi\"")
                && answer.contains("OPENAI_API_KEY"),
            "{answer}"
        );
    }
}
