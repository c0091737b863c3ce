//! Session hooks (seed 001's level 3): the model registers a hook with the `register_hook` tool
//! for the rest of the conversation. The server keeps no state, so the hook travels like a
//! persistent hook: a `session_hook` frame whose `hook` the client stores and sends back in
//! `chat.session_hooks`, signed when a secret is set. Only `llm` hooks, unless the operator sets
//! `allow_session_command_hooks` (then `command` too; never `http` or `agent`).

use std::path::Path;
use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::config::parse_hooks;
use super::runner::Runner;
use super::{ExternalHooks, HookSet};
use crate::hooks::signing::{SessionHookSignature, SigningKey};
use crate::hooks::{AgentHook, HookFactory};
use crate::types::{ChatError, ChatRequest};

/// The fields of a session hook spec (the `sig` travels beside them in the same object).
const SPEC_FIELDS: [&str; 7] = [
    "event", "type", "prompt", "command", "name", "filter", "matcher",
];

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
        let problems: Vec<String> = problems.iter().map(ToString::to_string).collect();
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
    /// Checks each spec's `sig`; `None` = specs are trusted as sent.
    key: Option<SigningKey>,
    allow_command: bool,
}

impl SessionHookFactory {
    pub fn new(runner: Arc<Runner>, key: Option<SigningKey>, allow_command: bool) -> Self {
        Self {
            runner,
            key,
            allow_command,
        }
    }
}

impl HookFactory for SessionHookFactory {
    fn hooks_for(&self, request: &ChatRequest) -> Result<Vec<Arc<dyn AgentHook>>, ChatError> {
        let mut set = HookSet::default();
        for spec in &request.session_hooks {
            if let Some(key) = &self.key {
                let sig = spec.get("sig").and_then(Value::as_str).unwrap_or_default();
                if !key.verify(&SessionHookSignature { spec }, sig) {
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

    fn factory(key: Option<SigningKey>) -> SessionHookFactory {
        let model: Arc<dyn crate::llm::ChatModel> =
            Arc::new(crate::llm::demo::DemoModel::default());
        let sub_agent = crate::agent::AgentClient::builder()
            .model(model.clone())
            .build();
        let runner = Runner::new(
            model,
            "demo".into(),
            std::sync::Arc::new(sub_agent),
            std::env::temp_dir(),
        );
        SessionHookFactory::new(Arc::new(runner), key, false)
    }

    fn hooks_for(factory: &SessionHookFactory, spec: Value) -> usize {
        let mut request = ChatRequest::new("c", "hi");
        request.session_hooks = vec![spec];
        factory.hooks_for(&request).unwrap().len()
    }

    #[test]
    fn the_factory_keeps_signed_specs_and_drops_forged_ones() {
        let key = SigningKey::new("k");
        let mut spec = json!({"event":"stop","type":"llm","prompt":"judge"});
        spec["sig"] = json!(key.sign(&SessionHookSignature { spec: &spec }));
        let signed = factory(Some(key));
        assert_eq!(hooks_for(&signed, spec.clone()), 1);
        let mut forged = spec.clone();
        forged["prompt"] = json!("forged");
        assert_eq!(hooks_for(&signed, forged), 0);
        let mut unsigned = spec.clone();
        unsigned["sig"] = json!("");
        assert_eq!(hooks_for(&signed, unsigned.clone()), 0);
        // Without a secret, specs are trusted as sent.
        assert_eq!(hooks_for(&factory(None), unsigned), 1);
    }
}
