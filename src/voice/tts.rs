//! Speech synthesis of one sentence: an OpenAI-compatible `/audio/speech`, or a command run the
//! way a command hook is (its clean environment, its own process group, killed with everything
//! it started when the synthesis is dropped).

use std::path::PathBuf;
use std::time::Duration;

use super::settings::{TtsEngine, TtsSettings};
use crate::process;

/// Audio of one sentence past this is refused (a minute of 16-bit 48 kHz stereo is ~11 MB).
pub(crate) const MAX_AUDIO_BYTES: usize = 16 * 1024 * 1024;

/// The longest engine error text passed on to the person.
const MAX_ERROR_CHARS: usize = 300;

/// A configured speech engine.
#[derive(Debug)]
pub(crate) struct Tts {
    settings: TtsSettings,
    http: reqwest::Client,
    /// Where a command runs: the workspace.
    cwd: PathBuf,
}

impl Tts {
    pub(crate) fn new(settings: TtsSettings, cwd: PathBuf) -> Result<Self, String> {
        Ok(Tts {
            http: http_client()?,
            settings,
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
    pub(crate) async fn synthesize(&self, text: &str) -> Result<Vec<u8>, String> {
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
                .map_err(|e| format!("the speech command could not run: {e}"))?;
                if run.timed_out {
                    return Err(format!(
                        "the speech command took longer than {:.0}s",
                        timeout.as_secs_f64()
                    ));
                }
                if run.exit_code != Some(0) {
                    let why = match run.exit_code {
                        Some(code) => format!("exited with status {code}"),
                        None => "was killed by a signal".into(),
                    };
                    return Err(format!(
                        "the speech command {why}{}",
                        excerpt(&String::from_utf8_lossy(&run.stderr))
                    ));
                }
                if run.stdout_cut {
                    return Err(format!(
                        "the speech command wrote more than {MAX_AUDIO_BYTES} bytes of audio"
                    ));
                }
                run.stdout
            }
            TtsEngine::OpenAi {
                base_url,
                api_key,
                model,
                voice,
            } => {
                let body = serde_json::json!({
                    "model": model,
                    "voice": voice,
                    "input": text,
                    "response_format": self.settings.format,
                });
                let mut request = self
                    .http
                    .post(format!("{base_url}/audio/speech"))
                    .timeout(timeout)
                    .json(&body);
                if let Some(key) = api_key {
                    request = request.bearer_auth(key);
                }
                let response = request
                    .send()
                    .await
                    .map_err(|e| format!("the speech server could not be reached: {e}"))?;
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
pub(crate) fn http_client() -> Result<reqwest::Client, String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .tcp_nodelay(true)
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))
}

/// A successful response's body, at most `limit` bytes; else why not.
pub(crate) async fn read_body(
    mut response: reqwest::Response,
    limit: usize,
    who: &str,
) -> Result<Vec<u8>, String> {
    let status = response.status();
    if !status.is_success() {
        let text = response.text().await.unwrap_or_default();
        return Err(format!("{who} answered {status}{}", excerpt(&text)));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| format!("{who} broke off its answer: {e}"))?
    {
        if body.len() + chunk.len() > limit {
            return Err(format!("{who} sent more than {limit} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// `: <first characters>` of an error text, or nothing when it is empty.
fn excerpt(text: &str) -> String {
    let text = text.trim();
    if text.is_empty() {
        return String::new();
    }
    let mut cut: String = text.chars().take(MAX_ERROR_CHARS).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    format!(": {cut}")
}
