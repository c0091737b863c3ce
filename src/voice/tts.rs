//! Speech synthesis of one sentence: an OpenAI-compatible `/audio/speech`, or a command run the
//! way a command hook is (its clean environment, its own process group, killed with everything
//! it started when the synthesis is dropped).

use std::path::PathBuf;
use std::time::Duration;

use super::settings::{TtsEngine, TtsSettings};
use crate::process;

/// Audio of one sentence past this is refused (a minute of 16-bit 48 kHz stereo is ~11 MB).
pub(crate) const MAX_AUDIO_BYTES: usize = 16 * 1024 * 1024;

/// The longest engine error text the log gets.
const MAX_ERROR_CHARS: usize = 300;

/// A configured speech engine.
#[derive(Debug)]
pub(crate) struct Tts {
    settings: TtsSettings,
    http: reqwest::Client,
    /// `provider: openai`: `{base_url}/audio/speech`, built as the model's URLs are (a query of
    /// the base URL kept after the path).
    speech_url: Option<reqwest::Url>,
    /// Where a command runs: the workspace.
    cwd: PathBuf,
}

impl Tts {
    pub(crate) fn new(settings: TtsSettings, cwd: PathBuf) -> Result<Self, super::VoiceError> {
        let speech_url = match &settings.engine {
            TtsEngine::OpenAi { base_url, .. } => Some(endpoint_url(base_url, "speech")?),
            TtsEngine::Command { .. } => None,
        };
        Ok(Tts {
            http: http_client()?,
            settings,
            speech_url,
            cwd,
        })
    }

    /// The format of the audio it makes (`wav`, `mp3`, …).
    pub(crate) fn format(&self) -> &str {
        &self.settings.format
    }

    /// Sentences synthesized at once.
    pub(crate) fn concurrency(&self) -> usize {
        self.settings.concurrency
    }

    /// The audio of `text`; `Err` says why there is none. Dropping the future stops the work
    /// (a command's processes are killed).
    pub(crate) async fn synthesize(&self, text: &str) -> Result<Vec<u8>, super::VoiceError> {
        let timeout = self.settings.timeout;
        let audio = match &self.settings.engine {
            TtsEngine::Command { command, env } => {
                let env = process::plain_environment(&process::server_variable, env);
                let run = process::execute_bytes(
                    command,
                    &env,
                    &self.cwd,
                    text.as_bytes().to_vec(),
                    timeout,
                    MAX_AUDIO_BYTES,
                )
                .await
                .map_err(|e| {
                    super::VoiceError::with_detail(
                        "the speech command could not run",
                        e.to_string(),
                    )
                })?;
                if run.timed_out {
                    return Err(super::VoiceError::from(format!(
                        "the speech command took longer than {:.0}s",
                        timeout.as_secs_f64()
                    )));
                }
                if run.exit_code != Some(0) {
                    let why = match run.exit_code {
                        Some(code) => format!("exited with status {code}"),
                        None => "was killed by a signal".into(),
                    };
                    return Err(super::VoiceError::with_detail(
                        format!("the speech command {why}"),
                        excerpt(&String::from_utf8_lossy(&run.stderr)),
                    ));
                }
                if run.stdout_cut {
                    return Err(super::VoiceError::from(format!(
                        "the speech command wrote more than {MAX_AUDIO_BYTES} bytes of audio"
                    )));
                }
                run.stdout
            }
            TtsEngine::OpenAi {
                api_key,
                model,
                voice,
                ..
            } => {
                let Some(url) = &self.speech_url else {
                    return Err("the speech server has no URL".into());
                };
                let body = serde_json::json!({
                    "model": model,
                    "voice": voice,
                    "input": text,
                    "response_format": self.settings.format,
                });
                let mut request = self.http.post(url.clone()).timeout(timeout).json(&body);
                if let Some(key) = api_key {
                    request = request.bearer_auth(key);
                }
                let response = request
                    .send()
                    .await
                    .map_err(|e| unreachable_error("the speech server", url, e))?;
                read_body(response, MAX_AUDIO_BYTES, "the speech server").await?
            }
        };
        if audio.is_empty() {
            return Err("the speech engine returned no audio".into());
        }
        Ok(audio)
    }
}

/// An HTTP client for the voice endpoints (a process-wide rustls provider, as the model's).
pub(crate) fn http_client() -> Result<reqwest::Client, super::VoiceError> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .tcp_nodelay(true)
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}").into())
}

/// `{base_url}/audio/{what}`: the endpoint under the API root, as the model client builds its
/// own (the URL type; a base URL's query stays a query).
pub(crate) fn endpoint_url(base_url: &str, what: &str) -> Result<reqwest::Url, super::VoiceError> {
    crate::llm::endpoint(base_url, &["audio", what])
        .map_err(|e| super::VoiceError::from(e.to_string()))
}

/// A request that reached no answer: the client hears who could not be reached and why (the
/// error's own words, without the URL); the log gets the URL without its secrets.
pub(crate) fn unreachable_error(
    who: &str,
    url: &reqwest::Url,
    error: reqwest::Error,
) -> super::VoiceError {
    let error = error.without_url();
    let why = if error.is_timeout() {
        "it did not answer in time".to_string()
    } else if error.is_connect() {
        "the connection failed".to_string()
    } else {
        "the request failed".to_string()
    };
    super::VoiceError::with_detail(
        format!("{who} could not be reached: {why}"),
        format!("{} ({error:?})", crate::llm::redact_url(url.as_str())),
    )
}

/// A successful response's body, at most `limit` bytes; else why not.
pub(crate) async fn read_body(
    mut response: reqwest::Response,
    limit: usize,
    who: &str,
) -> Result<Vec<u8>, super::VoiceError> {
    let status = response.status();
    if !status.is_success() {
        // Its body is for the log: an error page may quote the key it was sent.
        let text = response.text().await.unwrap_or_default();
        return Err(super::VoiceError::with_detail(
            format!("{who} answered {status}"),
            excerpt(&text),
        ));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| {
        super::VoiceError::with_detail(
            format!("{who} broke off its answer"),
            e.without_url().to_string(),
        )
    })? {
        if body.len() + chunk.len() > limit {
            return Err(super::VoiceError::from(format!(
                "{who} sent more than {limit} bytes"
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The first characters of an error text, for the log.
fn excerpt(text: &str) -> String {
    let text = text.trim();
    let mut cut: String = text.chars().take(MAX_ERROR_CHARS).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    cut
}
