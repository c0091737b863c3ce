//! One truth per answer shape: every answer the published output schema of a dialect accepts
//! (`docs/schema/hooks/*/output.json`) is read without error at every event of that dialect,
//! and every answer it refuses is refused. The answers are made from the schemas themselves
//! (each property, and each property of the objects within, with a value of every JSON kind
//! and the schema's own values), plus the examples of the docs, `examples/hooks/` and the
//! tests; the schema's validator says which are valid.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use super::super::read;
use crate::hooks::external::hook::{
    Dialect, Envelope, Event, EventState, HookDef, RunResult, Spelling,
};
use crate::hooks::external::load::parse_hooks;

/// The published schema of `dialect`'s answers.
fn published(dialect: &str) -> Value {
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("docs/schema/hooks")
        .join(dialect)
        .join("output.json");
    let text = std::fs::read_to_string(&file).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// `schema` with its `$ref` into `$defs` followed.
fn resolved<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(reference) => {
            let name = reference.trim_start_matches("#/$defs/");
            resolved(root, &root["$defs"][name])
        }
        None => schema,
    }
}

/// A value `schema` accepts (for the required fields around the value under test).
fn sample(root: &Value, schema: &Value) -> Value {
    let schema = resolved(root, schema);
    if let Some(value) = schema.get("const") {
        return value.clone();
    }
    if let Some(first) = schema.get("enum").and_then(|e| e.get(0)) {
        return first.clone();
    }
    for branches in ["oneOf", "anyOf"] {
        if let Some(first) = schema.get(branches).and_then(|b| b.get(0)) {
            return sample(root, first);
        }
    }
    let kind = match schema.get("type") {
        Some(Value::Array(kinds)) => kinds.first().and_then(Value::as_str),
        Some(Value::String(kind)) => Some(kind.as_str()),
        _ => None,
    };
    match kind {
        Some("string") => json!("{}"),
        Some("boolean") => json!(true),
        Some("integer" | "number") => json!(1),
        Some("array") => json!([]),
        Some("object") => {
            let mut object = Map::new();
            for name in schema["required"].as_array().into_iter().flatten() {
                let name = name.as_str().unwrap();
                object.insert(name.into(), sample(root, &schema["properties"][name]));
            }
            Value::Object(object)
        }
        _ => json!("x"),
    }
}

/// Whether `schema` (or a branch of it) is text that must hold JSON (`contentMediaType`).
fn is_json_text(root: &Value, schema: &Value) -> bool {
    let schema = resolved(root, schema);
    schema.get("contentMediaType") == Some(&json!("application/json"))
        || ["oneOf", "anyOf"].iter().any(|branches| {
            let branches = schema.get(*branches).and_then(Value::as_array);
            branches
                .into_iter()
                .flatten()
                .any(|branch| is_json_text(root, branch))
        })
}

/// A value to try in a place: every JSON kind, text that is and is not JSON.
fn kinds() -> Vec<Value> {
    vec![
        json!(null),
        json!(true),
        json!(1),
        json!(1.5),
        json!("x"),
        json!("{}"),
        json!([]),
        json!([1]),
        json!(["x"]),
        json!(["user", "x"]),
        json!({}),
        json!({"x": 1}),
    ]
}

/// A value to try, and whether it is text the schema marks as JSON (`contentMediaType`) that
/// is not JSON: what a schema cannot check, so the reader refuses it although it validates.
type Tried = (Value, bool);

/// Values to try where `schema` is: the JSON kinds, the schema's own values, and (to `depth`)
/// objects and arrays with each of their places tried in turn.
fn tried(root: &Value, schema: &Value, depth: usize) -> Vec<Tried> {
    let schema = resolved(root, schema);
    let json_text = is_json_text(root, schema);
    let mut found: Vec<Tried> = kinds()
        .into_iter()
        .map(|value| {
            let not_json = json_text
                && value
                    .as_str()
                    .is_some_and(|text| serde_json::from_str::<Value>(text).is_err());
            (value, not_json)
        })
        .collect();
    found.push((sample(root, schema), false));
    for value in schema
        .get("enum")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        found.push((value.clone(), false));
    }
    if let Some(value) = schema.get("const") {
        found.push((value.clone(), false));
    }
    if depth == 0 {
        return found;
    }
    for branches in ["oneOf", "anyOf"] {
        for branch in schema
            .get(branches)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            found.extend(tried(root, branch, depth));
        }
    }
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        let base = sample(root, schema);
        for (name, place) in properties {
            for (value, not_json) in tried(root, place, depth - 1) {
                let mut object = base.as_object().cloned().unwrap_or_default();
                object.insert(name.clone(), value);
                found.push((Value::Object(object), not_json));
            }
        }
    }
    if let Some(items) = schema.get("items") {
        for (value, not_json) in tried(root, items, depth - 1) {
            found.push((json!([value]), not_json));
        }
    }
    found
}

/// Every answer to try for `dialect`'s schema: the schema's places, then `examples`, then
/// `not_json` (examples whose `tool_arguments` text is not JSON).
fn answers(schema: &Value, examples: &[Value], not_json: &[Value]) -> Vec<Tried> {
    let mut seen = BTreeSet::new();
    tried(schema, schema, 3)
        .into_iter()
        .chain(examples.iter().map(|example| (example.clone(), false)))
        .chain(not_json.iter().map(|example| (example.clone(), true)))
        .filter(|(value, _)| !value.is_null()) // no answer at all, not an answer
        .filter(|(value, _)| seen.insert(value.to_string()))
        .collect()
}

/// A hook configured under `name`, of `dialect` (a Gemini file reads the names both tools share
/// as Gemini's).
fn hook(name: &str, dialect: Dialect) -> HookDef {
    let yaml = format!("{name}:\n  - {{name: h, command: x}}\n");
    let (mut hooks, problems) = parse_hooks(Path::new("h.yaml"), &yaml, "server");
    assert!(problems.is_empty(), "{problems:?}");
    let mut hook = hooks.remove(0);
    hook.dialect = dialect;
    hook
}

/// Every (hook, event) of `dialects`: each name they spell, at each event it stands for.
fn hooks_of(dialects: &[Dialect]) -> Vec<(HookDef, Event)> {
    let mut found = Vec::new();
    for &dialect in dialects {
        for name in Event::known_names() {
            if let Spelling::Known(spelled, events) = Event::spelling(name, Some(dialect)) {
                if spelled == dialect {
                    found.extend(events.iter().map(|event| (hook(name, dialect), *event)));
                }
            }
        }
    }
    found
}

/// Holds `dialects`' reader to the schema `file` both ways, at each of their events.
fn holds_both_ways(file: &str, dialects: &[Dialect], examples: &[Value], not_json: &[Value]) {
    let schema = published(file);
    let validator = jsonschema::validator_for(&schema).unwrap();
    let state = EventState {
        user_input: Some("u".into()),
        tool_name: Some("read_file".into()),
        tool_arguments: Some(json!({"path": "a"})),
        tool_result: Some("r".into()),
        tool_error: Some("e".into()),
        ..EventState::default()
    };
    let envelope = Envelope {
        cwd: "/ws".into(),
        ..Envelope::default()
    };
    let hooks = hooks_of(dialects);
    assert!(!hooks.is_empty());
    let answers = answers(&schema, examples, not_json);
    let (mut accepted, mut refused, mut wrong) = (0, 0, Vec::new());
    for (answer, not_json) in &answers {
        let valid = validator.is_valid(answer) && !not_json;
        if valid {
            accepted += 1;
        } else {
            refused += 1;
        }
        for (hook, event) in &hooks {
            let result = RunResult::Output(answer.clone());
            let read = read(hook, *event, result, &state, &envelope);
            if read.is_ok() != valid {
                wrong.push(format!(
                    "{} at {event:?}: the schema {} {answer}, the reader {}",
                    hook.event_name,
                    if valid { "accepts" } else { "refuses" },
                    match read {
                        Ok(_) => "reads it".to_string(),
                        Err(error) => format!("refuses it: {error}"),
                    }
                ));
            }
        }
    }
    assert!(
        accepted > 20 && refused > 20,
        "{file}: {accepted} accepted, {refused} refused: too few to say anything"
    );
    assert!(wrong.is_empty(), "{file}:\n{}", wrong.join("\n"));
}

#[test]
fn native_answers_are_read_exactly_when_their_schema_accepts_them() {
    holds_both_ways(
        "native",
        &[Dialect::Hookwire, Dialect::OpenHarness],
        &[
            json!({}),
            json!({"user_input":"x","inject_messages":[{"role":"user","content":"now"}],"additional_context":"ctx",
                   "retry_feedback":"again","system_message":"hi","action":"skip","reason":"nope"}),
            json!({"continue": false, "stopReason": "budget", "systemMessage": "stopped",
                   "hookSpecificOutput": {"hookEventName":"before_model_call","system_prompt":"new"}}),
            json!({"hookSpecificOutput":{"tool_input":{"path":"b"}}}),
            json!({"tool_arguments":"{\"path\":\"b\"}","decision":"block"}),
            json!({"abort": true}),
            json!({"action": "explode"}),
            json!({"inject_messages":[{"role":"tool","content":"x"}]}),
            json!({"additional_context": "The current time is 2024-01-01 00:00 UTC."}),
            json!({"user_input": "[2024-01-01] hi"}),
            json!({"summaryText": "short", "hookSpecificOutput": {"summary": "shorter"}}),
            json!([1]),
        ],
        &[json!({"tool_arguments": "not json"})],
    );
}

#[test]
fn claude_answers_are_read_exactly_when_their_schema_accepts_them() {
    holds_both_ways(
        "claude",
        &[Dialect::Claude],
        &[
            json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask",
                   "permissionDecisionReason": "check first"}, "systemMessage": "asked"}),
            json!({"decision": "block", "reason": "old"}),
            json!({"continue": false, "stopReason": "halt"}),
            json!({"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": {"file_path": "/ws/b"},
                   "additionalContext": "note"}, "sessionTitle": "x"}),
            json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                   "permissionDecisionReason": "Read of .env blocked"}}),
            json!({"hookSpecificOutput": {"updatedToolOutput": {"file": {"content": "new"}}}}),
            json!({"ok": false, "reason": "unsafe"}),
            json!({"hookSpecificOutput": {"permissionDecision": "maybe"}}),
            json!({"hookSpecificOutput": {"updatedInput": "text"}}),
        ],
        &[],
    );
}

#[test]
fn gemini_answers_are_read_exactly_when_their_schema_accepts_them() {
    holds_both_ways(
        "gemini",
        &[Dialect::Gemini],
        &[
            json!({"decision": "deny", "reason": "Security policy: .env files hold secrets",
                   "systemMessage": "Blocked a read of a .env file"}),
            json!({"decision": "allow"}),
            json!({"suppressOutput": true}),
            json!({"hookSpecificOutput": {"tool_input": {"file_path": "/ws/b"}}}),
            json!({"hookSpecificOutput": {"llm_response": {"candidates": [{"content": {"role": "model", "parts": ["new ", {"text": "text"}]}}]}}}),
            json!({"hookSpecificOutput": {"llm_request": {"model": "m", "messages": [{"role": "model", "content": "x"}]}}}),
            json!({"hookSpecificOutput": {"llm_request": {"messages": [{"role": "tool", "content": "x"}]}}}),
            json!({"systemMessage": 3}),
        ],
        &[],
    );
}
