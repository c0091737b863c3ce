//! The native wire's encoder (`wire::WireEncoder`): each event of a chat as its server frame's
//! JSON, fitted to `limits.max_frame_bytes` (`fit.rs`). A streamed token's frame is made at once
//! from a per-chat prefix, with no frame built and no id copied per token (docs/performance.md).
//! Frames outside a chat (pong, errors about a client frame) are made JSON by [`frame_json`].

use std::sync::Arc;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;

use super::fit::{fit, text_fits};
use super::server::ServerFrame;
use crate::server::wire::{Audio, Encoded, WireEncoder};
use crate::types::ChatEvent;

/// One chat's frames on the native WebSocket wire.
pub(crate) struct NativeEncoder {
    chat_id: String,
    /// The server that runs the chat, for the `start` frame.
    instance: Arc<str>,
    max_frame_bytes: usize,
    /// A `text` frame's JSON up to its `delta`'s value (`{"type":"text","id":"…","delta":`),
    /// made once per chat: a streamed token's frame is this, the delta as a JSON string and `}`.
    text_prefix: Option<String>,
}

impl NativeEncoder {
    pub(crate) fn new(chat_id: String, instance: Arc<str>, max_frame_bytes: usize) -> Self {
        let empty = ServerFrame::Text {
            id: chat_id.clone(),
            delta: String::new(),
        }
        .to_json();
        let text_prefix = empty.strip_suffix("\"\"}").map(str::to_string);
        Self {
            chat_id,
            instance,
            max_frame_bytes,
            text_prefix,
        }
    }

    /// The JSON of the `text` frame carrying `delta`, the same as its `ServerFrame`'s; `None`
    /// when it needs fitting (split across frames).
    fn text_json(&self, delta: &str) -> Option<String> {
        let prefix = self.text_prefix.as_deref()?;
        if !text_fits(&self.chat_id, delta, self.max_frame_bytes) {
            return None;
        }
        let mut json = Vec::with_capacity(prefix.len() + delta.len() + 8);
        json.extend_from_slice(prefix.as_bytes());
        serde_json::to_writer(&mut json, delta).ok()?;
        json.push(b'}');
        String::from_utf8(json).ok()
    }

    /// `frame`'s JSON, in as many frames as fitting it takes.
    fn fitted(&self, frame: ServerFrame) -> Encoded<String> {
        Encoded::from(frame_json(frame, self.max_frame_bytes))
    }
}

impl WireEncoder for NativeEncoder {
    type Item = String;

    fn encode(&mut self, event: ChatEvent) -> Encoded<String> {
        if let ChatEvent::Text(delta) = &event {
            if let Some(json) = self.text_json(delta) {
                return Encoded::One(json);
            }
        }
        match ServerFrame::from_event(&self.chat_id, event) {
            Some(frame) => self.fitted(frame.with_instance(&self.instance)),
            None => Encoded::None,
        }
    }

    fn audio(&mut self, audio: Audio) -> Encoded<String> {
        self.fitted(ServerFrame::Audio {
            id: self.chat_id.clone(),
            seq: audio.seq,
            format: audio.format,
            text: audio.text,
            data: BASE64.encode(audio.data),
        })
    }
}

/// `frame`'s JSON, fitted to `max_frame_bytes`: one text, or several when a long text is split.
pub(crate) fn frame_json(frame: ServerFrame, max_frame_bytes: usize) -> Vec<String> {
    fit(frame, max_frame_bytes)
        .iter()
        .map(ServerFrame::to_json)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(encoder: &mut NativeEncoder, event: ChatEvent) -> String {
        let frame = ServerFrame::from_event(&encoder.chat_id, event)
            .unwrap()
            .with_instance(&encoder.instance);
        frame.to_json()
    }

    #[test]
    fn a_text_frame_made_at_once_is_the_frame_s_own_json() {
        let ids = ["c1", r#"we"ird\id"#, "chat-ü\u{1}</script>"];
        let deltas = [
            "tok0 ",
            "",
            "\"quoted\" and \\ back",
            "line\nbreak\ttab\u{0}\u{1f}",
            "ünïcödé 漢字 🙂",
            "</script><!--",
            "\u{2028}\u{2029}",
        ];
        for id in ids {
            let mut encoder = NativeEncoder::new(id.to_string(), Arc::from("host-1"), 16 * 1024);
            for delta in deltas {
                let expected = frame(&mut encoder, ChatEvent::Text(delta.to_string()));
                assert_eq!(encoder.text_json(delta).as_deref(), Some(expected.as_str()));
                assert_eq!(
                    encoder.encode(ChatEvent::Text(delta.to_string())),
                    Encoded::One(expected)
                );
            }
        }
    }

    #[test]
    fn a_text_too_big_for_one_frame_is_split() {
        let mut encoder = NativeEncoder::new("c1".into(), Arc::from("host-1"), 1024);
        assert!(encoder.text_json(&"x".repeat(2000)).is_none());
        assert!(encoder.text_json(&"x".repeat(100)).is_some());
        let Encoded::Many(frames) = encoder.encode(ChatEvent::Text("x".repeat(2000))) else {
            panic!("one frame for 2000 bytes of text under a 1024-byte limit")
        };
        assert!(frames.iter().all(|frame| frame.len() <= 1024), "{frames:?}");
    }

    #[test]
    fn the_start_frame_names_the_instance() {
        let mut encoder = NativeEncoder::new("c1".into(), Arc::from("a1b2"), 1024);
        assert_eq!(
            encoder.encode(ChatEvent::Started { trace_id: None }),
            Encoded::One(r#"{"type":"start","id":"c1","instance":"a1b2"}"#.to_string())
        );
    }
}
