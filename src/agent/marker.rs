//! Decides, while the planning reply streams, whether it starts with the tool marker, holding
//! back no more text than the marker's length.

#[derive(Debug, PartialEq, Eq)]
pub(super) enum MarkerState {
    /// Not decided yet: text is held back.
    Pending,
    /// The reply starts with the marker: it is a plan, not an answer.
    Plan,
    /// The reply is a direct answer: `held` (the text held back so far) may now stream.
    Answer { held: String },
}

#[derive(Debug)]
pub(super) struct MarkerDetector {
    marker: String,
    buffer: String,
    decided: bool,
}

impl MarkerDetector {
    pub(super) fn new(marker: &str) -> Self {
        Self {
            marker: marker.to_string(),
            buffer: String::new(),
            decided: false,
        }
    }

    /// Feeds a text delta. After the first decision, returns `Answer` with only the new text (or
    /// `Plan` again); callers should keep their own copy of the whole reply.
    pub(super) fn push(&mut self, delta: &str) -> MarkerState {
        if self.decided {
            return if self.is_plan() {
                MarkerState::Plan
            } else {
                MarkerState::Answer {
                    held: delta.to_string(),
                }
            };
        }
        self.buffer.push_str(delta);
        let trimmed = self.buffer.trim_start();
        if self.marker.is_empty()
            || trimmed.len() >= self.marker.len()
            || !self.marker.starts_with(trimmed)
        {
            self.decided = true;
            if !self.marker.is_empty() && trimmed.starts_with(self.marker.as_str()) {
                return MarkerState::Plan;
            }
            return MarkerState::Answer {
                held: std::mem::take(&mut self.buffer),
            };
        }
        MarkerState::Pending
    }

    /// The reply ended: what was held back is an answer unless the reply was a plan.
    pub(super) fn finish(&mut self) -> MarkerState {
        if self.decided && self.is_plan() {
            return MarkerState::Plan;
        }
        self.decided = true;
        MarkerState::Answer {
            held: std::mem::take(&mut self.buffer),
        }
    }

    fn is_plan(&self) -> bool {
        !self.marker.is_empty() && self.buffer.trim_start().starts_with(self.marker.as_str())
    }
}

/// The plan text of a reply that starts with the marker.
pub(super) fn strip_marker<'a>(reply: &'a str, marker: &str) -> &'a str {
    let trimmed = reply.trim_start();
    trimmed.strip_prefix(marker).unwrap_or(trimmed).trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_detected_across_split_deltas() {
        let mut d = MarkerDetector::new("[NEED_TOOL]");
        assert_eq!(d.push("  [NEED"), MarkerState::Pending);
        assert_eq!(d.push("_TOOL] read"), MarkerState::Plan);
        assert_eq!(d.push(" the file"), MarkerState::Plan);
        assert_eq!(d.finish(), MarkerState::Plan);
    }

    #[test]
    fn answer_released_as_soon_as_it_diverges() {
        let mut d = MarkerDetector::new("[NEED_TOOL]");
        assert_eq!(d.push("["), MarkerState::Pending);
        assert_eq!(d.push("x"), MarkerState::Answer { held: "[x".into() });
        assert_eq!(
            d.push(" more"),
            MarkerState::Answer {
                held: " more".into()
            }
        );
    }

    #[test]
    fn plain_answer_is_released_at_first_delta() {
        let mut d = MarkerDetector::new("[NEED_TOOL]");
        assert_eq!(
            d.push("Hello"),
            MarkerState::Answer {
                held: "Hello".into()
            }
        );
    }

    #[test]
    fn short_reply_that_is_a_marker_prefix_is_an_answer_at_the_end() {
        let mut d = MarkerDetector::new("[NEED_TOOL]");
        assert_eq!(d.push("[NEED"), MarkerState::Pending);
        assert_eq!(
            d.finish(),
            MarkerState::Answer {
                held: "[NEED".into()
            }
        );
    }

    #[test]
    fn strip_marker_keeps_the_plan() {
        assert_eq!(
            strip_marker("\n[NEED_TOOL] 1. read README.md\n", "[NEED_TOOL]"),
            "1. read README.md"
        );
    }
}
