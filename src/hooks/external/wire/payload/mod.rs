//! What a hook reads on stdin (or as an HTTP body), typed per dialect: the native input
//! (hookwire's and the OpenHarness event names), Claude Code's and Gemini CLI's; and what each
//! dialect may answer. Data only: the builders are the dialects' (`wire::hookwire`,
//! `wire::claude`, `wire::gemini`), the readers too (each answer deserialized into its dialect's
//! output type, then its `into_output`). The JSON Schemas under
//! `docs/schema/hooks/` are generated from these types.

pub(crate) mod claude;
pub(crate) mod gemini;
pub(crate) mod native;
mod schema;

pub use schema::hook_schemas;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

/// The keys of an answer's object that hookwire does not read, set aside (`#[serde(flatten)]`):
/// this also keeps a JSON array from being read as the object's fields in order, as serde
/// would read it otherwise.
pub(crate) type Unread = Map<String, Value>;

/// A message as a hook sees it: a role and its text.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub(crate) struct PlainMessage {
    /// `system`, `user` or `assistant` (Gemini CLI: `model` for the assistant).
    pub(crate) role: &'static str,
    pub(crate) content: String,
}

#[cfg(test)]
mod tests;
