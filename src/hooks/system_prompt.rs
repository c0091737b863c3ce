//! The system prompt of a message list: its first system message. Found, replaced, added to
//! (after or before it) and made when there is none, in one place, for the chat's messages
//! (`HookContext`), a model call's request (`LlmRequest`) and the hooks that change either.

use crate::types::{Message, Role};

/// The message that holds the system prompt, if there is one.
pub(crate) fn find(messages: &[Message]) -> Option<&Message> {
    messages.iter().find(|m| m.role == Role::System)
}

/// Makes `content` the system prompt.
pub(crate) fn set(messages: &mut Vec<Message>, content: String) {
    match messages.iter_mut().find(|m| m.role == Role::System) {
        Some(message) => message.content = content,
        None => messages.insert(0, Message::system(content)),
    }
}

/// Adds `content` after the system prompt, `separator` between them.
pub(crate) fn append(messages: &mut Vec<Message>, content: &str, separator: &str) {
    edit(messages, content, |prompt| {
        prompt.push_str(separator);
        prompt.push_str(content);
    });
}

/// Puts `content` before the system prompt, `separator` between them.
pub(crate) fn prepend(messages: &mut Vec<Message>, content: &str, separator: &str) {
    edit(messages, content, |prompt| {
        *prompt = format!("{content}{separator}{prompt}")
    });
}

/// Where a message that belongs with the system prompt goes: after the list's leading system
/// messages, before the conversation.
pub(crate) fn end_of_leading(messages: &[Message]) -> usize {
    messages
        .iter()
        .position(|m| m.role != Role::System)
        .unwrap_or(messages.len())
}

/// Changes the system prompt's text, or makes `content` the system prompt when there is none.
fn edit(messages: &mut Vec<Message>, content: &str, change: impl FnOnce(&mut String)) {
    match messages.iter_mut().find(|m| m.role == Role::System) {
        Some(message) => change(&mut message.content),
        None => messages.insert(0, Message::system(content)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_system_message_is_edited_or_made() {
        let mut messages = vec![Message::user("hi")];
        append(&mut messages, "ctx", "\n\n");
        assert_eq!(messages[0], Message::system("ctx"));
        prepend(&mut messages, "first", " / ");
        append(&mut messages, "last", "\n");
        assert_eq!(find(&messages).unwrap().content, "first / ctx\nlast");
        set(&mut messages, "new".into());
        assert_eq!(messages, [Message::system("new"), Message::user("hi")]);
        let mut empty = Vec::new();
        prepend(&mut empty, "only", "\n");
        assert_eq!(empty, [Message::system("only")]);
        assert_eq!(end_of_leading(&messages), 1);
        assert_eq!(end_of_leading(&[Message::system("a")]), 1);
    }
}
