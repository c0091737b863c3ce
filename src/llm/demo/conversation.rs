//! What the demo can know from a request's messages alone: the person's own words, whether this
//! is the planning round, the plan it wrote earlier, and the calls made since with their results.
//!
//! Hooks add messages everywhere (skill hooks as `user` or `system` messages, retry feedback as
//! `user` messages), so "the last user message" is not the person's input. The input is the last
//! `user` message that carries no hook mark and comes before the plan and the planning prompt:
//! whatever follows those was added by hookwire or a hook during this chat.

use crate::types::{Message, Role, ToolCall};

use super::plan;

#[derive(Debug)]
pub(super) struct Conversation<'a> {
    /// The person's input for this chat ("" when there is none).
    pub(crate) input: &'a str,
    /// The planning prompt is in the request.
    pub(crate) planning: bool,
    /// The calls of the demo's own plan, when it wrote one.
    pub(crate) plan: Option<Vec<ToolCall>>,
    /// The calls made since the plan (or the input), each with its result when it has one.
    pub(crate) made: Vec<(&'a ToolCall, Option<&'a str>)>,
}

impl<'a> Conversation<'a> {
    /// Reads `messages`; `marker` is the planning marker (the planning prompt names it).
    pub(super) fn read(messages: &'a [Message], marker: &str) -> Self {
        let prompt_at = messages.iter().rposition(|m| {
            m.role == Role::System && !marker.is_empty() && m.content.contains(marker)
        });
        // The agent loop keeps the plan without the marker; a plan sent back for a retry has it.
        let plan_of = |m: &Message| {
            let content = m.content.trim_start();
            plan::read(content.strip_prefix(marker).unwrap_or(content))
        };
        let is_plan = |m: &Message| {
            m.role == Role::Assistant && m.tool_calls.is_empty() && !plan_of(m).is_empty()
        };
        // The history holds earlier chats' turns too: a plan followed by a final answer (an
        // assistant message that is neither a plan nor a call) belongs to an earlier chat.
        let answered_at = messages
            .iter()
            .rposition(|m| m.role == Role::Assistant && m.tool_calls.is_empty() && !is_plan(m));
        let plan_at = messages
            .iter()
            .rposition(is_plan)
            .filter(|&at| answered_at.is_none_or(|answer| answer < at));
        let end = [prompt_at, plan_at]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(messages.len());
        let input_at = messages[..end]
            .iter()
            .rposition(|m| m.role == Role::User && m.injection.is_none() && m.hook.is_none());
        let since = plan_at.or(input_at).map_or(0, |at| at + 1);
        let later = &messages[since..];
        let result_of = |id: &str| {
            later
                .iter()
                .find(|m| m.role == Role::Tool && m.tool_call_id.as_deref() == Some(id))
                .map(|m| m.content.as_str())
        };
        let made = later
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .flat_map(|m| &m.tool_calls)
            .map(|call| (call, result_of(&call.id)))
            .collect();
        Conversation {
            input: input_at.map_or("", |at| messages[at].content.as_str()),
            planning: prompt_at.is_some(),
            plan: plan_at.map(|at| plan_of(&messages[at])),
            made,
        }
    }

    /// Whether a call with `call`'s name and arguments was made since the plan.
    pub(super) fn was_made(&self, call: &ToolCall) -> bool {
        self.made.iter().any(|(made, _)| {
            made.name == call.name && made.arguments_value() == call.arguments_value()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MARKER: &str = "[NEED_TOOL]";

    fn injected(mut message: Message) -> Message {
        message.injection = Some(7);
        message
    }

    fn planning_prompt() -> Message {
        injected(Message::system(format!("start your reply with {MARKER}")))
    }

    fn a_plan() -> Message {
        Message::assistant(plan::write(&[ToolCall {
            id: String::new(),
            name: "list_dir".into(),
            arguments: r#"{"path":"."}"#.into(),
        }]))
    }

    #[test]
    fn the_input_is_the_persons_not_a_hooks_or_a_retrys() {
        let mut persistent = Message::user("a persistent user hook");
        persistent.hook = Some(crate::types::HookTag {
            name: "h".into(),
            skill: "s".into(),
            timing: "after_user_input".into(),
            sig: String::new(),
        });
        let messages = vec![
            Message::system("system prompt"),
            Message::user("hello"),
            Message::assistant("Hello! I am the demo model."),
            Message::user("list the files"),
            persistent,
            injected(Message::user("cite the files you read")),
            planning_prompt(),
            // An external hook's retry feedback, added after the planning prompt.
            Message::user("try harder"),
        ];
        let read = Conversation::read(&messages, MARKER);
        assert_eq!((read.input, read.planning), ("list the files", true));

        // A plan a hook sent back for another try, with its feedback: still the same input.
        let mut retried = messages[..4].to_vec();
        retried.push(Message::assistant(format!("{MARKER} {}", a_plan().content)));
        retried.push(Message::user("be more careful"));
        retried.push(planning_prompt());
        assert_eq!(Conversation::read(&retried, MARKER).input, "list the files");
    }

    #[test]
    fn an_earlier_chats_plan_in_the_history_is_not_this_chats() {
        let call = ToolCall {
            id: "call_demo_1".into(),
            name: "list_dir".into(),
            arguments: r#"{"path":"."}"#.into(),
        };
        let messages = vec![
            Message::system("system prompt"),
            Message::user("list the files"),
            a_plan(),
            Message::assistant_with_tools("", vec![call]),
            Message::tool_result("call_demo_1", "a.txt\nsrc/"),
            Message::assistant("The workspace has 2 entries."),
            Message::user("read a.txt"),
            planning_prompt(),
        ];
        let read = Conversation::read(&messages, MARKER);
        assert_eq!(read.input, "read a.txt");
        assert!(read.plan.is_none());
        assert!(read.made.is_empty(), "{:?}", read.made);
    }

    #[test]
    fn an_agent_round_sees_its_plan_and_the_results_since() {
        let call = ToolCall {
            id: "call_demo_1".into(),
            name: "list_dir".into(),
            arguments: r#"{ "path": "." }"#.into(),
        };
        let messages = vec![
            Message::system("system prompt"),
            Message::user("list the files"),
            a_plan(),
            injected(Message::user("Work on the next step of the plan only.")),
            Message::assistant_with_tools("", vec![call.clone()]),
            Message::tool_result("call_demo_1", "a.txt\nsrc/"),
            injected(Message::user("Work on the next step of the plan only.")),
        ];
        let read = Conversation::read(&messages, MARKER);
        assert_eq!(read.input, "list the files");
        assert!(!read.planning);
        let planned = read.plan.clone().unwrap();
        assert_eq!(planned.len(), 1);
        assert!(read.was_made(&planned[0]), "same arguments, other spacing");
        assert_eq!(read.made, vec![(&call, Some("a.txt\nsrc/"))]);
    }
}
