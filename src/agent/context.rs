//! The context settings (PROTOCOL section 10) and micro compaction: inside the agent loop, tool
//! results older than the last `micro_keep_rounds` rounds are replaced, in the upstream request
//! only, by a one-line stub; the chat's own list (and so the client's history) keeps them.

use crate::hooks::CompactInfo;
use crate::types::{Message, Role};

/// The `context:` settings.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ContextSettings {
    /// The model's context window; `None` = the built-in table by model name
    /// ([`crate::llm::context_window`]).
    pub window_tokens: Option<u64>,
    /// The fraction of the window at which compaction starts (reported to compaction hooks as
    /// `compact_threshold_tokens`).
    pub compact_threshold: f64,
    /// Agent rounds whose tool results reach the model in full; older ones are stubbed.
    pub micro_keep_rounds: usize,
    /// Message groups of the history that auto compaction keeps as they are (a group: a user
    /// message and everything up to the next one).
    pub keep_recent_groups: usize,
    /// The instructions of the summary call.
    pub summary_prompt: String,
}

impl Default for ContextSettings {
    fn default() -> Self {
        Self {
            window_tokens: None,
            compact_threshold: 0.8,
            micro_keep_rounds: 2,
            keep_recent_groups: 4,
            summary_prompt: super::prompts::DEFAULT_COMPACT_PROMPT.to_string(),
        }
    }
}

impl ContextSettings {
    /// The window times the threshold: an estimated input at or above it is compacted.
    pub fn threshold_for(&self, model: &str) -> u64 {
        (self.window_for(model) as f64 * self.compact_threshold) as u64
    }

    /// The window in use for `model`.
    pub fn window_for(&self, model: &str) -> u64 {
        self.window_tokens
            .unwrap_or_else(|| crate::llm::context_window(model))
    }
}

/// The stub that stands for a compacted tool result.
pub(super) fn stub(tool: &str) -> String {
    format!("[the result of {tool} was removed to save context; call {tool} again if you need it]")
}

/// Stubs, in `messages`, the tool results of every round but the last `keep_rounds` (a round:
/// an assistant message with tool calls and the results that follow it), unless a result is
/// no longer than its stub. Returns how many results were stubbed.
pub(super) fn micro_compact(messages: &mut [Message], keep_rounds: usize) -> usize {
    let rounds: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == Role::Assistant && !m.tool_calls.is_empty())
        .map(|(index, _)| index)
        .collect();
    if rounds.len() <= keep_rounds {
        return 0;
    }
    // `keep_rounds` 0 (the config refuses it, a library user may not): every round is old.
    let cutoff = rounds
        .get(rounds.len() - keep_rounds)
        .copied()
        .unwrap_or(messages.len());
    let mut tool_of = std::collections::HashMap::new();
    let mut stubbed = 0;
    for message in &mut messages[..cutoff] {
        if message.role == Role::Assistant {
            for call in &message.tool_calls {
                tool_of.insert(call.id.clone(), call.name.clone());
            }
            continue;
        }
        if message.role != Role::Tool {
            continue;
        }
        let tool = message
            .tool_call_id
            .as_ref()
            .and_then(|id| tool_of.get(id))
            .map_or("the tool", String::as_str);
        let stub = stub(tool);
        // A result shorter than its stub stays: stubbing it would only grow the request.
        if message.content.len() > stub.len() {
            message.content = stub;
            stubbed += 1;
        }
    }
    stubbed
}

/// The metadata of a compaction (`trigger` `auto`: hookwire decided it, not the client).
pub(super) fn info(
    settings: &ContextSettings,
    model: &str,
    before: &[Message],
    after: &[Message],
    summarized: usize,
    kept: usize,
) -> CompactInfo {
    let window = settings.window_for(model);
    CompactInfo {
        trigger: "auto".into(),
        context_window_tokens: window,
        compact_threshold_tokens: (window as f64 * settings.compact_threshold) as u64,
        estimated_input_tokens: crate::llm::estimate_tokens(before),
        estimated_post_compact_tokens: crate::llm::estimate_tokens(after),
        summarized_message_count: summarized,
        keep_recent_group_count: kept,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::ToolCall;

    fn round(id: &str, tool: &str, result: &str) -> [Message; 2] {
        let call = ToolCall {
            id: id.into(),
            name: tool.into(),
            arguments: "{}".into(),
        };
        let mut message = Message::new(Role::Tool, result);
        message.tool_call_id = Some(id.into());
        [Message::assistant_with_tools("", vec![call]), message]
    }

    #[test]
    fn stubs_only_the_rounds_before_the_kept_ones() {
        let mut messages = vec![Message::system("s"), Message::user("u")];
        let long = |word: &str| word.repeat(100);
        messages.extend(round("a", "read_file", &long("AAA")));
        messages.extend(round("b", "list_dir", &long("BBB")));
        messages.extend(round("c", "read_file", &long("CCC")));
        messages.extend(round("d", "list_dir", "short"));
        let mut compacted = messages.clone();
        assert_eq!(micro_compact(&mut compacted, 2), 2);
        assert_eq!(compacted[3].content, stub("read_file"));
        assert!(compacted[3].content.contains("read_file again"));
        assert_eq!(compacted[5].content, stub("list_dir"));
        assert_eq!(compacted[7].content, long("CCC"));
        assert_eq!(compacted[9].content, "short");
        assert_eq!(micro_compact(&mut compacted, 2), 0, "a stub stays a stub");
        let mut one = messages.clone();
        assert_eq!(
            micro_compact(&mut one, 1),
            3,
            "a short result is never stubbed"
        );
        assert_eq!(one[9].content, "short");
        let mut all = messages.clone();
        assert_eq!(micro_compact(&mut all, 4), 0);
        assert_eq!(all, messages);
        let settings = ContextSettings::default();
        let info = info(&settings, "gpt-4o", &messages, &compacted, 2, 2);
        assert_eq!(info.context_window_tokens, 128_000);
        assert_eq!(info.compact_threshold_tokens, 102_400);
        assert!(info.estimated_post_compact_tokens > 0);
        assert!(info.estimated_post_compact_tokens < info.estimated_input_tokens);
        assert!(info.estimated_post_compact_tokens < info.estimated_input_tokens);
    }
}
