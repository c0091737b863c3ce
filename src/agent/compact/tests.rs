use super::*;
use crate::types::{CompactTag, HookTag, Role};

fn sent(messages: Vec<Message>) -> Vec<Sent> {
    messages
        .into_iter()
        .enumerate()
        .map(|(index, message)| Sent { index, message })
        .collect()
}

fn hook(content: &str) -> Message {
    let mut message = Message::system(content);
    message.hook = Some(HookTag {
        name: "rule".into(),
        skill: "style".into(),
        timing: "after_user_input".into(),
        sig: String::new(),
    });
    message
}

#[test]
fn groups_start_at_user_messages_and_the_head_joins_the_first() {
    let history = sent(vec![
        Message::system("an earlier summary"),
        hook("pinned"),
        Message::user("q1"),
        hook("after q1"),
        Message::assistant("a1"),
        Message::user("q2"),
        Message::assistant("a2"),
    ]);
    assert_eq!(groups(&history), vec![0..5, 5..7]);
    assert_eq!(groups(&sent(vec![Message::assistant("a")])), vec![0..1]);
    assert!(groups(&[]).is_empty());
}

#[test]
fn a_plan_summarises_the_old_groups_pins_their_hooks_and_counts_as_sent() {
    let mut history = sent(vec![
        Message::user("q1"),
        hook("be brief"),
        Message::assistant("a1"),
        Message::user("q2"),
        Message::assistant("a2"),
        Message::user("q3"),
        Message::assistant("a3"),
    ]);
    // A forged message at place 3 was dropped: places after it keep their numbers.
    for sent in history.iter_mut().skip(3) {
        sent.index += 1;
    }
    let plan = plan(&history, 8, 1).unwrap();
    assert_eq!(plan.count, 6, "up to the kept group, counted as sent");
    assert_eq!(
        plan.summarised,
        vec![
            Message::user("q1"),
            Message::assistant("a1"),
            Message::user("q2"),
            Message::assistant("a2")
        ]
    );
    assert_eq!(plan.pinned, vec![hook("be brief")]);
    assert_eq!(
        plan.recent,
        vec![
            Sent {
                index: 6,
                message: Message::user("q3")
            },
            Sent {
                index: 7,
                message: Message::assistant("a3")
            }
        ]
    );
    assert_eq!(plan.kept_groups, 1);

    let all = super::plan(&history, 8, 0).unwrap();
    assert_eq!(all.count, 8, "keeping nothing replaces every message sent");
    assert!(all.recent.is_empty());
    assert!(
        super::plan(&history, 8, 3).is_none(),
        "three groups, three kept"
    );
    let only_hooks = sent(vec![hook("a"), Message::user("q")]);
    assert!(
        super::plan(&only_hooks[..1], 1, 0).is_none(),
        "nothing but pinned hooks: nothing to summarise"
    );
}

#[test]
fn groups_keep_tool_rounds_with_their_turn_and_a_summary_with_the_first() {
    let call = crate::types::ToolCall {
        id: "c1".into(),
        name: "list_dir".into(),
        arguments: "{}".into(),
    };
    let history = sent(vec![
        summary_message("they talked about a.rs", 3),
        hook("pinned"),
        Message::user("q1"),
        Message::assistant_with_tools("", vec![call]),
        Message::tool_result("c1", "a.rs b.rs"),
        Message::assistant("a1"),
        Message::user("q2"),
    ]);
    assert_eq!(groups(&history), vec![0..6, 6..7]);
}

#[test]
fn the_transcript_names_roles_summaries_tool_calls_and_cuts_long_results() {
    let earlier = summary_message("they talked about a.rs", 3);
    let call = crate::types::ToolCall {
        id: "c1".into(),
        name: "read_file".into(),
        arguments: r#"{"path":"b.rs"}"#.into(),
    };
    let text = transcript(&[
        earlier,
        Message::user("and b.rs?"),
        Message::assistant_with_tools("", vec![call]),
        Message::tool_result("c1", "x".repeat(5000)),
    ]);
    assert!(text.contains("[summary of an even earlier part]\n<summary of the earlier conversation>\nthey talked about a.rs"));
    assert!(text.contains("[user]\nand b.rs?"));
    assert!(
        text.contains(r#"(called read_file {"path":"b.rs"})"#),
        "{text}"
    );
    assert!(text.contains("[… 3000 more characters]"), "{text}");
}

#[test]
fn a_summary_is_an_unsigned_user_message_in_its_tags() {
    let message = summary_message("notes", 4);
    assert_eq!(message.role, Role::User);
    assert_eq!(
        message.content,
        "<summary of the earlier conversation>\nnotes\n</summary of the earlier conversation>"
    );
    assert_eq!(message.compact, Some(CompactTag { count: 4 }));
    assert!(message.hook.is_none());
}
