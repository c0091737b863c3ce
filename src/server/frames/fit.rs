//! Keeps outgoing frames under `limits.max_frame_bytes`. Fields that a hook, a tool or the model
//! can make arbitrarily large are cut with a marker that says so; long `text` deltas are split
//! into several frames, so the client still gets every character. Signed values (persistent hook
//! messages, session hooks) cannot be cut without breaking their signature: one that does not
//! fit is replaced by a `notice` saying it was not sent. `done` (its `message` and `turn`) is the
//! client's history and is never cut (the socket's write buffer has no cap of its own).

use serde_json::Value;

use super::server::ServerFrame;
use crate::types::NoticeLevel;

/// Room left for everything in a frame besides the field being fitted (type, id, names, JSON
/// punctuation); the chat id is counted on top.
const FRAME_OVERHEAD: usize = 512;

/// The room for the fitted field of a frame of chat `id`.
fn field_budget(id: &str, max_bytes: usize) -> usize {
    max_bytes.saturating_sub(FRAME_OVERHEAD + id.len()).max(64)
}

/// Whether a `text` frame of chat `id` carrying `delta` fits in about `max_bytes` of JSON as it is.
pub(super) fn text_fits(id: &str, delta: &str, max_bytes: usize) -> bool {
    escaped_len(delta) <= field_budget(id, max_bytes)
}

/// Splits or cuts `frame` so that each resulting frame fits in about `max_bytes` of JSON.
pub(super) fn fit(frame: ServerFrame, max_bytes: usize) -> Vec<ServerFrame> {
    let budget = |id: &str| field_budget(id, max_bytes);
    match frame {
        ServerFrame::Text { id, delta } => split_text(id, delta, budget),
        ServerFrame::Plan { id, content } => {
            let content = cut(content, budget(&id), max_bytes);
            vec![ServerFrame::Plan { id, content }]
        }
        ServerFrame::ToolResult {
            id,
            call_id,
            name,
            content,
            is_error,
        } => {
            let limit = budget(&id).saturating_sub(call_id.len() + name.len());
            let content = cut(content, limit, max_bytes);
            vec![ServerFrame::ToolResult {
                id,
                call_id,
                name,
                content,
                is_error,
            }]
        }
        ServerFrame::ToolCall { .. } => vec![fit_arguments(frame, max_bytes)],
        ServerFrame::Notice {
            id,
            level,
            message,
            source,
        } => {
            let limit = budget(&id).saturating_sub(source.len());
            let message = cut(message, limit, max_bytes);
            vec![ServerFrame::Notice {
                id,
                level,
                message,
                source,
            }]
        }
        ServerFrame::Error(mut error) => {
            let limit = budget(error.id.as_deref().unwrap_or(""));
            error.message = cut(error.message, limit, max_bytes);
            vec![ServerFrame::Error(error)]
        }
        ServerFrame::Hook { .. } | ServerFrame::SessionHook { .. } => {
            vec![signed_or_notice(frame, max_bytes)]
        }
        // A summary cannot be cut (the client would store a broken history): too big, it is not
        // sent, and the client keeps its full history, which the next chat compacts again.
        ServerFrame::Compact { ref id, count, .. } => {
            let (id, what) = (
                id.clone(),
                format!("the summary of {count} earlier messages"),
            );
            let outcome = "your history was not compacted";
            whole_or_notice(frame, id, max_bytes, &what, outcome)
        }
        // Audio cut short is noise: too big, it is not sent, and the client is told.
        ServerFrame::Audio { ref id, seq, .. } => {
            let id = id.clone();
            let what = format!("the audio of sentence {seq}");
            whole_or_notice(frame, id, max_bytes, &what, "playback skips it")
        }
        // Nor can an approval state: the person could not resume, so the chat says so.
        ServerFrame::Approval { ref id, .. } => {
            let id = id.clone();
            let outcome = "the waiting tool calls cannot be resumed";
            whole_or_notice(frame, id, max_bytes, "the approval request", outcome)
        }
        other => vec![other],
    }
}

/// A `text` frame, split into frames that fit: the client still gets every character.
fn split_text(id: String, delta: String, budget: impl Fn(&str) -> usize) -> Vec<ServerFrame> {
    let limit = budget(&id);
    if escaped_len(&delta) <= limit {
        return vec![ServerFrame::Text { id, delta }];
    }
    split(&delta, limit)
        .into_iter()
        .map(|delta| ServerFrame::Text {
            id: id.clone(),
            delta,
        })
        .collect()
}

/// A `tool_call` frame whose arguments are too big: they are replaced by a note of their size
/// (the tool still gets them whole).
fn fit_arguments(frame: ServerFrame, max_bytes: usize) -> ServerFrame {
    let ServerFrame::ToolCall {
        id,
        call_id,
        name,
        arguments,
    } = frame
    else {
        return frame;
    };
    let size = arguments.to_string().len();
    let limit = field_budget(&id, max_bytes).saturating_sub(call_id.len() + name.len());
    let arguments = if size > limit {
        tracing::warn!(chat = %id, tool = %name, size, "tool arguments cut from the tool_call frame");
        let cut = format!("{size} bytes of arguments, over the frame limit of {max_bytes} bytes");
        serde_json::json!({ "_cut": cut })
    } else {
        arguments
    };
    ServerFrame::ToolCall {
        id,
        call_id,
        name,
        arguments,
    }
}

/// A signed value (a persistent hook message, a session hook) cannot be cut without breaking
/// its signature: one that does not fit is replaced by a notice saying it was not sent.
fn signed_or_notice(frame: ServerFrame, max_bytes: usize) -> ServerFrame {
    match frame {
        ServerFrame::Hook { id, hook, message } => {
            let size = message.content.len();
            if escaped_len(&message.content) <= field_budget(&id, max_bytes) {
                return ServerFrame::Hook { id, hook, message };
            }
            tracing::warn!(chat = %id, hook = %hook.name, size, "persistent hook message over the frame limit was not sent");
            not_sent(
                id,
                format!(
                    "persistent hook {:?} ({size} bytes) is over the frame limit of {max_bytes} bytes: its hook frame was not sent (the message is in the chat's done.turn)",
                    hook.name
                ),
            )
        }
        ServerFrame::SessionHook { id, hook } => {
            let size = hook.to_string().len();
            if size <= field_budget(&id, max_bytes) {
                return ServerFrame::SessionHook { id, hook };
            }
            tracing::warn!(chat = %id, size, "session hook over the frame limit was not sent");
            let name = hook.get("name").and_then(Value::as_str).unwrap_or("?");
            not_sent(
                id,
                format!("session hook {name:?} ({size} bytes) is over the frame limit of {max_bytes} bytes and was not registered"),
            )
        }
        other => other,
    }
}

/// A frame that cannot be cut: sent whole, or replaced by a `warn` notice saying what was not
/// sent and what that means.
fn whole_or_notice(
    frame: ServerFrame,
    id: String,
    max_bytes: usize,
    what: &str,
    outcome: &str,
) -> Vec<ServerFrame> {
    let size = frame.to_json().len();
    if size <= max_bytes {
        return vec![frame];
    }
    tracing::warn!(chat = %id, size, "{what} is over the frame limit and was not sent");
    vec![not_sent(
        id,
        format!("{what} ({size} bytes) is over the frame limit of {max_bytes} bytes and was not sent; {outcome}"),
    )]
}

fn not_sent(id: String, message: String) -> ServerFrame {
    ServerFrame::Notice {
        id,
        level: NoticeLevel::Warn,
        message,
        source: "server".into(),
    }
}

/// `text` cut to about `limit` bytes of JSON, with a marker saying how much was left out.
fn cut(text: String, limit: usize, max_bytes: usize) -> String {
    if escaped_len(&text) <= limit {
        return text;
    }
    let keep = limit.saturating_sub(120);
    let head = split(&text, keep).into_iter().next().unwrap_or_default();
    let left_out = text.len() - head.len();
    format!("{head}\n… [cut: {left_out} more bytes, over the frame limit of {max_bytes} bytes]")
}

/// Splits `text` at character boundaries into pieces of at most `limit` bytes once escaped as
/// JSON.
fn split(text: &str, limit: usize) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut size = 0;
    for (at, ch) in text.char_indices() {
        let width = escaped_char_len(ch);
        if size + width > limit && at > start {
            pieces.push(text[start..at].to_string());
            start = at;
            size = 0;
        }
        size += width;
    }
    if start < text.len() || pieces.is_empty() {
        pieces.push(text[start..].to_string());
    }
    pieces
}

fn escaped_len(text: &str) -> usize {
    // Fast path: most text has nothing to escape.
    text.len() + text.chars().filter(|c| needs_escape(*c)).count() * 5
}

fn escaped_char_len(ch: char) -> usize {
    if needs_escape(ch) {
        6
    } else {
        ch.len_utf8()
    }
}

fn needs_escape(ch: char) -> bool {
    ch == '"' || ch == '\\' || ch < ' '
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Role;

    fn json_len(frame: &ServerFrame) -> usize {
        frame.to_json().len()
    }

    #[test]
    fn long_text_is_split_into_frames_that_fit_and_lose_nothing() {
        let delta = "ab\"\n€".repeat(50_000);
        let frames = fit(
            ServerFrame::Text {
                id: "c1".into(),
                delta: delta.clone(),
            },
            8192,
        );
        assert!(frames.len() > 1);
        let mut joined = String::new();
        for frame in &frames {
            assert!(json_len(frame) <= 8192, "{}", json_len(frame));
            let ServerFrame::Text { delta, .. } = frame else {
                panic!("not text")
            };
            joined.push_str(delta);
        }
        assert_eq!(joined, delta);
    }

    #[test]
    fn tool_results_and_notices_are_cut_with_a_marker() {
        let frames = fit(
            ServerFrame::ToolResult {
                id: "c1".into(),
                call_id: "t1".into(),
                name: "read_file".into(),
                content: "x".repeat(100_000),
                is_error: false,
            },
            8192,
        );
        assert_eq!(frames.len(), 1);
        assert!(json_len(&frames[0]) <= 8192);
        let ServerFrame::ToolResult { content, .. } = &frames[0] else {
            panic!("not a tool result")
        };
        assert!(
            content.ends_with("over the frame limit of 8192 bytes]"),
            "{content}"
        );

        let frames = fit(
            ServerFrame::Notice {
                id: "c1".into(),
                level: NoticeLevel::Info,
                message: "\u{1}".repeat(100_000),
                source: "hook".into(),
            },
            8192,
        );
        assert!(json_len(&frames[0]) <= 8192, "{}", json_len(&frames[0]));
    }

    #[test]
    fn small_frames_pass_unchanged() {
        let frame = ServerFrame::Text {
            id: "c1".into(),
            delta: "hello".into(),
        };
        assert_eq!(fit(frame.clone(), 8192), vec![frame]);
    }

    #[test]
    fn a_summary_or_an_approval_is_sent_whole_or_not_at_all() {
        let summary = |content: String| ServerFrame::Compact {
            id: "c1".into(),
            count: 4,
            message: super::super::message::WireMessage::plain(Role::System, content),
            pinned: Vec::new(),
            context: Vec::new(),
        };
        let small = summary("notes".into());
        assert_eq!(fit(small.clone(), 4096), vec![small]);
        let big = fit(summary("x".repeat(10_000)), 4096);
        let [ServerFrame::Notice { message, level, .. }] = &big[..] else {
            panic!("{big:?}")
        };
        assert_eq!(*level, NoticeLevel::Warn);
        assert!(
            message.contains("summary of 4 earlier messages") && message.contains("not compacted")
        );
        let approval = ServerFrame::Approval {
            id: "c1".into(),
            calls: Vec::new(),
            state: "s".repeat(10_000),
        };
        let [ServerFrame::Notice { message, .. }] = &fit(approval, 4096)[..] else {
            panic!()
        };
        assert!(message.contains("approval request") && message.contains("cannot be resumed"));
    }
}
