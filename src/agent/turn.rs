//! What one chat adds to the conversation (docs/protocol.md §13): the messages the client appends
//! to the history it sent, recorded as the chat makes them — the user input as the model saw it,
//! persistent hook messages where they were injected, the plan, each round's assistant message
//! with its tool calls and the tool results (long ones cut), and the final answer. The server
//! sends it as `done.turn` (and `error.turn` when something already happened).

use crate::types::{HookMessage, Message, Role, ToolCall};

/// Gives each of a reply's calls an id that no message of the conversation (`messages`: the
/// client's history and the chat's own) and no other call of the reply has. A model may repeat
/// ids (or send none: the reader then names them `call_<index>`), and the client's next chat
/// would refuse a history that repeats one. A repeated id becomes `<id>_<n>`, the first free.
pub(super) fn unique_call_ids<'a>(
    calls: &mut [ToolCall],
    messages: impl IntoIterator<Item = &'a Message>,
) {
    use std::collections::HashSet;
    if calls.is_empty() {
        return;
    }
    let mut taken: HashSet<String> = messages
        .into_iter()
        .flat_map(|m| {
            m.tool_calls
                .iter()
                .map(|c| c.id.clone())
                .chain(m.tool_call_id.clone())
        })
        .collect();
    for call in calls {
        if call.id.is_empty() {
            call.id = "call".into();
        }
        if !taken.contains(&call.id) {
            taken.insert(call.id.clone());
            continue;
        }
        let fresh = (2..)
            .map(|n| format!("{}_{n}", call.id))
            .find(|id| !taken.contains(id))
            .unwrap_or_default();
        tracing::debug!(from = %call.id, to = %fresh, "a repeated tool call id renamed");
        taken.insert(fresh.clone());
        call.id = fresh;
    }
}

/// The turn of one running chat.
#[derive(Debug, Default)]
pub(super) struct TurnRecord {
    messages: Vec<Message>,
    /// Tool results longer than this (characters) are cut.
    limit: usize,
    /// How many of the chat's kept answer pieces are already in `messages`.
    kept_covered: usize,
    /// How much of the chat's visible text is already in `messages` (bytes).
    visible_covered: usize,
    /// A tool ran or a plan was shown: the person saw something even without text.
    acted: bool,
}

impl TurnRecord {
    pub(super) fn new(limit: usize) -> Self {
        Self {
            limit,
            ..Self::default()
        }
    }

    /// The user input, as it entered the list.
    pub(super) fn user(&mut self, content: &str) {
        self.messages.push(Message::user(content));
    }

    /// A persistent hook message, with its mark, where it was injected.
    pub(super) fn hook(&mut self, hook: &HookMessage) {
        let mut message = Message::new(hook.role, hook.content.clone());
        message.hook = Some(hook.tag.clone());
        self.messages.push(message);
    }

    /// The planning round's plan (an assistant message the model sees in its rounds).
    pub(super) fn plan(&mut self, plan: &str) {
        self.acted = true;
        self.messages.push(Message::assistant(plan));
    }

    /// A round's assistant message with its calls; answer pieces kept before it (`kept`, not
    /// yet holding this message's text) and not yet in the turn go in first, as one assistant
    /// message. `visible`: the length of the text shown so far, this message's included.
    pub(super) fn calls(
        &mut self,
        content: &str,
        calls: &[ToolCall],
        kept: &[String],
        visible: usize,
    ) {
        self.settle(kept);
        self.messages
            .push(Message::assistant_with_tools(content, calls.to_vec()));
        self.kept_covered = kept.len() + usize::from(!content.is_empty());
        self.visible_covered = visible;
    }

    /// A tool's result, cut at the limit with a marker saying how much was left out.
    pub(super) fn tool(&mut self, call_id: &str, name: &str, content: &str) {
        self.acted = true;
        let content = cut(content, self.limit);
        self.messages
            .push(Message::named_tool_result(call_id, name, content));
    }

    /// The turn of a chat that ended with `done`: the kept answer pieces not yet in it as the
    /// final assistant message; calls left without an answer (the chat stopped in the middle of
    /// a round) are answered with a note, unless they wait for approval (`pending`).
    pub(super) fn done(mut self, kept: &[String], pending: bool) -> Vec<Message> {
        self.settle(kept);
        if !pending {
            self.answer_unanswered("the tool call did not run: the chat ended before it");
        }
        self.messages
    }

    /// The turn of a cancelled chat: everything shown, the interrupted step's text included.
    pub(super) fn cancelled(mut self, visible: &str) -> Vec<Message> {
        let rest = visible
            .get(self.visible_covered..)
            .unwrap_or_default()
            .trim_start_matches('\n');
        if !rest.is_empty() {
            self.messages.push(Message::assistant(rest));
        }
        self.answer_unanswered("the tool call did not run: the chat was cancelled");
        self.messages
    }

    /// The turn of a failed chat, when text had streamed or a tool had run (else empty): what
    /// happened before the failure; the failed step is not in it.
    pub(super) fn failed(mut self, kept: &[String], streamed: bool) -> Vec<Message> {
        if !streamed && !self.acted {
            return Vec::new();
        }
        self.settle(kept);
        self.answer_unanswered("the tool call did not run: the chat failed before it");
        self.messages
    }

    /// The kept pieces after the covered ones, as one assistant message.
    fn settle(&mut self, kept: &[String]) {
        let rest = kept.get(self.kept_covered..).unwrap_or_default();
        let text = rest
            .iter()
            .filter(|piece| !piece.is_empty())
            .cloned()
            .collect::<Vec<_>>()
            .join("\n\n");
        if !text.is_empty() {
            self.messages.push(Message::assistant(text));
        }
        self.kept_covered = self.kept_covered.max(kept.len());
    }

    /// Every call of an assistant message gets its tool message, right after the ones it has:
    /// a history with an unanswered call is refused, by hookwire and by the model APIs.
    fn answer_unanswered(&mut self, note: &str) {
        let mut index = 0;
        while index < self.messages.len() {
            let calls = self.messages[index].tool_calls.clone();
            index += 1;
            if calls.is_empty() {
                continue;
            }
            let mut end = index;
            while self.messages.get(end).is_some_and(|m| m.role == Role::Tool) {
                end += 1;
            }
            for call in calls {
                let answered = self.messages[index..end]
                    .iter()
                    .any(|m| m.tool_call_id.as_deref() == Some(call.id.as_str()));
                if !answered {
                    let message = Message::named_tool_result(call.id, call.name, note);
                    self.messages.insert(end, message);
                    end += 1;
                }
            }
            index = end;
        }
    }
}

/// `content` with at most `limit` characters; a cut one ends with a marker saying how much was
/// left out.
fn cut(content: &str, limit: usize) -> String {
    let Some((at, _)) = content.char_indices().nth(limit) else {
        return content.to_string();
    };
    let left_out = content[at..].chars().count();
    format!(
        "{}\n[… {left_out} more characters of this tool result were left out of the history \
         (limits.history_tool_result_chars)]",
        &content[..at]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "read_file".into(),
            arguments: "{}".into(),
        }
    }

    #[test]
    fn repeated_and_missing_call_ids_are_renamed_to_free_ones() {
        let mut earlier = Message::assistant("");
        earlier.tool_calls = vec![call("call_0"), call("call_0_2")];
        let answer = Message::tool_result("call_0", "x");
        let mut calls = vec![
            call("call_0"),
            call("call_0"),
            call(""),
            call("b"),
            call(""),
        ];
        unique_call_ids(&mut calls, [&earlier, &answer]);
        let ids: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["call_0_3", "call_0_4", "call", "b", "call_2"]);
        let mut fresh = vec![call("a"), call("b")];
        unique_call_ids(&mut fresh, [&earlier]);
        assert_eq!(fresh[0].id, "a", "ids that are free stay");
        assert_eq!(fresh[1].id, "b");
    }

    #[test]
    fn long_results_are_cut_with_what_was_left_out() {
        assert_eq!(cut("héllo", 5), "héllo");
        let cut = cut("héllo wörld", 5);
        assert!(cut.starts_with("héllo\n[… 6 more characters"), "{cut}");
    }

    #[test]
    fn kept_text_before_a_round_and_after_the_last_one_are_assistant_messages() {
        let mut turn = TurnRecord::new(100);
        turn.user("q");
        let kept = vec!["first".to_string()];
        turn.calls("looking", &[call("a")], &kept, 12);
        turn.tool("a", "read_file", "text");
        let kept = ["first", "looking", "answer"].map(String::from);
        let messages = turn.done(&kept, false);
        let shape: Vec<(Role, &str, usize)> = messages
            .iter()
            .map(|m| (m.role, m.content.as_str(), m.tool_calls.len()))
            .collect();
        assert_eq!(
            shape,
            [
                (Role::User, "q", 0),
                (Role::Assistant, "first", 0),
                (Role::Assistant, "looking", 1),
                (Role::Tool, "text", 0),
                (Role::Assistant, "answer", 0),
            ]
        );
        assert_eq!(messages[3].tool_name.as_deref(), Some("read_file"));
    }

    #[test]
    fn unanswered_calls_get_a_note_unless_they_wait_for_approval() {
        let mut turn = TurnRecord::new(100);
        turn.calls("", &[call("a"), call("b")], &[], 0);
        turn.tool("a", "read_file", "one");
        let messages = turn.done(&[], false);
        assert_eq!(messages.len(), 3);
        assert_eq!(messages[2].tool_call_id.as_deref(), Some("b"));
        let mut turn = TurnRecord::new(100);
        turn.calls("", &[call("a"), call("b")], &[], 0);
        turn.tool("a", "read_file", "one");
        assert_eq!(turn.done(&[], true).len(), 2);
    }

    #[test]
    fn a_failure_before_anything_was_shown_has_no_turn() {
        let mut turn = TurnRecord::new(100);
        turn.user("q");
        assert!(turn.failed(&[], false).is_empty());
        let mut turn = TurnRecord::new(100);
        turn.user("q");
        assert_eq!(turn.failed(&["partial".into()], true).len(), 2);
    }
}
