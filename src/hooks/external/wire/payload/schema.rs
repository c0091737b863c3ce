//! The hook payloads' JSON Schemas, generated from their types; checked in under
//! `docs/schema/hooks/` (a test fails when a checked-in file is stale).

use serde_json::Value;

use crate::types::{read_schema, written_schema};

use super::claude::{ClaudeInput, ClaudeOutput};
use super::gemini::{GeminiInput, GeminiOutput};
use super::native::{NativeInput, NativeOutput};

/// Each hook payload schema with its path under `docs/schema/`: the input a hook reads and the
/// answer it may give, per dialect, JSON Schema draft 2020-12.
pub fn hook_schemas() -> Vec<(&'static str, Value)> {
    vec![
        ("hooks/native/input.json", written_schema::<NativeInput>()),
        ("hooks/native/output.json", read_schema::<NativeOutput>()),
        ("hooks/claude/input.json", written_schema::<ClaudeInput>()),
        ("hooks/claude/output.json", read_schema::<ClaudeOutput>()),
        ("hooks/gemini/input.json", written_schema::<GeminiInput>()),
        ("hooks/gemini/output.json", read_schema::<GeminiOutput>()),
    ]
}
