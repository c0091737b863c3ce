//! The server's side of voice (docs/protocol.md §18): the engines built from `voice:`, what
//! `/api/info` says of them, and `POST /api/transcribe`. The `audio` frames are made by the native
//! wire's encoder (`frames::NativeEncoder::audio`), in their place among the chat's frames
//! (`wire::WireChat`).

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use super::AppState;
use crate::config::Config;
use crate::voice::stt::{Stt, MAX_UPLOAD_BYTES};
use crate::voice::tts::Tts;

/// The speech engines the config names (each `None` when not configured, or, logged, when its
/// HTTP client cannot be built).
pub(super) fn engines(config: &Config) -> (Option<Arc<Tts>>, Option<Arc<Stt>>) {
    let tts = config.voice.tts.clone().and_then(|settings| {
        Tts::new(settings, config.workspace.clone())
            .map_err(|e| tracing::error!("voice.tts is not available: {e}"))
            .ok()
            .map(Arc::new)
    });
    let stt = config.voice.stt.clone().and_then(|settings| {
        Stt::new(settings)
            .map_err(|e| tracing::error!("voice.stt is not available: {e}"))
            .ok()
            .map(Arc::new)
    });
    (tts, stt)
}

/// `/api/info`'s `voice`: what the page may offer (a speaker toggle, a microphone).
pub(super) fn info(state: &AppState) -> serde_json::Value {
    json!({
        "tts": state.tts.is_some(),
        "format": state.tts.as_ref().map(|tts| tts.format()),
        "stt": state.stt.is_some(),
    })
}

fn refuse(status: StatusCode, message: impl Into<String>) -> Response {
    let message = message.into();
    tracing::warn!(status = status.as_u16(), "transcription refused: {message}");
    (status, Json(json!({ "error": message }))).into_response()
}

/// `POST /api/transcribe`: the body is audio (its `Content-Type` as recorded, at most 25 MiB);
/// the answer `{"text"}`. Behind the same access checks as `/ws`. At most
/// `voice.stt.max_concurrent` run at once (503 past it), and an upload must arrive whole within
/// `voice.stt.upload_timeout_seconds` (408): a client that declares 25 MiB and sends nothing
/// holds neither a slot nor memory for longer.
pub(super) async fn transcribe(State(state): State<AppState>, request: Request) -> Response {
    let Some(stt) = state.stt.clone() else {
        return refuse(
            StatusCode::NOT_FOUND,
            "voice.stt is not configured on this server",
        );
    };
    let Some(_slot) = stt.slot() else {
        return refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "the server is transcribing {} recordings already; try again shortly",
                stt.settings().max_concurrent
            ),
        );
    };
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|length| length > MAX_UPLOAD_BYTES as u64) {
        return too_big();
    }
    let content_type = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .filter(|v| v.starts_with("audio/") || v.starts_with("video/webm"))
        .unwrap_or("audio/webm")
        .to_string();
    let deadline = stt.settings().upload_timeout;
    let audio = match read_upload(request.into_body(), declared, deadline).await {
        Ok(audio) => audio,
        Err(refusal) => return refusal,
    };
    if audio.is_empty() {
        return refuse(StatusCode::BAD_REQUEST, "the request has no audio");
    }
    match stt.transcribe(audio, &content_type).await {
        Ok(text) => Json(json!({ "text": text })).into_response(),
        Err(why) => {
            if let Some(detail) = why.detail() {
                tracing::warn!(%why, detail, "the transcription failed");
            }
            refuse(StatusCode::BAD_GATEWAY, why.to_string())
        }
    }
}

/// The upload, whole, within `deadline` and the size limit, in one buffer (sized up front when
/// the length is declared).
async fn read_upload(
    body: Body,
    declared: Option<u64>,
    deadline: Duration,
) -> Result<bytes::Bytes, Response> {
    use futures::StreamExt;
    let capacity = declared
        .map_or(0, |length| length as usize)
        .min(MAX_UPLOAD_BYTES);
    let read = async move {
        let mut chunks = body.into_data_stream();
        let mut audio = bytes::BytesMut::with_capacity(capacity);
        while let Some(chunk) = chunks.next().await {
            let Ok(chunk) = chunk else {
                return Err(refuse(StatusCode::BAD_REQUEST, "the upload broke off"));
            };
            if audio.len() + chunk.len() > MAX_UPLOAD_BYTES {
                return Err(too_big());
            }
            audio.extend_from_slice(&chunk);
        }
        Ok(audio.freeze())
    };
    match tokio::time::timeout(deadline, read).await {
        Ok(result) => result,
        Err(_) => Err(refuse(
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "the audio did not arrive within {:.0} s (voice.stt.upload_timeout_seconds)",
                deadline.as_secs_f64()
            ),
        )),
    }
}

fn too_big() -> Response {
    refuse(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("the audio is over the limit of {MAX_UPLOAD_BYTES} bytes (25 MiB)"),
    )
}
