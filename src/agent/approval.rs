//! Tool approval that survives a stateless server (docs/protocol.md §11): the settings, and the
//! opaque `state` an `approval` frame carries. The state holds what the agent loop needs to go on
//! (the chat's messages from its user input on, the round, the pending calls), is bound to the
//! conversation it came from (the length and SHA-256 of the history the chat started with; the
//! history sent back must start with it), expires, and is sealed: encrypted and authenticated
//! (XChaCha20-Poly1305), so the client can neither read it (it holds the operator's system
//! prompt) nor change it, and any replica that shares the secret can resume it.
//!
//! Text: `v2.{j|z}.{base64url(nonce ‖ ciphertext ‖ tag)}`; `z` = the JSON deflated (states over
//! 512 bytes) before it is sealed, `j` = plain JSON. The associated data is
//! `approval_state\nv2.{kind}`. The key is HKDF-SHA256 over the secret (its own `info`, so it is
//! not the key hook messages are signed with); without a secret, random per process.
use std::io::{Read, Write};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use chacha20poly1305::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};

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

/// The version tag of the state's text (`v1` was signed only, and is refused).
const VERSION: &str = "v2";
/// The length of an XChaCha20 nonce.
const NONCE_BYTES: usize = 24;
/// HKDF's `info` for the state's key: no other key derived from the secret equals it.
const KEY_INFO: &[u8] = b"hookwire approval_state v2 xchacha20poly1305";

/// The key approval states are sealed with. Cheap to clone; its `Debug` never shows the key.
#[derive(Clone)]
pub(crate) struct StateKey {
    cipher: XChaCha20Poly1305,
}

impl StateKey {
    /// The key every replica with `secret` derives alike.
    pub(crate) fn from_secret(secret: &str) -> Self {
        let hkdf = hkdf::Hkdf::<Sha256>::new(Some(b"hookwire"), secret.as_bytes());
        let mut key = [0u8; 32];
        // 32 bytes is far below HKDF-SHA256's limit of 255 × 32.
        if hkdf.expand(KEY_INFO, &mut key).is_err() {
            unreachable!("HKDF-SHA256 gives 32 bytes");
        }
        Self {
            cipher: XChaCha20Poly1305::new(&key.into()),
        }
    }

    /// A key of this process only (no secret): only it can resume its states.
    pub(crate) fn random() -> Self {
        Self {
            cipher: XChaCha20Poly1305::new(&XChaCha20Poly1305::generate_key(&mut OsRng)),
        }
    }
}

impl std::fmt::Debug for StateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateKey(..)")
    }
}

/// What the tag covers besides the ciphertext: the kind of text, so `j` and `z` cannot be
/// swapped.
fn associated_data(kind: &str) -> String {
    format!("approval_state\n{VERSION}.{kind}")
}
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
            // Tool calls and results are history too (docs/protocol.md §13).
            hash.update((message.tool_calls.len() as u64).to_le_bytes());
            let calls = message.tool_calls.iter().flat_map(|c| {
                [
                    Some(c.id.as_str()),
                    Some(c.name.as_str()),
                    Some(c.arguments.as_str()),
                ]
            });
            let answer = [
                message.tool_call_id.as_deref(),
                message.tool_name.as_deref(),
            ];
            for field in calls.chain(answer) {
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
    tool_name: Option<String>,
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
            tool_name: message.tool_name.clone(),
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
    pub(super) fn into_message(self) -> Result<Message, StateError> {
        let role = match self.role.as_str() {
            "system" => Role::System,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "tool" => Role::Tool,
            other => return Err(StateError::UnknownRole(other.to_string())),
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
        message.tool_name = self.tool_name;
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
    #[error("the approval state was changed or sealed with another key (it does not open)")]
    Tampered,
    #[error("the approval state expired {0} s ago; ask again")]
    Expired(u64),
    #[error("a message of the state has the role {0:?}")]
    UnknownRole(String),
}

pub(super) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

/// The state's text, sealed with `key`.
pub(super) fn encode(state: &LoopState, key: &StateKey) -> String {
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
    let nonce = XChaCha20Poly1305::generate_nonce(&mut OsRng);
    let aad = associated_data(kind);
    let sealed = key.cipher.encrypt(
        &nonce,
        Payload {
            msg: &payload,
            aad: aad.as_bytes(),
        },
    );
    // Encryption fails only past ChaCha's 256 GiB per message; a state is capped far below.
    let sealed = sealed.unwrap_or_default();
    let mut bytes = Vec::with_capacity(NONCE_BYTES + sealed.len());
    bytes.extend_from_slice(&nonce);
    bytes.extend_from_slice(&sealed);
    format!(
        "{VERSION}.{kind}.{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    )
}

/// The state in `text` if `key` sealed it and it has not expired at `now`.
pub(super) fn decode(text: &str, key: &StateKey, now: u64) -> Result<LoopState, StateError> {
    if text.len() > MAX_STATE_BYTES {
        return Err(StateError::Malformed);
    }
    let mut parts = text.splitn(3, '.');
    let (Some(VERSION), Some(kind @ ("j" | "z")), Some(payload)) =
        (parts.next(), parts.next(), parts.next())
    else {
        return Err(StateError::Malformed);
    };
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .map_err(|_| StateError::Malformed)?;
    if bytes.len() < NONCE_BYTES {
        return Err(StateError::Malformed);
    }
    let (nonce, sealed) = bytes.split_at(NONCE_BYTES);
    let aad = associated_data(kind);
    let opened = key
        .cipher
        .decrypt(
            XNonce::from_slice(nonce),
            Payload {
                msg: sealed,
                aad: aad.as_bytes(),
            },
        )
        .map_err(|_| StateError::Tampered)?;
    let json = match kind {
        "z" => inflate(&opened).map_err(|_| StateError::Malformed)?,
        _ => opened,
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

/// What sealing costs, for `cargo bench` (not an API: hidden from the docs): one state of a
/// given size sealed and opened, against the signed-only way of `v1` (deflate, base64, HMAC;
/// then verify, decode, inflate, parse).
#[doc(hidden)]
pub struct StateCost {
    state: LoopState,
    key: StateKey,
    mac: hmac::Hmac<Sha256>,
}

impl StateCost {
    /// A state whose JSON is about `bytes` long (a varied text: it deflates as prose does).
    pub fn new(bytes: usize) -> Self {
        use hmac::Mac;
        let mut text = String::with_capacity(bytes + 64);
        let mut i: u64 = 0;
        while text.len() < bytes {
            i += 1;
            text.push_str(&format!(
                "step {i} read {:x}; ",
                i.wrapping_mul(2_654_435_761)
            ));
        }
        let state = LoopState {
            expires: u64::MAX,
            history: HistoryBinding::of(&[]),
            model: "m".into(),
            system: "You are the operator's assistant.".into(),
            tail: vec![StateMessage::from(&Message::user(text))],
            round: 1,
            retries: 0,
            pending: Vec::new(),
        };
        let mac = match <hmac::Hmac<Sha256> as Mac>::new_from_slice(
            b"a bench secret of 32 bytes, long",
        ) {
            Ok(mac) => mac,
            Err(_) => unreachable!("HMAC takes keys of any length"),
        };
        Self {
            state,
            key: StateKey::from_secret("a bench secret of 32 bytes, long"),
            mac,
        }
    }

    /// The JSON's length.
    pub fn json_bytes(&self) -> usize {
        serde_json::to_vec(&self.state).map_or(0, |json| json.len())
    }

    /// Seals and opens the state once; the sealed text's length (0 if it did not open).
    pub fn seal_and_open(&self) -> usize {
        let text = encode(&self.state, &self.key);
        match decode(&text, &self.key, 0) {
            Ok(_) => text.len(),
            Err(_) => 0,
        }
    }

    /// Signs and verifies the state once as `v1` did; the signed text's length.
    pub fn sign_and_verify(&self) -> usize {
        use hmac::Mac;
        let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let json = serde_json::to_vec(&self.state).unwrap_or_default();
        let body = format!("v1.z.{}", engine.encode(deflate(&json).unwrap_or_default()));
        let mut mac = self.mac.clone();
        mac.update(format!("approval_state\n{body}").as_bytes());
        let text = format!("{body}.{}", hex::encode(mac.finalize().into_bytes()));
        // The other side: check the MAC, then decode, inflate, parse.
        let Some((body, sig)) = text.rsplit_once('.') else {
            return 0;
        };
        let mut mac = self.mac.clone();
        mac.update(format!("approval_state\n{body}").as_bytes());
        let verified = hex::decode(sig).is_ok_and(|tag| mac.verify_slice(&tag).is_ok());
        let opened = body
            .get(5..)
            .and_then(|payload| engine.decode(payload).ok())
            .and_then(|packed| inflate(&packed).ok())
            .and_then(|json| serde_json::from_slice::<LoopState>(&json).ok());
        if verified && opened.is_some() {
            text.len()
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests;
