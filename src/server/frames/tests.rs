use super::{ClientFrame, ServerFrame};
use crate::config::Limits;
use crate::types::Usage;
use crate::types::{ChatError, DoneReason, NoticeLevel};
use crate::types::{ChatEvent, ErrorCode, HookMessage, HookTag, Message, Role};
use serde_json::json;
use serde_json::Value;

fn parse(text: &str) -> ClientFrame {
    ClientFrame::parse(text, &Limits::default())
}

fn invalid_message(text: &str) -> String {
    match parse(text) {
        ClientFrame::Invalid { message, .. } => message,
        other => panic!("expected invalid, got {other:?}"),
    }
}

#[test]
fn full_chat_frame() {
    let frame = parse(
        r#"{"type":"chat","id":"c1","messages":[{"role":"user","content":"hi"},
        {"role":"system","content":"be brief","_hook":{"name":"h","skill":"s","timing":"after_user_input","sig":"ab"}}],
        "input":"go","skills":["x"],"enable_tools":false,"extra":1}"#,
    );
    let ClientFrame::Chat(chat) = frame else {
        panic!("{frame:?}")
    };
    assert_eq!(chat.id.as_deref(), Some("c1"));
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
    let ClientFrame::Chat(chat) = parse(
        r#"{"type":"chat","id":null,"messages":null,"input":"x","skills":null,"enable_tools":null}"#,
    ) else {
        panic!()
    };
    assert_eq!(
        (chat.id, chat.messages.len(), chat.skills, chat.enable_tools),
        (None, 0, None, true)
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
    assert_eq!(parse(&ok), ClientFrame::Ping { id: None });
    // Brackets inside strings do not count.
    let text = format!(r#"{{"type":"ping","x":"{}"}}"#, "[".repeat(100));
    assert_eq!(parse(&text), ClientFrame::Ping { id: None });
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
        matches!(long, ClientFrame::Invalid { ref id, ref message } if id.as_deref() == Some("a") && message.contains("limit is 3"))
    );
    let ok = ClientFrame::parse(r#"{"type":"chat","input":"ééé"}"#, &limits);
    assert!(matches!(ok, ClientFrame::Chat(_)));
    let many = ClientFrame::parse(
        r#"{"type":"chat","input":"x","messages":[{"role":"user","content":"a"},{"role":"user","content":"b"}]}"#,
        &limits,
    );
    assert!(
        matches!(many, ClientFrame::Invalid { ref message, .. } if message.contains("limit is 1"))
    );
}

#[test]
fn server_frames_have_the_wire_shape() {
    let frame = |event| serde_json::to_value(ServerFrame::from_event("c1", event)).unwrap();
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
    let start =
        ServerFrame::from_event("c1", ChatEvent::Started { trace_id: None }).with_instance("a1b2");
    assert_eq!(
        serde_json::to_value(start).unwrap(),
        json!({"type":"start","id":"c1","instance":"a1b2"})
    );
    let text = ServerFrame::from_event("c1", ChatEvent::Text("hi".into())).with_instance("a1b2");
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
    let ClientFrame::Chat(compact) =
        parse(r#"{"type":"compact","id":"k","messages":[{"role":"user","content":"hi"}]}"#)
    else {
        panic!()
    };
    assert!(compact.compact_only && compact.input.is_empty() && compact.resume.is_none());
    let ClientFrame::Chat(resume) = parse(
        r#"{"type":"chat","resume":{"state":"v1.j.x.y","decisions":[{"call_id":"a","decision":"allow"},{"call_id":"b","decision":"deny","reason":"no"}]},"trace":true}"#,
    ) else {
        panic!()
    };
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
    let ClientFrame::Chat(chat) = ClientFrame::parse(text, &Limits::default()) else {
        panic!("refused");
    };
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
fn trace_context_fields_of_a_chat_frame_and_the_start_frame() {
    let ClientFrame::Chat(chat) = parse(
        r#"{"type":"chat","input":"x","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","conversation_id":"conv-1"}"#,
    ) else {
        panic!("a chat frame")
    };
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
    );
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
