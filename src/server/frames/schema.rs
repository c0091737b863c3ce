//! The frames' JSON Schemas, generated from their types; checked in under `docs/schema/` (a
//! test fails when a checked-in file is stale, `HOOKWIRE_WRITE_SCHEMA=1` rewrites them).

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::Value;

use super::client::WireClientFrame;
use super::server::ServerFrame;

/// Each frame schema with its path under `docs/schema/`: what a client may send
/// (`frames/client.json`, what the server reads) and what the server sends (`frames/server.json`,
/// what it writes: a field left out when empty is not required), JSON Schema draft 2020-12.
pub fn frame_schemas() -> Vec<(&'static str, Value)> {
    vec![
        ("frames/client.json", read::<WireClientFrame>()),
        ("frames/server.json", written::<ServerFrame>()),
    ]
}

/// The schema of what is read into `T`.
pub(crate) fn read<T: JsonSchema>() -> Value {
    SchemaSettings::draft2020_12()
        .for_deserialize()
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}

/// The schema of what `T` is written as.
pub(crate) fn written<T: JsonSchema>() -> Value {
    SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}
