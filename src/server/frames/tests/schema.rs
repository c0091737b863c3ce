//! One truth for what a client may send: the published schema (`docs/schema/frames/client.json`)
//! and the parser agree. Every frame the schema accepts is read, and accepted once its tool calls
//! are answered (the one rule over several messages a schema cannot say); every frame it
//! refuses is refused. The frames are made from the schema: seeds it accepts (one per frame kind
//! and message role), then each property the schema names at each place set to a value of every
//! JSON type and to the edges of its constraints, or removed.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::super::client::WireClientFrame;
use super::super::ClientFrame;
use crate::config::Limits;

/// The checked-in schema (`tests/it/schema.rs` keeps it equal to the generated one).
fn published() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/schema/frames/client.json"
    );
    let text = std::fs::read_to_string(path).expect("docs/schema/frames/client.json");
    serde_json::from_str(&text).expect("the client schema is JSON")
}

/// Frames the schema accepts, between them every kind, role, mark and option.
fn seeds() -> Vec<Value> {
    let call = |id: &str, arguments: Value| json!({"id": id, "type": "function", "function": {"name": "list_dir", "arguments": arguments}});
    let history = json!([
        {"role": "user", "content": "list"},
        {"role": "system", "content": "be brief",
         "_hook": {"name": "h", "skill": "s", "timing": "after_user_input", "sig": "ab"}},
        {"role": "assistant", "content": null, "tool_calls": [call("k1", json!("{}"))]},
        {"role": "tool", "tool_call_id": "k1", "name": "list_dir", "content": "a.txt"},
        {"role": "assistant", "content": "", "tool_calls": [call("k2", json!({"path": "."}))]},
        {"role": "tool", "tool_call_id": "k2", "content": "b.txt"},
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": "<summary>", "_compact": {"count": 2}}
    ]);
    vec![
        json!({"type": "ping"}),
        json!({"type": "ping", "id": "p1"}),
        json!({"type": "cancel", "id": "c1"}),
        json!({"type": "chat", "input": "hi"}),
        json!({"type": "chat", "id": "c1", "input": "go", "messages": history, "skills": ["a"],
               "enable_tools": false, "session_hooks": [{"name": "x"}], "trace": true,
               "voice": false, "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
               "conversation_id": "conv-1"}),
        json!({"type": "chat", "id": "c2",
               "messages": [{"role": "user", "content": "read"},
                            {"role": "assistant", "content": null, "tool_calls": [call("r1", json!("{}"))]}],
               "resume": {"state": "v1.x", "decisions": [{"call_id": "r1", "decision": "allow"},
                                                          {"call_id": "r2", "decision": "deny", "reason": "no"}]}}),
        json!({"type": "chat", "id": "c3",
               "client_tools": [{"name": "get_location", "description": "where the person is",
                                 "parameters": {"type": "object", "properties": {}}},
                                {"name": "open-dialog"}],
               "messages": [{"role": "user", "content": "where am I"},
                            {"role": "assistant", "content": null,
                             "tool_calls": [{"id": "g1", "type": "function",
                                             "function": {"name": "get_location", "arguments": "{}"}}]},
                            {"role": "tool", "tool_call_id": "g1", "content": "Paris"}]}),
        json!({"type": "compact", "id": "k", "messages": [{"role": "user", "content": "a"},
                                                          {"role": "assistant", "content": "b"}]}),
    ]
}

/// The schema's objects and arrays as they describe one place of a frame: every subschema that
/// applies there, whatever branch or condition it sits in.
struct Places<'a> {
    root: &'a Value,
}

impl<'a> Places<'a> {
    /// `schema` and every schema it refers to or combines, flattened.
    fn all(&self, schema: &'a Value, out: &mut Vec<&'a Value>) {
        if out.len() > 200 {
            return;
        }
        out.push(schema);
        if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
            let name = reference.trim_start_matches("#/$defs/");
            self.all(&self.root["$defs"][name], out);
        }
        for key in ["allOf", "anyOf", "oneOf"] {
            for branch in schema
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                self.all(branch, out);
            }
        }
        for key in ["if", "then", "else"] {
            if let Some(branch) = schema.get(key) {
                self.all(branch, out);
            }
        }
    }

    fn flattened(&self, schemas: &[&'a Value]) -> Vec<&'a Value> {
        let mut out = Vec::new();
        for schema in schemas {
            self.all(schema, &mut out);
        }
        out
    }

    /// The properties the schemas name, each with every schema given for it.
    fn properties(&self, schemas: &[&'a Value]) -> BTreeMap<&'a str, Vec<&'a Value>> {
        let mut properties: BTreeMap<&str, Vec<&Value>> = BTreeMap::new();
        for schema in self.flattened(schemas) {
            for (name, property) in schema
                .get("properties")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                properties.entry(name).or_default().push(property);
            }
        }
        properties
    }

    fn items(&self, schemas: &[&'a Value]) -> Vec<&'a Value> {
        self.flattened(schemas)
            .into_iter()
            .filter_map(|schema| schema.get("items"))
            .collect()
    }

    /// Values for a property: one of every JSON type, and the edges of what the schemas say
    /// (each `enum` and `const` value, a string just within and just over `maxLength`).
    fn samples(&self, schemas: &[&'a Value]) -> Vec<Value> {
        let mut samples = vec![
            json!(null),
            json!(true),
            json!(7),
            json!(-1),
            json!(1.5),
            json!(""),
            json!("x"),
            json!("nope"),
            json!([]),
            json!(["x"]),
            json!([1]),
            json!({}),
            json!({"x": 1}),
        ];
        for schema in self.flattened(schemas) {
            for value in schema
                .get("enum")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                samples.push(value.clone());
            }
            if let Some(value) = schema.get("const") {
                samples.push(value.clone());
            }
            if let Some(max) = schema.get("maxLength").and_then(Value::as_u64) {
                let max = usize::try_from(max).unwrap_or(1000);
                samples.push(json!("a".repeat(max)));
                samples.push(json!("a".repeat(max + 1)));
            }
        }
        samples
    }

    /// Frames one change away from `instance` (which sits where `schemas` apply).
    fn mutations(&self, instance: &Value, schemas: &[&'a Value]) -> Vec<Value> {
        let mut out = Vec::new();
        match instance {
            Value::Object(object) => {
                let mut with = |name: &str, value: Option<Value>| {
                    let mut changed = object.clone();
                    match value {
                        Some(value) => changed.insert(name.to_string(), value),
                        None => changed.remove(name),
                    };
                    out.push(Value::Object(changed));
                };
                with("not_in_the_schema", Some(json!({"x": [1]})));
                for (name, property) in self.properties(schemas) {
                    with(name, None);
                    for sample in self.samples(&property) {
                        with(name, Some(sample));
                    }
                    if let Some(value) = object.get(name) {
                        for changed in self.mutations(value, &property) {
                            with(name, Some(changed));
                        }
                    }
                }
            }
            Value::Array(items) => {
                let item = self.items(schemas);
                for (at, value) in items.iter().enumerate() {
                    for changed in self.mutations(value, &item) {
                        let mut array = items.clone();
                        array[at] = changed;
                        out.push(Value::Array(array));
                    }
                    let mut without = items.clone();
                    without.remove(at);
                    out.push(Value::Array(without));
                }
                let most = self
                    .flattened(schemas)
                    .iter()
                    .find_map(|s| s.get("maxItems")?.as_u64());
                if let (Some(most), Some(first)) = (most, items.first()) {
                    let most = usize::try_from(most).unwrap_or(1000);
                    out.push(Value::Array(vec![first.clone(); most]));
                    out.push(Value::Array(vec![first.clone(); most + 1]));
                }
            }
            _ => {}
        }
        out
    }
}

/// Whether every tool call of the frame's history is answered as docs/protocol.md §13 says: by
/// a tool message after it, once, before the next user message and the end (a resumed chat's
/// history may end with calls that wait for the decisions). Asked of frames the schema accepts.
fn tool_calls_answered(frame: &Value) -> bool {
    let Some(messages) = frame.get("messages").and_then(Value::as_array) else {
        return true;
    };
    let open_tail = frame.get("resume").is_some_and(|resume| !resume.is_null());
    let (mut open, mut answered): (Vec<&str>, Vec<&str>) = (Vec::new(), Vec::new());
    for message in messages {
        let calls = message.get("tool_calls").and_then(Value::as_array);
        match message["role"].as_str() {
            Some("assistant") => {
                for id in calls.into_iter().flatten().filter_map(|c| c["id"].as_str()) {
                    if open.contains(&id) || answered.contains(&id) {
                        return false;
                    }
                    open.push(id);
                }
            }
            Some("tool") => {
                let id = message["tool_call_id"].as_str().unwrap_or_default();
                let Some(at) = open.iter().position(|open| *open == id) else {
                    return false;
                };
                answered.push(open.remove(at));
            }
            Some("user") if !open.is_empty() => return false,
            _ => {}
        }
    }
    open.is_empty() || open_tail
}

/// A chat frame without `input` and `resume` is a chat after the client ran its tools: its
/// history ends with a `tool` message.
fn input_or_tool_results(frame: &Value) -> bool {
    let absent = |key: &str| frame.get(key).is_none_or(Value::is_null);
    if frame["type"] != "chat" || !absent("input") || !absent("resume") {
        return true;
    }
    frame["messages"]
        .as_array()
        .and_then(|messages| messages.last())
        .is_some_and(|last| last["role"] == "tool")
}

#[test]
fn the_parser_accepts_what_the_client_schema_accepts_and_refuses_the_rest() {
    let schema = published();
    let validator = jsonschema::validator_for(&schema).expect("a valid JSON Schema");
    let places = Places { root: &schema };
    let limits = Limits::default();
    let (mut frames, mut disagreements) = (Vec::new(), Vec::new());
    for seed in seeds() {
        assert!(
            validator.is_valid(&seed),
            "a seed the schema refuses: {seed}"
        );
        frames.extend(places.mutations(&seed, &[&schema]));
        frames.push(seed);
    }
    let (mut accepted, mut refused) = (0, 0);
    for frame in &frames {
        let valid = validator.is_valid(frame);
        let read = WireClientFrame::read(frame.clone());
        let parsed = ClientFrame::parse(&frame.to_string(), &limits);
        let outcome = match &parsed {
            ClientFrame::Invalid { error, .. } => Err(error.to_string()),
            _ => Ok(()),
        };
        // The rules the schema cannot say: every tool call answered, and a chat frame with
        // neither `input` nor `resume` goes on after the client's tools (its history ends with
        // their results).
        let rules_hold = tool_calls_answered(frame) && input_or_tool_results(frame);
        let agrees = match (valid, &outcome) {
            // Read without error; accepted unless a rule beyond the schema is broken.
            (true, Ok(())) => read.is_ok() && rules_hold,
            (true, Err(_)) => read.is_ok() && !rules_hold,
            (false, Ok(())) => false,
            (false, Err(_)) => true,
        };
        match outcome {
            Ok(()) => accepted += 1,
            Err(_) => refused += 1,
        }
        if !agrees {
            disagreements.push(format!(
                "schema says valid: {valid}, parser says {outcome:?}: {frame}"
            ));
        }
    }
    assert!(
        disagreements.is_empty(),
        "{} of {} frames judged differently:\n{}",
        disagreements.len(),
        frames.len(),
        disagreements[..disagreements.len().min(30)].join("\n")
    );
    // The frames explore both sides.
    assert!(
        accepted > 300 && refused > 1000,
        "accepted {accepted}, refused {refused}"
    );
}

/// What docs/protocol.md §3 decides about a frame's text, which a schema of JSON values cannot
/// say (strict JSON), and its defaults.
#[test]
fn the_cases_protocol_section_3_lists() {
    let limits = Limits::default();
    let refused = |text: &str| {
        matches!(
            ClientFrame::parse(text, &limits),
            ClientFrame::Invalid { .. }
        )
    };
    let deep = |levels: usize| {
        format!(
            r#"{{"type":"ping","x":{}{}}}"#,
            "[".repeat(levels - 1),
            "]".repeat(levels - 1)
        )
    };
    for text in [
        "\u{feff}{\"type\":\"ping\"}",
        r#"{"type":"ping","x":NaN}"#,
        r#"{"type":"ping","x":"\ud800"}"#,
        r#"{"type":"ping","x":"\udc00 alone"}"#,
        &deep(65),
        "[]",
        "\"ping\"",
        "7",
        "null",
        r#"{"type":"ping"} {"type":"ping"}"#,
        r#"{"type":"ping",}"#,
        r#"{"type":"chat","id":"","input":"x"}"#,
        r#"{"type":"chat","id":7,"input":"x"}"#,
        r#"{"type":"chat","input":"x","messages":[{"role":"function","content":"x"}]}"#,
        r#"{"type":"chat","input":"x","messages":[{"role":"user","content":7}]}"#,
    ] {
        assert!(refused(text), "accepted: {text}");
    }
    assert!(!refused(&deep(64)), "64 levels are allowed");
    assert!(
        !refused(r#"{"type":"ping","x":"\ud83d\ude42"}"#),
        "a surrogate pair is one character"
    );
    // Absent or null: the defaults.
    let chat = |text: &str| match ClientFrame::parse(text, &limits) {
        ClientFrame::Chat { payload, compact } => {
            let origin = super::super::ChatOrigin {
                session_id: "s",
                traceparent: None,
                person: None,
            };
            payload.into_request(compact, &origin)
        }
        other => panic!("{text}: {other:?}"),
    };
    for text in [
        r#"{"type":"chat","input":"x"}"#,
        r#"{"type":"chat","input":"x","id":null,"messages":null,"skills":null,"enable_tools":null,"trace":null,"voice":null,"unknown":{"a":[1]}}"#,
    ] {
        let request = chat(text);
        assert!(request.id.starts_with("chat-"), "{text}: the id is made up");
        assert_eq!(
            (
                request.messages.len(),
                request.skills,
                request.enable_tools,
                request.trace
            ),
            (0, None, true, false),
            "{text}"
        );
    }
}

/// The other side: what the native encoder writes for every kind of event (and the frames
/// outside a chat) is valid under the published server schema, which refuses anything else.
#[test]
fn what_the_native_encoder_writes_is_valid_under_the_server_schema() {
    use std::sync::Arc;

    use super::super::{frame_json, NativeEncoder, ServerFrame};
    use crate::server::wire::{Audio, Encoded, WireEncoder};
    use crate::types::{
        ChatError, ChatEvent, DoneReason, ErrorCode, HookMessage, HookTag, HookTrace, Message,
        NoticeLevel, PendingCall, Role, ToolCall, Usage,
    };

    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/schema/frames/server.json"
    );
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("a valid JSON Schema");
    let tag = HookTag {
        name: "h".into(),
        skill: "s".into(),
        timing: "after_user_input".into(),
        sig: "ab".into(),
    };
    let mut summary = Message::user("<summary>");
    summary.compact = Some(crate::types::CompactTag { count: 2 });
    let call = ToolCall {
        id: "k1".into(),
        name: "list_dir".into(),
        arguments: "{}".into(),
    };
    let turn = vec![
        Message::user("q"),
        Message::assistant_with_tools("", vec![call]),
        Message::named_tool_result("k1", "list_dir", "a.txt"),
        Message::assistant("a"),
    ];
    let mut failed = ChatError::new(ErrorCode::Upstream, "down");
    failed.turn = turn.clone();
    let events = vec![
        ChatEvent::Started {
            trace_id: Some("4bf92f3577b34da6a3ce929d0e0e4736".into()),
        },
        ChatEvent::Text("hi \"there\"\n".into()),
        ChatEvent::Text("x".repeat(3000)),
        ChatEvent::Plan("p".into()),
        ChatEvent::ToolCall {
            call_id: "k1".into(),
            name: "list_dir".into(),
            arguments: json!({"path": "."}),
        },
        ChatEvent::ToolResult {
            call_id: "k1".into(),
            name: "list_dir".into(),
            content: "y".repeat(3000),
            is_error: false,
        },
        ChatEvent::Hook(HookMessage {
            role: Role::System,
            content: "be brief".into(),
            tag,
        }),
        ChatEvent::Approval {
            calls: vec![PendingCall {
                call_id: "r1".into(),
                name: "read_file".into(),
                arguments: json!({}),
                reason: "asked".into(),
            }],
            state: "v1.x".into(),
            expires: 1_800_000_000,
        },
        ChatEvent::Compact {
            count: 2,
            message: summary,
            pinned: vec![],
            context: vec![Message::user("MEMORY: restored")],
        },
        ChatEvent::SessionHook(json!({"name": "judge", "event": "stop"})),
        ChatEvent::HookTrace(HookTrace {
            event: "PreToolUse".into(),
            hook: "guard".into(),
            level: "workspace".into(),
            ms: 1.5,
            outcome: "success".into(),
            changed: vec!["tool_arguments".into()],
        }),
        ChatEvent::Notice {
            level: NoticeLevel::Info,
            message: "m".into(),
            source: "hook".into(),
        },
        ChatEvent::Done {
            reason: DoneReason::Completed,
            content: "a".into(),
            usage: Usage::default(),
            turn: turn.clone(),
            pending_tool_calls: Vec::new(),
        },
        ChatEvent::Done {
            reason: DoneReason::ToolCalls,
            content: String::new(),
            usage: Usage::default(),
            turn,
            pending_tool_calls: vec!["k1".into()],
        },
        ChatEvent::Error(ChatError::new(ErrorCode::Internal, "no")),
        ChatEvent::Error(failed),
    ];
    let mut encoder = NativeEncoder::new("c1".into(), Arc::from("host-1"), 2048);
    let mut written = Vec::new();
    let mut add = |encoded: Encoded<String>| match encoded {
        Encoded::None => {}
        Encoded::One(json) => written.push(json),
        Encoded::Many(many) => written.extend(many),
    };
    for event in events {
        add(encoder.encode(event));
    }
    let audio = Audio {
        seq: 0,
        format: "mp3".into(),
        text: "Hi.".into(),
        data: vec![1, 2, 3],
    };
    add(encoder.audio(audio));
    for frame in [
        ServerFrame::pong(None),
        ServerFrame::pong(Some("p1".into())),
        ServerFrame::error(None, ErrorCode::BadFrame, "not valid JSON"),
        ServerFrame::draining(Some("c2".into()), true),
    ] {
        written.extend(frame_json(frame, 2048));
    }
    let mut kinds = std::collections::BTreeSet::new();
    for json in &written {
        let frame: Value = serde_json::from_str(json).expect("the encoder writes JSON");
        let errors: Vec<String> = validator
            .iter_errors(&frame)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{json}: {errors:?}");
        assert!(json.len() <= 2048, "{json} is over the frame limit");
        kinds.insert(frame["type"].as_str().unwrap_or_default().to_string());
    }
    assert_eq!(kinds.len(), 15, "every kind of frame: {kinds:?}");
    let mut extra: Value = serde_json::from_str(&written[0]).unwrap();
    extra["extra"] = json!(1);
    assert!(
        !validator.is_valid(&extra),
        "the server schema refuses a field it does not name"
    );
}
