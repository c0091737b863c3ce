//! Speech to text: the audio the page recorded, sent to an OpenAI-compatible
//! `/audio/transcriptions` (multipart: `file`, `model`), answered with its text.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::settings::SttSettings;
use super::tts::{endpoint_url, http_client, read_body, unreachable_error};

/// The largest audio `POST /api/transcribe` takes (OpenAI's own limit).
pub(crate) const MAX_UPLOAD_BYTES: usize = 25 * 1024 * 1024;

#[derive(Debug)]
pub(crate) struct Stt {
    settings: SttSettings,
    http: reqwest::Client,
    /// `{base_url}/audio/transcriptions`.
    url: reqwest::Url,
    /// One permit per transcription running, its upload included (`max_concurrent`).
    slots: Arc<Semaphore>,
}

impl Stt {
    pub(crate) fn new(settings: SttSettings) -> Result<Self, super::VoiceError> {
        Ok(Stt {
            http: http_client()?,
            url: endpoint_url(&settings.base_url, "transcriptions")?,
            slots: Arc::new(Semaphore::new(settings.max_concurrent)),
            settings,
        })
    }

    /// A place among the transcriptions running at once, held until dropped; `None` when all
    /// are taken.
    pub(crate) fn slot(&self) -> Option<OwnedSemaphorePermit> {
        self.slots.clone().try_acquire_owned().ok()
    }

    /// How long an upload to `/api/transcribe` may take, and how many may run at once.
    pub(crate) fn settings(&self) -> &SttSettings {
        &self.settings
    }

    /// The text of `audio` (of MIME type `content_type`, as the browser recorded it). The
    /// upload's own buffer is sent as it is: no copy of the audio is made.
    pub(crate) async fn transcribe(
        &self,
        audio: bytes::Bytes,
        content_type: &str,
    ) -> Result<String, super::VoiceError> {
        let file_name = format!("speech.{}", extension(content_type));
        let length = audio.len() as u64;
        let part = reqwest::multipart::Part::stream_with_length(audio, length)
            .file_name(file_name)
            .mime_str(content_type)
            .map_err(|e| format!("unusable audio type {content_type:?}: {e}"))?;
        let form = reqwest::multipart::Form::new()
            .text("model", self.settings.model.clone())
            .text("response_format", "json")
            .part("file", part);
        let mut request = self
            .http
            .post(self.url.clone())
            .timeout(self.settings.timeout)
            .multipart(form);
        if let Some(key) = &self.settings.api_key {
            request = request.bearer_auth(key);
        }
        let response = request
            .send()
            .await
            .map_err(|e| unreachable_error("the transcription server", &self.url, e))?;
        let body = read_body(response, 1024 * 1024, "the transcription server").await?;
        let value: serde_json::Value = serde_json::from_slice(&body).map_err(|e| {
            super::VoiceError::with_detail(
                "the transcription server's answer is not JSON",
                e.to_string(),
            )
        })?;
        value
            .get("text")
            .and_then(serde_json::Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| "the transcription server's answer has no \"text\"".into())
    }
}

/// A file name extension the server can tell the format by (it may not read the MIME type).
fn extension(content_type: &str) -> &'static str {
    let essence = content_type.split(';').next().unwrap_or("").trim();
    match essence {
        "audio/webm" | "video/webm" => "webm",
        "audio/ogg" | "application/ogg" => "ogg",
        "audio/wav" | "audio/x-wav" | "audio/wave" => "wav",
        "audio/mpeg" | "audio/mp3" => "mp3",
        "audio/mp4" | "audio/m4a" | "audio/x-m4a" => "m4a",
        "audio/flac" => "flac",
        _ => "webm",
    }
}
