//! Voice (docs/protocol.md §18, docs/voice.md): spoken answers and transcribed speech.
//!
//! - `settings`: `voice.tts` and `voice.stt`, as written and resolved;
//! - `split`: the assistant's streamed text cut into sentences;
//! - `tts`: one sentence's audio, from an OpenAI-compatible server or a command;
//! - `pipeline`: one chat's sentences synthesized ahead, in order among the chat's frames;
//! - `stt`: the page's recording to text.

pub(crate) mod pipeline;
pub mod settings;
pub(crate) mod split;
pub(crate) mod stt;
pub(crate) mod tts;

pub use settings::{VoiceFile, VoiceSettings};

/// Why speech could not be made or read: an engine that cannot be built, a command or server
/// that failed or sent too much; the text is what the client's notice and the log show.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct VoiceError(String);

impl From<String> for VoiceError {
    fn from(message: String) -> Self {
        VoiceError(message)
    }
}

impl From<&str> for VoiceError {
    fn from(message: &str) -> Self {
        VoiceError(message.into())
    }
}
