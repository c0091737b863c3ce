//! `voice:` settings: the YAML shape (`VoiceFile`, unknown keys refused) and the resolved
//! `VoiceSettings` the server runs with (docs/voice.md).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

/// `voice:` in the config file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VoiceFile {
    pub tts: Option<TtsFile>,
    pub stt: Option<SttFile>,
}

/// `voice.tts:`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TtsFile {
    /// `openai` or `command`.
    pub provider: Option<String>,
    /// `provider: openai`: the API root (`…/v1`); default the model's base URL, else OpenAI's.
    pub base_url: Option<String>,
    /// `provider: openai`: else `HOOKWIRE_VOICE_API_KEY`; the model's key only when `base_url`
    /// is not set (the key then goes where the model's already goes).
    pub api_key: Option<String>,
    pub model: Option<String>,
    pub voice: Option<String>,
    /// The audio format asked for and named in `audio` frames (default `mp3` for openai, `wav`
    /// for a command).
    pub format: Option<String>,
    /// `provider: command`: run with `sh -c`, the sentence on stdin, audio on stdout.
    pub command: Option<String>,
    /// `provider: command`: variables besides PATH, HOME, LANG, LC_ALL, TZ, TMPDIR (`${NAME}`
    /// names a server variable).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// How long one sentence's synthesis may take (default 30).
    pub timeout_seconds: Option<f64>,
    /// Sentences synthesized at once, ahead of the one being sent (default 2).
    pub concurrency: Option<usize>,
}

/// `voice.stt:`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SttFile {
    /// `openai`.
    pub provider: Option<String>,
    pub base_url: Option<String>,
    pub api_key: Option<String>,
    pub model: Option<String>,
    pub timeout_seconds: Option<f64>,
    /// How long an upload to `/api/transcribe` may take to arrive, whole (default 60).
    pub upload_timeout_seconds: Option<f64>,
    /// Transcriptions the server runs at once, uploads included; more get 503 (default 4).
    pub max_concurrent: Option<usize>,
}

/// Resolved voice settings; both parts are optional.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VoiceSettings {
    pub tts: Option<TtsSettings>,
    pub stt: Option<SttSettings>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TtsSettings {
    pub engine: TtsEngine,
    /// The format named in `audio` frames (`wav`, `mp3`, …).
    pub format: String,
    pub timeout: Duration,
    pub concurrency: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub enum TtsEngine {
    /// An OpenAI-compatible `POST {base_url}/audio/speech`.
    OpenAi {
        base_url: String,
        api_key: Option<String>,
        model: String,
        voice: String,
    },
    /// `sh -c command`: text on stdin, audio on stdout, run like a command hook.
    Command {
        command: String,
        env: BTreeMap<String, String>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct SttSettings {
    /// An OpenAI-compatible `POST {base_url}/audio/transcriptions`.
    pub base_url: String,
    pub api_key: Option<String>,
    pub model: String,
    pub timeout: Duration,
    /// How long an upload may take to arrive (a client that stalls is answered 408).
    pub upload_timeout: Duration,
    /// Transcriptions at once, uploads included (each may hold up to 25 MiB).
    pub max_concurrent: usize,
}

/// A voice setting that cannot be used.
#[derive(Debug, Clone, PartialEq)]
pub struct VoiceSettingError {
    pub setting: &'static str,
    pub expected: &'static str,
    pub value: String,
}

/// What the model's own settings lend to voice: its base URL and key.
pub struct Upstream<'a> {
    pub base_url: Option<&'a str>,
    pub api_key: Option<&'a str>,
}

const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

impl VoiceSettings {
    /// The settings from `voice:`, with `env` for `HOOKWIRE_VOICE_API_KEY`.
    pub fn resolve(
        file: VoiceFile,
        upstream: &Upstream<'_>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, VoiceSettingError> {
        Ok(VoiceSettings {
            tts: file
                .tts
                .map(|tts| tts_settings(tts, upstream, env))
                .transpose()?,
            stt: file
                .stt
                .map(|stt| stt_settings(stt, upstream, env))
                .transpose()?,
        })
    }
}

/// The API root and key of an OpenAI-compatible voice endpoint. The model's key goes only to
/// the model's own base URL: a voice server named on its own gets `api_key` or the variable.
fn endpoint(
    base_url: Option<String>,
    api_key: Option<String>,
    upstream: &Upstream<'_>,
    env: &dyn Fn(&str) -> Option<String>,
    setting: &'static str,
) -> Result<(String, Option<String>), VoiceSettingError> {
    let own_key = api_key.or_else(|| env("HOOKWIRE_VOICE_API_KEY"));
    let (base_url, key) = match base_url {
        Some(url) => (url, own_key),
        None => (
            upstream.base_url.unwrap_or(OPENAI_BASE_URL).to_string(),
            own_key.or(upstream.api_key.map(str::to_string)),
        ),
    };
    // Read as the requests will build on it: the URL type the model client uses.
    if crate::llm::endpoint(&base_url, &[]).is_err() {
        return Err(VoiceSettingError {
            setting,
            expected: "an http(s) URL of an OpenAI-compatible API root (…/v1)",
            value: crate::llm::redact_url(&base_url),
        });
    }
    Ok((base_url.trim_end_matches('/').to_string(), key))
}

fn seconds(
    setting: &'static str,
    value: Option<f64>,
    default: u64,
) -> Result<Duration, VoiceSettingError> {
    match value {
        None => Ok(Duration::from_secs(default)),
        Some(v) if v.is_finite() && v > 0.0 && v < 86_400.0 => Ok(Duration::from_secs_f64(v)),
        Some(v) => Err(VoiceSettingError {
            setting,
            expected: "a positive number of seconds",
            value: v.to_string(),
        }),
    }
}

fn tts_settings(
    file: TtsFile,
    upstream: &Upstream<'_>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<TtsSettings, VoiceSettingError> {
    let provider = file.provider.unwrap_or_default();
    let (engine, default_format) = match provider.as_str() {
        "openai" => {
            let (base_url, api_key) = endpoint(
                file.base_url,
                file.api_key,
                upstream,
                env,
                "voice.tts.base_url",
            )?;
            let engine = TtsEngine::OpenAi {
                base_url,
                api_key,
                model: file.model.unwrap_or_else(|| "gpt-4o-mini-tts".into()),
                voice: file.voice.unwrap_or_else(|| "alloy".into()),
            };
            (engine, "mp3")
        }
        "command" => match file.command {
            Some(command) if !command.trim().is_empty() => (
                TtsEngine::Command {
                    command,
                    env: file.env,
                },
                "wav",
            ),
            other => {
                return Err(VoiceSettingError {
                    setting: "voice.tts.command",
                    expected: "a command that reads text on stdin and writes audio on stdout \
                               (e.g. `espeak-ng --stdout`)",
                    value: other.unwrap_or_default(),
                })
            }
        },
        other => {
            return Err(VoiceSettingError {
                setting: "voice.tts.provider",
                expected: "openai or command",
                value: other.to_string(),
            })
        }
    };
    let format = file.format.unwrap_or_else(|| default_format.into());
    if format.is_empty() || !format.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(VoiceSettingError {
            setting: "voice.tts.format",
            expected: "an audio format name (wav, mp3, opus, …)",
            value: format,
        });
    }
    let concurrency = file.concurrency.unwrap_or(2);
    if !(1..=16).contains(&concurrency) {
        return Err(VoiceSettingError {
            setting: "voice.tts.concurrency",
            expected: "a whole number from 1 to 16",
            value: concurrency.to_string(),
        });
    }
    Ok(TtsSettings {
        engine,
        format,
        timeout: seconds("voice.tts.timeout_seconds", file.timeout_seconds, 30)?,
        concurrency,
    })
}

fn stt_settings(
    file: SttFile,
    upstream: &Upstream<'_>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<SttSettings, VoiceSettingError> {
    match file.provider.as_deref() {
        Some("openai") => {}
        other => {
            return Err(VoiceSettingError {
                setting: "voice.stt.provider",
                expected: "openai",
                value: other.unwrap_or_default().to_string(),
            })
        }
    }
    let (base_url, api_key) = endpoint(
        file.base_url,
        file.api_key,
        upstream,
        env,
        "voice.stt.base_url",
    )?;
    let max_concurrent = file.max_concurrent.unwrap_or(4);
    if !(1..=256).contains(&max_concurrent) {
        return Err(VoiceSettingError {
            setting: "voice.stt.max_concurrent",
            expected: "a whole number from 1 to 256",
            value: max_concurrent.to_string(),
        });
    }
    Ok(SttSettings {
        base_url,
        api_key,
        model: file.model.unwrap_or_else(|| "whisper-1".into()),
        timeout: seconds("voice.stt.timeout_seconds", file.timeout_seconds, 60)?,
        upload_timeout: seconds(
            "voice.stt.upload_timeout_seconds",
            file.upload_timeout_seconds,
            60,
        )?,
        max_concurrent,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(yaml: &str, upstream: Upstream<'_>) -> Result<VoiceSettings, VoiceSettingError> {
        let file: VoiceFile = serde_saphyr::from_str(yaml).map_err(|e| VoiceSettingError {
            setting: "yaml",
            expected: "",
            value: e.to_string(),
        })?;
        VoiceSettings::resolve(file, &upstream, &|_| None)
    }

    #[test]
    fn the_models_key_goes_only_to_the_models_own_url() {
        let upstream = || Upstream {
            base_url: Some("https://llm.example/v1"),
            api_key: Some("sk-model"),
        };
        let own = resolve("tts: {provider: openai}", upstream()).unwrap();
        let Some(TtsSettings {
            engine: TtsEngine::OpenAi {
                base_url, api_key, ..
            },
            format,
            ..
        }) = own.tts
        else {
            panic!("openai engine");
        };
        assert_eq!(base_url, "https://llm.example/v1");
        assert_eq!(api_key.as_deref(), Some("sk-model"));
        assert_eq!(format, "mp3");
        let elsewhere = resolve(
            "tts: {provider: openai, base_url: 'http://127.0.0.1:8880/v1/'}",
            upstream(),
        )
        .unwrap();
        let Some(TtsSettings {
            engine: TtsEngine::OpenAi {
                base_url, api_key, ..
            },
            ..
        }) = elsewhere.tts
        else {
            panic!("openai engine");
        };
        assert_eq!(base_url, "http://127.0.0.1:8880/v1");
        assert_eq!(api_key, None);
    }

    #[test]
    fn bad_settings_name_the_setting() {
        let none = || Upstream {
            base_url: None,
            api_key: None,
        };
        assert_eq!(
            resolve("tts: {provider: command}", none())
                .unwrap_err()
                .setting,
            "voice.tts.command"
        );
        assert_eq!(
            resolve("tts: {provider: say}", none()).unwrap_err().setting,
            "voice.tts.provider"
        );
        assert_eq!(
            resolve(
                "tts: {provider: command, command: x, concurrency: 0}",
                none()
            )
            .unwrap_err()
            .setting,
            "voice.tts.concurrency"
        );
        assert_eq!(
            resolve("stt: {}", none()).unwrap_err().setting,
            "voice.stt.provider"
        );
        let command = resolve(
            "tts: {provider: command, command: espeak-ng --stdout}",
            none(),
        )
        .unwrap()
        .tts
        .unwrap();
        assert_eq!(command.format, "wav");
    }
}
