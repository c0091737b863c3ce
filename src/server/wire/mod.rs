//! One chat, any wire. The agent makes one typed stream of a chat's events ([`ChatEvent`]); a
//! wire is two types beside it: a request type that converts into the [`ChatRequest`] the agent
//! runs, and an encoder ([`WireEncoder`]) that turns each event into what the wire sends. The
//! stream between them ([`WireChat`]) is the wires' own: it ends every chat with exactly one
//! terminal event, puts the server's notices and spoken audio in their place, and hands the
//! encoder's output to whoever writes it, so that no wire walks events or builds its frames by
//! hand, and wires cannot drift apart.
//!
//! There are four wires: the native WebSocket frames (docs/protocol.md §3), whose request type is
//! `frames::ChatPayload` (a `chat` frame's payload, `into_request`) and whose encoder is
//! `frames::NativeEncoder` (each event as its frame's JSON, fitted to `limits.max_frame_bytes`, a
//! streamed token's frame made at once from a per-chat prefix); and the front ends' HTTP wires
//! of docs/protocol.md §19, each in a module of its own: `agui` (AG-UI events), `aisdk` (the AI
//! SDK's UI message stream), `openai` (OpenAI's chat.completion chunks), which share
//! `http_chat`'s route steps.
//!
//! Adding a wire is adding, in a module of its own beside `frames/`:
//!
//! 1. its request type: the wire's body as a serde type (the JSON Schema is generated from it,
//!    and a test holds the two together, as `frames/tests/schema.rs` does), a `validate` for what
//!    the type cannot say, and a conversion into [`ChatRequest`];
//! 2. its encoder: a type implementing [`WireEncoder`] whose `Item` is what the route writes (an
//!    SSE event's text), keeping whatever the wire needs across events (open text messages, step
//!    counters); it starts what its wire starts on [`ChatEvent::Started`] and closes everything on
//!    the terminal event;
//! 3. its route: read the request, `agent.chat_stream(request)`, and send
//!    `WireChat::new(events, encoder, chat_id)` as the response body (dropping the body drops the
//!    chat and its upstream request).
//!
//! Nothing here knows a wire: this module imports neither `frames` nor `session`
//! (`tests/it/architecture.rs`).

mod chat;
mod speech;
mod tools;

pub(crate) use chat::WireChat;
pub(crate) use tools::{check_client_tools, ClientTool, MAX_CLIENT_TOOLS};

use crate::types::ChatEvent;
#[cfg(doc)]
use crate::types::ChatRequest;

/// A wire's encoding of one chat's events, in order. It is called in the task that runs the
/// chat, once per event: a streamed token's encoding is on every chat's hot path, so it should
/// not allocate beyond its output (docs/performance.md).
pub(crate) trait WireEncoder {
    /// What the wire sends for an event: a WebSocket text frame, an SSE event, a chunk.
    type Item;

    /// `event` in the wire's terms: nothing, one item, or several (a text too long for one
    /// frame).
    fn encode(&mut self, event: ChatEvent) -> Encoded<Self::Item>;

    /// One sentence of the answer, spoken (docs/protocol.md §18). A wire without audio keeps the
    /// default and sends nothing.
    fn audio(&mut self, audio: Audio) -> Encoded<Self::Item> {
        let _ = audio;
        Encoded::None
    }
}

/// What an event became: most events are one item, so that case needs no collection.
#[derive(Debug, PartialEq)]
pub(crate) enum Encoded<T> {
    None,
    One(T),
    Many(Vec<T>),
}

impl<T> From<Vec<T>> for Encoded<T> {
    fn from(mut items: Vec<T>) -> Self {
        match items.len() {
            0 => Encoded::None,
            1 => items.pop().map_or(Encoded::None, Encoded::One),
            _ => Encoded::Many(items),
        }
    }
}

/// A chat's events as the agent streams them.
pub(crate) type ChatEvents = crate::agent::ChatStream;

/// What a wire sends, before its encoder: an event of the chat, or a sentence of the answer
/// spoken. Events are the many (one per streamed token): boxing them to make the rare audio
/// sentence no smaller than they are would cost an allocation each.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Outgoing {
    Event(ChatEvent),
    Audio(Audio),
}

/// One sentence of the answer as speech: its place among the chat's sentences, its text, and
/// the audio in `format` (`mp3`, `wav`…).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Audio {
    pub(crate) seq: u64,
    pub(crate) format: String,
    pub(crate) text: String,
    pub(crate) data: Vec<u8>,
}
