//! The OpenAI-compatible wire (docs/protocol.md §19): `POST /v1/chat/completions`, streaming or
//! not, and `GET /v1/models`. hookwire is a model for any OpenAI client (Open WebUI, LibreChat,
//! the OpenAI SDKs): the planning round, the agent loop, server tools and hooks run inside, and
//! only the answer comes back; client tools come back as `tool_calls`. What this wire cannot
//! carry (persistent hooks between requests, approval) is in docs/frontends.md: a call that needs
//! approval is refused, with a reason the model sees.

mod encode;
mod request;

use axum::body::Body;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Json;

use super::http_chat::{self, read_json, Caller, RouteError};
use super::AppState;
use encode::{ChunkEncoder, Completion, Whole, WholeEncoder};
use request::CompletionRequest;

/// The model name `GET /v1/models` lists.
pub(crate) const MODEL: &str = "hookwire";

/// `POST /v1/chat/completions`.
pub(super) async fn completions(
    State(state): State<AppState>,
    caller: Caller,
    body: Body,
) -> Result<Response, RouteError> {
    let state = &state;
    let body: CompletionRequest = read_json(state, body).await?;
    let id = http_chat::new_chat_id();
    let stream = body.stream;
    let include_usage = body
        .stream_options
        .as_ref()
        .is_some_and(|o| o.include_usage);
    let model = body.model.clone().unwrap_or_else(|| MODEL.to_string());
    let mut request = body.into_request(id.clone(), &state.config.limits)?;
    let admitted = caller.admit(state, &mut request)?;
    let completion = Completion {
        id: format!("chatcmpl-{}", id.trim_start_matches("chat-")),
        model,
        created: now_secs(),
        client_tools: request
            .client_tools
            .iter()
            .map(|t| t.name.clone())
            .collect(),
    };
    if stream {
        let encoder = ChunkEncoder::new(completion, include_usage);
        return http_chat::sse_response(state, admitted, request, encoder, &[]).await;
    }
    let items = http_chat::collect(state, admitted, request, WholeEncoder::new(completion)).await?;
    match items.into_iter().next_back() {
        Some(Whole::Completion(json)) => Ok(Json(json).into_response()),
        Some(Whole::Failed(error)) => Err(RouteError::of_chat(&error)),
        None => Err(RouteError::of_chat(&crate::types::ChatError::new(
            crate::types::ErrorCode::Internal,
            "the chat ended without a result",
        ))),
    }
}

/// `GET /v1/models`.
pub(super) async fn models() -> Json<serde_json::Value> {
    Json(request::models(MODEL))
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
