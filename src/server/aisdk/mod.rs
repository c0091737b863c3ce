//! The AI SDK's wire (docs/protocol.md §19): `POST /api/chat`, the body `DefaultChatTransport`
//! sends, answered with the UI message stream, so `useChat` (or `AbstractChat`) talks to
//! hookwire with no code of the application's: text, dynamic tool parts, approval answered by
//! `addToolApprovalResponse`, client tools run by `onToolCall`, and the persistent hooks carried
//! in `data-hookwire-*` parts of the messages the SDK keeps and sends back.

mod encode;
mod request;

use std::collections::HashSet;

use axum::body::Body;
use axum::extract::State;
use axum::response::Response;

use super::http_chat::{self, read_json, Caller, RouteError};
use super::AppState;
use encode::UiStreamEncoder;
use request::ChatBody;

/// The header that says which UI message stream this is.
const STREAM_HEADER: (&str, &str) = ("x-vercel-ai-ui-message-stream", "v1");

/// `POST /api/chat`.
pub(super) async fn chat(
    State(state): State<AppState>,
    caller: Caller,
    body: Body,
) -> Result<Response, RouteError> {
    let state = &state;
    let body: ChatBody = read_json(state, body).await?;
    let id = http_chat::new_chat_id();
    let mut request = body.into_request(id.clone(), &state.config.limits)?;
    let admitted = caller.admit(state, &mut request)?;
    // A new turn starts a new assistant message; a resume or a chat after client tools goes on
    // with the client's last one.
    let new_message = !request.input.is_empty();
    let message_id = new_message.then(|| format!("msg-{}", id.trim_start_matches("chat-")));
    let denied: HashSet<String> = request
        .resume
        .iter()
        .flat_map(|resume| &resume.decisions)
        .filter(|decision| !decision.allow)
        .map(|decision| decision.call_id.clone())
        .collect();
    let client_tools = request
        .client_tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    let encoder = UiStreamEncoder::new(message_id, client_tools, denied);
    http_chat::sse_response(state, admitted, request, encoder, &[STREAM_HEADER]).await
}
