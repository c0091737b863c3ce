//! Session hooks (seed 001's level 3): the model registers a hook with the `register_hook` tool
//! for the rest of the conversation. The server keeps no state, so the hook travels like a
//! persistent hook: a `session_hook` frame whose `hook` the client stores and sends back in
//! `chat.session_hooks`, signed when a secret is set. Only `llm` hooks, unless the operator sets
//! `allow_session_command_hooks` (then `command` too; never `http` or `agent`).

use std::path::Path;
use std::sync::Arc;

use hmac::Mac;
use serde_json::{json, Map, Value};

use super::config::parse_hooks;
use super::runner::Runner;
use super::{ExternalHooks, HookSet};
use crate::hooks::{AgentHook, HookFactory};
use crate::types::{ChatError, ChatRequest};

/// The fields of a session hook spec (the `sig` travels beside them in the same object).
const SPEC_FIELDS: [&str; 7] = [
    "event", "type", "prompt", "command", "name", "filter", "matcher",
];

/// HMAC-SHA256 (hex) of `"session_hook\n" + canonical JSON of the spec without `sig``; the
/// canonical JSON has its keys sorted and no spaces.
pub fn sign_spec(secret: &str, spec: &Value) -> String {
    let mut unsigned = spec.clone();
    if let Some(object) = unsigned.as_object_mut() {
        object.remove("sig");
    }
    let spec_json = unsigned.to_string();
    let mac = crate::hooks::signing::mac_over(secret, &["session_hook", &spec_json]);
    hex::encode(mac.finalize().into_bytes())
}

/// Checks a spec against the rules: known fields, an allowed handler. Returns the spec to store.
pub fn validate_spec(arguments: &Value, allow_command: bool) -> Result<Value, String> {
    let object = arguments
        .as_object()
        .ok_or("arguments must be a JSON object")?;
    let mut spec = Map::new();
    for (key, value) in object {
        if key == "sig" {
            continue;
        }
        if !SPEC_FIELDS.contains(&key.as_str()) {
            return Err(format!(
                "unknown field {key:?} (expected {})",
                SPEC_FIELDS.join(", ")
            ));
        }
        spec.insert(key.clone(), value.clone());
    }
    let kind = spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("llm")
        .to_string();
    match kind.as_str() {
        "llm" | "prompt" => {}
        "command" | "bash" if allow_command => {}
        "command" | "bash" => {
            return Err("session hooks may only use the llm handler on this server".into())
        }
        other => return Err(format!("session hooks may not use the {other:?} handler")),
    }
    spec.insert("type".into(), json!(kind));
    let spec = Value::Object(spec);
    parse_spec(&spec).map(|_| spec)
}

/// The spec as a hook set, validated exactly like a hook file.
fn parse_spec(spec: &Value) -> Result<HookSet, String> {
    let event = spec
        .get("event")
        .and_then(Value::as_str)
        .ok_or("missing field \"event\"")?;
    let mut hook = spec.clone();
    if let Some(object) = hook.as_object_mut() {
        object.remove("event");
        object.remove("sig");
    }
    // JSON is YAML, so a session hook goes through the hook file parser.
    let text = json!({ event: [hook] }).to_string();
    let (hooks, problems) = parse_hooks(Path::new("session hook"), &text, "session");
    if !problems.is_empty() {
        return Err(problems.join("; "));
    }
    let mut set = HookSet::default();
    for hook in hooks {
        set.by_event
            .entry(hook.event)
            .or_default()
            .push(Arc::new(hook));
    }
    Ok(set)
}

/// Builds each chat's session hooks from `chat.session_hooks`; forged or refused ones are
/// dropped (logged), never run.
pub struct SessionHookFactory {
    runner: Arc<Runner>,
    secret: Option<String>,
    allow_command: bool,
}

impl SessionHookFactory {
    pub fn new(runner: Arc<Runner>, secret: Option<String>, allow_command: bool) -> Self {
        Self {
            runner,
            secret,
            allow_command,
        }
    }
}

impl HookFactory for SessionHookFactory {
    fn hooks_for(&self, request: &ChatRequest) -> Result<Vec<Arc<dyn AgentHook>>, ChatError> {
        let mut set = HookSet::default();
        for spec in &request.session_hooks {
            if let Some(secret) = &self.secret {
                let sig = spec.get("sig").and_then(Value::as_str).unwrap_or_default();
                if sig != sign_spec(secret, spec) {
                    tracing::warn!(chat = %request.id, "dropped a session hook whose signature does not verify");
                    metrics::counter!("hookwire_session_hooks_dropped_total", "reason" => "bad_signature").increment(1);
                    continue;
                }
            }
            match validate_spec(spec, self.allow_command).and_then(|spec| parse_spec(&spec)) {
                Ok(parsed) => {
                    for (event, hooks) in parsed.by_event {
                        set.by_event.entry(event).or_default().extend(hooks);
                    }
                }
                Err(error) => {
                    tracing::warn!(chat = %request.id, %error, "dropped a session hook");
                    metrics::counter!("hookwire_session_hooks_dropped_total", "reason" => "refused").increment(1);
                }
            }
        }
        if set.is_empty() {
            return Ok(Vec::new());
        }
        Ok(vec![Arc::new(
            ExternalHooks::new(set, self.runner.clone()).with_label("session"),
        )])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_llm_unless_allowed() {
        let llm = json!({"event":"stop","prompt":"judge {{assistant_output}}"});
        assert_eq!(validate_spec(&llm, false).unwrap()["type"], "llm");
        let command = json!({"event":"stop","type":"command","command":"rm -rf /"});
        assert!(validate_spec(&command, false)
            .unwrap_err()
            .contains("only use the llm handler"));
        assert!(validate_spec(&command, true).is_ok());
        let http = json!({"event":"stop","type":"http","url":"http://127.0.0.1:1"});
        assert!(validate_spec(&http, true).is_err());
        assert!(validate_spec(&json!({"event":"nope","prompt":"x"}), false)
            .unwrap_err()
            .contains("unknown event"));
        assert!(
            validate_spec(&json!({"event":"stop","prompt":"x","timeout":1}), false)
                .unwrap_err()
                .contains("unknown field")
        );
    }

    #[test]
    fn signatures_cover_the_spec_and_ignore_key_order() {
        let spec = json!({"event":"stop","type":"llm","prompt":"p"});
        let sig = sign_spec("k", &spec);
        let mut stored = json!({"prompt":"p","type":"llm","event":"stop"});
        stored["sig"] = json!(sig.clone());
        assert_eq!(sign_spec("k", &stored), sig);
        stored["prompt"] = json!("changed");
        assert_ne!(sign_spec("k", &stored), sig);
    }
}
