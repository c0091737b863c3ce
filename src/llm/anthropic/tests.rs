use super::*;
use crate::types::{Message, ToolSpec};

fn feed(events: &[Value]) -> (String, Vec<Result<ModelEvent, LlmError>>) {
    let mut reply = Reply::default();
    let mut text = String::new();
    let mut ends = Vec::new();
    for event in events {
        match reply.data(&event.to_string()) {
            Some(Ok(ModelEvent::Text(t))) => text.push_str(&t),
            Some(other) => ends.push(other),
            None => {}
        }
    }
    (text, ends)
}

fn start(input_tokens: u64) -> Value {
    json!({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":input_tokens,"cache_read_input_tokens":5,"output_tokens":1}}})
}

#[test]
fn text_usage_and_stop_reason() {
    let (text, ends) = feed(&[
        start(20),
        json!({"type":"ping"}),
        json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lo"}}),
        json!({"type":"content_block_stop","index":0}),
        json!({"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":7}}),
        json!({"type":"message_stop"}),
    ]);
    assert_eq!(text, "Hello");
    assert_eq!(
        ends,
        vec![Ok(ModelEvent::Finished {
            tool_calls: vec![],
            finish_reason: Some("stop".into()),
            usage: Some(Usage {
                prompt_tokens: 25,
                completion_tokens: 7,
                ..Usage::default()
            }),
        })]
    );
}

#[test]
fn tool_use_input_is_joined_per_block() {
    let (text, ends) = feed(&[
        start(3),
        json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}),
        json!({"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}),
        json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Let me look."}}),
        json!({"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_a","name":"read_file","input":{}}}),
        json!({"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_b","name":"list_dir","input":{}}}),
        json!({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}),
        json!({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"path\": \"a"}}),
        json!({"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{}"}}),
        json!({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":".md\"}"}}),
        json!({"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":30}}),
        json!({"type":"message_stop"}),
    ]);
    assert_eq!(text, "Let me look.");
    let Some(Ok(ModelEvent::Finished {
        tool_calls,
        finish_reason,
        ..
    })) = ends.into_iter().next()
    else {
        panic!("no end")
    };
    assert_eq!(finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(
        tool_calls,
        vec![
            ToolCall {
                id: "toolu_a".into(),
                name: "read_file".into(),
                arguments: r#"{"path": "a.md"}"#.into()
            },
            ToolCall {
                id: "toolu_b".into(),
                name: "list_dir".into(),
                arguments: "{}".into()
            },
        ]
    );
}

#[test]
fn a_tool_without_fragments_takes_its_start_input() {
    let (_, ends) = feed(&[
        json!({"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"list_dir","input":{"path":"src"}}}),
        json!({"type":"message_delta","delta":{"stop_reason":"tool_use"}}),
        json!({"type":"message_stop"}),
    ]);
    let Some(Ok(ModelEvent::Finished {
        tool_calls, usage, ..
    })) = ends.into_iter().next()
    else {
        panic!()
    };
    assert_eq!(tool_calls[0].arguments, r#"{"path":"src"}"#);
    assert_eq!(usage, None, "no usage reported, none made up");
}

#[test]
fn max_tokens_is_length() {
    assert_eq!(finish_reason("max_tokens"), "length");
    assert_eq!(finish_reason("end_turn"), "stop");
    assert_eq!(finish_reason("tool_use"), "tool_calls");
    assert_eq!(finish_reason("pause_turn"), "pause_turn");
}

#[test]
fn error_events_and_bad_data_fail_the_call() {
    let (_, ends) = feed(&[
        start(1),
        json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}),
    ]);
    assert_eq!(
        ends,
        vec![Err(LlmError::Stream(
            "Overloaded (overloaded_error)".into()
        ))]
    );
    let mut reply = Reply::default();
    assert!(matches!(
        reply.data("{oops"),
        Some(Err(LlmError::Malformed(_)))
    ));
    assert!(matches!(
        reply.data(r#"{"type":"content_block_delta","index":4,"delta":{"type":"input_json_delta","partial_json":"{"}}"#),
        Some(Err(LlmError::Malformed(_)))
    ));
    // Cut before the stop reason: an error; after it, finished.
    let mut cut = Reply::default();
    assert!(cut.end().is_err());
    cut.data(r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"}}"#);
    assert!(matches!(cut.end(), Ok(ModelEvent::Finished { .. })));
}

#[test]
fn request_body_shape() {
    let call = |id: &str| ToolCall {
        id: id.into(),
        name: "read_file".into(),
        arguments: r#"{"path":"a"}"#.into(),
    };
    let request = ModelRequest {
        max_tokens: None,
        model: "claude".into(),
        messages: vec![
            Message::system("base"),
            Message::user("question"),
            Message::system("skill hook"),
            Message::assistant("plan"),
            Message::assistant_with_tools("", vec![call("t1"), call("t2")]),
            Message::tool_result("t1", "one"),
            Message::tool_result("t2", ""),
            Message::user("after tools"),
            Message::system("step prompt"),
        ],
        tools: vec![ToolSpec {
            name: "read_file".into(),
            description: "reads".into(),
            parameters: json!({"type":"object"}),
        }],
    };
    assert_eq!(
        request_body(&request, 100),
        json!({
            "model": "claude", "max_tokens": 100, "stream": true,
            "system": "base\n\nskill hook",
            "messages": [
                {"role":"user","content":[{"type":"text","text":"question"}]},
                {"role":"assistant","content":[
                    {"type":"text","text":"plan"},
                    {"type":"tool_use","id":"t1","name":"read_file","input":{"path":"a"}},
                    {"type":"tool_use","id":"t2","name":"read_file","input":{"path":"a"}},
                ]},
                {"role":"user","content":[
                    {"type":"tool_result","tool_use_id":"t1","content":"one"},
                    {"type":"tool_result","tool_use_id":"t2"},
                    {"type":"text","text":"after tools\n\n<system-reminder>\nstep prompt\n</system-reminder>"},
                ]},
            ],
            "tools": [{"name":"read_file","description":"reads","input_schema":{"type":"object"}}],
            "tool_choice": {"type": "auto"},
        })
    );
    // No system text, no tools: neither field.
    let plain = ModelRequest {
        max_tokens: None,
        model: "claude".into(),
        messages: vec![Message::user("hi")],
        tools: vec![],
    };
    let body = request_body(&plain, 5);
    assert!(
        body.get("system").is_none() && body.get("tools").is_none(),
        "{body}"
    );
}

#[test]
fn urls() {
    let url = |base: &str| {
        AnthropicClient::new(AnthropicConfig {
            base_url: base.into(),
            ..AnthropicConfig::default()
        })
        .unwrap()
        .url
        .to_string()
    };
    assert_eq!(
        url("https://api.anthropic.com"),
        "https://api.anthropic.com/v1/messages"
    );
    assert_eq!(url("http://127.0.0.1:9/"), "http://127.0.0.1:9/v1/messages");
    assert_eq!(
        url("http://127.0.0.1:9/v1"),
        "http://127.0.0.1:9/v1/messages"
    );
    assert_eq!(
        url("http://127.0.0.1:9/v1/?key=K"),
        "http://127.0.0.1:9/v1/messages?key=K"
    );
}
