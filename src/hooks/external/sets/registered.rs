//! Registered hooks (the jcli format's level 3, "session hooks" on the wire: their level is
//! `session`, their frame `session_hook`, the client's list `chat.session_hooks`): the model
//! registers a hook with the `register_hook` tool for the rest of the conversation. The server keeps no state, so the hook travels like a
//! persistent hook: a `session_hook` frame whose `hook` the client stores and sends back in
//! `chat.session_hooks`, signed when a secret is set. Only `llm` hooks, unless the operator sets
//! `allow_session_command_hooks` (then `command` too; never `http` or `agent`).
//!
//! A session hook is text the model wrote, perhaps on a file's say-so, so it is governed (README
//! "Security model"): it carries `expires_at` (covered by the signature; expired → ignored), the
//! same hook sent twice runs once, a chat runs at most `session_hooks.max_per_chat` of them (the
//! rest ignored with a notice), and its results may only add or decide, never rewrite (see
//! [`REGISTERED_CAPABILITIES`]).

use std::collections::{BTreeSet, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;

use serde_json::{json, Map, Value};

use crate::hooks::external::hook::{HookSet, REGISTERED_LEVEL};
use crate::hooks::external::load::parse_hooks;
use crate::hooks::external::run::{ExternalHooks, Runner};
use crate::hooks::signing::{RegisteredHookSignature, SigningKey};
use crate::hooks::{AgentHook, HookFactory};
use crate::types::{ChatError, ChatRequest};

/// The fields of a session hook spec (the `sig` travels beside them in the same object).
const SPEC_FIELDS: [&str; 8] = [
    "event",
    "type",
    "prompt",
    "command",
    "name",
    "filter",
    "matcher",
    "expires_at",
];

/// The result fields a session hook may set besides its decisions (`stop`, `skip`, `block`,
/// `retry_feedback`, `systemMessage`, which need no capability): it may add context, never
/// rewrite the prompt, the messages, the input, a tool's arguments or result, or the answer.
pub(crate) const REGISTERED_CAPABILITIES: [&str; 2] = ["additional_context", "inject_messages"];

/// Why a session hook spec is refused (the model sees it when registering; a stored spec that
/// fails is dropped with it in the log).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum RegisteredHookError {
    #[error("arguments must be a JSON object")]
    NotAnObject,
    #[error("unknown field {0:?} (expected {fields})", fields = SPEC_FIELDS.join(", "))]
    UnknownField(String),
    #[error("session hooks may only use the llm handler on this server")]
    CommandNotAllowed,
    #[error("session hooks may not use the {0:?} handler")]
    Handler(String),
    #[error("missing field \"event\"")]
    MissingEvent,
    /// What the hook file parser found wrong, joined with `; `.
    #[error("{0}")]
    Invalid(String),
}

/// Seconds since the epoch, now.
pub(crate) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Checks a spec against the rules: known fields, an allowed handler. Returns the spec to store.
pub(crate) fn validate_spec(
    arguments: &Value,
    allow_command: bool,
) -> Result<Value, RegisteredHookError> {
    let object = arguments
        .as_object()
        .ok_or(RegisteredHookError::NotAnObject)?;
    let mut spec = Map::new();
    for (key, value) in object {
        if key == "sig" {
            continue;
        }
        if !SPEC_FIELDS.contains(&key.as_str()) {
            return Err(RegisteredHookError::UnknownField(key.clone()));
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
        "command" | "bash" => return Err(RegisteredHookError::CommandNotAllowed),
        other => return Err(RegisteredHookError::Handler(other.to_string())),
    }
    spec.insert("type".into(), json!(kind));
    let spec = Value::Object(spec);
    parse_spec(&spec).map(|_| spec)
}

/// The spec as a hook set, validated exactly like a hook file.
fn parse_spec(spec: &Value) -> Result<HookSet, RegisteredHookError> {
    let event = spec
        .get("event")
        .and_then(Value::as_str)
        .ok_or(RegisteredHookError::MissingEvent)?;
    let mut hook = spec.clone();
    if let Some(object) = hook.as_object_mut() {
        object.remove("event");
        object.remove("sig");
        object.remove("expires_at");
    }
    // JSON is YAML, so a session hook goes through the hook file parser.
    let text = json!({ event: [hook] }).to_string();
    let (hooks, mut problems) = parse_hooks(Path::new("session hook"), &text, REGISTERED_LEVEL);
    problems.retain(crate::types::Problem::is_error);
    if !problems.is_empty() {
        let problems: Vec<String> = problems.iter().map(ToString::to_string).collect();
        return Err(RegisteredHookError::Invalid(problems.join("; ")));
    }
    let capabilities: BTreeSet<String> = REGISTERED_CAPABILITIES
        .iter()
        .map(|c| c.to_string())
        .collect();
    let mut set = HookSet::default();
    for mut hook in hooks {
        hook.capabilities = Some(capabilities.clone());
        set.by_event
            .entry(hook.event)
            .or_default()
            .push(Arc::new(hook));
    }
    Ok(set)
}

/// When a stored spec stops running: its `expires_at`, unix seconds. A spec without one (made
/// before expiry existed, or by hand) has expired.
fn expires_at(spec: &Value) -> u64 {
    spec.get("expires_at").and_then(Value::as_u64).unwrap_or(0)
}

/// Builds each chat's session hooks from `chat.session_hooks`; forged, expired, repeated or
/// refused ones are dropped (logged and counted), never run.
pub(crate) struct RegisteredHooks {
    runner: Arc<Runner>,
    /// Checks each spec's `sig`; `None` = specs are trusted as sent.
    key: Option<SigningKey>,
    settings: RegisteredHookRules,
}

/// The operator's rules for session hooks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RegisteredHookRules {
    /// `false`: the `register_hook` tool is gone and `chat.session_hooks` is ignored.
    pub(crate) enabled: bool,
    pub(crate) allow_command: bool,
    /// Session hooks one chat runs at most.
    pub(crate) max_per_chat: usize,
}

impl RegisteredHooks {
    pub(crate) fn new(
        runner: Arc<Runner>,
        key: Option<SigningKey>,
        settings: RegisteredHookRules,
    ) -> Self {
        Self {
            runner,
            key,
            settings,
        }
    }

    /// Why `spec` may not run in this chat, if it may not.
    fn refusal(&self, spec: &Value, now: u64) -> Option<(&'static str, String)> {
        if let Some(key) = &self.key {
            let sig = spec.get("sig").and_then(Value::as_str).unwrap_or_default();
            if !key.verify(&RegisteredHookSignature { spec }, sig) {
                return Some(("bad_signature", "its signature does not verify".into()));
            }
        }
        if expires_at(spec) <= now {
            return Some(("expired", "it has expired (expires_at)".into()));
        }
        if let Err(error) = validate_spec(spec, self.settings.allow_command) {
            return Some(("refused", error.to_string()));
        }
        None
    }
}

fn drop_spec(request: &ChatRequest, reason: &'static str, why: &str) {
    tracing::warn!(chat = %request.id, reason, "dropped a session hook: {why}");
    metrics::counter!("hookwire_session_hooks_dropped_total", "reason" => reason).increment(1);
}

impl HookFactory for RegisteredHooks {
    fn hooks_for(&self, request: &ChatRequest) -> Result<Vec<Arc<dyn AgentHook>>, ChatError> {
        if request.session_hooks.is_empty() {
            return Ok(Vec::new());
        }
        if !self.settings.enabled {
            for _ in &request.session_hooks {
                drop_spec(
                    request,
                    "disabled",
                    "session hooks are off (session_hooks.enabled)",
                );
            }
            return Ok(Vec::new());
        }
        let now = unix_now();
        let mut set = HookSet::default();
        let mut seen = HashSet::new();
        let mut kept = 0;
        let mut over_cap = 0;
        for spec in &request.session_hooks {
            if let Some((reason, why)) = self.refusal(spec, now) {
                drop_spec(request, reason, &why);
                continue;
            }
            // The same hook sent twice (the same signature, or without a secret the same spec)
            // runs once.
            let identity = self.identity(spec);
            if !seen.insert(identity) {
                drop_spec(request, "duplicate", "the same hook was sent again");
                continue;
            }
            if kept == self.settings.max_per_chat {
                over_cap += 1;
                drop_spec(request, "over_limit", "more session hooks than a chat runs");
                continue;
            }
            match parse_spec(spec) {
                Ok(parsed) => {
                    kept += 1;
                    for (event, hooks) in parsed.by_event {
                        set.by_event.entry(event).or_default().extend(hooks);
                    }
                }
                Err(error) => drop_spec(request, "refused", &error.to_string()),
            }
        }
        let mut hooks: Vec<Arc<dyn AgentHook>> = Vec::new();
        if over_cap > 0 {
            hooks.push(Arc::new(OverLimitNotice {
                ignored: over_cap,
                limit: self.settings.max_per_chat,
            }));
        }
        if !set.is_empty() {
            hooks.push(Arc::new(
                ExternalHooks::new(set, self.runner.clone()).with_label("session"),
            ));
        }
        Ok(hooks)
    }

    fn hooks_for_registered(&self, request: &ChatRequest, spec: &Value) -> Vec<Arc<dyn AgentHook>> {
        registered_hooks(self, request, spec)
    }
}

impl RegisteredHooks {
    /// A spec's identity: the same hook sent twice runs once.
    fn identity(&self, spec: &Value) -> String {
        match &self.key {
            Some(_) => spec.get("sig").map(Value::to_string).unwrap_or_default(),
            None => RegisteredHookSignature { spec }.canonical(),
        }
    }
}

/// `hooks_for_registered`: a hook the model registered joins the running chat under the same
/// rules as one sent back (signature, expiry, handler, once, the per-chat cap).
pub(crate) fn registered_hooks(
    factory: &RegisteredHooks,
    request: &ChatRequest,
    spec: &Value,
) -> Vec<Arc<dyn AgentHook>> {
    if !factory.settings.enabled {
        return Vec::new();
    }
    if let Some((reason, why)) = factory.refusal(spec, unix_now()) {
        drop_spec(request, reason, &why);
        return Vec::new();
    }
    let identity = factory.identity(spec);
    if request
        .session_hooks
        .iter()
        .any(|sent| factory.identity(sent) == identity)
    {
        return Vec::new();
    }
    if request.session_hooks.len() >= factory.settings.max_per_chat {
        drop_spec(request, "over_limit", "more session hooks than a chat runs");
        return Vec::new();
    }
    match parse_spec(spec) {
        Ok(set) => vec![Arc::new(
            ExternalHooks::new(set, factory.runner.clone()).with_label("session"),
        )],
        Err(error) => {
            drop_spec(request, "refused", &error.to_string());
            Vec::new()
        }
    }
}

/// Tells the person, once at the start of the chat, that session hooks were left out.
struct OverLimitNotice {
    ignored: usize,
    limit: usize,
}

#[async_trait]
impl AgentHook for OverLimitNotice {
    fn name(&self) -> &str {
        "session-hook-limit"
    }

    async fn pre_send_message(
        &self,
        ctx: &mut crate::hooks::HookContext,
        _input: &mut String,
    ) -> crate::hooks::HookResult<crate::hooks::Flow> {
        ctx.notify(
            crate::types::NoticeLevel::Warn,
            format!(
                "{} session hook(s) were ignored: a chat runs at most {} (session_hooks.max_per_chat)",
                self.ignored, self.limit
            ),
            "session",
        );
        Ok(crate::hooks::Flow::Continue)
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
            .to_string()
            .contains("only use the llm handler"));
        assert!(validate_spec(&command, true).is_ok());
        let http = json!({"event":"stop","type":"http","url":"http://127.0.0.1:1"});
        assert!(validate_spec(&http, true).is_err());
        assert!(validate_spec(&json!({"event":"nope","prompt":"x"}), false)
            .unwrap_err()
            .to_string()
            .contains("unknown event"));
        assert!(
            validate_spec(&json!({"event":"stop","prompt":"x","timeout":1}), false)
                .unwrap_err()
                .to_string()
                .contains("unknown field")
        );
    }

    const RULES: RegisteredHookRules = RegisteredHookRules {
        enabled: true,
        allow_command: false,
        max_per_chat: 16,
    };

    fn factory_with(key: Option<SigningKey>, rules: RegisteredHookRules) -> RegisteredHooks {
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
        RegisteredHooks::new(Arc::new(runner), key, rules)
    }

    fn factory(key: Option<SigningKey>) -> RegisteredHooks {
        factory_with(key, RULES)
    }

    /// The hooks a chat sending `specs` gets: (session hook sets, over-limit notices).
    fn hooks_of(factory: &RegisteredHooks, specs: Vec<Value>) -> (usize, usize) {
        let mut request = ChatRequest::new("c", "hi");
        request.session_hooks = specs;
        let hooks = factory.hooks_for(&request).unwrap();
        let notices = hooks
            .iter()
            .filter(|h| h.name() == "session-hook-limit")
            .count();
        let hooks_in_sets = hooks.len() - notices;
        (hooks_in_sets, notices)
    }

    fn hooks_for(factory: &RegisteredHooks, spec: Value) -> usize {
        hooks_of(factory, vec![spec]).0
    }

    fn live(mut spec: Value) -> Value {
        spec["expires_at"] = json!(unix_now() + 3600);
        spec
    }

    fn signed(key: &SigningKey, mut spec: Value) -> Value {
        spec["sig"] = json!(key.sign(&RegisteredHookSignature { spec: &spec }));
        spec
    }

    #[test]
    fn the_factory_keeps_signed_specs_and_drops_forged_ones() {
        let key = SigningKey::new("k");
        let spec = signed(
            &key,
            live(json!({"event":"stop","type":"llm","prompt":"judge"})),
        );
        let signed_factory = factory(Some(key));
        assert_eq!(hooks_for(&signed_factory, spec.clone()), 1);
        let mut forged = spec.clone();
        forged["prompt"] = json!("forged");
        assert_eq!(hooks_for(&signed_factory, forged), 0);
        let mut unsigned = spec.clone();
        unsigned["sig"] = json!("");
        assert_eq!(hooks_for(&signed_factory, unsigned.clone()), 0);
        // Without a secret, specs are trusted as sent.
        assert_eq!(hooks_for(&factory(None), unsigned), 1);
    }

    #[test]
    fn expired_specs_and_specs_without_expiry_do_not_run() {
        let key = SigningKey::new("k");
        let factory = factory(Some(key.clone()));
        let mut old = json!({"event":"stop","type":"llm","prompt":"judge"});
        old["expires_at"] = json!(unix_now() - 1);
        assert_eq!(hooks_for(&factory, signed(&key, old.clone())), 0);
        let timeless = json!({"event":"stop","type":"llm","prompt":"judge"});
        assert_eq!(hooks_for(&factory, signed(&key, timeless)), 0);
        // The expiry is signed: moving it forward breaks the signature.
        let mut extended = signed(&key, old);
        extended["expires_at"] = json!(unix_now() + 3600);
        assert_eq!(hooks_for(&factory, extended), 0);
    }

    #[test]
    fn duplicates_count_once_and_a_chat_runs_at_most_the_limit() {
        let key = SigningKey::new("k");
        let rules = RegisteredHookRules {
            max_per_chat: 2,
            ..RULES
        };
        let factory = factory_with(Some(key.clone()), rules);
        let spec = |n: usize| {
            signed(
                &key,
                live(json!({"event":"stop","type":"llm","prompt":format!("judge {n}")})),
            )
        };
        let one = spec(1);
        let mut request = ChatRequest::new("c", "hi");
        request.session_hooks = vec![one.clone(); 100];
        let hooks = factory.hooks_for(&request).unwrap();
        assert_eq!(hooks.len(), 1, "one hook set, no notice");
        let (sets, notices) = hooks_of(&factory, vec![spec(1), spec(2), spec(3), spec(4)]);
        assert_eq!((sets, notices), (1, 1), "two kept, two over the limit");
        let off = factory_with(
            Some(key.clone()),
            RegisteredHookRules {
                enabled: false,
                ..RULES
            },
        );
        assert_eq!(hooks_of(&off, vec![spec(1)]), (0, 0));
    }

    #[test]
    fn session_hooks_may_add_and_decide_but_not_rewrite() {
        let set = parse_spec(&json!({"event":"stop","type":"llm","prompt":"x"})).unwrap();
        let hook = &set.hooks(crate::hooks::external::hook::Event::Stop)[0];
        let capabilities = hook.capabilities.as_ref().unwrap();
        assert!(capabilities.contains("additional_context"));
        for rewrite in [
            "system_prompt",
            "messages",
            "user_input",
            "tool_arguments",
            "assistant_output",
        ] {
            assert!(!capabilities.contains(rewrite), "{rewrite}");
        }
    }
}
