//! Token estimates for context compaction (docs/protocol.md §10): how large a model's context
//! window is, and how many tokens a message list takes, counted with a real tokenizer
//! (`o200k_base`, the encoding of OpenAI's current models; for other families it is an estimate
//! close enough to decide when to compact).

use std::sync::OnceLock;

use tiktoken_rs::CoreBPE;

use crate::types::Message;

/// The window of a model the table does not know.
pub const DEFAULT_WINDOW_TOKENS: u64 = 128_000;

/// Context windows by model-name prefix; the longest matching prefix wins, so `gpt-4.1` is not
/// read as `gpt-4`. Names are matched after any `vendor/` part (`openai/gpt-4o`).
const WINDOWS: &[(&str, u64)] = &[
    ("gpt-5", 400_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
    ("o1-mini", 128_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4", 200_000),
    ("claude", 200_000),
    ("gemini-1.5-pro", 2_097_152),
    ("gemini", 1_048_576),
    ("llama-3.1", 128_000),
    ("llama-3.2", 128_000),
    ("llama-3.3", 128_000),
    ("llama-4", 1_000_000),
    ("llama3.1", 128_000),
    ("llama3.2", 128_000),
    ("llama3.3", 128_000),
    ("llama", 8_192),
    ("qwen3", 131_072),
    ("qwen2.5", 131_072),
    ("qwen", 32_768),
    ("mistral-large", 131_072),
    ("mistral", 32_768),
    ("deepseek", 128_000),
];

/// The context window of `model` by the built-in table (case-insensitive prefix, longest
/// first), else [`DEFAULT_WINDOW_TOKENS`].
pub fn context_window(model: &str) -> u64 {
    let name = model.rsplit('/').next().unwrap_or(model).as_bytes();
    // Compared ignoring case, without a lowered copy of the name.
    let starts_with = |prefix: &str| {
        name.get(..prefix.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(prefix.as_bytes()))
    };
    WINDOWS
        .iter()
        .filter(|(prefix, _)| starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map_or(DEFAULT_WINDOW_TOKENS, |(_, window)| *window)
}

/// Tokens every message costs besides its content (role and separators), as OpenAI counts it.
const PER_MESSAGE: usize = 4;
/// The tokens that prime the reply.
const PER_REPLY: usize = 3;

/// The tokenizer, built once, when a conversation first gets long enough to need it (see
/// [`token_bound`]): its tables take tens of milliseconds to build and ~20 MiB to hold, which a
/// server whose conversations stay short never spends.
fn encoder() -> Option<&'static CoreBPE> {
    static ENCODER: OnceLock<Option<CoreBPE>> = OnceLock::new();
    ENCODER
        .get_or_init(|| match tiktoken_rs::o200k_base() {
            Ok(encoder) => Some(encoder),
            Err(error) => {
                tracing::warn!(%error, "the tokenizer did not load; token counts are estimated from lengths");
                None
            }
        })
        .as_ref()
}

/// Builds the tokenizer now (benchmarks measure the estimate without its construction).
pub fn warm_up() {
    let _ = encoder();
}

/// The longest piece of a text the tokenizer is given at once. Its pattern and its byte-pair
/// merge both take time that grows with the square of what one pattern match covers: a long run
/// of spaces ran the pattern out of its backtracking limit, which panics inside the tokenizer,
/// and a long word would take seconds to merge. Counted in pieces, a text costs time in
/// proportion to its length; a cut adds at most a token to the count of an estimate.
const PIECE_BYTES: usize = 256;

/// The tokens of one text (counted in pieces of at most [`PIECE_BYTES`]; a piece equal to the
/// one before it, as in a long run of one character, is not counted again).
pub fn count_text_tokens(text: &str) -> usize {
    let Some(encoder) = encoder() else {
        // About four bytes a token in English: good enough to decide when to compact.
        return text.len().div_ceil(4);
    };
    let mut total = 0;
    let mut last: Option<(&str, usize)> = None;
    for piece in pieces(text) {
        let count = match last {
            Some((before, count)) if before == piece => count,
            _ => encoder.encode_ordinary(piece).len(),
        };
        total += count;
        last = Some((piece, count));
    }
    total
}

/// `text` in pieces of at most [`PIECE_BYTES`], each cut where possible just before white space
/// (the tokenizer's pattern keeps a space with the word after it).
fn pieces(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut cut = rest.len().min(PIECE_BYTES);
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        if cut < rest.len() {
            if let Some(at) = rest[..cut].rfind(char::is_whitespace) {
                if at > PIECE_BYTES / 2 {
                    cut = at;
                }
            }
        }
        let (piece, tail) = rest.split_at(cut);
        rest = tail;
        Some(piece)
    })
}

/// An upper bound of [`estimate_tokens`] without the tokenizer: every token is at least one
/// byte. Below a threshold, the bound says so without counting.
pub fn token_bound<'a>(messages: impl IntoIterator<Item = &'a Message>) -> u64 {
    let mut total = PER_REPLY;
    for message in messages {
        total += PER_MESSAGE + message.content.len();
        for call in &message.tool_calls {
            total += call.name.len() + call.arguments.len();
        }
        total += message.tool_call_id.as_ref().map_or(0, String::len);
    }
    total as u64
}

/// The estimated input tokens of a message list as a model request: every message's content,
/// its tool calls (name and arguments) and its per-message overhead, plus the reply's priming.
pub fn estimate_tokens<'a>(messages: impl IntoIterator<Item = &'a Message>) -> u64 {
    let mut total = PER_REPLY;
    for message in messages {
        total += PER_MESSAGE + count_text_tokens(&message.content);
        for call in &message.tool_calls {
            total += count_text_tokens(&call.name) + count_text_tokens(&call.arguments);
        }
        if let Some(id) = &message.tool_call_id {
            total += count_text_tokens(id);
        }
    }
    total as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::ToolCall;

    #[test]
    fn windows_by_prefix_longest_first() {
        assert_eq!(context_window("gpt-4o-mini"), 128_000);
        assert_eq!(context_window("gpt-4.1-nano"), 1_047_576);
        assert_eq!(context_window("gpt-4-0613"), 8_192);
        assert_eq!(context_window("gpt-5-mini"), 400_000);
        assert_eq!(context_window("o3-mini"), 200_000);
        assert_eq!(context_window("o4-mini"), 200_000);
        assert_eq!(context_window("o1-mini"), 128_000);
        assert_eq!(context_window("claude-sonnet-4-5"), 200_000);
        assert_eq!(
            context_window("Claude-3-Haiku"),
            200_000,
            "case-insensitive"
        );
        assert_eq!(context_window("gemini-2.5-pro"), 1_048_576);
        assert_eq!(context_window("gemini-1.5-pro-002"), 2_097_152);
        assert_eq!(context_window("meta-llama/llama-3.3-70b"), 128_000);
        assert_eq!(context_window("llama-2-7b"), 8_192);
        assert_eq!(context_window("qwen2.5-coder"), 131_072);
        assert_eq!(context_window("qwen-turbo"), 32_768);
        assert_eq!(context_window("mistral-large-latest"), 131_072);
        assert_eq!(context_window("mistral-small"), 32_768);
        assert_eq!(context_window("deepseek-chat"), 128_000);
        assert_eq!(context_window("openai/gpt-4.1"), 1_047_576, "vendor part");
        assert_eq!(context_window("my-local-model"), DEFAULT_WINDOW_TOKENS);
        assert_eq!(context_window(""), DEFAULT_WINDOW_TOKENS);
    }

    #[test]
    fn pieces_cover_the_text_and_cut_before_white_space() {
        let text = format!("{} tail", "word ".repeat(100));
        let pieces: Vec<&str> = pieces(&text).collect();
        assert_eq!(pieces.concat(), text);
        assert!(pieces.iter().all(|p| p.len() <= PIECE_BYTES), "{pieces:?}");
        assert!(pieces[1..].iter().all(|p| p.starts_with(' ')), "{pieces:?}");
        let wide = "é".repeat(300);
        let cut: Vec<&str> = super::pieces(&wide).collect();
        assert_eq!(cut.concat(), wide, "cut at character boundaries");
        // Counted in pieces, a text of words counts as the tokenizer counts it whole, within a
        // token per cut.
        let whole = encoder().map(|e| e.encode_ordinary(&text).len());
        if let Some(whole) = whole {
            let counted = count_text_tokens(&text);
            assert!(
                counted.abs_diff(whole) <= text.len() / PIECE_BYTES + 1,
                "{counted} {whole}"
            );
        }
    }

    #[test]
    fn long_runs_of_white_space_are_counted_without_failing() {
        for run in [" ", "\n", "\t", " \n"] {
            let text = format!("a{}b", run.repeat(1 << 20));
            let tokens = count_text_tokens(&text);
            assert!(tokens >= 3, "{run:?}: {tokens}");
            assert!(tokens <= text.len(), "{run:?}: {tokens}");
        }
        // Between pieces of words too, and a text that is all white space.
        let text = format!("hello{}world{}", " ".repeat(300_000), "\n".repeat(300_000));
        assert!(count_text_tokens(&text) >= 2);
        assert!(count_text_tokens(&" ".repeat(1 << 20)) >= 1);
    }

    #[test]
    fn counts_with_the_real_tokenizer() {
        // o200k_base: "hello world" is two tokens; a character count would say 11 or 3.
        assert_eq!(count_text_tokens("hello world"), 2);
        assert_eq!(count_text_tokens(""), 0);
        let messages = [Message::system("hello world"), Message::user("hello world")];
        assert_eq!(estimate_tokens(&messages), 3 + 2 * (4 + 2));
    }

    #[test]
    fn the_bound_is_never_below_the_estimate() {
        let call = ToolCall {
            id: "call_1".into(),
            name: "read_file".into(),
            arguments: r#"{"path":"src/main.rs"}"#.into(),
        };
        let mut result = Message::user("fn main() {}\n".repeat(50));
        result.tool_call_id = Some("call_1".into());
        let messages = [
            Message::system(""),
            Message::user("héllo wörld, 日本語 ✓ \u{1F600}"),
            Message::assistant_with_tools("", vec![call]),
            result,
        ];
        for n in 0..=messages.len() {
            let part = &messages[..n];
            assert!(token_bound(part) >= estimate_tokens(part), "{n}");
        }
    }

    #[test]
    fn estimates_grow_with_tool_calls_and_results() {
        let call = ToolCall {
            id: "call_1".into(),
            name: "read_file".into(),
            arguments: r#"{"path":"src/main.rs"}"#.into(),
        };
        let plain = [Message::assistant("")];
        let with_call = [Message::assistant_with_tools("", vec![call])];
        assert!(estimate_tokens(&with_call) > estimate_tokens(&plain));
        let long = Message::user("word ".repeat(1000));
        let estimate = estimate_tokens(&[long]);
        assert!((900..=1100).contains(&(estimate as usize)), "{estimate}");
    }
}
