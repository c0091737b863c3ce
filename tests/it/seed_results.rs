//! Result fields of the hook protocol at the events it lists them for: what each one changes,
//! seen in the upstream's requests and the client's frames.

use serde_json::{json, Value};

use crate::common::*;

/// A server whose server-level hook file is `yaml`, in a workspace with three files to read.
async fn server(upstream: &FakeUpstream, yaml: &str) -> TestServer {
    server_with(upstream, yaml).start().await
}

/// The same, with `tweak` on its config.
fn server_with<'a>(upstream: &'a FakeUpstream, yaml: &str) -> TestServerBuilder<'a> {
    TestServer::builder()
        .workspace(crate::agent::workspace())
        .upstream(upstream)
        .file("a.txt", "ALPHA ".repeat(100))
        .file("c.txt", "CHARLIE ".repeat(100))
        .file("d.txt", "DELTA ".repeat(100))
        .hooks(yaml)
}

/// Planning, three rounds that each read one file, then the final answer.
fn three_rounds(upstream: &FakeUpstream) {
    upstream.push(Reply::text(&["[NEED_TOOL] go"]));
    for (id, file) in [("c1", "a.txt"), ("c2", "c.txt"), ("c3", "d.txt")] {
        upstream.push(Reply::tool_calls(&[(
            id,
            "read_file",
            json!({"path": file}),
        )]));
    }
    upstream.push(Reply::text(&["final"]));
}

async fn run(server: &TestServer, frame: Value) -> Vec<Value> {
    let frames = server.connect().await.chat(frame).await;
    assert_eq!(frames.last().unwrap()["type"], "done", "{frames:#?}");
    frames
}

fn system(request: &Recorded) -> String {
    request.messages()[0].1.clone()
}

#[tokio::test]
async fn post_micro_compact_messages_replace_the_calls_messages() {
    let upstream = FakeUpstream::start().await;
    three_rounds(&upstream);
    let yaml = r#"
post_micro_compact:
  - command: |
      jq -c '{messages: [.messages[0], {"role":"user","content":"MICRO-REWRITE"}]}'
"#;
    // Past the micro threshold from the first call (one token of the window).
    let server = server_with(&upstream, yaml)
        .config(|c| c.agent.context.micro_threshold = 1.0 / 128_000.0)
        .start()
        .await;
    let frames = run(&server, json!({"type":"chat","input":"read all three"})).await;
    assert_eq!(frames.last().unwrap()["reason"], "completed");
    let requests = upstream.requests();
    let compacted = requests[4].body.to_string();
    assert!(compacted.contains("MICRO-REWRITE"), "{compacted}");
    assert!(!compacted.contains("ALPHA"), "still compacted: {compacted}");
}

/// A hook may give back the messages it was given, tool traffic included: its answer is read as
/// the history is, so every message the history holds is a message it may answer.
#[tokio::test]
async fn post_micro_compact_may_answer_the_tool_messages_it_was_given() {
    let upstream = FakeUpstream::start().await;
    three_rounds(&upstream);
    let yaml = r#"
post_micro_compact:
  - command: |
      jq -c '{messages: (.messages + [{"role":"user","content":"MICRO-NOTE"}])}'
"#;
    let server = server_with(&upstream, yaml)
        .config(|c| c.agent.context.micro_threshold = 1.0 / 128_000.0)
        .start()
        .await;
    let frames = run(&server, json!({"type":"chat","input":"read all three"})).await;
    assert!(
        !frames.iter().any(|f| f["type"] == "notice"),
        "the answer was refused: {frames:#?}"
    );
    let requests = upstream.requests();
    let round3 = &requests[4].body["messages"];
    let messages = round3.as_array().unwrap();
    assert_eq!(
        messages.last().unwrap()["content"],
        "MICRO-NOTE",
        "{round3}"
    );
    // The tool traffic is whole: each call with its id and tool, each result answering it.
    let calls: Vec<&Value> = messages
        .iter()
        .filter_map(|m| m["tool_calls"].as_array())
        .flatten()
        .collect();
    assert_eq!(calls.len(), 3, "{round3}");
    for call in calls {
        let id = &call["id"];
        assert_eq!(call["function"]["name"], "read_file");
        assert!(
            messages
                .iter()
                .any(|m| m["role"] == "tool" && &m["tool_call_id"] == id),
            "{id} unanswered: {round3}"
        );
    }
}

#[tokio::test]
async fn action_skip_before_a_compaction_skips_it() {
    let upstream = FakeUpstream::start().await;
    three_rounds(&upstream);
    let yaml = r#"
pre_micro_compact:
  - command: echo '{"action":"skip"}'
"#;
    let server = server(&upstream, yaml).await;
    let frames = run(&server, json!({"type":"chat","input":"read all three"})).await;
    assert_eq!(frames.last().unwrap()["reason"], "completed", "{frames:#?}");
    let last = upstream.requests()[4].body.to_string();
    assert!(last.contains("ALPHA"), "not compacted: {last}");
}

#[tokio::test]
async fn context_after_a_failed_tool_goes_to_the_system_prompt() {
    let upstream = FakeUpstream::start().await;
    tool_round(
        &upstream,
        &[("c1", "read_file", json!({"path": "missing.txt"}))],
        "done",
    );
    let yaml = r#"
post_tool_execution_failure:
  - command: echo '{"additional_context":"FAIL-CONTEXT"}'
"#;
    let server = server(&upstream, yaml).await;
    run(&server, json!({"type":"chat","input":"read it"})).await;
    let request = &upstream.requests()[2];
    let results = tool_results(request);
    assert!(!results[0].contains("FAIL-CONTEXT"), "{results:?}");
    assert!(
        system(request).contains("FAIL-CONTEXT"),
        "{}",
        system(request)
    );
}

#[tokio::test]
async fn a_stop_after_the_models_reply_keeps_the_streamed_text_in_done() {
    for (event, answer) in [
        (
            "post_llm_response",
            r#"{"action":"stop","reason":"enough"}"#,
        ),
        (
            "after_model_call",
            r#"{"continue":false,"stopReason":"enough"}"#,
        ),
    ] {
        let upstream = FakeUpstream::start().await;
        upstream.push(Reply::text(&["streamed ", "words"]));
        let yaml = format!("{event}:\n  - command: echo '{answer}'\n");
        let server = server(&upstream, &yaml).await;
        let frames = run(
            &server,
            json!({"type":"chat","input":"hi","enable_tools":false}),
        )
        .await;
        let done = frames.last().unwrap();
        assert_eq!(done["reason"], "stopped", "{event}: {done}");
        assert_eq!(
            done["message"]["content"], "streamed words",
            "{event}: {done}"
        );
    }
}

#[tokio::test]
async fn a_rewritten_answer_is_the_final_message() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["original"]));
    let yaml = r#"
post_llm_response:
  - command: echo '{"assistant_output":"REWRITTEN"}'
"#;
    let server = server(&upstream, yaml).await;
    let frames = run(
        &server,
        json!({"type":"chat","input":"hi","enable_tools":false}),
    )
    .await;
    assert_eq!(text_of(&frames), "original", "what streamed");
    assert_eq!(frames.last().unwrap()["message"]["content"], "REWRITTEN");
}

#[tokio::test]
async fn context_from_a_stop_hook_goes_to_the_system_prompt_and_sends_the_model_on() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["first"]));
    upstream.push(Reply::text(&["second"]));
    let yaml = r#"
stop:
  - command: '[ -e once ] && exit 0; touch once; echo "{\"additional_context\":\"STOP-CONTEXT\"}"'
"#;
    let server = server(&upstream, yaml).await;
    let frames = run(
        &server,
        json!({"type":"chat","input":"hi","enable_tools":false}),
    )
    .await;
    let requests = upstream.requests();
    assert_eq!(requests.len(), 2, "the model went on");
    // The seed: appended to the system prompt, not a new user message.
    assert!(
        system(&requests[1]).ends_with("STOP-CONTEXT"),
        "{}",
        system(&requests[1])
    );
    let messages = requests[1].messages();
    assert_eq!(
        messages
            .iter()
            .filter(|(_, c)| c.contains("STOP-CONTEXT"))
            .count(),
        1,
        "{messages:?}"
    );
    assert_eq!(
        messages.last().unwrap(),
        &("assistant".to_string(), "first".to_string())
    );
    assert!(frames.last().unwrap()["message"]["content"]
        .as_str()
        .unwrap()
        .contains("second"));
}

#[tokio::test]
async fn a_session_start_hooks_system_message_reaches_the_person() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["hello"]));
    let yaml = r#"
session_start:
  - command: echo '{"system_message":"WELCOME-NOTICE"}'
"#;
    let server = server(&upstream, yaml).await;
    let mut client = server.connect().await;
    let first = client
        .chat(json!({"type":"chat","input":"hi","enable_tools":false}))
        .await;
    let notices: Vec<&Value> = first
        .iter()
        .filter(|f| f["type"] == "notice" && f["message"] == "WELCOME-NOTICE")
        .collect();
    assert_eq!(notices.len(), 1, "{first:#?}");
    assert_eq!(notices[0]["level"], "info");
    // Once per connection, not once per chat.
    let second = client
        .chat(json!({"type":"chat","input":"again","enable_tools":false}))
        .await;
    assert!(
        !second.iter().any(|f| f["message"] == "WELCOME-NOTICE"),
        "{second:#?}"
    );
}

/// `action: skip` at `pre_send_message` (the seed lists `skip` at every `pre_*` event): the
/// input is not sent, nothing of the chat enters the conversation, and a notice says why.
#[tokio::test]
async fn action_skip_before_sending_the_message_sends_nothing() {
    let upstream = FakeUpstream::start().await;
    let yaml = r#"
pre_send_message:
  - command: echo '{"action":"skip","reason":"not during the freeze"}'
"#;
    let server = server(&upstream, yaml).await;
    let frames = run(&server, json!({"type":"chat","input":"deploy it"})).await;
    let done = frames.last().unwrap();
    assert_eq!(done["reason"], "completed", "{frames:#?}");
    assert_eq!(done["turn"], json!([]), "nothing enters the conversation");
    let notice = frame_of(&frames, "notice");
    assert!(
        notice["message"]
            .as_str()
            .unwrap()
            .contains("not during the freeze"),
        "{notice}"
    );
    assert!(upstream.requests().is_empty(), "no model call");
}

/// `action: skip` at `pre_llm_request`: the planning call is not made, and the agent loop goes
/// on without a plan; skipping another call ends the chat `completed` with what it has.
#[tokio::test]
async fn action_skip_before_a_model_call_skips_that_call() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::tool_calls(&[(
        "c1",
        "read_file",
        json!({"path": "a.txt"}),
    )]));
    upstream.push(Reply::text(&["read it"]));
    // Skips the calls that offer no tools: the planning call.
    let yaml = r#"
pre_llm_request:
  - command: |
      jq -c 'if (.model_request.tools | length) == 0 then {action: "skip", reason: "no plan needed"} else {} end'
"#;
    let planned = server(&upstream, yaml).await;
    let frames = run(&planned, json!({"type":"chat","input":"read a"})).await;
    assert_eq!(frames.last().unwrap()["message"]["content"], "read it");
    let requests = upstream.requests();
    assert_eq!(requests.len(), 2, "no planning call");
    assert!(requests
        .iter()
        .all(|r| r.tool_names().is_some_and(|t| !t.is_empty())));
    assert!(
        types_of(&frames).contains(&"tool_call".to_string()),
        "{frames:#?}"
    );

    // A direct call skipped: nothing is asked, the chat ends completed.
    let yaml = r#"
pre_llm_request:
  - command: echo '{"action":"skip"}'
"#;
    let upstream = FakeUpstream::start().await;
    let direct = server(&upstream, yaml).await;
    let frames = run(
        &direct,
        json!({"type":"chat","input":"hi","enable_tools":false}),
    )
    .await;
    assert_eq!(frames.last().unwrap()["reason"], "completed");
    assert!(upstream.requests().is_empty());
}

/// `retry_feedback` at the two pre-compaction events: before micro compaction the call is not
/// compacted and gets the feedback as its last (user) message; before a history compaction the
/// summary call gets it after the conversation.
#[tokio::test]
async fn retry_feedback_before_a_compaction_reaches_the_call_it_precedes() {
    let upstream = FakeUpstream::start().await;
    three_rounds(&upstream);
    let yaml = r#"
pre_micro_compact:
  - command: echo '{"retry_feedback":"KEEP THE FILES WHOLE"}'
"#;
    let server = server_with(&upstream, yaml)
        .config(|c| c.agent.context.micro_threshold = 1.0 / 128_000.0)
        .start()
        .await;
    run(&server, json!({"type":"chat","input":"read all three"})).await;
    let last = upstream.requests()[4].clone();
    assert!(last.body.to_string().contains("ALPHA"), "not compacted");
    assert_eq!(
        last.messages().last().unwrap(),
        &("user".to_string(), "KEEP THE FILES WHOLE".to_string())
    );

    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["SUMMARY"]));
    let yaml = r#"
pre_auto_compact:
  - command: echo '{"retry_feedback":"Name every file that was read."}'
"#;
    let server = server_with(&upstream, yaml)
        .config(|c| c.agent.context.keep_recent_groups = 1)
        .start()
        .await;
    let history = json!([
        {"role":"user","content":"q1"},{"role":"assistant","content":"a1"},
        {"role":"user","content":"q2"},{"role":"assistant","content":"a2"},
    ]);
    let frames = server
        .connect()
        .await
        .chat(json!({"type":"compact","id":"m","messages":history}))
        .await;
    assert_eq!(
        types_of(&frames),
        ["start", "compact", "done"],
        "{frames:#?}"
    );
    let summary_call = upstream.requests()[0].messages();
    assert_eq!(
        summary_call.last().unwrap(),
        &(
            "user".to_string(),
            "Name every file that was read.".to_string()
        )
    );
}
