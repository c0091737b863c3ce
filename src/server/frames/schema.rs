//! The frames' JSON Schemas, generated from their types; checked in under `docs/schema/` (a
//! test fails when a checked-in file is stale, `HOOKWIRE_WRITE_SCHEMA=1` rewrites them).

use serde_json::Value;

use crate::types::{read_schema, written_schema};

use super::client::WireClientFrame;
use super::server::ServerFrame;

/// Each frame schema with its path under `docs/schema/`: what a client may send
/// (`frames/client.json`, what the server reads) and what the server sends (`frames/server.json`,
/// what it writes: a field left out when empty is not required), JSON Schema draft 2020-12.
pub fn frame_schemas() -> Vec<(&'static str, Value)> {
    vec![
        ("frames/client.json", read_schema::<WireClientFrame>()),
        ("frames/server.json", written_schema::<ServerFrame>()),
    ]
}
