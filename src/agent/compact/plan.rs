//! The pure part of compaction: a history's message groups, the plan of what a compaction
//! replaces and keeps, the summary call's transcript (within the window), and the summary
//! message.

use std::ops::Range;

use crate::llm::estimate_tokens;
use crate::types::{CompactTag, Message, Role};

/// A message of the client's history, with its place in the list the client sent (a forged
/// message that was dropped leaves a gap): a `compact` frame's count is in those places.
#[derive(Debug, Clone, PartialEq)]
pub(in crate::agent) struct Sent {
    pub(in crate::agent) index: usize,
    pub(in crate::agent) message: Message,
}

/// The groups of a history: a user message and everything up to the next user message, so a
/// hook message, an assistant's tool calls and their results stay with the turn they belong to.
/// What comes before the first user message, and an earlier summary (a user message with
/// `_compact`) with its pinned hooks, belong to the first group.
pub(in crate::agent) fn groups(history: &[Sent]) -> Vec<Range<usize>> {
    let mut starts: Vec<usize> = history
        .iter()
        .enumerate()
        .filter(|(_, sent)| sent.message.role == Role::User && sent.message.compact.is_none())
        .map(|(at, _)| at)
        .collect();
    match starts.first_mut() {
        Some(first) => *first = 0,
        None if history.is_empty() => return Vec::new(),
        None => starts.push(0),
    }
    let ends = starts.iter().skip(1).copied().chain([history.len()]);
    starts.iter().zip(ends).map(|(&s, e)| s..e).collect()
}

/// What a compaction replaces.
#[derive(Debug, Clone, PartialEq)]
pub(in crate::agent) struct Plan {
    /// How many messages of the history as sent are replaced (the frame's `count`).
    pub(in crate::agent) count: usize,
    /// The messages the summary is made of, oldest first.
    pub(in crate::agent) summarised: Vec<Message>,
    /// The persistent hook messages among the replaced ones: they follow the summary, verbatim.
    pub(in crate::agent) pinned: Vec<Message>,
    /// The messages kept as they are, with their places.
    pub(in crate::agent) recent: Vec<Sent>,
    /// How many groups are kept.
    pub(in crate::agent) kept_groups: usize,
    /// The place in the history as sent of the last summarised message.
    pub(in crate::agent) last_summarised: usize,
}

/// The plan that keeps the last `keep` groups of `history` (`sent_len` messages as sent);
/// `None` when nothing would be summarised.
pub(in crate::agent) fn plan(history: &[Sent], sent_len: usize, keep: usize) -> Option<Plan> {
    let groups = groups(history);
    let kept_groups = keep.min(groups.len());
    let split = groups
        .len()
        .checked_sub(kept_groups)
        .and_then(|first_kept| groups.get(first_kept))
        .map_or(history.len(), |group| group.start);
    let (old, recent) = history.split_at(split);
    let (pinned, summarised): (Vec<Message>, Vec<Message>) = old
        .iter()
        .map(|sent| sent.message.clone())
        .partition(|message| message.hook.is_some());
    let last_summarised = old
        .iter()
        .rev()
        .find(|sent| sent.message.hook.is_none())?
        .index;
    Some(Plan {
        count: recent.first().map_or(sent_len, |sent| sent.index),
        summarised,
        pinned,
        recent: recent.to_vec(),
        kept_groups,
        last_summarised,
    })
}

/// The newest of `messages` whose transcript fits `room` tokens (at least the last one): a
/// history too long to summarise in one call loses its oldest part, which a summary could not
/// have held anyway.
pub(in crate::agent) fn fitting(messages: &[Message], room: u64) -> &[Message] {
    // The transcript quotes each message with a line of its own around it.
    const FRAME: u64 = 8;
    let mut used = 0;
    let mut first = messages.len();
    for (at, message) in messages.iter().enumerate().rev() {
        used += estimate_tokens([message]) + FRAME;
        if used > room && first < messages.len() {
            break;
        }
        first = at;
    }
    &messages[first..]
}

/// The longest tool result the summary call reads (in characters); the rest is cut.
const TRANSCRIPT_TOOL_RESULT: usize = 2_000;

/// The summary call's input: the summarised messages as one readable transcript (one user
/// message, so any chat template takes it), tool calls and their results included. The demo
/// model knows a summary call by its first sentence (`llm/demo/side.rs`).
pub(in crate::agent) fn transcript(messages: &[Message]) -> String {
    let mut text =
        String::from("Summarise this earlier part of the conversation.\n\n<conversation>\n");
    for message in messages {
        let who = match (message.role, &message.compact) {
            (_, Some(_)) => "summary of an even earlier part",
            (role, _) => role.as_str(),
        };
        let content = message.content.trim_end();
        let cut = content.char_indices().nth(TRANSCRIPT_TOOL_RESULT);
        match cut {
            Some((at, _)) if message.role == Role::Tool => text.push_str(&format!(
                "[{who}]\n{}\n[… {} more characters]\n",
                &content[..at],
                content[at..].chars().count()
            )),
            _ if content.is_empty() => text.push_str(&format!("[{who}]\n")),
            _ => text.push_str(&format!("[{who}]\n{content}\n")),
        }
        for call in &message.tool_calls {
            text.push_str(&format!("(called {} {})\n", call.name, call.arguments));
        }
        text.push('\n');
    }
    text.push_str("</conversation>");
    text
}

/// The tags around a summary: it is user text, and says so.
const SUMMARY_OPEN: &str = "<summary of the earlier conversation>";
const SUMMARY_CLOSE: &str = "</summary of the earlier conversation>";

/// The summary as the client stores it and the model reads it: a `user` message in its tags,
/// with an informative `_compact` (never signed: it has the trust of anything a user types).
pub(in crate::agent) fn summary_message(summary: &str, count: usize) -> Message {
    let mut message = Message::user(format!("{SUMMARY_OPEN}\n{summary}\n{SUMMARY_CLOSE}"));
    message.compact = Some(CompactTag { count });
    message
}
