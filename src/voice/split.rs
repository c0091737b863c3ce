//! Cuts the assistant's streamed text into sentences to speak, as the text arrives.
//!
//! A sentence ends at `.`, `!`, `?` or `…` followed by white space, at `。！？` (no space in
//! CJK), or at a line break; the end of the text held so far is not an end until the next
//! character (or [`Sentences::flush`]) says so, so `3.14` and `e.g.x` stay whole. A sentence
//! longer than [`MAX_SENTENCE_CHARS`] is cut at its last space before that, so that one audio
//! frame stays small.

/// The longest piece of text sent to the speech engine at once.
pub(crate) const MAX_SENTENCE_CHARS: usize = 300;

#[derive(Debug, Default)]
pub(crate) struct Sentences {
    held: String,
}

impl Sentences {
    /// Adds a delta; returns the sentences it completed, trimmed, empty ones left out.
    pub(crate) fn push(&mut self, delta: &str) -> Vec<String> {
        self.held.push_str(delta);
        let mut done = Vec::new();
        loop {
            match sentence_end(&self.held) {
                Some(end) => {
                    let rest = self.held.split_off(end);
                    let sentence = std::mem::replace(&mut self.held, rest);
                    keep(&mut done, &sentence);
                }
                None if self.held.chars().count() > MAX_SENTENCE_CHARS => {
                    let end = long_cut(&self.held);
                    let rest = self.held.split_off(end);
                    let sentence = std::mem::replace(&mut self.held, rest);
                    keep(&mut done, &sentence);
                }
                None => return done,
            }
        }
    }

    /// The text held so far as the last sentence (the round's text ended, or a frame that must
    /// follow it came).
    pub(crate) fn flush(&mut self) -> Option<String> {
        let mut done = Vec::new();
        keep(&mut done, &std::mem::take(&mut self.held));
        done.pop()
    }
}

fn keep(done: &mut Vec<String>, sentence: &str) {
    let sentence = sentence.trim();
    if sentence.chars().any(char::is_alphanumeric) {
        done.push(sentence.to_string());
    }
}

/// The byte offset just past the first sentence end in `text`, if one is certain.
fn sentence_end(text: &str) -> Option<usize> {
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let after = at + c.len_utf8();
        match c {
            '\n' => return Some(after),
            '。' | '！' | '？' => return Some(after),
            '.' | '!' | '?' | '…' => match chars.peek() {
                Some((_, next)) if next.is_whitespace() => return Some(after),
                // Not an end (`3.14`), or a closing quote that ends it (below).
                Some(_) => {}
                None => return None,
            },
            '"' | '\'' | ')' | '”' | '’' if at > 0 => {
                let before = text[..at].chars().next_back();
                if matches!(before, Some('.' | '!' | '?' | '…')) {
                    match chars.peek() {
                        Some((_, next)) if next.is_whitespace() => return Some(after),
                        None => return None,
                        Some(_) => {}
                    }
                }
            }
            _ => {}
        }
    }
    None
}

/// Where to cut a sentence that is too long: after the last space within the limit, else at it.
fn long_cut(text: &str) -> usize {
    let limit = text
        .char_indices()
        .nth(MAX_SENTENCE_CHARS)
        .map_or(text.len(), |(at, _)| at);
    match text[..limit].rfind(char::is_whitespace) {
        Some(space) if space > 0 => space + 1,
        _ => limit,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(deltas: &[&str]) -> Vec<String> {
        let mut sentences = Sentences::default();
        let mut out: Vec<String> = deltas.iter().flat_map(|d| sentences.push(d)).collect();
        out.extend(sentences.flush());
        out
    }

    #[test]
    fn sentences_end_at_punctuation_and_space_however_the_text_is_cut() {
        let want = vec!["Hello there.", "Is it 3.14?", "Yes!", "Done"];
        assert_eq!(split(&["Hello there. Is it 3.14? Yes! Done"]), want);
        assert_eq!(
            split(&["Hel", "lo there", ".", " Is it 3", ".14", "?", " Yes!", " Done"]),
            want
        );
    }

    #[test]
    fn line_breaks_cjk_and_quotes_end_sentences() {
        assert_eq!(
            split(&["- one\n- two\n\n你好。再见！", "He said \"go.\" Then"]),
            vec![
                "- one",
                "- two",
                "你好。",
                "再见！",
                "He said \"go.\"",
                "Then"
            ]
        );
    }

    #[test]
    fn nothing_to_say_is_left_out_and_long_text_is_cut_at_a_space() {
        assert!(split(&["  ...  \n\n"]).is_empty());
        let long = "word ".repeat(200);
        let pieces = split(&[&long]);
        assert!(pieces.len() >= 3);
        assert!(pieces
            .iter()
            .all(|p| p.chars().count() <= MAX_SENTENCE_CHARS && !p.contains("wo rd")));
        assert_eq!(pieces.join(" "), long.trim());
    }
}
