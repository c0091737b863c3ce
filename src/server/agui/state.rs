//! What hookwire keeps in an AG-UI run's `state`, under the key `hookwire`:
//!
//! ```json
//! {"hooks": [{"after": "<id of the AG-UI message it follows>",
//!             "message": {"role": "system", "content": "…", "_hook": {"name", "skill", "timing", "sig"}}}],
//!  "session_hooks": [{…}],
//!  "approval": {"state": "<sealed state>", "calls": [{"call_id", "name", "arguments", "reason"}]}}
//! ```
//!
//! `hooks[].message` is the history message exactly as the native wire writes it (its signed
//! `_hook` mark inside); `session_hooks` are the native `session_hook` frames' hooks; `approval`
//! is there while tool calls wait for the person's decision. The client sends the state back
//! unchanged; every other key of `state` is the application's and is left as it came.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::AgUiError;
use crate::types::PendingCall;

/// The key of `state` that is hookwire's.
pub(super) const KEY: &str = "hookwire";

/// `state.hookwire`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(super) struct HookwireState {
    #[serde(default)]
    pub(super) hooks: Vec<StoredHook>,
    #[serde(default)]
    pub(super) session_hooks: Vec<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) approval: Option<StoredApproval>,
}

/// A persistent hook message and the AG-UI message it follows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct StoredHook {
    pub(super) after: String,
    pub(super) message: Map<String, Value>,
}

/// Tool calls that wait for the person's decision, and the sealed state to resume with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct StoredApproval {
    pub(super) state: String,
    #[serde(default)]
    pub(super) calls: Vec<PendingCall>,
    /// When the state expires (ISO 8601 UTC): each interrupt's `expiresAt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) expires_at: Option<String>,
}

impl HookwireState {
    /// `state.hookwire` of a run's `state`: absent (or null) is empty; a `state` that is not an
    /// object (nor absent or null) cannot hold it and is refused, as is a malformed `hookwire`.
    pub(super) fn of(state: Option<&Value>) -> Result<Self, AgUiError> {
        let object = match state {
            None | Some(Value::Null) => return Ok(Self::default()),
            Some(Value::Object(object)) => object,
            Some(_) => {
                return Err(AgUiError::field(
                    "state",
                    "must be a JSON object (hookwire keeps its part under \"hookwire\")",
                ))
            }
        };
        match object.get(KEY) {
            None | Some(Value::Null) => Ok(Self::default()),
            Some(value) => serde_path_to_error::deserialize(value).map_err(|error| {
                let path = match error.path().to_string() {
                    root if root == "." => String::new(),
                    path => format!(".{path}"),
                };
                AgUiError::Shape {
                    path: format!("state.{KEY}{path}"),
                    message: format!(
                        "{} (send back the state of the last STATE_SNAPSHOT unchanged)",
                        error.inner()
                    ),
                }
            }),
        }
    }

    /// `state` with its `hookwire` key set to `self` (an absent or null `state` becomes an
    /// object; the request's check refused any other non-object).
    pub(super) fn into_snapshot(self, state: Option<Value>) -> Value {
        let mut object = match state {
            Some(Value::Object(object)) => object,
            _ => Map::new(),
        };
        let value = serde_json::to_value(self).unwrap_or(Value::Null);
        object.insert(KEY.to_string(), value);
        Value::Object(object)
    }
}
