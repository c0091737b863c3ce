use super::{ChatOrigin, ClientFrame, ServerFrame};
use crate::config::Limits;
use crate::types::{ChatError, DoneReason, NoticeLevel};
use crate::types::{ChatEvent, ErrorCode, HookMessage, HookTag, Message, Role};
use crate::types::{ChatRequest, Usage};
use serde_json::json;
use serde_json::Value;

fn parse(text: &str) -> ClientFrame {
    ClientFrame::parse(text, &Limits::default())
}

fn invalid_message(text: &str) -> String {
    match parse(text) {
        ClientFrame::Invalid { error, .. } => error.to_string(),
        other => panic!("expected invalid, got {other:?}"),
    }
}

/// The request a chat (or compact) frame becomes, on a connection without a `traceparent`.
fn request(frame: ClientFrame) -> ChatRequest {
    let ClientFrame::Chat { payload, compact } = frame else {
        panic!("not a chat: {frame:?}")
    };
    let origin = ChatOrigin {
        session_id: "s1",
        traceparent: None,
        person: None,
    };
    payload.into_request(compact, &origin)
}

fn is_ping(frame: &ClientFrame, expected: Option<&str>) -> bool {
    matches!(frame, ClientFrame::Ping { id } if id.as_deref() == expected)
}

#[test]
fn full_chat_frame() {
    let frame = parse(
        r#"{"type":"chat","id":"c1","messages":[{"role":"user","content":"hi"},
        {"role":"system","content":"be brief","_hook":{"name":"h","skill":"s","timing":"after_user_input","sig":"ab"}}],
        "input":"go","skills":["x"],"enable_tools":false,"extra":1}"#,
    );
    let chat = request(frame);
    assert_eq!((chat.id.as_str(), chat.session_id.as_str()), ("c1", "s1"));
    assert_eq!(chat.messages.len(), 2);
    assert_eq!(
        chat.messages[1].hook.as_ref().map(|h| h.sig.as_str()),
        Some("ab")
    );
    assert_eq!(chat.skills, Some(vec!["x".to_string()]));
    assert!(!chat.enable_tools);
}

#[test]
fn nulls_mean_defaults() {
    let frame = parse(
        r#"{"type":"chat","id":null,"messages":null,"input":"x","skills":null,"enable_tools":null}"#,
    );
    assert!(matches!(&frame, ClientFrame::Chat { payload, .. } if payload.id().is_none()));
    let chat = request(frame);
    assert!(chat.id.starts_with("chat-"), "made up: {}", chat.id);
    assert_eq!(
        (chat.messages.len(), chat.skills, chat.enable_tools),
        (0, None, true)
    );
}

#[test]
fn every_bad_frame_names_its_problem() {
    assert!(invalid_message("not json").contains("not valid JSON"));
    assert!(invalid_message("[1]").contains("JSON object"));
    assert!(invalid_message("\u{feff}{\"type\":\"ping\"}").contains("not valid JSON"));
    assert!(invalid_message(r#"{"type":"ping","x":NaN}"#).contains("not valid JSON"));
    assert!(invalid_message(r#"{"type":"chat","input":"\ud800"}"#).contains("not valid JSON"));
    let deep = format!("{}{}", "[".repeat(65), "]".repeat(65));
    assert!(invalid_message(&deep).contains("deeper than 64"));
    assert!(invalid_message(r#"{"id":"a"}"#).contains("missing field \"type\""));
    assert!(invalid_message(r#"{"type":"nope"}"#).contains("unknown frame type"));
    assert!(invalid_message(r#"{"type":"chat"}"#).contains("missing field \"input\""));
    assert!(invalid_message(r#"{"type":"chat","input":""}"#).contains("must not be empty"));
    assert!(invalid_message(r#"{"type":"chat","input":5}"#).contains("\"input\" must be a string"));
    assert!(invalid_message(r#"{"type":"chat","id":"","input":"x"}"#)
        .contains("\"id\" must not be empty"));
    assert!(invalid_message(r#"{"type":"chat","id":7,"input":"x"}"#)
        .contains("\"id\" must be a string"));
    assert!(invalid_message(
        r#"{"type":"chat","input":"x","messages":[{"role":"function","content":"x"}]}"#
    )
    .contains("messages[0].role"));
    // A tool message names the call it answers (docs/protocol.md §13).
    assert!(invalid_message(
        r#"{"type":"chat","input":"x","messages":[{"role":"tool","content":"x"}]}"#
    )
    .contains("messages[0].tool_call_id"));
    assert!(invalid_message(
        r#"{"type":"chat","input":"x","messages":[{"role":"user","content":"x","tool_calls":[]}]}"#
    )
    .contains("only an assistant message"));
    assert!(
        invalid_message(r#"{"type":"chat","input":"x","messages":[{"role":"user"}]}"#)
            .contains("messages[0].content")
    );
    assert!(invalid_message(r#"{"type":"chat","input":"x","skills":"a"}"#).contains("skills"));
    assert!(
        invalid_message(r#"{"type":"chat","input":"x","enable_tools":"yes"}"#)
            .contains("enable_tools")
    );
}

#[test]
fn nesting_at_the_limit_is_fine() {
    let ok = format!(
        r#"{{"type":"ping","x":{}{}}}"#,
        "[".repeat(63),
        "]".repeat(63)
    );
    assert!(is_ping(&parse(&ok), None));
    // Brackets inside strings do not count.
    let text = format!(r#"{{"type":"ping","x":"{}"}}"#, "[".repeat(100));
    assert!(is_ping(&parse(&text), None));
}

#[test]
fn limits_apply() {
    let limits = Limits {
        max_input_chars: 3,
        max_history_messages: 1,
        ..Limits::default()
    };
    let long = ClientFrame::parse(r#"{"type":"chat","id":"a","input":"ééé!"}"#, &limits);
    assert!(
        matches!(long, ClientFrame::Invalid { ref id, ref error } if id.as_deref() == Some("a") && error.to_string().contains("limit is 3"))
    );
    let ok = ClientFrame::parse(r#"{"type":"chat","input":"ééé"}"#, &limits);
    assert!(matches!(ok, ClientFrame::Chat { .. }));
    let many = ClientFrame::parse(
        r#"{"type":"chat","input":"x","messages":[{"role":"user","content":"a"},{"role":"user","content":"b"}]}"#,
        &limits,
    );
    assert!(
        matches!(many, ClientFrame::Invalid { ref error, .. } if error.to_string().contains("limit is 1"))
    );
}

#[test]
fn server_frames_have_the_wire_shape() {
    let frame =
        |event| serde_json::to_value(ServerFrame::from_event("c1", event).unwrap()).unwrap();
    assert_eq!(
        frame(ChatEvent::Started { trace_id: None }),
        json!({"type":"start","id":"c1"})
    );
    assert_eq!(
        frame(ChatEvent::Text("hi".into())),
        json!({"type":"text","id":"c1","delta":"hi"})
    );
    assert_eq!(
        frame(ChatEvent::Plan("p".into())),
        json!({"type":"plan","id":"c1","content":"p"})
    );
    assert_eq!(
        frame(ChatEvent::ToolCall {
            call_id: "k".into(),
            name: "read_file".into(),
            arguments: json!({"path":"a"})
        }),
        json!({"type":"tool_call","id":"c1","call_id":"k","name":"read_file","arguments":{"path":"a"}})
    );
    assert_eq!(
        frame(ChatEvent::ToolResult {
            call_id: "k".into(),
            name: "read_file".into(),
            content: "x".into(),
            is_error: true
        }),
        json!({"type":"tool_result","id":"c1","call_id":"k","name":"read_file","content":"x","is_error":true})
    );
    let tag = HookTag {
        name: "h".into(),
        skill: "s".into(),
        timing: "after_user_input".into(),
        sig: "".into(),
    };
    assert_eq!(
        frame(ChatEvent::Hook(HookMessage {
            role: Role::System,
            content: "be brief".into(),
            tag
        })),
        json!({"type":"hook","id":"c1","hook":{"name":"h","skill":"s","timing":"after_user_input"},
               "message":{"role":"system","content":"be brief","_hook":{"name":"h","skill":"s","timing":"after_user_input","sig":""}}})
    );
    assert_eq!(
        frame(ChatEvent::Notice {
            level: NoticeLevel::Warn,
            message: "m".into(),
            source: "hook".into()
        }),
        json!({"type":"notice","id":"c1","level":"warn","message":"m","source":"hook"})
    );
    assert_eq!(
        frame(ChatEvent::Done {
            reason: DoneReason::MaxSteps,
            content: "a".into(),
            usage: Usage {
                prompt_tokens: 3,
                completion_tokens: 4,
                ..Usage::default()
            },
            turn: vec![
                Message::user("q"),
                Message::assistant_with_tools(
                    "",
                    vec![crate::types::ToolCall {
                        id: "k1".into(),
                        name: "list_dir".into(),
                        arguments: "{\"path\":\".\"}".into()
                    }]
                ),
                Message::named_tool_result("k1", "list_dir", "a.txt"),
                Message::assistant("a"),
            ],
            pending_tool_calls: Vec::new(),
        }),
        json!({"type":"done","id":"c1","reason":"max_steps","message":{"role":"assistant","content":"a"},
               "usage":{"prompt_tokens":3,"completion_tokens":4,"hook_calls":0,"hook_prompt_tokens":0,"hook_completion_tokens":0},
               "turn":[{"role":"user","content":"q"},
                       {"role":"assistant","content":"","tool_calls":[{"id":"k1","type":"function","function":{"name":"list_dir","arguments":"{\"path\":\".\"}"}}]},
                       {"role":"tool","content":"a.txt","tool_call_id":"k1","name":"list_dir"},
                       {"role":"assistant","content":"a"}]})
    );
    assert_eq!(
        frame(ChatEvent::Error(ChatError::new(
            ErrorCode::Upstream,
            "down"
        ))),
        json!({"type":"error","id":"c1","code":"upstream","message":"down"})
    );
    assert_eq!(
        serde_json::to_value(ServerFrame::Pong { id: None }).unwrap(),
        json!({"type":"pong"})
    );
}

#[test]
fn the_start_frame_names_the_instance_and_no_other_frame_does() {
    let start = ServerFrame::from_event("c1", ChatEvent::Started { trace_id: None })
        .unwrap()
        .with_instance("a1b2");
    assert_eq!(
        serde_json::to_value(start).unwrap(),
        json!({"type":"start","id":"c1","instance":"a1b2"})
    );
    let text = ServerFrame::from_event("c1", ChatEvent::Text("hi".into()))
        .unwrap()
        .with_instance("a1b2");
    assert_eq!(
        serde_json::to_value(text).unwrap(),
        json!({"type":"text","id":"c1","delta":"hi"})
    );
}

/// Client frame parsing (strict, validated) against a bare `serde_json` parse of the same
/// text, as a ratio. A benchmark, not a check: frames are private to the crate, so
/// `benches/` cannot reach the parser.
#[test]
#[ignore = "a benchmark: cargo test --release --lib -- --ignored --nocapture parse_cost"]
fn parse_cost() {
    use std::hint::black_box;
    use std::time::{Duration, Instant};

    fn time_per_op(iterations: u32, mut op: impl FnMut()) -> Duration {
        for _ in 0..iterations / 10 {
            op();
        }
        let started = Instant::now();
        for _ in 0..iterations {
            op();
        }
        started.elapsed() / iterations
    }

    let history: Vec<_> = (0..20)
        .map(|i| json!({"role": if i % 2 == 0 { "user" } else { "assistant" }, "content": format!("message number {i} with some ordinary text in it")}))
        .collect();
    let frame = json!({"type":"chat","id":"c1","messages":history,"input":"read README.md and summarise it","skills":["code-reader"],"enable_tools":true}).to_string();
    let limits = Limits::default();
    let iterations = 20_000;
    let baseline = time_per_op(iterations, || {
        black_box(serde_json::from_str::<Value>(black_box(&frame)).ok());
    });
    let ours = time_per_op(iterations, || {
        black_box(ClientFrame::parse(black_box(&frame), &limits));
    });
    println!(
        "parse chat frame ({} bytes, 20 messages): hookwire {:?}/op, serde_json::Value baseline {:?}/op, ratio {:.2}",
        frame.len(),
        ours,
        baseline,
        ours.as_secs_f64() / baseline.as_secs_f64()
    );
}

#[test]
fn compact_and_resume_frames_parse_and_their_mistakes_are_named() {
    let compact = request(parse(
        r#"{"type":"compact","id":"k","input":"ignored","messages":[{"role":"user","content":"hi"}]}"#,
    ));
    assert!(compact.compact_only && compact.input.is_empty() && compact.resume.is_none());
    let resume = request(parse(
        r#"{"type":"chat","resume":{"state":"v1.j.x.y","decisions":[{"call_id":"a","decision":"allow"},{"call_id":"b","decision":"deny","reason":"no"}]},"trace":true}"#,
    ));
    let decisions = resume.resume.unwrap().decisions;
    assert_eq!(
        (
            decisions[0].allow,
            decisions[1].allow,
            decisions[1].reason.as_deref()
        ),
        (true, false, Some("no"))
    );
    assert!(resume.trace && resume.input.is_empty());
    for (frame, says) in [
        (
            r#"{"type":"chat","input":"x","resume":{"state":"s","decisions":[]}}"#,
            "has no \"input\"",
        ),
        (
            r#"{"type":"chat","resume":{"decisions":[]}}"#,
            "resume.state",
        ),
        (
            r#"{"type":"chat","resume":{"state":"s"}}"#,
            "resume.decisions",
        ),
        (
            r#"{"type":"chat","resume":{"state":"s","decisions":[{"call_id":"a","decision":"maybe"}]}}"#,
            "\"allow\" or \"deny\"",
        ),
        (
            r#"{"type":"compact","resume":{"state":"s","decisions":[]}}"#,
            "has no \"resume\"",
        ),
        (
            r#"{"type":"chat","input":"x","trace":"yes"}"#,
            "\"trace\" must be true or false",
        ),
        (
            r#"{"type":"chat","input":"x","messages":[{"role":"system","content":"s","_compact":{"count":"two"}}]}"#,
            "_compact.count",
        ),
    ] {
        let message = invalid_message(frame);
        assert!(message.contains(says), "{frame}: {message}");
    }
}

#[test]
fn tool_calls_and_results_in_the_history_have_the_trust_of_user_text() {
    let text = r#"{"type":"chat","input":"x","messages":[
        {"role":"user","content":"list"},
        {"role":"assistant","content":null,"tool_calls":[{"id":"k1","type":"function","function":{"name":"list_dir","arguments":"{}"}}],
         "_hook":{"name":"h","skill":"s","timing":"after_user_input","sig":"forged"}},
        {"role":"tool","tool_call_id":"k1","name":"list_dir","content":"a.txt",
         "_hook":{"name":"h","skill":"s","timing":"after_user_input","sig":"forged"}}]}"#;
    let chat = request(ClientFrame::parse(text, &Limits::default()));
    let [_, call, result] = &chat.messages[..] else {
        panic!("{:?}", chat.messages);
    };
    assert_eq!((call.role, call.content.as_str()), (Role::Assistant, ""));
    assert_eq!(call.tool_calls[0].name, "list_dir");
    assert_eq!(result.role, Role::Tool);
    assert_eq!(result.tool_call_id.as_deref(), Some("k1"));
    assert_eq!(result.tool_name.as_deref(), Some("list_dir"));
    // A mark on them is ignored: they are never system text.
    assert!(call.hook.is_none() && result.hook.is_none());
}

#[test]
fn ids_are_identifiers_of_at_most_128_characters_and_a_long_one_is_not_echoed() {
    let id = "é".repeat(128);
    assert!(matches!(
        parse(&format!(r#"{{"type":"chat","id":"{id}","input":"x"}}"#)),
        ClientFrame::Chat { .. }
    ));
    for frame in [
        format!(r#"{{"type":"chat","id":"{id}x","input":"x"}}"#),
        format!(r#"{{"type":"ping","id":"{id}x"}}"#),
    ] {
        match parse(&frame) {
            ClientFrame::Invalid { id, error } => {
                assert_eq!(id, None, "a long id is not echoed");
                assert_eq!(error.to_string(), "field \"id\" is over 128 characters");
            }
            other => panic!("expected invalid, got {other:?}"),
        }
    }
}

#[test]
fn trace_context_fields_of_a_chat_frame_and_the_start_frame() {
    let chat = request(parse(
        r#"{"type":"chat","input":"x","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","conversation_id":"conv-1"}"#,
    ));
    assert_eq!(
        chat.traceparent.as_deref(),
        Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
    );
    assert_eq!(chat.conversation_id.as_deref(), Some("conv-1"));
    assert_eq!(
        invalid_message(r#"{"type":"chat","input":"x","traceparent":1}"#),
        "field \"traceparent\" must be a string"
    );
    let long = "a".repeat(300);
    assert!(invalid_message(&format!(
        r#"{{"type":"chat","input":"x","conversation_id":"{long}"}}"#
    ))
    .contains("over 256 bytes"));
    let start = ServerFrame::from_event(
        "c1",
        ChatEvent::Started {
            trace_id: Some("4bf92f3577b34da6a3ce929d0e0e4736".into()),
        },
    )
    .unwrap();
    assert_eq!(
        serde_json::to_value(&start).unwrap(),
        json!({"type":"start","id":"c1","trace_id":"4bf92f3577b34da6a3ce929d0e0e4736"})
    );
}

/// The enums the frames carry are written as the names the protocol gives them.
#[test]
fn frame_enums_are_written_as_their_protocol_names() {
    use crate::types::{DoneReason as D, ErrorCode as E, NoticeLevel as N};
    let written = |value: serde_json::Value| value.as_str().map(str::to_string);
    for code in [
        E::BadFrame,
        E::UnknownSkill,
        E::Busy,
        E::Upstream,
        E::HookBlocked,
        E::Internal,
        E::ContextTooLong,
        E::Draining,
    ] {
        assert_eq!(written(json!(code)).as_deref(), Some(code.as_str()));
    }
    for reason in [
        D::Completed,
        D::Cancelled,
        D::MaxSteps,
        D::Stopped,
        D::Length,
        D::MaxTokens,
        D::ApprovalRequired,
    ] {
        assert_eq!(written(json!(reason)).as_deref(), Some(reason.as_str()));
    }
    for level in [N::Info, N::Warn, N::Error] {
        assert_eq!(written(json!(level)).as_deref(), Some(level.as_str()));
    }
    for role in [Role::System, Role::User, Role::Assistant, Role::Tool] {
        assert_eq!(written(json!(role)).as_deref(), Some(role.as_str()));
    }
}

/// A refused frame's error: where, and the `bad_frame` text.
fn refusal(text: &str) -> (String, String) {
    match parse(text) {
        ClientFrame::Invalid { error, .. } => (error.path().to_string(), error.to_string()),
        other => panic!("expected invalid, got {other:?}"),
    }
}

/// serde's errors in the protocol's words, with the field's path (`read.rs` turns serde's
/// messages into these: a change in serde's wording fails here).
#[test]
fn errors_name_the_field_s_path() {
    let message = |fields: &str| format!(r#"{{"type":"chat","input":"x","messages":[{fields}]}}"#);
    let cases = [
        (r#"{"id":"a"}"#.to_string(), "type", r#"missing field "type""#),
        (r#"{"type":5}"#.into(), "type", r#"field "type" must be a string"#),
        (
            r#"{"type":"chat","input":5}"#.into(),
            "input",
            r#"field "input" must be a string"#,
        ),
        (
            r#"{"type":"ping","id":["a"]}"#.into(),
            "id",
            r#"field "id" must be a string"#,
        ),
        (
            r#"{"type":"chat","input":"x","voice":1}"#.into(),
            "voice",
            r#"field "voice" must be true or false"#,
        ),
        (
            r#"{"type":"chat","input":"x","skills":[1]}"#.into(),
            "skills[0]",
            r#"field "skills[0]" must be a string"#,
        ),
        (
            r#"{"type":"chat","input":"x","session_hooks":[1]}"#.into(),
            "session_hooks[0]",
            r#"field "session_hooks[0]" must be an object"#,
        ),
        (
            r#"{"type":"chat","input":"x","resume":[]}"#.into(),
            "resume",
            r#"field "resume" must be an object"#,
        ),
        (
            r#"{"type":"chat","resume":{"state":"s"}}"#.into(),
            "resume.decisions",
            r#"missing field "resume.decisions""#,
        ),
        (
            r#"{"type":"chat","resume":{"state":"s","decisions":[{"call_id":"a","decision":"maybe"}]}}"#.into(),
            "resume.decisions[0].decision",
            r#"field "resume.decisions[0].decision" must be "allow" or "deny", got "maybe""#,
        ),
        (
            r#"{"type":"chat","resume":{"state":"s","decisions":[{"call_id":"","decision":"allow"}]}}"#.into(),
            "resume.decisions[0].call_id",
            r#"field "resume.decisions[0].call_id" must not be empty"#,
        ),
        (
            message(r#"{"role":"robot","content":"x"}"#),
            "messages[0].role",
            r#"field "messages[0].role" must be one of "system", "user", "assistant", "tool", got "robot""#,
        ),
        (
            message(r#"{"content":"x"}"#),
            "messages[0].role",
            r#"missing field "messages[0].role""#,
        ),
        (
            message(r#"{"role":"user","content":"a"},{"role":"user"}"#),
            "messages[1].content",
            r#"missing field "messages[1].content""#,
        ),
        (
            message(r#"{"role":"system","content":"s","_compact":{"count":"two"}}"#),
            "messages[0]._compact.count",
            r#"field "messages[0]._compact.count" must be a whole number"#,
        ),
        (
            message(r#"{"role":"system","content":"s","_hook":{"name":"h","skill":"s","timing":1}}"#),
            "messages[0]._hook.timing",
            r#"field "messages[0]._hook.timing" must be a string"#,
        ),
        (
            message(r#"{"role":"system","content":"s","_hook":"mine"}"#),
            "messages[0]._hook",
            r#"field "messages[0]._hook" must be an object"#,
        ),
        (
            message(
                r#"{"role":"assistant","tool_calls":[{"id":"k","function":{"name":"f","arguments":5}}]},{"role":"tool","tool_call_id":"k","content":""}"#,
            ),
            "messages[0].tool_calls[0].function.arguments",
            r#"field "messages[0].tool_calls[0].function.arguments" must be a JSON string (or an object)"#,
        ),
        (
            message(r#"{"role":"assistant","tool_calls":[{"id":"","function":{"name":"f"}}]}"#),
            "messages[0].tool_calls[0].id",
            r#"field "messages[0].tool_calls[0].id" must not be empty"#,
        ),
        (
            message(r#"{"role":"assistant","tool_calls":[{"id":"k","type":"method","function":{"name":"f"}}]}"#),
            "messages[0].tool_calls[0].type",
            r#"field "messages[0].tool_calls[0].type" must be "function", got "method""#,
        ),
    ];
    for (frame, path, text) in cases {
        assert_eq!(
            refusal(&frame),
            (path.to_string(), text.to_string()),
            "{frame}"
        );
    }
}

/// The rules no field's type says: a message's role, and the frame's `input` or `resume`.
#[test]
fn the_rules_beyond_the_types_are_named() {
    assert_eq!(
        refusal(
            r#"{"type":"chat","input":"x","messages":[{"role":"user","content":"x","tool_calls":null},{"role":"user","content":"x","tool_calls":[]}]}"#
        ),
        (
            "messages[1]".to_string(),
            "messages[1] has tool_calls, which only an assistant message may have".to_string()
        )
    );
    assert_eq!(
        refusal(r#"{"type":"chat","input":"x","messages":[{"role":"assistant","content":null,"tool_calls":[]}]}"#).1,
        r#"missing field "messages[0].content""#
    );
    assert_eq!(
        refusal(r#"{"type":"ping","id":""}"#),
        (
            "id".to_string(),
            r#"field "id" must not be empty"#.to_string()
        )
    );
    // A compact frame's `input` is not read; a chat with `resume` has none.
    assert!(matches!(
        parse(r#"{"type":"compact","input":""}"#),
        ClientFrame::Chat { compact: true, .. }
    ));
    assert_eq!(
        refusal(r#"{"type":"chat","input":null}"#),
        ("input".to_string(), r#"missing field "input""#.to_string())
    );
}

mod schema;
