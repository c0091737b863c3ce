//! Tool approval that survives a stateless server (PROTOCOL section 11): the settings, and the
//! opaque `state` an `approval` frame carries. The state holds what the agent loop needs to go on
//! (the chat's messages from its user input on, the round, the pending calls), is bound to the
//! conversation it came from (the length and SHA-256 of the history the chat started with; the
//! history sent back must start with it), expires, and is signed, so any replica that shares the
//! secret can resume it and nobody can change it.
//!
//! Text: `v1.{j|z}.{base64url payload}.{hex HMAC}`; `z` = the JSON deflated (states over 512
//! bytes), `j` = plain JSON. The MAC covers `approval_state\n` and everything before the last dot.

use std::io::{Read, Write};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::hooks::signing::{ApprovalStateSignature, SigningKey};
use crate::types::{HookTag, Message, PendingCall, Role, ToolCall};

/// `tools.require_approval` and `approval:`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ApprovalSettings {
    /// Tools whose calls wait for the person's decision; `"*"` = every tool.
    pub require_approval: Vec<String>,
    /// How long an `approval` state may be resumed.
    pub ttl: Duration,
}

impl Default for ApprovalSettings {
    fn default() -> Self {
        Self {
            require_approval: Vec::new(),
            ttl: Duration::from_secs(3600),
        }
    }
}

impl ApprovalSettings {
    /// Whether `tool`'s calls need approval by configuration.
    pub fn requires(&self, tool: &str) -> bool {
        self.require_approval
            .iter()
            .any(|name| name == "*" || name == tool)
    }
}

/// The version tag of the state's text.
const VERSION: &str = "v1";
/// States larger than this (as JSON) are deflated.
const COMPRESS_OVER: usize = 512;
/// A state's text may not be longer, nor inflate to more: a client cannot make the server
/// allocate without bound.
const MAX_STATE_BYTES: usize = 8 << 20;

/// The conversation a state belongs to: the first `len` messages of the history, by hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct HistoryBinding {
    pub(super) len: usize,
    pub(super) sha256: String,
}

impl HistoryBinding {
    /// The binding of `history` (as the client holds it: every mark counts).
    pub(super) fn of(history: &[Message]) -> Self {
        let mut hash = Sha256::new();
        for message in history {
            // Length-prefixed fields: no two different histories give the same bytes.
            let hook = message.hook.as_ref();
            let compact = message.compact.as_ref();
            let count = compact.map(|c| c.count.to_string());
            for field in [
                Some(message.role.as_str()),
                Some(message.content.as_str()),
                hook.map(|h| h.name.as_str()),
                hook.map(|h| h.skill.as_str()),
                hook.map(|h| h.timing.as_str()),
                hook.map(|h| h.sig.as_str()),
                count.as_deref(),
            ] {
                match field {
                    Some(text) => {
                        hash.update((text.len() as u64 + 1).to_le_bytes());
                        hash.update(text.as_bytes());
                    }
                    None => hash.update(0u64.to_le_bytes()),
                }
            }
        }
        Self {
            len: history.len(),
            sha256: hex::encode(hash.finalize()),
        }
    }

    /// Whether `history` starts with the messages this binding was made of.
    pub(super) fn matches(&self, history: &[Message]) -> bool {
        history.len() >= self.len && Self::of(&history[..self.len]).sha256 == self.sha256
    }
}

/// What the agent loop needs to go on after the person decided.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct LoopState {
    /// Seconds since the Unix epoch after which the state is refused.
    pub(super) expires: u64,
    pub(super) history: HistoryBinding,
    /// The model the chat ran with: a state is not resumed against another one.
    pub(super) model: String,
    /// The chat's system prompt as hooks left it.
    pub(super) system: String,
    /// The chat's messages from its user input on, without this chat's temporary injections.
    pub(super) tail: Vec<StateMessage>,
    /// The agent round the calls were made in.
    pub(super) round: usize,
    /// Retries hooks asked for so far.
    pub(super) retries: usize,
    pub(super) pending: Vec<PendingCall>,
}

/// A message of the tail, with the marks the loop needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct StateMessage {
    role: String,
    content: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<(String, String, String)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    hook: Option<(String, String, String, String)>,
}

impl From<&Message> for StateMessage {
    fn from(message: &Message) -> Self {
        Self {
            role: message.role.as_str().into(),
            content: message.content.clone(),
            tool_calls: message
                .tool_calls
                .iter()
                .map(|c| (c.id.clone(), c.name.clone(), c.arguments.clone()))
                .collect(),
            tool_call_id: message.tool_call_id.clone(),
            hook: message.hook.as_ref().map(|h| {
                (
                    h.name.clone(),
                    h.skill.clone(),
                    h.timing.clone(),
                    h.sig.clone(),
                )
            }),
        }
    }
}

impl StateMessage {
    pub(super) fn into_message(self) -> Result<Message, String> {
        let role = match self.role.as_str() {
            "system" => Role::System,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "tool" => Role::Tool,
            other => return Err(format!("a message of the state has the role {other:?}")),
        };
        let mut message = Message::new(role, self.content);
        message.tool_calls = self
            .tool_calls
            .into_iter()
            .map(|(id, name, arguments)| ToolCall {
                id,
                name,
                arguments,
            })
            .collect();
        message.tool_call_id = self.tool_call_id;
        message.hook = self.hook.map(|(name, skill, timing, sig)| HookTag {
            name,
            skill,
            timing,
            sig,
        });
        Ok(message)
    }
}

/// Why a state is refused (the `bad_frame` message says which).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum StateError {
    #[error("the approval state is not one this server wrote (malformed)")]
    Malformed,
    #[error("the approval state was changed (its signature does not verify)")]
    Tampered,
    #[error("the approval state expired {0} s ago; ask again")]
    Expired(u64),
}

pub(super) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

/// The state's text, signed with `key`.
pub(super) fn encode(state: &LoopState, key: &SigningKey) -> String {
    // Serializing these types cannot fail: strings, numbers, JSON values.
    let json = serde_json::to_vec(state).unwrap_or_default();
    let (kind, payload) = if json.len() > COMPRESS_OVER {
        match deflate(&json) {
            Ok(packed) if packed.len() < json.len() => ("z", packed),
            _ => ("j", json),
        }
    } else {
        ("j", json)
    };
    let body = format!(
        "{VERSION}.{kind}.{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(payload)
    );
    let sig = key.sign(&ApprovalStateSignature { body: &body });
    format!("{body}.{sig}")
}

/// The state in `text` if `key` signed it and it has not expired at `now`.
pub(super) fn decode(text: &str, key: &SigningKey, now: u64) -> Result<LoopState, StateError> {
    if text.len() > MAX_STATE_BYTES {
        return Err(StateError::Malformed);
    }
    let (body, sig) = text.rsplit_once('.').ok_or(StateError::Malformed)?;
    if !key.verify(&ApprovalStateSignature { body }, sig) {
        return Err(StateError::Tampered);
    }
    let mut parts = body.splitn(3, '.');
    let (Some(VERSION), Some(kind), Some(payload)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(StateError::Malformed);
    };
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .map_err(|_| StateError::Malformed)?;
    let json = match kind {
        "j" => bytes,
        "z" => inflate(&bytes).map_err(|_| StateError::Malformed)?,
        _ => return Err(StateError::Malformed),
    };
    let state: LoopState = serde_json::from_slice(&json).map_err(|_| StateError::Malformed)?;
    if now > state.expires {
        return Err(StateError::Expired(now - state.expires));
    }
    Ok(state)
}

fn deflate(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut encoder =
        flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes)?;
    encoder.finish()
}

fn inflate(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    // One byte over the limit tells a state that inflates too far from one that just fits.
    flate2::read::DeflateDecoder::new(bytes)
        .take(MAX_STATE_BYTES as u64 + 1)
        .read_to_end(&mut out)?;
    if out.len() > MAX_STATE_BYTES {
        return Err(std::io::Error::other("the state inflates too far"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
