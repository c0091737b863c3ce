//! The context settings (docs/protocol.md §10) and micro compaction: when a model call's estimated
//! input reaches `micro_threshold` of the window, tool results outside the last
//! `micro_keep_rounds` rounds (of the chat and of the history) are replaced, in the upstream
//! request only, by a one-line stub; the chat's own list (and so the client's history) keeps them.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Instant;

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
    /// The fraction of the window at which old tool results are stubbed in the request.
    pub micro_threshold: f64,
    /// Agent rounds whose tool results reach the model in full; older ones are stubbed.
    pub micro_keep_rounds: usize,
    /// Message groups of the history that auto compaction keeps as they are (a group: a user
    /// message and everything up to the next one).
    pub keep_recent_groups: usize,
    /// The instructions of the summary call.
    pub summary_prompt: String,
    /// The windows model servers stated (used when `window_tokens` is unset).
    pub learned: LearnedWindows,
}

impl Default for ContextSettings {
    fn default() -> Self {
        Self {
            window_tokens: None,
            compact_threshold: 0.8,
            micro_threshold: 0.6,
            micro_keep_rounds: 2,
            keep_recent_groups: 4,
            summary_prompt: super::prompts::DEFAULT_COMPACT_PROMPT.to_string(),
            learned: LearnedWindows::default(),
        }
    }
}

impl ContextSettings {
    /// The window times the threshold: an estimated input at or above it is compacted.
    pub fn threshold_for(&self, model: &str) -> u64 {
        share_of(self.window_for(model), self.compact_threshold)
    }

    /// The window times the micro threshold: at or above it, old tool results are stubbed.
    pub fn micro_threshold_for(&self, model: &str) -> u64 {
        share_of(self.window_for(model), self.micro_threshold)
    }

    /// The least of the micro threshold, the threshold and the window (the window looked up
    /// once: this is asked at every model call).
    pub(super) fn lowest_limit_for(&self, model: &str) -> u64 {
        let window = self.window_for(model);
        share_of(window, self.micro_threshold)
            .min(share_of(window, self.compact_threshold))
            .min(window)
    }

    /// The window in use for `model`: `window_tokens`, else what its server stated, else the
    /// built-in table by name.
    pub fn window_for(&self, model: &str) -> u64 {
        self.window_tokens
            .or_else(|| self.learned.get(model))
            .unwrap_or_else(|| crate::llm::context_window(model))
    }

    /// The most a reply may hold, when the model's server stated its window: a quarter of the
    /// window, and no more than the input (`estimated`, asked only then) leaves of it. `None` (no
    /// limit sent) when the window is configured or only guessed from the name.
    pub(super) fn reply_limit(&self, model: &str, estimated: impl FnOnce() -> u64) -> Option<u32> {
        if self.window_tokens.is_some() {
            return None;
        }
        let window = self.learned.get(model)?;
        let limit = (window / 4)
            .min(window.saturating_sub(estimated()))
            .max(MIN_REPLY);
        Some(u32::try_from(limit).unwrap_or(u32::MAX))
    }
}

/// The smallest reply limit sent: below it an answer cannot say anything useful (the call
/// fails on the window instead, which compaction can fix).
const MIN_REPLY: u64 = 64;

/// How long after a server did not state its window it is asked again (a local server may
/// still have been loading its model).
const ASK_AGAIN_AFTER: std::time::Duration = std::time::Duration::from_secs(300);

/// `fraction` of `window` tokens, rounded down.
fn share_of(window: u64, fraction: f64) -> u64 {
    (window as f64 * fraction) as u64
}

/// The context windows model servers stated, by model, learned at the first chat of each model
/// (`ChatModel::server_window`). A cache of facts, not a setting: it compares equal to any other.
#[derive(Clone, Default)]
pub struct LearnedWindows(Arc<RwLock<HashMap<String, Learned>>>);

#[derive(Debug, Clone, Copy)]
enum Learned {
    Known(u64),
    /// A chat is asking: the others go on with the name's window meanwhile.
    Asking,
    /// The server did not say, at that time.
    Unknown(Instant),
}

impl LearnedWindows {
    // Read by every model call's estimates; written once per model.
    fn get(&self, model: &str) -> Option<u64> {
        let learned = self.0.read().unwrap_or_else(PoisonError::into_inner);
        match learned.get(model) {
            Some(Learned::Known(tokens)) => Some(*tokens),
            _ => None,
        }
    }

    /// Whether this caller should ask the server now (and, if so, the others should not).
    pub(super) fn start_asking(&self, model: &str) -> bool {
        // Every chat asks: once the window is known (or being asked), a read says so.
        {
            let learned = self.0.read().unwrap_or_else(PoisonError::into_inner);
            if matches!(
                learned.get(model),
                Some(Learned::Known(_) | Learned::Asking)
            ) {
                return false;
            }
        }
        let mut learned = self.0.write().unwrap_or_else(PoisonError::into_inner);
        let ask = match learned.get(model) {
            None => true,
            Some(Learned::Unknown(when)) => when.elapsed() >= ASK_AGAIN_AFTER,
            Some(Learned::Known(_) | Learned::Asking) => false,
        };
        if ask {
            learned.insert(model.to_string(), Learned::Asking);
        }
        ask
    }

    pub(super) fn record(&self, model: &str, tokens: Option<u64>) {
        let learned = match tokens {
            Some(tokens) => Learned::Known(tokens),
            None => Learned::Unknown(Instant::now()),
        };
        self.0
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(model.to_string(), learned);
    }
}

impl PartialEq for LearnedWindows {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for LearnedWindows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let learned = self.0.read().unwrap_or_else(PoisonError::into_inner);
        f.debug_map().entries(learned.iter()).finish()
    }
}

/// The longest arguments a stub quotes (in characters); longer ones are cut with `…`.
const STUB_ARGUMENTS: usize = 120;

/// The stub that stands for a compacted tool result: the tool, its arguments and what was cut.
pub(super) fn stub(tool: &str, arguments: &str, removed_chars: usize) -> String {
    let arguments = arguments.trim();
    let mut quoted: String = arguments.chars().take(STUB_ARGUMENTS).collect();
    if quoted.len() < arguments.len() {
        quoted.push('…');
    }
    let call = if quoted.is_empty() {
        tool.to_string()
    } else {
        format!("{tool} {quoted}")
    };
    format!(
        "[the result of {call} ({removed_chars} characters) was removed to save context; call {tool} again if you need it]"
    )
}

/// Stubs, in `messages`, the tool results of every round but the last `keep_rounds` (a round:
/// an assistant message with tool calls and the results that follow it, in the history the
/// client sent or in this chat), unless a result is no longer than its stub. Returns how many
/// results were stubbed. Whether to call it at all is the estimate's decision (the caller's).
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
                tool_of.insert(call.id.clone(), (call.name.clone(), call.arguments.clone()));
            }
            continue;
        }
        if message.role != Role::Tool {
            continue;
        }
        let (tool, arguments) = message
            .tool_call_id
            .as_ref()
            .and_then(|id| tool_of.get(id))
            .map_or(("the tool", ""), |(name, arguments)| {
                (name.as_str(), arguments.as_str())
            });
        if is_stub(&message.content) {
            continue;
        }
        let stub = stub(tool, arguments, message.content.chars().count());
        // A result shorter than its stub stays: stubbing it would only grow the request.
        if message.content.len() > stub.len() {
            message.content = stub;
            stubbed += 1;
        }
    }
    stubbed
}

/// Whether a result is already a stub (a stub stays a stub, it is not stubbed again).
fn is_stub(content: &str) -> bool {
    content.starts_with("[the result of ") && content.ends_with(" again if you need it]")
}

/// A call's messages as they would be sent: their estimate, and, when it reaches the micro
/// threshold and a result could be stubbed, the micro-compacted copy with its own estimate (no
/// hook has been asked yet: [`Sendable::estimated`] is what decides on auto compaction).
pub(super) struct Sendable {
    /// The estimate of the messages as they are.
    pub(super) full: u64,
    /// The copy with old tool results stubbed, how many were, and its estimate.
    pub(super) micro: Option<(Vec<Message>, usize, u64)>,
}

impl Sendable {
    /// Whether the messages (and `extra`) are surely below the micro and the compaction
    /// thresholds and the window, known without the tokenizer (from [`crate::llm::token_bound`]): then
    /// nothing is compacted and nothing needs counting. Most conversations never leave it.
    pub(super) fn surely_small(
        messages: &[Message],
        extra: Option<&Message>,
        settings: &ContextSettings,
        model: &str,
    ) -> bool {
        crate::llm::token_bound(messages.iter().chain(extra)) < settings.lowest_limit_for(model)
    }

    /// The messages (and `extra`, the user input still to come, at the start of a chat) of one
    /// model call. Below the micro threshold nothing is copied.
    pub(super) fn of(
        messages: &[Message],
        extra: Option<&Message>,
        settings: &ContextSettings,
        model: &str,
    ) -> Self {
        let full = crate::llm::estimate_tokens(messages.iter().chain(extra));
        if full < settings.micro_threshold_for(model) {
            return Self { full, micro: None };
        }
        let mut copy: Vec<Message> = messages.iter().chain(extra).cloned().collect();
        let stubbed = micro_compact(&mut copy, settings.micro_keep_rounds);
        if stubbed == 0 {
            return Self { full, micro: None };
        }
        let estimate = crate::llm::estimate_tokens(&copy);
        Self {
            full,
            micro: Some((copy, stubbed, estimate)),
        }
    }

    /// The estimate of what would be sent (micro-compacted when it applies).
    pub(super) fn estimated(&self) -> u64 {
        self.micro
            .as_ref()
            .map_or(self.full, |(_, _, estimate)| *estimate)
    }
}

/// The metadata of a micro compaction (`trigger` `auto`: hookwire decided it, not the client;
/// `compact_threshold_tokens` is the micro threshold that was reached).
pub(super) fn micro_info(
    settings: &ContextSettings,
    model: &str,
    before: u64,
    after: u64,
    stubbed: usize,
) -> CompactInfo {
    CompactInfo {
        trigger: "auto".into(),
        context_window_tokens: settings.window_for(model),
        compact_threshold_tokens: settings.micro_threshold_for(model),
        estimated_input_tokens: before,
        estimated_post_compact_tokens: after,
        summarized_message_count: stubbed,
        keep_recent_group_count: settings.micro_keep_rounds,
        configured_recent_group_count: settings.micro_keep_rounds,
        compact_through: None,
        boundary: None,
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
            arguments: format!(r#"{{"path":"{id}.rs"}}"#),
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
        assert_eq!(
            compacted[3].content,
            stub("read_file", r#"{"path":"a.rs"}"#, 300)
        );
        assert_eq!(
            compacted[3].content,
            r#"[the result of read_file {"path":"a.rs"} (300 characters) was removed to save context; call read_file again if you need it]"#
        );
        assert_eq!(
            compacted[5].content,
            stub("list_dir", r#"{"path":"b.rs"}"#, 300)
        );
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
    }

    #[test]
    fn nothing_is_stubbed_below_the_micro_threshold() {
        let mut messages = vec![Message::system("s"), Message::user("u")];
        for id in ["a", "b", "c"] {
            messages.extend(round(id, "read_file", &"word ".repeat(100)));
        }
        let full = crate::llm::estimate_tokens(&messages);
        let settings = |window: u64| ContextSettings {
            window_tokens: Some(window),
            ..ContextSettings::default()
        };
        // 0.6 × window just above the estimate: nothing is copied or stubbed.
        let below = Sendable::of(&messages, None, &settings(full * 10 / 6 + 10), "m");
        assert!(below.micro.is_none());
        assert_eq!(below.estimated(), full);
        // At the threshold: the first round's result is stubbed, the estimate drops.
        let above = Sendable::of(&messages, None, &settings(full * 10 / 6 - 10), "m");
        let (copy, stubbed, estimate) = above.micro.as_ref().unwrap();
        assert_eq!(*stubbed, 1);
        assert!(copy[3].content.starts_with("[the result of read_file"));
        assert!(*estimate < full);
        assert_eq!(above.estimated(), *estimate);
        let extra = Message::user("next");
        let with_input = Sendable::of(&messages, Some(&extra), &settings(1_000_000), "m");
        assert_eq!(
            with_input.full,
            crate::llm::estimate_tokens(messages.iter().chain([&extra]))
        );
        let info = micro_info(&settings(1000), "m", 700, 400, 1);
        assert_eq!(info.compact_threshold_tokens, 600);
        assert_eq!(info.keep_recent_group_count, 2);
    }

    #[test]
    fn the_lowest_limit_is_the_least_of_both_thresholds_and_the_window() {
        let settings = |micro: f64, compact: f64| ContextSettings {
            window_tokens: Some(1000),
            micro_threshold: micro,
            compact_threshold: compact,
            ..ContextSettings::default()
        };
        assert_eq!(settings(0.6, 0.8).lowest_limit_for("m"), 600);
        assert_eq!(settings(0.9, 0.5).lowest_limit_for("m"), 500);
        assert_eq!(settings(1.5, 1.2).lowest_limit_for("m"), 1000);
        let named = ContextSettings::default();
        assert_eq!(
            named.lowest_limit_for("GPT-4-0613"),
            named.micro_threshold_for("gpt-4-0613")
        );
    }

    #[test]
    fn a_stub_quotes_long_arguments_cut() {
        let long = format!(r#"{{"pattern":"{}"}}"#, "x".repeat(500));
        let stub = stub("search_text", &long, 9000);
        assert!(stub.contains("(9000 characters)"), "{stub}");
        assert!(stub.contains("x…"), "{stub}");
        assert!(stub.len() < 300, "{stub}");
        assert_eq!(
            super::stub("list_dir", "", 10),
            "[the result of list_dir (10 characters) was removed to save context; call list_dir again if you need it]"
        );
    }
}
