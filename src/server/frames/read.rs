//! Reading a client frame: its text as strict JSON (RFC 8259, nested at most
//! [`MAX_JSON_DEPTH`] levels), then the JSON into the frame's wire type with serde
//! ([`crate::types::read`], shared with the history and hook answers). A refusal is a
//! [`FrameError`] that names the field's path (`messages[2].content`); the texts are the
//! `bad_frame` messages clients see.

use serde_json::Value;

pub(crate) use crate::types::read::{read, read_as_object, ReadError as FrameError};

use super::MAX_JSON_DEPTH;

/// A frame's text as a JSON object, strictly: nothing deeper than [`MAX_JSON_DEPTH`], no BOM,
/// `NaN` or lone surrogate (serde_json refuses them), and an object.
pub(super) fn json_object(text: &str) -> Result<Value, FrameError> {
    check_depth(text)?;
    let value: Value = serde_json::from_str(text)
        .map_err(|e| FrameError::rule("", format!("not valid JSON: {e}")))?;
    match value {
        Value::Object(_) => Ok(value),
        _ => Err(FrameError::rule("", "a frame must be a JSON object")),
    }
}

/// Refuses nesting deeper than [`MAX_JSON_DEPTH`] without building anything.
fn check_depth(text: &str) -> Result<(), FrameError> {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for byte in text.bytes() {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                if depth > MAX_JSON_DEPTH {
                    return Err(FrameError::rule(
                        "",
                        format!("JSON nested deeper than {MAX_JSON_DEPTH} levels"),
                    ));
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}
