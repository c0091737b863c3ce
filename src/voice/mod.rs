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
/// that failed or sent too much. What it displays is what a client may see (the notice, the
/// 502's body): never a URL, a command's stderr or a server's error body, which may hold keys;
/// those are its `detail`, for the log only (as an MCP server's stderr).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{shown}")]
pub struct VoiceError {
    shown: String,
    detail: Option<String>,
}

impl VoiceError {
    /// `shown` to the client, `detail` to the log only.
    pub(crate) fn with_detail(shown: impl Into<String>, detail: impl Into<String>) -> Self {
        let detail = detail.into();
        VoiceError {
            shown: shown.into(),
            detail: (!detail.trim().is_empty()).then_some(detail),
        }
    }

    /// What only the log may show, when there is more than what the client sees.
    pub fn detail(&self) -> Option<&str> {
        self.detail.as_deref()
    }
}

impl From<String> for VoiceError {
    fn from(shown: String) -> Self {
        VoiceError {
            shown,
            detail: None,
        }
    }
}

impl From<&str> for VoiceError {
    fn from(shown: &str) -> Self {
        VoiceError::from(shown.to_string())
    }
}
