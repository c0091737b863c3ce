//! The built-in demo model: offline and deterministic, so a first run shows the whole flow
//! (planning → plan → tool call → result → answer) without an API key.
//!
//! It reads only the request: the last user message decides what it does. Asked to read, list or
//! search, it plans with the marker and calls the matching tool; otherwise it answers directly and
//! explains how to configure a real model.

use std::time::Duration;

use async_trait::async_trait;
use futures::{stream, StreamExt};

use super::{ChatModel, LlmError, ModelEvent, ModelRequest, ModelStream};
use crate::agent::prompts::DEFAULT_MARKER;
use crate::message::{Message, Role, ToolCall, Usage};

/// How to reach a real model; part of every direct demo answer.
const CONFIGURE_HINT: &str = "To talk to a real model, set OPENAI_BASE_URL and/or OPENAI_API_KEY \
(or --llm-base-url / --llm-api-key) and pick one with --model.";

#[derive(Debug, Clone)]
pub struct DemoModel {
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
    Call(ToolCall),
}

impl DemoModel {
    pub fn new(marker: &str) -> Self {
        Self {
            marker: marker.to_string(),
            word_delay: Duration::from_millis(25),
        }
    }

    /// Sets the pause between streamed words (zero in tests).
    pub fn with_word_delay(mut self, delay: Duration) -> Self {
        self.word_delay = delay;
        self
    }

    fn reply(&self, request: &ModelRequest) -> Reply {
        let (input, after) = split_at_last_user(&request.messages);
        let wanted = wanted_tool(input);
        let tool_results: Vec<&Message> = after.iter().filter(|m| m.role == Role::Tool).collect();
        if !request.tools.is_empty() {
            if !tool_results.is_empty() {
                return Reply::Text(summarise(&tool_results));
            }
            if let Some(call) = wanted.filter(|c| request.tools.iter().any(|t| t.name == c.name)) {
                return Reply::Call(call);
            }
            return Reply::Text(direct_answer(input));
        }
        let is_planning = request
            .messages
            .iter()
            .any(|m| m.role == Role::System && m.content.contains(&self.marker));
        match wanted {
            Some(call) if is_planning => Reply::Text(format!(
                "{} I will call `{}` with {} and then answer from its result.",
                self.marker, call.name, call.arguments
            )),
            _ => Reply::Text(direct_answer(input)),
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
            Reply::Call(call) => (Vec::new(), vec![call]),
        };
        let usage = Usage {
            prompt_tokens,
            completion_tokens: words.len() as u64 + tool_calls.len() as u64,
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

/// The last user message's text, and the messages after it.
fn split_at_last_user(messages: &[Message]) -> (&str, &[Message]) {
    match messages.iter().rposition(|m| m.role == Role::User) {
        Some(index) => (messages[index].content.as_str(), &messages[index + 1..]),
        None => ("", messages),
    }
}

/// The tool a request asks for, by keyword: read, list or search.
fn wanted_tool(input: &str) -> Option<ToolCall> {
    let lower = input.to_lowercase();
    let has = |words: &[&str]| {
        words
            .iter()
            .any(|w| lower.split(|c: char| !c.is_alphanumeric()).any(|t| t == *w))
    };
    let (name, arguments) = if has(&["search", "grep", "find"]) {
        (
            "search_text",
            serde_json::json!({ "pattern": search_pattern(input) }),
        )
    } else if has(&["read", "open", "show", "cat", "summarise", "summarize"])
        && path_in(input).is_some()
    {
        (
            "read_file",
            serde_json::json!({ "path": path_in(input).unwrap_or_default() }),
        )
    } else if has(&["read", "summarise", "summarize"]) {
        ("read_file", serde_json::json!({ "path": "README.md" }))
    } else if has(&["list", "ls", "files", "folder", "directory", "dir"]) {
        (
            "list_dir",
            serde_json::json!({ "path": path_in(input).unwrap_or_else(|| ".".into()) }),
        )
    } else {
        return None;
    };
    Some(ToolCall {
        id: format!("call_demo_{name}"),
        name: name.into(),
        arguments: arguments.to_string(),
    })
}

/// The first word that looks like a path (`README.md`, `src/main.rs`).
fn path_in(input: &str) -> Option<String> {
    input
        .split_whitespace()
        .map(|w| {
            w.trim_matches(|c: char| "\"'`,;:!?()[]{}<>".contains(c))
                .trim_end_matches('.')
        })
        .find(|w| w.len() > 1 && (w.contains('.') || w.contains('/')) && !w.starts_with("http"))
        .map(str::to_string)
}

/// A quoted phrase, else the word after "for", else the last word.
fn search_pattern(input: &str) -> String {
    for quote in ['"', '\'', '`'] {
        let mut parts = input.split(quote);
        if let (Some(_), Some(inside), Some(_)) = (parts.next(), parts.next(), parts.next()) {
            if !inside.is_empty() {
                return regex::escape(inside);
            }
        }
    }
    let words: Vec<&str> = input.split_whitespace().collect();
    let after_for = words
        .iter()
        .position(|w| w.eq_ignore_ascii_case("for"))
        .and_then(|i| words.get(i + 1));
    let word = after_for.or(words.last()).copied().unwrap_or("TODO");
    regex::escape(word.trim_matches(|c: char| !c.is_alphanumeric() && c != '_'))
}

fn direct_answer(input: &str) -> String {
    let shown: String = input.chars().take(200).collect();
    format!(
        "Hello! I am hookwire's built-in demo model: I run offline and give fixed answers, so you can \
see how streaming, tools and hooks work. You said: \"{shown}\". Ask me to \"list the files\", \
\"read README.md\" or \"search for TODO\" to watch the planning round and the agent loop with tools. \
{CONFIGURE_HINT}"
    )
}

fn summarise(results: &[&Message]) -> String {
    let mut answer = String::from(
        "Here is what the tools returned (I am the demo model, so I only quote it):\n\n",
    );
    for result in results {
        let excerpt: Vec<&str> = result.content.lines().take(12).collect();
        let more = result.content.lines().count().saturating_sub(excerpt.len());
        answer.push_str("```\n");
        answer.push_str(&excerpt.join("\n"));
        answer.push_str("\n```\n");
        if more > 0 {
            answer.push_str(&format!("({more} more lines)\n"));
        }
    }
    answer.push('\n');
    answer.push_str(CONFIGURE_HINT);
    answer
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::ToolSpec;

    fn request(messages: Vec<Message>, tools: &[&str]) -> ModelRequest {
        ModelRequest {
            model: "demo".into(),
            messages,
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

    #[test]
    fn plans_then_calls_then_summarises() {
        let demo = DemoModel::default();
        let planning = request(
            vec![
                Message::user("read README.md please"),
                Message::system("say [NEED_TOOL]"),
            ],
            &[],
        );
        let Reply::Text(plan) = demo.reply(&planning) else {
            panic!("expected text")
        };
        assert!(plan.starts_with("[NEED_TOOL]"), "{plan}");
        let round = request(vec![Message::user("read README.md please")], &["read_file"]);
        let Reply::Call(call) = demo.reply(&round) else {
            panic!("expected a call")
        };
        assert_eq!(
            (call.name.as_str(), call.arguments.as_str()),
            ("read_file", r#"{"path":"README.md"}"#)
        );
        let done = request(
            vec![
                Message::user("read README.md"),
                Message::tool_result("c", "# Title\nbody"),
            ],
            &["read_file"],
        );
        let Reply::Text(answer) = demo.reply(&done) else {
            panic!("expected text")
        };
        assert!(answer.contains("# Title"), "{answer}");
    }

    #[test]
    fn greeting_is_a_direct_answer_that_names_the_demo() {
        let demo = DemoModel::default();
        let Reply::Text(answer) = demo.reply(&request(
            vec![Message::user("hi"), Message::system("[NEED_TOOL]")],
            &[],
        )) else {
            panic!("expected text")
        };
        assert!(
            answer.contains("demo model") && answer.contains("OPENAI_API_KEY"),
            "{answer}"
        );
    }

    #[test]
    fn search_and_list_pick_their_tools() {
        assert_eq!(
            wanted_tool("search for \"fn main\"").map(|c| c.arguments),
            Some(r#"{"pattern":"fn main"}"#.into())
        );
        assert_eq!(
            wanted_tool("please list the files").map(|c| c.name),
            Some("list_dir".into())
        );
        assert_eq!(wanted_tool("hello there"), None);
    }
}
