//! JSON Schemas of the published JSON (frames, hook payloads), generated from their types:
//! draft 2020-12, one for what hookwire reads and one for what it writes (a field it leaves out
//! when empty is not required there).

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::Value;

/// The schema of what is read into `T`.
pub(crate) fn read_schema<T: JsonSchema>() -> Value {
    SchemaSettings::draft2020_12()
        .for_deserialize()
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}

/// The schema of what `T` is written as.
pub(crate) fn written_schema<T: JsonSchema>() -> Value {
    SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}
