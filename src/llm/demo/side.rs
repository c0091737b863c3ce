//! The calls hookwire makes beside the chat, answered as a real model would: the summary call of
//! a compaction gets a summary of the conversation it was given, and the prompt of an `llm` /
//! `prompt` hook gets the JSON that changes nothing (`{}`, or `{"ok": true}` for Claude Code's
//! dialect), so the shipped example hooks pass against the demo instead of failing every chat.

use crate::types::{Message, Role};

/// The start of the summary call's user message (`agent::compact::transcript`).
const SUMMARY_REQUEST: &str = "Summarise this earlier part of the conversation.";
/// What every hook prompt ends with (`hooks::external`' runner): answer with one JSON object.
const HOOK_ANSWER: &str = "Reply with exactly one JSON object and nothing else";
/// What a Claude-dialect hook prompt asks for instead of `{}`.
const CLAUDE_OK: &str = "{\"ok\": true} to let it go on";

/// The answer to a call beside the chat, or `None` for a chat's own call.
pub(super) fn answer(messages: &[Message]) -> Option<String> {
    let last = messages.last().filter(|m| m.role == Role::User)?;
    if let Some(conversation) = last.content.strip_prefix(SUMMARY_REQUEST) {
        return Some(summary(conversation));
    }
    if messages.len() == 1 && last.content.contains(HOOK_ANSWER) {
        return Some(if last.content.contains(CLAUDE_OK) {
            "{\"ok\": true}".into()
        } else {
            "{}".into()
        });
    }
    None
}

/// Notes on the conversation: what the person asked, in order, and how many answers there were.
fn summary(conversation: &str) -> String {
    let body = conversation
        .split_once("<conversation>")
        .map_or(conversation, |(_, rest)| rest);
    let body = body.split("</conversation>").next().unwrap_or(body);
    let mut asked = Vec::new();
    let mut answers = 0;
    let mut earlier = None;
    for block in body
        .split("\n\n[")
        .map(|b| b.trim_start().trim_start_matches('['))
    {
        let Some((who, text)) = block.split_once("]\n") else {
            continue;
        };
        let first_line = text.lines().next().unwrap_or("").trim();
        let short: String = first_line.chars().take(80).collect();
        let short = if first_line.chars().count() > 80 {
            format!("{short}…")
        } else {
            short
        };
        match who {
            "user" => asked.push(format!("\"{short}\"")),
            "assistant" => answers += 1,
            "summary of an even earlier part" => earlier = Some(short),
            _ => {}
        }
    }
    let mut notes = Vec::new();
    if let Some(earlier) = earlier {
        notes.push(format!("Before that: {earlier}"));
    }
    if asked.is_empty() {
        notes.push("The user asked nothing yet.".to_string());
    } else {
        notes.push(format!("The user asked: {}.", asked.join("; ")));
    }
    notes.push(format!(
        "The assistant answered {answers} time{} (the demo model's fixed answers).",
        if answers == 1 { "" } else { "s" }
    ));
    notes.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_call_gets_a_summary_of_what_it_was_given() {
        let messages = [
            Message::user("list the files"),
            Message::assistant("The workspace has 4 entries."),
            Message::user("search for TODO"),
            Message::assistant("Found 3 matches."),
        ];
        let request = [
            Message::system("You are summarising the earlier part of a conversation"),
            // As `agent::compact::transcript` writes it.
            Message::user(format!(
                "{SUMMARY_REQUEST}\n\n<conversation>\n{}</conversation>",
                messages
                    .iter()
                    .map(|m| format!("[{}]\n{}\n\n", m.role.as_str(), m.content))
                    .collect::<String>()
            )),
        ];
        assert_eq!(
            answer(&request).as_deref(),
            Some("The user asked: \"list the files\"; \"search for TODO\". The assistant answered 2 times (the demo model's fixed answers).")
        );
    }

    #[test]
    fn hook_prompts_get_the_json_that_changes_nothing() {
        let hookwire = [Message::user(
            "Judge this.\n\nReply with exactly one JSON object and nothing else. Use only … Reply {} for no change.",
        )];
        assert_eq!(answer(&hookwire).as_deref(), Some("{}"));
        let claude = [Message::user(
            "Judge.\n\nReply with exactly one JSON object and nothing else: {\"ok\": true} to let it go on, or {\"ok\": false, \"reason\": \"<why>\"} to block it.",
        )];
        assert_eq!(answer(&claude).as_deref(), Some("{\"ok\": true}"));
        // A chat's own messages are not side calls.
        assert_eq!(
            answer(&[Message::system("s"), Message::user("hello")]),
            None
        );
    }
}
