//! The native wire: client frames in, server frames out (docs/protocol.md §3). All JSON of the
//! chat protocol lives here; the rest of the crate speaks Rust types. It is a wire as
//! `server::wire` describes one: `ChatPayload` its request type, `NativeEncoder` its encoder. The frames' JSON Schemas
//! (docs/schema/frames/) are generated from these types, and the types are the parser: a client
//! frame is read by serde into its wire type (`read`, `client`, `history`), checked once for
//! what the type cannot say, and converted into the request the agent runs.

mod client;
mod encode;
mod fit;
mod message;
mod read;
mod schema;
mod server;

pub(crate) use crate::types::history::{check_history, read_history_message};
pub(crate) use client::{ChatOrigin, ClientFrame};
pub(crate) use encode::{frame_json, NativeEncoder};
pub(crate) use message::hook_message_json;
pub(crate) use message::WireMessage;
pub use schema::frame_schemas;
pub(crate) use server::ServerFrame;

/// JSON nesting deeper than this is refused before parsing.
pub(crate) const MAX_JSON_DEPTH: usize = 64;

/// The longest `traceparent` / `conversation_id` a chat frame may carry.
const MAX_TRACE_FIELD_BYTES: usize = 256;

/// Session hooks one chat may carry.
pub(crate) const MAX_SESSION_HOOKS: usize = 100;

#[cfg(test)]
mod tests;
