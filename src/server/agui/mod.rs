//! The AG-UI wire (protocol 1.0, as `@ag-ui/core` and `@ag-ui/client` 1.0.0 define it): a run's
//! request and its events, as `server::wire` describes a wire. The route (`POST /ag-ui`, an SSE
//! response) reads the body into [`RunAgentInput`], makes the run's [`AgUiEncoder`] from it,
//! converts it into the [`crate::types::ChatRequest`] the agent runs
//! ([`RunAgentInput::into_request`]), and writes each item of the encoder as `data: …\n\n`.
//!
//! - `request`: the body. Its messages become the native history and input by way of the native
//!   chat frame: the AG-UI request is rewritten as the `chat` frame a native client would send,
//!   and that frame is read and checked by `frames` (the limits, tool answers, client tools,
//!   session hooks, resume), so both wires refuse the same histories the same way.
//! - `encode`: the chat's events as AG-UI events.
//! - `state`: what hookwire keeps in the run's `state` under the `hookwire` key. AG-UI clients
//!   strip what the protocol does not define from messages, so the marks the native wire keeps on
//!   history messages cannot ride there: persistent hook messages (with the id of the AG-UI
//!   message each follows), the session hooks, and a pending approval's sealed state go out in a
//!   `STATE_SNAPSHOT` before the run's last event, and come back in the next run's `state`.
//!
//! `docs/protocol.md` §19 says the mapping as a client sees it.

mod encode;
mod messages;
mod request;
mod state;

pub(crate) use encode::AgUiEncoder;
pub(crate) use request::RunAgentInput;

use axum::body::Body;
use axum::extract::State;
use axum::response::Response;

use super::http_chat::{self, read_body, Caller, RouteError};
use super::AppState;

/// `POST /ag-ui`: a run, answered with its AG-UI events as Server-Sent Events.
pub(super) async fn run(
    State(state): State<AppState>,
    caller: Caller,
    body: Body,
) -> Result<Response, RouteError> {
    let state = &state;
    let bytes = read_body(state, body).await?;
    let refused = |error: AgUiError| RouteError::bad_request(error.to_string());
    let input = RunAgentInput::from_json(&bytes).map_err(refused)?;
    let encoder = AgUiEncoder::new(&input);
    let mut request = input
        .into_request(&state.config.limits, None)
        .map_err(refused)?;
    let admitted = caller.admit(state, &mut request)?;
    http_chat::sse_response(state, admitted, request, encoder, &[]).await
}

/// Why an AG-UI request was refused (HTTP 400, before any event): where (a path in the request,
/// such as `messages[2].content`; empty for the request as a whole) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum AgUiError {
    /// The body is not a `RunAgentInput` (serde's word, with the field's path).
    #[error("{path}: {message}")]
    Shape { path: String, message: String },
    /// A field is there, but wrong.
    #[error("field \"{path}\" {message}")]
    Field { path: String, message: String },
    /// A rule of the native chat frame the request became (history, limits, tools, resume),
    /// in the words of the native wire, with the native paths named as the request's.
    #[error("{message}")]
    Chat { message: String },
}

impl AgUiError {
    fn field(path: impl Into<String>, message: impl Into<String>) -> Self {
        AgUiError::Field {
            path: path.into(),
            message: message.into(),
        }
    }
}

#[cfg(test)]
mod tests;
