//! One chat over HTTP: the steps the front-end routes share (docs/protocol.md §19). A route reads
//! its wire's request type from the body ([`read_json`]), converts it into a `ChatRequest`, and
//! answers with the chat's events through its wire's encoder, as Server-Sent Events
//! ([`sse_response`]) or as one JSON body once the chat is over ([`collect`]). What is wrong
//! before any stream is an HTTP error with a JSON body `{"error": {"code", "message"}}`
//! ([`RouteError`]).
//!
//! The chat is held like a WebSocket session: it takes one of `limits.max_connections`' permits,
//! the drain waits for it (and cancels it past `limits.shutdown_grace_seconds`: its token is a
//! child of [`AppState::grace_over`]), and dropping
//! the response body (the client went away) drops the chat, its upstream request with it.

use std::convert::Infallible;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::sync::OwnedSemaphorePermit;
use tokio_util::task::task_tracker::TaskTrackerToken;

use super::access::SignedIn;
use super::wire::{WireChat, WireEncoder};
use super::AppState;
use crate::types::{ChatError, ChatRequest, ErrorCode, Person};

/// The most SSE events written in one chunk.
const SSE_BATCH: usize = 64;

/// A request refused before any stream: its status and `{"error": {"code", "message"}}`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub(crate) struct RouteError {
    pub(crate) status: StatusCode,
    pub(crate) code: &'static str,
    pub(crate) message: String,
    /// `Retry-After` (and `retry_after_seconds` in the body): a spent quota's wait.
    pub(crate) retry_after_seconds: Option<u64>,
}

impl RouteError {
    /// 400: the body is not what the route reads.
    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            code: ErrorCode::BadFrame.as_str(),
            message: message.into(),
            retry_after_seconds: None,
        }
    }

    /// A chat's error as an HTTP answer: the client's fault is 400, a spent quota 429, an expired
    /// token 401, a busy or draining server (or one whose shared state is down) 503, the model's
    /// failure 502, the rest 500.
    pub(crate) fn of_chat(error: &ChatError) -> Self {
        let status = match error.code {
            ErrorCode::BadFrame
            | ErrorCode::UnknownSkill
            | ErrorCode::HookBlocked
            | ErrorCode::ContextTooLong => StatusCode::BAD_REQUEST,
            ErrorCode::Busy | ErrorCode::Draining | ErrorCode::Unavailable => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            ErrorCode::QuotaExceeded => StatusCode::TOO_MANY_REQUESTS,
            ErrorCode::AuthExpired => StatusCode::UNAUTHORIZED,
            ErrorCode::Upstream => StatusCode::BAD_GATEWAY,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        Self {
            status,
            code: error.code.as_str(),
            message: error.message.clone(),
            retry_after_seconds: error.retry_after_seconds,
        }
    }
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    error: ErrorFields<'a>,
}

/// OpenAI's clients read `message` (and `code`, `type`); AG-UI's and the AI SDK's show the body.
#[derive(Serialize)]
struct ErrorFields<'a> {
    code: &'a str,
    message: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    retry_after_seconds: Option<u64>,
}

impl IntoResponse for RouteError {
    fn into_response(self) -> Response {
        let kind = if self.status.is_client_error() {
            "invalid_request_error"
        } else {
            "server_error"
        };
        let body = ErrorBody {
            error: ErrorFields {
                code: self.code,
                message: &self.message,
                kind,
                retry_after_seconds: self.retry_after_seconds,
            },
        };
        let mut response = (self.status, axum::Json(body)).into_response();
        if let Some(seconds) = self.retry_after_seconds {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

/// The body as `T`: at most `limits.max_message_bytes` (413 past it), strict JSON (400 naming
/// the field's path when it is not `T`).
pub(crate) async fn read_json<T: DeserializeOwned>(
    state: &AppState,
    body: Body,
) -> Result<T, RouteError> {
    let bytes = read_body(state, body).await?;
    let reader = &mut serde_json::Deserializer::from_slice(&bytes);
    serde_path_to_error::deserialize(reader).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        if path == "." || path.is_empty() {
            RouteError::bad_request(format!(
                "the body is not the request this route reads: {inner}"
            ))
        } else {
            RouteError::bad_request(format!("field {path:?}: {inner}"))
        }
    })
}

/// The body's bytes: at most `limits.max_message_bytes` (413 past it).
pub(crate) async fn read_body(state: &AppState, body: Body) -> Result<Bytes, RouteError> {
    let limit = state.config.limits.max_message_bytes;
    axum::body::to_bytes(body, limit)
        .await
        .map_err(|_| RouteError {
            status: StatusCode::PAYLOAD_TOO_LARGE,
            code: ErrorCode::BadFrame.as_str(),
            message: format!("the body is over {limit} bytes (limits.max_message_bytes)"),
            retry_after_seconds: None,
        })
}

/// What an HTTP chat holds while it runs: a connection permit and the drain's tracker.
pub(crate) struct Admitted {
    _permit: OwnedSemaphorePermit,
    _tracked: TaskTrackerToken,
}

/// A new chat over HTTP, unless the server is draining or full (503).
fn admit(state: &AppState) -> Result<Admitted, RouteError> {
    let unavailable = |reason: &'static str, message: &str| {
        ::metrics::counter!("hookwire_rejected_connections_total", "reason" => reason).increment(1);
        RouteError {
            status: StatusCode::SERVICE_UNAVAILABLE,
            code: ErrorCode::Draining.as_str(),
            message: message.to_string(),
            retry_after_seconds: None,
        }
    };
    if state.shutdown.is_cancelled() {
        return Err(unavailable(
            "draining",
            "the server is shutting down; send the request again",
        ));
    }
    let Ok(permit) = state.sessions.clone().try_acquire_owned() else {
        return Err(unavailable("capacity", "too many open connections"));
    };
    Ok(Admitted {
        _permit: permit,
        _tracked: state.tracker.token(),
    })
}

/// Who sent an HTTP chat, as the access layer found them (the signed-in person), and the
/// request's trace context: what every wire's route gives its chat.
pub(crate) struct Caller {
    person: Option<Person>,
    traceparent: Option<String>,
}

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Caller {
    type Rejection = Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _: &S,
    ) -> Result<Self, Self::Rejection> {
        Ok(Caller {
            person: parts
                .extensions
                .get::<SignedIn>()
                .map(|signed_in| signed_in.person.clone()),
            traceparent: traceparent(&parts.headers).map(str::to_string),
        })
    }
}

impl Caller {
    /// The request as this caller's (their person; the header's `traceparent` unless the wire
    /// carried one), cancelled with the drain, checked, and admitted: before any stream, every
    /// refusal is a JSON error.
    pub(crate) fn admit(
        self,
        state: &AppState,
        request: &mut ChatRequest,
    ) -> Result<Admitted, RouteError> {
        request.person = self.person;
        if request.traceparent.is_none() {
            request.traceparent = self.traceparent;
        }
        // Cancelled past the drain's grace period, like a WebSocket session's chat (it still
        // ends with its wire's last event). A child of the server's token rather than a task
        // of its own: a task spawned as the chat starts would take the scheduler's next turn
        // from the upstream connection the chat has just woken, and under load its request
        // would wait behind every other task (docs/performance.md, tenth measurement).
        request.cancel = state.grace_over.child_token();
        check_request(state, request)?;
        admit(state)
    }
}

/// Refuses client tools that clash with a server tool, before any stream (400).
fn check_request(state: &AppState, request: &ChatRequest) -> Result<(), RouteError> {
    state
        .agent
        .check_client_tools(&request.client_tools)
        .map_err(|error| RouteError::of_chat(&error))
}

/// The chat's events through `encoder`, as they come: each item one SSE event's `data`.
/// `headers`: the wire's own (the AI SDK's stream version). A chat refused before it starts (a
/// spent quota: 429 with `Retry-After`) is an HTTP error instead of a stream.
pub(crate) async fn sse_response<E>(
    state: &AppState,
    admitted: Admitted,
    request: ChatRequest,
    encoder: E,
    headers: &[(&'static str, &'static str)],
) -> Result<Response, RouteError>
where
    E: WireEncoder<Item = String> + Unpin + Send + 'static,
{
    let chat = run(state, request, encoder).await?;
    // The events that are ready together go out in one write: a burst of tokens from the
    // upstream is one chunk of the response, not one syscall (and one client wake-up) each.
    let body = chat.ready_chunks(SSE_BATCH).map(move |items| {
        // The permit and the tracker's token live as long as the body.
        let _held = &admitted;
        let size = items.iter().map(|item| item.len() + 8).sum();
        let mut events = String::with_capacity(size);
        for item in items {
            events.push_str("data: ");
            events.push_str(&item);
            events.push_str("\n\n");
        }
        Ok::<_, Infallible>(Bytes::from(events))
    });
    let mut response = Response::new(Body::from_stream(body));
    let fixed = [
        (header::CONTENT_TYPE, "text/event-stream"),
        (header::CACHE_CONTROL, "no-cache"),
    ];
    for (name, value) in fixed {
        response
            .headers_mut()
            .insert(name, HeaderValue::from_static(value));
    }
    // nginx and other proxies pass each event on at once.
    response
        .headers_mut()
        .insert("x-accel-buffering", HeaderValue::from_static("no"));
    for (name, value) in headers {
        response
            .headers_mut()
            .insert(*name, HeaderValue::from_static(value));
    }
    Ok(response)
}

/// The chat run to its end, every item of its encoder in order (for a wire that answers with
/// one body); a chat refused before it starts is an HTTP error.
pub(crate) async fn collect<E>(
    state: &AppState,
    admitted: Admitted,
    request: ChatRequest,
    encoder: E,
) -> Result<Vec<E::Item>, RouteError>
where
    E: WireEncoder + Unpin + Send + 'static,
    E::Item: Unpin + Send,
{
    let items = run(state, request, encoder).await?.collect().await;
    drop(admitted);
    Ok(items)
}

/// The chat as its wire's items once it is accepted.
async fn run<E>(
    state: &AppState,
    request: ChatRequest,
    encoder: E,
) -> Result<WireChat<E>, RouteError>
where
    E: WireEncoder + Unpin,
    E::Item: Unpin,
{
    let id = request.id.clone();
    let mut events = state.agent.chat_stream(request);
    events
        .accepted()
        .await
        .map_err(|error| RouteError::of_chat(&error))?;
    Ok(WireChat::new(events, encoder, id))
}

/// The request's W3C `traceparent` header, the parent of the chat's span (docs/protocol.md §17).
pub(crate) fn traceparent(headers: &axum::http::HeaderMap) -> Option<&str> {
    headers
        .get("traceparent")
        .and_then(|value| value.to_str().ok())
        .filter(|value| value.len() <= 256)
}

/// A new chat's id on an HTTP wire (the wire's own run or completion id when it has one).
pub(crate) fn new_chat_id() -> String {
    format!("chat-{}", uuid::Uuid::new_v4().simple())
}
