use super::*;
use crate::types::HookTag;

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
        vec![Message::user("q3"), Message::assistant("a3")]
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
fn the_transcript_names_roles_and_earlier_summaries() {
    let mut earlier = Message::system("they talked about a.rs");
    earlier.compact = Some(CompactTag {
        count: 3,
        sig: String::new(),
    });
    let text = transcript(&[earlier, Message::user("and b.rs?")]);
    assert!(text.contains("[summary of an even earlier part]\nthey talked about a.rs"));
    assert!(text.contains("[user]\nand b.rs?"));
}

#[test]
fn a_summary_message_is_signed_when_there_is_a_key() {
    let key = SigningKey::new("k");
    let message = summary_message("notes".into(), 4, Some(&key));
    assert_eq!(message.role, Role::System);
    let tag = message.compact.clone().unwrap();
    assert_eq!(tag.count, 4);
    assert_eq!(tag.sig, key.sign(&HookSignature::summary("notes")));
    assert_eq!(
        crate::hooks::signing::check_history_message(&key, &message),
        Ok(())
    );
    assert_eq!(
        summary_message("notes".into(), 4, None)
            .compact
            .unwrap()
            .sig,
        ""
    );
}
